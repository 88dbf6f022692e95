//! Tests of the cooperative-matrix convolutions: naga validation (and SPIR-V as wgpu's
//! Vulkan backend writes it) of every instantiation, the parameter struct, the emulated
//! kernels against the CPU on any f16 device, the hardware kernels against the CPU where the
//! device has cooperative matrices (they say which kernel ran), and the choice made by the
//! public entry points.

use super::{ConvCoopKey, ConvCoopParams, ConvCoopTile, ConvPass, CoopMode, KBlock};
use crate::backend::contract::Convolution;
use crate::backend::contract::Epilogue;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::conv::epilogue::{BoundEpilogue, ConvEpilogueKey};
use crate::backend::gpu::conv::gemm::testing::{check, gpu, params, upload, values, Case};
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::shader_check::translate;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::tests::support::f16_gpu_device;
use crate::dtype::DType;
use crate::layout::{Layout, MemoryFormat};
use crate::op::EpilogueActivation;

/// Every key, hardware and emulated, parses, validates and translates to SPIR-V (naga runs
/// on the CPU: no cooperative matrices needed); the workgroup memory fits where promised.
#[test]
fn conv_coop_kernels_validate_with_naga() {
    let keys = ConvCoopKey::all();
    assert_eq!(keys.len(), 56);
    for key in keys {
        let source = key.source();
        assert_eq!(source.contains("coopMultiplyAdd"), !key.emulated);
        translate(&format!("{key:?}"), &source);
        let limit = match key.k_block {
            KBlock::Sixteen => 32 * 1024,
            KBlock::ThirtyTwo => 48 * 1024,
        };
        assert!(key.workgroup_bytes() <= limit, "{key:?}");
    }
}

/// The WGSL struct has one u32 per field of the Rust struct, in order.
#[test]
fn params_struct_matches_wgsl() {
    let fields: Vec<&str> = <ConvCoopParams as KernelParams>::WGSL
        .lines()
        .filter_map(|line| line.trim().strip_suffix(": u32,"))
        .collect();
    assert_eq!(std::mem::size_of::<ConvCoopParams>(), 4 * fields.len());
    assert_eq!(fields[0], "m");
    assert_eq!(fields.last(), Some(&"grid_w"));
    let params = ConvCoopParams {
        m: 7,
        grid_w: 9,
        ..ConvCoopParams::default()
    };
    let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&params));
    assert_eq!((words[0], words[fields.len() - 1]), (7, 9));
}

/// The tile: wide for at most 64 rows.
#[test]
fn tile_choice() {
    assert_eq!(ConvCoopTile::for_rows(3), ConvCoopTile::Wide);
    assert_eq!(ConvCoopTile::for_rows(64), ConvCoopTile::Wide);
    assert_eq!(ConvCoopTile::for_rows(65), ConvCoopTile::Square);
    assert_eq!(ConvCoopTile::Wide.columns(), 256);
    assert_eq!(ConvCoopTile::Square.columns(), 128);
}

/// Geometries: both tiles (channels on each side of 64), partial tiles and k-blocks, stride,
/// dilation, padding, 1 x 1, 7 x 7, and a strided view.
#[rustfmt::skip]
const CASES: [Case; 6] = [
    // name, [n, c, h, w], o, [kh, kw], [stride, padding, dilation], strided operand
    ("3x3 pad 1, square tile", [2, 8, 10, 9], 72, [3, 3], [1, 1, 1, 1, 1, 1], false),
    ("3x3 stride 2, wide tile", [2, 24, 11, 12], 40, [3, 3], [2, 2, 1, 1, 1, 1], false),
    ("1x1 stride 2", [2, 80, 7, 7], 24, [1, 1], [2, 2, 0, 0, 1, 1], false),
    ("non-square dilated", [2, 5, 11, 10], 70, [2, 3], [2, 1, 1, 0, 1, 2], false),
    ("7x7 stride 2 pad 3", [1, 3, 20, 18], 16, [7, 7], [2, 2, 3, 3, 1, 1], false),
    ("strided view", [2, 6, 9, 8], 66, [3, 2], [1, 1, 1, 0, 1, 2], true),
];

