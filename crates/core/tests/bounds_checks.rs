//! The kernels that run without wgpu's runtime bounds checks (the trusted families: matmuls,
//! convolutions and their gradients, vec4 elementwise and fused kernels, row kernels,
//! transposing copies, max pooling, the tensor-core attention) give the same bits with the
//! checks on (`GpuDevice::set_bounds_checks`, `ANYGRAD_GPU_BOUNDS_CHECKS=on`): a kernel that
//! read past its operands would see zeros (or the last element) with the checks on and other
//! memory without them. Each family runs at the edges of its shapes: sizes that are not a
//! multiple of its tile, one-element and empty dims, and views at an offset into a larger
//! buffer. A profiled first pass shows which trusted families the workload reached.

use anygrad_core::gpu::GpuDevice;
use anygrad_core::{
    scaled_dot_product_attention, Conv2dParams, DType, Device, MemoryFormat, Result, Tensor,
};
use anygrad_testing::{f16_or_skip, gpu_has_or_skip, gpu_or_skip, random_tensor, Requirement};

/// A tensor of `shape` with deterministic values, tracked for gradients.
fn input(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    random_tensor(shape, seed, device).requires_grad_(true)
}

/// `a` viewed at an offset into a larger buffer: rows `1..` of a tensor with one row more.
fn offset_view(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    let mut larger = shape.to_vec();
    larger[0] += 1;
    random_tensor(&larger, seed, device)
        .narrow(0, 1, shape[0])
        .unwrap()
}

/// Every output of the workload, as bits (f16 outputs widened to f32 first).
fn bits(outputs: &[Tensor]) -> Vec<Vec<u32>> {
    outputs
        .iter()
        .map(|t| {
            t.to_dtype(DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f32::to_bits)
                .collect()
        })
        .collect()
}

/// Matmuls: tile edges, one-element and empty dims, batches, transposed and offset operands.
fn matmuls(device: &Device, dtype: DType, out: &mut Vec<Tensor>) -> Result<()> {
    let shapes: [(usize, usize, usize); 7] = [
        (1, 1, 1),
        (1, 7, 3),
        (17, 33, 65),
        (64, 64, 64),
        (130, 70, 129),
        (0, 5, 3),
        (4, 0, 6),
    ];
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        let a = input(&[m, k], 10 + i as u64, device).to_dtype(dtype)?;
        let b = input(&[k, n], 20 + i as u64, device).to_dtype(dtype)?;
        out.push(a.matmul(&b)?);
    }
    let a = random_tensor(&[3, 17, 9], 31, device).to_dtype(dtype)?;
    let b = random_tensor(&[3, 13, 9], 32, device).to_dtype(dtype)?;
    out.push(a.matmul(&b.transpose(1, 2)?)?);
    let a = offset_view(&[33, 40], 33, device).to_dtype(dtype)?;
    let b = offset_view(&[40, 24], 34, device).to_dtype(dtype)?;
    out.push(a.matmul(&b)?);
    // A matmul's gradients are matmuls of transposed operands.
    let a = input(&[19, 23], 35, device);
    let b = input(&[23, 11], 36, device);
    a.matmul(&b)?.sum_all()?.backward()?;
    out.extend([a.grad().unwrap(), b.grad().unwrap()]);
    Ok(())
}

