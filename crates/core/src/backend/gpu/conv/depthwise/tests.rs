//! Tests of the depthwise kernels: naga validation of every instantiation, and the three
//! passes against the CPU's depthwise primitives (the reference) on the same rounded values,
//! with strided and offset views of every operand (a weight whose size-1 dim has a stride
//! that reaches past the buffer), F32 and F16.

use super::{weight_gradient_lanes, DepthwisePass};
use crate::backend::contract::Convolution;
use crate::backend::cpu::{CpuStorage, HostBuffer};
use crate::backend::gpu::conv::gemm::testing::{check, gpu, upload, values};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::kernel::Kernel;
use crate::dtype::DType;
use crate::geometry::Conv2dParams;
use crate::layout::Layout;

/// Every depthwise kernel parses, validates and translates to SPIR-V for both float storage
/// types (`all_kernel_sources` covers them too; this names the failure).
#[test]
fn depthwise_kernels_validate() {
    for dtype in [DType::F32, DType::F16] {
        for pass in DepthwisePass::ALL {
            let source = ConvKernel::Depthwise { dtype, pass }.source();
            if let Err(error) = crate::backend::gpu::runtime::shader_check::naga_check(&source) {
                panic!("{pass:?} {dtype:?}: {error}");
            }
        }
    }
}

/// A view of `shape` over a larger storage: the dims stored in the order `perm` (its own
/// inverse), dim 1 one element wider than needed, and an offset of 3; with the storage's
/// length.
fn loose_view(shape: [usize; 4], perm: [usize; 4]) -> (Layout, usize) {
    let mut stored: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let wide = perm.iter().position(|&p| p == 1).unwrap_or(1);
    stored[wide] += 1;
    let mut layout = Layout::contiguous(&stored).permute(&perm);
    layout.shape = shape.to_vec();
    layout.offset = 3;
    (layout, stored.iter().product::<usize>() + 3)
}

fn cpu_f32(values: &[f32]) -> CpuStorage {
    CpuStorage::F32(HostBuffer::from(values.to_vec()))
}

fn f32_values(storage: CpuStorage) -> Vec<f32> {
    match storage {
        CpuStorage::F32(values) => values.into_vec(),
        _ => panic!("dtype changed"),
    }
}

/// Forward, input gradient and weight gradient on the GPU against the CPU, over loose views
/// of every operand: 5x5 stride 2 with multiplier 2, 3x3 dilated, 1x7, and images large
/// enough for the weight gradient's 16 and 256 lanes.
#[test]
fn passes_match_cpu_on_loose_views() {
    let Some(device) = gpu() else { return };
    // [n, c, h, w], multiplier, [kh, kw], stride, padding, dilation.
    #[rustfmt::skip]
    let cases = [
        ([2, 3, 11, 10], 2, [5, 5], (2, 2), (2, 2), (1, 1)),
        ([1, 4, 9, 9], 1, [3, 3], (1, 1), (2, 2), (2, 2)),
        ([3, 2, 6, 13], 3, [1, 7], (1, 1), (0, 3), (1, 1)),
        // 840 and 8,640 output pixels: 16 and 256 lanes per weight-gradient element.
        ([2, 3, 20, 21], 1, [3, 3], (1, 1), (1, 1), (1, 1)),
        ([1, 2, 96, 90], 2, [3, 3], (1, 1), (1, 1), (1, 1)),
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
        for ([n, c, h, w], multiplier, [kh, kw], stride, padding, dilation) in cases {
            let params = Conv2dParams {
                stride,
                padding,
                dilation,
                groups: c,
            };
            let o = c * multiplier;
            let out = |size: usize, k: usize, s: usize, p: usize, d: usize| {
                (size + 2 * p - d * (k - 1) - 1) / s + 1
            };
            let (oh, ow) = (
                out(h, kh, stride.0, padding.0, dilation.0),
                out(w, kw, stride.1, padding.1, dilation.1),
            );
            let (input_layout, input_len) = loose_view([n, c, h, w], [0, 2, 1, 3]);
            let (grad_layout, grad_len) = loose_view([n, o, oh, ow], [0, 1, 3, 2]);
            let (mut weight_layout, weight_len) = loose_view([o, 1, kh, kw], [0, 1, 3, 2]);
            // The size-1 dim's stride is never stepped: one far past the buffer is harmless.
            weight_layout.strides[1] = 1 << 40;
            let x = values(input_len, 5, dtype);
            let g = values(grad_len, 6, dtype);
            let k = values(weight_len, 7, dtype);
            let input_shape = [n, c, h, w];
            let weight_shape = [o, 1, kh, kw];
            let forward = cpu_f32(&x)
                .depthwise_conv2d(&input_layout, &cpu_f32(&k), &weight_layout, &params)
                .unwrap();
            let input_gradient = cpu_f32(&g)
                .depthwise_conv2d_backward_input(
                    &grad_layout,
                    &cpu_f32(&k),
                    &weight_layout,
                    &params,
                    &input_shape,
                )
                .unwrap();
            let weight_gradient = cpu_f32(&x)
                .depthwise_conv2d_backward_weight(
                    &input_layout,
                    &cpu_f32(&g),
                    &grad_layout,
                    &params,
                    &weight_shape,
                )
                .unwrap();
            let (x, g, k) = (
                upload(&device, &x, dtype),
                upload(&device, &g, dtype),
                upload(&device, &k, dtype),
            );
            let what = format!("{input_shape:?} x{multiplier} {kh}x{kw} ({dtype:?})");
            let gpu_forward = x
                .depthwise_conv2d(&input_layout, &k, &weight_layout, &params)
                .unwrap();
            check(
                &gpu_forward,
                &f32_values(forward),
                &format!("{what} forward"),
            );
            let gpu_input = g
                .depthwise_conv2d_backward_input(
                    &grad_layout,
                    &k,
                    &weight_layout,
                    &params,
                    &input_shape,
                )
                .unwrap();
            check(
                &gpu_input,
                &f32_values(input_gradient),
                &format!("{what} input gradient"),
            );
            let gpu_weight = x
                .depthwise_conv2d_backward_weight(
                    &input_layout,
                    &g,
                    &grad_layout,
                    &params,
                    &weight_shape,
                )
                .unwrap();
            check(
                &gpu_weight,
                &f32_values(weight_gradient),
                &format!("{what} weight gradient"),
            );
        }
    }
}

/// The weight gradient's lanes: powers of two, one per 64 pixels, at least 1, at most 256.
#[test]
fn weight_gradient_lanes_follow_the_pixels() {
    assert_eq!(weight_gradient_lanes(0), 1);
    assert_eq!(weight_gradient_lanes(64), 1);
    assert_eq!(weight_gradient_lanes(65), 2);
    assert_eq!(weight_gradient_lanes(640), 16);
    assert_eq!(weight_gradient_lanes(840), 16);
    assert_eq!(weight_gradient_lanes(8_640), 256);
    assert_eq!(weight_gradient_lanes(1 << 30), 256);
}
