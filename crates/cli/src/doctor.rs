//! `anygrad doctor`: is this machine ready? For every GPU adapter: its facts, then a short
//! conformance run of every primitive op against the CPU backend (per op and dtype: f32, f16
//! where the adapter has it, bf16), bfloat16 rounding and autocast checks, an f16
//! check, a transfer check (CPU↔GPU and between two device instances) and a random-number
//! parity check. Every failure comes with a hint; the exit status is non-zero when anything
//! failed.

use anygrad::gpu::{self, GpuDevice};
use anygrad::op::{BinaryOp, ReduceOp, UnaryOp};
use anygrad::{Conv2dParams, DType, Device, Result, Tensor};
use serde::Serialize;

/// One check's outcome.
#[derive(Debug, Serialize)]
struct Check {
    adapter: Option<usize>,
    name: String,
    passed: bool,
    detail: String,
    hint: Option<String>,
}

const OP_BUG_HINT: &str = "a kernel disagrees with the CPU reference: please file a bug with this output (anygrad doctor --json)";

/// Run every check and print the report; `Err` carries the summary when something failed.
pub fn run(json: bool) -> std::result::Result<(), String> {
    let mut checks = Vec::new();
    let loader = vulkan_loader_present();
    checks.push(Check {
        adapter: None,
        name: "vulkan loader".into(),
        passed: loader || cfg!(any(target_os = "windows", target_os = "macos")),
        detail: if loader { "libvulkan.so.1 found".into() } else { "libvulkan.so.1 not found".into() },
        hint: (!loader).then(|| "install the Vulkan loader: `apt-get install libvulkan1` (Debian/Ubuntu) or your distribution's vulkan-loader package".into()),
    });
    let adapters = gpu::adapter_infos();
    checks.push(Check {
        adapter: None,
        name: "gpu adapters".into(),
        passed: !adapters.is_empty(),
        detail: format!("{} adapter(s)", adapters.len()),
        hint: adapters.is_empty().then(|| {
            "no GPU driver answered: install your GPU's Vulkan driver (Mesa: `apt-get install mesa-vulkan-drivers`), or point VK_DRIVER_FILES at its ICD json; anygrad still runs on the CPU".into()
        }),
    });
    for info in &adapters {
        if !json {
            println!(
                "gpu:{} {} ({}, {}, driver {} {}) f16={} subgroups={} timestamps={} float-atomics={} max binding {} MiB{}",
                info.index,
                info.name,
                info.backend,
                info.device_type,
                info.driver,
                info.driver_info,
                info.shader_f16,
                info.subgroups,
                info.timestamp_query,
                info.float_atomics,
                info.max_storage_binding_size >> 20,
                disabled_suffix(&info.disabled_features)
            );
        }
        match GpuDevice::open(info.index) {
            Ok(gpu) => adapter_checks(info.index, &gpu, &mut checks),
            Err(error) => checks.push(Check {
                adapter: Some(info.index),
                name: "open device".into(),
                passed: false,
                detail: error.to_string(),
                hint: Some("the driver refused to create a device: update the driver, or choose another adapter with ANYGRAD_DEVICE=gpu:N".into()),
            }),
        }
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    if json {
        for check in &checks {
            println!(
                "{}",
                serde_json::to_string(check).map_err(|e| e.to_string())?
            );
        }
    } else {
        for check in &checks {
            let place = check
                .adapter
                .map(|i| format!("gpu:{i} "))
                .unwrap_or_default();
            println!(
                "{} {place}{}: {}",
                if check.passed { "PASS" } else { "FAIL" },
                check.name,
                check.detail
            );
            if let (false, Some(hint)) = (check.passed, &check.hint) {
                println!("     fix: {hint}");
            }
        }
        println!(
            "{} checks, {} passed, {} failed",
            checks.len(),
            checks.len() - failed,
            failed
        );
    }
    if failed > 0 {
        Err(format!("{failed} check(s) failed"))
    } else {
        Ok(())
    }
}

/// The adapter line's note of features `ANYGRAD_DISABLE_FEATURES` turned off (empty when none).
fn disabled_suffix(disabled: &[String]) -> String {
    if disabled.is_empty() {
        String::new()
    } else {
        format!(
            " disabled by ANYGRAD_DISABLE_FEATURES: {}",
            disabled.join(",")
        )
    }
}

fn vulkan_loader_present() -> bool {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
        "/usr/lib/aarch64-linux-gnu/libvulkan.so.1",
        "/usr/lib64/libvulkan.so.1",
        "/usr/lib/libvulkan.so.1",
        "/usr/local/lib/libvulkan.so.1",
    ];
    candidates.iter().any(|p| std::path::Path::new(p).exists())
        || std::process::Command::new("ldconfig")
            .arg("-p")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).contains("libvulkan.so.1"))
            .unwrap_or(false)
}

