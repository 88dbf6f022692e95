//! Data parallel across processes: the [`Collective`] trait (what a communicator such as MPI
//! must offer: rank, size, all-reduce of f32 sums, broadcast) and the pieces a distributed
//! training loop builds on it: [`GradientReducer`] (bucketed gradient averaging, the same
//! buckets and loss weighting as the in-process [`super::DataParallel`]),
//! [`broadcast_module`] (rank 0's parameters and buffers to every rank) and
//! [`broadcast_buffers`]. Gradients travel through staging buffers reused across steps, and
//! each bucket's copy to host memory starts during backward. The MPI implementation lives in
//! the `anygrad` command (feature `mpi`), so this crate needs no MPI.

use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use anygrad_core::{no_grad, profiler, Device, Error, Result, Tensor};

use anygrad_core::transfer::HostStaging;

use super::buckets::{
    assign_gradients, bucket_of_parameters, flatten_gradients, plan_buckets, tail_bucket_bytes,
    Bucket,
};
use super::data_parallel::ExchangeStats;
use super::exchange::ExchangeTiming;
use crate::module::{Kind, Module, Parameter};

/// A group of processes that exchange data (an MPI communicator, for instance). It is
/// `Sync`: [`GradientReducer`] calls it from one communication thread while backward runs on
/// the calling thread (never from two threads at once).
pub trait Collective: Sync {
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

/// Averages a module's gradients over a [`Collective`] in buckets (about 4 MB, last layers
/// first). Each process weights its loss by `rows · world_size / global_rows` before
/// backward (see [`GradientReducer::loss_weight`]), so the average is the gradient of the
/// global batch's mean loss. [`GradientReducer::backward`] runs backward and starts each
/// bucket's copy to host memory as soon as its gradients are final, so the copies overlap
/// the rest of backward; the all-reduces then run on the calling thread (the communicator is
/// only ever used from it), bucket after bucket, through staging buffers kept across steps.
pub struct GradientReducer {
    parameters: Vec<Parameter>,
    buckets: Vec<Bucket>,
    staging: Mutex<Option<Arc<Vec<Mutex<HostStaging>>>>>,
    host: Mutex<Vec<f32>>,
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
            buckets: plan_buckets(&numels, bucket_bytes, tail_bucket_bytes(bucket_bytes)),
            parameters,
            staging: Mutex::new(None),
            host: Mutex::new(Vec::new()),
            stats: Mutex::new(ExchangeStats::default()),
        }
    }

    /// The factor for a process's mean loss over `rows` of a `global_rows` batch split over
    /// `world_size` processes.
    pub fn loss_weight(rows: usize, global_rows: usize, world_size: usize) -> f64 {
        (rows * world_size) as f64 / global_rows.max(1) as f64
    }

    /// Run backward from `loss` (already weighted by [`GradientReducer::loss_weight`]) and
    /// average the gradients over every process (all of them must call it, or
    /// [`GradientReducer::all_reduce`] when they have no rows). Each bucket's copy to host
    /// memory starts as soon as its gradients are final.
    pub fn backward(
        &self,
        loss: &Tensor,
        collective: &dyn Collective,
        device: &Device,
    ) -> Result<()> {
        if collective.world_size() <= 1 {
            return loss.backward();
        }
        self.reduce(Some(loss), collective, device)
    }

    /// Average the gradients held now over every process (all of them must call it).
    pub fn all_reduce(&self, collective: &dyn Collective, device: &Device) -> Result<()> {
        if collective.world_size() <= 1 {
            return Ok(());
        }
        self.reduce(None, collective, device)
    }

    fn reduce(
        &self,
        loss: Option<&Tensor>,
        collective: &dyn Collective,
        device: &Device,
    ) -> Result<()> {
        let staging = {
            let mut slot = self.staging.lock().unwrap_or_else(|p| p.into_inner());
            match &*slot {
                Some(staging) => Arc::clone(staging),
                None => {
                    let made: Vec<Mutex<HostStaging>> = self
                        .buckets
                        .iter()
                        .map(|bucket| HostStaging::new(device, bucket.numel).map(Mutex::new))
                        .collect::<Result<_>>()?;
                    let made = Arc::new(made);
                    *slot = Some(Arc::clone(&made));
                    made
                }
            }
        };
        let (sender, receiver) = mpsc::channel::<usize>();
        let (recorded, communicated, backward_done) = std::thread::scope(|scope| {
            let communication = scope.spawn(|| self.communicate(&staging, receiver, collective));
            let recorded = self.record_backward(loss, &staging, &sender);
            drop(sender);
            let backward_done = Instant::now();
            let communicated = profiler::scope("gradient_exchange", device, || {
                communication.join().unwrap_or_else(|_| {
                    Err(Error::invalid(
                        "GradientReducer",
                        "the gradient-exchange thread panicked",
                    ))
                })
            });
            (recorded, communicated, backward_done)
        });
        // This process's own failure is the one to report.
        recorded?;
        let mut timing = communicated?;
        timing.exposed = backward_done.elapsed().as_secs_f64();
        let bytes = self.buckets.iter().map(|b| b.numel * 4).sum();
        self.stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(&[timing], bytes);
        Ok(())
    }

    /// Backward with the hook that starts each bucket's download once its gradients are
    /// final and hands the bucket to the communication thread; then the buckets not started
    /// (gradients that never came count as zeros).
    fn record_backward(
        &self,
        loss: Option<&Tensor>,
        staging: &[Mutex<HostStaging>],
        sender: &mpsc::Sender<usize>,
    ) -> Result<()> {
        let mut launched = vec![false; self.buckets.len()];
        let launch = |position: usize| -> Result<()> {
            let flat = flatten_gradients(&self.parameters, &self.buckets[position])?;
            lock(&staging[position]).start_download(&flat)?;
            // A closed channel means the communication thread stopped; it reports why.
            let _ = sender.send(position);
            Ok(())
        };
        if let Some(loss) = loss {
            let owner = bucket_of_parameters(&self.parameters, &self.buckets);
            let mut waiting: Vec<usize> = self.buckets.iter().map(|b| b.parameters.len()).collect();
            loss.backward_with_hook(|leaf| {
                if let Some(&position) = owner.get(&leaf.id()) {
                    waiting[position] = waiting[position].saturating_sub(1);
                    if waiting[position] == 0 && !launched[position] {
                        launched[position] = true;
                        launch(position)?;
                    }
                }
                Ok(())
            })?;
        }
        for (position, done) in launched.iter().enumerate() {
            if !done {
                launch(position)?;
            }
        }
        Ok(())
    }

    /// The communication thread: all-reduce the buckets in order as they arrive (every
    /// process in the same order), upload each average and assign it as the gradients.
    fn communicate(
        &self,
        staging: &[Mutex<HostStaging>],
        receiver: mpsc::Receiver<usize>,
        collective: &dyn Collective,
    ) -> Result<ExchangeTiming> {
        let scale = 1.0 / collective.world_size() as f32;
        let mut arrived = vec![false; self.buckets.len()];
        let mut timing = ExchangeTiming::default();
        let mut host = self.host.lock().unwrap_or_else(|p| p.into_inner());
        for (position, bucket) in self.buckets.iter().enumerate() {
            while !arrived[position] {
                match receiver.recv() {
                    Ok(index) => arrived[index] = true,
                    // Backward stopped early; it reports its error.
                    Err(_) => {
                        return Err(Error::invalid(
                            "GradientReducer",
                            "backward stopped before every bucket was ready",
                        ))
                    }
                }
            }
            let started = Instant::now();
            host.resize(bucket.numel, 0.0);
            lock(&staging[position]).finish_download(&mut host)?;
            let downloaded = Instant::now();
            collective.all_reduce_sum(&mut host)?;
            for value in host.iter_mut() {
                *value *= scale;
            }
            let averaged = Instant::now();
            let flat = lock(&staging[position]).upload(&[&host[..]])?;
            assign_gradients(&self.parameters, bucket, &flat)?;
            timing.download += (downloaded - started).as_secs_f64();
            timing.average += (averaged - downloaded).as_secs_f64();
            timing.upload += averaged.elapsed().as_secs_f64();
        }
        Ok(timing)
    }

    /// Gradient-exchange time so far.
    pub fn exchange_stats(&self) -> ExchangeStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Lock `mutex`, taking over a poisoned one (its data stays valid: staging buffers).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
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
