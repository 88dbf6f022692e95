//! Custom ops (CPU reference, backward, gradcheck, the fallback policy on a GPU) and the
//! profiler (every op recorded, fallbacks flagged, Chrome trace valid JSON).

use std::sync::{Arc, Mutex};

use anygrad_core::custom_op::{apply, gradcheck, CustomOp};
use anygrad_core::fallback::{fallback_stats, set_fallback_policy, FallbackPolicy};
use anygrad_core::profiler::profile;
use anygrad_core::{DType, Device, Error, Result, Tensor};

/// Policy and profiler are process-wide: tests that touch them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// y = x · sigmoid(βx) ("scaled swish").
struct ScaledSwish {
    beta: f32,
}

impl CustomOp for ScaledSwish {
    fn name(&self) -> &str {
        "scaled_swish"
    }
    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        Ok(shapes[0].to_vec())
    }
    fn cpu_forward(&self, inputs: &[&[f32]], _shapes: &[&[usize]]) -> Result<Vec<f32>> {
        Ok(inputs[0]
            .iter()
            .map(|&x| x / (1.0 + (-self.beta * x).exp()))
            .collect())
    }
    fn backward(&self, inputs: &[Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let x = &inputs[0];
        let s = x.mul_scalar(self.beta as f64)?.sigmoid()?;
        // d/dx x·σ(βx) = σ + βx·σ(1-σ)
        let ds = s
            .mul(&s.rsub_scalar(1.0)?)?
            .mul(x)?
            .mul_scalar(self.beta as f64)?;
        Ok(vec![Some(grad.mul(&s.add(&ds)?)?)])
    }
}

fn custom_op_forward_backward(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    set_fallback_policy(FallbackPolicy::Allow);
    let op = Arc::new(ScaledSwish { beta: 1.5 });
    let x = Tensor::from_vec(vec![-2.0f32, -0.5, 0.0, 0.7, 3.0], &[5], device).unwrap();
    let y = apply(op.clone(), &[&x]).unwrap();
    assert_eq!(y.device(), device);
    let expected: Vec<f32> = [-2.0f32, -0.5, 0.0, 0.7, 3.0]
        .iter()
        .map(|&v| v / (1.0 + (-1.5 * v).exp()))
        .collect();
    anygrad_testing::assert_close(
        &y.to_vec_f32().unwrap(),
        &expected,
        1e-6,
        1e-6,
        "scaled swish",
    );
    let report = gradcheck(
        |t| apply(op.clone(), &[&t[0]]),
        &[x.requires_grad_(true)],
        1e-3,
        1e-2,
    )
    .unwrap();
    assert_eq!(report.checked_elements, 5);
    assert!(report.max_rel_error < 1e-2);
    set_fallback_policy(FallbackPolicy::Warn);
}

fn gradcheck_catches_a_wrong_backward(device: &Device) {
    struct Wrong;
    impl CustomOp for Wrong {
        fn name(&self) -> &str {
            "wrong"
        }
        fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
            Ok(shapes[0].to_vec())
        }
        fn cpu_forward(&self, inputs: &[&[f32]], _: &[&[usize]]) -> Result<Vec<f32>> {
            Ok(inputs[0].iter().map(|x| x * x).collect())
        }
        fn backward(&self, _inputs: &[Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
            Ok(vec![Some(grad.clone())]) // should be 2x·grad
        }
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    set_fallback_policy(FallbackPolicy::Allow);
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], device)
        .unwrap()
        .requires_grad_(true);
    let error = gradcheck(|t| apply(Arc::new(Wrong), &[&t[0]]), &[x], 1e-3, 1e-2).unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidArgument {
                op: "gradcheck",
                ..
            }
        ),
        "{error:?}"
    );
    set_fallback_policy(FallbackPolicy::Warn);
}

/// Calls of the custom op `name` that fell back to the CPU so far.
fn fallback_calls(name: &str) -> u64 {
    fallback_stats()
        .get(&format!("custom:{name}"))
        .map(|s| s.calls)
        .unwrap_or(0)
}

