//! `SampleLoader::num_workers` is capped at what can help: the available cores and the
//! samples of one batch. Asking for 20,000 threads for 21 images starts a handful, so the
//! first epoch begins at once, and batches stay identical to those built without workers.

use std::sync::mpsc::channel;
use std::time::Duration;

use anygrad_data::transforms::ToTensor;
use anygrad_data::{InMemoryImages, PixelImage, SampleLoader};
use anygrad_testing::values;

/// 21 small grey images with labels 0, 1, 2, 0, ...
fn images() -> InMemoryImages {
    let images = (0..21u8)
        .map(|index| PixelImage::new(3, 3, 1, vec![index; 9]).unwrap())
        .collect();
    let labels = (0..21).map(|index| index % 3).collect();
    InMemoryImages::new(images, labels)
        .unwrap()
        .transform(ToTensor)
}

/// Every batch of epoch 0, flattened.
fn epoch(loader: &SampleLoader) -> Vec<(Vec<f32>, Vec<f32>)> {
    loader
        .iter_epoch(0)
        .map(|batch| {
            let (inputs, labels) = batch.unwrap();
            (
                values(&inputs),
                values(&labels.to_dtype(anygrad_core::DType::F32).unwrap()),
            )
        })
        .collect()
}

#[test]
fn worker_count_is_capped_at_cores_and_batch() {
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    let loader = SampleLoader::new(images(), 4).unwrap().num_workers(20_000);
    assert_eq!(loader.requested_workers(), 20_000);
    assert_eq!(loader.worker_count(), cores.min(4));
    // The data set bounds it too when it is smaller than a batch.
    let small = SampleLoader::new(images(), 64).unwrap().num_workers(20_000);
    assert_eq!(small.worker_count(), cores.min(21));
    // Zero stays zero, and a modest request is kept.
    let none = SampleLoader::new(images(), 4).unwrap();
    assert_eq!(none.worker_count(), 0);
    let one = SampleLoader::new(images(), 4).unwrap().num_workers(1);
    assert_eq!(one.worker_count(), 1);
}

#[test]
fn twenty_thousand_workers_start_quickly_and_give_the_same_batches() {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        let loader = SampleLoader::new(images(), 4)
            .unwrap()
            .shuffle(3)
            .num_workers(20_000);
        let _ = sender.send(epoch(&loader));
    });
    let with_workers = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("an epoch of 21 images with --num-workers 20000 took over 60 s");
    let direct = SampleLoader::new(images(), 4).unwrap().shuffle(3);
    assert_eq!(with_workers, epoch(&direct));
    assert_eq!(with_workers.len(), 6);
}
