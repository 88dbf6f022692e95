//! Tests of the channels-last tensor-core convolution: naga accepts every key (the catalogue
//! test covers them too), and the emulated kernels (on any f16 device) and the hardware
//! kernels (where the device has cooperative matrices) match the CPU, with and without an
//! epilogue, on padded, strided, dilated and partial-tile shapes.

use super::{
    applies, patch_applies, patch_input_gradient_applies, ConvNhwcKey, ConvNhwcWeightKey,
    ConvPatchKey, NhwcTile, OutputStore, PatchTile,
};
use crate::backend::contract::Convolution;
use crate::backend::contract::Epilogue;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::conv::epilogue::BoundEpilogue;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::geometry::Conv2dParams;
use crate::layout::{Layout, MemoryFormat};
use crate::op::EpilogueActivation;
use half::f16;

#[test]
fn every_key_validates_with_naga() {
    for key in ConvNhwcKey::all() {
        let source = key.source();
        assert_eq!(source.contains("coopMultiplyAdd"), !key.emulated);
        crate::backend::gpu::runtime::shader_check::translate(&format!("{key:?}"), &source);
    }
    for key in ConvNhwcWeightKey::all() {
        let source = key.source();
        assert_eq!(source.contains("coopMultiplyAdd"), !key.emulated);
        crate::backend::gpu::runtime::shader_check::translate(&format!("{key:?}"), &source);
        // 32-pixel blocks fit 32 KiB (lavapipe runs their emulation), 64-pixel ones 48 KiB.
        let limit = if key.k_block == 32 { 32 } else { 48 };
        assert!(key.workgroup_bytes() <= limit * 1024, "{key:?}");
    }
    for key in ConvPatchKey::all() {
        let source = key.source();
        assert_eq!(source.contains("coopMultiplyAdd"), !key.emulated);
        crate::backend::gpu::runtime::shader_check::translate(&format!("{key:?}"), &source);
        // Every patch kernel fits 48 KiB; the 3x3 and smaller ones of the 16 x 64 and 8 x 128
        // blocks and the 2x2 ones of the flat 256-pixel block 32 KiB (lavapipe).
        let small = match key.tile {
            PatchTile::Rows16Columns64 | PatchTile::Rows8Columns128 => key.side <= 3,
            PatchTile::Flat16Columns64 | PatchTile::Flat16Columns128 => key.side <= 2,
            PatchTile::Rows32Columns64
            | PatchTile::Flat32Columns64
            | PatchTile::Flat24Columns64 => false,
        } && key.stride == 1;
        assert!(key.tile.flat_width().is_none() || key.store != OutputStore::PlanesPacked);
        let limit = if small { 32 } else { 48 };
        assert!(
            key.tile.workgroup_bytes(key.side) <= limit * 1024,
            "{key:?}"
        );
    }
    // The 32-deep 128- and 96-pixel tiles fit 32 KiB of workgroup memory (lavapipe), all fit
    // 48 KiB.
    for tile in NhwcTile::ALL {
        assert!(tile.workgroup_bytes() <= 48 * 1024, "{tile:?}");
    }
    assert!(NhwcTile::Rows128Columns128.workgroup_bytes() <= 32 * 1024);
    assert!(NhwcTile::Rows128Columns64.workgroup_bytes() <= 32 * 1024);
    assert!(NhwcTile::Rows96Columns128.workgroup_bytes() <= 32 * 1024);
}

#[test]
fn applies_only_to_its_shapes() {
    let params = Conv2dParams {
        stride: (1, 1),
        padding: (1, 1),
        dilation: (1, 1),
        groups: 1,
    };
    assert!(applies(DType::F16, &[64, 32, 3, 3], &params));
    assert!(applies(DType::F16, &[128, 64, 1, 1], &params));
    assert!(!applies(DType::F32, &[64, 32, 3, 3], &params));
    // Fewer than 8 channels are padded; other counts must be multiples of 8.
    assert!(applies(DType::F16, &[64, 3, 7, 7], &params));
    assert!(applies(DType::F16, &[64, 40, 3, 3], &params));
    assert!(!applies(DType::F16, &[64, 12, 3, 3], &params));
    assert!(!applies(DType::F16, &[96, 32, 3, 3], &params));
    let grouped = Conv2dParams {
        groups: 2,
        ..params
    };
    assert!(!applies(DType::F16, &[64, 32, 3, 3], &grouped));
}

