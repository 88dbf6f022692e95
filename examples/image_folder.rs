//! Training on a folder of images, written the way a torchvision script is: `ImageFolder`,
//! a `random_split` into train and validation, an augmenting `Compose` for training and a
//! plain one for validation, a `SampleLoader` with worker threads, ResNet-18 (or the small
//! CNN), Adam, and an accuracy per epoch.
//!
//! Run on any folder with one sub-folder of PNG/JPEG images per class:
//!
//! ```text
//! cargo run --release -p anygrad --example image_folder -- DIR [--epochs 5] [--model cnn]
//! ```
//!
//! No image folder at hand? Write one from the MNIST test images (IDX files) first:
//!
//! ```text
//! cargo run --release -p anygrad --example image_folder -- /tmp/mnist-png \
//!     --from-mnist path/to/mnist --count 2000 --epochs 0
//! ```
//!
//! which leaves `/tmp/mnist-png/0/00000.png` ... `/tmp/mnist-png/9/...`; `anygrad train
//! --dataset folder --data-dir /tmp/mnist-png --model resnet18` trains on the same folder.
//! `--loader-only` times one epoch of the training loader alone (decode, augment, collate,
//! upload; `--workers N` threads) and prints images per second.

use std::path::PathBuf;
use std::sync::Arc;

use anygrad::data::transforms::{
    CenterCrop, ColorJitter, Compose, Normalize, RandomCrop, Resize, ToTensor,
};
use anygrad::data::{
    random_split, write_image_folder, ImageFolder, Mnist, PixelImage, SampleDataset, SampleLoader,
    Transformed,
};
use anygrad::models::{ResNet, SmallCnn};
use anygrad::nn::{Adam, AdamConfig, CrossEntropyLoss, Module, Optimizer};
use anygrad::prelude::*;

/// Command-line options (kept to plain `std::env::args` parsing).
struct Options {
    dir: PathBuf,
    from_mnist: Option<PathBuf>,
    count: usize,
    epochs: usize,
    cnn: bool,
    workers: usize,
    loader_only: bool,
}

fn options() -> Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        dir: PathBuf::new(),
        from_mnist: None,
        count: 2000,
        epochs: 5,
        cnn: false,
        workers: 4,
        loader_only: false,
    };
    let usage = "usage: image_folder DIR [--from-mnist IDX_DIR] [--count N] [--epochs N] \
                 [--model cnn|resnet18] [--workers N] [--loader-only]";
    let number = |value: Option<String>| -> Result<usize> {
        value
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::invalid("image_folder", usage))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--from-mnist" => options.from_mnist = args.next().map(PathBuf::from),
            "--count" => options.count = number(args.next())?,
            "--epochs" => options.epochs = number(args.next())?,
            "--model" => options.cnn = args.next().as_deref() == Some("cnn"),
            "--workers" => options.workers = number(args.next())?,
            "--loader-only" => options.loader_only = true,
            _ if !arg.starts_with("--") => options.dir = PathBuf::from(arg),
            _ => return Err(Error::invalid("image_folder", usage)),
        }
    }
    if options.dir.as_os_str().is_empty() {
        return Err(Error::invalid("image_folder", usage));
    }
    Ok(options)
}

/// Write the first `count` MNIST test images as PNGs into `dir/<digit>/`.
fn export_mnist(idx_dir: &PathBuf, dir: &PathBuf, count: usize) -> Result<()> {
    let mut test = Mnist::load(idx_dir, false)?;
    test.truncate(count);
    let side = test.rows * test.cols;
    let images = test
        .pixels
        .chunks_exact(side)
        .map(|pixels| PixelImage::new(test.rows, test.cols, 1, pixels.to_vec()))
        .collect::<Result<Vec<_>>>()?;
    let labels: Vec<usize> = test.labels.iter().map(|&l| l as usize).collect();
    let names: Vec<String> = (0..10).map(|d| d.to_string()).collect();
    write_image_folder(dir, &names, &images, &labels)?;
    println!("wrote {} PNG images into {}", images.len(), dir.display());
    Ok(())
}

