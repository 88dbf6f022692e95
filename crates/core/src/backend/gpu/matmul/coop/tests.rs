//! Tests of the cooperative-matrix matmul: naga validation of every variant, the naga
//! pitfall, the predicate, the emulated kernels on any f16 device, and the hardware kernels
//! where the device has cooperative matrices.

use super::{coop_applies, first_applicable, CoopVariant, COOP_TILE};
use crate::backend::contract::LinearAlgebra;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::kernel::Kernel;
use crate::backend::gpu::runtime::shader_check::translate;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::layout::Layout;
use half::f16;

use crate::backend::tests::support::f16_gpu_device as gpu;

/// Both variants, hardware and emulated, parse, validate and translate to SPIR-V (naga's
/// validator and SPIR-V writer run on the CPU: no cooperative matrices needed).
#[test]
fn coop_kernels_validate_with_naga() {
    for variant in CoopVariant::ALL {
        for emulated in [false, true] {
            let key = MatmulKernel::MatmulCoop { variant, emulated };
            let source = key.source();
            assert_eq!(source.contains("coopMultiplyAdd"), !emulated);
            assert_eq!(source.contains("tile_a"), variant != CoopVariant::Direct);
            translate(&key.name(), &source);
        }
    }
    // Workgroup memory: Staged32 fits the 48 KiB of the H200, Staged16 the 32 KiB of
    // lavapipe (and of most GPUs).
    assert!(CoopVariant::Staged32.workgroup_bytes() <= 48 * 1024);
    assert!(CoopVariant::Wide256.workgroup_bytes() <= 48 * 1024);
    assert!(CoopVariant::Staged16.workgroup_bytes() <= 32 * 1024);
    assert!(CoopVariant::Wide128.workgroup_bytes() <= 32 * 1024);
}

/// The naga pitfall the generator avoids: a `coopStoreT` stride computed inside the call
/// makes naga 30's SPIR-V writer panic ("Expression [N] is not cached!"); the same value
/// through a `let` translates. If this starts to pass, naga has fixed its emitter.
#[test]
fn coop_store_needs_let_arguments() {
    let source = |stride: &str| {
        format!(
            "enable f16;\nenable wgpu_cooperative_matrix;\n\
             @group(0) @binding(0) var<storage, read> data: array<f16>;\n\
             var<workgroup> scratch: array<f32, 1024>;\n\
             @compute @workgroup_size(128)\n\
             fn main(@builtin(subgroup_id) subgroup: u32) {{\n\
             \x20   let a = coopLoadT<coop_mat16x16<f16, A>>(&data[0], 16u);\n\
             \x20   let b = coopLoadT<coop_mat16x16<f16, B>>(&data[256], 16u);\n\
             \x20   let c = coopMultiplyAdd(a, b, coop_mat16x16<f32, C>());\n\
             \x20   let stride = subgroup + 16u;\n\
             \x20   coopStoreT(c, &scratch[0], {stride});\n}}\n"
        )
    };
    translate("let stride", &source("stride"));
    let computed = source("subgroup + 16u");
    let panicked = std::panic::catch_unwind(|| translate("computed stride", &computed));
    assert!(
        panicked.is_err(),
        "naga now accepts a computed coopStoreT stride"
    );
}

