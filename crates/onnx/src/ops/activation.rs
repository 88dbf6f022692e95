//! Activations: Relu, LeakyRelu, PRelu, Sigmoid, Tanh, Softmax, LogSoftmax, Hardmax, Gelu,
//! Erf, Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus, Softsign, Mish, ThresholdedRelu,
//! Shrink, Swish, SwiGLU and Clip, composed from anygrad tensor ops (so gradients flow through them).

use anygrad_core::{DType, Tensor};

use super::elementwise::unary;
use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The activation operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("Relu", |c| unary(c, Tensor::relu)),
    any_opset("Sigmoid", |c| unary(c, Tensor::sigmoid)),
    any_opset("Tanh", |c| unary(c, Tensor::tanh)),
    any_opset("Erf", |c| unary(c, Tensor::erf)),
    any_opset("LeakyRelu", leaky_relu),
    any_opset("PRelu", prelu),
    any_opset("Softmax", |c| softmax_family(c, Family::Softmax)),
    any_opset("LogSoftmax", |c| softmax_family(c, Family::LogSoftmax)),
    any_opset("Hardmax", |c| softmax_family(c, Family::Hardmax)),
    any_opset("Gelu", gelu),
    any_opset("Elu", elu),
    any_opset("Selu", selu),
    any_opset("Celu", celu),
    any_opset("HardSigmoid", hard_sigmoid),
    any_opset("HardSwish", |c| {
        unary(c, |x| {
            x.mul(&x.mul_scalar(1.0 / 6.0)?.add_scalar(0.5)?.clamp(0.0, 1.0)?)
        })
    }),
    any_opset("Softplus", |c| unary(c, softplus)),
    any_opset("Softsign", |c| {
        unary(c, |x| x.div(&x.abs()?.add_scalar(1.0)?))
    }),
    any_opset("Mish", |c| {
        unary(c, |x| {
            // tanh of a small softplus from its series (some GPUs' tanh loses small values).
            let s = softplus(x)?;
            let series = s.sub(&s.mul(&s.square()?)?.mul_scalar(1.0 / 3.0)?)?;
            x.mul(&Tensor::where_(&s.lt_scalar(1e-2)?, &series, &s.tanh()?)?)
        })
    }),
    any_opset("ThresholdedRelu", thresholded_relu),
    any_opset("Shrink", shrink),
    any_opset("Clip", clip),
    any_opset("Swish", swish),
    any_opset("SwiGLU", swiglu),
];

/// SwiGLU: `swish(A, alpha) * B` for A and B of one shape.
fn swiglu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let a = ctx.tensor(0)?;
    let b = ctx.tensor(1)?;
    if a.shape() != b.shape() {
        return Err(ctx.error("A and B must have the same shape"));
    }
    let alpha = ctx.attr_float("alpha", 1.0)? as f64;
    single(
        ctx.core(
            a.mul_scalar(alpha)
                .and_then(|s| a.mul(&s.sigmoid()?)?.mul(&b)),
        )?,
    )
}

fn swish(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 1.0)? as f64;
    unary(ctx, |x| x.mul(&x.mul_scalar(alpha)?.sigmoid()?))
}

/// `log(1 + e^x)` without overflow: `relu(x) + log(1 + e^-|x|)`, with `log(1 + e)` taken
/// from its series `e - e²/2 + e³/3` where `e` is small (f32's `1 + e` would lose it).
fn softplus(x: &Tensor) -> anygrad_core::Result<Tensor> {
    let e = x.abs()?.neg()?.exp()?;
    let series = e.mul(
        &e.mul(&e.mul_scalar(1.0 / 3.0)?.sub_scalar(0.5)?)?
            .add_scalar(1.0)?,
    )?;
    let direct = e.add_scalar(1.0)?.log()?;
    let small = e.lt_scalar(1e-3)?;
    x.relu()?.add(&Tensor::where_(&small, &series, &direct)?)
}

/// `positive(x)` where `x > 0`, `negative(x)` elsewhere.
fn piecewise(
    x: &Tensor,
    threshold: f64,
    above: &Tensor,
    below: &Tensor,
) -> anygrad_core::Result<Tensor> {
    Tensor::where_(&x.gt_scalar(threshold)?, above, below)
}

fn leaky_relu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 0.01)? as f64;
    unary(ctx, |x| piecewise(x, 0.0, x, &x.mul_scalar(alpha)?))
}

fn prelu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let slope = ctx.tensor(1)?;
    single(ctx.core(x.mul(&slope).and_then(|neg| piecewise(&x, 0.0, &x, &neg)))?)
}

fn elu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 1.0)? as f64;
    unary(ctx, |x| {
        let below = x
            .minimum_scalar(0.0)?
            .exp()?
            .sub_scalar(1.0)?
            .mul_scalar(alpha)?;
        piecewise(x, 0.0, x, &below)
    })
}

