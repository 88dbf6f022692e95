//! What an image folder imposes on a run, settled before any training: a one-sample last
//! batch is dropped for ResNet-18 (its batch norm cannot train on one image) and the run says
//! so once; a training set of one sample, `--batch-size 1` with batch norm and an absurd
//! `--image-size` are refused up front; and `--num-workers` beyond what helps is capped with
//! a note.

use std::path::PathBuf;

use anygrad_core::{Device, Error};
use anygrad_data::{write_image_folder, PixelImage};
use anygrad_testing::temp_dir;
use anygrad_train::{run, DatasetKind, Event, ModelKind, TrainConfig, TrainSummary};

/// A folder of `count` small RGB images in two classes (`count / 2` each, rounded up for
/// the first): `8 × 8` pixels of a few colours.
fn rgb_folder(test: &str, count: usize) -> PathBuf {
    let dir = temp_dir(test);
    let images: Vec<PixelImage> = (0..count)
        .map(|index| {
            let data = (0..8 * 8 * 3)
                .map(|value| ((value * 7 + index * 31) % 256) as u8)
                .collect();
            PixelImage::new(8, 8, 3, data).unwrap()
        })
        .collect();
    let labels: Vec<usize> = (0..count).map(|index| index % 2).collect();
    let names = vec!["even".to_string(), "odd".to_string()];
    write_image_folder(&dir, &names, &images, &labels).unwrap();
    dir
}

fn folder_config(dir: PathBuf, model: ModelKind) -> TrainConfig {
    TrainConfig {
        dataset: DatasetKind::Folder,
        data_dir: Some(dir),
        model,
        epochs: 1,
        num_workers: 0,
        augment: false,
        ..TrainConfig::default()
    }
}

/// Run `config` on the CPU, collecting the notes it gives.
fn run_with_notes(config: &TrainConfig) -> (anygrad_core::Result<TrainSummary>, Vec<String>) {
    let mut notes = Vec::new();
    let result = run(config, &Device::Cpu, &mut |event| {
        if let Event::Note(note) = event {
            notes.push(note);
        }
    });
    (result, notes)
}

fn invalid_argument_message(result: anygrad_core::Result<TrainSummary>) -> String {
    match result {
        Err(error @ Error::InvalidArgument { .. }) => error.to_string(),
        other => panic!(
            "expected an InvalidArgument error, got {:?}",
            other.map(|_| ())
        ),
    }
}

#[test]
fn resnet18_drops_a_one_image_last_batch_and_says_so_once() {
    // Six images split 5 / 1: batches of 2 leave one image over.
    let dir = rgb_folder("folder-batches-drop-last", 6);
    let checkpoint = dir.join("model.ckpt");
    let config = TrainConfig {
        batch_size: 2,
        epochs: 2,
        save: Some(checkpoint.clone()),
        ..folder_config(dir.clone(), ModelKind::Resnet18)
    };
    let mut batches = Vec::new();
    let mut notes = Vec::new();
    let summary = run(&config, &Device::Cpu, &mut |event| match event {
        Event::EpochStart { batches: count, .. } => batches.push(count),
        Event::Note(note) => notes.push(note),
        _ => {}
    })
    .unwrap();
    assert_eq!(summary.epochs.len(), 2);
    assert_eq!(
        batches,
        vec![2, 2],
        "5 images in batches of 2, the last one dropped"
    );
    let dropping: Vec<&String> = notes.iter().filter(|n| n.contains("drop_last")).collect();
    assert_eq!(dropping.len(), 1, "one note, not one per epoch: {notes:?}");
    assert!(dropping[0].contains("batch norm"), "{}", dropping[0]);
    assert!(checkpoint.is_file(), "the run saved its checkpoint");
    // The small CNN has no batch norm: it keeps the last image.
    let cnn = TrainConfig {
        batch_size: 2,
        ..folder_config(dir.clone(), ModelKind::Cnn)
    };
    let mut cnn_batches = Vec::new();
    let mut cnn_notes = Vec::new();
    run(&cnn, &Device::Cpu, &mut |event| match event {
        Event::EpochStart { batches: count, .. } => cnn_batches.push(count),
        Event::Note(note) => cnn_notes.push(note),
        _ => {}
    })
    .unwrap();
    assert_eq!(cnn_batches, vec![3]);
    assert!(cnn_notes.is_empty(), "{cnn_notes:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn one_training_sample_and_single_image_batches_are_refused_up_front() {
    let dir = rgb_folder("folder-batches-one-sample", 6);
    for model in [ModelKind::Resnet18, ModelKind::Cnn] {
        let config = TrainConfig {
            limit_train: Some(1),
            ..folder_config(dir.clone(), model)
        };
        let (result, _) = run_with_notes(&config);
        let message = invalid_argument_message(result);
        assert!(message.contains("single sample"), "{message}");
        assert!(message.contains("--limit-train"), "{message}");
    }
    let batch_of_one = TrainConfig {
        batch_size: 1,
        ..folder_config(dir.clone(), ModelKind::Resnet18)
    };
    let (result, _) = run_with_notes(&batch_of_one);
    let message = invalid_argument_message(result);
    assert!(message.contains("--batch-size 1"), "{message}");
    assert!(message.contains("batch norm"), "{message}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn image_size_is_bounded_up_front() {
    let dir = rgb_folder("folder-batches-image-size", 6);
    for side in [100_000usize, 4_294_967_296, usize::MAX] {
        let config = TrainConfig {
            image_size: Some(side),
            ..folder_config(dir.clone(), ModelKind::Resnet18)
        };
        let (result, _) = run_with_notes(&config);
        let message = invalid_argument_message(result);
        assert!(message.contains("--image-size"), "{message}");
        assert!(message.contains(&side.to_string()), "{message}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn too_many_workers_are_capped_with_a_note() {
    let dir = rgb_folder("folder-batches-workers", 21);
    let config = TrainConfig {
        num_workers: 20_000,
        batch_size: 8,
        ..folder_config(dir.clone(), ModelKind::Cnn)
    };
    let started = std::time::Instant::now();
    let (result, notes) = run_with_notes(&config);
    result.unwrap();
    assert!(
        started.elapsed().as_secs() < 120,
        "an epoch of 21 images took {:?}",
        started.elapsed()
    );
    let capped: Vec<&String> = notes
        .iter()
        .filter(|n| n.contains("--num-workers"))
        .collect();
    assert_eq!(capped.len(), 1, "{notes:?}");
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    assert!(
        capped[0].contains(&format!("{cores} available")),
        "{}",
        capped[0]
    );
    // A request that fits gives no note.
    let fitting = TrainConfig {
        num_workers: 1,
        ..config
    };
    let (result, notes) = run_with_notes(&fitting);
    result.unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    std::fs::remove_dir_all(dir).unwrap();
}
