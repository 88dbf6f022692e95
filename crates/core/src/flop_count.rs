//! Floating-point operation counts of the compute-bound primitives, for the profiler's achieved
//! TFLOPS per shape. A leaf module: it knows only op names and shapes, as the profiler records
//! them (inputs in the order the op takes them, plus the output's element count).
//!
//! One multiply-add counts as two operations, as vendors and PyTorch count them.

/// Operations done by one call of `name` with these input shapes and `output_elements`
/// outputs, or `None` for ops that are not compute-bound (elementwise, copies, reductions).
pub(crate) fn op_flops(
    name: &str,
    input_shapes: &[Vec<usize>],
    output_elements: u64,
) -> Option<f64> {
    match (name, input_shapes) {
        // [batch, m, k] x [batch, k, n] -> [batch, m, n]: each output is a k-long dot product.
        ("matmul", [lhs, _rhs]) => {
            let k = *lhs.last()? as f64;
            Some(2.0 * output_elements as f64 * k)
        }
        // input [n, c, h, w], weight [o, c, kh, kw] -> [n, o, oh, ow]: each output sums c*kh*kw
        // products.
        ("conv2d", [_input, weight]) => Some(2.0 * output_elements as f64 * reduction(weight)?),
        // The fused convolution (inputs, weight, scale, shift and maybe a residual): the
        // convolution's products (the epilogue's few operations per output are left out).
        ("conv2d_epilogue", [_input, weight, ..]) => {
            Some(2.0 * output_elements as f64 * reduction(weight)?)
        }
        // output gradient [n, o, oh, ow] and weight [o, c, kh, kw] -> [n, c, h, w]: the same
        // products as the forward pass, counted from the output gradient.
        ("conv2d_backward_input", [grad, weight]) => {
            Some(2.0 * elements(grad) * reduction(weight)?)
        }
        // input [n, c, h, w] and output gradient [n, o, oh, ow] -> weight [o, c, kh, kw]: each
        // weight sums n*oh*ow products.
        ("conv2d_backward_weight", [_input, grad]) => {
            let channels_out = *grad.get(1)? as f64;
            if channels_out == 0.0 {
                return Some(0.0);
            }
            let per_channel = elements(grad) / channels_out;
            Some(2.0 * output_elements as f64 * per_channel)
        }
        _ => None,
    }
}

fn elements(shape: &[usize]) -> f64 {
    shape.iter().product::<usize>() as f64
}

/// `c * kh * kw` of a weight `[o, c, kh, kw]`.
fn reduction(weight: &[usize]) -> Option<f64> {
    match weight {
        [_, channels, kernel_h, kernel_w] => Some((channels * kernel_h * kernel_w) as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::op_flops;

    #[test]
    fn counts_match_the_textbook_formulas() {
        // 64x32 @ 32x16, batch 2: 2*2*64*16*32.
        let matmul = op_flops("matmul", &[vec![2, 64, 32], vec![2, 32, 16]], 2 * 64 * 16);
        assert_eq!(matmul, Some(2.0 * 2.0 * 64.0 * 16.0 * 32.0));
        // ResNet's first conv at batch 1: 64 x 112 x 112 outputs, 3*7*7 taps each.
        let output = 64 * 112 * 112;
        let forward = op_flops("conv2d", &[vec![1, 3, 224, 224], vec![64, 3, 7, 7]], output);
        assert_eq!(forward, Some(2.0 * output as f64 * 147.0));
        let grad = vec![1, 64, 112, 112];
        let input_grad = op_flops(
            "conv2d_backward_input",
            &[grad.clone(), vec![64, 3, 7, 7]],
            3 * 224 * 224,
        );
        assert_eq!(input_grad, forward);
        let weight_grad = op_flops(
            "conv2d_backward_weight",
            &[vec![1, 3, 224, 224], grad],
            64 * 3 * 7 * 7,
        );
        assert_eq!(weight_grad, forward);
        assert_eq!(op_flops("add", &[vec![4], vec![4]], 4), None);
    }
}
