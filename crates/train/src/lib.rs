//! anygrad-train: the supervised classification loop behind `anygrad train`, usable as a
//! library. One optimizer is created before the loop and reused for every epoch (its state
//! persists), batches come from `anygrad-data`'s `DataLoader`, and a checkpoint holds the
//! model, the optimizer state, the epoch and the random generator's position, so that a
//! resumed run continues exactly where the saved one stopped.
//!
//! ```no_run
//! use anygrad_core::{Device, Result};
//! use anygrad_train::{run, TrainConfig};
//! # fn main() -> Result<()> {
//! let config = TrainConfig { epochs: 5, ..TrainConfig::default() };
//! let summary = run(&config, &Device::best()?, &mut |_event| {})?;
//! println!("test accuracy {:.2}%", 100.0 * summary.final_test_accuracy);
//! # Ok(())
//! # }
//! ```

mod checkpointing;
mod config;
mod data;
mod fit;
mod parallel;

pub use config::{DatasetKind, ModelKind, OptimizerKind, TrainConfig};
pub use data::{load_data, LoadedData};
pub use fit::{
    build_model, build_optimizer, evaluate, optimizer_for, run, train_epoch, EpochReport, Event,
    TrainSummary,
};
pub use parallel::{parse_devices, run_data_parallel, run_distributed, train_epoch_data_parallel};
