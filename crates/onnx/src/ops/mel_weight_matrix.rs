//! MelWeightMatrix (opset 17+): the `[dft_length / 2 + 1, num_mel_bins]` matrix of triangular
//! mel filters that maps a linear-frequency spectrogram to a mel one, computed on the host
//! (as ONNX's reference does: band edges evenly spaced on the mel scale between the lower and
//! upper edge frequencies, floored to spectrogram bins) and cast to `output_datatype`.

use anygrad_core::Tensor;

use super::cast::cast_value;
use super::{single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::proto::DataType;
use crate::value::{Value, MAX_ELEMENTS};

/// The mel weight matrix operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "MelWeightMatrix",
    min_opset: 17,
    max_opset: i64::MAX,
    run: mel_weight_matrix,
}];

/// Hertz to mel, with the float32 logarithm the reference applies to float32 edges.
fn hertz_to_mel(hertz: f32) -> f64 {
    (2595.0f32 * (hertz / 700.0f32).ln_1p()) as f64 / std::f64::consts::LN_10
}

/// MelWeightMatrix: the filter bank.
fn mel_weight_matrix(ctx: &NodeContext) -> Result<Vec<Value>> {
    let mel_bins = ctx.scalar(0)?;
    let dft_length = ctx.scalar(1)?;
    let sample_rate = ctx.scalar(2)?;
    let lower_hertz = ctx.scalar(3)? as f32;
    let upper_hertz = ctx.scalar(4)? as f32;
    let limit = MAX_ELEMENTS as f64;
    if !(1.0..=limit).contains(&mel_bins)
        || !(1.0..=limit).contains(&dft_length)
        || sample_rate <= 0.0
    {
        return Err(ctx.error(format!(
            "num_mel_bins {mel_bins}, dft_length {dft_length} and sample_rate {sample_rate} must be positive"
        )));
    }
    let mel_bins = mel_bins as usize;
    let dft_length = dft_length as i64;
    let spectrogram_bins = (dft_length / 2 + 1) as usize;
    if (mel_bins as u64).saturating_mul(spectrogram_bins as u64) > MAX_ELEMENTS {
        return Err(ctx.error("the matrix is too large"));
    }
    let lower_mel = hertz_to_mel(lower_hertz);
    let upper_mel = hertz_to_mel(upper_hertz);
    let step = (upper_mel - lower_mel) / (mel_bins + 2) as f64;
    // The band edges as spectrogram bins.
    let edges: Vec<i64> = (0..mel_bins + 2)
        .map(|i| {
            let mel = i as f64 * step + lower_mel;
            let hertz = 700.0 * (mel / 2595.0 * std::f64::consts::LN_10).exp_m1();
            (((dft_length + 1) as f64 * hertz) / sample_rate).floor() as i64
        })
        .collect();
    let mut matrix = vec![0f32; spectrogram_bins * mel_bins];
    let rows = spectrogram_bins as i64;
    let mut set = |row: i64, column: usize, value: f64| -> Result<()> {
        if row < 0 || row >= rows {
            return Err(ctx.error(format!(
                "mel band edge {row} falls outside the {rows} spectrogram bins"
            )));
        }
        matrix[row as usize * mel_bins + column] = value as f32;
        Ok(())
    };
    for band in 0..mel_bins {
        let (low, center, high) = (edges[band], edges[band + 1], edges[band + 2]);
        if center == low {
            set(center, band, 1.0)?;
        } else {
            for row in low..=center {
                set(row, band, (row - low) as f64 / (center - low) as f64)?;
            }
        }
        if high > center {
            for row in center..high {
                set(row, band, (high - row) as f64 / (high - center) as f64)?;
            }
        }
    }
    let tensor = ctx.core(Tensor::from_vec(
        matrix,
        &[spectrogram_bins, mel_bins],
        ctx.device,
    ))?;
    let to = DataType::try_from(ctx.attr_int("output_datatype", 1)? as i32)
        .map_err(|_| ctx.error("unknown output_datatype"))?;
    single(cast_value(ctx, &Value::Tensor(tensor), to)?)
}
