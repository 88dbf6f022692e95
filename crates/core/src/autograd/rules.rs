//! One derivative rule per primitive, each written as the maths it implements. `g` is the
//! gradient flowing into the op's output; each arm returns the gradients of the op's inputs
//! (in the order of `GradFn::inputs`), computed with ordinary tensor ops.

use super::GradFn;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::Tensor;

/// Gradients of the inputs of `grad_fn` given the output gradient `g`.
pub(super) fn input_gradients(grad_fn: &GradFn, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    Ok(match grad_fn {
        GradFn::Unary { input, op } => vec![Some(unary_rule(*op, input, g)?)],
        GradFn::UnaryFromOutput { output, op, .. } => {
            vec![Some(unary_rule_from_output(*op, output, g)?)]
        }
        // y = cumsum(x) along d: dx_i = sum_{j >= i} g_j = sum(g) - cumsum(g)_i + g_i.
        GradFn::Cumsum { dim, .. } => {
            let along = *dim as isize;
            let total = g.sum(&[along], true)?;
            vec![Some(total.sub(&g.cumsum(along)?)?.add(g)?)]
        }
        // y = softmax(x) over the last dim: dx = y * (g - sum(g * y, last, keepdim)); y =
        // log_softmax(x): dx = g - exp(y) * sum(g, last, keepdim). One row kernel each.
        GradFn::SoftmaxLast { output, log, .. } => {
            vec![Some(Tensor::softmax_last_backward(output, g, *log)?)]
        }
        GradFn::Binary { lhs, rhs, op } => {
            // An operand no gradient flows to (a constant, a detached value) gets none, and
            // its side of the rule runs no kernels.
            let (a, b) = binary_rule(*op, lhs, rhs, g)?;
            vec![a, b]
        }
        GradFn::BinaryScalar {
            input,
            op,
            scalar,
            scalar_on_left,
        } => vec![scalar_rule(*op, input, *scalar, *scalar_on_left, g)?],
        // where(c, t, f): dt = g·[c], df = g·[¬c]
        GradFn::Where { condition, .. } => {
            let zeros = g.zeros_like()?;
            vec![
                Some(Tensor::where_(condition, g, &zeros)?),
                Some(Tensor::where_(condition, &zeros, g)?),
            ]
        }
        GradFn::Reduce { input, op, dims } => vec![reduce_rule(*op, input, dims, g)?],
        // C = A·B: dA = g·Bᵀ, dB = Aᵀ·g (per batch)
        // (each only for an operand gradients flow to)
        GradFn::Matmul { lhs, rhs } => vec![
            if lhs.is_tracked() {
                Some(product_gradient_like(
                    lhs,
                    || g.matmul(&rhs.transpose(1, 2)?),
                    || rhs.matmul(&g.transpose(1, 2)?),
                )?)
            } else {
                None
            },
            if rhs.is_tracked() {
                Some(product_gradient_like(
                    rhs,
                    || lhs.transpose(1, 2)?.matmul(g),
                    || g.transpose(1, 2)?.matmul(lhs),
                )?)
            } else {
                None
            },
        ],
        // y = x ⋆ W (one group): dx = g ⋆ᵀ W (the transposed convolution),
        // dW[o, c, i, j] = Σ g[·, o, ·, ·] · x[·, c, windows at tap (i, j)]
        GradFn::Conv2d {
            input,
            weight,
            params,
        } => {
            let input_grad = if input.is_tracked() {
                Some(g.conv2d_backward_input(weight, params, input.shape())?)
            } else {
                None
            };
            let weight_grad = if weight.is_tracked() {
                Some(input.conv2d_backward_weight(g, params, weight.shape())?)
            } else {
                None
            };
            vec![input_grad, weight_grad]
        }
        // y = x ⋆ W channel by channel (depthwise, multiplier m): dx[·, c] = Σ over the m
        // output channels o of c of g[·, o] ⋆ᵀ W[o],
        // dW[o, 0, i, j] = Σ g[·, o, ·, ·] · x[·, o / m, windows at tap (i, j)]
        GradFn::DepthwiseConv2d {
            input,
            weight,
            params,
        } => {
            let input_grad = if input.is_tracked() {
                Some(g.depthwise_conv2d_backward_input(weight, params, input.shape())?)
            } else {
                None
            };
            let weight_grad = if weight.is_tracked() {
                Some(input.depthwise_conv2d_backward_weight(g, params, weight.shape())?)
            } else {
                None
            };
            vec![input_grad, weight_grad]
        }
        // y = conv2d_backward_input(x, w): dx = conv2d(g, w), dw = conv2d_backward_weight
        // with the output gradient as the convolution's input and x as its output gradient.
        GradFn::ConvTranspose2d {
            input,
            weight,
            params,
        } => {
            let input_grad = if input.is_tracked() {
                Some(g.conv2d_untracked(weight, params)?)
            } else {
                None
            };
            let weight_grad = if weight.is_tracked() {
                Some(g.conv2d_backward_weight(input, params, weight.shape())?)
            } else {
                None
            };
            vec![input_grad, weight_grad]
        }
        // y = max over each window: dx = g routed to the window's first maximal input
        GradFn::MaxPool2d {
            input,
            output,
            window,
        } => vec![Some(input.max_pool2d_backward(output, window, g)?)],
        GradFn::Reshape { input } => vec![Some(g.reshape(input.shape())?)],
        // permute by p: dx = g permuted by p⁻¹
        GradFn::Permute { perm, .. } => {
            let mut inverse = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inverse[p] = i;
            }
            vec![Some(g.permute(&inverse)?)]
        }
        // broadcast: dx = Σ g over the stretched dims
        GradFn::BroadcastTo { input } => vec![Some(sum_to_shape(g, input.shape())?)],
        // narrow: dx = g written into zeros at [start, start + len)
        GradFn::Narrow { input, dim, start } => {
            let target = Layout::contiguous(input.shape()).narrow(*dim, *start, g.shape()[*dim]);
            vec![Some(g.written_into_zeros(input.shape(), &target)?)]
        }
        // y = a window view of x (no element seen twice): dx = g written into zeros there
        GradFn::StridedView { input, relative } => {
            vec![Some(g.written_into_zeros(input.shape(), relative)?)]
        }
        GradFn::Copy { .. } => vec![Some(g.clone())],
        GradFn::Cast { input } => vec![Some(g.to_dtype(input.dtype())?)],
        GradFn::ToDevice { input } => vec![Some(g.to_device(input.device())?)],
        // y = x[idx] along d: dx = index_add(0, d, idx, g) — deterministic on the GPU, and fast
        // when one index repeats (every token's position or token-type embedding row). The
        // zero base is one element broadcast: index_add makes it contiguous in its first copy.
        GradFn::IndexSelect {
            input,
            indices,
            dim,
        } => {
            let zeros =
                Tensor::zeros(&[], input.dtype(), input.device())?.broadcast_to(input.shape())?;
            vec![Some(zeros.index_add(*dim as isize, indices, g)?)]
        }
        // y = gather(x, d, idx): dx = scatter_add(0, d, idx, g)
        GradFn::Gather {
            input,
            indices,
            dim,
        } => {
            vec![Some(input.zeros_like()?.scatter_add(
                *dim as isize,
                indices,
                g,
            )?)]
        }
        // y = base + scatter(src): dbase = g, dsrc = gather(g, d, idx)
        GradFn::ScatterAdd {
            indices, src, dim, ..
        } => {
            let gathered = g.gather(*dim as isize, indices)?;
            let src_grad = if gathered.shape() == src.shape() {
                gathered
            } else {
                let mut target = Layout::contiguous(src.shape());
                target.shape = gathered.shape().to_vec();
                gathered.written_into_zeros(src.shape(), &target)?
            };
            vec![Some(g.clone()), Some(src_grad)]
        }
        // y = base + index_add(src): dbase = g, dsrc = g[idx] along d
        GradFn::IndexAdd { indices, dim, .. } => {
            vec![
                Some(g.clone()),
                Some(g.index_select(*dim as isize, indices)?),
            ]
        }
        // cat: each input's gradient is its slice of g
        GradFn::Cat { inputs, dim } => {
            let mut start = 0;
            let mut grads = Vec::with_capacity(inputs.len());
            for input in inputs {
                let len = input.shape()[*dim];
                grads.push(Some(g.narrow(*dim as isize, start, len)?));
                start += len;
            }
            grads
        }
        GradFn::Custom { inputs, backward } => backward.backward(inputs, g)?,
    })
}

