//! Bad input returns the right `Error`, naming the op and the operands; nothing panics.

use anygrad_core::{Conv2dParams, DType, Device, Error, MemoryFormat, Tensor};

fn mismatches(device: &Device) {
    let a = Tensor::zeros(&[2, 3], DType::F32, device).unwrap();
    let b = Tensor::zeros(&[4, 5], DType::F32, device).unwrap();
    let error = a.matmul(&b).unwrap_err();
    assert!(
        matches!(error, Error::ShapeMismatch { op: "matmul", .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (inner dims 3 != 4)"
    );

    let error = a
        .add(&Tensor::zeros(&[4], DType::F32, device).unwrap())
        .unwrap_err();
    assert!(
        matches!(error, Error::ShapeMismatch { op: "add", .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("[2, 3] and [4]"), "{error}");

    // Mixed dtypes promote as in PyTorch; U32 with I32 has no common dtype here (int64).
    let unsigned = Tensor::zeros(&[2, 3], DType::U32, device).unwrap();
    let ints = Tensor::zeros(&[2, 3], DType::I32, device).unwrap();
    let error = unsigned.add(&ints).unwrap_err();
    assert!(
        matches!(
            error,
            Error::DTypeMismatch {
                op: "add",
                lhs: DType::U32,
                rhs: DType::I32
            }
        ),
        "{error:?}"
    );

    if device.is_gpu() {
        let cpu = Tensor::zeros(&[2, 3], DType::F32, &Device::Cpu).unwrap();
        let error = a.add(&cpu).unwrap_err();
        assert!(
            matches!(error, Error::DeviceMismatch { op: "add", .. }),
            "{error:?}"
        );
    }
}

fn bad_arguments(device: &Device) {
    let x = Tensor::zeros(&[2, 3], DType::F32, device).unwrap();
    assert!(matches!(
        x.reshape([4, 2]).unwrap_err(),
        Error::InvalidShape { op: "reshape", .. }
    ));
    assert!(matches!(
        x.sum(&[2], false).unwrap_err(),
        Error::InvalidShape { op: "sum", .. }
    ));
    assert!(matches!(
        x.narrow(1, 2, 5).unwrap_err(),
        Error::InvalidShape { op: "narrow", .. }
    ));
    assert!(matches!(
        x.permute(&[0, 0]).unwrap_err(),
        Error::InvalidShape { op: "permute", .. }
    ));
    assert!(matches!(
        x.exp().unwrap().log().unwrap().transpose(0, 5).unwrap_err(),
        Error::InvalidShape { .. }
    ));
    assert!(Tensor::from_vec(vec![1.0f32; 5], &[2, 3], device).is_err());
    assert!(x.to_vec::<i32>().is_err());
    assert!(x.item_f64().is_err());
    assert!(
        x.backward().is_err(),
        "backward on a tensor without a graph"
    );
    let tracked = x.requires_grad_(true).mul_scalar(2.0).unwrap();
    assert!(
        matches!(tracked.backward().unwrap_err(), Error::Autograd { .. }),
        "non-scalar backward"
    );
    let bad_index = Tensor::from_vec(vec![-1i32], &[1], device).unwrap();
    assert!(matches!(
        x.index_select(0, &bad_index)
            .and_then(|t| t.to_vec::<f32>())
            .unwrap_err(),
        Error::InvalidArgument {
            op: "index_select",
            ..
        }
    ));
    let float_index = Tensor::zeros(&[1], DType::F32, device).unwrap();
    assert!(x.gather(0, &float_index).is_err());
    let image = Tensor::zeros(&[1, 3, 4, 4], DType::F32, device).unwrap();
    let weight = Tensor::zeros(&[2, 2, 3, 3], DType::F32, device).unwrap();
    assert!(matches!(
        image
            .conv2d(&weight, None, Conv2dParams::default())
            .unwrap_err(),
        Error::ShapeMismatch { op: "conv2d", .. }
    ));
    let huge_kernel = Tensor::zeros(&[2, 3, 9, 9], DType::F32, device).unwrap();
    assert!(image
        .conv2d(&huge_kernel, None, Conv2dParams::default())
        .is_err());
    assert!(image.max_pool2d((0, 0), (1, 1), (0, 0)).is_err());
    // Channels-last needs [n, c, h, w].
    let error = x.contiguous_in(MemoryFormat::ChannelsLast).unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidArgument {
                op: "contiguous_in",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("4-D"), "{error}");
    assert!(Tensor::arange(0.0, 1.0, 0.0, DType::F32, device).is_err());
    assert!(Tensor::randint(3, 3, &[2], device).is_err());
    assert!(Tensor::cat(&[], 0).is_err());
    assert!(x.chunk(0, 0).is_err());
}

fn parse_devices(_device: &Device) {
    assert!(matches!(
        Device::parse("tpu:3").unwrap_err(),
        Error::InvalidArgument { op: "device", .. }
    ));
    assert_eq!(Device::parse("cpu").unwrap(), Device::Cpu);
    assert!(Device::parse("gpu:999").is_err());
}

anygrad_testing::device_tests!(mismatches, bad_arguments, parse_devices);