/// The flat patch blocks take stride-1 convolutions whose padded width fits their patch and
/// whose output channels their columns divide; the blocks of rows take any width.
#[test]
fn flat_patch_blocks_apply_up_to_their_width() {
    let params = |stride, padding| Conv2dParams {
        stride: (stride, stride),
        padding: (padding, padding),
        dilation: (1, 1),
        groups: 1,
    };
    let input = |width: usize| Layout::contiguous(&[2, 64, 8, width]);
    let weight = |out: usize| Layout::contiguous(&[out, 64, 3, 3]);
    for tile in PatchTile::ALL {
        let Some(limit) = tile.flat_width() else {
            // Blocks of rows: any width.
            let wide = patch_applies(&input(200), &weight(128), &params(1, 1), tile);
            assert!(wide, "{tile:?}");
            continue;
        };
        // Padded width = width + 2: up to the limit, not past it.
        let (fits, wider) = (input(limit - 2), input(limit - 1));
        let out = tile.columns();
        assert!(
            patch_applies(&fits, &weight(out), &params(1, 1), tile),
            "{tile:?}"
        );
        assert!(
            !patch_applies(&wider, &weight(out), &params(1, 1), tile),
            "{tile:?}"
        );
        // Stride 2: never (the blocks of rows take it where their patch fits).
        assert!(
            !patch_applies(&fits, &weight(out), &params(2, 1), tile),
            "{tile:?}"
        );
        // Output channels the block's columns do not divide (192 for a 128-column block).
        if out == 128 {
            assert!(
                !patch_applies(&fits, &weight(192), &params(1, 1), tile),
                "{tile:?}"
            );
        }
    }
}

/// Values in [-1, 1) from a seed, rounded to f16.
fn values(len: usize, seed: usize) -> Vec<f16> {
    (0..len)
        .map(|i| f16::from_f32((((i * 37 + seed * 101) % 199) as f32 - 99.0) / 99.0))
        .collect()
}

/// One case: input shape, output channels, kernel, params, epilogue (residual, activation).
struct Case {
    input: [usize; 4],
    out_channels: usize,
    kernel: (usize, usize),
    params: Conv2dParams,
    epilogue: Option<(bool, EpilogueActivation)>,
}

