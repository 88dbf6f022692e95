//! Tests of the conv2d gradient kernels: naga validation of every instantiation, both gradients
//! (every tile and weight-gradient variant) against the CPU for awkward shapes, the split sum
//! (in its blocks' order and permuted to the weight's), and the split-K count.

use super::weight::{split_count, WeightKernel};
use super::{sum_splits, Permutation};
use crate::backend::contract::Convolution;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::conv::gemm::testing::{check, gpu, params, upload, values, Case};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::kernel::Kernel;
use crate::dtype::DType;
use crate::layout::Layout;

/// Every generated backward kernel parses, validates and translates to SPIR-V for both
/// float storage types (`all_kernel_sources` covers them too; this names the failure).
#[test]
fn backward_kernels_validate() {
    for dtype in [DType::F32, DType::F16] {
        let mut keys = vec![ConvKernel::Conv2dSplitSum { dtype }];
        for flag in [false, true] {
            for wide in [false, true] {
                keys.push(ConvKernel::Conv2dBackwardInput {
                    dtype,
                    unit_stride: flag,
                    wide,
                });
            }
            for kernel in WeightKernel::ALL {
                keys.push(ConvKernel::Conv2dBackwardWeight {
                    dtype,
                    partial: flag,
                    wide: kernel.wide,
                    lean: kernel.lean,
                });
            }
        }
        for key in keys {
            let source = key.source();
            if let Err(error) = crate::backend::gpu::runtime::shader_check::naga_check(&source) {
                panic!("{error}");
            }
        }
    }
}

/// The input gradient with both tiles, forced whatever `prefers_wide` says, against the
/// CPU's on the same (rounded) values: M = c of 128 to 160 (a partial second wide row
/// tile), partial column tiles and k-steps, unit stride (the walk's linear shift) and
/// strides 2 and 3 (quotients and remainders; stride 3 > kernel leaves input pixels no
/// tap reaches), dilation, padding, a 7 x 7 kernel (taps wider than a k-step), and a
/// strided output gradient with a non-square dilated kernel at unit stride.
#[test]
fn input_gradient_both_tiles_match_cpu() {
    let Some(device) = gpu() else { return };
    #[rustfmt::skip]
    let cases: [Case; 6] = [
        // name, [n, c, h, w], o, [kh, kw], [stride, padding, dilation], strided gradient
        ("3x3 pad 1", [2, 160, 12, 12], 8, [3, 3], [1, 1, 1, 1, 1, 1], false),
        ("3x3 stride 2", [2, 128, 12, 11], 8, [3, 3], [2, 2, 1, 1, 1, 1], false),
        ("stride 3 > kernel", [2, 130, 11, 10], 6, [2, 2], [3, 3, 1, 0, 1, 1], false),
        ("non-square dilated", [2, 136, 11, 10], 5, [2, 3], [2, 1, 1, 0, 1, 2], false),
        ("7x7 stride 2 pad 3", [1, 128, 16, 16], 3, [7, 7], [2, 2, 3, 3, 1, 1], false),
        ("strided gradient", [2, 144, 9, 8], 6, [3, 2], [1, 1, 1, 0, 1, 2], true),
    ];
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16
            && !crate::backend::tests::support::has_or_skip(
                &device,
                crate::backend::tests::support::Requirement::F16,
                "the F16 cases",
            )
        {
            continue;
        }
        for (name, [n, c, h, w], o, [kh, kw], geometry, strided) in cases {
            let params = params(geometry);
            let [sh, sw, ph, pw, dh, dw] = geometry;
            let out = |size: usize, k: usize, s: usize, p: usize, d: usize| {
                (size + 2 * p - d * (k - 1) - 1) / s + 1
            };
            let (oh, ow) = (out(h, kh, sh, ph, dh), out(w, kw, sw, pw, dw));
            // The strided gradient: [n, oh, o, ow] storage viewed as [n, o, oh, ow].
            let layout = if strided {
                Layout::contiguous(&[n, oh, o, ow]).permute(&[0, 2, 1, 3])
            } else {
                Layout::contiguous(&[n, o, oh, ow])
            };
            let weight_layout = Layout::contiguous(&[o, c, kh, kw]);
            let g = values(n * o * oh * ow, 3, dtype);
            let k = values(o * c * kh * kw, 4, dtype);
            let input_shape = [n, c, h, w];
            let CpuStorage::F32(expected) =
                CpuStorage::F32(crate::backend::cpu::HostBuffer::from(g.clone()))
                    .conv2d_backward_input(
                        &layout,
                        &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(k.clone())),
                        &weight_layout,
                        &params,
                        &input_shape,
                    )
                    .unwrap()
            else {
                panic!("dtype changed");
            };
            let (g, k) = (upload(&device, &g, dtype), upload(&device, &k, dtype));
            for wide in [false, true] {
                let dx = g
                    .conv2d_backward_input_with(
                        &layout,
                        &k,
                        &weight_layout,
                        &params,
                        &input_shape,
                        Some(wide),
                    )
                    .unwrap();
                check(&dx, &expected, &format!("{name} ({dtype:?}, wide {wide})"));
            }
        }
    }
}

