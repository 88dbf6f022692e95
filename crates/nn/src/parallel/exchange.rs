//! The in-process gradient exchange of [`super::DataParallel`], overlapped with backward.
//!
//! Each replica thread runs its backward with a gradient-ready hook
//! ([`Tensor::backward_with_hook`]). When the last gradient of a bucket is final, the thread
//! flattens the bucket on its device (one concatenation), records one copy into the bucket's
//! reused staging buffer, submits it and hands the bucket to its replica's *communication
//! thread*; then it goes on recording the rest of backward. The communication threads take
//! the buckets in order (0, 1, ...; bucket 0 holds the last layers, finished first): each waits
//! for its copy of bucket `k` to reach host memory, then the replicas average it together —
//! replica `i` sums elements `[i·len/N, (i+1)·len/N)` of every replica's copy, always in
//! replica order 0, 1, ..., N-1, and divides by N — and each writes all the averaged chunks
//! straight into its mapped upload buffer and gives its parameters views of the uploaded
//! vector as gradients. Every element is summed in the same order whichever thread sums it and
//! every replica uploads the same bytes, so the replicas end with bit-identical gradients.
//! Parameters that got no gradient (unused, or a replica without rows) count as zeros; their
//! buckets are sent once backward has finished.
//!
//! With [`BucketSteps`] (`DataParallel::forward_backward_step`), the communication thread
//! also applies the replica's optimizer to each bucket's parameters as soon as their averaged
//! gradients are assigned, so the update of the last layers is recorded while the device still
//! runs the backward of the first ones, instead of after the whole exchange.

use std::ops::Range;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use anygrad_core::transfer::HostStaging;
use anygrad_core::{profiler, Device, Error, Result, Tensor};

use super::barrier::{AbortOnDrop, AbortableBarrier, ABORTED};
use super::buckets::{assign_gradients, bucket_of_parameters, flatten_gradients, Bucket};
use crate::module::Parameter;
use crate::optim::Optimizer;

/// One staging per bucket, shared by a replica's backward thread (which starts downloads)
/// and its communication thread (which finishes them and uploads).
pub(crate) type BucketStaging = Arc<Vec<Mutex<HostStaging>>>;

/// Host memory shared by the replicas, kept across steps so that nothing is allocated (or
/// page-faulted) per step.
pub(crate) struct ExchangeArea {
    /// Each replica's copy of the current bucket (sized for the largest bucket).
    downloads: Vec<RwLock<Vec<f32>>>,
    /// The averaged chunk each replica computed.
    chunks: Vec<RwLock<Vec<f32>>>,
    /// Each replica's staging buffers, made on its first exchange.
    staging: Vec<Mutex<Option<BucketStaging>>>,
}

impl ExchangeArea {
    /// Staging for `replicas` threads.
    pub(crate) fn new(replicas: usize) -> ExchangeArea {
        ExchangeArea {
            downloads: (0..replicas).map(|_| RwLock::new(Vec::new())).collect(),
            chunks: (0..replicas).map(|_| RwLock::new(Vec::new())).collect(),
            staging: (0..replicas).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Replica `replica`'s staging for `buckets` (made on first use).
    pub(crate) fn staging(
        &self,
        replica: usize,
        device: &Device,
        buckets: &[Bucket],
    ) -> Result<BucketStaging> {
        let mut slot = self.staging[replica]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(staging) = slot.as_ref() {
            return Ok(Arc::clone(staging));
        }
        let staging: BucketStaging = Arc::new(
            buckets
                .iter()
                .map(|bucket| HostStaging::new(device, bucket.numel).map(Mutex::new))
                .collect::<Result<Vec<_>>>()?,
        );
        *slot = Some(Arc::clone(&staging));
        Ok(staging)
    }
}

/// One replica's optimizer, stepped bucket by bucket during the exchange.
pub(crate) struct BucketSteps<'a> {
    optimizer: Mutex<&'a mut (dyn Optimizer + Send + 'static)>,
    /// For each bucket the positions (in the optimizer's parameter list) of its parameters;
    /// last, the optimizer's parameters that are in no bucket.
    plan: Vec<Vec<usize>>,
}