/// The predicate: only F16, aligned sizes, row-major operands, 16-byte offsets.
#[test]
fn coop_applies_only_when_legal() {
    let (t, s) = (COOP_TILE, 32);
    let a = Layout::contiguous(&[2, 2 * t, 4 * s]);
    for variant in CoopVariant::ALL {
        // n: the variant's tile width (128, or 256 for Wide256).
        let t_n = variant.tile_n();
        let b = Layout::contiguous(&[2, 4 * s, t_n]);
        let legal = |dtype, a: &Layout, b: &Layout| coop_applies(variant, dtype, a, b);
        assert!(legal(DType::F16, &a, &b));
        for dtype in [DType::F32, DType::F64, DType::I32, DType::U32, DType::U8] {
            assert!(!legal(dtype, &a, &b), "{dtype:?}");
        }
        let broadcast = Layout::contiguous(&[1, 4 * s, t_n])
            .broadcast_to(&[2, 4 * s, t_n])
            .unwrap();
        assert!(legal(DType::F16, &a, &broadcast));
        let shifted = |l: &Layout, offset| Layout {
            offset,
            ..l.clone()
        };
        assert!(legal(DType::F16, &shifted(&a, 16), &shifted(&b, 8)));
        assert!(!legal(DType::F16, &shifted(&a, 4), &b));
        assert!(!legal(DType::F16, &a, &shifted(&b, 2)));
        let mut odd_batch = b.clone();
        odd_batch.strides[0] = 4 * s * t_n + 4;
        assert!(!legal(DType::F16, &a, &odd_batch));
        for (m, k, n, ok) in [
            (t, s, t_n, true),
            (3 * t, 2 * s, 2 * t_n, true),
            (0, s, t_n, false),
            (t / 2, s, t_n, false),
            (t, s, t_n + 64, false),
            (t, 0, t_n, false),
            (t, 8, t_n, false),
            (t, 24, t_n, false),
        ] {
            let (a, b) = (
                Layout::contiguous(&[1, m, k]),
                Layout::contiguous(&[1, k, n]),
            );
            assert_eq!(legal(DType::F16, &a, &b), ok, "{variant:?} {m}x{k}x{n}");
        }
        let b_transposed = Layout::contiguous(&[2, t_n, 4 * s]).permute(&[0, 2, 1]);
        assert!(!legal(DType::F16, &a, &b_transposed));
        let a_narrow = Layout::contiguous(&[2, 2 * t, 8 * s]).narrow(2, 0, 4 * s);
        assert!(!legal(DType::F16, &a_narrow, &b));
        assert!(!legal(
            DType::F16,
            &Layout::contiguous(&[2 * t, 4 * s]),
            &Layout::contiguous(&[4 * s, t_n])
        ));
        assert!(!legal(
            DType::F16,
            &a,
            &Layout::contiguous(&[1, 4 * s, t_n])
        ));
    }
    // k = 48: not for Staged32 (k-blocks of 32).
    let (a, b) = (
        Layout::contiguous(&[1, t, 48]),
        Layout::contiguous(&[1, 48, t]),
    );
    assert!(coop_applies(CoopVariant::Direct, DType::F16, &a, &b));
    assert!(coop_applies(CoopVariant::Staged16, DType::F16, &a, &b));
    assert!(!coop_applies(CoopVariant::Staged32, DType::F16, &a, &b));
    assert!(!coop_applies(CoopVariant::Wide128, DType::F16, &a, &b));
}

/// The default order gives every admitted shape a variant: the widest tile that divides n,
/// k-blocks of 16 where 32 do not divide k.
#[test]
fn default_order_falls_back_by_shape() {
    let order = [
        CoopVariant::Wide256,
        CoopVariant::Wide128,
        CoopVariant::Staged32,
        CoopVariant::Staged16,
    ];
    let pick = |m, k, n| {
        let (a, b) = (
            Layout::contiguous(&[1, m, k]),
            Layout::contiguous(&[1, k, n]),
        );
        first_applicable(&order, DType::F16, &a, &b)
    };
    assert_eq!(pick(4096, 4096, 4096), Some(CoopVariant::Wide256));
    assert_eq!(pick(8192, 384, 1152), Some(CoopVariant::Wide128));
    assert_eq!(pick(128, 48, 256), Some(CoopVariant::Staged16));
    assert_eq!(pick(128, 40, 256), None);
    assert_eq!(pick(64, 64, 256), None);
}

/// `a x b` by `key` against the CPU's f32 product of the same (f16) values.
fn check(
    device: &GpuDevice,
    key: &MatmulKernel,
    (a_len, a_layout): (usize, &Layout),
    (b_len, b_layout): (usize, &Layout),
) {
    let a: Vec<f16> = (0..a_len)
        .map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 25.0))
        .collect();
    let b: Vec<f16> = (0..b_len)
        .map(|i| f16::from_f32(((i * 53 % 97) as f32 - 48.0) / 24.0))
        .collect();
    let widen = |values: &[f16]| CpuStorage::F32(values.iter().map(|x| x.to_f32()).collect());
    let CpuStorage::F32(expected) = widen(&a).matmul(a_layout, &widen(&b), b_layout).unwrap()
    else {
        panic!("dtype changed");
    };
    let upload = |values: Vec<f16>| {
        GpuStorage::from_cpu(
            device,
            &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(values)),
        )
    };
    let actual = upload(a)
        .unwrap()
        .matmul_with(a_layout, &upload(b).unwrap(), b_layout, key.clone())
        .unwrap()
        .to_cpu()
        .unwrap();
    let CpuStorage::F16(actual) = actual else {
        panic!("dtype changed");
    };
    assert_eq!(actual.len(), expected.len());
    for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
        let y = y.to_f32();
        assert!(
            (x - y).abs() <= 2e-3 * (1.0 + x.abs()),
            "{key:?} {a_layout:?} x {b_layout:?}: element {i}: {x} vs {y}"
        );
    }
}

/// Operand cases: dense batches, a broadcast B, offset views with gaps, several tiles.
fn cases() -> Vec<((usize, Layout), (usize, Layout))> {
    let dense = |batch, rows, columns| {
        let layout = Layout::contiguous(&[batch, rows, columns]);
        (batch * rows * columns, layout)
    };
    let broadcast_b = (
        96 * 128,
        Layout::contiguous(&[1, 96, 128])
            .broadcast_to(&[2, 96, 128])
            .unwrap(),
    );
    let offset_a = (
        2 * 136 * 32,
        Layout::contiguous(&[2, 136, 32]).narrow(1, 8, 128),
    );
    let gapped_b = (
        8 + 2 * (32 * 128 + 8),
        Layout {
            shape: vec![2, 32, 128],
            strides: vec![32 * 128 + 8, 128, 1],
            offset: 8,
        },
    );
    vec![
        (dense(2, 128, 64), dense(2, 64, 256)),
        (dense(2, 128, 96), broadcast_b),
        (offset_a, gapped_b),
        (dense(1, 256, 32), dense(1, 32, 256)),
        // k = 48: three k-blocks of Staged16 (not for Staged32).
        (dense(1, 128, 48), dense(1, 48, 128)),
    ]
}