/// Sum `g` down to `shape` (the inverse of broadcasting).
pub(crate) fn sum_to_shape(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.rank() - shape.len();
    let mut dims: Vec<isize> = (0..lead as isize).collect();
    for (i, &size) in shape.iter().enumerate() {
        if size == 1 && g.shape()[lead + i] != 1 {
            dims.push((lead + i) as isize);
        }
    }
    g.sum(&dims, true)?.reshape(shape)
}

fn unary_rule(op: UnaryOp, x: &Tensor, g: &Tensor) -> Result<Tensor> {
    match op {
        // d(-x) = -1
        UnaryOp::Neg => g.neg(),
        // d|x| = sign(x)
        UnaryOp::Abs => g.mul(&x.sign()?),
        // d sign(x) = 0, and the rounding ops are steps: zero almost everywhere (PyTorch's
        // gradient too)
        UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => {
            g.zeros_like()
        }
        // d eˣ = eˣ
        UnaryOp::Exp => g.mul(&x.exp()?),
        // d ln x = 1/x
        UnaryOp::Log => g.div(x),
        // d √x = 1 / (2√x)
        UnaryOp::Sqrt => g.div(&x.sqrt()?.mul_scalar(2.0)?),
        // d x^(-1/2) = -½ x^(-3/2) = -½ rsqrt(x) / x
        UnaryOp::Rsqrt => g.mul(&x.rsqrt()?.div(x)?.mul_scalar(-0.5)?),
        // d (1/x) = -1/x²
        UnaryOp::Recip => g.neg()?.div(&x.square()?),
        // d sin x = cos x
        UnaryOp::Sin => g.mul(&x.cos()?),
        // d cos x = -sin x
        UnaryOp::Cos => g.mul(&x.sin()?.neg()?),
        // d tanh x = 1 - tanh² x
        UnaryOp::Tanh => g.mul(&x.tanh()?.square()?.rsub_scalar(1.0)?),
        // d σ(x) = σ(x)(1 - σ(x))
        UnaryOp::Sigmoid => {
            let s = x.sigmoid()?;
            g.mul(&s.mul(&s.rsub_scalar(1.0)?)?)
        }
        // d relu(x) = [x > 0]
        UnaryOp::Relu => g.mul(&x.gt_scalar(0.0)?.to_dtype(g.dtype())?),
        // d gelu(x) = Φ(x) + x·φ(x), Φ(x) = ½(1 + erf(x/√2)), φ(x) = e^(-x²/2)/√(2π)
        UnaryOp::Gelu => {
            let cdf = x
                .mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?
                .erf()?
                .add_scalar(1.0)?
                .mul_scalar(0.5)?;
            let pdf = x
                .square()?
                .mul_scalar(-0.5)?
                .exp()?
                .mul_scalar(0.398_942_280_401_432_7)?;
            g.mul(&cdf.add(&x.mul(&pdf)?)?)
        }
        // d erf(x) = 2/√π · e^(-x²)
        UnaryOp::Erf => g.mul(
            &x.square()?
                .neg()?
                .exp()?
                .mul_scalar(std::f64::consts::FRAC_2_SQRT_PI)?,
        ),
        // d x·σ(x) = σ(x) + x·σ(x)(1 - σ(x))
        UnaryOp::Silu => {
            let s = x.sigmoid()?;
            let ds = s.mul(&s.rsub_scalar(1.0)?)?;
            g.mul(&s.add(&x.mul(&ds)?)?)
        }
    }
}

