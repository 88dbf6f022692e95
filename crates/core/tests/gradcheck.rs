//! Finite-difference checks of every derivative rule, in f64 on the CPU: for a scalar function
//! f of the inputs, compare autograd's gradient with (f(x + h e_i) - f(x - h e_i)) / 2h.

use anygrad_core::{Conv2dParams, DType, Device, Result, Tensor};

const STEP: f64 = 1e-6;

/// Check d(sum(f(inputs) * weights))/d(input) for every input.
fn check(
    name: &str,
    inputs: &[Vec<f64>],
    shapes: &[&[usize]],
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
) {
    let device = Device::Cpu;
    let make = |values: &[Vec<f64>], track: bool| -> Vec<Tensor> {
        values
            .iter()
            .zip(shapes)
            .map(|(v, s)| {
                Tensor::from_slice(v, s, &device)
                    .unwrap()
                    .requires_grad_(track)
            })
            .collect()
    };
    // A fixed, non-uniform upstream weighting so every output element matters differently.
    let objective = |tensors: &[Tensor]| -> Tensor {
        let out = f(tensors).unwrap();
        let n = out.numel();
        let weights: Vec<f64> = (0..n).map(|i| 1.0 + 0.37 * (i as f64).sin()).collect();
        let w = Tensor::from_vec(weights, out.shape(), &device).unwrap();
        out.mul(&w).unwrap().sum_all().unwrap()
    };
    let tracked = make(inputs, true);
    objective(&tracked).backward().unwrap();
    for (which, input) in inputs.iter().enumerate() {
        let analytic = tracked[which]
            .grad()
            .map(|g| g.to_vec::<f64>().unwrap())
            .unwrap_or_else(|| vec![0.0; input.len()]);
        for i in 0..input.len() {
            let mut plus = inputs.to_vec();
            plus[which][i] += STEP;
            let mut minus = inputs.to_vec();
            minus[which][i] -= STEP;
            let f_plus = objective(&make(&plus, false)).item_f64().unwrap();
            let f_minus = objective(&make(&minus, false)).item_f64().unwrap();
            let numeric = (f_plus - f_minus) / (2.0 * STEP);
            let error = (analytic[i] - numeric).abs();
            assert!(
                error <= 1e-5 + 1e-4 * numeric.abs(),
                "{name}: input {which} element {i}: autograd {} vs finite difference {numeric}",
                analytic[i]
            );
        }
    }
}

fn sample(n: usize, seed: u64, low: f64, high: f64) -> Vec<f64> {
    // Deterministic, irregular values in [low, high), away from kinks at 0 by construction
    // where the caller picks a positive range.
    (0..n)
        .map(|i| {
            let t = ((i as f64 + 1.0) * 0.618_033_988_75 + seed as f64 * 0.414_213_562).fract();
            low + (high - low) * t
        })
        .collect()
}

#[test]
fn unary_rules() {
    let x = vec![sample(6, 1, -2.0, 2.0)];
    let positive = vec![sample(6, 2, 0.5, 3.0)];
    let s: &[&[usize]] = &[&[2, 3]];
    check("neg", &x, s, |t| t[0].neg());
    check("abs", &x, s, |t| t[0].abs());
    check("exp", &x, s, |t| t[0].exp());
    check("log", &positive, s, |t| t[0].log());
    check("sqrt", &positive, s, |t| t[0].sqrt());
    check("rsqrt", &positive, s, |t| t[0].rsqrt());
    check("recip", &positive, s, |t| t[0].recip());
    check("sin", &x, s, |t| t[0].sin());
    check("cos", &x, s, |t| t[0].cos());
    check("tanh", &x, s, |t| t[0].tanh());
    check("sigmoid", &x, s, |t| t[0].sigmoid());
    check("relu", &x, s, |t| t[0].relu());
    check("gelu", &x, s, |t| t[0].gelu());
    check("erf", &x, s, |t| t[0].erf());
    check("silu", &x, s, |t| t[0].silu());
    check("sign", &x, s, |t| t[0].sign());
}

#[test]
fn binary_rules_with_broadcasting() {
    let a = sample(6, 3, -2.0, 2.0);
    let b = sample(3, 4, 0.5, 2.0);
    let shapes: &[&[usize]] = &[&[2, 3], &[3]];
    let inputs = vec![a.clone(), b.clone()];
    check("add", &inputs, shapes, |t| t[0].add(&t[1]));
    check("sub", &inputs, shapes, |t| t[0].sub(&t[1]));
    check("mul", &inputs, shapes, |t| t[0].mul(&t[1]));
    check("div", &inputs, shapes, |t| t[0].div(&t[1]));
    check("maximum", &inputs, shapes, |t| t[0].maximum(&t[1]));
    check("minimum", &inputs, shapes, |t| t[0].minimum(&t[1]));
    let positive = vec![sample(6, 5, 0.5, 2.0), b];
    check("pow", &positive, shapes, |t| t[0].pow(&t[1]));
}