/// The emulated kernels (the hardware kernels' addressing, staging, double buffering and
/// epilogue, with plain-WGSL matrix operations) against the CPU, on any f16 device.
#[test]
fn emulated_kernels_match_cpu() {
    let Some(device) = gpu() else { return };
    let limit = device.context().limits.max_compute_workgroup_storage_size;
    for variant in CoopVariant::ALL {
        if variant.workgroup_bytes() > limit {
            crate::backend::tests::skip::skip(
                &crate::backend::tests::skip::current_test(),
                &format!("{variant:?}: needs more than the device's {limit} B of workgroup memory"),
            );
            continue;
        }
        let key = MatmulKernel::MatmulCoop {
            variant,
            emulated: true,
        };
        for ((a_len, a), (b_len, b)) in cases() {
            if coop_applies(variant, DType::F16, &a, &b) {
                check(&device, &key, (a_len, &a), (b_len, &b));
            } else {
                // Only k = 48 (k-blocks of 32) and n = 128 (Wide256's tile) are refused.
                assert!(
                    a.shape[2] == 48 && variant.k_step() == 32
                        || b.shape[2] % variant.tile_n() != 0,
                    "{variant:?} {a:?} x {b:?}"
                );
            }
        }
    }
}

/// The hardware kernels against the CPU, where the device has cooperative matrices.
#[test]
fn hardware_kernels_match_cpu() {
    let Some(device) = gpu() else { return };
    if !device.context().coop.available {
        crate::backend::tests::support::skip_missing(
            &device,
            crate::backend::tests::support::Requirement::Coop,
            "the test",
        );
        return;
    }
    let limit = device.context().limits.max_compute_workgroup_storage_size;
    // Plus a larger product: 4 x 3 tiles, 32 to 64 k-blocks.
    let mut cases = cases();
    cases.push((
        (512 * 1024, Layout::contiguous(&[1, 512, 1024])),
        (1024 * 384, Layout::contiguous(&[1, 1024, 384])),
    ));
    for variant in CoopVariant::ALL {
        if variant.workgroup_bytes() > limit {
            crate::backend::tests::skip::skip(
                &crate::backend::tests::skip::current_test(),
                &format!("{variant:?}: needs more than the device's {limit} B of workgroup memory"),
            );
            continue;
        }
        let key = MatmulKernel::MatmulCoop {
            variant,
            emulated: false,
        };
        for ((a_len, a), (b_len, b)) in &cases {
            if coop_applies(variant, DType::F16, a, b) {
                check(&device, &key, (*a_len, a), (*b_len, b));
            }
        }
    }
}

/// `matmul` takes the cooperative kernel exactly where the device offers it, and the
/// hardware key is refused where it may not run.
#[test]
fn matmul_uses_coop_only_where_available() {
    let Some(device) = gpu() else { return };
    let (a, b) = (
        Layout::contiguous(&[1, 256, 64]),
        Layout::contiguous(&[1, 64, 256]),
    );
    let ones = |len| {
        GpuStorage::from_cpu(
            &device,
            &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(vec![f16::ONE; len])),
        )
    };
    let (lhs, rhs) = (ones(256 * 64).unwrap(), ones(64 * 256).unwrap());
    let before = device.cooperative_matmul_dispatches();
    let CpuStorage::F16(out) = lhs.matmul(&a, &rhs, &b).unwrap().to_cpu().unwrap() else {
        panic!("dtype changed");
    };
    assert!(out.iter().all(|&x| x == f16::from_f32(64.0)));
    // (Other tests may record hardware kernels on the same device meanwhile.)
    let used = device.cooperative_matmul_dispatches() > before;
    assert_eq!(used, device.cooperative_matmul().is_some());
    // Never on shapes outside the predicate, emulated or not.
    let odd = Layout::contiguous(&[1, 64, 64]);
    for emulated in [false, true] {
        let key = MatmulKernel::MatmulCoop {
            variant: CoopVariant::Staged16,
            emulated,
        };
        assert!(lhs.matmul_with(&odd, &rhs, &b, key).is_err());
    }
    if !device.context().coop.available {
        let key = MatmulKernel::MatmulCoop {
            variant: CoopVariant::Direct,
            emulated: false,
        };
        assert!(lhs.matmul_with(&a, &rhs, &b, key).is_err());
    }
}
