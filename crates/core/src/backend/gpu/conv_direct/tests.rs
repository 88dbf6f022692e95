//! The direct convolution against the CPU's: naga validation of every instantiation, and the
//! forward (with and without an epilogue) for few-channel inputs with awkward geometry (a stem
//! 7x7 stride 2, partial tiles, dilation, padding wider than a tap, more than 64 output
//! channels, a strided input view), F32 and F16.

use super::super::conv_epilogue::{BoundEpilogue, ConvEpilogueKey};
use super::super::conv_gemm::testing::{check, gpu, params, upload, values, Case};
use super::super::kernels::KernelKey;
use super::applies;
use crate::backend::contract::Epilogue;
use crate::backend::cpu::CpuStorage;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::op::EpilogueActivation;

#[test]
fn direct_kernels_validate() {
    for dtype in [DType::F32, DType::F16] {
        let epilogues = std::iter::once(None).chain(ConvEpilogueKey::all().into_iter().map(Some));
        for epilogue in epilogues {
            let source = KernelKey::Conv2dDirect { dtype, epilogue }.source();
            if let Err(error) = crate::backend::gpu::kernel_catalog::naga_check(&source) {
                panic!("{dtype:?} {epilogue:?}: {error}");
            }
        }
    }
    assert!(applies(
        DType::F32,
        &[64, 3, 7, 7],
        &params([2, 2, 3, 3, 1, 1])
    ));
    assert!(!applies(
        DType::F32,
        &[64, 16, 3, 3],
        &params([1, 1, 1, 1, 1, 1])
    ));
    assert!(!applies(
        DType::F64,
        &[64, 3, 3, 3],
        &params([1, 1, 1, 1, 1, 1])
    ));
    // A patch beyond the staged array: 11 x 11 taps at stride 4.
    assert!(!applies(
        DType::F32,
        &[8, 3, 11, 11],
        &params([4, 4, 0, 0, 1, 1])
    ));
}

#[test]
fn direct_matches_cpu() {
    let Some(device) = gpu() else { return };
    // name, [n, c, h, w], o, [kh, kw], geometry, strided input.
    #[rustfmt::skip]
    let cases: [Case; 5] = [
        ("stem 7x7 stride 2", [2, 3, 37, 41], 64, [7, 7], [2, 2, 3, 3, 1, 1], false),
        ("3x3 pad 1, 70 channels", [1, 2, 19, 33], 70, [3, 3], [1, 1, 1, 1, 1, 1], false),
        ("1 channel dilated", [3, 1, 12, 13], 8, [3, 2], [1, 2, 2, 0, 2, 1], false),
        ("5x5 pad 4", [1, 4, 9, 9], 5, [5, 5], [1, 1, 4, 4, 1, 1], false),
        ("strided view", [2, 3, 10, 11], 16, [3, 3], [2, 1, 1, 1, 1, 1], true),
    ];
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16 && !device.supports_f16() {
            eprintln!("SKIP: F16 (no SHADER_F16)");
            continue;
        }
        for (name, [n, c, h, w], o, [kh, kw], geometry, strided) in cases {
            let params = params(geometry);
            assert!(applies(dtype, &[o, c, kh, kw], &params), "{name}");
            let (input_len, layout) = if strided {
                let mut l = Layout::contiguous(&[n, h, c + 1, w]).permute(&[0, 2, 1, 3]);
                l.shape[1] = c;
                l.offset = 1;
                (n * h * (c + 1) * w + 1, l)
            } else {
                (n * c * h * w, Layout::contiguous(&[n, c, h, w]))
            };
            let weight_layout = Layout::contiguous(&[o, c, kh, kw]);
            let x = values(input_len, 1, dtype);
            let k = values(o * c * kh * kw, 2, dtype);
            let cpu = |v: &[f32]| CpuStorage::F32(v.to_vec());
            let expected = |epilogue: Option<&Epilogue<'_, CpuStorage>>| -> Vec<f32> {
                let out = match epilogue {
                    None => cpu(&x).conv2d(&layout, &cpu(&k), &weight_layout, &params),
                    Some(e) => {
                        cpu(&x).conv2d_epilogue(&layout, &cpu(&k), &weight_layout, &params, e)
                    }
                };
                match out.unwrap() {
                    CpuStorage::F32(v) => v,
                    _ => panic!("dtype changed"),
                }
            };
            let (xg, kg) = (upload(&device, &x, dtype), upload(&device, &k, dtype));
            let out = xg
                .conv2d_direct(&layout, &kg, &weight_layout, &params, None)
                .unwrap();
            check(&out, &expected(None), &format!("{name} {dtype:?}"));
            // With batch norm, residual and relu in the store.
            let out_shape = crate::geometry::Conv2dShape::new(&layout, &weight_layout, &params)
                .unwrap()
                .output_shape();
            let numel: usize = out_shape.iter().product();
            let (scale, shift, residual) = (
                values(o, 3, DType::F32),
                values(o, 4, DType::F32),
                values(numel, 5, dtype),
            );
            let (vector, dense) = (Layout::contiguous(&[o]), Layout::contiguous(&out_shape));
            let (sc, sh, re) = (cpu(&scale), cpu(&shift), cpu(&residual));
            let reference = expected(Some(&Epilogue {
                scale: (&sc, &vector),
                shift: (&sh, &vector),
                residual: Some((&re, &dense)),
                activation: EpilogueActivation::Relu,
            }));
            let (sg, hg, rg) = (
                upload(&device, &scale, DType::F32),
                upload(&device, &shift, DType::F32),
                upload(&device, &residual, dtype),
            );
            let epilogue = Epilogue {
                scale: (&sg, &vector),
                shift: (&hg, &vector),
                residual: Some((&rg, &dense)),
                activation: EpilogueActivation::Relu,
            };
            let bound = BoundEpilogue::new("test", &epilogue, &out_shape, dtype).unwrap();
            let out = xg
                .conv2d_direct(&layout, &kg, &weight_layout, &params, Some(&bound))
                .unwrap();
            check(&out, &reference, &format!("{name} {dtype:?} with epilogue"));
        }
    }
}
