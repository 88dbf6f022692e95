//! Comparing computed values with expected ones: shapes equal, floats within
//! `atol + rtol * |expected|` (NaN matches NaN, infinities match exactly), integers and
//! booleans exactly.

use crate::host_tensor::HostTensor;

/// The tolerances of a float comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Default for Tolerance {
    /// ONNX's backend tests' defaults: rtol 1e-3, atol 1e-7.
    fn default() -> Self {
        Tolerance {
            rtol: 1e-3,
            atol: 1e-7,
        }
    }
}

/// `Ok` when `actual` matches `expected`, else why not (the first differing element and how
/// many differ).
pub fn compare(
    actual: &HostTensor,
    expected: &HostTensor,
    tolerance: Tolerance,
) -> Result<(), String> {
    if actual.shape != expected.shape {
        return Err(format!(
            "shape {:?}, expected {:?}",
            actual.shape, expected.shape
        ));
    }
    if expected.data.is_float() {
        let (a, e) = (actual.data.to_f64(), expected.data.to_f64());
        let mut first = None;
        let mut count = 0;
        for (i, (&x, &y)) in a.iter().zip(&e).enumerate() {
            let ok = if y.is_nan() {
                x.is_nan()
            } else if y.is_infinite() {
                x == y
            } else {
                (x - y).abs() <= tolerance.atol + tolerance.rtol * y.abs()
            };
            if !ok {
                count += 1;
                first.get_or_insert((i, x, y));
            }
        }
        return match first {
            None => Ok(()),
            Some((i, x, y)) => Err(format!(
                "{count} of {} values differ; element {i}: {x} vs expected {y} (rtol {}, atol {})",
                e.len(),
                tolerance.rtol,
                tolerance.atol
            )),
        };
    }
    let Some(e) = expected.data.to_i128() else {
        return Err(format!(
            "expected values of type {:?} cannot be compared",
            expected.data_type()
        ));
    };
    let a: Vec<i128> = match actual.data.to_i128() {
        Some(a) => a,
        None => actual.data.to_f64().iter().map(|&x| x as i128).collect(),
    };
    let differing: Vec<usize> = (0..e.len()).filter(|&i| a.get(i) != e.get(i)).collect();
    match differing.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} values differ; element {i}: {} vs expected {}",
            differing.len(),
            e.len(),
            a.get(i).copied().unwrap_or_default(),
            e[i]
        )),
    }
}
