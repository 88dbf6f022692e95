//! Tests of the Winograd convolution: naga validation of its kernels, and the forward and the
//! input gradient against the CPU's direct convolution for awkward shapes (odd output sizes,
//! so edge tiles are partial; padding 0, 1 and 2; a batch split into several chunks; strided
//! views of the input), in F32 and in F16 (f16 operands, f32 transforms and products).

use super::{WinogradStage, WinogradTile, CHUNK_BYTES};
use crate::backend::contract::Convolution;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::conv::gemm::testing::{check, gpu, params, upload, values};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::kernel::Kernel;
use crate::dtype::DType;
use crate::layout::Layout;

#[test]
fn winograd_kernels_validate() {
    assert!(super::applies(
        DType::F16,
        &[4, 4, 3, 3],
        &params([1, 1, 1, 1, 1, 1])
    ));
    assert!(!super::applies(
        DType::F64,
        &[4, 4, 3, 3],
        &params([1, 1, 1, 1, 1, 1])
    ));
    assert!(!super::applies(
        DType::F32,
        &[4, 4, 3, 3],
        &params([2, 2, 1, 1, 1, 1])
    ));
    assert!(super::applies_backward_input(
        DType::F32,
        &[4, 4, 3, 3],
        &params([1, 1, 2, 2, 1, 1])
    ));
    assert!(!super::applies_backward_input(
        DType::F32,
        &[4, 4, 3, 3],
        &params([1, 1, 3, 3, 1, 1])
    ));
    for dtype in [DType::F32, DType::F16] {
        for stage in [
            WinogradStage::Weight,
            WinogradStage::Input,
            WinogradStage::Output,
        ] {
            for tile in WinogradTile::ALL {
                let source = ConvKernel::Winograd {
                    dtype,
                    stage,
                    tile,
                    epilogue: None,
                }
                .source();
                if let Err(error) = crate::backend::gpu::runtime::shader_check::naga_check(&source)
                {
                    panic!("{stage:?} {tile:?} {dtype:?}: {error}");
                }
            }
        }
    }
}

