//! Every forward kernel with every epilogue against the CPU's `conv2d_epilogue` (itself the
//! convolution then the epilogue in f32): both implicit-GEMM tiles, Winograd F(2x2) and
//! F(4x4), F32 and F16, residual views that are dense and strided, and every fused kernel
//! validated by naga.

use super::{BoundEpilogue, ConvEpilogueKey};
use crate::backend::contract::Convolution;
use crate::backend::contract::Copying;
use crate::backend::contract::Epilogue;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::conv::gemm::testing::{check, gpu, params, upload, values};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::conv::winograd::WinogradTile;
use crate::backend::gpu::runtime::kernel::Kernel as _;
use crate::dtype::DType;
use crate::layout::{Layout, MemoryFormat};

#[test]
fn fused_kernels_validate() {
    for dtype in [DType::F32, DType::F16] {
        for epilogue in ConvEpilogueKey::all() {
            let mut keys: Vec<ConvKernel> = [false, true]
                .map(|wide| ConvKernel::Conv2d {
                    dtype,
                    wide,
                    epilogue: Some(epilogue),
                })
                .to_vec();
            keys.extend(WinogradTile::ALL.map(|tile| ConvKernel::Winograd {
                dtype,
                stage: crate::backend::gpu::conv::winograd::WinogradStage::Output,
                tile,
                epilogue: Some(epilogue),
            }));
            for key in keys {
                if let Err(error) =
                    crate::backend::gpu::runtime::shader_check::naga_check(&key.source())
                {
                    panic!("{key:?}: {error}");
                }
            }
        }
    }
}

/// One kernel choice of the forward pass.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    Tile { wide: bool },
    Winograd(WinogradTile),
}

