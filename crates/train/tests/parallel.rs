//! The training loop on several devices: `run_data_parallel` over two replicas (`[cpu, cpu]`,
//! and two replicas on the same GPU) gives the single-device run's loss curve and accuracy with
//! the same global batch; a data-parallel checkpoint resumes on one device and a single-device
//! checkpoint resumes data parallel.

use anygrad_core::Device;
use anygrad_train::{run, run_data_parallel, EpochReport, TrainConfig};

/// The random generator is global to the process: the tests that seed it and build models run
/// one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn assert_same_curve(parallel: &[EpochReport], single: &[EpochReport]) {
    assert_eq!(parallel.len(), single.len());
    for (p, s) in parallel.iter().zip(single) {
        assert!(
            (p.train_loss - s.train_loss).abs() <= 1e-4 * s.train_loss.abs().max(1e-3),
            "epoch {}: train loss {} (data parallel) vs {} (one device)",
            p.epoch,
            p.train_loss,
            s.train_loss
        );
        assert!(
            (p.test_loss - s.test_loss).abs() <= 1e-4 * s.test_loss.abs().max(1e-3),
            "epoch {}: test loss {} vs {}",
            p.epoch,
            p.test_loss,
            s.test_loss
        );
        // 360 test images: at most one prediction may flip on a near tie.
        assert!(
            (p.test_accuracy - s.test_accuracy).abs() <= 1.5 / 360.0,
            "epoch {}: test accuracy {} vs {}",
            p.epoch,
            p.test_accuracy,
            s.test_accuracy
        );
    }
}

fn two_replicas_match_one_device(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Batch 32 over 1,437 training images: the last batch (29) splits unevenly.
    let config = TrainConfig {
        epochs: if device.is_gpu() { 1 } else { 2 },
        ..TrainConfig::default()
    };
    let single = run(&config, device, &mut |_| {}).unwrap();
    let parallel =
        run_data_parallel(&config, &[device.clone(), device.clone()], &mut |_| {}).unwrap();
    assert_same_curve(&parallel.epochs, &single.epochs);
    assert!(
        parallel.device.starts_with("2 devices"),
        "{}",
        parallel.device
    );
}

#[test]
fn checkpoints_resume_across_device_counts() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!("anygrad-dp-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpu = Device::Cpu;
    let full = TrainConfig {
        epochs: 3,
        ..TrainConfig::default()
    };
    let uninterrupted = run(&full, &cpu, &mut |_| {}).unwrap();

    // Data parallel for one epoch, then one device for the rest.
    let parallel_path = dir.join("parallel.safetensors");
    let first = TrainConfig {
        epochs: 1,
        save: Some(parallel_path.clone()),
        ..TrainConfig::default()
    };
    run_data_parallel(&first, &[cpu.clone(), cpu.clone()], &mut |_| {}).unwrap();
    let rest = TrainConfig {
        resume: Some(parallel_path),
        ..full.clone()
    };
    let resumed_single = run(&rest, &cpu, &mut |_| {}).unwrap();
    assert_same_curve(&resumed_single.epochs, &uninterrupted.epochs[1..]);

    // One device for one epoch, then data parallel for the rest.
    let single_path = dir.join("single.safetensors");
    run(
        &TrainConfig {
            save: Some(single_path.clone()),
            ..first.clone()
        },
        &cpu,
        &mut |_| {},
    )
    .unwrap();
    let resumed_parallel = run_data_parallel(
        &TrainConfig {
            resume: Some(single_path),
            ..full.clone()
        },
        &[cpu.clone(), cpu],
        &mut |_| {},
    )
    .unwrap();
    assert_same_curve(&resumed_parallel.epochs, &uninterrupted.epochs[1..]);
    let _ = std::fs::remove_dir_all(&dir);
}

anygrad_testing::device_tests!(two_replicas_match_one_device);
