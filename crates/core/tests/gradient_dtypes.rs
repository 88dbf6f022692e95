//! A gradient has the dtype of its tensor, whatever reaches it (PyTorch's rule): an explicit
//! upstream gradient of another dtype is cast at the root, and a gradient that type promotion
//! made wider (an f16 activation added to an f32 tensor receives the f32 sum's gradient) is
//! cast before the rule of the op that made the activation runs. Checked through rules that
//! combine the gradient with saved tensors (matmul, softmax, convolution, transposed
//! convolution), on the CPU and the GPU, against the same graph with matching dtypes.

use anygrad_core::{Conv2dParams, ConvTranspose2dParams, DType, Device, Tensor};
use anygrad_testing::{assert_close, f16_or_skip, pseudo_random, values};

/// Values that f16 holds exactly (multiples of 1/8 below 4 in magnitude), so a gradient cast
/// to f16 carries the same numbers as its f32 original.
fn exact_in_f16(count: usize, seed: u64) -> Vec<f32> {
    pseudo_random(count, seed)
        .into_iter()
        .map(|v| (v * 16.0).round() / 8.0)
        .collect()
}

fn leaf(values: &[f32], shape: &[usize], dtype: DType, device: &Device) -> Tensor {
    Tensor::from_slice(values, shape, device)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .requires_grad_(true)
}

/// The gradients of `inputs` after `f(inputs).backward_with(upstream)`, as f32 values, after
/// checking that each has its input's dtype.
fn gradients(
    inputs: &[Tensor],
    upstream: &Tensor,
    f: &dyn Fn(&[Tensor]) -> Tensor,
    what: &str,
) -> Vec<Vec<f32>> {
    f(inputs).backward_with(upstream).unwrap();
    inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let grad = input
                .grad()
                .unwrap_or_else(|| panic!("{what}: input {i} got no gradient"));
            assert_eq!(
                grad.dtype(),
                input.dtype(),
                "{what}: input {i}'s gradient has another dtype than the input"
            );
            values(&grad)
        })
        .collect()
}

/// A differentiable function of the leaves.
type Graph = Box<dyn Fn(&[Tensor]) -> Tensor>;

/// The ops under test, each on f32 leaves of the given shapes.
struct Case {
    name: &'static str,
    shapes: Vec<Vec<usize>>,
    output: Vec<usize>,
    f: Graph,
}

fn cases() -> Vec<Case> {
    let conv = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    let transposed = ConvTranspose2dParams {
        stride: (2, 2),
        ..Default::default()
    };
    vec![
        Case {
            name: "matmul",
            shapes: vec![vec![2, 3], vec![3, 4]],
            output: vec![2, 4],
            f: Box::new(|t| t[0].matmul(&t[1]).unwrap()),
        },
        Case {
            name: "softmax",
            shapes: vec![vec![3, 5]],
            output: vec![3, 5],
            f: Box::new(|t| t[0].softmax(-1).unwrap()),
        },
        Case {
            name: "conv2d",
            shapes: vec![vec![1, 2, 4, 4], vec![3, 2, 3, 3]],
            output: vec![1, 3, 4, 4],
            f: Box::new(move |t| t[0].conv2d(&t[1], None, conv).unwrap()),
        },
        Case {
            name: "conv_transpose2d",
            shapes: vec![vec![1, 2, 3, 3], vec![2, 3, 2, 2]],
            output: vec![1, 3, 6, 6],
            f: Box::new(move |t| t[0].conv_transpose2d(&t[1], None, transposed).unwrap()),
        },
    ]
}

fn make_leaves(case: &Case, dtype: DType, device: &Device) -> Vec<Tensor> {
    case.shapes
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            let count = shape.iter().product();
            leaf(&exact_in_f16(count, 11 + i as u64), shape, dtype, device)
        })
        .collect()
}

/// `backward_with` an f16 (and on the CPU an f64) gradient of an f32 graph gives f32
/// gradients equal to those of the f32 upstream gradient with the same values.
fn upstream_gradient_of_another_dtype_is_cast(device: &Device) {
    let mut seed_dtypes = Vec::new();
    if f16_or_skip(device, "upstream_gradient_of_another_dtype_is_cast") {
        seed_dtypes.push(DType::F16);
    }
    if matches!(device, Device::Cpu) {
        seed_dtypes.push(DType::F64);
    }
    for case in cases() {
        let count = case.output.iter().product();
        let upstream = Tensor::from_slice(&exact_in_f16(count, 5), &case.output, device).unwrap();
        let expected = gradients(
            &make_leaves(&case, DType::F32, device),
            &upstream,
            &*case.f,
            case.name,
        );
        for &seed_dtype in &seed_dtypes {
            let what = format!("{} with a {seed_dtype:?} upstream gradient", case.name);
            let got = gradients(
                &make_leaves(&case, DType::F32, device),
                &upstream.to_dtype(seed_dtype).unwrap(),
                &*case.f,
                &what,
            );
            for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
                assert_close(got, expected, 1e-5, 1e-5, &format!("{what}: input {i}"));
            }
        }
    }
}

/// An f16 op whose output is added to an f32 tensor (the sum promotes to f32) receives an f32
/// gradient; its inputs' gradients are f16 and match the all-f32 graph's within f16 rounding.
fn promoted_gradient_is_cast_to_the_activation_dtype(device: &Device) {
    if !f16_or_skip(device, "promoted_gradient_is_cast_to_the_activation_dtype") {
        return;
    }
    for case in cases() {
        let count: usize = case.output.iter().product();
        let addend = Tensor::from_slice(&exact_in_f16(count, 7), &case.output, device).unwrap();
        let upstream = Tensor::from_slice(&exact_in_f16(count, 5), &case.output, device).unwrap();
        let promoted = |t: &[Tensor]| {
            let sum = (case.f)(t).add(&addend).unwrap();
            assert_eq!(sum.dtype(), DType::F32, "{}: the sum promotes", case.name);
            sum
        };
        let expected = gradients(
            &make_leaves(&case, DType::F32, device),
            &upstream,
            &promoted,
            case.name,
        );
        let what = format!("{} in f16 added to f32", case.name);
        let got = gradients(
            &make_leaves(&case, DType::F16, device),
            &upstream,
            &promoted,
            &what,
        );
        for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
            assert_close(got, expected, 2e-2, 2e-2, &format!("{what}: input {i}"));
        }
    }
}

anygrad_testing::device_tests!(
    upstream_gradient_of_another_dtype_is_cast,
    promoted_gradient_is_cast_to_the_activation_dtype,
);