/// A custom op without a kernel on GPU tensors falls back to its CPU reference as the policy
/// says (refused under `Error`, counted and flagged in the profile under `Allow`); on CPU
/// tensors the CPU reference is the op itself, never a fallback, whatever the policy.
fn fallback_policy_governs_gpu_custom_ops(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let op = Arc::new(ScaledSwish { beta: 1.0 });
    let x = Tensor::ones(&[16], DType::F32, device).unwrap();
    if device.is_cpu() {
        set_fallback_policy(FallbackPolicy::Error);
        let before = fallback_calls("scaled_swish");
        let (y, recorded) = profile(|| apply(op.clone(), &[&x])).unwrap();
        set_fallback_policy(FallbackPolicy::Warn);
        assert_eq!(y.device(), device);
        let expected = 1.0 / (1.0 + (-1.0f32).exp());
        anygrad_testing::assert_close(&y.to_vec_f32().unwrap(), &[expected; 16], 1e-6, 1e-6, "cpu");
        assert_eq!(
            fallback_calls("scaled_swish"),
            before,
            "a CPU call counted as a fallback"
        );
        let row = recorded
            .key_averages()
            .0
            .into_iter()
            .find(|r| r.name == "scaled_swish")
            .expect("recorded");
        assert_eq!(row.calls, 1);
        assert_eq!(row.fallback_calls, 0);
        assert!(!recorded.key_averages().table().contains("CPU FALLBACK"));
        return;
    }
    set_fallback_policy(FallbackPolicy::Error);
    let refused = apply(op.clone(), &[&x]).unwrap_err();
    assert!(
        matches!(refused, Error::FallbackRefused { .. }),
        "{refused:?}"
    );
    set_fallback_policy(FallbackPolicy::Allow);
    let before = fallback_calls("scaled_swish");
    let ((), recorded) = profile(|| apply(op.clone(), &[&x]).map(drop)).unwrap();
    assert_eq!(fallback_calls("scaled_swish"), before + 1);
    let row = recorded
        .key_averages()
        .0
        .into_iter()
        .find(|r| r.name == "scaled_swish")
        .expect("recorded");
    assert_eq!(row.fallback_calls, 1);
    assert!(recorded.key_averages().table().contains("CPU FALLBACK"));
    set_fallback_policy(FallbackPolicy::Warn);
}

/// The same op with its own WGSL kernel.
struct ScaledSwishKernel {
    inner: ScaledSwish,
    source: String,
}

impl CustomOp for ScaledSwishKernel {
    fn name(&self) -> &str {
        "scaled_swish_kernel"
    }
    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        self.inner.output_shape(shapes)
    }
    fn cpu_forward(&self, inputs: &[&[f32]], shapes: &[&[usize]]) -> Result<Vec<f32>> {
        self.inner.cpu_forward(inputs, shapes)
    }
    fn backward(&self, inputs: &[Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        self.inner.backward(inputs, grad)
    }
    fn wgsl(&self) -> Option<String> {
        Some(self.source.clone())
    }
}

fn custom_wgsl_kernel_runs_on_the_gpu(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let op = Arc::new(ScaledSwishKernel {
        inner: ScaledSwish { beta: 1.5 },
        source: "fn compute(i: u32) -> f32 {\n    let x = input0[i];\n    return x / (1.0 + exp(-1.5 * x));\n}\n".into(),
    });
    // The kernel must not need the fallback: forbid it.
    set_fallback_policy(FallbackPolicy::Error);
    let values: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 97.0).collect();
    let x = Tensor::from_vec(values.clone(), &[10, 100], device).unwrap();
    // A non-contiguous view exercises the dense-copy path.
    let y = apply(op.clone(), &[&x.t().unwrap()]).unwrap();
    assert_eq!(y.shape(), &[100, 10]);
    let reference = apply(
        Arc::new(ScaledSwish { beta: 1.5 }),
        &[&x.t().unwrap().to_device(&Device::Cpu).unwrap()],
    )
    .unwrap();
    anygrad_testing::assert_close(
        &y.to_vec_f32().unwrap(),
        &reference.to_vec_f32().unwrap(),
        1e-5,
        1e-5,
        "wgsl kernel",
    );
    let probe = Tensor::from_vec(vec![-1.0f32, 0.3, 2.0], &[3], device)
        .unwrap()
        .requires_grad_(true);
    gradcheck(|t| apply(op.clone(), &[&t[0]]), &[probe], 1e-3, 1e-2).unwrap();
    // A broken kernel is a Shader error with the compiler's message, not a crash.
    let broken = Arc::new(ScaledSwishKernel {
        inner: ScaledSwish { beta: 1.0 },
        source: "fn compute(i: u32) -> f32 { return undefined_name; }".into(),
    });
    if device.is_gpu() {
        let error = apply(broken, &[&x])
            .and_then(|t| t.to_vec_f32())
            .unwrap_err();
        assert!(matches!(error, Error::Shader { .. }), "{error:?}");
    } else {
        // CPU tensors use the CPU reference; the kernel is never compiled.
        assert!(apply(broken, &[&x]).is_ok());
    }
    set_fallback_policy(FallbackPolicy::Warn);
}