/// Max |gpu - cpu| relative to the CPU values' scale, or the error either side returned.
fn compare(cpu: Result<Tensor>, gpu: Result<Tensor>, tolerance: f64) -> (bool, String) {
    match (cpu, gpu) {
        (Ok(c), Ok(g)) => {
            if c.shape() != g.shape() || c.dtype() != g.dtype() {
                return (
                    false,
                    format!(
                        "shape/dtype {:?} {} vs {:?} {}",
                        c.shape(),
                        c.dtype(),
                        g.shape(),
                        g.dtype()
                    ),
                );
            }
            match (c.to_vec_f64(), g.to_vec_f64()) {
                (Ok(cv), Ok(gv)) => {
                    let mut worst = 0.0f64;
                    for (a, b) in cv.iter().zip(&gv) {
                        if a.is_nan() && b.is_nan() || a == b {
                            continue;
                        }
                        worst = worst.max((a - b).abs() / (1.0 + a.abs()));
                    }
                    (worst <= tolerance, format!("max rel. error {worst:.2e}"))
                }
                (Err(e), _) | (_, Err(e)) => (false, e.to_string()),
            }
        }
        (Err(e), _) => (false, format!("cpu: {e}")),
        (_, Err(e)) => (false, format!("gpu: {e}")),
    }
}