/// Every weight-gradient variant (narrow or wide tile, lean or not),
/// forced, with several splits (a partial last split) and the default (one split for these
/// short K), against the CPU's
/// on the same (rounded) values: M = o of 72 (one partial wide tile), 129 to 200 (a partial
/// second row tile), N = c * kh * kw from 4 to 147 (partial column tiles, some with both
/// halves, some with the first only, for the lean variant; 7 x 7 at stride 2, the stem's), output planes wider and narrower than a k-step (the walk advancing
/// rows, and whole images), strides 1 and 2, padding, dilation, and strided views of both
/// the input and the output gradient.
#[test]
fn weight_gradient_variants_match_cpu() {
    let Some(device) = gpu() else { return };
    #[rustfmt::skip]
    let cases: [Case; 6] = [
        // name, [n, c, h, w], o, [kh, kw], [stride, padding, dilation], strided operands
        ("3x3 pad 1", [3, 8, 7, 9], 136, [3, 3], [1, 1, 1, 1, 1, 1], false),
        ("3x3 stride 2", [2, 6, 11, 9], 130, [3, 3], [2, 2, 1, 1, 1, 1], false),
        ("7x7 stride 2 pad 3", [2, 3, 13, 12], 72, [7, 7], [2, 2, 3, 3, 1, 1], false),
        ("non-square dilated", [2, 5, 10, 11], 129, [2, 3], [1, 2, 1, 0, 2, 1], false),
        ("1x1 on 3x3 images", [5, 4, 3, 3], 200, [1, 1], [1, 1, 0, 0, 1, 1], false),
        ("strided views", [3, 6, 6, 5], 144, [3, 3], [1, 1, 1, 1, 1, 1], true),
    ];
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16
            && !crate::backend::tests::support::has_or_skip(
                &device,
                crate::backend::tests::support::Requirement::F16,
                "the F16 cases",
            )
        {
            continue;
        }
        for (name, [n, c, h, w], o, [kh, kw], geometry, strided) in cases {
            let params = params(geometry);
            let [sh, sw, ph, pw, dh, dw] = geometry;
            let out = |size: usize, k: usize, s: usize, p: usize, d: usize| {
                (size + 2 * p - d * (k - 1) - 1) / s + 1
            };
            let (oh, ow) = (out(h, kh, sh, ph, dh), out(w, kw, sw, pw, dw));
            // The strided operands: x as [n, h, c + 1, w] storage at offset 1, g as
            // [n, oh, o, ow] storage, both viewed as NCHW.
            let (x_len, x_layout, g_layout) = if strided {
                let mut x = Layout::contiguous(&[n, h, c + 1, w]).permute(&[0, 2, 1, 3]);
                x.shape[1] = c;
                x.offset = 1;
                let g = Layout::contiguous(&[n, oh, o, ow]).permute(&[0, 2, 1, 3]);
                (n * h * (c + 1) * w + 1, x, g)
            } else {
                (
                    n * c * h * w,
                    Layout::contiguous(&[n, c, h, w]),
                    Layout::contiguous(&[n, o, oh, ow]),
                )
            };
            let x = values(x_len, 5, dtype);
            let g = values(n * o * oh * ow, 6, dtype);
            let weight_shape = [o, c, kh, kw];
            let CpuStorage::F32(expected) =
                CpuStorage::F32(crate::backend::cpu::HostBuffer::from(x.clone()))
                    .conv2d_backward_weight(
                        &x_layout,
                        &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(g.clone())),
                        &g_layout,
                        &params,
                        &weight_shape,
                    )
                    .unwrap()
            else {
                panic!("dtype changed");
            };
            let (x, g) = (upload(&device, &x, dtype), upload(&device, &g, dtype));
            for kernel in WeightKernel::ALL {
                for splits in [Some(3), None] {
                    let dw = x
                        .conv2d_backward_weight_with(
                            &x_layout,
                            &g,
                            &g_layout,
                            &params,
                            &weight_shape,
                            (kernel, splits),
                        )
                        .unwrap();
                    check(
                        &dw,
                        &expected,
                        &format!("{name} ({dtype:?}, {kernel:?}, splits {splits:?})"),
                    );
                }
            }
        }
    }
}