fn cases() -> Vec<Case> {
    let params = |stride, padding, dilation| Conv2dParams {
        stride: (stride, stride),
        padding: (padding, padding),
        dilation: (dilation, dilation),
        groups: 1,
    };
    vec![
        // 3x3 same padding, 162 pixels (a partial tile), two k-blocks per tap.
        Case {
            input: [2, 64, 9, 9],
            out_channels: 64,
            kernel: (3, 3),
            params: params(1, 1, 1),
            epilogue: None,
        },
        // Stride 2, 128 channels out, with the full epilogue.
        Case {
            input: [3, 32, 11, 10],
            out_channels: 128,
            kernel: (3, 3),
            params: params(2, 1, 1),
            epilogue: Some((true, EpilogueActivation::Relu)),
        },
        // 1x1 stride 2 (a ResNet shortcut) with scale and shift only.
        Case {
            input: [2, 32, 8, 8],
            out_channels: 64,
            kernel: (1, 1),
            params: params(2, 0, 1),
            epilogue: Some((false, EpilogueActivation::Identity)),
        },
        // 3x3 of stride 2 into 128 channels (the stride-2 patch kernel: `conv/nhwc/patch.rs`),
        // residual and ReLU; and over an output 20 columns wide (a partial column block).
        Case {
            input: [2, 16, 13, 18],
            out_channels: 128,
            kernel: (3, 3),
            params: params(2, 1, 1),
            epilogue: Some((true, EpilogueActivation::Relu)),
        },
        Case {
            input: [1, 48, 9, 40],
            out_channels: 128,
            kernel: (3, 3),
            params: params(2, 1, 1),
            epilogue: None,
        },
        // 8 x 8 planes (16-byte packed stores), residual and ReLU.
        Case {
            input: [2, 64, 8, 8],
            out_channels: 128,
            kernel: (3, 3),
            params: params(1, 1, 1),
            epilogue: Some((true, EpilogueActivation::Relu)),
        },
        // A network's stem: 3 channels (padded to 8), 7x7, stride 2, padding 3, with the
        // batch norm and ReLU epilogue.
        Case {
            input: [1, 3, 12, 10],
            out_channels: 64,
            kernel: (7, 7),
            params: params(2, 3, 1),
            epilogue: Some((false, EpilogueActivation::Relu)),
        },
        // 4 channels, 5x5, stride 2, even padding (the space-to-depth path without a shift),
        // residual and ReLU.
        Case {
            input: [2, 4, 10, 12],
            out_channels: 64,
            kernel: (5, 5),
            params: params(2, 2, 1),
            epilogue: Some((true, EpilogueActivation::Relu)),
        },
        // 1 channel, 3x3, stride 2, padding 1, odd sizes (the plain padded path).
        Case {
            input: [1, 1, 9, 7],
            out_channels: 64,
            kernel: (3, 3),
            params: params(2, 1, 1),
            epilogue: None,
        },
        // 3 channels, 3x3, stride 2, padding 1 over even sizes: space-to-depth to a 2x2
        // stride-1 convolution of 16 channels (the patch kernel's smallest side).
        Case {
            input: [2, 3, 10, 14],
            out_channels: 64,
            kernel: (3, 3),
            params: params(2, 1, 1),
            epilogue: Some((false, EpilogueActivation::Relu)),
        },
        // 40 channels: K = 360, the last k-block partly past K.
        Case {
            input: [1, 40, 6, 7],
            out_channels: 128,
            kernel: (3, 3),
            params: params(1, 1, 1),
            epilogue: None,
        },
        // Stride 2 over odd and even sizes with 64 channels (the input gradient's four
        // phases: 1x1, 1x2, 2x1 and 2x2 sub-kernels), residual and ReLU.
        Case {
            input: [2, 64, 9, 8],
            out_channels: 64,
            kernel: (3, 3),
            params: params(2, 1, 1),
            epilogue: Some((true, EpilogueActivation::Relu)),
        },
        // A 1x1 shortcut of stride 2 on 64 channels over odd sizes (the input gradient's
        // odd rows and columns stay zero).
        Case {
            input: [2, 64, 7, 5],
            out_channels: 128,
            kernel: (1, 1),
            params: params(2, 0, 1),
            epilogue: None,
        },
        // A 1x1 shortcut of stride 2 whose pixels span a transposing copy's tile: their
        // channels-last copy goes through a dense copy first (`channels_last_copy`).
        Case {
            input: [1, 32, 16, 18],
            out_channels: 64,
            kernel: (1, 1),
            params: params(2, 0, 1),
            epilogue: Some((true, EpilogueActivation::Identity)),
        },
        // 2x2 with padding 1 into 128 channels (an 8 x 8 output over a 9 x 9 padded grid:
        // the flat patch blocks' emulated case), residual and ReLU.
        Case {
            input: [2, 64, 7, 7],
            out_channels: 128,
            kernel: (2, 2),
            params: params(1, 1, 1),
            epilogue: Some((true, EpilogueActivation::Relu)),
        },
        // Dilation 2, padding 2.
        Case {
            input: [1, 32, 7, 9],
            out_channels: 64,
            kernel: (3, 3),
            params: params(1, 2, 2),
            epilogue: None,
        },
    ]
}

