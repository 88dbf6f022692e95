//! `anygrad doctor`'s conformance checks for the spatial layers of issue 15: transposed and
//! 1-D convolution, nearest and bilinear interpolation, adaptive max pooling and group
//! normalization, and max pooling (its own kernels per direction). Each check runs the op on the CPU and on the GPU from the same CPU-drawn
//! inputs, forward and backward, and hands back both results (the output followed by the
//! input gradient, flattened into one tensor) for `doctor.rs` to compare.

use anygrad::random::Distribution;
use anygrad::{
    Conv1dParams, ConvTranspose2dParams, DType, Device, Error, InterpolateMode, InterpolateSize,
    Result, Tensor,
};

/// One named comparison: the CPU's result and the GPU's.
pub(crate) type Comparison = (String, Result<Tensor>, Result<Tensor>);

/// A uniform `[-2, 2)` CPU tensor of `shape` from `seed`.
fn draw(shape: &[usize], seed: u64) -> Result<Tensor> {
    Tensor::random_seeded(
        shape,
        Distribution::Uniform {
            low: -2.0,
            high: 2.0,
        },
        DType::F32,
        seed,
        0,
        &Device::Cpu,
    )
}

/// Run `op` on copies of `inputs` on `device`, backpropagate the sum of its output times a
/// fixed weighting, and return the output and every input's gradient in one flat tensor.
fn forward_and_grads(
    inputs: &[Tensor],
    device: &Device,
    op: &dyn Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<Tensor> {
    let leaves = inputs
        .iter()
        .map(|t| Ok(Tensor::from_vec(t.to_vec_f32()?, t.shape(), device)?.requires_grad_(true)))
        .collect::<Result<Vec<_>>>()?;
    let output = op(&leaves)?;
    let weighting = draw(output.shape(), 99)?.to_device(device)?;
    output.mul(&weighting)?.sum_all()?.backward()?;
    let mut parts = vec![output.detach().reshape([output.numel()])?];
    for leaf in &leaves {
        if let Some(grad) = leaf.grad() {
            parts.push(grad.reshape([grad.numel()])?);
        }
    }
    let refs: Vec<&Tensor> = parts.iter().collect();
    Tensor::cat(&refs, 0)
}

/// The layer checks, each as a CPU-vs-GPU pair of results.
pub(crate) fn comparisons(gpu: &Device) -> Vec<Comparison> {
    type Op = Box<dyn Fn(&[Tensor]) -> Result<Tensor>>;
    let cases: Vec<(&str, Vec<Vec<usize>>, Op)> = vec![
        (
            "conv_transpose2d stride 2, groups 2 (+ gradients)",
            vec![vec![2, 4, 5, 6], vec![4, 3, 3, 3], vec![6]],
            Box::new(|t: &[Tensor]| {
                t[0].conv_transpose2d(
                    &t[1],
                    Some(&t[2]),
                    ConvTranspose2dParams {
                        stride: (2, 2),
                        padding: (1, 1),
                        output_padding: (1, 1),
                        groups: 2,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "conv1d stride 2, dilation 2 (+ gradients)",
            vec![vec![2, 4, 17], vec![6, 4, 3], vec![6]],
            Box::new(|t: &[Tensor]| {
                t[0].conv1d(
                    &t[1],
                    Some(&t[2]),
                    Conv1dParams {
                        stride: 2,
                        padding: 1,
                        dilation: 2,
                        groups: 1,
                    },
                )
            }),
        ),
        (
            "interpolate nearest x2 (+ gradients)",
            vec![vec![2, 3, 7, 9]],
            Box::new(|t: &[Tensor]| {
                t[0].interpolate(InterpolateSize::Scale(2.0, 2.0), InterpolateMode::Nearest)
            }),
        ),
        (
            "interpolate bilinear 11x13 (+ gradients)",
            vec![vec![2, 3, 7, 9]],
            Box::new(|t: &[Tensor]| {
                t[0].interpolate(
                    InterpolateSize::Size(11, 13),
                    InterpolateMode::Bilinear {
                        align_corners: false,
                    },
                )
            }),
        ),
        (
            "adaptive_max_pool2d 7x9 -> 3x4 (+ gradients)",
            vec![vec![2, 3, 7, 9]],
            Box::new(|t: &[Tensor]| Ok(t[0].adaptive_max_pool2d((3, 4))?.0)),
        ),
        (
            "max_pool2d 3x3 stride 2 pad 1 of a narrowed view (+ gradients)",
            vec![vec![2, 3, 11, 9]],
            Box::new(|t: &[Tensor]| t[0].narrow(3, 1, 7)?.max_pool2d((3, 3), (2, 2), (1, 1))),
        ),
        (
            "max_pool2d 2x2 stride 1 (+ gradients)",
            vec![vec![2, 3, 7, 9]],
            Box::new(|t: &[Tensor]| t[0].max_pool2d((2, 2), (1, 1), (0, 0))),
        ),
        (
            "group_norm 3 groups (+ gradients)",
            vec![vec![2, 6, 5, 4], vec![6], vec![6]],
            Box::new(|t: &[Tensor]| t[0].group_norm(3, Some(&t[1]), Some(&t[2]), 1e-5)),
        ),
    ];
    cases
        .into_iter()
        .enumerate()
        .map(|(i, (name, shapes, op))| {
            let inputs = shapes
                .iter()
                .enumerate()
                .map(|(j, shape)| draw(shape, 1000 + 10 * i as u64 + j as u64))
                .collect::<Result<Vec<_>>>();
            let (on_cpu, on_gpu) = match inputs {
                Ok(inputs) => (
                    forward_and_grads(&inputs, &Device::Cpu, op.as_ref()),
                    forward_and_grads(&inputs, gpu, op.as_ref()),
                ),
                Err(error) => (
                    Err(error),
                    Err(Error::invalid("doctor", "could not draw the CPU inputs")),
                ),
            };
            (name.to_string(), on_cpu, on_gpu)
        })
        .collect()
}
