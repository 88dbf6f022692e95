//! A GPU lost in the middle of `anygrad train` (simulated with
//! `anygrad_core::gpu::simulate_device_loss` at the start of epoch 3): the run stops promptly
//! with `Error::DeviceLost` naming the epoch, the last good checkpoint and the resume command
//! (`--resume PATH --device cpu`); the `--save` file still holds the epoch-2 checkpoint, byte
//! for byte (nothing of the lost device's state is written), and resuming it on the CPU
//! finishes the run exactly as resuming a copy taken before the loss does. A data-parallel
//! run that loses one of its GPUs stops the same way.

use std::path::Path;
use std::time::{Duration, Instant};

use anygrad_core::gpu::{simulate_device_loss, GpuDevice};
use anygrad_core::{DType, Device, Error};
use anygrad_nn::load_tensors;
use anygrad_testing::{gpu_or_skip, temp_dir};
use anygrad_train::{run, run_data_parallel, Event, TrainConfig};

/// The random generator is global to the process: the tests that seed it run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The epochs of the run; the device is lost when epoch `LOST_AT` (counted from 1) starts.
const EPOCHS: usize = 4;
const LOST_AT: usize = 3;

/// What the run may take, from the loss to its error, at most (it must not wait on the lost
/// device, nor train on).
const PROMPT: Duration = Duration::from_secs(10);

/// Resume `checkpoint` on the CPU for the remaining epochs, saving to `saved`; returns the
/// final test accuracy and the epochs trained.
fn resume_on_cpu(checkpoint: &Path, saved: &Path) -> (f64, Vec<usize>) {
    let config = TrainConfig {
        epochs: EPOCHS,
        resume: Some(checkpoint.to_path_buf()),
        save: Some(saved.to_path_buf()),
        ..TrainConfig::default()
    };
    let summary = run(&config, &Device::Cpu, &mut |_| {})
        .unwrap_or_else(|error| panic!("resuming {} on the CPU: {error}", checkpoint.display()));
    let epochs = summary.epochs.iter().map(|report| report.epoch).collect();
    (summary.final_test_accuracy, epochs)
}

/// The floating-point values of every tensor of a checkpoint, by name, and its `epoch`
/// metadata.
fn values(path: &Path) -> (Vec<(String, Vec<f32>)>, Option<String>) {
    let (tensors, metadata) = load_tensors(path, &Device::Cpu)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    let values = tensors
        .into_iter()
        .filter(|(_, tensor)| tensor.dtype().is_float())
        .map(|(name, tensor)| {
            let values = tensor
                .to_dtype(DType::F32)
                .and_then(|t| t.to_vec::<f32>())
                .unwrap();
            (name, values)
        })
        .collect();
    (values, metadata.get("epoch").cloned())
}