#[test]
fn scalar_rules() {
    let x = vec![sample(4, 6, 0.5, 2.0)];
    let s: &[&[usize]] = &[&[4]];
    check("add_scalar", &x, s, |t| t[0].add_scalar(3.0));
    check("rsub_scalar", &x, s, |t| t[0].rsub_scalar(3.0));
    check("mul_scalar", &x, s, |t| t[0].mul_scalar(-1.5));
    check("div_scalar", &x, s, |t| t[0].div_scalar(4.0));
    check("rdiv_scalar", &x, s, |t| t[0].rdiv_scalar(2.0));
    check("pow_scalar", &x, s, |t| t[0].pow_scalar(2.5));
    check("clamp", &x, s, |t| t[0].clamp(0.8, 1.6));
}

#[test]
fn where_and_reduction_rules() {
    let x = vec![sample(12, 7, -2.0, 2.0)];
    let s: &[&[usize]] = &[&[3, 4]];
    check("where", &x, s, |t| {
        Tensor::where_(
            &t[0].gt_scalar(0.0)?,
            &t[0].square()?,
            &t[0].mul_scalar(3.0)?,
        )
    });
    check("sum", &x, s, |t| t[0].sum(&[1], false));
    check("sum keepdim", &x, s, |t| t[0].sum(&[0], true));
    check("mean", &x, s, |t| t[0].mean(&[0, 1], false));
    check("max", &x, s, |t| t[0].max(&[1], false));
    check("min", &x, s, |t| t[0].min(&[0], true));
    check("var", &x, s, |t| t[0].var(&[1], false, true));
    check("softmax", &x, s, |t| t[0].softmax(1));
    check("log_softmax", &x, s, |t| t[0].log_softmax(0));
    check("logsumexp", &x, s, |t| t[0].logsumexp(&[1], false));
}

#[test]
fn einsum_rules() {
    // Two operands (one batched product), three operands (products and a sum), a diagonal.
    let (a, b) = (sample(12, 31, -1.0, 1.0), sample(8, 32, -1.0, 1.0));
    check(
        "einsum bij,bjk->bki",
        &[a.clone(), b.clone()],
        &[&[2, 3, 2], &[2, 2, 2]],
        |t| Tensor::einsum("bij,bjk->bki", &[&t[0], &t[1]]),
    );
    let (x, m, z) = (
        sample(3, 33, -1.0, 1.0),
        sample(6, 34, -1.0, 1.0),
        sample(2, 35, -1.0, 1.0),
    );
    check("einsum i,ij,j->", &[x, m, z], &[&[3], &[3, 2], &[2]], |t| {
        Tensor::einsum("i,ij,j->", &[&t[0], &t[1], &t[2]])
    });
    check(
        "einsum ii->i",
        &[sample(9, 36, -1.0, 1.0)],
        &[&[3, 3]],
        |t| Tensor::einsum("ii->i", &[&t[0]]),
    );
}

#[test]
fn matmul_and_view_rules() {
    let inputs = vec![sample(12, 8, -1.0, 1.0), sample(8, 9, -1.0, 1.0)];
    check("matmul", &inputs, &[&[3, 4], &[4, 2]], |t| {
        t[0].matmul(&t[1])
    });
    check("matmul transposed", &inputs, &[&[4, 3], &[2, 4]], |t| {
        t[0].t()?.matmul(&t[1].t()?)
    });
    let batched = vec![sample(24, 10, -1.0, 1.0), sample(8, 11, -1.0, 1.0)];
    check(
        "matmul batch broadcast",
        &batched,
        &[&[2, 3, 4], &[4, 2]],
        |t| t[0].matmul(&t[1]),
    );
    let x = vec![sample(12, 12, -1.0, 1.0)];
    let s: &[&[usize]] = &[&[3, 4]];
    check("reshape", &x, s, |t| t[0].reshape([2, 6]));
    check("permute", &x, s, |t| t[0].permute(&[1, 0])?.mul_scalar(2.0));
    check("narrow", &x, s, |t| t[0].narrow(1, 1, 2));
    check("broadcast", &x, s, |t| {
        t[0].unsqueeze(0)?.broadcast_to(&[2, 3, 4])
    });
    check("cat", &x, s, |t| Tensor::cat(&[&t[0], &t[0].exp()?], 0));
    check("stack", &x, s, |t| {
        Tensor::stack(&[&t[0], &t[0].square()?], 2)
    });
    check("copy", &x, s, |t| t[0].t()?.contiguous());
}

