//! Dense copies of views whose rows are contiguous (attention's heads: a `[B, T, H, D]` tensor
//! transposed to `[B, H, T, D]`, a chunk of a stacked projection, a narrowed batch at an
//! offset) equal the CPU's on every device, in F32, F16 and I32, next to views that do not
//! qualify for the GPU's row copy (rows of 6, an odd offset) and take the generic kernel.

use anygrad_core::{DType, Device, Tensor};

fn ramp(shape: &[usize], device: &Device) -> Tensor {
    let count: usize = shape.iter().product();
    let data: Vec<f32> = (0..count).map(|i| (i % 1021) as f32 - 500.0).collect();
    Tensor::from_vec(data, shape, device).unwrap()
}

fn views_copy_exactly(device: &Device) {
    let mut dtypes = vec![DType::F32, DType::I32];
    if anygrad_testing::f16_or_skip(device, "views_copy_exactly (f16)") {
        dtypes.push(DType::F16);
    }
    for dtype in dtypes {
        // The same views on `device` and, built independently, on the CPU (the reference must
        // not go through the device's copy).
        let views = |device: &Device| -> Vec<(&'static str, Tensor)> {
            let on = |t: Tensor| t.to_dtype(dtype).unwrap();
            // [B, T, H, D] -> [B, H, T, D].
            let heads = on(ramp(&[2, 5, 3, 8], device)).transpose(1, 2).unwrap();
            // The middle third of a stacked [B, T, 3 * 12] projection, 3 heads of 4.
            let stacked = on(ramp(&[2, 7, 36], device));
            let chunk = stacked.chunk(3, -1).unwrap()[1]
                .reshape([2, 7, 3, 4])
                .unwrap()
                .transpose(1, 2)
                .unwrap();
            // A batch narrowed at an offset (a multiple of 4), transposed.
            let narrowed = on(ramp(&[4, 6, 8], device))
                .narrow(0, 1, 2)
                .unwrap()
                .transpose(0, 1)
                .unwrap();
            // Rows of 6 and an odd offset: the generic kernel.
            let six = on(ramp(&[3, 4, 6], device)).transpose(0, 1).unwrap();
            let odd = on(ramp(&[3, 9], device)).narrow(1, 1, 8).unwrap();
            vec![
                ("heads", heads),
                ("chunk", chunk),
                ("narrowed", narrowed),
                ("rows of 6", six),
                ("odd offset", odd),
            ]
        };
        for ((name, view), (_, reference)) in views(device).into_iter().zip(views(&Device::Cpu)) {
            assert!(!view.is_contiguous(), "{name}");
            let dense = view.contiguous().unwrap();
            assert!(dense.is_contiguous());
            assert_eq!(
                dense.to_vec_f32().unwrap(),
                reference.contiguous().unwrap().to_vec_f32().unwrap(),
                "{name} {dtype:?} on {device}"
            );
        }
    }
}

anygrad_testing::device_tests!(views_copy_exactly);