fn profiler_records_every_op(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let a = Tensor::randn(&[8, 8], DType::F32, device).unwrap();
    let (sum, recorded) = profile(|| a.matmul(&a)?.relu()?.sum_all()).unwrap();
    assert!(sum.item_f64().unwrap().is_finite());
    let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["matmul", "relu", "sum"]);
    assert_eq!(
        recorded.events[0].input_shapes,
        vec![vec![1, 8, 8], vec![1, 8, 8]]
    );
    assert!(recorded
        .events
        .iter()
        .all(|e| e.device_us >= 0.0 && e.device == device.to_string()));
    assert_eq!(recorded.events[0].bytes_allocated, 8 * 8 * 4);
    // The matmul's operation count (2 m n k) feeds the per-shape TFLOPS table; elementwise ops
    // and reductions have none.
    assert_eq!(recorded.events[0].flops, Some(2.0 * 8.0 * 8.0 * 8.0));
    assert!(recorded.events[1..].iter().all(|e| e.flops.is_none()));
    let by_shape = recorded.shape_averages();
    assert_eq!(by_shape.0.len(), 1);
    assert_eq!(by_shape.0[0].name, "matmul");
    assert_eq!(by_shape.0[0].calls, 1);
    assert!(by_shape.0[0].tflops() > 0.0);
    assert!(by_shape.table().contains("[1, 8, 8] [1, 8, 8]"));
    if let Device::Gpu(gpu) = device {
        // With timestamp queries, device time is what the GPU spent in the op's kernels.
        let has_timestamps = anygrad_testing::gpu_has_or_skip(
            gpu,
            anygrad_testing::Requirement::Timestamps,
            "profiler_records_every_op (kernel timings)",
        );
        assert!(
            recorded
                .events
                .iter()
                .all(|e| e.gpu_timestamps == has_timestamps),
            "{:?}",
            recorded.events
        );
        assert!(recorded.events.iter().all(|e| e.device_us > 0.0));
        // Each kernel is timed on its own and named: the matmul's product kernel, the ReLU's
        // unary kernel; an op's kernels fit in its span (first start to last end).
        if has_timestamps {
            for event in &recorded.events {
                assert!(!event.kernels.is_empty(), "{event:?}");
                let kernels: f64 = event.kernels.iter().map(|k| k.device_us).sum();
                assert!(kernels <= event.device_us * 1.001 + 0.01, "{event:?}");
                assert!(event
                    .kernels
                    .iter()
                    .all(|k| k.device_us >= 0.0 && k.name != "?"));
            }
            assert!(recorded.events[0].kernels[0].name.starts_with("Matmul"));
            assert!(recorded.events[1].kernels[0].name.contains("Relu"));
            let by_kernel = recorded.kernel_averages();
            assert!(by_kernel.0.iter().any(|row| row.op == "matmul"));
            assert!(by_kernel.table(10, 40).contains("relu"));
        }
    } else {
        assert!(recorded.events.iter().all(|e| e.kernels.is_empty()));
        assert!(recorded.kernel_averages().0.is_empty());
    }
    let trace: serde_json::Value = serde_json::from_str(&recorded.chrome_trace()).unwrap();
    assert_eq!(trace["traceEvents"].as_array().unwrap().len(), 3);
    // Nothing is recorded outside a profile.
    let (_, empty) = profile(|| Ok(())).unwrap();
    a.relu().unwrap();
    assert!(empty.events.is_empty());
}

/// `start` … `finish` records like `profile`; a second `start` while recording is an error;
/// dropping a recording unfinished stops it (the next `start` works and sees none of its ops).
fn profiler_start_and_finish(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let a = Tensor::ones(&[4, 4], DType::F32, device).unwrap();
    let recording = anygrad_core::profiler::start().unwrap();
    assert!(anygrad_core::profiler::start().is_err());
    a.matmul(&a).unwrap().relu().unwrap();
    let recorded = recording.finish();
    let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["matmul", "relu"]);
    let abandoned = anygrad_core::profiler::start().unwrap();
    a.neg().unwrap();
    drop(abandoned);
    a.exp().unwrap();
    let recording = anygrad_core::profiler::start().unwrap();
    a.abs().unwrap();
    let names: Vec<String> = recording
        .finish()
        .events
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["abs"]);
}

anygrad_testing::device_tests!(
    profiler_start_and_finish,
    custom_op_forward_backward,
    gradcheck_catches_a_wrong_backward,
    fallback_policy_governs_gpu_custom_ops,
    custom_wgsl_kernel_runs_on_the_gpu,
    profiler_records_every_op,
);
