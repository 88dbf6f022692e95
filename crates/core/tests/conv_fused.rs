//! `Tensor::conv2d_fused` (a convolution with a per-channel scale and shift, an optional
//! residual and an activation) against its composite of public ops, on every device: ResNet's
//! shapes (7x7 stride 2 stem, 3x3 stride 1 and 2, 1x1 stride 2 shortcut) in F32 and F16, the
//! primitive seen by the profiler when nothing records, the composite (and its gradients) when
//! something does, autocast, and bad operands refused with errors naming the op.

use std::sync::Mutex;

use anygrad_core::profiler::profile;
use anygrad_core::{
    autocast, no_grad, Conv2dParams, ConvEpilogue, DType, Device, EpilogueActivation, Error,
    MemoryFormat, Tensor,
};
use anygrad_testing::{assert_close, random_tensor, values};

/// The profiler is process-wide: the tests here run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn random(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    random_tensor(shape, seed, device)
}

/// name, input `[n, c, h, w]`, output channels, kernel, stride, padding.
type Case = (&'static str, [usize; 4], usize, usize, usize, usize);

const CASES: [Case; 4] = [
    ("stem 7x7 stride 2", [2, 3, 20, 18], 16, 7, 2, 3),
    ("3x3 stride 1", [2, 8, 9, 11], 12, 3, 1, 1),
    ("3x3 stride 2", [3, 6, 10, 9], 10, 3, 2, 1),
    ("1x1 stride 2 shortcut", [2, 8, 9, 9], 16, 1, 2, 0),
];

/// The composite written out with public ops: conv2d, per-channel mul and add, residual,
/// activation.
fn composite(
    x: &Tensor,
    weight: &Tensor,
    params: Conv2dParams,
    scale: &Tensor,
    shift: &Tensor,
    residual: Option<&Tensor>,
    activation: EpilogueActivation,
) -> Tensor {
    let out = x.conv2d(weight, None, params).unwrap();
    let o = out.shape()[1];
    let per_channel = |v: &Tensor| {
        v.to_dtype(out.dtype())
            .unwrap()
            .reshape([1, o, 1, 1])
            .unwrap()
    };
    let mut out = out
        .mul(&per_channel(scale))
        .unwrap()
        .add(&per_channel(shift))
        .unwrap();
    if let Some(residual) = residual {
        out = out.add(residual).unwrap();
    }
    match activation {
        EpilogueActivation::Identity => out,
        EpilogueActivation::Relu => out.relu().unwrap(),
    }
}

fn fused_matches_composite(device: &Device) {
    let _serial = serial();
    let mut dtypes = vec![DType::F32];
    if anygrad_testing::f16_or_skip(device, "fused_matches_composite (f16)") {
        dtypes.push(DType::F16);
    }
    for dtype in dtypes {
        let (atol, rtol) = match dtype {
            DType::F16 => (2e-2, 1e-2),
            _ => (1e-4, 1e-4),
        };
        for (seed, (name, [n, c, h, w], o, k, stride, padding)) in CASES.into_iter().enumerate() {
            let seed = seed as u64 * 10;
            let params = Conv2dParams {
                stride: (stride, stride),
                padding: (padding, padding),
                ..Conv2dParams::default()
            };
            let cast = |t: Tensor| t.to_dtype(dtype).unwrap();
            let x = cast(random(&[n, c, h, w], seed + 1, device));
            let weight = cast(random(&[o, c, k, k], seed + 2, device));
            let scale = random(&[o], seed + 3, device).mul_scalar(1.5).unwrap();
            let shift = random(&[o], seed + 4, device);
            let plain = x.conv2d(&weight, None, params).unwrap();
            let residual = cast(random(plain.shape(), seed + 5, device));
            // A strided residual: the same values through a transposed view.
            let [_, _, oh, ow] = [plain.shape()[0], o, plain.shape()[2], plain.shape()[3]];
            let strided = cast(random(&[n, oh, o, ow], seed + 6, device))
                .permute(&[0, 2, 1, 3])
                .unwrap();
            for activation in [EpilogueActivation::Identity, EpilogueActivation::Relu] {
                for residual in [None, Some(&residual), Some(&strided)] {
                    let what = format!(
                        "{name} {dtype:?} {} residual {} on {device}",
                        activation.name(),
                        residual.map_or("none", |r| if r.is_contiguous() {
                            "dense"
                        } else {
                            "strided"
                        })
                    );
                    let epilogue = ConvEpilogue {
                        scale: &scale,
                        shift: &shift,
                        residual,
                        activation,
                    };
                    let (fused, recorded) =
                        profile(|| x.conv2d_fused(&weight, params, &epilogue)).unwrap();
                    let names: Vec<&str> =
                        recorded.events.iter().map(|e| e.name.as_str()).collect();
                    assert!(
                        names.contains(&"conv2d_epilogue") && !names.contains(&"conv2d"),
                        "{what}: one primitive, got {names:?}"
                    );
                    assert_eq!(fused.dtype(), dtype, "{what}");
                    let expected =
                        composite(&x, &weight, params, &scale, &shift, residual, activation);
                    assert_eq!(fused.shape(), expected.shape(), "{what}");
                    assert_close(&values(&fused), &values(&expected), atol, rtol, &what);
                    if activation == EpilogueActivation::Relu {
                        assert!(values(&fused).iter().all(|&v| v >= 0.0), "{what}");
                    }
                }
            }
        }
    }
}

/// With an operand that requires a gradient the composite runs and records: the gradients
/// equal the hand-written composite's. Under `no_grad` the primitive runs.
fn records_through_the_composite(device: &Device) {
    let _serial = serial();
    let params = Conv2dParams {
        padding: (1, 1),
        ..Conv2dParams::default()
    };
    let x = random(&[2, 4, 6, 6], 1, device);
    let weight = random(&[5, 4, 3, 3], 2, device);
    let shift = random(&[5], 4, device);
    let residual = random(&[2, 5, 6, 6], 5, device);
    let gradients = |fused: bool| {
        let scale = random(&[5], 3, device).requires_grad_(true);
        let w = weight.detach().requires_grad_(true);
        let out = if fused {
            let epilogue = ConvEpilogue {
                scale: &scale,
                shift: &shift,
                residual: Some(&residual),
                activation: EpilogueActivation::Relu,
            };
            x.conv2d_fused(&w, params, &epilogue).unwrap()
        } else {
            composite(
                &x,
                &w,
                params,
                &scale,
                &shift,
                Some(&residual),
                EpilogueActivation::Relu,
            )
        };
        assert!(out.requires_grad());
        out.sum_all().unwrap().backward().unwrap();
        (values(&w.grad().unwrap()), values(&scale.grad().unwrap()))
    };
    let (fused_w, fused_scale) = gradients(true);
    let (composite_w, composite_scale) = gradients(false);
    assert_close(&fused_w, &composite_w, 1e-4, 1e-4, "weight gradient");
    assert_close(&fused_scale, &composite_scale, 1e-4, 1e-4, "scale gradient");
    let tracked = weight.detach().requires_grad_(true);
    let scale = random(&[5], 3, device);
    let epilogue = ConvEpilogue {
        scale: &scale,
        shift: &shift,
        residual: None,
        activation: EpilogueActivation::Identity,
    };
    let _off = no_grad();
    let (out, recorded) = profile(|| x.conv2d_fused(&tracked, params, &epilogue)).unwrap();
    assert!(!out.requires_grad());
    assert!(recorded.events.iter().any(|e| e.name == "conv2d_epilogue"));
}

/// Under autocast the convolution and residual run in F16 (the scale and shift stay F32).
fn autocast_runs_in_f16(device: &Device) {
    let _serial = serial();
    if !anygrad_testing::f16_or_skip(device, "autocast_runs_in_f16") {
        return;
    }
    let params = Conv2dParams::default();
    let x = random(&[2, 3, 5, 5], 7, device);
    let weight = random(&[4, 3, 3, 3], 8, device);
    let (scale, shift) = (random(&[4], 9, device), random(&[4], 10, device));
    let residual = random(&[2, 4, 3, 3], 11, device);
    let epilogue = ConvEpilogue {
        scale: &scale,
        shift: &shift,
        residual: Some(&residual),
        activation: EpilogueActivation::Relu,
    };
    let reference = x.conv2d_fused(&weight, params, &epilogue).unwrap();
    let _low = autocast(DType::F16, device).unwrap();
    let low = x.conv2d_fused(&weight, params, &epilogue).unwrap();
    assert_eq!(low.dtype(), DType::F16);
    assert_close(&values(&low), &values(&reference), 2e-2, 1e-2, "autocast");
}

/// Wrong shapes, dtypes and devices are errors that name the op and the operands.
fn bad_operands_are_errors(device: &Device) {
    let _serial = serial();
    let x = random(&[1, 3, 5, 5], 1, device);
    let weight = random(&[4, 3, 3, 3], 2, device);
    let good = random(&[4], 3, device);
    let params = Conv2dParams::default();
    let run = |scale: &Tensor, shift: &Tensor, residual: Option<&Tensor>| {
        let epilogue = ConvEpilogue {
            scale,
            shift,
            residual,
            activation: EpilogueActivation::Relu,
        };
        let result = x.conv2d_fused(&weight, params, &epilogue);
        let tracked = x.detach().requires_grad_(true);
        let composite = tracked.conv2d_fused(&weight, params, &epilogue);
        (result.unwrap_err(), composite.unwrap_err())
    };
    let short = random(&[3], 4, device);
    for (error, path) in [run(&short, &good, None), run(&good, &short, None)]
        .into_iter()
        .flat_map(|(a, b)| [(a, "primitive"), (b, "composite")])
    {
        assert!(
            matches!(&error, Error::ShapeMismatch { lhs, rhs, .. } if lhs == &[4] && rhs == &[3]),
            "{path}: {error}"
        );
        assert!(error.to_string().contains("per output channel"), "{error}");
    }
    let wrong_residual = random(&[1, 4, 2, 3], 5, device);
    let (error, composite) = run(&good, &good, Some(&wrong_residual));
    for error in [error, composite] {
        assert!(
            matches!(&error, Error::ShapeMismatch { rhs, .. } if rhs == &[1, 4, 2, 3]),
            "{error}"
        );
        assert!(error.to_string().contains("residual"), "{error}");
    }
    let integers = Tensor::from_vec(vec![1i32; 4], &[4], device).unwrap();
    let (error, _) = run(&integers, &good, None);
    assert!(error.to_string().contains("conv2d_fused"), "{error}");
    if *device == Device::Cpu {
        // A residual of another dtype promotes, as `add` does.
        let f64_residual = random(&[1, 4, 3, 3], 6, device)
            .to_dtype(DType::F64)
            .unwrap();
        let epilogue = ConvEpilogue {
            scale: &good,
            shift: &good,
            residual: Some(&f64_residual),
            activation: EpilogueActivation::Identity,
        };
        let promoted = x.conv2d_fused(&weight, params, &epilogue).unwrap();
        assert_eq!(promoted.dtype(), DType::F64);
    } else {
        // A residual on another device.
        let cpu_residual = random(&[1, 4, 3, 3], 6, &Device::Cpu);
        let (error, _) = run(&good, &good, Some(&cpu_residual));
        assert!(matches!(error, Error::DeviceMismatch { .. }), "{error}");
    }
}

/// No images: an empty result, with or without a residual.
fn empty_batch(device: &Device) {
    let _serial = serial();
    let x = Tensor::zeros(&[0, 3, 5, 5], DType::F32, device).unwrap();
    let weight = random(&[4, 3, 3, 3], 1, device);
    let (scale, shift) = (random(&[4], 2, device), random(&[4], 3, device));
    let residual = Tensor::zeros(&[0, 4, 3, 3], DType::F32, device).unwrap();
    for residual in [None, Some(&residual)] {
        let epilogue = ConvEpilogue {
            scale: &scale,
            shift: &shift,
            residual,
            activation: EpilogueActivation::Relu,
        };
        let out = x
            .conv2d_fused(&weight, Conv2dParams::default(), &epilogue)
            .unwrap();
        assert_eq!(out.shape(), [0, 4, 3, 3]);
    }
}

/// A ResNet-like chain of 64 channels (where tensor cores run it, the convolutions write
/// channels-last results and read them without copies): convolution + ReLU, convolution +
/// residual + ReLU, 3x3 max pooling of stride 2, a strided 1x1 convolution, the mean over the
/// pixels; from a row-major and from a channels-last input. Every step equals the CPU's, and
/// pooling keeps its input's memory format.
fn channels_last_chain_matches_the_cpu(device: &Device) {
    let _serial = serial();
    let mut dtypes = vec![DType::F32];
    if anygrad_testing::f16_or_skip(device, "channels_last_chain_matches_the_cpu (f16)") {
        dtypes.push(DType::F16);
    }
    let chain = |x: &Tensor, on: &Device, dtype: DType| -> Vec<Tensor> {
        let cast = |t: Tensor| t.to_dtype(dtype).unwrap();
        let weight = |shape: &[usize], seed: u64| {
            let fan_in = (shape[1] * shape[2] * shape[3]) as f64;
            cast(
                random(shape, seed, on)
                    .mul_scalar(fan_in.powf(-0.5))
                    .unwrap(),
            )
        };
        let (scale, shift) = (random(&[64], 3, on).abs().unwrap(), random(&[64], 4, on));
        let (scale_wide, shift_wide) =
            (random(&[128], 5, on).abs().unwrap(), random(&[128], 6, on));
        let epilogue = |residual, activation| ConvEpilogue {
            scale: &scale,
            shift: &shift,
            residual,
            activation,
        };
        let same = Conv2dParams {
            padding: (1, 1),
            ..Conv2dParams::default()
        };
        let relu = EpilogueActivation::Relu;
        let first = x
            .conv2d_fused(&weight(&[64, 16, 3, 3], 1), same, &epilogue(None, relu))
            .unwrap();
        let second = first
            .conv2d_fused(
                &weight(&[64, 64, 3, 3], 2),
                same,
                &epilogue(Some(&first), relu),
            )
            .unwrap();
        let pooled = second.max_pool2d((3, 3), (2, 2), (1, 1)).unwrap();
        assert_eq!(
            pooled.memory_format(),
            second.memory_format(),
            "pooling keeps the format"
        );
        let shortcut = ConvEpilogue {
            scale: &scale_wide,
            shift: &shift_wide,
            residual: None,
            activation: EpilogueActivation::Identity,
        };
        let strided = Conv2dParams {
            stride: (2, 2),
            ..Conv2dParams::default()
        };
        let narrow = pooled
            .conv2d_fused(&weight(&[128, 64, 1, 1], 7), strided, &shortcut)
            .unwrap();
        let mean = narrow
            .to_dtype(DType::F32)
            .unwrap()
            .mean(&[2, 3], false)
            .unwrap();
        vec![first, second, pooled, narrow, mean]
    };
    for dtype in dtypes {
        let (atol, rtol) = match dtype {
            DType::F16 => (3e-2, 2e-2),
            _ => (1e-4, 1e-4),
        };
        let x = random(&[2, 16, 18, 20], 11, device)
            .to_dtype(dtype)
            .unwrap();
        let reference = chain(&x.to_device(&Device::Cpu).unwrap(), &Device::Cpu, dtype);
        let last = x.contiguous_in(MemoryFormat::ChannelsLast).unwrap();
        assert_eq!(last.memory_format(), MemoryFormat::ChannelsLast);
        assert_eq!(
            values(&last),
            values(&x),
            "a channels-last copy keeps the values"
        );
        for (input, from) in [(&x, "row-major"), (&last, "channels-last")] {
            let steps = chain(input, device, dtype);
            for (step, (got, expected)) in steps.iter().zip(&reference).enumerate() {
                let what = format!("step {step} {dtype:?} from a {from} input on {device}");
                assert_eq!(got.shape(), expected.shape(), "{what}");
                assert_close(&values(got), &values(expected), atol, rtol, &what);
            }
        }
    }
}

anygrad_testing::device_tests!(
    channels_last_chain_matches_the_cpu,
    empty_batch,
    fused_matches_composite,
    records_through_the_composite,
    autocast_runs_in_f16,
    bad_operands_are_errors,
);
