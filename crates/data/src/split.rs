//! Train/test splitting, like scikit-learn's `train_test_split`: a seeded random permutation
//! of the sample indices, the first `ceil(test_fraction · n)` of which become the test set.
//!
//! Everything here works on plain row-major host arrays (`&[f32]` features with one row per
//! sample, one label per sample), so it runs before any tensor exists; see
//! [`TensorDataset::split`](crate::TensorDataset::split) for the tensor version.

use anygrad_core::{Error, Result};

use crate::rng::permutation;

/// The four parts of a train/test split (the order of scikit-learn's return value, named).
#[derive(Debug, Clone, PartialEq)]
pub struct Split<L> {
    /// Training features, row-major, `train_labels.len()` rows.
    pub train_features: Vec<f32>,
    /// Training labels.
    pub train_labels: Vec<L>,
    /// Test features, row-major, `test_labels.len()` rows.
    pub test_features: Vec<f32>,
    /// Test labels.
    pub test_labels: Vec<L>,
}

/// Split `0..n` into shuffled (train, test) index lists; the test part has
/// `ceil(test_fraction · n)` indices (scikit-learn's rule). Both parts must be non-empty.
///
/// Errors: [`Error::InvalidArgument`] when `test_fraction` is not strictly between 0 and 1 or
/// when either part would be empty.
pub fn split_indices(n: usize, test_fraction: f64, seed: u64) -> Result<(Vec<usize>, Vec<usize>)> {
    if !(test_fraction > 0.0 && test_fraction < 1.0) {
        return Err(Error::invalid(
            "train_test_split",
            format!("test_fraction must be strictly between 0 and 1, got {test_fraction}"),
        ));
    }
    let test_count = (test_fraction * n as f64).ceil() as usize;
    if test_count == 0 || test_count >= n {
        return Err(Error::invalid(
            "train_test_split",
            format!(
                "splitting {n} samples with test_fraction {test_fraction} leaves an empty \
                 train or test set; use more samples or another fraction"
            ),
        ));
    }
    let mut order = permutation(n, seed);
    let train = order.split_off(test_count);
    Ok((train, order))
}

/// Copy the rows `indices` (each `row_len` elements) out of the row-major `data`, in order.
///
/// Errors: [`Error::InvalidArgument`] when an index is out of range.
pub fn gather_rows<T: Copy>(data: &[T], row_len: usize, indices: &[usize]) -> Result<Vec<T>> {
    if row_len == 0 {
        return Ok(Vec::new());
    }
    let rows = data.len() / row_len;
    let mut out = Vec::with_capacity(indices.len() * row_len);
    for &index in indices {
        if index >= rows {
            return Err(Error::invalid(
                "gather_rows",
                format!("row index {index} is out of range for {rows} rows"),
            ));
        }
        out.extend_from_slice(&data[index * row_len..(index + 1) * row_len]);
    }
    Ok(out)
}

/// Shuffle and split row-major `features` (one row per label) and `labels` into train and
/// test parts, reproducibly from `seed` — scikit-learn's
/// `train_test_split(X, y, test_size=test_fraction, random_state=seed)` (not bit-identical:
/// the permutation comes from our own generator).
///
/// Errors: [`Error::InvalidArgument`] when `features.len()` is not a multiple of
/// `labels.len()`, or as in [`split_indices`].
pub fn train_test_split<L: Copy>(
    features: &[f32],
    labels: &[L],
    test_fraction: f64,
    seed: u64,
) -> Result<Split<L>> {
    let n = labels.len();
    if n == 0 || !features.len().is_multiple_of(n) {
        return Err(Error::invalid(
            "train_test_split",
            format!(
                "{} feature values do not divide into {n} rows (one row per label)",
                features.len()
            ),
        ));
    }
    let row_len = features.len() / n;
    let (train, test) = split_indices(n, test_fraction, seed)?;
    Ok(Split {
        train_features: gather_rows(features, row_len, &train)?,
        train_labels: gather_rows(labels, 1, &train)?,
        test_features: gather_rows(features, row_len, &test)?,
        test_labels: gather_rows(labels, 1, &test)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_sklearn_rule() {
        let (train, test) = split_indices(1797, 0.2, 42).unwrap();
        assert_eq!(test.len(), 360); // ceil(359.4)
        assert_eq!(train.len(), 1437);
        let mut all: Vec<usize> = train.iter().chain(&test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..1797).collect::<Vec<_>>());
        assert_eq!(
            (train.clone(), test.clone()),
            split_indices(1797, 0.2, 42).unwrap()
        );
        assert_ne!(test, split_indices(1797, 0.2, 43).unwrap().1);
    }

    #[test]
    fn rows_stay_with_their_labels() {
        let labels: Vec<u8> = (0..50).collect();
        let features: Vec<f32> = (0..50).flat_map(|i| [i as f32, -(i as f32)]).collect();
        let split = train_test_split(&features, &labels, 0.3, 1).unwrap();
        assert_eq!(split.test_labels.len(), 15);
        for (row, &label) in split.train_features.chunks(2).zip(&split.train_labels) {
            assert_eq!(row, [label as f32, -(label as f32)]);
        }
        for (row, &label) in split.test_features.chunks(2).zip(&split.test_labels) {
            assert_eq!(row, [label as f32, -(label as f32)]);
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        for fraction in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
            assert!(matches!(
                split_indices(10, fraction, 0),
                Err(Error::InvalidArgument { .. })
            ));
        }
        assert!(split_indices(1, 0.5, 0).is_err());
        assert!(train_test_split(&[1.0, 2.0, 3.0], &[0u8, 1], 0.5, 0).is_err());
        assert!(train_test_split::<u8>(&[], &[], 0.5, 0).is_err());
        assert!(gather_rows(&[1, 2, 3, 4], 2, &[2]).is_err());
        assert_eq!(
            gather_rows(&[1, 2, 3, 4], 2, &[1, 0]).unwrap(),
            vec![3, 4, 1, 2]
        );
    }
}