/// Convolutions and their gradients: 1×1 and 3×3 (the Winograd shape), strides, padding,
/// one-pixel images, odd sizes, channels-last inputs.
fn convolutions(device: &Device, dtype: DType, out: &mut Vec<Tensor>) -> Result<()> {
    let cases = [
        ([1, 1, 1, 1], [1, 1, 1, 1], Conv2dParams::default()),
        (
            [2, 3, 7, 5],
            [4, 3, 3, 3],
            Conv2dParams {
                stride: (2, 2),
                padding: (1, 1),
                ..Default::default()
            },
        ),
        (
            [1, 5, 9, 9],
            [6, 5, 3, 3],
            Conv2dParams {
                padding: (1, 1),
                ..Default::default()
            },
        ),
        (
            [2, 16, 13, 11],
            [24, 16, 3, 3],
            Conv2dParams {
                padding: (1, 1),
                ..Default::default()
            },
        ),
        (
            [3, 8, 6, 6],
            [8, 2, 3, 3],
            Conv2dParams {
                groups: 4,
                ..Default::default()
            },
        ),
    ];
    for (i, (x_shape, w_shape, params)) in cases.into_iter().enumerate() {
        let x = input(&x_shape, 40 + i as u64, device);
        let w = input(&w_shape, 50 + i as u64, device);
        let y = x
            .to_dtype(dtype)?
            .conv2d(&w.to_dtype(dtype)?, None, params)?;
        y.to_dtype(DType::F32)?.sum_all()?.backward()?;
        out.extend([y, x.grad().unwrap(), w.grad().unwrap()]);
    }
    let x = random_tensor(&[2, 8, 10, 7], 60, device).contiguous_in(MemoryFormat::ChannelsLast)?;
    let w = random_tensor(&[16, 8, 3, 3], 61, device);
    let params = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    out.push(
        x.to_dtype(dtype)?
            .conv2d(&w.to_dtype(dtype)?, None, params)?,
    );
    Ok(())
}

/// Row kernels (softmax, log-softmax, layer norm, RMS norm) at row lengths around their tiles.
fn rows(device: &Device, out: &mut Vec<Tensor>) -> Result<()> {
    for (i, &length) in [1usize, 3, 257, 1025].iter().enumerate() {
        let x = input(&[5, length], 70 + i as u64, device);
        out.push(x.softmax(-1)?);
        out.push(x.log_softmax(-1)?);
        let normed = x.layer_norm(&[length], None, None, 1e-5)?;
        normed.sum_all()?.backward()?;
        out.extend([normed, x.grad().unwrap()]);
        // The row kernels themselves (inference: no gradient recorded).
        let _off = anygrad_core::no_grad();
        let weight = input(&[length], 80 + i as u64, device);
        let bias = input(&[length], 90 + i as u64, device);
        out.push(x.layer_norm(&[length], Some(&weight), Some(&bias), 1e-5)?);
        out.push(x.rms_norm(&[length], Some(&weight), None)?);
        out.push(x.rms_norm(&[length], None, Some(1e-6))?);
    }
    Ok(())
}

/// Transposing copies of odd shapes, vec4 elementwise ops on sizes around the vector width
/// (and at an offset), fused chains, empty tensors.
fn copies_and_elementwise(device: &Device, out: &mut Vec<Tensor>) -> Result<()> {
    for (i, shape) in [[1usize, 1, 1], [2, 17, 33], [3, 64, 65]]
        .iter()
        .enumerate()
    {
        let x = random_tensor(shape, 80 + i as u64, device);
        out.push(x.permute(&[0, 2, 1])?.contiguous()?);
    }
    for (i, &count) in [4usize, 8, 1028, 4099, 0].iter().enumerate() {
        let x = random_tensor(&[count], 90 + i as u64, device);
        let y = random_tensor(&[count], 95 + i as u64, device);
        out.push(x.exp()?);
        out.push(x.add(&y)?);
        out.push(x.mul_scalar(3.0)?);
        out.push(x.exp()?.add(&y)?.mul_scalar(0.5)?.tanh()?);
    }
    let x = offset_view(&[12, 8], 99, device);
    out.push(x.exp()?.mul(&x)?);
    Ok(())
}

/// Max pooling (halving, tiled windows, channels-last) and its gradient on odd images.
fn pooling(device: &Device, out: &mut Vec<Tensor>) -> Result<()> {
    let cases = [
        ([1, 1, 1, 1], (1, 1), (1, 1), (0, 0)),
        ([2, 3, 8, 10], (2, 2), (2, 2), (0, 0)),
        ([2, 3, 7, 9], (3, 3), (2, 2), (1, 1)),
        ([1, 4, 15, 13], (3, 3), (1, 1), (1, 1)),
    ];
    for (i, (shape, kernel, stride, padding)) in cases.into_iter().enumerate() {
        let x = input(&shape, 100 + i as u64, device);
        let y = x.max_pool2d(kernel, stride, padding)?;
        y.sum_all()?.backward()?;
        out.extend([y, x.grad().unwrap()]);
    }
    let x =
        random_tensor(&[2, 16, 9, 11], 110, device).contiguous_in(MemoryFormat::ChannelsLast)?;
    out.push(x.max_pool2d((3, 3), (2, 2), (1, 1))?);
    Ok(())
}