#[test]
fn every_kernel_applies_every_epilogue() {
    let Some(device) = gpu() else { return };
    // name, [n, c, h, w], o, geometry [sh, sw, ph, pw, dh, dw]; 3x3 stride 1 also runs
    // Winograd. 136 channels: a partial second row tile; 7 x 9 outputs: partial Winograd
    // tiles and column tiles.
    let cases: [(&str, [usize; 4], usize, [usize; 6]); 2] = [
        ("3x3 pad 1", [2, 5, 7, 9], 136, [1, 1, 1, 1, 1, 1]),
        ("3x3 stride 2", [2, 6, 9, 8], 70, [2, 2, 1, 1, 1, 1]),
    ];
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16
            && !crate::backend::tests::support::has_or_skip(
                &device,
                crate::backend::tests::support::Requirement::F16,
                "the F16 cases",
            )
        {
            continue;
        }
        for (name, [n, c, h, w], o, geometry) in cases {
            let params = params(geometry);
            let input_layout = Layout::contiguous(&[n, c, h, w]);
            let weight_layout = Layout::contiguous(&[o, c, 3, 3]);
            let x = values(n * c * h * w, 1, dtype);
            let k = values(o * c * 9, 2, dtype);
            let out_shape =
                crate::geometry::Conv2dShape::new(&input_layout, &weight_layout, &params)
                    .unwrap()
                    .output_shape();
            let numel: usize = out_shape.iter().product();
            let scale: Vec<f32> = values(o, 3, DType::F32).iter().map(|v| 1.5 * v).collect();
            let shift = values(o, 4, DType::F32);
            // The residual as a strided view: `[n, oh, o, ow]` storage permuted, at offset 2.
            let [_, _, oh, ow] = out_shape;
            let residual = values(numel + 2, 5, dtype);
            let mut strided = Layout::contiguous(&[n, oh, o, ow]).permute(&[0, 2, 1, 3]);
            strided.offset = 2;
            let dense = Layout::contiguous(&out_shape);
            let cpu = |values: &[f32], dtype: DType| match dtype {
                DType::F16 => {
                    CpuStorage::F16(values.iter().map(|&v| half::f16::from_f32(v)).collect())
                }
                _ => CpuStorage::F32(crate::backend::cpu::HostBuffer::from(values.to_vec())),
            };
            let (x_cpu, k_cpu) = (cpu(&x, dtype), cpu(&k, dtype));
            let (scale_cpu, shift_cpu) = (cpu(&scale, DType::F32), cpu(&shift, DType::F32));
            let residual_cpu = cpu(&residual, dtype);
            let (x_gpu, k_gpu) = (upload(&device, &x, dtype), upload(&device, &k, dtype));
            let scale_gpu = upload(&device, &scale, DType::F32);
            let shift_gpu = upload(&device, &shift, DType::F32);
            let residual_gpu = upload(&device, &residual, dtype);
            let vector = Layout::contiguous(&[o]);
            let mut kernels = vec![Kernel::Tile { wide: false }, Kernel::Tile { wide: true }];
            if geometry[0] == 1 {
                kernels.extend(WinogradTile::ALL.map(Kernel::Winograd));
            }
            for key in ConvEpilogueKey::all() {
                for residual_layout in [&dense, &strided] {
                    if !key.residual && std::ptr::eq(residual_layout, &strided) {
                        continue;
                    }
                    let expected = x_cpu
                        .conv2d_epilogue(
                            &input_layout,
                            &k_cpu,
                            &weight_layout,
                            &params,
                            &Epilogue {
                                scale: (&scale_cpu, &vector),
                                shift: (&shift_cpu, &vector),
                                residual: key.residual.then_some((&residual_cpu, residual_layout)),
                                activation: key.activation,
                            },
                            MemoryFormat::Contiguous,
                        )
                        .unwrap();
                    let expected: Vec<f32> = match expected {
                        CpuStorage::F32(v) => (v).into_vec(),
                        CpuStorage::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
                        _ => panic!("dtype changed"),
                    };
                    let epilogue = Epilogue {
                        scale: (&scale_gpu, &vector),
                        shift: (&shift_gpu, &vector),
                        residual: key.residual.then_some((&residual_gpu, residual_layout)),
                        activation: key.activation,
                    };
                    let bound = BoundEpilogue::new("test", &epilogue, &out_shape, dtype).unwrap();
                    assert_eq!(bound.key, key);
                    for kernel in &kernels {
                        let out = match *kernel {
                            Kernel::Tile { wide } => x_gpu.conv2d_with(
                                &input_layout,
                                &k_gpu,
                                &weight_layout,
                                &params,
                                Some(wide),
                                Some(&bound),
                            ),
                            Kernel::Winograd(tile) => x_gpu.conv2d_winograd(
                                &input_layout,
                                &k_gpu,
                                &weight_layout,
                                &params,
                                tile,
                                Some(&bound),
                            ),
                        }
                        .unwrap();
                        let strided_residual = !std::ptr::eq(residual_layout, &dense);
                        check(
                            &out,
                            &expected,
                            &format!(
                                "{name} {dtype:?} {} {kernel:?} strided residual {strided_residual}",
                                key.name()
                            ),
                        );
                    }
                    // The primitive asked for a channels-last output (here the row-major
                    // result copied into it: no channels-last kernel for these channels), on
                    // the GPU and on the CPU: the same values through its layout.
                    let channels_last = MemoryFormat::ChannelsLast.layout(&out_shape);
                    let out = x_gpu
                        .conv2d_epilogue(
                            &input_layout,
                            &k_gpu,
                            &weight_layout,
                            &params,
                            &epilogue,
                            MemoryFormat::ChannelsLast,
                        )
                        .unwrap()
                        .copy_strided(&channels_last)
                        .unwrap();
                    check(
                        &out,
                        &expected,
                        &format!("{name} {dtype:?} {} channels-last", key.name()),
                    );
                    let cpu_epilogue = Epilogue {
                        scale: (&scale_cpu, &vector),
                        shift: (&shift_cpu, &vector),
                        residual: key.residual.then_some((&residual_cpu, residual_layout)),
                        activation: key.activation,
                    };
                    let cpu_last = Convolution::conv2d_epilogue(
                        &x_cpu,
                        &input_layout,
                        &k_cpu,
                        &weight_layout,
                        &params,
                        &cpu_epilogue,
                        MemoryFormat::ChannelsLast,
                    )
                    .unwrap()
                    .copy_strided(&channels_last)
                    .unwrap();
                    let cpu_last: Vec<f32> = match cpu_last {
                        CpuStorage::F32(v) => (v).into_vec(),
                        CpuStorage::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
                        _ => panic!("dtype changed"),
                    };
                    assert_eq!(cpu_last, expected, "{name} {dtype:?} CPU channels-last");
                }
            }
        }
    }
}