fn main() -> Result<()> {
    let options = options()?;
    if let Some(idx_dir) = &options.from_mnist {
        export_mnist(idx_dir, &options.dir, options.count)?;
    }
    if options.epochs == 0 {
        return Ok(());
    }
    let device = Device::best()?;
    anygrad::manual_seed(0);

    // datasets.ImageFolder(root) and random_split(dataset, [0.8, 0.2]).
    let (channels, side) = if options.cnn { (1, 28) } else { (3, 32) };
    let folder = Arc::new(ImageFolder::new(&options.dir)?.gray(channels == 1));
    let classes = folder.classes().len();
    let parts = random_split(folder, &[0.8, 0.2], 42)?;
    println!(
        "{} classes, {} training and {} validation images, on {}",
        classes,
        parts[0].len(),
        parts[1].len(),
        device.description()
    );

    // The torchvision pipelines: augment for training, resize and crop for validation.
    let normalize = Normalize::new(&vec![0.5; channels], &vec![0.25; channels])?;
    let square = Compose::new()
        .then(Resize::new(side)?)
        .then(CenterCrop::new(side)?);
    let mut augment = square.clone().then(RandomCrop::new(side, side / 8)?);
    if channels == 3 {
        augment = augment.then(ColorJitter::new(0.2, 0.2, 0.2, 0.0)?);
    }
    let train_set = Transformed::new(
        parts[0].clone(),
        augment.then(ToTensor).then(normalize.clone()),
    );
    let val_set = Transformed::new(parts[1].clone(), square.then(ToTensor).then(normalize));

    // DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4, drop_last=True).
    let train_loader = SampleLoader::new(train_set, 64)?
        .shuffle(0)
        .seed(0)
        .num_workers(options.workers)
        .drop_last(true)
        .to_device(&device);
    let val_loader = SampleLoader::new(val_set, 256)?
        .num_workers(options.workers)
        .to_device(&device);

    if options.loader_only {
        // The loader alone: decode, augment, collate and upload one epoch, no model.
        let started = std::time::Instant::now();
        let mut images = 0;
        for batch in train_loader.iter_epoch(0) {
            images += batch?.1.shape()[0];
        }
        device.synchronize()?;
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "loader alone: {images} images in {seconds:.2} s, {:.0} images/s with {} workers \
             ({} asked for; capped at the cores and the images of a batch)",
            images as f64 / seconds,
            train_loader.worker_count(),
            options.workers
        );
        return Ok(());
    }

    let model: Box<dyn Module> = if options.cnn {
        Box::new(SmallCnn::with_classes(classes, &device)?)
    } else {
        Box::new(ResNet::resnet18(classes, &device)?)
    };
    let loss_fn = CrossEntropyLoss::new();
    let mut optimizer = Adam::new(model.named_parameter_slots(), AdamConfig::new(1e-3))?;

    for epoch in 0..options.epochs {
        model.train();
        // The losses are read after the epoch: reading one per step would wait for the GPU
        // every step (PyTorch's loop in bench/pytorch_image_folder.py does not either).
        let (mut losses, mut trained) = (Vec::new(), 0);
        let started = std::time::Instant::now();
        for batch in train_loader.iter_epoch(epoch as u64) {
            let (images, labels) = batch?;
            optimizer.zero_grad();
            let loss = loss_fn.forward(&model.forward(&images)?, &labels)?;
            loss.backward()?;
            optimizer.step()?;
            losses.push(loss.detach());
            trained += labels.shape()[0];
        }
        device.synchronize()?;
        let seconds = started.elapsed().as_secs_f64();
        let batches = losses.len();
        let loss_sum = losses
            .iter()
            .map(|loss| loss.item_f64())
            .sum::<Result<f64>>()?;

        model.eval();
        let _no_grad = no_grad();
        let (mut correct, mut seen) = (0.0, 0);
        for batch in val_loader.iter_epoch(0) {
            let (images, labels) = batch?;
            let predicted = model.forward(&images)?.argmax(1, false)?;
            correct += predicted
                .eq(&labels.to_dtype(DType::I32)?)?
                .to_dtype(DType::F32)?
                .sum_all()?
                .item_f64()?;
            seen += labels.shape()[0];
        }
        println!(
            "epoch {:>2}: train loss {:.4}, validation accuracy {:.2}%, {:.0} training images/s",
            epoch + 1,
            loss_sum / batches.max(1) as f64,
            100.0 * correct / seen.max(1) as f64,
            trained as f64 / seconds
        );
    }
    Ok(())
}
