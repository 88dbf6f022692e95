//! File-level tests of the IDX / MNIST readers: the real MNIST and Fashion-MNIST files when
//! they are present (visibly skipped when not), and damaged files written to a temporary
//! directory, which must give `Error::Format` / `Error::Io` naming the file.

use std::path::{Path, PathBuf};

use anygrad_core::Error;
use anygrad_data::{
    encode_idx_images, encode_idx_labels, read_idx_images, read_idx_labels, IdxImages, Mnist,
    PixelScaling,
};
use anygrad_testing::{gzip, temp_dir};

/// `/work/shared/data/mnist` seen from this crate: `crates/data/../../../shared/data/mnist`.
fn mnist_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mnist")
}

fn tiny_images(count: usize) -> IdxImages {
    IdxImages {
        count,
        rows: 4,
        cols: 5,
        pixels: (0..count * 20).map(|i| (i * 7 % 256) as u8).collect(),
    }
}

/// Write a tiny MNIST-named split into `dir` (gzip or raw).
fn write_split(dir: &Path, stem: &str, images: &IdxImages, labels: &[u8], gz: bool) {
    let (image_bytes, label_bytes) = (encode_idx_images(images), encode_idx_labels(labels));
    let (image_bytes, label_bytes, suffix) = if gz {
        (gzip(&image_bytes), gzip(&label_bytes), ".gz")
    } else {
        (image_bytes, label_bytes, "")
    };
    std::fs::write(
        dir.join(format!("{stem}-images-idx3-ubyte{suffix}")),
        image_bytes,
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{stem}-labels-idx1-ubyte{suffix}")),
        label_bytes,
    )
    .unwrap();
}

fn assert_format_naming(error: Error, file: &Path) {
    match error {
        Error::Format { ref context, .. } => {
            assert!(
                context.contains(&*file.file_name().unwrap().to_string_lossy()),
                "error should name {}: {error}",
                file.display()
            )
        }
        other => panic!("expected Error::Format, got {other:?}"),
    }
}

#[test]
fn real_mnist_when_present() {
    let dir = mnist_dir();
    if !dir.join("train-images-idx3-ubyte.gz").exists() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Data,
            "real_mnist_when_present",
            &format!("MNIST not found at {}", dir.display()),
        );
        return;
    }
    let train = Mnist::load(&dir, true).expect("load MNIST train");
    assert_eq!((train.count, train.rows, train.cols), (60_000, 28, 28));
    assert_eq!(train.pixels.len(), 60_000 * 784);
    assert_eq!(&train.labels[..5], &[5, 0, 4, 1, 9]);
    let test = Mnist::load(&dir, false).expect("load MNIST test");
    assert_eq!((test.count, test.rows, test.cols), (10_000, 28, 28));
    assert_eq!(&test.labels[..3], &[7, 2, 1]);
    // The mean of the training pixels in [0, 1] is the famous 0.1307.
    let features = train.features(PixelScaling::UnitRange);
    let mean = features.iter().map(|&x| x as f64).sum::<f64>() / features.len() as f64;
    assert!((mean - 0.1307).abs() < 1e-3, "mean {mean}");
}

#[test]
fn fashion_mnist_when_present() {
    let dir = Path::new("/usr/share/datasets/fashion-mnist");
    if !dir.join("t10k-images-idx3-ubyte.gz").exists() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Data,
            "fashion_mnist_when_present",
            &format!(
                "Fashion-MNIST not found at {} (apt-get install dataset-fashion-mnist)",
                dir.display()
            ),
        );
        return;
    }
    let test = Mnist::load(dir, false).expect("load Fashion-MNIST test");
    assert_eq!((test.count, test.rows, test.cols), (10_000, 28, 28));
    let mut counts = [0usize; 10];
    for &label in &test.labels {
        counts[label as usize] += 1;
    }
    assert_eq!(counts, [1000; 10]);
}

#[test]
fn synthetic_split_round_trips_raw_and_gzip() {
    for gz in [false, true] {
        let dir = temp_dir(&format!("roundtrip-{gz}"));
        let images = tiny_images(6);
        let labels = [0, 1, 2, 9, 8, 7];
        write_split(&dir, "t10k", &images, &labels, gz);
        let loaded = Mnist::load(&dir, false).unwrap();
        assert_eq!(loaded.pixels, images.pixels);
        assert_eq!(loaded.labels, labels);
        assert_eq!((loaded.count, loaded.rows, loaded.cols), (6, 4, 5));
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn missing_files_are_io_errors_naming_the_path() {
    let dir = temp_dir("missing");
    match Mnist::load(&dir, true) {
        Err(Error::Io { context, .. }) => assert!(context.contains("train-images-idx3-ubyte")),
        other => panic!("expected Error::Io, got {other:?}"),
    }
    let path = dir.join("nope-labels-idx1-ubyte");
    match read_idx_labels(&path) {
        Err(Error::Io { context, .. }) => assert!(context.contains("nope-labels-idx1-ubyte")),
        other => panic!("expected Error::Io, got {other:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncated_files_are_format_errors() {
    let dir = temp_dir("truncated");
    let bytes = encode_idx_images(&tiny_images(3));
    let raw = dir.join("cut-images-idx3-ubyte");
    std::fs::write(&raw, &bytes[..bytes.len() - 5]).unwrap();
    assert_format_naming(read_idx_images(&raw).unwrap_err(), &raw);
    let gz = dir.join("cut-images-idx3-ubyte.gz");
    let compressed = gzip(&bytes);
    std::fs::write(&gz, &compressed[..compressed.len() / 2]).unwrap();
    assert_format_naming(read_idx_images(&gz).unwrap_err(), &gz);
    // A gzip of a truncated IDX file: the stream is fine, the content is short.
    let gz_short = dir.join("short-images-idx3-ubyte.gz");
    std::fs::write(&gz_short, gzip(&bytes[..20])).unwrap();
    assert_format_naming(read_idx_images(&gz_short).unwrap_err(), &gz_short);
    let empty = dir.join("empty-labels-idx1-ubyte");
    std::fs::write(&empty, b"").unwrap();
    assert_format_naming(read_idx_labels(&empty).unwrap_err(), &empty);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_magic_is_format_error() {
    let dir = temp_dir("magic");
    let path = dir.join("swapped-images-idx3-ubyte");
    std::fs::write(&path, encode_idx_labels(&[1, 2, 3])).unwrap();
    assert_format_naming(read_idx_images(&path).unwrap_err(), &path);
    let text = dir.join("text-labels-idx1-ubyte");
    std::fs::write(&text, b"<html>404 not found</html>").unwrap();
    assert_format_naming(read_idx_labels(&text).unwrap_err(), &text);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn inconsistent_splits_are_format_errors() {
    let dir = temp_dir("inconsistent");
    write_split(&dir, "train", &tiny_images(4), &[1, 2, 3], false);
    let labels_path = dir.join("train-labels-idx1-ubyte");
    assert_format_naming(Mnist::load(&dir, true).unwrap_err(), &labels_path);
    write_split(&dir, "train", &tiny_images(3), &[1, 2, 10], false);
    assert_format_naming(Mnist::load(&dir, true).unwrap_err(), &labels_path);
    std::fs::remove_dir_all(&dir).ok();
}
