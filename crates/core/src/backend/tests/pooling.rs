//! The max pooling primitives (`max_pool2d`, `max_pool2d_backward`) below the tensor layer:
//! the CPU against a naive reference written here (every window scanned in row-major order),
//! the GPU against the CPU, on windows the tensor layer never builds (dilation, padding wider
//! than half the kernel), strided views, NaN and infinities, f16, and the refusals (integer
//! dtypes, mismatched dtypes and shapes).

use super::support::{assert_close, cpu_storage, flat, gpu, to_gpu, tolerance, values};
use crate::geometry::Window;
use crate::storage::Storage;
use crate::{DType, Device, Layout, MemoryFormat};

/// The reference forward and gradient of `[n, c, h, w]` data (contiguous) for `window`:
/// padding never wins, a NaN wins, and each output's gradient goes to the first tap equal to
/// the output (NaN matching NaN).
fn reference(
    input: &[f64],
    shape: [usize; 4],
    window: &Window,
    grad: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let [n, c, h, w] = shape;
    let (oh, ow) = window.output_size("reference", h, w).unwrap();
    let mut output = vec![f64::NEG_INFINITY; n * c * oh * ow];
    let mut grad_input = vec![0.0; n * c * h * w];
    for plane in 0..n * c {
        for oi in 0..oh {
            for oj in 0..ow {
                let taps: Vec<usize> = (0..window.kernel.0)
                    .flat_map(|ki| (0..window.kernel.1).map(move |kj| (ki, kj)))
                    .filter_map(|(ki, kj)| {
                        let row = window.input_position(0, oi, ki, h)?;
                        let column = window.input_position(1, oj, kj, w)?;
                        Some(plane * h * w + row * w + column)
                    })
                    .collect();
                let out = plane * oh * ow + oi * ow + oj;
                let maximum = taps
                    .iter()
                    .map(|&t| input[t])
                    .fold(f64::NEG_INFINITY, |best, v| {
                        if v.is_nan() || v > best {
                            v
                        } else {
                            best
                        }
                    });
                output[out] = maximum;
                let first = taps
                    .iter()
                    .find(|&&t| input[t] == maximum || (input[t].is_nan() && maximum.is_nan()));
                if let Some(&t) = first {
                    grad_input[t] += grad[out];
                }
            }
        }
    }
    (output, grad_input)
}

fn window(kernel: usize, stride: usize, padding: usize, dilation: usize) -> Window {
    Window {
        kernel: (kernel, kernel),
        stride: (stride, stride),
        padding: (padding, padding),
        dilation: (dilation, dilation),
    }
}

/// Input values on a coarse grid (many ties), with NaN and infinities where `special`.
fn input_values(count: usize, seed: u64, special: bool) -> Vec<f64> {
    let mut data: Vec<f64> = values(count, seed, 3.0)
        .into_iter()
        .map(|v| (v * 2.0).round() / 2.0)
        .collect();
    if special && count > 20 {
        data[3] = f64::NAN;
        data[11] = f64::INFINITY;
        data[17] = f64::NEG_INFINITY;
    }
    data
}

