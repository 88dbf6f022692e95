//! Signal windows: HannWindow, HammingWindow and BlackmanWindow (`periodic` or symmetric,
//! `output_datatype`), computed on the host.

use anygrad_core::Tensor;

use super::cast::cast_value;
use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::proto::DataType;
use crate::value::Value;

/// The window operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("HannWindow", |c| window(c, |x| 0.5 - 0.5 * x.cos())),
    any_opset("HammingWindow", |c| {
        window(c, |x| 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * x.cos())
    }),
    any_opset("BlackmanWindow", |c| {
        window(c, |x| 0.42 - 0.5 * x.cos() + 0.08 * (2.0 * x).cos())
    }),
];

/// `f(2 pi n / N)` for `n` in `0..size`, `N` = size (periodic) or size - 1 (symmetric).
fn window(ctx: &NodeContext, f: fn(f64) -> f64) -> Result<Vec<Value>> {
    let size = ctx.scalar(0)?;
    if !(0.0..=crate::value::MAX_ELEMENTS as f64).contains(&size) {
        return Err(ctx.error(format!("window size {size}")));
    }
    let size = size as usize;
    let periodic = ctx.attr_int("periodic", 1)? != 0;
    let span = if periodic {
        size as f64
    } else {
        size as f64 - 1.0
    };
    let values: Vec<f32> = (0..size)
        .map(|n| {
            let x = if span > 0.0 {
                2.0 * std::f64::consts::PI * n as f64 / span
            } else {
                0.0
            };
            f(x) as f32
        })
        .collect();
    let t = ctx.core(Tensor::from_vec(values, &[size], ctx.device))?;
    let to = DataType::try_from(ctx.attr_int("output_datatype", 1)? as i32)
        .map_err(|_| ctx.error("unknown output_datatype"))?;
    single(cast_value(ctx, &Value::Tensor(t), to)?)
}
