//! Data-parallel training of a batch-norm model (ResNet-18 on a small RGB image folder, two
//! CPU replicas): a global batch that cannot give every replica 2 samples is refused before
//! any training with an error naming `--batch-size` and `--devices`, and an epoch whose last
//! batch is 3 samples (split 3 + 0, not 2 + 1) trains and saves its checkpoint.

use anygrad_core::Device;
use anygrad_data::{write_image_folder, PixelImage};
use anygrad_testing::temp_dir;
use anygrad_train::{load_data, run_data_parallel, DatasetKind, Event, ModelKind, TrainConfig};

/// The random generator is global to the process: the tests that seed it run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A folder of `count` small RGB images in two classes (colours differ by class).
fn rgb_folder(test: &str, count: usize) -> std::path::PathBuf {
    let dir = temp_dir(test);
    let images: Vec<PixelImage> = (0..count)
        .map(|index| {
            let class = index % 2;
            let pixels: Vec<u8> = (0..8 * 8 * 3)
                .map(|i| ((i * 7 + index * 13 + class * 120) % 256) as u8)
                .collect();
            PixelImage::new(8, 8, 3, pixels).unwrap()
        })
        .collect();
    let labels: Vec<usize> = (0..count).map(|index| index % 2).collect();
    let names = vec!["a".to_string(), "b".to_string()];
    write_image_folder(&dir, &names, &images, &labels).unwrap();
    dir
}

fn resnet_config(dir: std::path::PathBuf, batch_size: usize) -> TrainConfig {
    TrainConfig {
        dataset: DatasetKind::Folder,
        data_dir: Some(dir),
        model: ModelKind::Resnet18,
        optimizer: anygrad_train::OptimizerKind::Sgd,
        learning_rate: 0.01,
        batch_size,
        epochs: 1,
        image_size: Some(16),
        num_workers: 0,
        augment: false,
        ..TrainConfig::default()
    }
}

#[test]
fn a_batch_too_small_for_every_replica_is_refused_before_training() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = rgb_folder("dp-batch-norm-refused", 10);
    let devices = [Device::Cpu, Device::Cpu];
    for batch_size in [2, 3] {
        let mut started = false;
        let error = run_data_parallel(
            &resnet_config(dir.clone(), batch_size),
            &devices,
            &mut |event| started |= matches!(event, Event::EpochStart { .. }),
        )
        .expect_err("a replica would get a single sample")
        .to_string();
        assert!(
            error.contains(&format!("--batch-size {batch_size}"))
                && error.contains("--devices")
                && error.contains("batch norm")
                && error.contains("--batch-size 4"),
            "{error}"
        );
        assert!(!started, "trained before refusing: {error}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_short_last_batch_goes_to_fewer_replicas_and_the_epoch_is_saved() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Find a folder size whose training part leaves a last batch of 3 with batch 4.
    let (dir, config) = (9..20)
        .find_map(|count| {
            let dir = rgb_folder(&format!("dp-batch-norm-short-{count}"), count);
            let config = resnet_config(dir.clone(), 4);
            let train_len = load_data(&config, &Device::Cpu).unwrap().train_len;
            if train_len % 4 == 3 {
                Some((dir, config))
            } else {
                let _ = std::fs::remove_dir_all(&dir);
                None
            }
        })
        .expect("a folder size with a last batch of 3");
    let checkpoint = dir.join("run.safetensors");
    let config = TrainConfig {
        save: Some(checkpoint.clone()),
        ..config
    };
    let summary = run_data_parallel(&config, &[Device::Cpu, Device::Cpu], &mut |_| {})
        .unwrap_or_else(|e| panic!("the short last batch failed the epoch: {e}"));
    assert_eq!(summary.epochs.len(), 1);
    assert!(summary.epochs[0].train_loss.is_finite());
    assert!(checkpoint.is_file(), "the epoch's checkpoint was not saved");
    let _ = std::fs::remove_dir_all(&dir);
}