/// The derivative of the ops that record their output (`UnaryOp::derivative_from_output`),
/// written in that output `y`. Any other op falls back to nothing it could compute, which the
/// recording side never asks for.
fn unary_rule_from_output(op: UnaryOp, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    match op {
        // d relu = [y > 0] = sign(y), as y ≥ 0: two float ops that fuse into one kernel
        UnaryOp::Relu => g.mul(&y.sign()?),
        // d eˣ = y
        UnaryOp::Exp => g.mul(y),
        // d σ = y(1 - y)
        UnaryOp::Sigmoid => g.mul(&y.mul(&y.rsub_scalar(1.0)?)?),
        // d tanh = 1 - y²
        UnaryOp::Tanh => g.mul(&y.square()?.rsub_scalar(1.0)?),
        UnaryOp::Neg
        | UnaryOp::Abs
        | UnaryOp::Sign
        | UnaryOp::Log
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt
        | UnaryOp::Recip
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Gelu
        | UnaryOp::Erf
        | UnaryOp::Silu
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::Trunc => Err(crate::error::Error::Autograd {
            message: format!("{op:?} does not record its output for backward"),
        }),
    }
}

fn mask(condition: Tensor, like: &Tensor) -> Result<Tensor> {
    condition.to_dtype(like.dtype())
}

