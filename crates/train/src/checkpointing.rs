//! Checkpoints of a training run, guarded at both ends: the `--save` target is checked before
//! any training; a resumed checkpoint's metadata (`epoch`, the random generator's position)
//! must be well formed, not just present; and a model or optimizer state that became
//! non-finite (a diverged run: NaN or infinite values) never replaces the last good
//! checkpoint: the run stops with an error that says at which epoch, where the last good
//! checkpoint is kept and how to resume from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anygrad_core::{random, DType, Error, Result, Tensor};
use anygrad_nn::{check_writable, load_checkpoint, save_checkpoint, Module, Optimizer};

use crate::config::TrainConfig;
use crate::fit::Event;

/// Check before any training that `--save` can be written (an existing target is a regular
/// file, its directory exists and takes a new file, the path does not name a directory).
pub(crate) fn check_save_target(config: &TrainConfig) -> Result<()> {
    let Some(path) = &config.save else {
        return Ok(());
    };
    check_writable(path).map_err(|error| {
        Error::invalid(
            "train",
            format!(
                "--save {} cannot be written, so no checkpoint could be saved: {error}",
                path.display()
            ),
        )
    })
}

/// The number of finished epochs a checkpoint records (its `epoch` metadata): an error that
/// says whether it is missing or malformed (with the value).
pub(crate) fn resume_epoch(metadata: &BTreeMap<String, String>, path: &Path) -> Result<usize> {
    let context = path.display().to_string();
    let text = metadata.get("epoch").ok_or_else(|| {
        Error::format(
            &context,
            "checkpoint has no `epoch` metadata (was it written by `anygrad train --save`?)",
        )
    })?;
    text.parse::<usize>().map_err(|_| {
        Error::format(
            &context,
            format!(
                "the checkpoint's `epoch` metadata is malformed: `{text}` (it must be the \
                 number of finished epochs, a whole number >= 0)"
            ),
        )
    })
}

/// Restore the random generator from a checkpoint's `rng_seed` and `rng_offset` metadata
/// (both absent: nothing to restore; one without the other, or a value that is not a whole
/// number, is an error naming it).
pub(crate) fn restore_generator(metadata: &BTreeMap<String, String>, path: &Path) -> Result<()> {
    let context = path.display().to_string();
    let number = |key: &str, text: &String| {
        text.parse::<u64>().map_err(|_| {
            Error::format(
                &context,
                format!(
                    "the checkpoint's `{key}` metadata is malformed: `{text}` (it must be a \
                     whole number >= 0)"
                ),
            )
        })
    };
    match (metadata.get("rng_seed"), metadata.get("rng_offset")) {
        (None, None) => Ok(()),
        (Some(seed), Some(offset)) => {
            random::set_generator_state(number("rng_seed", seed)?, number("rng_offset", offset)?);
            Ok(())
        }
        (Some(_), None) | (None, Some(_)) => Err(Error::format(
            &context,
            "the checkpoint has only one of `rng_seed` and `rng_offset` metadata (both or \
             neither are written)",
        )),
    }
}

/// Load `--resume` (when given) into `model` and `optimizer`: checks that the checkpoint
/// leaves epochs to train, applies an explicit `--lr` (else keeps the checkpoint's rate and
/// says so when it differs) and restores the random generator. Returns the epoch to start
/// from and the state a later divergence falls back to.
pub(crate) fn resume(
    config: &TrainConfig,
    model: &dyn Module,
    optimizer: &mut dyn Optimizer,
    on_event: &mut dyn FnMut(Event),
) -> Result<(usize, LastGood)> {
    let Some(path) = &config.resume else {
        return Ok((0, LastGood::new(None)));
    };
    let metadata = load_checkpoint(model, Some(&mut *optimizer), path)?;
    let first_epoch = resume_epoch(&metadata, path)?;
    if first_epoch >= config.epochs {
        return Err(Error::invalid(
            "train",
            format!(
                "{} already holds {first_epoch} epoch(s) and --epochs is {}, so there is \
                 nothing left to train; pass --epochs greater than {first_epoch} to \
                 continue it",
                path.display(),
                config.epochs
            ),
        ));
    }
    let restored = optimizer.learning_rate();
    if restored != config.learning_rate {
        if config.resume_learning_rate {
            optimizer.set_learning_rate(config.learning_rate);
            on_event(Event::Note(format!(
                "resuming with --lr {} instead of the checkpoint's learning rate {restored}",
                config.learning_rate
            )));
        } else {
            on_event(Event::Note(format!(
                "resuming with the checkpoint's learning rate {restored} (--lr {} is not used \
                 on resume unless given explicitly: the optimizer continues exactly where it \
                 stopped)",
                config.learning_rate
            )));
        }
    }
    restore_generator(&metadata, path)?;
    Ok((
        first_epoch,
        LastGood::new(Some((path.clone(), first_epoch))),
    ))
}

