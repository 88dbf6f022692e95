//! Files opened by name must be regular files of bounded size: a FIFO named like an image or
//! an IDX file would block its reader forever, and a link to `/dev/zero` would be read until
//! memory runs out. Each is refused with an error naming it, found before anything is read;
//! every check here runs under a deadline, so a regression fails instead of hanging.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::mpsc::channel;
use std::time::Duration;

use anygrad_core::Result;
use anygrad_data::{read_idx_images, read_maybe_gzip, ImageFolder, Mnist, PixelImage};
use anygrad_testing::temp_dir;

/// Run `check` on a thread and return its result, failing the test when it takes longer
/// than a minute (the thread of a hung check is left behind; the test process ends anyway).
fn within_a_minute<T: Send + 'static>(what: &str, check: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        let _ = sender.send(check());
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not finish within 60 s (blocked on a FIFO?)"))
}

/// Make a FIFO at `path` with the system's `mkfifo`.
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A class folder tree `root/{a,b}` with one good PNG in each class.
fn image_tree(test: &str) -> PathBuf {
    let root = temp_dir(test);
    for class in ["a", "b"] {
        std::fs::create_dir_all(root.join(class)).unwrap();
        PixelImage::new(2, 2, 1, vec![0, 64, 128, 255])
            .unwrap()
            .save_png(root.join(class).join("good.png"))
            .unwrap();
    }
    root
}

/// The error of `result`, as text, which must name `name`.
fn error_naming<T: std::fmt::Debug>(result: Result<T>, name: &str) -> String {
    let error = result
        .expect_err("a special file must be refused")
        .to_string();
    assert!(
        error.contains(name),
        "the error should name {name}: {error}"
    );
    error
}

#[test]
fn a_fifo_named_like_an_image_is_refused_by_the_scan_and_by_open() {
    let root = image_tree("special-fifo-image");
    let fifo = root.join("a").join("x.png");
    mkfifo(&fifo);
    let scan_root = root.clone();
    let error = error_naming(
        within_a_minute("scanning a folder with a FIFO", move || {
            ImageFolder::new(&scan_root)
        }),
        "x.png",
    );
    assert!(error.contains("not a regular file"), "{error}");
    let error = error_naming(
        within_a_minute("opening a FIFO as an image", move || {
            PixelImage::open(&fifo)
        }),
        "x.png",
    );
    assert!(error.contains("not a regular file"), "{error}");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_device_behind_an_image_name_is_refused_by_the_scan_and_by_open() {
    let root = image_tree("special-zero-image");
    let link = root.join("b").join("x.png");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let scan_root = root.clone();
    error_naming(
        within_a_minute("scanning a folder with /dev/zero", move || {
            ImageFolder::new(&scan_root)
        }),
        "x.png",
    );
    let error = error_naming(
        within_a_minute("opening /dev/zero as an image", move || {
            PixelImage::open(&link)
        }),
        "x.png",
    );
    assert!(error.contains("not a regular file"), "{error}");
    // A broken link named like an image is found by the scan too (not at load time).
    let broken = root.join("a").join("gone.png");
    std::fs::remove_file(root.join("b").join("x.png")).unwrap();
    std::os::unix::fs::symlink(root.join("missing.png"), &broken).unwrap();
    error_naming(ImageFolder::new(&root), "gone.png");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn idx_readers_refuse_fifos_and_devices() {
    let dir = temp_dir("special-idx");
    let fifo = dir.join("train-images-idx3-ubyte");
    mkfifo(&fifo);
    let path = fifo.clone();
    error_naming(
        within_a_minute("reading a FIFO as IDX images", move || {
            read_idx_images(&path)
        }),
        "train-images-idx3-ubyte",
    );
    let path = fifo.clone();
    error_naming(
        within_a_minute("reading a FIFO with read_maybe_gzip", move || {
            read_maybe_gzip(&path)
        }),
        "train-images-idx3-ubyte",
    );
    // Mnist::load names the FIFO instead of looking past it for another spelling.
    let load_dir = dir.clone();
    error_naming(
        within_a_minute("loading MNIST from a folder with a FIFO", move || {
            Mnist::load(&load_dir, true)
        }),
        "train-images-idx3-ubyte",
    );
    let zero = dir.join("zero-idx3-ubyte");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let path = zero.clone();
    error_naming(
        within_a_minute("reading /dev/zero with read_maybe_gzip", move || {
            read_maybe_gzip(&path)
        }),
        "zero-idx3-ubyte",
    );
    error_naming(
        within_a_minute("reading /dev/zero as IDX images", move || {
            read_idx_images(&zero)
        }),
        "zero-idx3-ubyte",
    );
    std::fs::remove_dir_all(dir).unwrap();
}