/// Splits: many for few tiles and a long K, none for a short K, bounded by memory.
#[test]
fn split_counts() {
    // ResNet layer 1 at batch 64: one row tile, five column tiles, K = 64 * 56 * 56.
    assert_eq!(split_count(5, 64 * 56 * 56, 64 * 576), 205);
    // Layer 4: 288 tiles, K = 64 * 7 * 7 (196 k-steps): four splits.
    assert_eq!(split_count(288, 64 * 49, 512 * 4608), 4);
    // A short K is never split.
    assert_eq!(split_count(1, 100, 10), 1);
    // Memory bound.
    assert_eq!(split_count(1, 1 << 30, 1 << 25), 2);
}

/// The split sum against sums in f64: block counts on both sides of its split groups (1, 3,
/// 8, 9 splits: one invocation an element; 17 and 205: 8 groups, one with an odd last split),
/// lengths that leave workgroups part empty, both dtypes, in the blocks' order and permuted
/// from `[taps, padded, o]` to `[o, c, taps]` with padding channels dropped (by the stores, or
/// by a copy after the sum).
#[test]
fn split_sums_match_f64_sums() {
    let Some(device) = gpu() else {
        return;
    };
    // (splits, o, c, padded, taps)
    let cases = [
        (1, 8, 3, 8, 1),
        (3, 16, 8, 8, 9),
        (8, 4, 5, 8, 4),
        (9, 32, 16, 16, 9),
        (17, 3, 2, 8, 3),
        (205, 64, 8, 8, 9),
        // A large gradient with few splits.
        (3, 512, 60, 64, 9),
    ];
    for (splits, o, c, padded, taps) in cases {
        let len = taps * padded * o;
        let partials = values(splits * len, splits as u64 + 7, DType::F32);
        let sums: Vec<f64> = (0..len)
            .map(|i| (0..splits).map(|s| f64::from(partials[s * len + i])).sum())
            .collect();
        let mut permuted = vec![0.0f32; o * c * taps];
        for (i, &sum) in sums.iter().enumerate() {
            let (out_channel, row) = (i % o, i / o);
            let (tap, channel) = (row / padded, row % padded);
            if channel < c {
                permuted[(out_channel * c + channel) * taps + tap] = sum as f32;
            }
        }
        let plain: Vec<f32> = sums.iter().map(|&sum| sum as f32).collect();
        let stored = upload(&device, &partials, DType::F32);
        for dtype in [DType::F32, DType::F16] {
            if dtype == DType::F16
                && !crate::backend::tests::support::has_or_skip(
                    &device,
                    crate::backend::tests::support::Requirement::F16,
                    "the F16 sums",
                )
            {
                continue;
            }
            let what = format!("{splits} splits of {len} in {dtype}");
            let out = sum_splits(&stored, splits, len, dtype, None).unwrap();
            check(&out, &plain, &what);
            let permutation = Permutation {
                out_channels: o,
                channels: c,
                padded,
                taps,
            };
            let out = sum_splits(&stored, splits, len, dtype, Some(permutation)).unwrap();
            check(&out, &permuted, &format!("{what}, permuted"));
        }
    }
}