/// Every case through every tile that divides its channels, against the CPU's f32
/// convolution of the same f16 values (and the CPU's epilogue).
fn check_all(
    device: &crate::backend::gpu::runtime::device::GpuDevice,
    emulated: bool,
    patch_runs: &mut usize,
) {
    let limit = device.context().limits.max_compute_workgroup_storage_size;
    for case in cases() {
        let [n, c, h, w] = case.input;
        let o = case.out_channels;
        let (kh, kw) = case.kernel;
        let x = values(n * c * h * w, 1);
        let weight = values(o * c * kh * kw, 2);
        let x_layout = Layout::contiguous(&case.input);
        let w_layout = Layout::contiguous(&[o, c, kh, kw]);
        let widen = |v: &[f16]| CpuStorage::F32(v.iter().map(|x| x.to_f32()).collect());
        let scale: Vec<f32> = (0..o).map(|i| 0.5 + (i % 7) as f32 / 7.0).collect();
        let shift: Vec<f32> = (0..o).map(|i| (i % 5) as f32 / 5.0 - 0.4).collect();
        let channel_layout = Layout::contiguous(&[o]);
        let cpu_conv = widen(&x)
            .conv2d(&x_layout, &widen(&weight), &w_layout, &case.params)
            .unwrap();
        let out_shape = cpu_conv_shape(&case, h, w);
        let out_layout = Layout::contiguous(&out_shape);
        let out_len: usize = out_shape.iter().product();
        let residual = values(out_len, 3);
        let (scale_cpu, shift_cpu) = (
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(scale.clone())),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(shift.clone())),
        );
        let residual_cpu = widen(&residual);
        let expected = match case.epilogue {
            None => cpu_conv.clone(),
            Some((with_residual, activation)) => widen(&x)
                .conv2d_epilogue(
                    &x_layout,
                    &widen(&weight),
                    &w_layout,
                    &case.params,
                    &Epilogue {
                        scale: (&scale_cpu, &channel_layout),
                        shift: (&shift_cpu, &channel_layout),
                        residual: with_residual.then_some((&residual_cpu, &out_layout)),
                        activation,
                    },
                    MemoryFormat::Contiguous,
                )
                .unwrap(),
        };
        let CpuStorage::F32(expected) = expected else {
            panic!("dtype changed")
        };
        let upload = |v: Vec<f16>| {
            GpuStorage::from_cpu(
                device,
                &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(v)),
            )
            .unwrap()
        };
        let (gx, gw) = (upload(x.clone()), upload(weight.clone()));
        let upload32 = |v: Vec<f32>| {
            GpuStorage::from_cpu(
                device,
                &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(v)),
            )
            .unwrap()
        };
        let (g_scale, g_shift, g_residual) = (
            upload32(scale.clone()),
            upload32(shift.clone()),
            upload(residual.clone()),
        );
        let epilogue = case.epilogue.map(|(with_residual, activation)| Epilogue {
            scale: (&g_scale, &channel_layout),
            shift: (&g_shift, &channel_layout),
            residual: with_residual.then_some((&g_residual, &out_layout)),
            activation,
        });
        let bound = epilogue
            .as_ref()
            .map(|e| BoundEpilogue::new("test", e, &out_shape, DType::F16).unwrap());
        // The channels-last runs: the input already channels-last (read without a copy where
        // no channels are padded), the row-major residual bound channels-last, the output
        // read back through its channels-last layout.
        let channels_last = MemoryFormat::ChannelsLast;
        let x_last_layout = channels_last.layout(&case.input);
        let gx_last = gx.copy_strided(&x_layout.permute(&[0, 2, 3, 1])).unwrap();
        let bound_last = epilogue.as_ref().map(|e| {
            BoundEpilogue::new_in("test", e, &out_shape, DType::F16, channels_last).unwrap()
        });
        let row_major =
            |out: GpuStorage| out.copy_strided(&channels_last.layout(&out_shape)).unwrap();
        // Emulated, one channels-last tile a case (lavapipe compiles each emulated kernel
        // slowly); on tensor cores every tile.
        let mut last_runs = 0;
        for tile in NhwcTile::ALL {
            if !o.is_multiple_of(tile.columns()) || tile.workgroup_bytes() > limit {
                continue;
            }
            let what = format!("{tile:?} emulated {emulated} {:?}", case.input);
            let out = gx
                .conv2d_nhwc(
                    (&x_layout, &gw, &w_layout),
                    &case.params,
                    (tile, emulated, MemoryFormat::Contiguous),
                    bound.as_ref(),
                )
                .unwrap()
                .expect("the kernel applies");
            compare(&expected, out, &what);
            if emulated && last_runs > 0 {
                continue;
            }
            last_runs += 1;
            let out = gx_last
                .conv2d_nhwc(
                    (&x_last_layout, &gw, &w_layout),
                    &case.params,
                    (tile, emulated, channels_last),
                    bound_last.as_ref(),
                )
                .unwrap()
                .expect("the kernel applies");
            compare(&expected, row_major(out), &format!("{what} channels-last"));
        }
        // The patch kernels where they apply (stride 1, or a stem through space-to-depth;
        // 16-channel multiples) and fit the device's workgroup memory.
        for tile in PatchTile::ALL {
            if !patch_applies(&x_layout, &w_layout, &case.params, tile) {
                continue;
            }
            if emulated && !PATCH_EMULATED.contains(&(case.input, tile)) {
                continue;
            }
            let out = gx
                .conv2d_patch(
                    (&x_layout, &gw, &w_layout),
                    &case.params,
                    (tile, emulated, MemoryFormat::Contiguous),
                    bound.as_ref(),
                )
                .unwrap();
            let Some(out) = out else {
                // Only a kernel over the device's workgroup memory may decline.
                assert!(
                    limit < 48 * 1024 || tile.workgroup_bytes(4) > limit,
                    "{tile:?} {:?} declined",
                    case.input
                );
                continue;
            };
            *patch_runs += 1;
            let what = format!("{tile:?} emulated {emulated} {:?}", case.input);
            compare(&expected, out, &what);
            // Channels-last: emulated for the partial block and the residual case (compile
            // time), every case on tensor cores.
            if emulated && case.input[1] != 64 {
                continue;
            }
            let out = gx_last
                .conv2d_patch(
                    (&x_last_layout, &gw, &w_layout),
                    &case.params,
                    (tile, emulated, channels_last),
                    bound_last.as_ref(),
                )
                .unwrap()
                .expect("the patch kernel ran row-major");
            compare(&expected, row_major(out), &format!("{what} channels-last"));
        }
    }
}