fn selu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 1.673_263_2)? as f64;
    let gamma = ctx.attr_float("gamma", 1.050_701)? as f64;
    unary(ctx, |x| {
        let below = x
            .minimum_scalar(0.0)?
            .exp()?
            .sub_scalar(1.0)?
            .mul_scalar(alpha)?;
        piecewise(x, 0.0, x, &below)?.mul_scalar(gamma)
    })
}

fn celu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 1.0)? as f64;
    unary(ctx, |x| {
        let below = x
            .div_scalar(alpha)?
            .minimum_scalar(0.0)?
            .exp()?
            .sub_scalar(1.0)?
            .mul_scalar(alpha)?;
        x.relu()?.add(&below)
    })
}

fn hard_sigmoid(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 0.2)? as f64;
    let beta = ctx.attr_float("beta", 0.5)? as f64;
    unary(ctx, |x| {
        x.mul_scalar(alpha)?.add_scalar(beta)?.clamp(0.0, 1.0)
    })
}

fn thresholded_relu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let alpha = ctx.attr_float("alpha", 1.0)? as f64;
    unary(ctx, |x| piecewise(x, alpha, x, &x.zeros_like()?))
}

fn shrink(ctx: &NodeContext) -> Result<Vec<Value>> {
    let bias = ctx.attr_float("bias", 0.0)? as f64;
    let lambd = ctx.attr_float("lambd", 0.5)? as f64;
    unary(ctx, |x| {
        let zero = x.zeros_like()?;
        let low = Tensor::where_(&x.lt_scalar(-lambd)?, &x.add_scalar(bias)?, &zero)?;
        Tensor::where_(&x.gt_scalar(lambd)?, &x.sub_scalar(bias)?, &low)
    })
}

fn gelu(ctx: &NodeContext) -> Result<Vec<Value>> {
    let approximate = ctx.attr_string("approximate", "none")?;
    match approximate.as_str() {
        "none" => unary(ctx, Tensor::gelu),
        "tanh" => unary(ctx, Tensor::gelu_tanh),
        other => Err(ctx.error(format!("approximate `{other}` is not none or tanh"))),
    }
}

fn clip(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let (low, high) = if ctx.opset < 11 {
        (
            Some(ctx.attr_float("min", f32::MIN)? as f64),
            Some(ctx.attr_float("max", f32::MAX)? as f64),
        )
    } else {
        let low = match ctx.optional(1) {
            Some(_) => Some(ctx.scalar(1)?),
            None => None,
        };
        let high = match ctx.optional(2) {
            Some(_) => Some(ctx.scalar(2)?),
            None => None,
        };
        (low, high)
    };
    let mut out = x;
    if let Some(low) = low {
        out = ctx.core(out.maximum_scalar(low))?;
    }
    if let Some(high) = high {
        out = ctx.core(out.minimum_scalar(high))?;
    }
    single(out)
}

/// The softmax-like operators.
#[derive(Clone, Copy)]
enum Family {
    Softmax,
    LogSoftmax,
    Hardmax,
}

/// Softmax, LogSoftmax and Hardmax: over one axis (default -1) from opset 13, over the
/// flattened dims from `axis` on (default 1) before.
fn softmax_family(ctx: &NodeContext, family: Family) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let apply = |t: &Tensor, dim: isize| -> anygrad_core::Result<Tensor> {
        match family {
            Family::Softmax => t.softmax(dim),
            Family::LogSoftmax => t.log_softmax(dim),
            Family::Hardmax => {
                let index = t.argmax(dim, true)?;
                let size = t.dim(dim)?;
                let positions = Tensor::arange(0.0, size as f64, 1.0, DType::I32, t.device())?;
                let mut shape = vec![1usize; t.rank()];
                let d = if dim < 0 {
                    dim + t.rank() as isize
                } else {
                    dim
                } as usize;
                shape[d] = size;
                let hot = positions.reshape(shape)?.eq(&index)?;
                hot.to_dtype(t.dtype())
            }
        }
    };
    if rank == 0 {
        return Err(ctx.error("needs an input of rank 1 or more"));
    }
    if ctx.opset >= 13 {
        let axis = ctx.axis(ctx.attr_int("axis", -1)?, rank)?;
        return single(ctx.core(apply(&x, axis as isize))?);
    }
    let axis = ctx.axis(ctx.attr_int("axis", 1)?, rank)?;
    let shape = x.shape().to_vec();
    let rows: usize = shape[..axis].iter().product();
    let cols: usize = shape[axis..].iter().product();
    let flat = ctx.core(x.reshape([rows, cols]))?;
    let out = ctx.core(apply(&flat, 1))?;
    single(ctx.core(out.reshape(shape))?)
}
