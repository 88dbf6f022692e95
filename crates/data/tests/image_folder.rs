//! Per-sample data end to end: `ImageFolder` scanning and decoding (PNG and JPEG, errors
//! naming the file), `SampleDataset` plumbing (`Subset`, `random_split`, `Transformed`,
//! `collate`), and `SampleLoader` (batches identical for every worker count, seeded
//! shuffle and augmentation, `drop_last`, errors instead of panics, delivery on a device).
//! Images are written into temporary folders from the embedded 8×8 digits, so nothing
//! large is committed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anygrad_core::{Device, Error, Result, Tensor};
use anygrad_data::transforms::{
    CenterCrop, ColorJitter, Compose, Lambda, Normalize, RandomCrop, RandomHorizontalFlip,
    RandomResizedCrop, Resize, ToTensor,
};
use anygrad_data::{
    collate, digits, random_split, random_split_lengths, write_image_folder, ChwImage, Image,
    ImageFolder, InMemoryImages, PixelImage, Sample, SampleDataset, SampleLoader, Subset,
    Transformed,
};
use anygrad_testing::{device_tests, temp_dir};

/// The first `count` embedded digits as 8×8 grey images (0..16 scaled to 0..240) with
/// their labels.
fn digit_images(count: usize) -> (Vec<PixelImage>, Vec<usize>) {
    let (features, labels) = digits().unwrap();
    let images = features
        .chunks(64)
        .take(count)
        .map(|pixels| {
            let data = pixels.iter().map(|&v| (v * 15.0) as u8).collect();
            PixelImage::new(8, 8, 1, data).unwrap()
        })
        .collect();
    let labels = labels.iter().take(count).map(|&l| l as usize).collect();
    (images, labels)
}

/// A folder of the first `count` digits, classes named `digit-N`.
fn digit_folder(test: &str, count: usize) -> (PathBuf, Vec<PixelImage>, Vec<usize>) {
    let dir = temp_dir(test);
    let (images, labels) = digit_images(count);
    let names: Vec<String> = (0..10).map(|d| format!("digit-{d}")).collect();
    write_image_folder(&dir, &names, &images, &labels).unwrap();
    (dir, images, labels)
}

fn to_tensor_pipeline() -> Compose {
    Compose::new().then(ToTensor)
}

/// Every batch of one epoch as host vectors.
fn epoch(loader: &SampleLoader, epoch: u64) -> Vec<(Vec<f32>, Vec<i32>)> {
    loader
        .iter_epoch(epoch)
        .map(|batch| {
            let (x, y) = batch.unwrap();
            (x.to_vec::<f32>().unwrap(), y.to_vec::<i32>().unwrap())
        })
        .collect()
}

#[test]
fn image_folder_scans_like_torchvision() {
    let dir = temp_dir("folder-scan");
    let pixel = |v: u8| PixelImage::new(2, 3, 3, vec![v; 18]).unwrap();
    // Classes are created out of order; nested folders count; other files are skipped.
    for (path, value) in [
        ("zebra/b.png", 1),
        ("zebra/a.PNG", 2),
        ("apple/nested/deep.png", 3),
        ("apple/c.png", 4),
        ("Mango/x.png", 5),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        pixel(value).save_png(&path).unwrap();
    }
    std::fs::write(dir.join("apple/notes.txt"), "not an image").unwrap();
    std::fs::write(dir.join("README"), "a file at the root is not a class").unwrap();
    let jpeg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/transforms_rgb.jpg");
    std::fs::copy(&jpeg, dir.join("zebra/photo.jpg")).unwrap();

    let folder = ImageFolder::new(&dir).unwrap();
    // Code-point order, as Python's sorted(): upper case first.
    assert_eq!(folder.classes(), ["Mango", "apple", "zebra"]);
    assert_eq!(folder.class_index("apple"), Some(1));
    let names: Vec<String> = folder
        .samples()
        .iter()
        .map(|(path, _)| path.strip_prefix(&dir).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "Mango/x.png",
            "apple/c.png",
            "apple/nested/deep.png",
            "zebra/a.PNG",
            "zebra/b.png",
            "zebra/photo.jpg"
        ]
    );
    assert_eq!(folder.targets(), [0, 1, 1, 2, 2, 2]);
    let sample = folder.get(2).unwrap();
    assert_eq!(sample.label, 1);
    assert_eq!(sample.image, Image::Pixels(pixel(3)));
    let photo = folder.get(5).unwrap();
    assert_eq!(
        (
            photo.image.height(),
            photo.image.width(),
            photo.image.channels()
        ),
        (9, 12, 3)
    );
    // Grey mode converts on load.
    let gray = ImageFolder::new(&dir).unwrap().gray(true);
    assert_eq!(gray.get(0).unwrap().image.channels(), 1);
}