/// The name of the first tensor of `entries` holding a NaN or an infinity (`None` when all
/// are finite). Reads each floating-point tensor back to host memory.
fn first_non_finite(entries: &[(String, Tensor)]) -> Result<Option<String>> {
    for (name, tensor) in entries {
        let finite = match tensor.dtype() {
            DType::F64 => tensor.to_vec::<f64>()?.iter().all(|v| v.is_finite()),
            dtype if dtype.is_float() => tensor
                .to_dtype(DType::F32)?
                .to_vec::<f32>()?
                .iter()
                .all(|v| v.is_finite()),
            _ => true,
        };
        if !finite {
            return Ok(Some(name.clone()));
        }
    }
    Ok(None)
}

/// Where a run's last good state is, for the error of a run that diverged.
#[derive(Debug, Clone, Default)]
pub(crate) struct LastGood {
    /// The last epoch (counted from 1) saved to `--save` by this run.
    saved: Option<usize>,
    /// The checkpoint the run resumed from and its epoch.
    resumed: Option<(PathBuf, usize)>,
    /// Another process writes `--save` (rank 0 of a distributed run): this one checks its
    /// state each epoch and keeps track of the checkpoint without writing it.
    written_by_another: bool,
}

impl LastGood {
    /// A run that starts from `resumed` (the `--resume` file and its epoch), if any.
    pub(crate) fn new(resumed: Option<(PathBuf, usize)>) -> LastGood {
        LastGood {
            saved: None,
            resumed,
            written_by_another: false,
        }
    }

    /// This run's checkpoints are written by another process (rank 0): `--save` is not
    /// written here, but its epochs count as saved in this run's errors.
    pub(crate) fn written_by_another(mut self) -> LastGood {
        self.written_by_another = true;
        self
    }
}

/// After epoch `epoch` (counted from 0): stop with an error if the model's parameters or
/// buffers or the optimizer's state are no longer finite (the checkpoint on disk is left as
/// it is), else save the checkpoint to `--save` when given.
pub(crate) fn save_unless_diverged(
    config: &TrainConfig,
    model: &dyn Module,
    optimizer: &dyn Optimizer,
    epoch: usize,
    train_loss: f64,
    last_good: &mut LastGood,
) -> Result<()> {
    let mut entries = model.state_dict();
    entries.extend(
        optimizer
            .state_dict()?
            .tensors
            .into_iter()
            .map(|(name, tensor)| (format!("optimizer.{name}"), tensor)),
    );
    if let Some(entry) = first_non_finite(&entries)? {
        return Err(diverged(
            config,
            epoch + 1,
            train_loss,
            &entry,
            optimizer.learning_rate(),
            last_good,
        ));
    }
    if let Some(path) = &config.save {
        let (seed, offset) = random::generator_state();
        let metadata = BTreeMap::from([
            ("epoch".to_string(), (epoch + 1).to_string()),
            ("rng_seed".to_string(), seed.to_string()),
            ("rng_offset".to_string(), offset.to_string()),
        ]);
        if !last_good.written_by_another {
            save_checkpoint(model, Some(optimizer), &metadata, path)?;
        }
        last_good.saved = Some(epoch + 1);
    }
    Ok(())
}

