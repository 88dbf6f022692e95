//! Tests of the vectorized max pooling forward (`pool/vectorized.rs`) and gradient
//! (`pool/halving_backward.rs`): which calls `plan` accepts, and, on the GPU, that the calls
//! meant to take the kernels do (their thread-local run counts) and that every call — taken
//! or left to the tiled and generic kernels — equals the CPU reference (`cpu/pool.rs`)
//! exactly, NaN, infinities and ties included, in F32 and F16.

use super::super::halving_backward::RUNS as GRADIENT_RUNS;
use super::{plan, HalvingWindow, RUNS};
use crate::backend::tests::support::{assert_close, cpu_storage, flat, gpu_device, to_gpu, values};
use crate::dtype::DType;
use crate::geometry::{PoolShape, Window};
use crate::layout::{Layout, MemoryFormat};
use crate::Device;

/// `kernel_h x kernel_w` taps, stride 2, padding `(k - 1) / 2`: a halving window.
fn halving(kernel_h: usize, kernel_w: usize) -> Window {
    Window {
        kernel: (kernel_h, kernel_w),
        stride: (2, 2),
        padding: ((kernel_h - 1) / 2, (kernel_w - 1) / 2),
        dilation: (1, 1),
    }
}

/// The view of a dense `[n, c, h, w]` input.
fn dense(shape: [usize; 4]) -> Layout {
    Layout::contiguous(&shape)
}

/// Whether `plan` accepts pooling `layout` of `dtype` with `window`.
fn accepted(dtype: DType, layout: &Layout, window: &Window) -> bool {
    let shape = PoolShape::new("test", layout, window).unwrap();
    plan(dtype, layout, &shape).is_some()
}

#[test]
fn plan_takes_halving_windows_over_aligned_contiguous_rows() {
    let resnet = halving(3, 3);
    assert_eq!(HalvingWindow::of(&resnet), Some(HalvingWindow::RESNET));
    assert_eq!(HalvingWindow::all().len(), 9);
    let image = dense([2, 3, 8, 16]);
    for dtype in [DType::F32, DType::F16] {
        assert!(accepted(dtype, &image, &resnet));
        for (kernel_h, kernel_w) in [(1, 1), (2, 2), (3, 2), (1, 3)] {
            assert!(accepted(dtype, &image, &halving(kernel_h, kernel_w)));
        }
        // Not halving: no padding, stride 1, dilation 2, a 4-tap window.
        let unpadded = Window {
            padding: (0, 0),
            ..resnet
        };
        let unit_stride = Window {
            stride: (1, 1),
            ..resnet
        };
        let dilated = Window {
            dilation: (2, 2),
            ..resnet
        };
        let wide = Window {
            kernel: (4, 4),
            padding: (1, 1),
            ..resnet
        };
        for window in [unpadded, unit_stride, dilated, wide] {
            assert!(!accepted(dtype, &image, &window), "{window:?}");
        }
        // Odd or unaligned widths, transposed and sliced views, a misaligned offset.
        assert!(!accepted(dtype, &dense([1, 2, 8, 9]), &resnet));
        assert!(!accepted(dtype, &dense([1, 2, 8, 10]), &resnet));
        let transposed = dense([1, 2, 16, 16]).permute(&[0, 1, 3, 2]);
        assert!(!accepted(dtype, &transposed, &resnet));
        let sliced = dense([1, 2, 8, 32]).narrow(3, 0, 16);
        assert!(!accepted(dtype, &sliced, &resnet));
        let shifted = Layout {
            offset: 3,
            ..dense([1, 2, 6, 16])
        };
        assert!(!accepted(dtype, &shifted, &resnet));
        // A batch narrowed at an aligned offset is contiguous and aligned.
        assert!(accepted(
            dtype,
            &dense([3, 2, 6, 16]).narrow(0, 1, 2),
            &resnet
        ));
    }
    // Rows of 12 and an offset of 4 are whole f32 vectors, not whole f16 ones.
    let shifted = Layout {
        offset: 4,
        ..dense([1, 2, 6, 16])
    };
    for layout in [dense([1, 3, 9, 12]), shifted] {
        assert!(accepted(DType::F32, &layout, &resnet));
        assert!(!accepted(DType::F16, &layout, &resnet));
    }
    assert!(!accepted(DType::F64, &image, &resnet));
}

