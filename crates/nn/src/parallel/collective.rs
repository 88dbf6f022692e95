//! Data parallel across processes: the [`Collective`] trait (what a communicator such as MPI
//! must offer: rank, size, all-reduce of f32 sums, broadcast) and the pieces a distributed
//! training loop builds on it: [`GradientReducer`] (bucketed gradient averaging, the same
//! buckets and loss weighting as the in-process [`super::DataParallel`]),
//! [`broadcast_module`] (rank 0's parameters and buffers to every rank) and
//! [`broadcast_buffers`]. The MPI implementation lives in the `anygrad` command (feature
//! `mpi`), so this crate needs no MPI.

use std::sync::Mutex;
use std::time::Instant;

use anygrad_core::{no_grad, profiler, Device, Error, Result, Tensor};

use super::buckets::{flatten_gradients, plan_buckets, scatter_gradients, Bucket};
use super::data_parallel::ExchangeStats;
use crate::module::{Kind, Module, Parameter};

/// A group of processes that exchange data (an MPI communicator, for instance).
pub trait Collective {
    /// This process's index in the group (0 is the root that prints and saves).
    fn rank(&self) -> usize;

    /// Number of processes.
    fn world_size(&self) -> usize;

    /// Replace `values` by their element-wise sum over every process. Every process must end
    /// with the same bits (e.g. reduce to one rank, then broadcast).
    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()>;

    /// Replace `values` by `root`'s.
    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()>;
}

/// Averages a module's gradients over a [`Collective`] in buckets (about 25 MB, last layers
/// first). Each process weights its loss by `rows · world_size / global_rows` before
/// backward (see [`GradientReducer::loss_weight`]), so the average is the gradient of the
/// global batch's mean loss.
pub struct GradientReducer {
    parameters: Vec<Parameter>,
    buckets: Vec<Bucket>,
    stats: Mutex<ExchangeStats>,
}

impl std::fmt::Debug for GradientReducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradientReducer")
            .field("parameters", &self.parameters.len())
            .field("buckets", &self.buckets.len())
            .finish()
    }
}

impl GradientReducer {
    /// A reducer over `module`'s parameters with buckets of about `bucket_bytes`.
    pub fn new(module: &dyn Module, bucket_bytes: usize) -> GradientReducer {
        let parameters: Vec<Parameter> = module
            .named_parameter_slots()
            .into_iter()
            .map(|(_, slot)| slot)
            .collect();
        let numels: Vec<usize> = parameters.iter().map(|p| p.numel()).collect();
        GradientReducer {
            buckets: plan_buckets(&numels, bucket_bytes),
            parameters,
            stats: Mutex::new(ExchangeStats::default()),
        }
    }

    /// The factor for a process's mean loss over `rows` of a `global_rows` batch split over
    /// `world_size` processes.
    pub fn loss_weight(rows: usize, global_rows: usize, world_size: usize) -> f64 {
        (rows * world_size) as f64 / global_rows.max(1) as f64
    }

    /// Average the gradients over every process (all of them must call it).
    pub fn all_reduce(&self, collective: &dyn Collective, device: &Device) -> Result<()> {
        let world = collective.world_size();
        if world <= 1 {
            return Ok(());
        }
        let seconds = profiler::scope("gradient_exchange", device, || {
            let flats: Vec<Tensor> = self
                .buckets
                .iter()
                .map(|bucket| flatten_gradients(&self.parameters, bucket))
                .collect::<Result<_>>()?;
            device.synchronize()?;
            let started = Instant::now();
            let scale = 1.0 / world as f32;
            for (bucket, flat) in self.buckets.iter().zip(flats) {
                let mut host = flat.to_vec::<f32>()?;
                drop(flat);
                collective.all_reduce_sum(&mut host)?;
                for value in host.iter_mut() {
                    *value *= scale;
                }
                scatter_gradients(&self.parameters, bucket, host, device)?;
            }
            Ok(started.elapsed().as_secs_f64())
        })?;
        let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        stats.steps += 1;
        stats.seconds += seconds;
        stats.last_seconds = seconds;
        stats.bytes_per_step = self.buckets.iter().map(|b| b.numel * 4).sum();
        Ok(())
    }

    /// Gradient-exchange time so far.
    pub fn exchange_stats(&self) -> ExchangeStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Copy rank `root`'s parameters and buffers into every process's module (at start, so all
/// ranks begin identical).
pub fn broadcast_module(
    module: &dyn Module,
    collective: &dyn Collective,
    root: usize,
) -> Result<()> {
    broadcast_slots(module, collective, root, |_| true)
}

/// Copy rank `root`'s buffers (BatchNorm running statistics) into every process's module.
pub fn broadcast_buffers(
    module: &dyn Module,
    collective: &dyn Collective,
    root: usize,
) -> Result<()> {
    broadcast_slots(module, collective, root, |kind| kind == Kind::Buffer)
}

/// Every selected tensor travels as f32 in one flat message (integer counters are exact in
/// f32 below 2^24).
fn broadcast_slots(
    module: &dyn Module,
    collective: &dyn Collective,
    root: usize,
    include: impl Fn(Kind) -> bool,
) -> Result<()> {
    if collective.world_size() <= 1 {
        return Ok(());
    }
    let _guard = no_grad();
    let slots: Vec<(String, Parameter)> = module
        .named_slots()
        .into_iter()
        .filter(|(_, _, kind)| include(*kind))
        .map(|(name, slot, _)| (name, slot))
        .collect();
    let mut values = Vec::new();
    for (_, slot) in &slots {
        values.extend(slot.tensor().to_vec_f32()?);
    }
    collective.broadcast(&mut values, root)?;
    let mut offset = 0;
    for (name, slot) in &slots {
        let target = slot.tensor();
        let count = target.numel();
        let piece = values.get(offset..offset + count).ok_or_else(|| {
            Error::invalid(
                "broadcast_module",
                format!("the broadcast state is shorter than this module's (at `{name}`)"),
            )
        })?;
        let value = Tensor::from_slice(piece, target.shape(), &Device::Cpu)?
            .to_dtype(target.dtype())?
            .to_device(target.device())?;
        target.assign(&value)?;
        offset += count;
    }
    Ok(())
}