fn adapter_checks(index: usize, gpu: &GpuDevice, checks: &mut Vec<Check>) {
    let device = Device::Gpu(gpu.clone());
    let cpu = Device::Cpu;
    let mut push = |name: String, (passed, detail): (bool, String), hint: &str| {
        checks.push(Check {
            adapter: Some(index),
            name,
            passed,
            detail,
            hint: (!passed).then(|| hint.to_string()),
        })
    };
    // Inputs drawn once on the CPU (with values that avoid each op's singular points).
    let make = |low: f64, high: f64, shape: &[usize], seed: u64| -> Result<Tensor> {
        Tensor::random_seeded(
            shape,
            anygrad::random::Distribution::Uniform { low, high },
            DType::F32,
            seed,
            0,
            &cpu,
        )
    };
    let (Ok(x), Ok(y), Ok(positive)) = (
        make(-3.0, 3.0, &[37, 53], 1),
        make(-3.0, 3.0, &[37, 53], 2),
        make(0.1, 4.0, &[37, 53], 3),
    ) else {
        push(
            "inputs".into(),
            (false, "could not create CPU inputs".into()),
            OP_BUG_HINT,
        );
        return;
    };
    // BF16 runs on every adapter (stored as 16 bits, computed in f32).
    let dtypes: &[DType] = if gpu.supports_f16() {
        &[DType::F32, DType::F16, DType::BF16]
    } else {
        &[DType::F32, DType::BF16]
    };
    for &dtype in dtypes {
        let tolerance = match dtype {
            DType::F16 => 2e-2,
            // One bfloat16 unit is 2^-8 relative: results rounded from f32 sums in another
            // order may differ by one.
            DType::BF16 => 3e-2,
            _ => 1e-4,
        };
        let on = |t: &Tensor, d: &Device| t.to_dtype(dtype).and_then(|t| t.to_device(d));
        for op in UnaryOp::ALL {
            let input = match op {
                UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => &positive,
                _ => &x,
            };
            let result = compare(
                on(input, &cpu).and_then(|t| t.unary(op)),
                on(input, &device).and_then(|t| t.unary(op)),
                tolerance,
            );
            push(format!("{} {}", op.name(), dtype), result, OP_BUG_HINT);
        }
        for op in BinaryOp::ALL {
            if op.is_bitwise() {
                continue;
            }
            let rhs = if op == BinaryOp::Pow || op == BinaryOp::Div {
                &positive
            } else {
                &y
            };
            let lhs = if op == BinaryOp::Pow { &positive } else { &x };
            let run = |d: &Device| -> Result<Tensor> {
                let out = on(lhs, d)?.binary(&on(rhs, d)?.narrow(0, 0, 1)?, op)?;
                if op.is_comparison() {
                    out.to_dtype(DType::F32)
                } else {
                    Ok(out)
                }
            };
            push(
                format!("{} {} (broadcast)", op.name(), dtype),
                compare(run(&cpu), run(&device), tolerance),
                OP_BUG_HINT,
            );
        }
        // The bit operators, on the integer dtypes they are defined for (once).
        for integer in [DType::I32, DType::U32, DType::U8] {
            if dtype != DType::F32 {
                break;
            }
            let run = |d: &Device, op: BinaryOp| -> Result<Tensor> {
                let as_integer = |t: &Tensor| t.mul_scalar(40.0)?.to_dtype(integer)?.to_device(d);
                let amounts = y.abs()?.mul_scalar(3.0)?.to_dtype(integer)?.to_device(d)?;
                let rhs = if matches!(op, BinaryOp::ShiftLeft | BinaryOp::ShiftRight) {
                    amounts
                } else {
                    as_integer(&y)?
                };
                as_integer(&x)?
                    .binary(&rhs.narrow(0, 0, 1)?, op)?
                    .to_dtype(DType::F32)
            };
            for op in BinaryOp::ALL.into_iter().filter(|op| op.is_bitwise()) {
                push(
                    format!("{} {} (broadcast)", op.name(), integer),
                    compare(run(&cpu, op), run(&device, op), 0.0),
                    OP_BUG_HINT,
                );
            }
        }
        for op in ReduceOp::ALL {
            let run = |d: &Device| -> Result<Tensor> {
                on(&x, d)?
                    .t()?
                    .reduce(op, &[1], false)?
                    .to_dtype(DType::F32)
            };
            push(
                format!("{} {} (transposed)", op.name(), dtype),
                compare(run(&cpu), run(&device), tolerance * 10.0),
                OP_BUG_HINT,
            );
        }
        let matmul = |d: &Device| -> Result<Tensor> { on(&x, d)?.matmul(&on(&y, d)?.t()?) };
        push(
            format!("matmul {dtype}"),
            compare(matmul(&cpu), matmul(&device), tolerance * 10.0),
            OP_BUG_HINT,
        );
        // A classifier head's product (64 x 512 by a transposed 1000 x 512 weight): the
        // autotuner's pick for that shape here (split-K slices or the dot kernel).
        if let (Ok(features), Ok(weight)) = (
            make(-1.0, 1.0, &[64, 512], 11),
            make(-1.0, 1.0, &[1000, 512], 12),
        ) {
            let head =
                |d: &Device| -> Result<Tensor> { on(&features, d)?.matmul(&on(&weight, d)?.t()?) };
            push(
                format!("matmul {dtype} 64x512 by 1000x512 transposed (a classifier head)"),
                compare(head(&cpu), head(&device), tolerance * 10.0),
                OP_BUG_HINT,
            );
        }
        let conv = |d: &Device| -> Result<Tensor> {
            let image = on(&x, d)?.reshape([1, 1, 37, 53])?;
            let kernel = on(&y, d)?
                .narrow(0, 0, 1)?
                .narrow(1, 0, 18)?
                .reshape([2, 1, 3, 3])?;
            image.conv2d(
                &kernel,
                None,
                Conv2dParams {
                    padding: (1, 1),
                    ..Default::default()
                },
            )
        };
        push(
            format!("conv2d {dtype}"),
            compare(conv(&cpu), conv(&device), tolerance * 10.0),
            OP_BUG_HINT,
        );
        // The depthwise convolution (groups == channels, multiplier 2, stride 2) and both of its
        // gradients, flattened into one tensor: output, input gradient, weight gradient.
        let depthwise = |d: &Device| -> Result<Tensor> {
            let flat = |t: &Tensor, count: usize| -> Result<Tensor> {
                on(t, d)?.reshape([37 * 53])?.narrow(0, 0, count)
            };
            let image = flat(&x, 2 * 4 * 9 * 12)?
                .reshape([2, 4, 9, 12])?
                .requires_grad_(true);
            let kernel = flat(&y, 8 * 9)?.reshape([8, 1, 3, 3])?.requires_grad_(true);
            let params = Conv2dParams {
                stride: (2, 2),
                padding: (1, 1),
                groups: 4,
                ..Default::default()
            };
            let out = image.conv2d(&kernel, None, params)?;
            out.backward_with(&flat(&y, out.numel())?.reshape(out.shape())?)?;
            let missing = || anygrad::Error::invalid("doctor", "no gradient");
            let parts = [
                out.detach().flatten(0, -1)?,
                image.grad().ok_or_else(missing)?.flatten(0, -1)?,
                kernel.grad().ok_or_else(missing)?.flatten(0, -1)?,
            ];
            Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0)
        };
        push(
            format!("depthwise conv2d {dtype} forward + both gradients"),
            compare(depthwise(&cpu), depthwise(&device), tolerance * 10.0),
            OP_BUG_HINT,
        );
        // The fused convolution (eval-mode batch norm, residual and ReLU in the store): the
        // autotuner times each kernel carrying the epilogue (both tiles, Winograd) on first use.
        let fused = |d: &Device| -> Result<Tensor> {
            let flat = |t: &Tensor, count: usize| -> Result<Tensor> {
                on(t, d)?.reshape([37 * 53])?.narrow(0, 0, count)
            };
            let image = flat(&x, 2 * 8 * 9 * 12)?.reshape([2, 8, 9, 12])?;
            let kernel = flat(&y, 16 * 8 * 9)?.reshape([16, 8, 3, 3])?;
            let scale = flat(&y, 16)?.to_dtype(DType::F32)?;
            let shift = flat(&x, 16)?.to_dtype(DType::F32)?;
            let residual = flat(&x, 16 * 9 * 12)?
                .reshape([1, 16, 9, 12])?
                .repeat(&[2, 1, 1, 1])?;
            let epilogue = anygrad::ConvEpilogue {
                scale: &scale,
                shift: &shift,
                residual: Some(&residual),
                activation: anygrad::EpilogueActivation::Relu,
            };
            let params = Conv2dParams {
                padding: (1, 1),
                ..Default::default()
            };
            let _inference = anygrad::no_grad();
            image.conv2d_fused(&kernel, params, &epilogue)
        };
        push(
            format!("conv2d fused with scale, shift, residual, relu {dtype}"),
            compare(fused(&cpu), fused(&device), tolerance * 10.0),
            OP_BUG_HINT,
        );
    }
    if gpu.supports_f16() {
        // The last case's right operand is a transposed view (a Linear layer's weight): it
        // takes the tensor cores after a dense copy.
        for (name, lhs, rhs, transposed) in [
            ("256x256x256", vec![256, 256], vec![256, 256], false),
            (
                "[3,128,96]x[3,96,384]",
                vec![3, 128, 96],
                vec![3, 96, 384],
                false,
            ),
            (
                "[256,128]x[384,128]^T",
                vec![256, 128],
                vec![384, 128],
                true,
            ),
        ] {
            let result = tensor_core_matmul(gpu, (&lhs, &rhs, transposed), &make);
            push(
                format!("matmul f16 {name} (tensor cores where available)"),
                result,
                OP_BUG_HINT,
            );
        }
        push(
            "conv2d f16 forward + both gradients (tensor cores where available)".into(),
            tensor_core_conv(gpu, &make),
            OP_BUG_HINT,
        );
        for causal in [false, true] {
            push(
                format!(
                    "fused attention f16{} forward + gradients (tensor cores where available)",
                    if causal { " causal" } else { " key-padded" }
                ),
                tensor_core_attention(gpu, causal, &make),
                OP_BUG_HINT,
            );
        }
    }
    crate::doctor_ops::comparisons(&x, &device)
        .into_iter()
        .chain(crate::doctor_ops::bfloat16_comparisons(&x, &device))
        .for_each(|c| {
            push(
                format!("{} (composite)", c.name),
                compare(c.cpu, c.gpu, c.tolerance),
                OP_BUG_HINT,
            )
        });
    for (name, on_cpu, on_gpu) in crate::doctor_layers::comparisons(&device) {
        push(name, compare(on_cpu, on_gpu, 1e-3), OP_BUG_HINT);
    }
    let indexing = |d: &Device| -> Result<Tensor> {
        let idx = Tensor::from_vec(vec![3i32, 0, 36, 3], &[4], d)?;
        let picked = x.to_device(d)?.index_select(0, &idx)?;
        let gathered = picked.gather(1, &Tensor::from_vec(vec![1i32, 52, 0, 7], &[4, 1], d)?)?;
        picked.zeros_like()?.scatter_add(
            1,
            &Tensor::from_vec(vec![5i32, 5, 5, 5], &[4, 1], d)?,
            &gathered,
        )
    };
    push(
        "index_select/gather/scatter_add".into(),
        compare(indexing(&cpu), indexing(&device), 1e-6),
        OP_BUG_HINT,
    );
    let cast = |d: &Device| -> Result<Tensor> {
        x.to_device(d)?
            .mul_scalar(10.0)?
            .to_dtype(DType::I32)?
            .to_dtype(DType::F32)
    };
    push(
        "cast f32->i32->f32".into(),
        compare(cast(&cpu), cast(&device), 0.0),
        OP_BUG_HINT,
    );
    let random = |d: &Device| {
        Tensor::random_seeded(
            &[4096],
            anygrad::random::Distribution::Normal {
                mean: 0.0,
                std: 1.0,
            },
            DType::F32,
            9,
            0,
            d,
        )
    };
    push(
        "random numbers match the CPU".into(),
        compare(random(&cpu), random(&device), 1e-5),
        OP_BUG_HINT,
    );
    // Transfers must be bit-exact.
    let transfer = x.to_device(&device).and_then(|g| g.to_device(&cpu));
    push(
        "transfer cpu->gpu->cpu".into(),
        compare(Ok(x.clone()), transfer, 0.0),
        "copies between host and device are not exact: update the driver and file a bug",
    );
    let second = GpuDevice::open_new_instance(index).map(Device::Gpu);
    let across = second.and_then(|other| x.to_device(&device)?.to_device(&other)?.to_device(&cpu));
    push(
        "transfer gpu->gpu (second device instance)".into(),
        compare(Ok(x.clone()), across, 0.0),
        "copies between devices are not exact: file a bug with this output",
    );
    let info = gpu.info();
    push(
        "timestamp queries".into(),
        (
            true,
            if info.timestamp_query {
                "available (GPU times in the profiler)".into()
            } else {
                "not offered by this adapter: the profiler reports host times only".into()
            },
        ),
        "",
    );
}