/// `[n, c, h, w]`, output channels, padding, whether the input is a strided (transposed
/// channel/batch) view.
type Case = (&'static str, [usize; 4], usize, usize, bool);

#[test]
fn winograd_forward_and_input_gradient_match_cpu() {
    let Some(device) = gpu() else { return };
    #[rustfmt::skip]
    let cases: [Case; 7] = [
        ("pad 1, odd size", [2, 5, 9, 7], 6, 1, false),
        ("pad 0", [1, 3, 8, 10], 4, 0, false),
        ("pad 2", [2, 4, 5, 6], 3, 2, false),
        ("one pixel", [3, 2, 1, 1], 2, 1, false),
        ("strided input", [3, 8, 6, 5], 16, 1, true),
        ("partial 4x4 tiles", [2, 6, 11, 10], 5, 1, false),
        ("many channels", [1, 512, 6, 6], 4, 1, false),
    ];
    // F16 on the cases that differ most (edges, strides, long sums), to keep lavapipe quick.
    let f16_cases = ["pad 1, odd size", "strided input", "many channels"];
    // F(4x4) in f32 serves short channel sums only: the many-channel case must not offer it
    // in either direction (its error there exceeds this tolerance on hardware).
    assert_eq!(
        WinogradTile::candidates(DType::F32, 512),
        vec![WinogradTile::Two]
    );
    assert_eq!(WinogradTile::candidates(DType::F16, 512), WinogradTile::ALL);
    for (tile, dtype) in WinogradTile::ALL
        .into_iter()
        .flat_map(|tile| [(tile, DType::F32), (tile, DType::F16)])
    {
        if dtype == DType::F16
            && !crate::backend::tests::support::has_or_skip(
                &device,
                crate::backend::tests::support::Requirement::F16,
                &format!("Winograd {tile:?} F16"),
            )
        {
            continue;
        }
        for (name, [n, c, h, w], o, pad, strided) in cases {
            if dtype == DType::F16 && !f16_cases.contains(&name) {
                continue;
            }
            // Each variant where the tuner offers it: forward sums over c, the input
            // gradient over o (checked below with the same rule).
            let forward_offered = WinogradTile::candidates(dtype, c).contains(&tile);
            let backward_offered = WinogradTile::candidates(dtype, o).contains(&tile);
            if !forward_offered && !backward_offered {
                continue;
            }
            let name = format!("{name} {tile:?}");
            let geometry = params([1, 1, pad, pad, 1, 1]);
            let x_values = values(n * c * h * w, 1, dtype);
            let w_values = values(o * c * 9, 2, dtype);
            // A strided input: the values stored as [c, n, h, w], viewed as [n, c, h, w].
            let (x_stored, x_layout) = if strided {
                let mut stored = vec![0.0; x_values.len()];
                for ni in 0..n {
                    for ci in 0..c {
                        for p in 0..h * w {
                            stored[(ci * n + ni) * h * w + p] = x_values[(ni * c + ci) * h * w + p];
                        }
                    }
                }
                let layout = Layout {
                    shape: vec![n, c, h, w],
                    strides: vec![h * w, n * h * w, w, 1],
                    offset: 0,
                };
                (stored, layout)
            } else {
                (x_values.clone(), Layout::contiguous(&[n, c, h, w]))
            };
            let w_layout = Layout::contiguous(&[o, c, 3, 3]);
            let x_gpu = upload(&device, &x_stored, dtype);
            let w_gpu = upload(&device, &w_values, dtype);
            let x_cpu = CpuStorage::F32(crate::backend::cpu::HostBuffer::from(x_values.clone()));
            let w_cpu = CpuStorage::F32(crate::backend::cpu::HostBuffer::from(w_values.clone()));
            let x_dense = Layout::contiguous(&[n, c, h, w]);
            let expected = x_cpu
                .conv2d(&x_dense, &w_cpu, &w_layout, &geometry)
                .unwrap();
            let actual = x_gpu
                .conv2d_winograd(&x_layout, &w_gpu, &w_layout, &geometry, tile, None)
                .unwrap();
            let CpuStorage::F32(expected) = expected else {
                panic!()
            };
            if forward_offered {
                check(&actual, &expected, &format!("{name} forward {dtype:?}"));
            }
            // The input gradient of the same convolution for an output gradient `g`.
            let (oh, ow) = (h + 2 * pad - 2, w + 2 * pad - 2);
            let g_values = values(n * o * oh * ow, 3, dtype);
            let g_layout = Layout::contiguous(&[n, o, oh, ow]);
            let expected = CpuStorage::F32(crate::backend::cpu::HostBuffer::from(g_values.clone()))
                .conv2d_backward_input(&g_layout, &w_cpu, &w_layout, &geometry, &[n, c, h, w])
                .unwrap();
            let CpuStorage::F32(expected) = expected else {
                panic!()
            };
            let actual = upload(&device, &g_values, dtype)
                .conv2d_backward_input_winograd(
                    &g_layout,
                    &w_gpu,
                    &w_layout,
                    &geometry,
                    &[n, c, h, w],
                    tile,
                )
                .unwrap();
            if backward_offered {
                check(
                    &actual,
                    &expected,
                    &format!("{name} input gradient {dtype:?}"),
                );
            }
        }
    }
}

/// A batch larger than one chunk: images are split across several transform/GEMM rounds.
#[test]
fn winograd_splits_large_batches_into_chunks() {
    let Some(device) = gpu() else { return };
    // 16 * (c + o) * tiles * 4 bytes per image: 16 * 256 * 64 * 4 = 1 MiB.
    let (c, o, h, w) = (128usize, 128usize, 16usize, 16usize);
    let per_image = 16 * (c + o) * (h / 2) * (w / 2) * 4;
    let n = CHUNK_BYTES / per_image + 3;
    let geometry = params([1, 1, 1, 1, 1, 1]);
    let x_values = values(n * c * h * w, 4, DType::F32);
    let w_values = values(o * c * 9, 5, DType::F32);
    let x_layout = Layout::contiguous(&[n, c, h, w]);
    let w_layout = Layout::contiguous(&[o, c, 3, 3]);
    let expected = CpuStorage::F32(crate::backend::cpu::HostBuffer::from(x_values.clone()))
        .conv2d(
            &x_layout,
            &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(w_values.clone())),
            &w_layout,
            &geometry,
        )
        .unwrap();
    let CpuStorage::F32(expected) = expected else {
        panic!()
    };
    let actual = upload(&device, &x_values, DType::F32)
        .conv2d_winograd(
            &x_layout,
            &upload(&device, &w_values, DType::F32),
            &w_layout,
            &geometry,
            WinogradTile::Two,
            None,
        )
        .unwrap();
    check(&actual, &expected, "chunked batch");
}
