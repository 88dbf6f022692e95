//! `--dataset folder`: the small CNN learns from a folder of PNG digits written into a
//! temporary directory (the embedded 8×8 digits, resized to 28×28 by the folder pipeline with
//! augmentation on two worker threads), and wrong combinations are errors.

use anygrad_core::{Device, Error};
use anygrad_data::{digits, write_image_folder, PixelImage};
use anygrad_testing::temp_dir;
use anygrad_train::{run, DatasetKind, ModelKind, TrainConfig};

/// A folder of the first `count` embedded digits, one sub-folder per digit.
fn digit_folder(test: &str, count: usize) -> std::path::PathBuf {
    let dir = temp_dir(test);
    let (features, labels) = digits().unwrap();
    let images: Vec<PixelImage> = features
        .chunks(64)
        .take(count)
        .map(|pixels| {
            PixelImage::new(8, 8, 1, pixels.iter().map(|&v| (v * 15.0) as u8).collect()).unwrap()
        })
        .collect();
    let labels: Vec<usize> = labels.iter().take(count).map(|&l| l as usize).collect();
    let names: Vec<String> = (0..10).map(|d| d.to_string()).collect();
    write_image_folder(&dir, &names, &images, &labels).unwrap();
    dir
}

fn folder_config(dir: std::path::PathBuf) -> TrainConfig {
    TrainConfig {
        dataset: DatasetKind::Folder,
        data_dir: Some(dir),
        model: ModelKind::Cnn,
        epochs: 4,
        num_workers: 2,
        ..TrainConfig::default()
    }
}

#[test]
fn cnn_learns_from_an_image_folder() {
    let dir = digit_folder("train-folder-cnn", 250);
    let summary = run(&folder_config(dir), &Device::Cpu, &mut |_| {}).unwrap();
    assert_eq!(summary.epochs.len(), 4);
    // 200 training images, 50 held out; chance is 10 %.
    assert!(
        summary.final_test_accuracy >= 0.6,
        "test accuracy {}",
        summary.final_test_accuracy
    );
}

#[test]
fn folder_misuse_is_an_error() {
    let dir = digit_folder("train-folder-errors", 30);
    let mlp = TrainConfig {
        model: ModelKind::Mlp,
        ..folder_config(dir.clone())
    };
    assert!(matches!(
        run(&mlp, &Device::Cpu, &mut |_| {}),
        Err(Error::InvalidArgument { .. })
    ));
    let no_dir = TrainConfig {
        data_dir: None,
        ..folder_config(dir.clone())
    };
    let error = run(&no_dir, &Device::Cpu, &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("--data-dir"), "{error}");
    let wrong_size = TrainConfig {
        image_size: Some(32),
        ..folder_config(dir.clone())
    };
    assert!(run(&wrong_size, &Device::Cpu, &mut |_| {}).is_err());
    let missing = TrainConfig {
        data_dir: Some(dir.join("does-not-exist")),
        ..folder_config(dir)
    };
    let error = run(&missing, &Device::Cpu, &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("does-not-exist"), "{error}");
    // ResNet-18 takes RGB: the grey digits set is refused when the model is built.
    let resnet_digits = TrainConfig {
        model: ModelKind::Resnet18,
        ..TrainConfig::default()
    };
    let error = run(&resnet_digits, &Device::Cpu, &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("RGB"), "{error}");
}
