//! The window arithmetic Conv, ConvTranspose and the pooling operators share: kernel,
//! strides, dilations and the begin/end pads of each spatial dim, with `auto_pad` (NOTSET,
//! VALID, SAME_UPPER, SAME_LOWER) resolved against the input's size.

use crate::context::NodeContext;
use crate::error::Result;

/// Per spatial dim: kernel size, stride, dilation, pad at the begin and at the end.
#[derive(Clone, Debug)]
pub(crate) struct Windows {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    pub pads_begin: Vec<usize>,
    pub pads_end: Vec<usize>,
}

/// The largest stride, dilation or pad accepted (larger ones are refused, not overflowed).
const LIMIT: i64 = 1 << 31;

/// A list attribute of `count` positive entries (default `fill` each).
fn positive_list(ctx: &NodeContext, name: &str, count: usize, fill: usize) -> Result<Vec<usize>> {
    match ctx.attr_ints(name)? {
        None => Ok(vec![fill; count]),
        Some(v) if v.len() == count && v.iter().all(|&x| x > 0 && x <= LIMIT) => {
            Ok(v.iter().map(|&x| x as usize).collect())
        }
        Some(v) => Err(ctx.error(format!(
            "attribute `{name}` {v:?} must hold {count} positive numbers"
        ))),
    }
}

/// The windows of a node over `spatial` input sizes with `kernel` taps (from the weight or
/// the `kernel_shape` attribute).
pub(crate) fn windows(ctx: &NodeContext, spatial: &[usize], kernel: Vec<usize>) -> Result<Windows> {
    let n = spatial.len();
    if kernel.len() != n {
        return Err(ctx.error(format!("kernel {kernel:?} does not match {n} spatial dims")));
    }
    let strides = positive_list(ctx, "strides", n, 1)?;
    let dilations = positive_list(ctx, "dilations", n, 1)?;
    let auto_pad = ctx.attr_string("auto_pad", "NOTSET")?;
    let (pads_begin, pads_end) = match auto_pad.as_str() {
        "NOTSET" | "" => match ctx.attr_ints("pads")? {
            None => (vec![0; n], vec![0; n]),
            Some(p) if p.len() == 2 * n && p.iter().all(|&x| (0..=LIMIT).contains(&x)) => (
                p[..n].iter().map(|&x| x as usize).collect(),
                p[n..].iter().map(|&x| x as usize).collect(),
            ),
            Some(p) => {
                return Err(ctx.error(format!(
                    "pads {p:?} must hold {} non-negative numbers",
                    2 * n
                )))
            }
        },
        "VALID" => (vec![0; n], vec![0; n]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut begin = vec![0; n];
            let mut end = vec![0; n];
            for i in 0..n {
                let out = spatial[i].div_ceil(strides[i]);
                let span = kernel[i].saturating_sub(1).saturating_mul(dilations[i]) + 1;
                let total = out
                    .saturating_sub(1)
                    .saturating_mul(strides[i])
                    .saturating_add(span)
                    .saturating_sub(spatial[i]);
                let small = total / 2;
                if auto_pad == "SAME_UPPER" {
                    begin[i] = small;
                    end[i] = total - small;
                } else {
                    begin[i] = total - small;
                    end[i] = small;
                }
            }
            (begin, end)
        }
        other => return Err(ctx.error(format!("auto_pad `{other}` is not supported"))),
    };
    Ok(Windows {
        kernel,
        strides,
        dilations,
        pads_begin,
        pads_end,
    })
}