#[test]
fn written_digits_read_back_exactly() {
    let (dir, images, labels) = digit_folder("folder-roundtrip", 40);
    let folder = ImageFolder::new(&dir).unwrap().gray(true);
    assert_eq!(folder.len(), 40);
    assert_eq!(folder.classes().len(), 10);
    // Files are per class in write order, so compare as multisets per class.
    for class in 0..10 {
        let mut written: Vec<Vec<u8>> = images
            .iter()
            .zip(&labels)
            .filter(|(_, &l)| l == class)
            .map(|(image, _)| image.data().to_vec())
            .collect();
        let mut read: Vec<Vec<u8>> = (0..folder.len())
            .filter(|&i| folder.samples()[i].1 == class as i32)
            .map(|i| folder.load(i).unwrap().into_data())
            .collect();
        written.sort();
        read.sort();
        assert_eq!(written, read, "class {class}");
    }
}

fn assert_format_error_naming(result: Result<impl std::fmt::Debug>, path: &Path) {
    match result {
        Err(error @ Error::Format { .. }) => {
            let text = error.to_string();
            assert!(
                text.contains(&path.display().to_string()),
                "error should name {}: {text}",
                path.display()
            );
        }
        other => panic!(
            "expected a Format error naming {}, got {other:?}",
            path.display()
        ),
    }
}

#[test]
fn bad_folders_and_files_are_errors_naming_the_path() {
    let missing = temp_dir("folder-missing").join("nope");
    match ImageFolder::new(&missing) {
        Err(error @ Error::Io { .. }) => assert!(error.to_string().contains("nope")),
        other => panic!("expected Io, got {other:?}"),
    }
    let empty = temp_dir("folder-empty");
    assert_format_error_naming(ImageFolder::new(&empty), &empty);
    let no_images = temp_dir("folder-no-images");
    std::fs::create_dir_all(no_images.join("cats")).unwrap();
    std::fs::write(no_images.join("cats/a.txt"), "text").unwrap();
    assert_format_error_naming(ImageFolder::new(&no_images), &no_images.join("cats"));

    let (dir, _, _) = digit_folder("folder-corrupt", 10);
    let good = dir.join("digit-0/00000.png");
    let bytes = std::fs::read(&good).unwrap();
    let truncated = dir.join("digit-1/truncated.png");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let garbage = dir.join("digit-2/garbage.jpg");
    std::fs::write(&garbage, b"\xFF\xD8\xFF\xE0 not really a jpeg").unwrap();
    let text = dir.join("digit-3/text.png");
    std::fs::write(&text, "hello").unwrap();
    let folder = ImageFolder::new(&dir).unwrap();
    for path in [&truncated, &garbage, &text] {
        let index = folder
            .samples()
            .iter()
            .position(|(p, _)| p == path)
            .unwrap();
        assert_format_error_naming(folder.get(index), path);
    }
    assert!(matches!(
        folder.get(folder.len()),
        Err(Error::InvalidArgument { .. })
    ));
    // The loader reports the corrupt file instead of panicking, with and without workers.
    for workers in [0, 2] {
        let dataset = Transformed::new(ImageFolder::new(&dir).unwrap(), to_tensor_pipeline());
        let loader = SampleLoader::new(dataset, 4).unwrap().num_workers(workers);
        let results: Vec<_> = loader.iter_epoch(0).collect();
        let error = results
            .iter()
            .find_map(|r| r.as_ref().err())
            .expect("a corrupt file must surface as an error")
            .to_string();
        assert!(
            ["truncated.png", "garbage.jpg", "text.png"]
                .iter()
                .any(|name| error.contains(name)),
            "{error}"
        );
        assert!(
            results.last().unwrap().is_err(),
            "the epoch ends at the error"
        );
    }
}

#[test]
fn collate_stacks_and_rejects_mismatches() {
    let chw =
        |value: f32, h: usize| Image::Chw(ChwImage::new(1, h, 2, vec![value; h * 2]).unwrap());
    let samples = vec![
        Sample {
            image: chw(1.0, 2),
            label: 3,
        },
        Sample {
            image: chw(2.0, 2),
            label: 4,
        },
    ];
    let (x, y) = collate(samples).unwrap();
    assert_eq!(x.shape(), &[2, 1, 2, 2]);
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]
    );
    assert_eq!(y.to_vec::<i32>().unwrap(), [3, 4]);
    let mixed = vec![
        Sample {
            image: chw(1.0, 2),
            label: 0,
        },
        Sample {
            image: chw(1.0, 3),
            label: 0,
        },
    ];
    assert!(matches!(collate(mixed), Err(Error::ShapeMismatch { .. })));
    let pixels = vec![Sample {
        image: Image::Pixels(PixelImage::new(1, 1, 1, vec![0]).unwrap()),
        label: 0,
    }];
    let error = collate(pixels).unwrap_err();
    assert!(error.to_string().contains("ToTensor"), "{error}");
    assert!(collate(Vec::new()).is_err());
}