/// Forward and gradient on `device` for one case, against the reference (CPU) or the CPU
/// (GPU). The input is read through `layout` (a view of `storage_len` elements).
fn check_case(device: &Device, dtype: DType, shape: [usize; 4], window: &Window, special: bool) {
    let [n, c, h, w] = shape;
    let (oh, ow) = window.output_size("test", h, w).unwrap();
    let numel = n * c * h * w;
    // The input as a permuted view: stored [n, h, w, c], read as [n, c, h, w].
    let stored = input_values(numel, 11 + numel as u64, special);
    let mut logical = vec![0.0; numel];
    for image in 0..n {
        for channel in 0..c {
            for row in 0..h {
                for column in 0..w {
                    logical[((image * c + channel) * h + row) * w + column] =
                        stored[((image * h + row) * w + column) * c + channel];
                }
            }
        }
    }
    let layout = Layout::contiguous(&[n, h, w, c]).permute(&[0, 3, 1, 2]);
    let grad_values = values(n * c * oh * ow, 5, 1.0);
    // The output gradient as a transposed view of a stored [n, c, ow, oh].
    let grad_layout = Layout::contiguous(&[n, c, ow, oh]).permute(&[0, 1, 3, 2]);
    let mut grad_stored = vec![0.0; grad_values.len()];
    for plane in 0..n * c {
        for oi in 0..oh {
            for oj in 0..ow {
                grad_stored[plane * oh * ow + oj * oh + oi] =
                    grad_values[plane * oh * ow + oi * ow + oj];
            }
        }
    }
    let rounded = |data: &[f64]| flat(&cpu_storage(data, dtype));
    let (expected_output, expected_grad) =
        reference(&rounded(&logical), shape, window, &rounded(&grad_values));
    let cpu_input = cpu_storage(&stored, dtype);
    let cpu_grad = cpu_storage(&grad_stored, dtype);
    let cpu_output = cpu_input
        .max_pool2d(&layout, window, MemoryFormat::Contiguous)
        .unwrap();
    let output_layout = Layout::contiguous(&[n, c, oh, ow]);
    let cpu_grad_input = cpu_input
        .max_pool2d_backward(
            &layout,
            &cpu_output,
            &output_layout,
            &cpu_grad,
            &grad_layout,
            window,
        )
        .unwrap();
    let what = format!("{dtype} {shape:?} {window:?}");
    let expected_output = cpu_storage(&expected_output, dtype);
    let expected_grad = cpu_storage(&expected_grad, dtype);
    // The input gradient is dense in the input's format (channels-last here, but for one
    // channel): read back row-major.
    let grad_view = MemoryFormat::of(&layout).layout(&[n, c, h, w]);
    let row_major = |grad: Storage| grad.copy_strided(&grad_view).unwrap();
    let (rtol, atol) = tolerance(dtype);
    assert_close(
        &format!("{what} forward"),
        &expected_output,
        &cpu_output,
        0.0,
        0.0,
    );
    let cpu_grad_input = row_major(cpu_grad_input);
    assert_close(
        &format!("{what} gradient"),
        &expected_grad,
        &cpu_grad_input,
        rtol,
        atol,
    );
    // The output asked for channels-last (the input is channels-last): the same values
    // (`pool/channels_last.rs` where the channels fill whole vectors, else a copy).
    let channels_last = MemoryFormat::ChannelsLast.layout(&[n, c, oh, ow]);
    let cpu_pooled = cpu_input
        .max_pool2d(&layout, window, MemoryFormat::ChannelsLast)
        .unwrap()
        .copy_strided(&channels_last)
        .unwrap();
    assert_close(
        &format!("{what} channels-last forward"),
        &cpu_output,
        &cpu_pooled,
        0.0,
        0.0,
    );
    if *device == Device::Cpu {
        return;
    }
    let input = to_gpu(&cpu_input, device);
    let grad = to_gpu(&cpu_grad, device);
    let pooled_last = input
        .max_pool2d(&layout, window, MemoryFormat::ChannelsLast)
        .unwrap();
    let pooled = pooled_last.copy_strided(&channels_last).unwrap();
    assert_close(
        &format!("{what} gpu channels-last forward"),
        &cpu_output,
        &pooled,
        0.0,
        0.0,
    );
    let output = input
        .max_pool2d(&layout, window, MemoryFormat::Contiguous)
        .unwrap();
    let grad_input = input
        .max_pool2d_backward(
            &layout,
            &output,
            &output_layout,
            &grad,
            &grad_layout,
            window,
        )
        .unwrap();
    assert_close(
        &format!("{what} gpu forward"),
        &cpu_output,
        &output,
        0.0,
        0.0,
    );
    assert_close(
        &format!("{what} gpu gradient"),
        &cpu_grad_input,
        &row_major(grad_input),
        rtol,
        atol,
    );
    // From the channels-last pooled output: both operands channels-last, so whole vectors of
    // channels take the channels-last kernels (`pool/channels_last_backward.rs`).
    let grad_input = input
        .max_pool2d_backward(
            &layout,
            &pooled_last,
            &channels_last,
            &grad,
            &grad_layout,
            window,
        )
        .unwrap();
    assert_close(
        &format!("{what} gpu gradient from the channels-last output"),
        &cpu_grad_input,
        &row_major(grad_input),
        rtol,
        atol,
    );
}