/// Input values on a coarse grid (many ties), with NaN, +inf and -inf scattered and the first
/// 40 elements -inf (windows of nothing but -inf and padding).
fn input_values(count: usize) -> Vec<f64> {
    values(count, 3 + count as u64, 3.0)
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            if index < 40 || index % 19 == 4 {
                f64::NEG_INFINITY
            } else if index % 61 == 7 {
                f64::NAN
            } else if index % 47 == 11 {
                f64::INFINITY
            } else {
                (value * 2.0).round() / 2.0
            }
        })
        .collect()
}

/// One case: the view (of a buffer `length` long), its window, and whether the vectorized
/// kernel takes it in F32 and in F16.
struct Case {
    layout: Layout,
    length: usize,
    window: Window,
    vectorized: [bool; 2],
}

fn case(layout: Layout, window: Window, vectorized: [bool; 2]) -> Case {
    let reach: usize = layout
        .shape
        .iter()
        .zip(&layout.strides)
        .map(|(size, stride)| (size - 1) * stride)
        .sum();
    Case {
        length: layout.offset + reach + 1,
        layout,
        window,
        vectorized,
    }
}

fn cases() -> Vec<Case> {
    let resnet = halving(3, 3);
    let both = [true, true];
    let neither = [false, false];
    vec![
        case(dense([2, 3, 8, 16]), resnet, both),
        // An odd height; rows of 24: whole f16 vectors, but not a multiple of 16.
        case(dense([1, 5, 13, 24]), resnet, both),
        // ResNet's pooled size, one vector per row (8 columns).
        case(dense([3, 2, 112, 112]), resnet, both),
        case(dense([2, 2, 7, 8]), resnet, both),
        // The other halving windows, odd heights.
        case(dense([2, 2, 9, 16]), halving(2, 2), both),
        case(dense([1, 3, 7, 16]), halving(1, 1), both),
        case(dense([2, 1, 11, 24]), halving(3, 2), both),
        case(dense([1, 2, 6, 8]), halving(1, 3), both),
        // A batch narrowed at an aligned offset.
        case(dense([3, 2, 6, 16]).narrow(0, 1, 2), resnet, both),
        // Whole f32 vectors only: rows of 12, an offset of 4.
        case(dense([1, 3, 9, 12]), resnet, [true, false]),
        case(
            Layout {
                offset: 4,
                ..dense([1, 2, 6, 16])
            },
            resnet,
            [true, false],
        ),
        // Left to the other kernels: rows of 10, an odd width, a misaligned offset, a
        // transposed and a sliced view, a window without padding.
        case(dense([1, 2, 6, 10]), resnet, neither),
        case(dense([1, 2, 7, 9]), resnet, neither),
        case(
            Layout {
                offset: 3,
                ..dense([1, 2, 6, 16])
            },
            resnet,
            neither,
        ),
        case(
            dense([1, 2, 16, 16]).permute(&[0, 1, 3, 2]),
            resnet,
            neither,
        ),
        case(dense([1, 2, 8, 32]).narrow(3, 0, 16), resnet, neither),
        case(
            dense([1, 2, 9, 16]),
            Window {
                padding: (0, 0),
                ..resnet
            },
            neither,
        ),
    ]
}

#[test]
fn gpu_forward_matches_cpu_and_takes_the_vectorized_kernel() {
    let Some(gpu) = gpu_device() else {
        return;
    };
    let mut dtypes = vec![(DType::F32, 0)];
    if crate::backend::tests::support::has_or_skip(
        &gpu,
        crate::backend::tests::support::Requirement::F16,
        "the f16 cases",
    ) {
        dtypes.push((DType::F16, 1));
    }
    let device = Device::Gpu(gpu);
    for (dtype, column) in dtypes {
        for case in cases() {
            let what = format!("{dtype} {:?} {:?}", case.layout, case.window);
            let cpu_input = cpu_storage(&input_values(case.length), dtype);
            let expected = cpu_input
                .max_pool2d(&case.layout, &case.window, MemoryFormat::Contiguous)
                .unwrap();
            let input = to_gpu(&cpu_input, &device);
            let before = RUNS.with(std::cell::Cell::get);
            let output = input
                .max_pool2d(&case.layout, &case.window, MemoryFormat::Contiguous)
                .unwrap();
            let runs = RUNS.with(std::cell::Cell::get) - before;
            assert_eq!(
                runs,
                u64::from(case.vectorized[column]),
                "{what}: vectorized kernel runs"
            );
            assert_close(&what, &expected, &output, 0.0, 0.0);
        }
    }
}

