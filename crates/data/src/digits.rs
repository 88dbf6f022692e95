//! The 8×8 handwritten digits set (scikit-learn's `load_digits`), embedded in the binary.
//!
//! 1797 samples, 64 features (pixel intensities 0..16, row-major 8×8), 10 classes. The file
//! is a gzip-compressed CSV of 65 integers a row — 64 pixels, then the label — compiled in
//! with `include_bytes!` (about 57 KB), so the digits tutorial runs with no download.
//! Source: the UCI "Optical Recognition of Handwritten Digits" test set (Alpaydin & Kaynak,
//! 1998), CC BY 4.0.

use anygrad_core::{Device, Error, Result, Tensor};

use crate::dataset::TensorDataset;
use crate::idx::decompress_if_gzip;
use crate::scaler::StandardScaler;
use crate::split::train_test_split;

/// Number of samples in the digits set.
pub const DIGITS_SAMPLES: usize = 1797;
/// Features per sample (8×8 pixels).
pub const DIGITS_FEATURES: usize = 64;
/// Number of classes (digits 0..9).
pub const DIGITS_CLASSES: usize = 10;

/// The compressed CSV, embedded at compile time.
static DIGITS_CSV_GZ: &[u8] = include_bytes!("../assets/digits.csv.gz");

/// Load the embedded digits set: features (`1797 × 64` values 0..16, row-major, sample
/// after sample) and labels (`1797` values 0..9).
///
/// Features are the raw intensities as `f32`; scale them (e.g. with
/// [`StandardScaler`](crate::StandardScaler)) before training.
pub fn digits() -> Result<(Vec<f32>, Vec<u8>)> {
    let csv = decompress_if_gzip(DIGITS_CSV_GZ.to_vec(), "embedded digits.csv.gz")?;
    let text = std::str::from_utf8(&csv)
        .map_err(|error| Error::format("embedded digits.csv.gz", error.to_string()))?;
    parse_digits_csv(text, "embedded digits.csv.gz")
}

/// Parse digits-style CSV text: rows of `features + 1` integers, the last one the label.
/// Used for the embedded file; `context` names the source in errors.
pub fn parse_digits_csv(text: &str, context: &str) -> Result<(Vec<f32>, Vec<u8>)> {
    let mut features = Vec::with_capacity(DIGITS_SAMPLES * DIGITS_FEATURES);
    let mut labels = Vec::with_capacity(DIGITS_SAMPLES);
    for (line_number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = |message: String| {
            Error::format(context, format!("line {}: {message}", line_number + 1))
        };
        let mut count = 0;
        for field in line.split(',') {
            let value: u8 = field
                .trim()
                .parse()
                .map_err(|_| bad(format!("`{field}` is not an integer 0..255")))?;
            if count < DIGITS_FEATURES {
                if value > 16 {
                    return Err(bad(format!("pixel {value} is outside 0..16")));
                }
                features.push(value as f32);
            } else if count == DIGITS_FEATURES {
                if value as usize >= DIGITS_CLASSES {
                    return Err(bad(format!("label {value} is outside 0..9")));
                }
                labels.push(value);
            }
            count += 1;
        }
        if count != DIGITS_FEATURES + 1 {
            return Err(bad(format!(
                "{count} fields, expected {} (64 pixels and a label)",
                DIGITS_FEATURES + 1
            )));
        }
    }
    Ok((features, labels))
}

/// The digits set as tensors on `device`: features `F32 [1797, 64]` (raw 0..16) and labels
/// `I32 [1797]`.
pub fn digits_tensors(device: &Device) -> Result<(Tensor, Tensor)> {
    Ok(digits_dataset(device)?.into_tensors())
}

/// The digits set as a [`TensorDataset`] on `device` (raw features 0..16, `I32` labels).
pub fn digits_dataset(device: &Device) -> Result<TensorDataset> {
    let (features, labels) = digits()?;
    TensorDataset::from_class_labels(features, &[DIGITS_FEATURES], &labels, device)
}

/// The digits tutorial's preprocessing in one call: shuffle and split off
/// `ceil(test_fraction · 1797)` test samples with `seed`, fit a [`StandardScaler`] on the
/// training features only, standardise both parts, and return `(train, test, scaler)` as
/// datasets on `device` (`F32 [n, 64]` features, `I32 [n]` labels).
///
/// scikit-learn equivalent: `train_test_split(X, y, test_size=test_fraction,
/// random_state=seed)` followed by `StandardScaler().fit(X_train)`.
pub fn digits_standardized_split(
    test_fraction: f64,
    seed: u64,
    device: &Device,
) -> Result<(TensorDataset, TensorDataset, StandardScaler)> {
    let (features, labels) = digits()?;
    let split = train_test_split(&features, &labels, test_fraction, seed)?;
    let (scaler, train_features) =
        StandardScaler::fit_transform(&split.train_features, DIGITS_FEATURES)?;
    let test_features = scaler.transform(&split.test_features)?;
    let train = TensorDataset::from_class_labels(
        train_features,
        &[DIGITS_FEATURES],
        &split.train_labels,
        device,
    )?;
    let test = TensorDataset::from_class_labels(
        test_features,
        &[DIGITS_FEATURES],
        &split.test_labels,
        device,
    )?;
    Ok((train, test, scaler))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_digits_shape_and_balance() {
        let (features, labels) = digits().unwrap();
        assert_eq!(labels.len(), DIGITS_SAMPLES);
        assert_eq!(features.len(), DIGITS_SAMPLES * DIGITS_FEATURES);
        let mut counts = [0usize; DIGITS_CLASSES];
        for &label in &labels {
            counts[label as usize] += 1;
        }
        for count in counts {
            assert!((170..=190).contains(&count), "{counts:?}");
        }
        let max = features.iter().cloned().fold(f32::MIN, f32::max);
        let min = features.iter().cloned().fold(f32::MAX, f32::min);
        assert_eq!((min, max), (0.0, 16.0));
        // First sample of sklearn's load_digits is a zero.
        assert_eq!(labels[0], 0);
        assert_eq!(&features[..8], &[0.0, 0.0, 5.0, 13.0, 9.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn bad_csv_is_format_error() {
        let short = "1,2,3\n";
        assert!(matches!(
            parse_digits_csv(short, "t"),
            Err(Error::Format { .. })
        ));
        let mut row = vec!["0"; 64];
        row.push("11");
        let bad_label = row.join(",");
        assert!(matches!(
            parse_digits_csv(&bad_label, "t"),
            Err(Error::Format { .. })
        ));
        let mut row = vec!["x"; 64];
        row.push("1");
        assert!(matches!(
            parse_digits_csv(&row.join(","), "t"),
            Err(Error::Format { .. })
        ));
    }
}