#[test]
fn a_gpu_lost_mid_training_keeps_the_last_checkpoint_and_resumes_on_the_cpu() {
    let test = "a_gpu_lost_mid_training_keeps_the_last_checkpoint_and_resumes_on_the_cpu";
    if gpu_or_skip(test).is_none() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // A context of its own, so that losing it leaves the process's `gpu:0` alone.
    let gpu = GpuDevice::open_new_instance(0).expect("a second context on gpu:0");
    let device = Device::Gpu(gpu.clone());
    let dir = temp_dir("train-device-loss");
    let checkpoint = dir.join("run.safetensors");
    let before_loss = dir.join("epoch2-copy.safetensors");
    let config = TrainConfig {
        epochs: EPOCHS,
        save: Some(checkpoint.clone()),
        ..TrainConfig::default()
    };
    let mut lost_at: Option<Instant> = None;
    let mut finished = Vec::new();
    let result = run(&config, &device, &mut |event| match event {
        Event::EpochStart { epoch, .. } if epoch + 1 == LOST_AT => {
            std::fs::copy(&checkpoint, &before_loss).expect("copy the epoch-2 checkpoint");
            simulate_device_loss(&gpu);
            lost_at = Some(Instant::now());
        }
        Event::EpochEnd(report) => finished.push(report.epoch),
        _ => {}
    });
    let lost_at = lost_at.expect("epoch 3 started");
    let took = lost_at.elapsed();
    let message = match result {
        Err(Error::DeviceLost { message }) => message,
        Err(other) => panic!("expected Error::DeviceLost, got {other:?}"),
        Ok(summary) => panic!("the run went on after the loss: {:?}", summary.epochs),
    };
    assert!(took < PROMPT, "the error came {took:?} after the loss");
    println!("{message}");
    assert_eq!(finished, vec![1, 2], "epochs finished before the loss");
    let path = checkpoint.display().to_string();
    for text in [
        format!("lost at epoch {LOST_AT}"),
        "the last good checkpoint (epoch 2)".to_string(),
        format!("kept at {path}"),
        format!("anygrad train --resume {path} --device cpu --epochs {EPOCHS}"),
    ] {
        assert!(message.contains(&text), "`{text}` not in: {message}");
    }

    // The file on disk is the epoch-2 checkpoint, untouched by the lost device.
    let after = std::fs::read(&checkpoint).unwrap();
    let copied = std::fs::read(&before_loss).unwrap();
    assert!(
        after == copied,
        "{path} changed after the loss (it must stay the epoch-2 checkpoint)"
    );
    let (kept, kept_epoch) = values(&checkpoint);
    assert_eq!(kept_epoch.as_deref(), Some("2"), "{path}'s epoch metadata");
    assert!(kept.iter().all(|(_, v)| v.iter().all(|x| x.is_finite())));

    // Resuming it on the CPU finishes the run, exactly as resuming the copy does.
    let (accuracy, epochs) = resume_on_cpu(&checkpoint, &dir.join("resumed.safetensors"));
    let (copy_accuracy, copy_epochs) =
        resume_on_cpu(&before_loss, &dir.join("resumed-copy.safetensors"));
    assert_eq!(epochs, vec![3, 4]);
    assert_eq!(copy_epochs, vec![3, 4]);
    assert_eq!(accuracy, copy_accuracy);
    assert!(accuracy > 0.5, "test accuracy after resuming: {accuracy}");
    let (resumed, resumed_epoch) = values(&dir.join("resumed.safetensors"));
    let (resumed_copy, _) = values(&dir.join("resumed-copy.safetensors"));
    assert_eq!(resumed_epoch.as_deref(), Some("4"));
    assert!(!resumed.is_empty());
    assert_eq!(resumed.len(), resumed_copy.len());
    for ((name, values), (copy_name, copy_values)) in resumed.iter().zip(&resumed_copy) {
        assert_eq!(name, copy_name);
        assert_eq!(values.len(), copy_values.len(), "{name}");
        for (value, copy_value) in values.iter().zip(copy_values) {
            assert!(value.is_finite(), "{name} holds {value}");
            let tolerance = 1e-5 * value.abs().max(copy_value.abs()).max(1e-6);
            assert!(
                (value - copy_value).abs() <= tolerance,
                "{name}: {value} vs {copy_value}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_data_parallel_run_that_loses_a_gpu_keeps_the_last_checkpoint() {
    let test = "a_data_parallel_run_that_loses_a_gpu_keeps_the_last_checkpoint";
    if gpu_or_skip(test).is_none() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = GpuDevice::open_new_instance(0).expect("a second context on gpu:0");
    let devices = [Device::Gpu(gpu.clone()), Device::Cpu];
    let dir = temp_dir("train-device-loss-parallel");
    let checkpoint = dir.join("run.safetensors");
    let config = TrainConfig {
        epochs: 3,
        save: Some(checkpoint.clone()),
        ..TrainConfig::default()
    };
    let mut kept = None;
    let result = run_data_parallel(&config, &devices, &mut |event| {
        if let Event::EpochStart { epoch: 1, .. } = event {
            kept = Some(std::fs::read(&checkpoint).expect("the epoch-1 checkpoint"));
            simulate_device_loss(&gpu);
        }
    });
    let message = match result {
        Err(Error::DeviceLost { message }) => message,
        Err(other) => panic!("expected Error::DeviceLost, got {other:?}"),
        Ok(summary) => panic!("the run went on after the loss: {:?}", summary.epochs),
    };
    let path = checkpoint.display().to_string();
    for text in [
        "lost at epoch 2 of the run on gpu:0, cpu".to_string(),
        "the last good checkpoint (epoch 1)".to_string(),
        format!("--resume {path} --device cpu --epochs 3"),
    ] {
        assert!(message.contains(&text), "`{text}` not in: {message}");
    }
    assert!(
        std::fs::read(&checkpoint).unwrap() == kept.expect("epoch 2 started"),
        "{path} changed after the loss"
    );
    std::fs::remove_dir_all(&dir).ok();
}