impl<'a> BucketSteps<'a> {
    /// The plan for `optimizer` over `buckets` of `parameters` (matched by tensor identity).
    pub(crate) fn new(
        optimizer: &'a mut (dyn Optimizer + Send + 'static),
        parameters: &[Parameter],
        buckets: &[Bucket],
    ) -> BucketSteps<'a> {
        let owner = bucket_of_parameters(parameters, buckets);
        let mut plan = vec![Vec::new(); buckets.len() + 1];
        for (position, (_, parameter)) in optimizer.parameters().iter().enumerate() {
            let bucket = owner
                .get(&parameter.tensor().id())
                .copied()
                .unwrap_or(buckets.len());
            plan[bucket].push(position);
        }
        BucketSteps {
            optimizer: Mutex::new(optimizer),
            plan,
        }
    }

    /// Update the parameters of plan entry `entry` (a bucket, or the last: the rest).
    fn step(&self, entry: usize) -> Result<()> {
        match self.plan.get(entry) {
            Some(positions) if !positions.is_empty() => {
                lock(&self.optimizer).step_parameters(positions)
            }
            _ => Ok(()),
        }
    }
}

/// Host-side timing of one replica's exchange in one step, in seconds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExchangeTiming {
    /// From the end of backward's recording to the end of the exchange (what the step waits).
    pub(crate) exposed: f64,
    /// Waiting for each bucket's copy to reach host memory, and copying it out of staging.
    pub(crate) download: f64,
    /// Averaging: the barriers (waiting for the other replicas) and the sums.
    pub(crate) average: f64,
    /// Writing the averaged bucket into the upload staging and submitting its copy.
    pub(crate) upload: f64,
    /// Recording the optimizer's update of each bucket (with [`BucketSteps`]).
    pub(crate) optimizer: f64,
}

/// The part of a `len`-element bucket that replica `index` of `parts` averages.
pub(crate) fn chunk_range(len: usize, parts: usize, index: usize) -> Range<usize> {
    (index * len / parts)..((index + 1) * len / parts)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

fn lock<T>(lock: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(|p| p.into_inner())
}

/// What one replica exchanges with the others.
pub(crate) struct ReplicaExchange<'a> {
    pub(crate) replica: usize,
    pub(crate) device: &'a Device,
    pub(crate) parameters: &'a [Parameter],
    pub(crate) buckets: &'a [Bucket],
    pub(crate) area: &'a ExchangeArea,
    /// The barrier of the replicas' communication threads (one per step).
    pub(crate) barrier: &'a AbortableBarrier,
    /// The replica's optimizer when the step's update runs bucket by bucket.
    pub(crate) steps: Option<BucketSteps<'a>>,
}

