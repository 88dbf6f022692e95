//! Data parallelism: [`DataParallel`] (one process, one thread per device, gradients averaged
//! through host memory) and the building blocks of training across processes
//! ([`Collective`], [`GradientReducer`], [`broadcast_module`]), which the `anygrad` command
//! drives over MPI. Both split every global batch along dim 0 (never giving a batch-norm model
//! in training a one-row part: [`split_rows`]), weight each part's loss by its share, and
//! average gradients in buckets of about 4 MB.

mod barrier;
mod buckets;
mod collective;
mod data_parallel;
mod exchange;
mod optimizer;
mod split;

pub use buckets::{
    default_bucket_bytes, tail_bucket_bytes, DEFAULT_BUCKET_BYTES, DEFAULT_TAIL_BYTES,
};
pub use collective::{broadcast_buffers, broadcast_module, Collective, GradientReducer};
pub use data_parallel::{DataParallel, ExchangeStats, ParallelStep};
pub use optimizer::ReplicatedOptimizer;
pub use split::{has_batch_norm, min_rows_per_replica, split_rows};