/// The patch kernels emulated on every f16 device, as (case input, tile): lavapipe takes 10
/// to 30 s to compile each emulated patch kernel, so four keys cover a partial block both
/// ways without packed stores, 128 output channels with packed stores, residual and ReLU, the
/// space-to-depth stem, and the 64- and 128-channel flat blocks over two images of a 9-pixel
/// padded grid with residual and ReLU (2 x 2: their 3 x 3 keys pass lavapipe's 32 KiB); the
/// hardware test runs every case through every tile.
const PATCH_EMULATED: [([usize; 4], PatchTile); 5] = [
    ([2, 64, 9, 9], PatchTile::Rows16Columns64),
    ([2, 64, 8, 8], PatchTile::Rows8Columns128),
    ([2, 3, 10, 14], PatchTile::Rows16Columns64),
    ([2, 64, 7, 7], PatchTile::Flat16Columns64),
    ([2, 64, 7, 7], PatchTile::Flat16Columns128),
];

/// `actual` (f16) equals `expected` (the CPU's f32) within f16 rounding.
fn compare(expected: &[f32], actual: GpuStorage, what: &str) {
    let CpuStorage::F16(actual) = actual.to_cpu().unwrap() else {
        panic!("dtype changed")
    };
    assert_eq!(actual.len(), expected.len());
    for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
        let y = y.to_f32();
        assert!(
            (x - y).abs() <= 3e-3 * (1.0 + x.abs()),
            "{what}: element {i}: {x} vs {y}"
        );
    }
}