/// Output size along one axis (PyTorch's formula).
fn out_size(size: usize, k: usize, s: usize, p: usize, d: usize) -> usize {
    (size + 2 * p - d * (k - 1) - 1) / s + 1
}

/// A `[a, b, h, w]` operand: dense, or (strided) `[a, h, b + 1, w]` storage at offset 1 viewed
/// as `[a, b, h, w]`. Returns its storage length and layout.
fn operand([a, b, h, w]: [usize; 4], strided: bool) -> (usize, Layout) {
    if strided {
        let mut layout = Layout::contiguous(&[a, h, b + 1, w]).permute(&[0, 2, 1, 3]);
        layout.shape[1] = b;
        layout.offset = 1;
        (a * h * (b + 1) * w + 1, layout)
    } else {
        (a * b * h * w, Layout::contiguous(&[a, b, h, w]))
    }
}

fn cpu_f32(storage: crate::error::Result<CpuStorage>) -> Vec<f32> {
    match storage.unwrap() {
        CpuStorage::F32(values) => (values).into_vec(),
        _ => panic!("dtype changed"),
    }
}

/// Run `pass` of every case through the cooperative kernel (`emulated` or not) against the
/// CPU's f32 result of the same f16 values; returns the kernels that ran.
fn check_pass(device: &GpuDevice, pass: ConvPass, emulated: bool, cases: &[Case]) -> usize {
    let mode = if emulated {
        CoopMode::Emulated
    } else {
        CoopMode::Hardware
    };
    let mut ran = 0;
    for &(name, [n, c, h, w], o, [kh, kw], geometry, strided) in cases {
        let params = params(geometry);
        let [sh, sw, ph, pw, dh, dw] = geometry;
        let (oh, ow) = (out_size(h, kh, sh, ph, dh), out_size(w, kw, sw, pw, dw));
        let weight_layout = Layout::contiguous(&[o, c, kh, kw]);
        let (x_len, x_layout) = operand([n, c, h, w], strided && pass != ConvPass::BackwardInput);
        let (g_len, g_layout) = operand([n, o, oh, ow], strided && pass != ConvPass::Forward);
        let x = values(x_len, 1, DType::F16);
        let k = values(o * c * kh * kw, 2, DType::F16);
        let g = values(g_len, 3, DType::F16);
        let cpu = |v: &[f32]| CpuStorage::F32(crate::backend::cpu::HostBuffer::from(v.to_vec()));
        let gpu = |v: &[f32]| upload(device, v, DType::F16);
        let what = format!("{name} ({pass:?}, emulated {emulated})");
        let (expected, actual) = match pass {
            ConvPass::Forward => (
                cpu_f32(cpu(&x).conv2d(&x_layout, &cpu(&k), &weight_layout, &params)),
                gpu(&x).conv2d_coop((&x_layout, &gpu(&k), &weight_layout), &params, mode, None),
            ),
            ConvPass::BackwardInput => (
                cpu_f32(cpu(&g).conv2d_backward_input(
                    &g_layout,
                    &cpu(&k),
                    &weight_layout,
                    &params,
                    &[n, c, h, w],
                )),
                gpu(&g).conv2d_backward_input_coop(
                    &g_layout,
                    &gpu(&k),
                    &weight_layout,
                    &params,
                    &[n, c, h, w],
                    mode,
                ),
            ),
            ConvPass::BackwardWeight => (
                cpu_f32(cpu(&x).conv2d_backward_weight(
                    &x_layout,
                    &cpu(&g),
                    &g_layout,
                    &params,
                    &[o, c, kh, kw],
                )),
                gpu(&x).conv2d_backward_weight_coop(
                    &x_layout,
                    &gpu(&g),
                    &g_layout,
                    &params,
                    &[o, c, kh, kw],
                    mode,
                ),
            ),
        };
        let m = match pass {
            ConvPass::BackwardInput => c,
            ConvPass::Forward | ConvPass::BackwardWeight => o,
        };
        let key = super::launch::key_for(&gpu(&[0.0]), pass, m, mode);
        let Some(actual) = actual.unwrap() else {
            panic!("{what}: the cooperative kernel did not apply ({key:?})");
        };
        check(&actual, &expected, &what);
        eprintln!("conv_coop: {what}: {key:?} matches the CPU");
        ran += 1;
    }
    ran
}