/// Fused attention at lengths that are not a multiple of its tiles, with its gradients.
fn attention(device: &Device, dtype: DType, out: &mut Vec<Tensor>) -> Result<()> {
    for (i, &tokens) in [1usize, 17, 65].iter().enumerate() {
        let q = input(&[2, 3, tokens, 64], 120 + i as u64, device);
        let k = input(&[2, 3, tokens, 64], 130 + i as u64, device);
        let v = input(&[2, 3, tokens, 64], 140 + i as u64, device);
        let y = scaled_dot_product_attention(
            &q.to_dtype(dtype)?,
            &k.to_dtype(dtype)?,
            &v.to_dtype(dtype)?,
            None,
            0.0,
            i == 1,
            None,
        )?;
        y.to_dtype(DType::F32)?.sum_all()?.backward()?;
        out.extend([y, q.grad().unwrap(), k.grad().unwrap(), v.grad().unwrap()]);
    }
    Ok(())
}

fn workload(device: &Device, f16: bool) -> Vec<Tensor> {
    let mut out = Vec::new();
    let mut dtypes = vec![DType::F32];
    if f16 {
        dtypes.push(DType::F16);
    }
    for &dtype in &dtypes {
        matmuls(device, dtype, &mut out).unwrap();
        convolutions(device, dtype, &mut out).unwrap();
        attention(device, dtype, &mut out).unwrap();
    }
    rows(device, &mut out).unwrap();
    copies_and_elementwise(device, &mut out).unwrap();
    pooling(device, &mut out).unwrap();
    out
}

fn gpu_device(device: &Device) -> &GpuDevice {
    match device {
        Device::Gpu(gpu) => gpu,
        Device::Cpu => unreachable!("the test runs on the GPU"),
    }
}

#[test]
fn trusted_kernels_give_the_same_bits_with_bounds_checks() {
    let Some(device) = gpu_or_skip("trusted_kernels_give_the_same_bits_with_bounds_checks") else {
        return;
    };
    let gpu = gpu_device(&device);
    let f16 = f16_or_skip(
        &device,
        "trusted_kernels_give_the_same_bits_with_bounds_checks",
    );
    assert!(!gpu.bounds_checks(), "the checks start off");

    // First pass, profiled: the autotuner settles its choices (kept for both passes below)
    // and the kernel names show which trusted families ran.
    let (_, profile) = anygrad_core::profiler::profile(|| {
        let out = workload(&device, f16);
        bits(&out);
        Ok(())
    })
    .unwrap();
    let kernels: Vec<String> = profile
        .events
        .iter()
        .flat_map(|event| event.kernels.iter().map(|kernel| kernel.name.clone()))
        .collect();
    const TEST: &str = "trusted_kernels_give_the_same_bits_with_bounds_checks";
    if gpu_has_or_skip(gpu, Requirement::Timestamps, TEST) {
        for family in [
            "Matmul",
            "Conv2d",
            "Rows",
            "CopyTranspose",
            "MaxPool2d",
            "Vector",
        ] {
            assert!(
                kernels.iter().any(|name| name.contains(family)),
                "no {family} kernel ran: {kernels:?}"
            );
        }
    }

    let unchecked = bits(&workload(&device, f16));
    let compiled_before = gpu.pipelines_compiled();
    gpu.set_bounds_checks(true);
    assert!(gpu.bounds_checks());
    let checked = bits(&workload(&device, f16));
    let recompiled = gpu.pipelines_compiled() - compiled_before;
    gpu.set_bounds_checks(false);
    assert!(
        recompiled > 20,
        "only {recompiled} pipelines were compiled again with the checks on"
    );
    assert_eq!(unchecked.len(), checked.len());
    for (i, (a, b)) in unchecked.iter().zip(&checked).enumerate() {
        assert!(
            a == b,
            "output {i} ({} elements) differs with bounds checks on",
            a.len()
        );
    }
}
