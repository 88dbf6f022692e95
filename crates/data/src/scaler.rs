//! `StandardScaler`: per-feature standardisation `(x - mean) / std`, like scikit-learn's.
//!
//! Fit it on the training features only (statistics of the test set must not leak into
//! training), then transform both sets with the same mean and std. The std is the population
//! std (divide by n, as scikit-learn does); a constant feature has std 0 and is given scale 1
//! so it becomes all zeros instead of NaN — the digits set has such always-blank pixels.

use anygrad_core::{DType, Device, Error, Result, Tensor};

/// Per-feature mean and scale learned from training data.
#[derive(Debug, Clone, PartialEq)]
pub struct StandardScaler {
    mean: Vec<f32>,
    scale: Vec<f32>,
}

impl StandardScaler {
    /// Learn the per-feature mean and std of row-major `features` with `n_features` columns.
    /// Sums run in f64, so large data sets do not lose precision.
    ///
    /// Errors: [`Error::InvalidArgument`] when `n_features` is 0, the data is empty, or its
    /// length is not a multiple of `n_features`.
    pub fn fit(features: &[f32], n_features: usize) -> Result<Self> {
        let rows = check_layout("StandardScaler::fit", features, n_features)?;
        if rows == 0 {
            return Err(Error::invalid(
                "StandardScaler::fit",
                "cannot fit on zero samples",
            ));
        }
        let mut sum = vec![0f64; n_features];
        for row in features.chunks_exact(n_features) {
            for (s, &x) in sum.iter_mut().zip(row) {
                *s += x as f64;
            }
        }
        let mean: Vec<f64> = sum.iter().map(|s| s / rows as f64).collect();
        // Second pass for the variance: numerically safer than E[x²] − E[x]².
        let mut squares = vec![0f64; n_features];
        for row in features.chunks_exact(n_features) {
            for ((q, &x), m) in squares.iter_mut().zip(row).zip(&mean) {
                let d = x as f64 - m;
                *q += d * d;
            }
        }
        let scale = squares
            .iter()
            .zip(&mean)
            .map(|(q, m)| {
                let std = (q / rows as f64).sqrt();
                // scikit-learn treats a std below ~10 machine epsilons (relative) as zero.
                if std <= 10.0 * f64::EPSILON * m.abs().max(1.0) {
                    1.0
                } else {
                    std as f32
                }
            })
            .collect();
        Ok(StandardScaler {
            mean: mean.iter().map(|&m| m as f32).collect(),
            scale,
        })
    }

    /// Fit on `features`, then return the scaler and the transformed features.
    pub fn fit_transform(features: &[f32], n_features: usize) -> Result<(Self, Vec<f32>)> {
        let scaler = Self::fit(features, n_features)?;
        let transformed = scaler.transform(features)?;
        Ok((scaler, transformed))
    }

    /// Standardise row-major `features` (same column count as at fit time) into a new vector.
    pub fn transform(&self, features: &[f32]) -> Result<Vec<f32>> {
        let mut out = features.to_vec();
        self.transform_in_place(&mut out)?;
        Ok(out)
    }