/// The emulated kernels (the hardware kernels' gathers, walks, staging, double buffering and
/// epilogue, with plain-WGSL matrix operations) against the CPU, on any f16 device.
#[test]
fn emulated_kernels_match_cpu() {
    let Some(device) = f16_gpu_device() else {
        return;
    };
    for pass in [
        ConvPass::Forward,
        ConvPass::BackwardInput,
        ConvPass::BackwardWeight,
    ] {
        assert_eq!(check_pass(&device, pass, true, &CASES), CASES.len());
    }
}

/// A weight gradient whose K is split (64 k-blocks: eight splits of 8) and whose columns
/// span two tiles, emulated.
#[test]
fn emulated_split_weight_gradient_matches_cpu() {
    let Some(device) = f16_gpu_device() else {
        return;
    };
    #[rustfmt::skip]
    let cases: [Case; 1] = [("split K", [4, 30, 16, 16], 8, [3, 3], [1, 1, 1, 1, 1, 1], true)];
    assert_eq!(
        check_pass(&device, ConvPass::BackwardWeight, true, &cases),
        1
    );
}

/// The hardware kernels against the CPU where the device has cooperative matrices: the small
/// cases and ResNet-18-like layers (both tiles, both k-blocks' loops, split K). Says loudly
/// when it cannot run them.
#[test]
fn hardware_kernels_match_cpu() {
    let Some(device) = gpu() else { return };
    if !device.context().coop.available {
        let part = format!(
            "the test (the adapter lists them: {}; failure: {:?})",
            device.has_cooperative_f16_f32(),
            device.cooperative_conv_failure()
        );
        crate::backend::tests::support::skip_missing(
            &device,
            crate::backend::tests::support::Requirement::Coop,
            &part,
        );
        return;
    }
    #[rustfmt::skip]
    let resnet: [Case; 4] = [
        ("resnet 64ch 3x3", [4, 64, 28, 28], 64, [3, 3], [1, 1, 1, 1, 1, 1], false),
        ("resnet 128ch 3x3 stride 2", [4, 64, 28, 28], 128, [3, 3], [2, 2, 1, 1, 1, 1], false),
        ("resnet 256ch 1x1 stride 2", [4, 128, 14, 14], 256, [1, 1], [2, 2, 0, 0, 1, 1], false),
        ("resnet stem 7x7", [2, 3, 64, 64], 64, [7, 7], [2, 2, 3, 3, 1, 1], false),
    ];
    let mut cases = CASES.to_vec();
    cases.extend(resnet);
    let before = device.cooperative_conv_dispatches();
    for pass in [
        ConvPass::Forward,
        ConvPass::BackwardInput,
        ConvPass::BackwardWeight,
    ] {
        assert_eq!(check_pass(&device, pass, false, &cases), cases.len());
    }
    let ran = device.cooperative_conv_dispatches() - before;
    eprintln!("conv_coop: {ran} hardware cooperative-matrix convolution kernels ran");
    assert!(ran >= 3 * cases.len() as u64);
}

