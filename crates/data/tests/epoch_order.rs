//! One rule decides an epoch's sample order for both loaders: `epoch_order` gives the
//! permutation of `seed + epoch` (the orders pinned here are those of SplitMix64
//! Fisher–Yates, written out independently), and `DataLoader` and `SampleLoader` over the
//! same samples with the same seed deliver the same batches, epoch by epoch, with and
//! without `drop_last`, through `iter_epoch` and through `iter` / `set_epoch`.

use anygrad_core::{Device, Result, Tensor};
use anygrad_data::transforms::ToTensor;
use anygrad_data::{epoch_order, DataLoader, InMemoryImages, PixelImage, SampleLoader};
use anygrad_data::{permutation, TensorDataset};

const SAMPLES: usize = 23;

/// `SAMPLES` one-value samples whose label is their index, as a batch dataset.
fn batch_dataset() -> TensorDataset {
    let features: Vec<f32> = (0..SAMPLES).map(|i| i as f32).collect();
    let labels: Vec<i32> = (0..SAMPLES as i32).collect();
    TensorDataset::from_vecs(features, &[1], labels, &Device::Cpu).unwrap()
}

/// The same samples as one-pixel images, for the per-sample loader.
fn sample_dataset() -> InMemoryImages {
    let images = (0..SAMPLES)
        .map(|i| PixelImage::new(1, 1, 1, vec![i as u8]).unwrap())
        .collect();
    let labels = (0..SAMPLES as i32).collect();
    InMemoryImages::new(images, labels)
        .unwrap()
        .transform(ToTensor)
}

/// The labels of every batch of an epoch.
fn labels(batches: impl Iterator<Item = Result<(Tensor, Tensor)>>) -> Vec<Vec<usize>> {
    batches
        .map(|batch| {
            let (_, labels) = batch.unwrap();
            labels
                .to_vec::<i32>()
                .unwrap()
                .into_iter()
                .map(|label| label as usize)
                .collect()
        })
        .collect()
}

#[test]
fn epoch_order_is_the_permutation_of_seed_plus_epoch() {
    let pinned = [
        vec![9, 5, 8, 6, 1, 2, 4, 7, 0, 3],
        vec![2, 7, 4, 9, 1, 0, 3, 8, 5, 6],
        vec![8, 4, 3, 7, 0, 1, 5, 2, 9, 6],
    ];
    for (epoch, expected) in pinned.iter().enumerate() {
        assert_eq!(&epoch_order(10, Some(7), epoch as u64), expected);
        assert_eq!(&permutation(10, 7 + epoch as u64), expected);
    }
    // The seed wraps: seed u64::MAX in epoch 1 draws from seed 0.
    assert_eq!(
        epoch_order(10, Some(u64::MAX), 1),
        vec![4, 9, 2, 5, 1, 7, 6, 0, 3, 8]
    );
    assert_eq!(epoch_order(4, None, 5), vec![0, 1, 2, 3]);
    assert!(epoch_order(0, Some(1), 0).is_empty());
}

#[test]
fn both_loaders_deliver_the_same_epochs() {
    for (seed, batch_size, drop_last) in [
        (Some(3), 5, false),
        (Some(3), 5, true),
        (Some(u64::MAX - 1), 4, false),
        (None, 6, true),
        (Some(11), 30, true),
    ] {
        let mut data = DataLoader::new(batch_dataset(), batch_size)
            .unwrap()
            .drop_last(drop_last);
        let mut samples = SampleLoader::new(sample_dataset(), batch_size)
            .unwrap()
            .drop_last(drop_last);
        if let Some(seed) = seed {
            data = data.shuffle(seed);
            samples = samples.shuffle(seed);
        }
        assert_eq!(data.len(), samples.len());
        for epoch in 0..4 {
            let expected: Vec<Vec<usize>> = epoch_order(SAMPLES, seed, epoch)
                .chunks(batch_size)
                .filter(|chunk| !drop_last || chunk.len() == batch_size)
                .map(<[usize]>::to_vec)
                .collect();
            let case = format!("seed {seed:?}, batch {batch_size}, drop_last {drop_last}");
            assert_eq!(labels(data.iter_epoch(epoch)), expected, "{case}");
            assert_eq!(labels(samples.iter_epoch(epoch)), expected, "{case}");
            assert_eq!(data.epoch_order(epoch), samples.epoch_order(epoch));
        }
        // `iter` walks the same epochs from where `set_epoch` put it.
        data.set_epoch(2);
        samples.set_epoch(2);
        for _ in 0..2 {
            assert_eq!(labels(data.iter()), labels(samples.iter()));
        }
        assert_eq!(labels(data.iter()), labels(data.iter_epoch(4)));
        assert_eq!(labels(samples.iter()), labels(samples.iter_epoch(4)));
    }
}