/// A matrix product's operand gradient in the operand's own layout: where the operand is the
/// transpose of a dense matrix (a linear layer's `weight.t()`), the gradient is computed
/// transposed (`transposed()`, e.g. `gᵀ·A` for `Aᵀ·g`) and handed back as its transposed view,
/// so that it reaches the dense parameter dense and an optimizer step reads it without a
/// copy; otherwise `direct()`. The same products either way.
fn product_gradient_like(
    operand: &Tensor,
    direct: impl FnOnce() -> Result<Tensor>,
    transposed: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let rank = operand.rank();
    let transposed_dense = rank >= 2
        && !operand.layout().is_contiguous()
        && operand.layout().strides[rank - 2] == 1
        && operand.shape()[rank - 2] > 1
        && operand
            .transpose(rank as isize - 2, rank as isize - 1)?
            .layout()
            .is_contiguous();
    if transposed_dense {
        transposed()?.transpose(rank as isize - 2, rank as isize - 1)
    } else {
        direct()
    }
}

fn binary_rule(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    g: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    // Each side is computed only for an operand gradients flow to.
    let side = |tracked: bool, rule: &dyn Fn() -> Result<Tensor>| -> Result<Option<Tensor>> {
        if tracked {
            rule().map(Some)
        } else {
            Ok(None)
        }
    };
    let (left, right) = (a.is_tracked(), b.is_tracked());
    Ok(match op {
        // d(a+b) = (1, 1)
        BinaryOp::Add => (Some(g.clone()), Some(g.clone())),
        // d(a-b) = (1, -1)
        BinaryOp::Sub => (Some(g.clone()), side(right, &|| g.neg())?),
        // d(ab) = (b, a)
        BinaryOp::Mul => (side(left, &|| g.mul(b))?, side(right, &|| g.mul(a))?),
        // d(a/b) = (1/b, -a/b²)
        BinaryOp::Div => (
            side(left, &|| g.div(b))?,
            side(right, &|| g.mul(a)?.neg()?.div(&b.square()?))?,
        ),
        // d max(a,b) = ([a>b] + ½[a=b], [b>a] + ½[a=b])  (ties share, as in PyTorch)
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let wins = |x: &Tensor, y: &Tensor| {
                if op == BinaryOp::Maximum {
                    x.gt(y)
                } else {
                    x.lt(y)
                }
            };
            let tie = || mask(a.eq(b)?, g)?.mul_scalar(0.5);
            (
                side(left, &|| g.mul(&mask(wins(a, b)?, g)?.add(&tie()?)?))?,
                side(right, &|| g.mul(&mask(wins(b, a)?, g)?.add(&tie()?)?))?,
            )
        }
        // d aᵇ = (b·aᵇ⁻¹, aᵇ·ln a), with the b-gradient taken as 0 where a = 0
        BinaryOp::Pow => (
            side(left, &|| g.mul(&b.mul(&a.pow(&b.sub_scalar(1.0)?)?)?))?,
            side(right, &|| {
                let db_raw = g.mul(&a.pow(b)?.mul(&a.log()?)?)?;
                Tensor::where_(&a.eq_scalar(0.0)?, &db_raw.zeros_like()?, &db_raw)
            })?,
        ),
        // Comparisons and bit operators are piecewise constant (and bit operators never see
        // float data): no gradient.
        BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::BitwiseAnd
        | BinaryOp::BitwiseOr
        | BinaryOp::BitwiseXor
        | BinaryOp::ShiftLeft
        | BinaryOp::ShiftRight => (None, None),
    })
}