/// An f16 product of a size that takes the cooperative-matrix (tensor-core) kernel where the
/// device has one (`transposed`: with the right operand a transposed view), against the
/// CPU's f32 product of the same f16 values. Fails when the result is off, or when the kernel
/// taken is not the one the device announced.
fn tensor_core_matmul(
    gpu: &GpuDevice,
    (lhs, rhs, transposed): (&[usize], &[usize], bool),
    make: &impl Fn(f64, f64, &[usize], u64) -> Result<Tensor>,
) -> (bool, String) {
    let device = Device::Gpu(gpu.clone());
    let inputs = make(-1.0, 1.0, lhs, 11).and_then(|a| Ok((a, make(-1.0, 1.0, rhs, 12)?)));
    // `transposed`: the right operand is the view `b.t()` on both devices.
    let view = |t: Tensor| if transposed { t.t() } else { Ok(t) };
    let (a, b) = match inputs {
        Ok(inputs) => inputs,
        Err(error) => return (false, format!("inputs: {error}")),
    };
    let rounded = |t: &Tensor| t.to_dtype(DType::F16)?.to_dtype(DType::F32);
    let reference = rounded(&a).and_then(|a| a.matmul(&view(rounded(&b)?)?));
    let before = gpu.cooperative_matmul_dispatches();
    let on_gpu = |t: &Tensor| t.to_dtype(DType::F16)?.to_device(&device);
    let result = on_gpu(&a)
        .and_then(|a| a.matmul(&view(on_gpu(&b)?)?))
        .and_then(|c| c.to_dtype(DType::F32)?.to_device(&Device::Cpu));
    let used = gpu.cooperative_matmul_dispatches() > before;
    // f16 output: about 5e-4 relative rounding; a wrong index is off by O(1).
    let (close, error) = compare(reference, result, 2e-3);
    let expected = gpu.cooperative_matmul();
    let failure = gpu.cooperative_matmul_failure();
    let path = match (used, expected, &failure) {
        (_, _, Some(failure)) => {
            format!("regular kernel: the cooperative-matrix kernel failed: {failure}")
        }
        (true, Some(variant), None) => {
            format!("cooperative-matrix kernel (preferred variant {variant:?})")
        }
        (true, None, None) => "cooperative-matrix kernel, although none was announced".into(),
        (false, Some(variant), None) => {
            format!("regular kernel, although the cooperative-matrix kernel ({variant:?}) was announced")
        }
        (false, None, None) if gpu.has_cooperative_f16_f32() => {
            "regular kernel (cooperative matrices present but unused: ANYGRAD_COOP_MATMUL=off, or subgroups not of 32)".into()
        }
        (false, None, None) => "regular kernel (no 16x16x16 f16->f32 cooperative matrices)".into(),
    };
    let passed = close && used == expected.is_some() && failure.is_none();
    (passed, format!("{error}; {path}"))
}