/// The public entry points never take cooperative kernels where the device lacks them, take
/// them when told to, and give the same results either way.
#[test]
fn entry_points_use_coop_only_where_available() {
    let Some(device) = f16_gpu_device() else {
        return;
    };
    let (n, c, h, w, o) = (2, 8, 8, 8, 16);
    let params = params([1, 1, 1, 1, 1, 1]);
    let x_layout = Layout::contiguous(&[n, c, h, w]);
    let k_layout = Layout::contiguous(&[o, c, 3, 3]);
    let g_layout = Layout::contiguous(&[n, o, h, w]);
    let x = values(n * c * h * w, 4, DType::F16);
    let k = values(o * c * 9, 5, DType::F16);
    let g = values(n * o * h * w, 6, DType::F16);
    let cpu = |v: &[f32]| CpuStorage::F32(crate::backend::cpu::HostBuffer::from(v.to_vec()));
    let up = |v: &[f32]| -> GpuStorage { upload(&device, v, DType::F16) };
    let before = device.cooperative_conv_dispatches();
    let forward = up(&x)
        .conv2d(&x_layout, &up(&k), &k_layout, &params)
        .unwrap();
    let input = up(&g)
        .conv2d_backward_input(&g_layout, &up(&k), &k_layout, &params, &[n, c, h, w])
        .unwrap();
    let weight = up(&x)
        .conv2d_backward_weight(&x_layout, &up(&g), &g_layout, &params, &[o, c, 3, 3])
        .unwrap();
    let ran = device.cooperative_conv_dispatches() - before;
    eprintln!(
        "conv_coop: entry points ran {ran} cooperative kernels (device offers them: {})",
        device.cooperative_conv()
    );
    // Other tests record hardware kernels on the same device meanwhile, so the count is
    // exact only where the adapter has no cooperative matrices (none can run) or where the
    // entry points are told to take them (`ANYGRAD_COOP_CONV=on`); under `auto` the autotuner
    // chooses, and only the results are checked.
    if !device.has_cooperative_f16_f32() {
        assert_eq!(ran, 0, "no tensor cores, yet cooperative kernels ran");
    } else if device.cooperative_conv() {
        assert!(
            ran >= 3,
            "ANYGRAD_COOP_CONV=on, yet only {ran} cooperative kernels ran"
        );
    }
    check(
        &forward,
        &cpu_f32(cpu(&x).conv2d(&x_layout, &cpu(&k), &k_layout, &params)),
        "forward",
    );
    check(
        &input,
        &cpu_f32(cpu(&g).conv2d_backward_input(
            &g_layout,
            &cpu(&k),
            &k_layout,
            &params,
            &[n, c, h, w],
        )),
        "input gradient",
    );
    check(
        &weight,
        &cpu_f32(cpu(&x).conv2d_backward_weight(
            &x_layout,
            &cpu(&g),
            &g_layout,
            &params,
            &[o, c, 3, 3],
        )),
        "weight gradient",
    );
    // F32 never takes them.
    let x32 = upload(&device, &x, DType::F32);
    let k32 = upload(&device, &k, DType::F32);
    assert!(x32
        .conv2d_coop(
            (&x_layout, &k32, &k_layout),
            &params,
            CoopMode::Hardware,
            None
        )
        .unwrap()
        .is_none());
}

