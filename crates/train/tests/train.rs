//! Acceptance tests of the training loop: the default digits job passes 97% test accuracy on
//! every device, and a run resumed from a checkpoint continues exactly like an uninterrupted
//! one (same losses, bit for bit on the same device).

use anygrad_core::Device;
use anygrad_testing::gpu_or_skip;
use anygrad_train::{run, TrainConfig};

fn default_job_reaches_97_percent(device: &Device) {
    let _seeded = anygrad_testing::global_rng_lock();
    let summary = run(&TrainConfig::default(), device, &mut |_| {}).unwrap();
    assert_eq!(summary.epochs.len(), 20);
    let first = &summary.epochs[0];
    let last = summary.epochs.last().unwrap();
    assert!(
        last.train_loss < first.train_loss / 10.0,
        "loss {} -> {}",
        first.train_loss,
        last.train_loss
    );
    assert!(
        summary.final_test_accuracy >= 0.97,
        "test accuracy {}",
        summary.final_test_accuracy
    );
}

fn resume_continues_exactly(device: &Device) {
    let _seeded = anygrad_testing::global_rng_lock();
    let dir = std::env::temp_dir().join(format!(
        "anygrad-resume-{}-{}",
        std::process::id(),
        device.is_gpu()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let checkpoint = dir.join("run.safetensors");
    let full = TrainConfig {
        epochs: 4,
        ..TrainConfig::default()
    };
    let uninterrupted = run(&full, device, &mut |_| {}).unwrap();
    let first_half = TrainConfig {
        epochs: 2,
        save: Some(checkpoint.clone()),
        ..TrainConfig::default()
    };
    run(&first_half, device, &mut |_| {}).unwrap();
    let second_half = TrainConfig {
        epochs: 4,
        resume: Some(checkpoint.clone()),
        ..TrainConfig::default()
    };
    let resumed = run(&second_half, device, &mut |_| {}).unwrap();
    assert_eq!(resumed.epochs.len(), 2);
    for (a, b) in uninterrupted.epochs[2..].iter().zip(&resumed.epochs) {
        assert_eq!(a.epoch, b.epoch);
        assert_eq!(a.train_loss, b.train_loss, "epoch {}", a.epoch);
        assert_eq!(a.test_accuracy, b.test_accuracy, "epoch {}", a.epoch);
    }
    // A corrupt checkpoint is an error, not a crash, and names the file.
    std::fs::write(&checkpoint, b"not a safetensors file").unwrap();
    let error = run(&second_half, device, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(error.contains("run.safetensors"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn default_job_cpu() {
    default_job_reaches_97_percent(&Device::Cpu);
}

#[test]
fn default_job_gpu() {
    if let Some(device) = gpu_or_skip("default_job_gpu") {
        default_job_reaches_97_percent(&device);
    }
}

#[test]
fn resume_cpu() {
    resume_continues_exactly(&Device::Cpu);
}

#[test]
fn resume_gpu() {
    if let Some(device) = gpu_or_skip("resume_gpu") {
        resume_continues_exactly(&device);
    }
}

#[test]
fn mnist_cnn_when_data_present() {
    let _seeded = anygrad_testing::global_rng_lock();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mnist");
    if !dir.join("train-images-idx3-ubyte.gz").exists() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Data,
            "mnist_cnn_when_data_present",
            &format!("MNIST not found at {}", dir.display()),
        );
        return;
    }
    // A short CPU run on a subset: the full 3-epoch acceptance run is in docs (too slow for CI).
    let config = TrainConfig {
        dataset: anygrad_train::DatasetKind::Mnist,
        data_dir: Some(dir),
        model: anygrad_train::ModelKind::Cnn,
        epochs: 1,
        batch_size: 64,
        limit_train: Some(3000),
        ..TrainConfig::default()
    };
    let summary = run(&config, &Device::Cpu, &mut |_| {}).unwrap();
    assert!(
        summary.final_test_accuracy > 0.85,
        "accuracy {}",
        summary.final_test_accuracy
    );
}
