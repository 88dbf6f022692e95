//! Mixed precision on the real jobs: the digits MLP trained with `--amp` (autocast f16 +
//! GradScaler) reaches the same accuracy as in f32, on every device; and the MNIST CNN (a
//! subset, when the data is present) does too; with two devices (`--amp --devices`) the
//! digits MLP trains like one device.

use anygrad_core::Device;
use anygrad_testing::gpu_or_skip;
use anygrad_train::{run, run_data_parallel, DatasetKind, ModelKind, TrainConfig};

fn amp_matches_f32_on_digits(device: &Device) {
    let _seeded = anygrad_testing::global_rng_lock();
    let full = run(&TrainConfig::default(), device, &mut |_| {}).unwrap();
    let mixed = run(
        &TrainConfig {
            amp: true,
            ..TrainConfig::default()
        },
        device,
        &mut |_| {},
    )
    .unwrap();
    assert!(
        mixed.final_test_accuracy >= 0.97,
        "amp accuracy {}",
        mixed.final_test_accuracy
    );
    assert!(
        (mixed.final_test_accuracy - full.final_test_accuracy).abs() <= 0.01,
        "amp {} vs f32 {}",
        mixed.final_test_accuracy,
        full.final_test_accuracy
    );
}

#[test]
fn amp_digits_cpu() {
    amp_matches_f32_on_digits(&Device::Cpu);
}

#[test]
fn amp_digits_gpu() {
    if let Some(device) = gpu_or_skip("amp_digits_gpu") {
        if anygrad_testing::f16_or_skip(&device, "amp_digits_gpu") {
            amp_matches_f32_on_digits(&device);
        }
    }
}

#[test]
fn amp_mnist_cnn_when_data_present() {
    let _seeded = anygrad_testing::global_rng_lock();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mnist");
    if !dir.join("train-images-idx3-ubyte.gz").exists() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Data,
            "amp_mnist_cnn_when_data_present",
            &format!("MNIST not found at {}", dir.display()),
        );
        return;
    }
    let config = TrainConfig {
        dataset: DatasetKind::Mnist,
        data_dir: Some(dir),
        model: ModelKind::Cnn,
        epochs: 1,
        batch_size: 64,
        limit_train: Some(2000),
        amp: true,
        ..TrainConfig::default()
    };
    let mixed = run(&config, &Device::Cpu, &mut |_| {}).unwrap();
    let full = run(
        &TrainConfig {
            amp: false,
            ..config
        },
        &Device::Cpu,
        &mut |_| {},
    )
    .unwrap();
    assert!(
        (mixed.final_test_accuracy - full.final_test_accuracy).abs() <= 0.02,
        "amp {} vs f32 {}",
        mixed.final_test_accuracy,
        full.final_test_accuracy
    );
    assert!(
        mixed.final_test_accuracy > 0.8,
        "amp accuracy {}",
        mixed.final_test_accuracy
    );
}

/// `--amp` with `--devices`: f16 autocast on every replica and one scaler for all of them
/// train like `--amp` on one device with the same global batch.
fn amp_with_two_devices_matches_one_device(device: &Device, epochs: usize) {
    let _seeded = anygrad_testing::global_rng_lock();
    let config = TrainConfig {
        amp: true,
        epochs,
        ..TrainConfig::default()
    };
    let single = run(&config, device, &mut |_| {}).unwrap();
    let parallel =
        run_data_parallel(&config, &[device.clone(), device.clone()], &mut |_| {}).unwrap();
    assert_eq!(parallel.epochs.len(), epochs);
    for (p, s) in parallel.epochs.iter().zip(&single.epochs) {
        assert!(
            (p.train_loss - s.train_loss).abs() <= 1e-2 * s.train_loss.abs() + 1e-3,
            "train loss with two devices {} vs one {}",
            p.train_loss,
            s.train_loss
        );
    }
    assert!(
        (parallel.final_test_accuracy - single.final_test_accuracy).abs() <= 0.02,
        "accuracy with two devices {} vs one {}",
        parallel.final_test_accuracy,
        single.final_test_accuracy
    );
}

#[test]
fn amp_two_devices_cpu() {
    amp_with_two_devices_matches_one_device(&Device::Cpu, 2);
}

#[test]
fn amp_two_devices_gpu() {
    if let Some(device) = gpu_or_skip("amp_two_devices_gpu") {
        if anygrad_testing::f16_or_skip(&device, "amp_two_devices_gpu") {
            amp_with_two_devices_matches_one_device(&device, 1);
        }
    }
}