/// How a stopped run can go on, for the advice of its error: `how` and `options` complete
/// the resume command (`resume from it {how}, e.g. \`anygrad train --resume PATH {options}\``)
/// and `restart` is the advice when no checkpoint is kept.
struct Recovery {
    how: String,
    options: String,
    restart: String,
}

/// Where the last good state of a stopped run is kept (the `--save` file, left as it was, or
/// the checkpoint it resumed from) and how to resume from it; or that none is kept and how
/// to start again.
fn kept_checkpoint(config: &TrainConfig, last_good: &LastGood, recovery: &Recovery) -> String {
    let resume_hint = |path: &Path| {
        format!(
            "resume from it {}, e.g. `anygrad train --resume {} {}` (plus the run's other \
             options)",
            recovery.how,
            path.display(),
            recovery.options
        )
    };
    match (&config.save, last_good.saved, &last_good.resumed) {
        (Some(path), Some(saved), _) => format!(
            "the last good checkpoint (epoch {saved}) is kept at {} and was not overwritten; {}",
            path.display(),
            resume_hint(path)
        ),
        (Some(path), None, Some((resumed, resumed_epoch))) if path == resumed => format!(
            "the last good checkpoint (epoch {resumed_epoch}, the one resumed) is kept at {} \
             and was not overwritten; {}",
            path.display(),
            resume_hint(path)
        ),
        (save, None, Some((resumed, resumed_epoch))) => format!(
            "no checkpoint was saved by this run{}; {} still holds epoch {resumed_epoch}, the \
             last good state: {}",
            save.as_ref()
                .map(|p| format!(" (--save {} was left as it was)", p.display()))
                .unwrap_or_default(),
            resumed.display(),
            resume_hint(resumed)
        ),
        (Some(path), None, None) => format!(
            "no checkpoint was saved by this run (--save {} was left as it was); {}",
            path.display(),
            recovery.restart
        ),
        (None, _, _) => format!(
            "no checkpoint is kept (--save was not given, so nothing was saved); {}",
            recovery.restart
        ),
    }
}

/// The error of a run whose state became non-finite at `epoch` (counted from 1).
fn diverged(
    config: &TrainConfig,
    epoch: usize,
    train_loss: f64,
    entry: &str,
    learning_rate: f64,
    last_good: &LastGood,
) -> Error {
    let lower = learning_rate / 10.0;
    let recovery = Recovery {
        how: "with a lower learning rate".into(),
        options: format!("--lr {lower} --epochs {}", config.epochs),
        restart: format!("train again with a lower learning rate, e.g. --lr {lower}"),
    };
    Error::invalid(
        "train",
        format!(
            "training diverged: the parameters became non-finite (NaN or infinite) at epoch \
             {epoch} (train loss {train_loss}; first non-finite tensor `{entry}`), so the run \
             stops; {}",
            kept_checkpoint(config, last_good, &recovery)
        ),
    )
}

