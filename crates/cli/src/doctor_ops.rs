//! `anygrad doctor`'s conformance checks of the composite and data-dependent ops (issue 15):
//! the shape ops (flip, roll, repeat, pad, tril/triu, masked_fill, eye, linspace), the
//! composite reductions (max_dim/min_dim, any/all, std, norm), the scans (cumsum, cumprod,
//! prod), sorting (sort, argsort, topk; a row past one workgroup's sort for the GPU's
//! multi-pass kernel), selection (nonzero, masked_select) and the device-side draws (randperm,
//! bernoulli), `index_add` (and the `index_select` gradient it computes), the fused attention
//! kernel (forward, causal, and the gradients through it), the class pick of cross-entropy,
//! the fused SGD and Adam steps, the products and row lookups of every block-quantized format,
//! plus the gradients of sort, prod (with zeros) and cumsum. Each is run on the CPU
//! and on the GPU from the same CPU input; `doctor.rs` compares the pairs. The bfloat16
//! checks (`bfloat16_comparisons`) compare each device's casts with the bits PyTorch gives,
//! and a matmul under bfloat16 autocast between the devices.

use anygrad::{DType, Device, QuantFormat, QuantizedMatrix, Result, Tensor};

/// One op run on both backends, for `doctor.rs`'s `compare`.
pub(crate) struct OpComparison {
    /// The check's name in the report.
    pub(crate) name: String,
    /// The CPU's result (the reference).
    pub(crate) cpu: Result<Tensor>,
    /// The GPU's result.
    pub(crate) gpu: Result<Tensor>,
    /// Largest allowed error relative to the CPU values' scale.
    pub(crate) tolerance: f64,
}

/// An op of one input tensor on a device.
type Op = Box<dyn Fn(&Tensor, &Device) -> Result<Tensor>>;

/// The gradient of `(op(input) * weight).sum()` with respect to `input` (`weight`: a fixed
/// ramp of the output's shape).
fn gradient(input: &Tensor, op: &dyn Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let leaf = input.detach().requires_grad_(true);
    let output = op(&leaf)?;
    let count = output.numel();
    let weight = Tensor::arange(1.0, count as f64 + 1.0, 1.0, DType::F32, input.device())?
        .div_scalar(count.max(1) as f64)?
        .reshape(output.shape().to_vec())?
        .to_dtype(output.dtype())?;
    output.mul(&weight)?.sum_all()?.backward()?;
    leaf.grad()
        .ok_or_else(|| anygrad::Error::invalid("doctor", "no gradient was recorded"))
}

/// Three fused optimizer steps on a parameter made from `x` with gradients made from `x`: SGD
/// with momentum (`adam` false) or AdamW with AMSGrad; the parameter and its state side by side.
fn optimizer_steps(x: &Tensor, adam: bool) -> Result<Tensor> {
    let parameter = x.mul_scalar(0.5)?;
    let mut state = Vec::new();
    for _ in 0..3 {
        state.push(parameter.zeros_like()?);
    }
    for step in 1..=3u64 {
        let grad = x.sin()?.mul_scalar(step as f64)?.add_scalar(0.1)?;
        if adam {
            let rule = anygrad::AdamStep {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.99,
                eps: 1e-8,
                weight_decay: 0.01,
                decoupled: true,
                amsgrad: true,
                step,
            };
            parameter.adam_step_(&grad, &state[0], &state[1], Some(&state[2]), &rule)?;
        } else {
            let rule = anygrad::SgdStep {
                lr: 0.05,
                momentum: 0.9,
                dampening: 0.0,
                weight_decay: 0.01,
                nesterov: true,
                first: step == 1,
            };
            parameter.sgd_step_(&grad, Some(&state[0]), &rule)?;
        }
    }
    let mut parts = vec![&parameter];
    parts.extend(state.iter().take(if adam { 3 } else { 1 }));
    Tensor::cat(&parts, 0)
}

/// Deterministic blocks of `format` for a `[rows, 256]` matrix: codes from a fixed
/// generator, f16 scales in (-0.02, 0.02), or (-0.002, 0.002) for the K formats, whose 6-bit
/// sub-block scales multiply them (values of a few units at most: sums of 256 products that
/// f32 adds in any order to within the check's tolerance).
fn quantized_matrix(format: QuantFormat, rows: usize, device: &Device) -> Result<QuantizedMatrix> {
    let columns = 256;
    let bytes = rows * format.row_bytes(columns, "doctor")?;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut data: Vec<u8> = (0..bytes).map(|_| next() as u8).collect();
    for block in data.chunks_mut(format.block_bytes()) {
        for &field in format.half_scale_offsets() {
            let unit = (next() % 2001) as f32 / 1000.0 - 1.0;
            let size = if format.block_values() == 256 {
                0.002
            } else {
                0.02
            };
            let scale = half::f16::from_f32(size * unit).to_bits().to_le_bytes();
            block[field..field + 2].copy_from_slice(&scale);
        }
    }
    QuantizedMatrix::from_bytes(format, [rows, columns], &data, device)
}

