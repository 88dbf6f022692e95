//! A run whose parameters become NaN or infinite stops with an error naming the epoch, keeps
//! the last good checkpoint (the `--save` file is never overwritten with a diverged state) and
//! says how to resume; an explicit learning rate on resume replaces the checkpoint's, so that
//! advice works; a checkpoint's `epoch` and generator metadata must be well formed (a malformed
//! value is reported as malformed, with the value, not as missing); and an unwritable `--save`
//! is refused before training on one device and on several.

use std::collections::BTreeMap;
use std::path::Path;

use anygrad_core::{Device, Tensor};
use anygrad_nn::{load_tensors, save_tensors};
use anygrad_testing::temp_dir;
use anygrad_train::{run, run_data_parallel, Event, OptimizerKind, TrainConfig};

/// The random generator is global to the process: the tests that seed it run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn sgd(epochs: usize, learning_rate: f64) -> TrainConfig {
    TrainConfig {
        optimizer: OptimizerKind::Sgd,
        learning_rate,
        epochs,
        ..TrainConfig::default()
    }
}

/// Run `config` on the CPU, collecting the notes and whether an epoch started.
fn run_collecting(config: &TrainConfig) -> (anygrad_core::Result<usize>, Vec<String>, bool) {
    let mut notes = Vec::new();
    let mut started = false;
    let result = run(config, &Device::Cpu, &mut |event| match event {
        Event::Note(note) => notes.push(note),
        Event::EpochStart { .. } => started = true,
        _ => {}
    })
    .map(|summary| summary.epochs.len());
    (result, notes, started)
}

#[test]
fn a_diverged_resume_keeps_the_last_good_checkpoint() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = temp_dir("diverged-resume");
    let checkpoint = dir.join("run.safetensors");
    let good = TrainConfig {
        save: Some(checkpoint.clone()),
        ..sgd(1, 0.01)
    };
    run(&good, &Device::Cpu, &mut |_| {}).unwrap();
    let good_bytes = std::fs::read(&checkpoint).unwrap();
    // The same file resumed with an explicit, absurd rate: epoch 2 diverges.
    let diverging = TrainConfig {
        resume: Some(checkpoint.clone()),
        resume_learning_rate: true,
        ..sgd(3, 1000.0)
    };
    let diverging = TrainConfig {
        save: Some(checkpoint.clone()),
        ..diverging
    };
    let (result, notes, _) = run_collecting(&diverging);
    assert!(
        notes.iter().any(|n| n.contains("--lr 1000")),
        "the explicit rate was not applied: {notes:?}"
    );
    let error = result.expect_err("a NaN run must stop").to_string();
    for text in [
        "non-finite",
        "epoch 2",
        "epoch 1",
        checkpoint.to_str().unwrap(),
        "not overwritten",
        "--resume",
        "--lr 100",
    ] {
        assert!(error.contains(text), "`{text}` not in: {error}");
    }
    assert_eq!(
        std::fs::read(&checkpoint).unwrap(),
        good_bytes,
        "the good checkpoint was overwritten by a diverged state"
    );
    // The advice works: resuming with a lower explicit rate trains on from epoch 1.
    let lower = TrainConfig {
        resume: Some(checkpoint.clone()),
        save: Some(checkpoint.clone()),
        resume_learning_rate: true,
        ..sgd(2, 0.001)
    };
    let (result, notes, _) = run_collecting(&lower);
    assert_eq!(result.unwrap(), 1);
    assert!(notes.iter().any(|n| n.contains("--lr 0.001")), "{notes:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_diverging_from_the_start_writes_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = temp_dir("diverged-fresh");
    let checkpoint = dir.join("run.safetensors");
    let config = TrainConfig {
        save: Some(checkpoint.clone()),
        ..sgd(3, 1000.0)
    };
    let (result, _, _) = run_collecting(&config);
    let error = result.expect_err("a NaN run must stop").to_string();
    assert!(
        error.contains("non-finite") && error.contains("epoch 1") && error.contains("--lr 100"),
        "{error}"
    );
    assert!(!checkpoint.exists(), "a diverged state was saved");
    // Data parallel stops the same way.
    let error = run_data_parallel(&config, &[Device::Cpu, Device::Cpu], &mut |_| {})
        .expect_err("a NaN run must stop")
        .to_string();
    assert!(error.contains("non-finite"), "{error}");
    assert!(!checkpoint.exists(), "a diverged state was saved");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Copy `source` to `target` with metadata `key` set to `value` (or removed for `None`).
fn with_metadata(source: &Path, target: &Path, key: &str, value: Option<&str>) {
    let (tensors, mut metadata): (BTreeMap<String, Tensor>, _) =
        load_tensors(source, &Device::Cpu).unwrap();
    match value {
        Some(value) => metadata.insert(key.to_string(), value.to_string()),
        None => metadata.remove(key),
    };
    let tensors: Vec<(String, Tensor)> = tensors.into_iter().collect();
    save_tensors(&tensors, &metadata, target).unwrap();
}

#[test]
fn malformed_resume_metadata_is_reported_as_malformed() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = temp_dir("resume-metadata");
    let good = dir.join("good.safetensors");
    run(
        &TrainConfig {
            save: Some(good.clone()),
            ..sgd(1, 0.01)
        },
        &Device::Cpu,
        &mut |_| {},
    )
    .unwrap();
    let bad = dir.join("bad.safetensors");
    let cases: [(&str, Option<&str>, &[&str]); 6] = [
        ("epoch", Some("-1"), &["malformed", "`-1`", "epoch"]),
        ("epoch", Some("two"), &["malformed", "`two`", "epoch"]),
        ("epoch", Some("1.5"), &["malformed", "`1.5`"]),
        ("epoch", None, &["no `epoch` metadata"]),
        ("rng_seed", Some("x"), &["malformed", "`rng_seed`", "`x`"]),
        ("rng_offset", None, &["rng_seed", "rng_offset"]),
    ];
    for (key, value, expected) in cases {
        with_metadata(&good, &bad, key, value);
        for parallel in [false, true] {
            let config = TrainConfig {
                resume: Some(bad.clone()),
                ..sgd(3, 0.01)
            };
            let error = if parallel {
                run_data_parallel(&config, &[Device::Cpu, Device::Cpu], &mut |_| {})
            } else {
                run(&config, &Device::Cpu, &mut |_| {})
            }
            .expect_err(&format!("{key} = {value:?} must be refused"))
            .to_string();
            for text in expected {
                assert!(
                    error.contains(text),
                    "{key} = {value:?} (parallel: {parallel}): `{text}` not in {error}"
                );
            }
            if value.is_some() && key == "epoch" {
                assert!(!error.contains("no `epoch`"), "{error}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_save_target_is_refused_before_training() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = temp_dir("save-before-training");
    for target in [
        format!("{}/newdir/", dir.display()),
        format!("{}/missing/run.safetensors", dir.display()),
    ] {
        let config = TrainConfig {
            save: Some(target.clone().into()),
            ..sgd(1, 0.01)
        };
        let (result, _, started) = run_collecting(&config);
        let error = result.expect_err("must be refused").to_string();
        assert!(error.contains("--save"), "{target}: {error}");
        assert!(!started, "{target}: trained before refusing");
        let mut started = false;
        let error = run_data_parallel(&config, &[Device::Cpu, Device::Cpu], &mut |event| {
            started |= matches!(event, Event::EpochStart { .. })
        })
        .expect_err("must be refused")
        .to_string();
        assert!(error.contains("--save"), "{target}: {error}");
        assert!(!started, "{target}: data parallel trained before refusing");
    }
    assert!(!dir.join("newdir").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