#[test]
fn cast_rule_returns_gradient_in_input_dtype() {
    // A round trip through f32 cannot be checked by finite differences in f64 (rounding), so
    // check the rule directly: d(sum(w * cast(x))) / dx = w, in x's dtype.
    let device = Device::Cpu;
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.5], &[3], &device)
        .unwrap()
        .requires_grad_(true);
    let w = Tensor::from_vec(vec![0.5f64, 2.0, -1.0], &[3], &device).unwrap();
    x.to_dtype(DType::F64)
        .unwrap()
        .mul(&w)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let grad = x.grad().unwrap();
    assert_eq!(grad.dtype(), DType::F32);
    assert_eq!(grad.to_vec::<f32>().unwrap(), vec![0.5, 2.0, -1.0]);
}

#[test]
fn indexing_rules() {
    let device = Device::Cpu;
    let x = vec![sample(12, 13, -1.0, 1.0)];
    let s: &[&[usize]] = &[&[3, 4]];
    let idx = Tensor::from_vec(vec![2i32, 0, 2], &[3], &device).unwrap();
    check("index_select", &x, s, |t| t[0].index_select(0, &idx));
    let gidx = Tensor::from_vec(vec![0i32, 3, 3, 1, 2, 2], &[3, 2], &device).unwrap();
    check("gather", &x, s, |t| t[0].gather(1, &gidx));
    let src = vec![sample(12, 14, -1.0, 1.0), sample(6, 15, -1.0, 1.0)];
    check("scatter_add", &src, &[&[3, 4], &[3, 2]], |t| {
        t[0].scatter_add(1, &gidx, &t[1])
    });
    // A source larger than the index (PyTorch reads only its index-shaped corner): the rest
    // of the source gets a zero gradient.
    let wide_src = vec![sample(12, 14, -1.0, 1.0), sample(12, 16, -1.0, 1.0)];
    check(
        "scatter_add, source wider than the index",
        &wide_src,
        &[&[3, 4], &[4, 3]],
        |t| t[0].scatter_add(1, &gidx, &t[1]),
    );
}

#[test]
fn convolution_and_pooling_rules() {
    let inputs = vec![
        sample(2 * 2 * 5 * 5, 16, -1.0, 1.0),
        sample(4 * 3 * 3, 17, -1.0, 1.0),
        sample(4, 18, -1.0, 1.0),
    ];
    let params = Conv2dParams {
        stride: (2, 1),
        padding: (1, 1),
        dilation: (1, 2),
        groups: 2,
    };
    // Groups == channels with one weight channel per group: the depthwise primitive and its
    // backward primitives (multiplier 2).
    check(
        "conv2d depthwise",
        &inputs,
        &[&[2, 2, 5, 5], &[4, 1, 3, 3], &[4]],
        |t| t[0].conv2d(&t[1], Some(&t[2]), params),
    );
    // Two input channels per group: the unfolded composite.
    let grouped = vec![
        sample(2 * 4 * 5 * 5, 23, -1.0, 1.0),
        sample(4 * 2 * 3 * 3, 24, -1.0, 1.0),
        sample(4, 25, -1.0, 1.0),
    ];
    check(
        "conv2d grouped",
        &grouped,
        &[&[2, 4, 5, 5], &[4, 2, 3, 3], &[4]],
        |t| t[0].conv2d(&t[1], Some(&t[2]), params),
    );
    // One group: the direct primitive and its backward primitives (input and weight).
    for (name, stride, padding, dilation) in [
        ("conv2d direct 3x3 pad 1", (1, 1), (1, 1), (1, 1)),
        ("conv2d direct stride 2", (2, 2), (1, 0), (1, 1)),
        ("conv2d direct non-square", (2, 1), (0, 2), (1, 2)),
    ] {
        let inputs = vec![
            sample(2 * 3 * 6 * 5, 20, -1.0, 1.0),
            sample(4 * 3 * 3 * 2, 21, -1.0, 1.0),
            sample(4, 22, -1.0, 1.0),
        ];
        let params = Conv2dParams {
            stride,
            padding,
            dilation,
            groups: 1,
        };
        check(name, &inputs, &[&[2, 3, 6, 5], &[4, 3, 3, 2], &[4]], |t| {
            t[0].conv2d(&t[1], Some(&t[2]), params)
        });
    }
    let x = vec![sample(2 * 5 * 5, 19, -1.0, 1.0)];
    check("max_pool2d", &x, &[&[1, 2, 5, 5]], |t| {
        t[0].max_pool2d((3, 3), (2, 2), (1, 1))
    });
    check("avg_pool2d", &x, &[&[1, 2, 5, 5]], |t| {
        t[0].avg_pool2d((2, 2), (2, 2), (1, 1))
    });
}