/// Products of one and of 37 rows of `x / 4` (widened to 256 columns) with a `format` matrix
/// (the GPU's vector and tiled kernels), and a lookup of rows by index, side by side.
fn quantized_products(x: &Tensor, format: QuantFormat) -> Result<Tensor> {
    let device = x.device();
    let matrix = quantized_matrix(format, 70, device)?;
    let input = x.repeat(&[1, 5])?.narrow(1, 0, 256)?.mul_scalar(0.25)?;
    let many = input.linear_quantized(&matrix)?;
    let one = input.narrow(0, 3, 1)?.linear_quantized(&matrix)?;
    let ids = Tensor::from_vec(vec![69i32, 0, 33, 33], &[4], device)?;
    let rows = matrix.select_rows(&ids)?;
    Tensor::cat(
        &[
            &many.reshape([-1])?,
            &one.reshape([-1])?,
            &rows.reshape([-1])?,
        ],
        0,
    )
}

/// `scaled_dot_product_attention` of queries, keys and values cut from `x` (`[37, 53]`): three
/// overlapping `[1, 1, 37, 32]` windows, scaled down so the softmax is not one-hot.
fn attention(x: &Tensor, causal: bool) -> Result<Tensor> {
    let window = |start: usize| -> Result<Tensor> {
        x.narrow(1, start, 32)?
            .mul_scalar(0.25)?
            .reshape([1, 1, 37, 32])
    };
    anygrad::scaled_dot_product_attention(
        &window(0)?,
        &window(10)?,
        &window(21)?,
        None,
        0.0,
        causal,
        None,
    )
}

/// Run `work` with the fused attention kernel forced on (where it applies: on GPUs), then
/// restore the policy: the doctor checks the kernel whatever `ANYGRAD_FUSED_ATTENTION` says.
fn with_fused_attention(work: impl Fn() -> Result<Tensor>) -> Result<Tensor> {
    let previous = anygrad::fused_attention_mode();
    anygrad::set_fused_attention_mode(anygrad::FusedAttention::On);
    let result = work();
    anygrad::set_fused_attention_mode(previous);
    result
}

/// f32 values at and around bfloat16 rounding ties, with the bfloat16 PyTorch rounds each to
/// (`c10::BFloat16`: to nearest, ties to even; NaN to the quiet NaN; past the largest finite
/// value to infinity).
const BFLOAT16_ROUNDINGS: [(f32, u16); 10] = [
    (f32::from_bits(0x3F80_8000), 0x3F80), // 1 + 2^-8, a tie: down to the even 1.0
    (f32::from_bits(0x3F81_8000), 0x3F82), // 1 + 3 * 2^-8, a tie: up to the even 0x3F82
    (f32::from_bits(0x3F80_8001), 0x3F81), // just above the tie: up
    (f32::from_bits(0xBF81_8000), 0xBF82), // a negative tie
    (0.1, 0x3DCD),
    (f32::INFINITY, 0x7F80),
    (f32::NEG_INFINITY, 0xFF80),
    (f32::NAN, 0x7FC0),
    (f32::MAX, 0x7F80),                    // overflow: infinity
    (f32::from_bits(0xFF7F_0000), 0xFF7F), // the lowest finite bfloat16
];