/// The CPU's results against the device's, pairwise and named: whether all are within
/// `tolerance` and each one's error; `Err` says which side failed to run.
fn compare_named<const N: usize>(
    names: [&str; N],
    reference: Result<[Tensor; N]>,
    result: Result<[Tensor; N]>,
    tolerance: f64,
) -> std::result::Result<(bool, Vec<String>), String> {
    let (reference, result) = match (reference, result) {
        (Ok(reference), Ok(result)) => (reference, result),
        (Err(error), _) => return Err(format!("cpu: {error}")),
        (_, Err(error)) => return Err(format!("gpu: {error}")),
    };
    let mut passed = true;
    let mut details = Vec::new();
    for (name, (cpu, gpu)) in names.iter().zip(reference.into_iter().zip(result)) {
        let (close, error) = compare(Ok(cpu), Ok(gpu), tolerance);
        passed &= close;
        details.push(format!("{name} {error}"));
    }
    Ok((passed, details))
}

/// An f16 convolution (3x3, padding 1, 64 -> 128 channels: the square tile forward and for
/// the weight gradient, the wide one for the input gradient) and both its gradients through
/// autograd, against the CPU's f32 results of the same f16 values. Fails when a result is
/// off, or when the cooperative-matrix kernels ran where the device did not offer them or
/// did not run where it did.
fn tensor_core_conv(
    gpu: &GpuDevice,
    make: &impl Fn(f64, f64, &[usize], u64) -> Result<Tensor>,
) -> (bool, String) {
    let device = Device::Gpu(gpu.clone());
    let inputs = make(-1.0, 1.0, &[2, 64, 12, 12], 21).and_then(|x| {
        Ok((
            x,
            make(-0.2, 0.2, &[128, 64, 3, 3], 22)?,
            make(-1.0, 1.0, &[2, 128, 12, 12], 23)?,
        ))
    });
    let (x, w, g) = match inputs {
        Ok(inputs) => inputs,
        Err(error) => return (false, format!("inputs: {error}")),
    };
    let params = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    // (output, input gradient, weight gradient) as f32 on the CPU, from `dtype` on `device`.
    let run = |dtype: DType, device: &Device| -> Result<[Tensor; 3]> {
        let on = |t: &Tensor| t.to_dtype(DType::F16)?.to_dtype(dtype)?.to_device(device);
        let (x, w, g) = (
            on(&x)?.requires_grad_(true),
            on(&w)?.requires_grad_(true),
            on(&g)?,
        );
        let y = x.conv2d(&w, None, params)?;
        y.backward_with(&g)?;
        let missing = || anygrad::Error::invalid("doctor", "no gradient");
        let back = |t: Tensor| t.detach().to_dtype(DType::F32)?.to_device(&Device::Cpu);
        Ok([
            back(y)?,
            back(x.grad().ok_or_else(missing)?)?,
            back(w.grad().ok_or_else(missing)?)?,
        ])
    };
    // The tensor-core kernels themselves, whatever the autotuner would pick: made the default
    // and the tuner off for this check, then both restored.
    let (was_on, tuning) = (gpu.cooperative_conv(), gpu.autotune_mode());
    gpu.set_cooperative_conv(true);
    gpu.set_autotune_mode(anygrad::gpu::AutotuneMode::Off);
    let offered = gpu.cooperative_conv();
    let before = gpu.cooperative_conv_dispatches();
    let reference = run(DType::F32, &Device::Cpu);
    let result = run(DType::F16, &device);
    let ran = gpu.cooperative_conv_dispatches() - before;
    gpu.set_cooperative_conv(was_on);
    gpu.set_autotune_mode(tuning);
    // f16 results: about 5e-4 relative rounding; a wrong index is off by O(1).
    let names = ["output", "input grad", "weight grad"];
    let (mut passed, details) = match compare_named(names, reference, result, 3e-3) {
        Ok(compared) => compared,
        Err(failure) => return (false, failure),
    };
    let path = match (ran, offered, gpu.cooperative_conv_failure()) {
        (_, _, Some(failure)) => {
            passed = false;
            format!("regular kernels: the cooperative kernels failed: {failure}")
        }
        (0, false, None) if gpu.has_cooperative_f16_f32() => {
            "regular kernels (cooperative matrices present but unused: subgroups not of 32)".into()
        }
        (0, false, None) => "regular kernels (no 16x16x16 f16->f32 cooperative matrices)".into(),
        (0, true, None) => {
            passed = false;
            "regular kernels, although the cooperative ones were announced".into()
        }
        (ran, offered, None) => {
            passed &= offered && ran >= 3;
            format!("{ran} cooperative-matrix kernels")
        }
    };
    (passed, format!("{}; {path}", details.join(", ")))
}