fn pooling_matches_reference(device: &Device) {
    let cases = [
        ([2, 3, 7, 9], window(3, 2, 1, 1), true),
        ([1, 2, 6, 5], window(2, 2, 0, 1), false),
        ([1, 3, 5, 5], window(3, 1, 1, 1), true),
        ([2, 1, 9, 8], window(3, 2, 2, 2), true),
        ([1, 2, 4, 4], window(1, 3, 0, 1), false),
        ([1, 1, 3, 3], window(4, 1, 2, 1), false),
        // Windows entirely in the padding: -inf, and no gradient.
        ([1, 2, 3, 3], window(1, 1, 1, 1), false),
        // Whole vectors of channels (`pool/channels_last.rs`), ResNet's window.
        ([2, 16, 9, 10], window(3, 2, 1, 1), true),
        // A window past 3 x 3 (the channels-last kernel's tap loop), dilated.
        ([1, 8, 11, 10], window(4, 1, 2, 2), true),
        // Several tiles of the tiled kernels along both axes (`pool/tiled.rs`: 8 x 32
        // outputs, 16 x 64 gradient pixels), partial last tiles.
        ([1, 2, 37, 150], window(3, 2, 1, 1), true),
        ([2, 1, 20, 70], window(2, 2, 0, 1), false),
        ([1, 1, 19, 67], window(3, 1, 1, 2), true),
        // Windows that halve the image with different taps along each axis, odd sizes.
        (
            [1, 2, 7, 9],
            Window {
                kernel: (3, 2),
                stride: (2, 2),
                padding: (1, 0),
                dilation: (1, 1),
            },
            true,
        ),
        (
            [2, 3, 6, 11],
            Window {
                kernel: (1, 3),
                stride: (2, 2),
                padding: (0, 1),
                dilation: (1, 1),
            },
            true,
        ),
        // More planes than workgroups along y (4,800 against 4,096): a workgroup's tile of
        // several planes in turn.
        ([8, 600, 9, 9], window(3, 2, 1, 1), false),
    ];
    let mut dtypes = vec![DType::F32];
    if super::support::f16_or_skip(device, "the f16 cases") {
        dtypes.push(DType::F16);
    }
    if *device == Device::Cpu {
        dtypes.push(DType::F64);
    }
    for dtype in dtypes {
        for (shape, window, special) in &cases {
            check_case(device, dtype, *shape, window, *special);
        }
    }
}

fn pooling_refusals(device: &Device) {
    let window = window(2, 2, 0, 1);
    let layout = Layout::contiguous(&[1, 1, 4, 4]);
    let output_layout = Layout::contiguous(&[1, 1, 2, 2]);
    let ints = Storage::full(device, 16, DType::I32, 1.0).unwrap();
    let error = ints
        .max_pool2d(&layout, &window, MemoryFormat::Contiguous)
        .unwrap_err()
        .to_string();
    assert!(error.contains("max_pool2d"), "{error}");
    let floats = Storage::full(device, 16, DType::F32, 1.0).unwrap();
    let small = Storage::full(device, 4, DType::F32, 1.0).unwrap();
    let small_ints = Storage::full(device, 4, DType::I32, 1.0).unwrap();
    // Integer gradients, mixed dtypes, a wrong output shape, a rank-3 input, a window that
    // does not fit.
    let integer_grad = ints.max_pool2d_backward(
        &layout,
        &small_ints,
        &output_layout,
        &small_ints,
        &output_layout,
        &window,
    );
    let error = integer_grad.unwrap_err().to_string();
    assert!(error.contains("max_pool2d_backward"), "{error}");
    assert!(floats
        .max_pool2d_backward(
            &layout,
            &small,
            &output_layout,
            &small_ints,
            &output_layout,
            &window
        )
        .is_err());
    let wrong = Layout::contiguous(&[1, 1, 4, 1]);
    let error = floats
        .max_pool2d_backward(&layout, &small, &wrong, &small, &output_layout, &window)
        .unwrap_err()
        .to_string();
    assert!(error.contains("max_pool2d_backward"), "{error}");
    assert!(floats
        .max_pool2d(
            &Layout::contiguous(&[1, 4, 4]),
            &window,
            MemoryFormat::Contiguous
        )
        .is_err());
    let too_big = Window {
        kernel: (5, 5),
        ..window
    };
    assert!(floats
        .max_pool2d(&layout, &too_big, MemoryFormat::Contiguous)
        .is_err());
}

#[test]
fn cpu_pooling_matches_reference() {
    pooling_matches_reference(&Device::Cpu);
}

#[test]
fn gpu_pooling_matches_cpu() {
    if let Some(device) = gpu() {
        pooling_matches_reference(&device);
    }
}

#[test]
fn cpu_pooling_refusals() {
    pooling_refusals(&Device::Cpu);
}

#[test]
fn gpu_pooling_refusals() {
    if let Some(device) = gpu() {
        pooling_refusals(&device);
    }
}