/// The bfloat16 checks on `gpu`: the casts of [`BFLOAT16_ROUNDINGS`] (read from an odd
/// element, which the GPU's packed pairs make the hard case) on the CPU and on the GPU, each
/// against PyTorch's bits widened back to f32; and a matmul under bfloat16 autocast (computed
/// in f32, rounded to bfloat16), the GPU against the CPU.
pub(crate) fn bfloat16_comparisons(x: &Tensor, gpu: &Device) -> Vec<OpComparison> {
    let expected = || {
        let values: Vec<f32> = BFLOAT16_ROUNDINGS
            .iter()
            .map(|&(_, bits)| f32::from_bits((bits as u32) << 16))
            .collect();
        Tensor::from_vec(values, &[BFLOAT16_ROUNDINGS.len()], &Device::Cpu)
    };
    let rounded = |device: &Device| -> Result<Tensor> {
        let mut values = vec![0.5f32];
        values.extend(BFLOAT16_ROUNDINGS.iter().map(|&(value, _)| value));
        let count = values.len();
        Tensor::from_vec(values, &[count], device)?
            .narrow(0, 1, count - 1)?
            .to_dtype(DType::BF16)?
            .to_dtype(DType::F32)?
            .to_device(&Device::Cpu)
    };
    let autocast_matmul = |device: &Device| -> Result<Tensor> {
        let x = x.to_device(device)?;
        let weight = x.narrow(0, 0, 29)?.t()?.contiguous()?;
        let _autocast = anygrad::autocast(DType::BF16, device)?;
        let product = x.matmul(&weight)?;
        if product.dtype() != DType::BF16 {
            return Err(anygrad::Error::invalid(
                "doctor",
                format!("autocast bfloat16 matmul gave {}", product.dtype()),
            ));
        }
        product.to_dtype(DType::F32)
    };
    let cpu = Device::Cpu;
    vec![
        OpComparison {
            name: "bf16 cast rounding (ties to even, NaN, inf, overflow) on the CPU".into(),
            cpu: expected(),
            gpu: rounded(&cpu),
            tolerance: 0.0,
        },
        OpComparison {
            name: "bf16 cast rounding (ties to even, NaN, inf, overflow, odd offset) on the GPU"
                .into(),
            cpu: expected(),
            gpu: rounded(gpu),
            tolerance: 0.0,
        },
        OpComparison {
            name: "matmul under bf16 autocast".into(),
            cpu: autocast_matmul(&cpu),
            gpu: autocast_matmul(gpu),
            // One bfloat16 unit (2^-8 relative) of sums in another order.
            tolerance: 1e-2,
        },
    ]
}