impl ReplicaExchange<'_> {
    /// Run backward from `loss` (when given) and average the gradients with the other
    /// replicas, exchanging each bucket as soon as its gradients are final. Every replica
    /// calls it at once. Without a loss, the gradients held now are averaged.
    pub(crate) fn backward_and_average(&self, loss: Option<&Tensor>) -> Result<ExchangeTiming> {
        // Whatever happens here, the other replicas' communication threads must not wait
        // for this one forever.
        let guard = AbortOnDrop::new(self.barrier);
        guard.finish(self.run(loss))
    }

    fn run(&self, loss: Option<&Tensor>) -> Result<ExchangeTiming> {
        let staging = self.area.staging(self.replica, self.device, self.buckets)?;
        let (sender, receiver) = mpsc::channel::<usize>();
        std::thread::scope(|scope| {
            let communication = {
                let staging = Arc::clone(&staging);
                scope.spawn(move || {
                    let guard = AbortOnDrop::new(self.barrier);
                    guard.finish(self.communicate(&staging, receiver))
                })
            };
            let recorded = self.record_backward(loss, &staging, &sender);
            drop(sender);
            if recorded.is_err() {
                self.barrier.abort();
            }
            let backward_done = Instant::now();
            // What the profiler shows as the exchange: the part the step waits for.
            let communicated = profiler::scope("gradient_exchange", self.device, || {
                communication.join().unwrap_or_else(|_| {
                    Err(Error::invalid(
                        "DataParallel",
                        format!(
                            "the gradient-exchange thread of replica {} panicked",
                            self.replica
                        ),
                    ))
                })
            });
            // This replica's own failure is the one to report.
            recorded?;
            let mut timing = communicated?;
            timing.exposed = backward_done.elapsed().as_secs_f64();
            Ok(timing)
        })
    }

    /// Backward with the hook that launches every bucket whose gradients are final; then the
    /// buckets not launched yet (gradients that never came count as zeros).
    fn record_backward(
        &self,
        loss: Option<&Tensor>,
        staging: &BucketStaging,
        sender: &mpsc::Sender<usize>,
    ) -> Result<()> {
        let mut waiting: Vec<usize> = self
            .buckets
            .iter()
            .map(|bucket| bucket.parameters.len())
            .collect();
        let mut launched = vec![false; self.buckets.len()];
        let launch = |position: usize| -> Result<()> {
            let flat = flatten_gradients(self.parameters, &self.buckets[position])?;
            lock(&staging[position]).start_download(&flat)?;
            // A closed channel means the communication thread stopped; it reports why.
            let _ = sender.send(position);
            Ok(())
        };
        if let Some(loss) = loss {
            let owner = bucket_of_parameters(self.parameters, self.buckets);
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

    /// The communication thread: average the buckets in order as they arrive. Returns the
    /// time of each phase.
    fn communicate(
        &self,
        staging: &BucketStaging,
        receiver: mpsc::Receiver<usize>,
    ) -> Result<ExchangeTiming> {
        let replicas = self.area.downloads.len();
        let largest = self.buckets.iter().map(|b| b.numel).max().unwrap_or(0);
        let scale = 1.0 / replicas as f32;
        let mut arrived = vec![false; self.buckets.len()];
        let mut timing = ExchangeTiming::default();
        for (position, bucket) in self.buckets.iter().enumerate() {
            while !arrived[position] {
                match receiver.recv() {
                    Ok(index) => arrived[index] = true,
                    // The backward thread stopped early (it reports its error).
                    Err(_) => return Err(Error::invalid("DataParallel", ABORTED)),
                }
            }
            let len = bucket.numel;
            let started = Instant::now();
            {
                let mut download = write(&self.area.downloads[self.replica]);
                if download.len() < largest {
                    download.resize(largest, 0.0);
                }
                // Waits for the device's copy (the backward before it must have run).
                lock(&staging[position]).finish_download(&mut download[..len])?;
            }
            let downloaded = Instant::now();
            timing.download += (downloaded - started).as_secs_f64();
            self.barrier.wait()?;
            let range = chunk_range(len, replicas, self.replica);
            {
                let mut chunk = write(&self.area.chunks[self.replica]);
                chunk.clear();
                chunk.extend_from_slice(&read(&self.area.downloads[0])[range.clone()]);
                for other in &self.area.downloads[1..] {
                    let other = read(other);
                    for (sum, value) in chunk.iter_mut().zip(&other[range.clone()]) {
                        *sum += *value;
                    }
                }
                for value in chunk.iter_mut() {
                    *value *= scale;
                }
            }
            self.barrier.wait()?;
            let averaged = Instant::now();
            timing.average += (averaged - downloaded).as_secs_f64();
            let flat = {
                let chunks: Vec<_> = self.area.chunks.iter().map(read).collect();
                let parts: Vec<&[f32]> = chunks.iter().map(|c| c.as_slice()).collect();
                lock(&staging[position]).upload(&parts)?
            };
            assign_gradients(self.parameters, bucket, &flat)?;
            let uploaded = Instant::now();
            timing.upload += (uploaded - averaged).as_secs_f64();
            if let Some(steps) = &self.steps {
                steps.step(position)?;
                timing.optimizer += uploaded.elapsed().as_secs_f64();
            }
        }
        if let Some(steps) = &self.steps {
            let started = Instant::now();
            steps.step(self.buckets.len())?;
            timing.optimizer += started.elapsed().as_secs_f64();
        }
        Ok(timing)
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_range;

    #[test]
    fn chunks_tile_the_bucket() {
        for parts in 1..6 {
            let mut next = 0;
            for index in 0..parts {
                let range = chunk_range(17, parts, index);
                assert_eq!(range.start, next);
                next = range.end;
            }
            assert_eq!(next, 17);
        }
    }
}
