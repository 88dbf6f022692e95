//! CPU `conv2d_epilogue`: the convolution (`conv.rs`), then per output value
//! `activation(value * scale[channel] + shift[channel] + residual)` in f32 (f64 for F64
//! convolutions), rounded once to the output's dtype. This is the reference the GPU's fused
//! stores (`gpu/conv_epilogue.rs`) are tested against.

use half::f16;

use super::CpuStorage;
use crate::backend::checks::check_epilogue;
use crate::backend::contract::Convolution;
use crate::backend::contract::Epilogue;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::Layout;

const OP: &str = "conv2d_epilogue";

/// The values of an F32 `[o]` view (checked by `check_epilogue`).
fn channel_values(storage: &CpuStorage, layout: &Layout) -> Result<Vec<f32>> {
    match storage {
        CpuStorage::F32(values) => Ok(layout.positions().map(|at| values[at]).collect()),
        other => Err(super::unsupported_dtype(OP, other.dtype())),
    }
}

/// The residual's values in output order, as f64 (any view; checked by `check_epilogue`).
fn residual_values(storage: &CpuStorage, layout: &Layout) -> Result<Vec<f64>> {
    Ok(match storage {
        CpuStorage::F32(values) => layout.positions().map(|at| f64::from(values[at])).collect(),
        CpuStorage::F64(values) => layout.positions().map(|at| values[at]).collect(),
        CpuStorage::F16(values) => layout.positions().map(|at| f64::from(values[at])).collect(),
        other => return Err(super::unsupported_dtype(OP, other.dtype())),
    })
}

impl CpuStorage {
    /// [`CpuStorage::conv2d`] followed by the epilogue (`Convolution::conv2d_epilogue`).
    pub(super) fn conv2d_epilogue_row_major(
        &self,
        layout: &Layout,
        weight: &CpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: &Epilogue<'_, CpuStorage>,
    ) -> Result<CpuStorage> {
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        let output_shape = shape.output_shape();
        fn describe<'a>(
            (storage, layout): (&CpuStorage, &'a Layout),
        ) -> (&'a Layout, DType, usize) {
            (layout, storage.dtype(), storage.len())
        }
        check_epilogue(
            OP,
            &output_shape,
            self.dtype(),
            describe(epilogue.scale),
            describe(epilogue.shift),
            epilogue.residual.map(describe),
        )?;
        let scale = channel_values(epilogue.scale.0, epilogue.scale.1)?;
        let shift = channel_values(epilogue.shift.0, epilogue.shift.1)?;
        let residual = epilogue
            .residual
            .map(|(storage, layout)| residual_values(storage, layout))
            .transpose()?;
        let plane = output_shape[2] * output_shape[3];
        let channels = output_shape[1];
        let activation = epilogue.activation;
        // The f32 epilogue of the value at output position `at`.
        let finish = |at: usize, value: f32| {
            let channel = (at / plane.max(1)) % channels.max(1);
            let added = residual.as_ref().map_or(0.0, |r| r[at] as f32);
            activation.apply(value * scale[channel] + shift[channel] + added)
        };
        let mut out = self.conv2d(layout, weight, weight_layout, params)?;
        match &mut out {
            CpuStorage::F32(values) => {
                for (at, value) in values.iter_mut().enumerate() {
                    *value = finish(at, *value);
                }
            }
            CpuStorage::F16(values) => {
                for (at, value) in values.iter_mut().enumerate() {
                    *value = f16::from_f32(finish(at, value.to_f32()));
                }
            }
            CpuStorage::F64(values) => {
                for (at, value) in values.iter_mut().enumerate() {
                    let channel = (at / plane.max(1)) % channels.max(1);
                    let added = residual.as_ref().map_or(0.0, |r| r[at]);
                    let affine =
                        *value * f64::from(scale[channel]) + f64::from(shift[channel]) + added;
                    *value = activation.apply(affine);
                }
            }
            CpuStorage::BF16(_) => {
                return Err(Error::invalid(
                    OP,
                    "internal: BF16 reaches the CPU only widened to F32 (storage.rs)",
                ));
            }
            CpuStorage::I32(_) | CpuStorage::U32(_) | CpuStorage::U8(_) | CpuStorage::Bool(_) => {
                return Err(Error::invalid(OP, "the convolution returned a non-float"));
            }
        }
        Ok(out)
    }
}