/// An error of epoch `epoch` (counted from 0) of a run on `devices` (the run's devices, as
/// the message names them, e.g. `gpu:0`): a lost device
/// (`Error::DeviceLost`) becomes the run's `Error::DeviceLost` that says at which epoch, that
/// nothing of the lost device's state was saved, where the last good checkpoint is kept and
/// how to resume from it on the CPU or another GPU (or, without `--save`, that nothing was
/// saved); any other error is returned as it is.
pub(crate) fn device_lost(
    error: Error,
    config: &TrainConfig,
    devices: &str,
    epoch: usize,
    last_good: &LastGood,
) -> Error {
    let Error::DeviceLost { message } = error else {
        return error;
    };
    let recovery = Recovery {
        how: "on the CPU (or on another GPU with --device gpu:N)".into(),
        options: format!("--device cpu --epochs {}", config.epochs),
        restart: "train again on the CPU or another GPU (e.g. --device cpu), with --save FILE \
                  to keep a checkpoint after every epoch that a lost device cannot take away"
            .into(),
    };
    Error::DeviceLost {
        message: format!(
            "the GPU was lost at epoch {} of the run on {devices} ({message}), so the run \
             stops and nothing of the lost device's state was saved; {}",
            epoch + 1,
            kept_checkpoint(config, last_good, &recovery)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(save: Option<&str>) -> TrainConfig {
        TrainConfig {
            save: save.map(PathBuf::from),
            epochs: 5,
            ..TrainConfig::default()
        }
    }

    #[test]
    fn the_divergence_error_names_the_last_good_checkpoint_and_how_to_resume() {
        let saved = LastGood {
            saved: Some(3),
            ..LastGood::default()
        };
        let message = diverged(
            &config(Some("run.st")),
            4,
            f64::NAN,
            "fc.weight",
            0.5,
            &saved,
        )
        .to_string();
        for text in [
            "epoch 4",
            "NaN",
            "`fc.weight`",
            "(epoch 3) is kept at run.st",
            "--resume run.st --lr 0.05 --epochs 5",
        ] {
            assert!(message.contains(text), "`{text}` not in {message}");
        }
        let resumed = LastGood::new(Some((PathBuf::from("old.st"), 2)));
        let message = diverged(&config(Some("new.st")), 3, 1.0, "w", 1.0, &resumed).to_string();
        assert!(
            message.contains("old.st still holds epoch 2") && message.contains("--resume old.st"),
            "{message}"
        );
        let message = diverged(
            &config(None),
            1,
            f64::INFINITY,
            "w",
            1.0,
            &LastGood::default(),
        )
        .to_string();
        assert!(
            message.contains("--save was not given") && message.contains("--lr 0.1"),
            "{message}"
        );
    }

    #[test]
    fn the_device_loss_error_names_the_epoch_the_checkpoint_and_the_cpu_resume() {
        let lost = || Error::DeviceLost {
            message: "the device was lost".into(),
        };
        let saved = LastGood {
            saved: Some(2),
            ..LastGood::default()
        };
        let error = device_lost(lost(), &config(Some("run.st")), "gpu:0", 2, &saved);
        let Error::DeviceLost { message } = error else {
            panic!("a lost device stays Error::DeviceLost: {error:?}");
        };
        for text in [
            "the GPU was lost at epoch 3 of the run on gpu:0 (the device was lost)",
            "nothing of the lost device's state was saved",
            "(epoch 2) is kept at run.st",
            "`anygrad train --resume run.st --device cpu --epochs 5`",
            "--device gpu:N",
        ] {
            assert!(message.contains(text), "`{text}` not in {message}");
        }
        let message =
            device_lost(lost(), &config(None), "gpu:1", 0, &LastGood::default()).to_string();
        assert!(
            message.contains("epoch 1")
                && message.contains("nothing was saved")
                && message.contains("--save FILE")
                && message.contains("--device cpu"),
            "{message}"
        );
        // Any other error is returned as it is.
        let other = Error::invalid("train", "something else");
        let message = device_lost(other, &config(None), "gpu:0", 0, &saved).to_string();
        assert!(!message.contains("lost"), "{message}");
    }

    /// A distributed rank other than 0 writes no checkpoint, yet its errors name the one rank
    /// 0 keeps (they stop together), not "no checkpoint was saved".
    #[test]
    fn ranks_that_do_not_write_name_the_checkpoint_rank_0_keeps() {
        let directory = std::env::temp_dir().join(format!("anygrad-rank1-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("run.st");
        let config = config(Some(path.to_str().unwrap()));
        let device = anygrad_core::Device::Cpu;
        let model = anygrad_nn::Linear::new(2, 1, true, &device).unwrap();
        let optimizer =
            crate::fit::build_optimizer(crate::OptimizerKind::Sgd, 0.1, &model).unwrap();
        let mut last_good = LastGood::new(None).written_by_another();
        save_unless_diverged(&config, &model, optimizer.as_ref(), 1, 0.5, &mut last_good).unwrap();
        assert!(
            !path.exists(),
            "a non-writing rank wrote {}",
            path.display()
        );
        let lost = Error::DeviceLost {
            message: "the device was lost".into(),
        };
        let message = device_lost(lost, &config, "gpu:0 (rank 1)", 2, &last_good).to_string();
        assert!(
            message.contains("(epoch 2) is kept at") && !message.contains("no checkpoint"),
            "{message}"
        );
        let _ = std::fs::remove_dir_all(&directory);
    }
}