    /// Standardise row-major `features` in place.
    ///
    /// Errors: [`Error::InvalidArgument`] when the length is not a multiple of the number of
    /// features seen at fit time.
    pub fn transform_in_place(&self, features: &mut [f32]) -> Result<()> {
        check_layout("StandardScaler::transform", features, self.n_features())?;
        for row in features.chunks_exact_mut(self.n_features()) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.scale) {
                *x = (*x - m) / s;
            }
        }
        Ok(())
    }

    /// Undo [`transform`](Self::transform): `x · std + mean`.
    pub fn inverse_transform(&self, features: &[f32]) -> Result<Vec<f32>> {
        check_layout(
            "StandardScaler::inverse_transform",
            features,
            self.n_features(),
        )?;
        let mut out = features.to_vec();
        for row in out.chunks_exact_mut(self.n_features()) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.scale) {
                *x = *x * s + m;
            }
        }
        Ok(out)
    }

    /// Fit on a features tensor `[n, ...]` (any device and float dtype; every dim after the
    /// first is one feature). The data is read back to the host once.
    pub fn fit_tensor(features: &Tensor) -> Result<Self> {
        let n_features = features_per_row("StandardScaler::fit_tensor", features)?;
        StandardScaler::fit(&features.to_vec_f32()?, n_features)
    }

    /// Standardise a features tensor `[n, ...]` on its own device with tensor ops (the
    /// mean and scale are uploaded as `[features]` rows and broadcast). The result is `F32`.
    pub fn transform_tensor(&self, features: &Tensor) -> Result<Tensor> {
        let n_features = features_per_row("StandardScaler::transform_tensor", features)?;
        if n_features != self.n_features() {
            return Err(Error::ShapeMismatch {
                op: "StandardScaler::transform_tensor",
                lhs: features.shape().to_vec(),
                rhs: vec![self.n_features()],
                reason: "features per sample differ from the fitted scaler's".into(),
            });
        }
        let device: &Device = features.device();
        let mean = Tensor::from_slice(&self.mean, &[n_features], device)?;
        let scale = Tensor::from_slice(&self.scale, &[n_features], device)?;
        let rows = features.shape()[0];
        features
            .to_dtype(DType::F32)?
            .reshape(vec![rows, n_features])?
            .sub(&mean)?
            .div(&scale)?
            .reshape(features.shape().to_vec())
    }

    /// Number of features (columns) seen at fit time.
    pub fn n_features(&self) -> usize {
        self.mean.len()
    }

    /// Per-feature mean learned at fit time.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// Per-feature scale (the std, or 1 for constant features).
    pub fn scale(&self) -> &[f32] {
        &self.scale
    }
}

/// Features per sample of a `[n, ...]` tensor (the product of the dims after the first).
fn features_per_row(op: &'static str, features: &Tensor) -> Result<usize> {
    match features.shape().split_first() {
        Some((_, rest)) => Ok(rest.iter().product()),
        None => Err(Error::InvalidShape {
            op,
            shape: Vec::new(),
            message: "features need a leading sample dim".into(),
        }),
    }
}

/// Check that `features` is a whole number of rows of `n_features`; return the row count.
fn check_layout(op: &'static str, features: &[f32], n_features: usize) -> Result<usize> {
    if n_features == 0 || !features.len().is_multiple_of(n_features) {
        return Err(Error::invalid(
            op,
            format!(
                "{} values do not form rows of {n_features} features",
                features.len()
            ),
        ));
    }
    Ok(features.len() / n_features)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_and_transform_match_sklearn() {
        // Columns: [1, 2, 3, 4] (mean 2.5, population std sqrt(1.25)) and a constant 7.
        let x = [1.0, 7.0, 2.0, 7.0, 3.0, 7.0, 4.0, 7.0];
        let (scaler, t) = StandardScaler::fit_transform(&x, 2).unwrap();
        assert_eq!(scaler.mean(), &[2.5, 7.0]);
        assert!((scaler.scale()[0] - 1.25f32.sqrt()).abs() < 1e-6);
        assert_eq!(scaler.scale()[1], 1.0);
        let s = 1.25f32.sqrt();
        let expected = [-1.5 / s, 0.0, -0.5 / s, 0.0, 0.5 / s, 0.0, 1.5 / s, 0.0];
        for (a, b) in t.iter().zip(expected) {
            assert!((a - b).abs() < 1e-6, "{t:?}");
        }
        let back = scaler.inverse_transform(&t).unwrap();
        for (a, b) in back.iter().zip(x) {
            assert!((a - b).abs() < 1e-5);
        }
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert!(StandardScaler::fit(&[1.0, 2.0, 3.0], 2).is_err());
        assert!(StandardScaler::fit(&[1.0], 0).is_err());
        assert!(StandardScaler::fit(&[], 3).is_err());
        let scaler = StandardScaler::fit(&[1.0, 2.0], 2).unwrap();
        assert!(matches!(
            scaler.transform(&[1.0, 2.0, 3.0]),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
