//! MNIST is fed from host memory a batch at a time: on a GPU, iterating an epoch never holds
//! the training set on the device (the whole set does not fit one buffer binding on lavapipe
//! and many integrated GPUs), and training on it works on every device.

use anygrad_core::{memory_stats, reset_peak_memory, Device};
use anygrad_train::{load_data, run, DatasetKind, ModelKind, TrainConfig};

/// A synthetic MNIST directory: `count` training and 50 test images of 28×28.
fn synthetic_mnist(tag: &str, count: u32) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("anygrad-mnist-stream-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (stem, images) in [("train", count), ("t10k", 50)] {
        let mut bytes = 0x0803u32.to_be_bytes().to_vec();
        for dim in [images, 28, 28] {
            bytes.extend_from_slice(&dim.to_be_bytes());
        }
        bytes.extend((0..images as usize * 784).map(|i| ((i * 31) % 256) as u8));
        std::fs::write(dir.join(format!("{stem}-images-idx3-ubyte")), bytes).unwrap();
        let mut labels = 0x0801u32.to_be_bytes().to_vec();
        labels.extend_from_slice(&images.to_be_bytes());
        labels.extend((0..images).map(|i| (i % 10) as u8));
        std::fs::write(dir.join(format!("{stem}-labels-idx1-ubyte")), labels).unwrap();
    }
    dir
}

fn batches_are_uploaded_one_at_a_time(device: &Device) {
    let count = 800u32;
    let dir = synthetic_mnist(&device.to_string().replace(':', "-"), count);
    let config = TrainConfig {
        dataset: DatasetKind::Mnist,
        data_dir: Some(dir.clone()),
        model: ModelKind::Mlp,
        batch_size: 50,
        epochs: 1,
        ..TrainConfig::default()
    };
    let data = load_data(&config, device).unwrap();
    reset_peak_memory(device);
    let mut seen = 0;
    for batch in data.train.iter_epoch(0) {
        let (inputs, labels) = batch.unwrap();
        assert!(inputs.shape()[0] <= 50 && inputs.shape()[1] == 784);
        assert_eq!(inputs.device(), device);
        seen += labels.shape()[0];
    }
    assert_eq!(seen, count as usize);
    let training_set_bytes = count as u64 * 784 * 4;
    if let Some(stats) = memory_stats(device) {
        assert!(
            stats.peak_allocated_bytes < training_set_bytes / 4,
            "an epoch held {} bytes on the device; the training set is {training_set_bytes}",
            stats.peak_allocated_bytes
        );
    }
    // And a short run trains on it (a subset: GPU tests run on software GPUs in CI).
    let short = TrainConfig {
        limit_train: Some(100),
        ..config
    };
    let summary = run(&short, device, &mut |_| {}).unwrap();
    assert_eq!(summary.epochs.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

anygrad_testing::device_tests!(batches_are_uploaded_one_at_a_time);
