//! A reference 2-D convolution written with public ops only: an explicit unfold (im2col) by
//! `index_select` over the flattened, zero-extended image, then a matmul (one per group). Autograd
//! differentiates it through those primitives, which gives reference gradients for the direct
//! convolution, the depthwise convolution and their backward primitives (anygrad-core's
//! `conv_direct`, `conv_backward` and `conv_depthwise` tests).

use anygrad_core::{Conv2dParams, Device, Tensor};

/// Output size of one axis (PyTorch's formula).
pub fn conv_output_size(size: usize, k: usize, s: usize, p: usize, d: usize) -> usize {
    (size + 2 * p - d * (k - 1) - 1) / s + 1
}

/// `conv2d(input, weight, bias)` with `params.groups` groups (weight `[o, c / groups, kh, kw]`;
/// depthwise: groups == c), as unfold + one matmul per group (+ bias).
pub fn unfold_conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: Conv2dParams,
) -> Tensor {
    let &[n, c, h, w] = input.shape() else {
        panic!("input must be [n, c, h, w]")
    };
    let &[o, _, kh, kw] = weight.shape() else {
        panic!("weight must be [o, c / groups, kh, kw]")
    };
    let groups = params.groups;
    assert!(
        groups > 0 && c % groups == 0 && o % groups == 0,
        "groups must divide the channels"
    );
    let (s, p, d) = (params.stride, params.padding, params.dilation);
    let oh = conv_output_size(h, kh, s.0, p.0, d.0);
    let ow = conv_output_size(w, kw, s.1, p.1, d.1);
    // For each tap (ki, kj) and output pixel: the flat pixel it reads, or h * w (a zero).
    let mut table: Vec<i32> = Vec::with_capacity(kh * kw * oh * ow);
    for ki in 0..kh {
        for kj in 0..kw {
            for oi in 0..oh {
                for oj in 0..ow {
                    let y = (oi * s.0 + ki * d.0) as isize - p.0 as isize;
                    let x = (oj * s.1 + kj * d.1) as isize - p.1 as isize;
                    let inside = y >= 0 && x >= 0 && (y as usize) < h && (x as usize) < w;
                    table.push(if inside {
                        (y as usize * w + x as usize) as i32
                    } else {
                        (h * w) as i32
                    });
                }
            }
        }
    }
    let device: &Device = input.device();
    let flat = input.reshape([n, c, h * w]).unwrap();
    let zero = Tensor::zeros(&[n, c, 1], input.dtype(), device).unwrap();
    let flat = Tensor::cat(&[&flat, &zero], 2).unwrap();
    let indices = Tensor::from_vec(table, &[kh * kw * oh * ow], device).unwrap();
    let columns = flat.index_select(2, &indices).unwrap();
    let out = if groups == 1 {
        weight
            .reshape([o, c * kh * kw])
            .unwrap()
            .matmul(&columns.reshape([n, c * kh * kw, oh * ow]).unwrap())
            .unwrap()
    } else {
        // [groups, o / groups, patch] by [n, groups, patch, oh * ow].
        let patch = c / groups * kh * kw;
        weight
            .reshape([groups, o / groups, patch])
            .unwrap()
            .matmul(&columns.reshape([n, groups, patch, oh * ow]).unwrap())
            .unwrap()
    }
    .reshape([n, o, oh, ow])
    .unwrap();
    match bias {
        None => out,
        Some(bias) => out.add(&bias.reshape([1, o, 1, 1]).unwrap()).unwrap(),
    }
}
