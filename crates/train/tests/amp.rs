//! Mixed precision on the real jobs: the digits MLP trained with `--amp` (autocast f16 +
//! GradScaler) reaches the same accuracy as in f32, on every device; and the MNIST CNN (a
//! subset, when the data is present) does too.

use anygrad_core::Device;
use anygrad_testing::gpu_or_skip;
use anygrad_train::{run, DatasetKind, ModelKind, TrainConfig};

fn amp_matches_f32_on_digits(device: &Device) {
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
        amp_matches_f32_on_digits(&device);
    }
}

#[test]
fn amp_mnist_cnn_when_data_present() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mnist");
    if !dir.join("train-images-idx3-ubyte.gz").exists() {
        println!(
            "SKIP amp_mnist_cnn_when_data_present: {} not found",
            dir.display()
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