fn scalar_rule(
    op: BinaryOp,
    x: &Tensor,
    s: f64,
    scalar_on_left: bool,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    Ok(match (op, scalar_on_left) {
        // d(x+s) = 1; d(x-s) = 1; d(s-x) = -1
        (BinaryOp::Add, _) | (BinaryOp::Sub, false) => Some(g.clone()),
        (BinaryOp::Sub, true) => Some(g.neg()?),
        // d(xs) = s
        (BinaryOp::Mul, _) => Some(g.mul_scalar(s)?),
        // d(x/s) = 1/s; d(s/x) = -s/x²
        (BinaryOp::Div, false) => Some(g.div_scalar(s)?),
        (BinaryOp::Div, true) => Some(g.mul_scalar(-s)?.div(&x.square()?)?),
        // d xˢ = s·xˢ⁻¹; d sˣ = sˣ·ln s
        (BinaryOp::Pow, false) => Some(g.mul(&x.pow_scalar(s - 1.0)?.mul_scalar(s)?)?),
        (BinaryOp::Pow, true) => Some(
            g.mul(
                &x.binary_scalar(BinaryOp::Pow, s, true)?
                    .mul_scalar(s.ln())?,
            )?,
        ),
        // d max(x, s) = [x > s] + ½[x = s]
        (BinaryOp::Maximum, _) | (BinaryOp::Minimum, _) => {
            let wins = if op == BinaryOp::Maximum {
                x.gt_scalar(s)?
            } else {
                x.lt_scalar(s)?
            };
            let share = mask(wins, g)?.add(&mask(x.eq_scalar(s)?, g)?.mul_scalar(0.5)?)?;
            Some(g.mul(&share)?)
        }
        (
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::BitwiseAnd
            | BinaryOp::BitwiseOr
            | BinaryOp::BitwiseXor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRight,
            _,
        ) => None,
    })
}

fn reduce_rule(op: ReduceOp, x: &Tensor, dims: &[usize], g: &Tensor) -> Result<Option<Tensor>> {
    let _ = dims;
    Ok(match op {
        // d Σx = 1 for every reduced element
        ReduceOp::Sum => Some(g.broadcast_to(x.shape())?.contiguous()?),
        // d mean x = 1 / n for every reduced element
        ReduceOp::Mean => {
            let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
            Some(
                g.div_scalar(count.max(1) as f64)?
                    .broadcast_to(x.shape())?
                    .contiguous()?,
            )
        }
        // d max x = [x = max] / (number of ties), so tied maxima share the gradient
        ReduceOp::Max | ReduceOp::Min => {
            let dims_signed: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
            let extreme = x.reduce(op, &dims_signed, true)?;
            let hits = x.eq(&extreme)?.to_dtype(if x.dtype() == DType::Bool {
                DType::F32
            } else {
                x.dtype()
            })?;
            let count = hits.sum(&dims_signed, true)?;
            Some(hits.div(&count)?.mul(g)?)
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => None,
    })
}