/// The weight gradient of every case through every key (column count dividing its output
/// channels, k-block) whose workgroup memory the device has, against the CPU's f32 gradient of the same f16 values.
fn check_weight_gradients(
    device: &crate::backend::gpu::runtime::device::GpuDevice,
    emulated: bool,
) {
    for (seed, case) in cases().into_iter().enumerate() {
        let [n, c, h, w] = case.input;
        let o = case.out_channels;
        let (kh, kw) = case.kernel;
        let out_shape = cpu_conv_shape(&case, h, w);
        let out_len: usize = out_shape.iter().product();
        let x = values(n * c * h * w, seed + 4);
        let g = values(out_len, seed + 7);
        let (x_layout, g_layout) = (
            Layout::contiguous(&case.input),
            Layout::contiguous(&out_shape),
        );
        let weight_shape = [o, c, kh, kw];
        let widen = |v: &[f16]| CpuStorage::F32(v.iter().map(|x| x.to_f32()).collect());
        let CpuStorage::F32(expected) = widen(&x)
            .conv2d_backward_weight(
                &x_layout,
                &widen(&g),
                &g_layout,
                &case.params,
                &weight_shape,
            )
            .unwrap()
        else {
            panic!("dtype changed")
        };
        let upload = |v: Vec<f16>| {
            GpuStorage::from_cpu(
                device,
                &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(v)),
            )
            .unwrap()
        };
        let (gx, gg) = (upload(x.clone()), upload(g.clone()));
        let keys = ConvNhwcWeightKey::all().into_iter().filter(|key| {
            key.emulated == emulated
                && o.is_multiple_of(key.columns)
                && key.workgroup_bytes()
                    <= device.context().limits.max_compute_workgroup_storage_size
        });
        for key in keys {
            let columns = (key.columns, key.k_block);
            let out = gx
                .conv2d_backward_weight_nhwc(
                    (&x_layout, &gg, &g_layout),
                    &case.params,
                    &weight_shape,
                    key,
                )
                .unwrap()
                .expect("the kernel applies");
            let CpuStorage::F16(actual) = out.to_cpu().unwrap() else {
                panic!("dtype changed")
            };
            assert_eq!(actual.len(), expected.len());
            for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
                let y = y.to_f32();
                assert!(
                    (x - y).abs() <= 3e-3 * (1.0 + x.abs()),
                    "weight gradient, (columns, k-block) {columns:?}, emulated {emulated}, {:?}: element {i}: {x} vs {y}",
                    case.input
                );
            }
        }
    }
}

/// The undilated cases' input gradients through every tile that divides the input channels,
/// against the CPU's f32 input gradient of the same f16 values.
fn check_input_gradients(device: &crate::backend::gpu::runtime::device::GpuDevice, emulated: bool) {
    let mut checked = 0;
    for (seed, case) in cases().into_iter().enumerate() {
        let [_, c, h, w] = case.input;
        let o = case.out_channels;
        let (kh, kw) = case.kernel;
        if case.params.dilation != (1, 1) {
            continue;
        }
        let out_shape = cpu_conv_shape(&case, h, w);
        let g = values(out_shape.iter().product(), seed + 11);
        let weight = values(o * c * kh * kw, seed + 12);
        let (g_layout, w_layout) = (
            Layout::contiguous(&out_shape),
            Layout::contiguous(&[o, c, kh, kw]),
        );
        let expected = cpu_input_gradient(&case, &g, &weight);
        let upload = |v: Vec<f16>| {
            GpuStorage::from_cpu(
                device,
                &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(v)),
            )
            .unwrap()
        };
        let (gg, gw) = (upload(g.clone()), upload(weight.clone()));
        for tile in NhwcTile::ALL {
            if !c.is_multiple_of(tile.columns())
                || !super::applies(DType::F16, &[c, o, kh, kw], &case.params)
            {
                continue;
            }
            let Some(out) = gg
                .conv2d_backward_input_nhwc(
                    (&g_layout, &gw, &w_layout),
                    &case.params,
                    &case.input,
                    (tile, emulated),
                )
                .unwrap()
            else {
                continue;
            };
            checked += 1;
            let CpuStorage::F16(actual) = out.to_cpu().unwrap() else {
                panic!("dtype changed")
            };
            assert_eq!(actual.len(), expected.len());
            for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
                let y = y.to_f32();
                assert!(
                    (x - y).abs() <= 3e-3 * (1.0 + x.abs()),
                    "input gradient {tile:?} emulated {emulated} {:?}: element {i}: {x} vs {y}",
                    case.input
                );
            }
        }
    }
    assert!(checked >= 4, "only {checked} input-gradient runs");
}

