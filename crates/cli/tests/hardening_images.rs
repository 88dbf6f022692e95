//! `anygrad train --dataset folder` as a hostile but fair user runs it: a tiny PNG promising
//! an enormous image, an absurd `--image-size`, a FIFO or a `/dev/zero` link named like an
//! image, a training set that leaves ResNet-18 one image in its last batch, one training
//! image, and `--num-workers 20000`. Each ends with one `error:` line that says what to do,
//! or trains with a `note:` saying what was decided, and never aborts or hangs: every run
//! has a deadline, after which the child is killed and the test fails.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anygrad::data::{write_image_folder, PixelImage};
use anygrad_testing::temp_dir;

/// What a finished run printed.
struct Finished {
    status: ExitStatus,
    stderr: String,
}

/// Run `anygrad` with `args` on the CPU, killing it and failing the test after `deadline`.
/// Output goes to files, so a chatty child cannot block on a full pipe.
fn run_with_deadline(args: &[&str], deadline: Duration) -> Finished {
    let scratch = temp_dir(&format!("hardening-images-output-{}", unique()));
    let stdout_path = scratch.join("stdout");
    let stderr_path = scratch.join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .env("ANYGRAD_DEVICE", "cpu")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("run anygrad");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("{args:?} still ran after {deadline:?} (hung?); stderr so far:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&scratch);
    Finished { status, stderr }
}

/// A number unique within this test process, for scratch folder names.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The run failed with an exit code (not a signal such as SIGABRT), without a panic, and
/// with exactly one `error:` line containing every `expected` text; returns that line.
fn assert_clean_failure(args: &[&str], expected: &[&str]) -> String {
    let finished = run_with_deadline(args, Duration::from_secs(180));
    let stderr = &finished.stderr;
    assert!(
        finished.status.code().is_some_and(|code| code != 0),
        "{args:?} should exit non-zero (not by a signal): {:?} {stderr}",
        finished.status
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
    for text in expected {
        assert!(
            errors[0].contains(text),
            "{args:?}: `{text}` not in {stderr}"
        );
    }
    errors[0].to_string()
}

/// The run succeeded; returns its stderr.
fn assert_success(args: &[&str], deadline: Duration) -> String {
    let finished = run_with_deadline(args, deadline);
    assert!(
        finished.status.success(),
        "{args:?} failed: {:?} {}",
        finished.status,
        finished.stderr
    );
    finished.stderr
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A folder of `count` small RGB images in two classes `even` and `odd`.
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

/// `anygrad train --dataset folder --data-dir <dir>` for one epoch, plus `extra`.
fn folder_args<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "train",
        "--dataset",
        "folder",
        "--data-dir",
        text(dir),
        "--epochs",
        "1",
    ];
    args.extend_from_slice(extra);
    args
}

/// Write a one-bit grey PNG of `width × height` black pixels: a few kilobytes on disk.
fn one_bit_png(path: &Path, width: u32, height: u32) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    let mut writer = encoder.write_header().unwrap();
    let row_bytes = (width as usize).div_ceil(8);
    writer
        .write_image_data(&vec![0u8; row_bytes * height as usize])
        .unwrap();
    writer.finish().unwrap();
}

#[test]
fn a_tiny_png_of_a_huge_image_is_an_error_not_an_abort() {
    // 12 KB on disk, 1 x 100,000,000 pixels: resized to a shorter side of 28 (cnn) or 32
    // (resnet18) it would need tens of gigabytes.
    let dir = rgb_folder("hardening-images-thin-png", 6);
    one_bit_png(&dir.join("even").join("thin.png"), 100_000_000, 1);
    for model in ["cnn", "resnet18"] {
        let line = assert_clean_failure(
            &folder_args(
                &dir,
                &["--model", model, "--num-workers", "0", "--batch-size", "2"],
            ),
            &["Resize", "1x100000000", "thin.png"],
        );
        assert!(line.contains("pixels"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn image_size_beyond_the_bound_is_refused_up_front() {
    let dir = rgb_folder("hardening-images-image-size", 6);
    for size in ["100000", "4294967296"] {
        assert_clean_failure(
            &folder_args(&dir, &["--model", "resnet18", "--image-size", size]),
            &["--image-size", size, "4096"],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_fifo_named_like_an_image_is_an_error_not_a_hang() {
    let dir = rgb_folder("hardening-images-fifo", 6);
    let fifo = dir.join("odd").join("x.png");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    for workers in ["0", "2"] {
        assert_clean_failure(
            &folder_args(&dir, &["--model", "cnn", "--num-workers", workers]),
            &["x.png", "not a regular file"],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_dev_zero_link_named_like_an_image_is_an_error() {
    let dir = rgb_folder("hardening-images-dev-zero", 6);
    std::os::unix::fs::symlink("/dev/zero", dir.join("even").join("x.png")).unwrap();
    assert_clean_failure(
        &folder_args(&dir, &["--model", "cnn"]),
        &["x.png", "not a regular file"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resnet18_with_a_one_image_last_batch_trains_drops_it_and_saves() {
    // Six images split 5 / 1: batches of 2 leave one image for the last batch.
    let dir = rgb_folder("hardening-images-last-batch", 6);
    let checkpoint = dir.join("model.safetensors");
    let stderr = assert_success(
        &folder_args(
            &dir,
            &[
                "--model",
                "resnet18",
                "--batch-size",
                "2",
                "--save",
                text(&checkpoint),
            ],
        ),
        Duration::from_secs(300),
    );
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("note:") && line.contains("drop_last"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(checkpoint.is_file(), "no checkpoint saved: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_training_image_or_batches_of_one_are_refused_up_front() {
    let dir = rgb_folder("hardening-images-one-sample", 6);
    for model in ["resnet18", "cnn"] {
        assert_clean_failure(
            &folder_args(&dir, &["--model", model, "--limit-train", "1"]),
            &["single sample", "--limit-train"],
        );
    }
    assert_clean_failure(
        &folder_args(&dir, &["--model", "resnet18", "--batch-size", "1"]),
        &["--batch-size 1", "batch norm"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn twenty_thousand_workers_for_21_images_start_quickly_with_a_note() {
    let dir = rgb_folder("hardening-images-workers", 21);
    let stderr = assert_success(
        &folder_args(&dir, &["--model", "cnn", "--num-workers", "20000"]),
        Duration::from_secs(120),
    );
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("note:") && line.contains("--num-workers 20000"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