/// The forward with every epilogue (scale, shift, a residual view, ReLU) against the CPU's
/// `conv2d_epilogue`: emulated on any f16 device, and on the hardware where the device has
/// cooperative matrices. A 1x1 stride-2 convolution (ResNet's shortcut, the fused shape the
/// tuner offers these kernels for) with a partial row tile and a 3x3 one with padding.
#[test]
fn forward_epilogues_match_cpu() {
    let Some(device) = f16_gpu_device() else {
        return;
    };
    let mut modes = vec![CoopMode::Emulated];
    if device.context().coop.available {
        modes.push(CoopMode::Hardware);
    } else {
        crate::backend::tests::support::skip_missing(
            &device,
            crate::backend::tests::support::Requirement::Coop,
            "the hardware kernels",
        );
    }
    #[rustfmt::skip]
    let cases: [Case; 2] = [
        ("1x1 stride 2", [2, 24, 9, 10], 40, [1, 1], [2, 2, 0, 0, 1, 1], false),
        ("3x3 pad 1", [1, 8, 6, 7], 72, [3, 3], [1, 1, 1, 1, 1, 1], false),
    ];
    let f16_values = |values: &[f32]| values.iter().map(|&v| half::f16::from_f32(v)).collect();
    for (name, [n, c, h, w], o, [kh, kw], geometry, _) in cases {
        let params = params(geometry);
        let x_layout = Layout::contiguous(&[n, c, h, w]);
        let k_layout = Layout::contiguous(&[o, c, kh, kw]);
        let out_shape = crate::geometry::Conv2dShape::new(&x_layout, &k_layout, &params)
            .unwrap()
            .output_shape();
        let numel: usize = out_shape.iter().product();
        let x = values(n * c * h * w, 7, DType::F16);
        let k = values(o * c * kh * kw, 8, DType::F16);
        let scale: Vec<f32> = values(o, 9, DType::F32).iter().map(|v| 1.5 * v).collect();
        let shift = values(o, 10, DType::F32);
        // The residual as a strided view: `[n, oh, o, ow]` storage permuted, at offset 1.
        let [_, _, oh, ow] = out_shape;
        let residual = values(numel + 1, 11, DType::F16);
        let mut residual_layout = Layout::contiguous(&[n, oh, o, ow]).permute(&[0, 2, 1, 3]);
        residual_layout.offset = 1;
        let vector = Layout::contiguous(&[o]);
        let (x_cpu, k_cpu) = (
            CpuStorage::F16(f16_values(&x)),
            CpuStorage::F16(f16_values(&k)),
        );
        let residual_cpu = CpuStorage::F16(f16_values(&residual));
        let (scale_cpu, shift_cpu) = (
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(scale.clone())),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(shift.clone())),
        );
        let up = |v: &[f32], dtype| upload(&device, v, dtype);
        let (x_gpu, k_gpu) = (up(&x, DType::F16), up(&k, DType::F16));
        let (scale_gpu, shift_gpu) = (up(&scale, DType::F32), up(&shift, DType::F32));
        let residual_gpu = up(&residual, DType::F16);
        // Every epilogue on the 1x1 case; the fullest on the other (emulated kernels compile
        // slowly on software devices).
        let mut keys = ConvEpilogueKey::all();
        if kh != 1 {
            keys.retain(|key| key.residual && key.activation == EpilogueActivation::Relu);
        }
        for key in keys {
            let expected = x_cpu
                .conv2d_epilogue(
                    &x_layout,
                    &k_cpu,
                    &k_layout,
                    &params,
                    &Epilogue {
                        scale: (&scale_cpu, &vector),
                        shift: (&shift_cpu, &vector),
                        residual: key.residual.then_some((&residual_cpu, &residual_layout)),
                        activation: key.activation,
                    },
                    MemoryFormat::Contiguous,
                )
                .unwrap();
            let CpuStorage::F16(expected) = expected else {
                panic!("dtype changed")
            };
            let expected: Vec<f32> = expected.iter().map(|v| v.to_f32()).collect();
            let epilogue = Epilogue {
                scale: (&scale_gpu, &vector),
                shift: (&shift_gpu, &vector),
                residual: key.residual.then_some((&residual_gpu, &residual_layout)),
                activation: key.activation,
            };
            let bound = BoundEpilogue::new("test", &epilogue, &out_shape, DType::F16).unwrap();
            for &mode in &modes {
                let what = format!("{name}, {}, {mode:?}", key.name());
                let out = x_gpu
                    .conv2d_coop((&x_layout, &k_gpu, &k_layout), &params, mode, Some(&bound))
                    .unwrap()
                    .unwrap_or_else(|| panic!("{what}: the cooperative kernel did not apply"));
                check(&out, &expected, &what);
            }
        }
    }
}