/// The contiguous view of `shape` starting `offset` elements into its buffer.
fn shifted(shape: [usize; 4], offset: usize) -> Layout {
    Layout {
        offset,
        ..dense(shape)
    }
}

#[test]
fn gpu_gradient_matches_cpu_and_takes_the_vectorized_kernel() {
    let Some(gpu) = gpu_device() else {
        return;
    };
    let mut dtypes = vec![(DType::F32, 0)];
    if crate::backend::tests::support::has_or_skip(
        &gpu,
        crate::backend::tests::support::Requirement::F16,
        "the f16 cases",
    ) {
        dtypes.push((DType::F16, 1));
    }
    let device = Device::Gpu(gpu);
    for (dtype, column) in dtypes {
        for (index, case) in cases().into_iter().enumerate() {
            let shape = PoolShape::new("test", &case.layout, &case.window).unwrap();
            let pooled_shape = shape.output_shape();
            let windows: usize = pooled_shape.iter().product();
            // The pooled output and its gradient as views 5 elements into their buffers
            // (offsets the kernel must honour); every third case a channels-last gradient
            // instead, which the vectorized gradient leaves to the other kernels.
            let output_layout = shifted(pooled_shape, 5);
            let strided_grad = case.layout.shape[1] > 1 && index % 3 == 1;
            let grad_layout = if strided_grad {
                let [n, c, oh, ow] = pooled_shape;
                Layout::contiguous(&[n, oh, ow, c]).permute(&[0, 3, 1, 2])
            } else {
                shifted(pooled_shape, 5)
            };
            let what = format!(
                "{dtype} {:?} {:?} grad {:?}",
                case.layout, case.window, grad_layout
            );
            let cpu_input = cpu_storage(&input_values(case.length), dtype);
            let cpu_pooled = cpu_input
                .max_pool2d(&case.layout, &case.window, MemoryFormat::Contiguous)
                .unwrap();
            // The pooled values behind 5 padding elements.
            let mut pooled_values = vec![0.0; 5];
            pooled_values.extend(flat(&cpu_pooled));
            let cpu_output = cpu_storage(&pooled_values, dtype);
            // Gradients on a coarse grid, so that sums of up to four of them are exact in f16.
            let grad_values: Vec<f64> = values(windows + 5, 29, 4.0)
                .into_iter()
                .map(|value| (value * 4.0).round() / 4.0)
                .collect();
            let cpu_grad = cpu_storage(&grad_values, dtype);
            let expected = cpu_input
                .max_pool2d_backward(
                    &case.layout,
                    &cpu_output,
                    &output_layout,
                    &cpu_grad,
                    &grad_layout,
                    &case.window,
                )
                .unwrap();
            let (input, output, grad) = (
                to_gpu(&cpu_input, &device),
                to_gpu(&cpu_output, &device),
                to_gpu(&cpu_grad, &device),
            );
            let before = GRADIENT_RUNS.with(std::cell::Cell::get);
            let gradient = input
                .max_pool2d_backward(
                    &case.layout,
                    &output,
                    &output_layout,
                    &grad,
                    &grad_layout,
                    &case.window,
                )
                .unwrap();
            let runs = GRADIENT_RUNS.with(std::cell::Cell::get) - before;
            let vectorized = case.vectorized[column] && !strided_grad;
            assert_eq!(
                runs,
                u64::from(vectorized),
                "{what}: vectorized gradient runs"
            );
            assert_close(&what, &expected, &gradient, 0.0, 0.0);
        }
    }
}