/// The stride-1 input gradients through the patch kernel (the weight read flipped), against
/// the CPU; emulated, the cases of [`PATCH_EMULATED`] only (the same keys as the forward's).
fn check_patch_input_gradients(
    device: &crate::backend::gpu::runtime::device::GpuDevice,
    emulated: bool,
) -> usize {
    let mut checked = 0;
    for (seed, case) in cases().into_iter().enumerate() {
        let [_, c, h, w] = case.input;
        let o = case.out_channels;
        let (kh, kw) = case.kernel;
        let out_shape = cpu_conv_shape(&case, h, w);
        let (g_layout, w_layout) = (
            Layout::contiguous(&out_shape),
            Layout::contiguous(&[o, c, kh, kw]),
        );
        for tile in PatchTile::ALL {
            let applies =
                patch_input_gradient_applies(&g_layout, &w_layout, &case.params, &case.input, tile);
            if !applies || (emulated && !PATCH_EMULATED.iter().any(|(_, t)| *t == tile)) {
                continue;
            }
            let g = values(out_shape.iter().product(), seed + 21);
            let weight = values(o * c * kh * kw, seed + 22);
            let expected = cpu_input_gradient(&case, &g, &weight);
            let upload = |v: Vec<f16>| {
                GpuStorage::from_cpu(
                    device,
                    &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(v)),
                )
                .unwrap()
            };
            let Some(out) = upload(g)
                .conv2d_backward_input_patch(
                    (&g_layout, &upload(weight), &w_layout),
                    &case.params,
                    &case.input,
                    (tile, emulated),
                )
                .unwrap()
            else {
                continue;
            };
            checked += 1;
            let what = format!(
                "input gradient {tile:?} emulated {emulated} {:?}",
                case.input
            );
            compare(&expected, out, &what);
        }
    }
    checked
}

/// The CPU's f32 input gradient of `case` for the output gradient `g` and `weight` (f16
/// values).
fn cpu_input_gradient(case: &Case, g: &[f16], weight: &[f16]) -> Vec<f32> {
    let [_, c, h, w] = case.input;
    let (kh, kw) = case.kernel;
    let widen = |v: &[f16]| CpuStorage::F32(v.iter().map(|x| x.to_f32()).collect());
    let CpuStorage::F32(expected) = widen(g)
        .conv2d_backward_input(
            &Layout::contiguous(&cpu_conv_shape(case, h, w)),
            &widen(weight),
            &Layout::contiguous(&[case.out_channels, c, kh, kw]),
            &case.params,
            &case.input,
        )
        .unwrap()
    else {
        panic!("dtype changed")
    };
    (expected).into_vec()
}

fn cpu_conv_shape(case: &Case, h: usize, w: usize) -> [usize; 4] {
    let p = &case.params;
    let (kh, kw) = case.kernel;
    let oh = (h + 2 * p.padding.0 - p.dilation.0 * (kh - 1) - 1) / p.stride.0 + 1;
    let ow = (w + 2 * p.padding.1 - p.dilation.1 * (kw - 1) - 1) / p.stride.1 + 1;
    [case.input[0], case.out_channels, oh, ow]
}

#[test]
fn emulated_kernels_match_cpu() {
    let Some(device) = crate::backend::tests::support::f16_gpu_device() else {
        return;
    };
    let mut patch_runs = 0;
    check_all(&device, true, &mut patch_runs);
    assert_eq!(patch_runs, PATCH_EMULATED.len());
    check_weight_gradients(&device, true);
    check_input_gradients(&device, true);
    // [2, 64, 8, 8] -> 128 (no padding past the kernel) through the 128-column tile with
    // the forward's key.
    assert!(check_patch_input_gradients(&device, true) >= 1);
}

#[test]
fn hardware_kernels_match_cpu() {
    let Some(device) = crate::backend::tests::support::gpu_device() else {
        return;
    };
    if !device.context().coop.available {
        crate::backend::tests::support::skip_missing(
            &device,
            crate::backend::tests::support::Requirement::Coop,
            "the test",
        );
        return;
    }
    let mut patch_runs = 0;
    check_all(&device, false, &mut patch_runs);
    // 3x3 of 64 channels (a partial block both ways; 128 outputs, both tiles, packed
    // stores), the 2x2, 3x3 and 4x4 (the 7x7 stem's) space-to-depth stems.
    assert!(patch_runs >= 6, "only {patch_runs} patch-kernel runs");
    check_weight_gradients(&device, false);
    check_input_gradients(&device, false);
    assert!(check_patch_input_gradients(&device, false) >= 2);
}
