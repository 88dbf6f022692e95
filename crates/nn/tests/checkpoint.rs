//! Safetensors checkpoints: bit-exact round trips (f32, f16, bf16, int buffers), bf16 entries
//! read as bf16 tensors and converted to a module's f32 parameters, loading a file
//! written from PyTorch's state dict (int64 `num_batches_tracked`), clear errors for missing,
//! unexpected and mis-shaped tensors, corrupt files that error instead of panicking, and
//! atomic writes.

use std::collections::BTreeMap;

use anygrad_core::{DType, Device, Error, Tensor};
use anygrad_nn::*;
use anygrad_testing::{assert_close, values};

fn model(device: &Device) -> Sequential {
    Sequential::new()
        .add(Conv2d::square(2, 3, 3, Conv2dOptions::default().padding(1), device).unwrap())
        .add(BatchNorm2d::new_2d(3, device).unwrap())
        .add(Flatten::default())
        .add(Linear::new(3 * 4 * 4, 5, true, device).unwrap())
}

fn bits(t: &Tensor) -> Vec<u64> {
    t.to_vec_f64()
        .unwrap()
        .into_iter()
        .map(f64::to_bits)
        .collect()
}

fn round_trip_is_bit_exact(device: &Device) {
    let dir = anygrad_testing::temp_dir(&format!("roundtrip-{}", device.is_gpu()));
    let path = dir.join("model.safetensors");
    let original = model(device);
    // Make the buffers non-trivial.
    original
        .forward(&Tensor::randn(&[4, 2, 4, 4], DType::F32, device).unwrap())
        .unwrap();
    original
        .forward(&Tensor::randn(&[4, 2, 4, 4], DType::F32, device).unwrap())
        .unwrap();
    save_safetensors(&original, &path).unwrap();
    let restored = model(device);
    load_safetensors(&restored, &path).unwrap();
    for ((name, a), (_, b)) in original.state_dict().iter().zip(restored.state_dict()) {
        assert_eq!(a.dtype(), b.dtype(), "{name}");
        assert_eq!(b.device(), device, "{name} stays on the module's device");
        assert_eq!(bits(a), bits(&b), "{name} bit-exact");
    }
    assert_eq!(restored.named_buffers()[2].1.item_f64().unwrap(), 2.0);
    assert!(
        restored.parameters().iter().all(|p| p.requires_grad()),
        "loaded parameters stay trainable"
    );
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    // Overwriting an existing checkpoint works (rename over it).
    save_safetensors(&restored, &path).unwrap();
    load_safetensors(&original, &path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn other_dtypes_round_trip(device: &Device) {
    let dir = anygrad_testing::temp_dir(&format!("dtypes-{}", device.is_gpu()));
    let path = dir.join("tensors.safetensors");
    let mut tensors = vec![
        (
            "f32".to_string(),
            Tensor::randn(&[3, 2], DType::F32, device).unwrap(),
        ),
        (
            "i32".to_string(),
            Tensor::from_vec(vec![-5i32, 7, 1 << 30], &[3], device).unwrap(),
        ),
        (
            "u8".to_string(),
            Tensor::from_vec(vec![0u8, 255], &[2], &Device::Cpu).unwrap(),
        ),
        (
            "scalar".to_string(),
            Tensor::scalar(2.5, DType::F32, device).unwrap(),
        ),
    ];
    if anygrad_testing::f16_or_skip(device, "other_dtypes_round_trip (f16)") {
        tensors.push((
            "f16".to_string(),
            Tensor::randn(&[4], DType::F32, device)
                .unwrap()
                .to_dtype(DType::F16)
                .unwrap(),
        ));
    }
    tensors.push((
        "bf16".to_string(),
        Tensor::randn(&[5], DType::F32, device)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap(),
    ));
    let mut meta = BTreeMap::new();
    meta.insert("note".to_string(), "hello".to_string());
    save_tensors(&tensors, &meta, &path).unwrap();
    let (loaded, loaded_meta) = load_tensors(&path, device).unwrap();
    assert_eq!(loaded_meta.get("note").map(String::as_str), Some("hello"));
    for (name, t) in &tensors {
        let back = &loaded[name];
        assert_eq!(back.dtype(), t.dtype(), "{name}");
        assert_eq!(back.shape(), t.shape(), "{name}");
        assert_eq!(bits(back), bits(t), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn bf16_entries_stay_bf16(device: &Device) {
    let dir = anygrad_testing::temp_dir(&format!("bf16-{}", device.is_gpu()));
    let path = dir.join("bf16.safetensors");
    // Values that are not bfloat16 values round to nearest even on the way in (two ties).
    let tie = 2f32.powi(-8);
    let weight = Tensor::from_vec(
        vec![1.0f32, 1.0 + tie, -2.5, 0.1, 3.0, 1.0 + 3.0 * tie],
        &[2, 3],
        device,
    )
    .unwrap()
    .to_dtype(DType::BF16)
    .unwrap();
    let bias = Tensor::from_vec(vec![0.5f32, -0.25], &[2], device)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    let entries = vec![("weight".to_string(), weight), ("bias".to_string(), bias)];
    save_tensors(&entries, &BTreeMap::new(), &path).unwrap();
    // The file says BF16, two bytes a value.
    let bytes = std::fs::read(&path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let stored = file.tensor("weight").unwrap();
    assert_eq!(stored.dtype(), safetensors::Dtype::BF16);
    let stored_bits: Vec<u16> = stored
        .data()
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(
        stored_bits,
        [0x3F80, 0x3F80, 0xC020, 0x3DCD, 0x4040, 0x3F82],
        "bf16 bits as PyTorch rounds them"
    );
    // Read back with their own dtype.
    let (loaded, _) = load_tensors(&path, device).unwrap();
    assert_eq!(loaded["weight"].dtype(), DType::BF16);
    assert_eq!(loaded["weight"].device(), device);
    let tenth = f32::from_bits(0x3DCD_0000); // 0.1 in bfloat16: 0.10009765625
    let expected = [1.0, 1.0, -2.5, tenth, 3.0, 1.015625];
    assert_eq!(values(&loaded["weight"]), expected);
    // Loaded into a module of f32 parameters: converted (exactly) to f32.
    let linear = Linear::new(3, 2, true, device).unwrap();
    load_safetensors(&linear, &path).unwrap();
    let state = linear.state_dict();
    let weight = &state.iter().find(|(name, _)| name == "weight").unwrap().1;
    assert_eq!(weight.dtype(), DType::F32);
    assert_eq!(values(weight), expected);
    let _ = std::fs::remove_dir_all(&dir);
}

fn loads_pytorch_state_dict(device: &Device) {
    // Written by scripts/golden/generate_nn.py from nn.Sequential(Linear(3, 4),
    // BatchNorm1d(4), ReLU(), Linear(4, 2)) after three training batches.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/torch_state.safetensors"
    );
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("golden/nn_layers.json")).unwrap();
    let case = &golden["torch_state"];
    let net = Sequential::new()
        .add(Linear::new(3, 4, true, device).unwrap())
        .add(BatchNorm1d::new_1d(4, device).unwrap())
        .add(ReLU)
        .add(Linear::new(4, 2, true, device).unwrap());
    load_safetensors(&net, path).unwrap();
    net.eval();
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    let input = Tensor::from_vec(floats(&case["input"]), &[5, 3], device).unwrap();
    let output = net.forward(&input).unwrap();
    assert_close(
        &values(&output),
        &floats(&case["output"]),
        1e-5,
        1e-5,
        "PyTorch model output",
    );
    let tracked = net.named_buffers()[2].1.clone();
    assert_eq!(tracked.dtype(), DType::I32);
    assert_eq!(
        tracked.item_f64().unwrap(),
        case["num_batches_tracked"].as_f64().unwrap()
    );
}

fn format_error(result: anygrad_core::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(Error::Format { context, message }) => format!("{context}: {message}"),
        other => panic!("expected Error::Format, got {other:?}"),
    }
}

fn mismatches_are_reported(device: &Device) {
    let dir = anygrad_testing::temp_dir(&format!("mismatch-{}", device.is_gpu()));
    let path = dir.join("small.safetensors");
    let small = Sequential::new()
        .add(Linear::new(4, 3, true, device).unwrap())
        .add(ReLU)
        .add(Linear::new(3, 2, false, device).unwrap());
    save_safetensors(&small, &path).unwrap();
    // Missing (2.bias), unexpected (none) and mis-shaped (0.weight, 0.bias) in one message.
    let target = Sequential::new()
        .add(Linear::new(5, 4, true, device).unwrap())
        .add(ReLU)
        .add(Linear::new(3, 2, true, device).unwrap());
    let before = values(&target.named_parameters()[3].1);
    let message = format_error(load_safetensors(&target, &path));
    assert!(
        message.contains("missing tensors: [\"2.bias\"]"),
        "{message}"
    );
    assert!(
        message.contains("0.weight: file [3, 4], module [4, 5]"),
        "{message}"
    );
    assert!(message.contains("0.bias"), "{message}");
    assert_eq!(
        values(&target.named_parameters()[3].1),
        before,
        "a failed load changes nothing"
    );
    // Unexpected tensors.
    let tiny = Sequential::new().add(Linear::new(4, 3, true, device).unwrap());
    let message = format_error(load_safetensors(&tiny, &path));
    assert!(
        message.contains("unexpected tensors: [\"2.weight\"]"),
        "{message}"
    );
    // Non-strict: reported, the rest loaded.
    let report = load_safetensors_with(&tiny, &path, false).unwrap();
    assert_eq!(report.unexpected, ["2.weight"]);
    assert!(report.missing.is_empty());
    assert_eq!(
        values(&tiny.named_parameters()[0].1),
        values(&small.named_parameters()[0].1)
    );
    let report = load_safetensors_with(
        &Sequential::new()
            .add(Linear::new(4, 3, true, device).unwrap())
            .add(BatchNorm1d::new_1d(3, device).unwrap()),
        &path,
        false,
    )
    .unwrap();
    assert_eq!(report.missing.len(), 5);
    let _ = std::fs::remove_dir_all(&dir);
}

fn corrupt_files_are_errors(device: &Device) {
    let dir = anygrad_testing::temp_dir(&format!("corrupt-{}", device.is_gpu()));
    let good = dir.join("good.safetensors");
    let net = Sequential::new().add(Linear::new(4, 3, true, device).unwrap());
    save_safetensors(&net, &good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("short", vec![1, 2, 3]),
        ("truncated data", bytes[..bytes.len() - 5].to_vec()),
        ("truncated header", bytes[..8 + header_len / 2].to_vec()),
        ("huge header length", {
            let mut b = bytes.clone();
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        (
            "garbage",
            (0..200u32).map(|i| (i * 37 % 251) as u8).collect(),
        ),
    ];
    let mut bad_json = bytes.clone();
    bad_json[8] = b'!';
    cases.push(("bad json", bad_json));
    for (name, content) in cases {
        let path = dir.join(format!("{}.safetensors", name.replace(' ', "_")));
        std::fs::write(&path, content).unwrap();
        match load_safetensors(&net, &path) {
            Err(Error::Format { .. }) => {}
            other => panic!("{name}: expected a format error, got {other:?}"),
        }
    }
    // Not regular files: refused by name before anything is read (a FIFO would block, a
    // device be read until memory runs out).
    #[cfg(unix)]
    {
        let fifo = dir.join("fifo.safetensors");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let link = dir.join("zero.safetensors");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let mut paths = vec![link, dir.clone()];
        if made.is_ok_and(|status| status.success()) {
            paths.push(fifo);
        }
        for path in paths {
            match load_safetensors(&net, &path) {
                Err(error @ Error::Format { .. }) => {
                    let message = error.to_string();
                    assert!(message.contains("not a regular file"), "{message}");
                    assert!(message.contains(&path.display().to_string()), "{message}");
                }
                other => panic!("{}: expected a format error, got {other:?}", path.display()),
            }
        }
    }
    // A (sparse) file larger than the machine's memory is refused before it is read.
    if let Some(total) = anygrad_core::host_memory::total_memory() {
        let huge = dir.join("huge.safetensors");
        let file = std::fs::File::create(&huge).unwrap();
        if file.set_len(total + 1).is_ok() {
            match load_safetensors(&net, &huge) {
                Err(error @ Error::Format { .. }) => {
                    assert!(error.to_string().contains("larger than"), "{error}")
                }
                other => panic!("huge file: expected a format error, got {other:?}"),
            }
        }
        drop(file);
        let _ = std::fs::remove_file(&huge);
    }
    match load_safetensors(&net, dir.join("does-not-exist.safetensors")) {
        Err(Error::Io { .. }) => {}
        other => panic!("missing file: expected an IO error, got {other:?}"),
    }
    assert!(save_safetensors(&net, dir.join("no-such-dir").join("x.safetensors")).is_err());
    let mut reserved = BTreeMap::new();
    reserved.insert("anygrad.optimizer.kind".to_string(), "x".to_string());
    assert!(save_checkpoint(&net, None, &reserved, dir.join("r.safetensors")).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

anygrad_testing::device_tests!(
    round_trip_is_bit_exact,
    other_dtypes_round_trip,
    bf16_entries_stay_bf16,
    loads_pytorch_state_dict,
    mismatches_are_reported,
    corrupt_files_are_errors,
);