#[test]
fn random_split_and_subset() {
    let (images, labels) = digit_images(103);
    let labels: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
    let dataset = Arc::new(InMemoryImages::new(images, labels).unwrap());
    let parts = random_split(dataset.clone(), &[0.7, 0.2, 0.1], 5).unwrap();
    // floor(72.1), floor(20.6), floor(10.3) = 72 + 20 + 10 = 102; one left over goes to part 0.
    let sizes: Vec<usize> = parts.iter().map(|p| p.len()).collect();
    assert_eq!(sizes, [73, 20, 10]);
    let mut all: Vec<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..103).collect::<Vec<_>>(), "disjoint and complete");
    let again = random_split(dataset.clone(), &[0.7, 0.2, 0.1], 5).unwrap();
    assert_eq!(again[1].indices(), parts[1].indices(), "seeded");
    let other = random_split(dataset.clone(), &[0.7, 0.2, 0.1], 6).unwrap();
    assert_ne!(other[1].indices(), parts[1].indices());
    // A subset's sample i is the dataset's sample indices[i].
    let part = &parts[2];
    for i in 0..part.len() {
        assert_eq!(
            part.get(i).unwrap(),
            dataset.get(part.indices()[i]).unwrap()
        );
    }
    assert!(part.get(part.len()).is_err());
    assert_eq!(
        random_split_lengths(dataset.clone(), &[3, 100], 0).unwrap()[0].len(),
        3
    );
    for bad in [&[0.5, 0.4][..], &[1.2, -0.2], &[], &[f64::NAN, 1.0]] {
        assert!(matches!(
            random_split(dataset.clone(), bad, 0),
            Err(Error::InvalidArgument { .. })
        ));
    }
    assert!(random_split_lengths(dataset.clone(), &[3, 3], 0).is_err());
    assert!(Subset::new(dataset, vec![0, 103]).is_err());
}

/// Digits resized to 12×12, randomly cropped, flipped and jittered: every random transform
/// in one pipeline.
fn augmented_digits(count: usize) -> InMemoryImages {
    let (images, labels) = digit_images(count);
    let labels: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
    let pipeline = Compose::new()
        .then(Resize::new(12).unwrap())
        .then(RandomResizedCrop::new(10).unwrap().scale(0.5, 1.0).unwrap())
        .then(RandomCrop::new(10, 2).unwrap())
        .then(RandomHorizontalFlip::new(0.5).unwrap())
        .then(ColorJitter::new(0.3, 0.3, 0.3, 0.0).unwrap())
        .then(ToTensor)
        .then(Normalize::new(&[0.5], &[0.25]).unwrap());
    InMemoryImages::new(images, labels)
        .unwrap()
        .transform(pipeline)
}

#[test]
fn batches_do_not_depend_on_worker_count() {
    let dataset = Arc::new(augmented_digits(45));
    let loader = |workers: usize| {
        SampleLoader::from_arc(dataset.clone(), 8)
            .unwrap()
            .shuffle(3)
            .seed(11)
            .num_workers(workers)
    };
    let reference = epoch(&loader(0), 2);
    assert_eq!(reference.len(), 6);
    assert_eq!(reference[5].1.len(), 5, "last partial batch kept");
    for workers in [1, 3] {
        assert_eq!(epoch(&loader(workers), 2), reference, "{workers} workers");
    }
    // Another epoch: another order and other augmentations of the same samples.
    let next = epoch(&loader(2), 3);
    assert_ne!(next, reference);
    let mut labels: Vec<i32> = next.iter().flat_map(|(_, y)| y.clone()).collect();
    let mut expected: Vec<i32> = dataset.labels().to_vec();
    labels.sort_unstable();
    expected.sort_unstable();
    assert_eq!(labels, expected, "every sample once per epoch");
    // Another augmentation seed changes the pixels but not the order.
    let reseeded = epoch(&loader(0).seed(12), 2);
    assert_eq!(reseeded[0].1, reference[0].1);
    assert_ne!(reseeded[0].0, reference[0].0);
}