/// Every comparison, from `x` (a `[37, 53]` F32 CPU tensor of values in [-3, 3)) and the GPU.
pub(crate) fn comparisons(x: &Tensor, gpu: &Device) -> Vec<OpComparison> {
    let index = |t: Result<Tensor>| t.and_then(|t| t.to_dtype(DType::F32));
    let ops: Vec<(&str, f64, Op)> = vec![
        ("flip", 0.0, Box::new(|x, _| x.flip(&[0, -1]))),
        ("roll", 0.0, Box::new(|x, _| x.roll(5, 1))),
        ("repeat", 0.0, Box::new(|x, _| x.repeat(&[2, 1, 3]))),
        ("pad", 0.0, Box::new(|x, _| x.pad(1, 2, 3, 0, 0.5))),
        (
            "tril/triu",
            0.0,
            Box::new(|x, _| x.tril(-2)?.add(&x.triu(3)?)),
        ),
        (
            "masked_fill",
            0.0,
            Box::new(|x, _| x.masked_fill(&x.gt_scalar(1.0)?, -7.0)),
        ),
        ("eye", 0.0, Box::new(|_, d| Tensor::eye(5, DType::F32, d))),
        (
            "linspace",
            1e-6,
            Box::new(|_, d| Tensor::linspace(-2.0, 3.0, 11, DType::F32, d)),
        ),
        (
            "max_dim values",
            0.0,
            Box::new(|x, _| Ok(x.max_dim(1, false)?.0)),
        ),
        (
            "max_dim indices",
            0.0,
            Box::new(move |x, _| index(Ok(x.max_dim(1, false)?.1))),
        ),
        (
            "min_dim indices",
            0.0,
            Box::new(move |x, _| index(Ok(x.min_dim(0, true)?.1))),
        ),
        (
            "any/all",
            0.0,
            Box::new(|x, _| {
                let picked = x.gt_scalar(2.5)?;
                Tensor::cat(&[&picked.any(&[1], false)?, &picked.all(&[1], false)?], 0)?
                    .to_dtype(DType::F32)
            }),
        ),
        ("std", 1e-4, Box::new(|x, _| x.std(&[1], true, false))),
        ("norm", 1e-4, Box::new(|x, _| x.norm(3.0, &[0], false))),
        ("cumsum", 1e-4, Box::new(|x, _| x.cumsum(1))),
        (
            "cumprod",
            1e-4,
            Box::new(|x, _| x.narrow(1, 0, 9)?.cumprod(1)),
        ),
        (
            "prod",
            1e-4,
            Box::new(|x, _| x.narrow(1, 0, 9)?.prod(&[1], false)),
        ),
        (
            "attention (fused on GPUs), causal",
            1e-4,
            Box::new(|x, _| with_fused_attention(|| attention(x, true))),
        ),
        (
            "attention gradient (fused on GPUs)",
            1e-4,
            Box::new(|x, _| with_fused_attention(|| gradient(x, &|x| attention(x, false)))),
        ),
        ("sort values", 0.0, Box::new(|x, _| Ok(x.sort(1, false)?.0))),
        (
            "argsort descending",
            0.0,
            Box::new(move |x, _| index(x.argsort(0, true))),
        ),
        (
            "argsort of ties (stable)",
            0.0,
            Box::new(move |x, _| index(x.mul_scalar(2.0)?.to_dtype(DType::I32)?.argsort(1, false))),
        ),
        (
            "argsort long rows (multi-pass)",
            0.0,
            Box::new(move |x, _| index(x.reshape([1, 37 * 53])?.argsort(1, false))),
        ),
        (
            "topk",
            0.0,
            Box::new(move |x, _| {
                let (values, indices) = x.topk(4, 1, true, true)?;
                Tensor::cat(&[&values, &indices.to_dtype(DType::F32)?], 1)
            }),
        ),
        (
            "nonzero",
            0.0,
            Box::new(move |x, _| index(x.gt_scalar(2.0)?.nonzero())),
        ),
        (
            "masked_select",
            0.0,
            Box::new(|x, _| x.masked_select(&x.lt_scalar(-2.0)?)),
        ),
        (
            "randperm",
            0.0,
            Box::new(move |_, d| {
                anygrad::random::manual_seed(11);
                index(Tensor::randperm(500, d))
            }),
        ),
        (
            "bernoulli",
            0.0,
            Box::new(|x, _| {
                anygrad::random::manual_seed(12);
                x.sigmoid()?.bernoulli()
            }),
        ),
        (
            "index_add (a long run of one index), dims 0 and 1",
            1e-5,
            Box::new(|x, d| {
                // 20 sorted positions of index 2 then a cycle: a run across the GPU's chunks.
                let rows: Vec<i32> = (0..37).map(|i| if i < 20 { 2 } else { i % 5 }).collect();
                let columns: Vec<i32> = (0..53).map(|i| (i * 5) % 7).collect();
                let rows = Tensor::from_vec(rows, &[37], d)?;
                let columns = Tensor::from_vec(columns, &[53], d)?;
                let along_0 = Tensor::zeros(&[5, 53], DType::F32, d)?.index_add(0, &rows, x)?;
                let along_1 = Tensor::ones(&[37, 7], DType::F32, d)?.index_add(1, &columns, x)?;
                Tensor::cat(&[&along_0.reshape([-1])?, &along_1.reshape([-1])?], 0)
            }),
        ),
        (
            "index_select gradient (index_add)",
            1e-5,
            Box::new(|x, d| {
                let picked: Vec<i32> = (0..90).map(|i| (i * i) % 37).collect();
                let picked = Tensor::from_vec(picked, &[90], d)?;
                gradient(x, &|t| t.index_select(0, &picked))
            }),
        ),
        (
            "sort gradient",
            1e-5,
            Box::new(|x, _| gradient(x, &|t| Ok(t.sort(1, true)?.0))),
        ),
        (
            "prod gradient with zeros",
            1e-4,
            Box::new(|x, _| {
                let zeros = x.narrow(1, 0, 8)?.relu()?; // several zeros per row
                gradient(&zeros, &|t| t.prod(&[1], false))
            }),
        ),
        (
            "cumsum gradient",
            1e-4,
            Box::new(|x, _| gradient(x, &|t| t.cumsum(0))),
        ),
        (
            "class pick (cross-entropy's core: class weights, ignore_index) and its gradient",
            1e-5,
            Box::new(|x, d| {
                let targets: Vec<i32> = (0..37)
                    .map(|i| if i % 5 == 0 { -100 } else { (i * 7) % 53 })
                    .collect();
                let targets = Tensor::from_vec(targets, &[37], d)?;
                let weight = Tensor::arange(1.0, 54.0, 1.0, DType::F32, d)?.div_scalar(53.0)?;
                let picked = x.class_pick(&targets, Some(&weight), Some(-100))?;
                let grad = gradient(x, &|t| t.class_pick(&targets, Some(&weight), Some(-100)))?;
                Tensor::cat(&[&picked.reshape([-1])?, &grad.reshape([-1])?], 0)
            }),
        ),
        (
            "SGD step (momentum, Nesterov, weight decay)",
            1e-5,
            Box::new(|x, _| optimizer_steps(x, false)),
        ),
        (
            "Adam step (AdamW, AMSGrad)",
            1e-5,
            Box::new(|x, _| optimizer_steps(x, true)),
        ),
    ];
    let quantized = QuantFormat::ALL.into_iter().map(|format| {
        let op: Op = Box::new(move |x, _| quantized_products(x, format));
        let name = format!("{format} matrix: products of 1 and 37 rows, rows by index");
        (name, 1e-5, op)
    });
    let cpu = Device::Cpu;
    ops.into_iter()
        .map(|(name, tolerance, op)| (name.to_string(), tolerance, op))
        .chain(quantized)
        .map(|(name, tolerance, op)| OpComparison {
            name,
            cpu: op(x, &cpu),
            gpu: x.to_device(gpu).and_then(|x| op(&x, gpu)),
            tolerance,
        })
        .collect()
}