/// The fused attention in f16 (`[2, 2, 150, 64]` queries against 45 keys: two query blocks of
/// the 128-row forward, three of the 64-row kernels, and key tiles, with ragged ends; causal,
/// or with a Bool key-padding mask) and the gradients of its
/// query, key and value through autograd, against the CPU's f32 composite of the same f16
/// values. The forward and the backward's key-value and query passes take the
/// cooperative-matrix kernels where the device offers them: fails when a result is off, or
/// when those kernels ran where the device did not offer them or did not all run where it did.
fn tensor_core_attention(
    gpu: &GpuDevice,
    causal: bool,
    make: &impl Fn(f64, f64, &[usize], u64) -> Result<Tensor>,
) -> (bool, String) {
    let device = Device::Gpu(gpu.clone());
    let inputs = make(-1.0, 1.0, &[2, 2, 150, 64], 31).and_then(|q| {
        Ok((
            q,
            make(-1.0, 1.0, &[2, 2, 45, 64], 32)?,
            make(-1.0, 1.0, &[2, 2, 45, 64], 33)?,
            make(-1.0, 1.0, &[2, 2, 150, 64], 34)?,
        ))
    });
    let (q, k, v, g) = match inputs {
        Ok(inputs) => inputs,
        Err(error) => return (false, format!("inputs: {error}")),
    };
    // (output, query, key and value gradients) as f32 on the CPU, from `dtype` on `device`.
    let run = |dtype: DType, device: &Device| -> Result<[Tensor; 4]> {
        let on = |t: &Tensor| t.to_dtype(DType::F16)?.to_dtype(dtype)?.to_device(device);
        let (q, k, v, g) = (
            on(&q)?.requires_grad_(true),
            on(&k)?.requires_grad_(true),
            on(&v)?.requires_grad_(true),
            on(&g)?,
        );
        // Batch 0 attends to every key but each third one, batch 1 to the first 20.
        let attend: Vec<bool> = (0..2 * 45)
            .map(|i| if i < 45 { i % 3 != 1 } else { i % 45 < 20 })
            .collect();
        let mask = Tensor::from_vec(attend, &[2, 1, 1, 45], &Device::Cpu)?.to_device(device)?;
        let mask = (!causal).then_some(&mask);
        let y = anygrad::scaled_dot_product_attention(&q, &k, &v, mask, 0.0, causal, None)?;
        y.backward_with(&g)?;
        let missing = || anygrad::Error::invalid("doctor", "no gradient");
        let back = |t: Tensor| t.detach().to_dtype(DType::F32)?.to_device(&Device::Cpu);
        Ok([
            back(y)?,
            back(q.grad().ok_or_else(missing)?)?,
            back(k.grad().ok_or_else(missing)?)?,
            back(v.grad().ok_or_else(missing)?)?,
        ])
    };
    let previous = anygrad::fused_attention_mode();
    anygrad::set_fused_attention_mode(anygrad::FusedAttention::On);
    let offered = gpu.cooperative_attention();
    let before = gpu.cooperative_attention_dispatches();
    let folds_before = gpu.cooperative_attention_folds();
    let reference = run(DType::F32, &Device::Cpu);
    let result = run(DType::F16, &device);
    let ran = gpu.cooperative_attention_dispatches() - before;
    let folded = gpu.cooperative_attention_folds() > folds_before;
    anygrad::set_fused_attention_mode(previous);
    // f16 results and f16 probabilities: about 1e-3; a wrong index is off by O(1).
    let names = ["output", "query grad", "key grad", "value grad"];
    let (mut passed, details) = match compare_named(names, reference, result, 1e-2) {
        Ok(compared) => compared,
        Err(failure) => return (false, failure),
    };
    let path = match (ran, offered, gpu.cooperative_attention_failure()) {
        (_, _, Some(failure)) => {
            passed = false;
            format!("scalar kernels: a cooperative kernel failed: {failure}")
        }
        (0, false, None) if gpu.has_cooperative_f16_f32() => {
            "scalar kernels (cooperative matrices present but unused: ANYGRAD_COOP_ATTENTION=off, or subgroups not of 32)".into()
        }
        (0, false, None) => "scalar kernels (no 16x16x16 f16->f32 cooperative matrices)".into(),
        (0, true, None) => {
            passed = false;
            "scalar kernels, although the cooperative kernels were announced".into()
        }
        (ran, offered, None) => {
            // The forward and the backward's key-value and query kernels, or the key-value
            // kernel alone where it summed the query gradient (float atomics).
            let expected = if folded { 2 } else { 3 };
            passed &= offered && ran == expected;
            let fold = if folded {
                ", dQ summed in the key-value kernel"
            } else {
                ""
            };
            format!("cooperative-matrix forward and backward ({ran} of {expected} kernels run{fold})")
        }
    };
    (passed, format!("{}; {path}", details.join(", ")))
}