#[test]
fn drop_last_shapes_and_sample_seeds() {
    let loader = SampleLoader::new(augmented_digits(21), 4)
        .unwrap()
        .drop_last(true)
        .num_workers(2);
    assert_eq!(loader.len(), 5);
    let batches = epoch(&loader, 0);
    assert_eq!(batches.len(), 5);
    assert!(batches
        .iter()
        .all(|(x, y)| x.len() == 4 * 100 && y.len() == 4));
    // Without shuffling, sample i of epoch e is what `sample(i, rng of (seed, e, i))` gives.
    let dataset = augmented_digits(21);
    let mut rng = anygrad_data::SplitMix64::new(anygrad_data::sample_seed(0, 0, 5));
    let sample = dataset.sample(5, &mut rng).unwrap();
    let Image::Chw(chw) = sample.image else {
        panic!("the pipeline ends in ToTensor")
    };
    assert_eq!(&batches[1].0[100..200], chw.data());
    assert!(SampleLoader::new(augmented_digits(3), 0).is_err());
    let empty = SampleLoader::new(augmented_digits(3), 4)
        .unwrap()
        .drop_last(true);
    assert!(empty.is_empty());
    assert_eq!(empty.iter().count(), 0);
}

#[test]
fn transform_errors_and_panics_end_the_epoch_with_an_error() {
    // 8-bit images reach collate: an error with the ToTensor hint.
    let (images, labels) = digit_images(6);
    let labels: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
    let raw = InMemoryImages::new(images.clone(), labels.clone()).unwrap();
    for workers in [0, 2] {
        let loader = SampleLoader::new(raw.clone(), 4)
            .unwrap()
            .num_workers(workers);
        let first = loader.iter_epoch(0).next().unwrap();
        assert!(first.unwrap_err().to_string().contains("ToTensor"));
    }
    // A panicking transform on a worker becomes an error, not a crash of the consumer.
    let panicking = InMemoryImages::new(images, labels)
        .unwrap()
        .transform(Lambda::new(
            |_image: Image, _rng: &mut anygrad_data::SplitMix64| -> Result<Image> {
                panic!("user transform exploded")
            },
        ));
    let loader = SampleLoader::new(panicking, 2).unwrap().num_workers(2);
    let results: Vec<_> = loader.iter_epoch(0).collect();
    assert_eq!(results.len(), 1);
    let error = results[0].as_ref().unwrap_err().to_string();
    assert!(error.contains("user transform exploded"), "{error}");
    // Dropping an iterator half-way stops the producer (the test would hang otherwise).
    let loader = SampleLoader::new(augmented_digits(40), 2)
        .unwrap()
        .num_workers(2)
        .prefetch(1);
    let mut batches = loader.iter_epoch(0);
    assert!(batches.next().unwrap().is_ok());
    drop(batches);
}

#[test]
fn folder_pipeline_trains_shapes_end_to_end() {
    let (dir, _, _) = digit_folder("folder-pipeline", 30);
    let folder = Arc::new(ImageFolder::new(&dir).unwrap().gray(true));
    let parts = random_split(folder, &[0.8, 0.2], 1).unwrap();
    let train = Transformed::new(
        parts[0].clone(),
        Compose::new()
            .then(Resize::new(16).unwrap())
            .then(CenterCrop::new(14).unwrap())
            .then(RandomCrop::new(14, 2).unwrap())
            .then(ToTensor),
    );
    let loader = SampleLoader::new(train, 8)
        .unwrap()
        .shuffle(0)
        .num_workers(2);
    let mut seen = 0;
    for batch in &loader {
        let (x, y) = batch.unwrap();
        assert_eq!(&x.shape()[1..], &[1, 14, 14]);
        assert_eq!(y.dtype(), anygrad_core::DType::I32);
        seen += y.shape()[0];
    }
    assert_eq!(seen, 24);
}

fn loader_delivers_on_the_device(device: &Device) {
    let cpu = SampleLoader::new(augmented_digits(10), 4)
        .unwrap()
        .shuffle(1);
    let on_device = SampleLoader::new(augmented_digits(10), 4)
        .unwrap()
        .shuffle(1)
        .num_workers(2)
        .to_device(device);
    let expected = epoch(&cpu, 0);
    let batches: Vec<(Tensor, Tensor)> = on_device.iter_epoch(0).map(|b| b.unwrap()).collect();
    assert_eq!(batches.len(), expected.len());
    for ((x, y), (ex, ey)) in batches.iter().zip(&expected) {
        assert_eq!(x.device(), device);
        assert_eq!(&x.to_vec::<f32>().unwrap(), ex);
        assert_eq!(&y.to_vec::<i32>().unwrap(), ey);
    }
}

device_tests!(loader_delivers_on_the_device);
