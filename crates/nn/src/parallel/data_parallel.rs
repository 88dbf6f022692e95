//! [`DataParallel`]: one model replicated on several devices (or several times on one), each
//! batch split along dim 0, forward and backward on every replica at once (one host thread per
//! replica), gradients averaged across replicas in buckets through host memory, and one
//! optimizer per replica ([`super::ReplicatedOptimizer`]) applying the same update everywhere.
//!
//! # Semantics
//!
//! * Loss weighting: replica `i` of `N` gets `n_i` of the `B` rows and scales its loss by
//!   `n_i · N / B` before backward; the exchange averages (sums, then divides by `N`), so the
//!   gradients equal those of the mean loss over the whole batch on one device, also when the
//!   split is uneven or some replicas get no rows.
//! * Splits ([`DataParallel::split_for`]): as even as possible, but a model with batch norm in
//!   training mode never gets a one-row slice (batch norm cannot normalize one row): a batch
//!   too short for 2 rows on every replica goes to fewer replicas ([`super::split_rows`]), and
//!   a one-row batch is refused with an error that says why. A gradient already present before backward (accumulation without
//!   `zero_grad`) is identical on every replica and stays correct under the average.
//! * Every replica ends `forward_backward` with bit-identical gradients (same summation order
//!   for every element, same bytes uploaded to every replica), so identical optimizers keep
//!   bit-identical parameters.
//! * Buffers (BatchNorm's running statistics) follow PyTorch's `DataParallel`: the ones that
//!   count are replica 0's; each replica updates its own from its slice of the batch, and
//!   [`DataParallel::sync_buffers`] copies replica 0's to the others (the training loop calls
//!   it before evaluating and saving). BatchNorm normalizes with the statistics of each
//!   replica's slice, as in PyTorch (no synchronized BatchNorm).
//! * The gradient exchange overlaps backward: buckets (about 4 MB, last layers first; see
//!   [`super::default_bucket_bytes`]) are sent to host memory as soon as their gradients are
//!   final (a gradient-ready hook of the autograd), through staging buffers reused across
//!   steps, and one communication thread per replica averages each bucket with the other
//!   replicas while backward goes on (`exchange.rs`).
//! * Random ops inside the model (dropout) draw from the global generator in whatever order
//!   the threads reach it, so such models are not reproducible run to run.

use std::sync::Mutex;

use anygrad_core::{autocast, autocast_dtype, is_grad_enabled, no_grad, random};
use anygrad_core::{Device, Error, Result, Tensor};

use super::barrier::{is_abort_echo, AbortOnDrop, AbortableBarrier};
use super::buckets::{default_bucket_bytes, plan_buckets, tail_bucket_bytes, Bucket};
use super::exchange::{BucketSteps, ExchangeArea, ExchangeTiming, ReplicaExchange};
use super::optimizer::ReplicatedOptimizer;
use super::split::{has_batch_norm, split_rows};
use crate::module::{Kind, Module, Parameter};
use crate::optim::Optimizer;

/// Time spent averaging gradients, summed over steps (the slowest replica of each step).
/// The exchange overlaps backward, so `seconds` counts only what the step waits for after
/// backward has been recorded; the phase totals count the host work wherever it ran.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExchangeStats {
    /// Steps whose gradients were exchanged.
    pub steps: usize,
    /// Total seconds of exchange not hidden behind backward's recording: from the end of
    /// backward's recording until every bucket was averaged and uploaded.
    pub seconds: f64,
    /// Seconds of the latest step's exchange (as `seconds`).
    pub last_seconds: f64,
    /// Gradient bytes (f32) each replica sends and receives per step.
    pub bytes_per_step: usize,
    /// Total seconds waiting for buckets to reach host memory and copying them out of the
    /// staging buffers (the wait includes the device finishing the backward before them).
    pub download_seconds: f64,
    /// Total seconds averaging: waiting for the other replicas and summing.
    pub average_seconds: f64,
    /// Total seconds writing averaged buckets into the upload staging and submitting them.
    pub upload_seconds: f64,
    /// Total seconds recording the optimizer's update bucket by bucket during the exchange
    /// ([`DataParallel::forward_backward_step`]; 0 when the step runs after it).
    pub optimizer_seconds: f64,
}

impl ExchangeStats {
    /// Add one step's timing (the slowest replica in each phase).
    pub(crate) fn record(&mut self, timings: &[ExchangeTiming], bytes_per_step: usize) {
        let slowest =
            |phase: fn(&ExchangeTiming) -> f64| timings.iter().map(phase).fold(0.0, f64::max);
        let exposed = slowest(|t| t.exposed);
        self.steps += 1;
        self.seconds += exposed;
        self.last_seconds = exposed;
        self.bytes_per_step = bytes_per_step;
        self.download_seconds += slowest(|t| t.download);
        self.average_seconds += slowest(|t| t.average);
        self.upload_seconds += slowest(|t| t.upload);
        self.optimizer_seconds += slowest(|t| t.optimizer);
    }
}

impl ExchangeStats {
    /// Mean milliseconds per step (0 before the first step).
    pub fn mean_ms(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.seconds * 1e3 / self.steps as f64
        }
    }
}

/// What one data-parallel step produced, per replica (detached, on each replica's device).
#[derive(Debug, Clone)]
pub struct ParallelStep {
    /// Rows of the batch each replica got.
    pub split_sizes: Vec<usize>,
    /// Each replica's model output (`None` for a replica that got no rows).
    pub outputs: Vec<Option<Tensor>>,
    /// Each replica's slice of the targets.
    pub targets: Vec<Tensor>,
    /// Each replica's loss times `rows / batch` (they sum to the batch's mean loss).
    pub weighted_losses: Vec<Tensor>,
}

impl ParallelStep {
    /// The mean loss over the whole batch (reads every replica's loss back: it blocks).
    pub fn loss(&self) -> Result<f64> {
        let mut total = 0.0;
        for loss in &self.weighted_losses {
            total += loss.item_f64()?;
        }
        Ok(total)
    }
}

/// One model on several devices, trained on split batches (see the module documentation).
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{cross_entropy, DataParallel, Linear, Module, Optimizer, Sgd, SgdConfig};
/// let devices = [Device::Cpu, Device::Cpu];
/// let model = DataParallel::new(&devices, |device| {
///     Ok(Box::new(Linear::new(4, 3, true, device)?) as Box<dyn Module>)
/// })?;
/// let mut optimizer = model.optimizer(|parameters| {
///     Ok(Box::new(Sgd::new(parameters, SgdConfig::new(0.1))?) as _)
/// })?;
/// let x = Tensor::randn(&[6, 4], DType::F32, &Device::Cpu)?;
/// let y = Tensor::from_vec(vec![0i32, 1, 2, 1, 0, 2], &[6], &Device::Cpu)?;
/// optimizer.zero_grad();
/// let step = model.forward_backward(&x, &y, |logits, labels| cross_entropy(logits, labels))?;
/// optimizer.step()?;
/// assert!(step.loss()?.is_finite());
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct DataParallel {
    devices: Vec<Device>,
    replicas: Vec<Box<dyn Module>>,
    /// Each replica's parameter slots in registration order (the same names everywhere).
    parameters: Vec<Vec<Parameter>>,
    buckets: Vec<Bucket>,
    area: ExchangeArea,
    /// One step at a time: the staging area is shared.
    step_lock: Mutex<()>,
    stats: Mutex<ExchangeStats>,
    /// Whether the model has batch norm (at least 2 rows per replica in training).
    batch_norm: bool,
}

impl std::fmt::Debug for DataParallel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataParallel")
            .field(
                "devices",
                &self
                    .devices
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>(),
            )
            .field("buckets", &self.buckets.len())
            .finish()
    }
}

impl DataParallel {
    /// Build one replica per device with `factory` and copy replica 0's parameters and
    /// buffers into the others, so all start identical. The global random generator ends
    /// where building one model leaves it (building the other replicas does not advance it).
    pub fn new<F>(devices: &[Device], mut factory: F) -> Result<DataParallel>
    where
        F: FnMut(&Device) -> Result<Box<dyn Module>>,
    {
        if devices.is_empty() {
            return Err(Error::invalid(
                "DataParallel::new",
                "needs at least one device",
            ));
        }
        let mut replicas = vec![factory(&devices[0])?];
        let (seed, offset) = random::generator_state();
        for device in &devices[1..] {
            replicas.push(factory(device)?);
        }
        random::set_generator_state(seed, offset);
        let reference: Vec<(String, Vec<usize>)> = replicas[0]
            .named_slots()
            .into_iter()
            .map(|(name, slot, _)| (name, slot.shape()))
            .collect();
        for (index, replica) in replicas.iter().enumerate().skip(1) {
            let slots: Vec<(String, Vec<usize>)> = replica
                .named_slots()
                .into_iter()
                .map(|(name, slot, _)| (name, slot.shape()))
                .collect();
            if slots != reference {
                return Err(Error::invalid(
                    "DataParallel::new",
                    format!("the factory built a different model for replica {index} (on {}): parameter names or shapes differ from replica 0's", devices[index]),
                ));
            }
        }
        for (replica, device) in replicas.iter().zip(devices) {
            if let Some((name, slot, _)) = replica
                .named_slots()
                .into_iter()
                .find(|(_, slot, _)| slot.tensor().device() != device)
            {
                return Err(Error::invalid(
                    "DataParallel::new",
                    format!(
                        "the factory put `{name}` on {} instead of {device}",
                        slot.tensor().device()
                    ),
                ));
            }
        }
        let parameters: Vec<Vec<Parameter>> = replicas
            .iter()
            .map(|r| {
                r.named_parameter_slots()
                    .into_iter()
                    .map(|(_, slot)| slot)
                    .collect()
            })
            .collect();
        let numels: Vec<usize> = parameters[0].iter().map(|p| p.numel()).collect();
        let batch_norm = has_batch_norm(replicas[0].as_ref());
        let model = DataParallel {
            batch_norm,
            devices: devices.to_vec(),
            buckets: plan_buckets(
                &numels,
                default_bucket_bytes(),
                tail_bucket_bytes(default_bucket_bytes()),
            ),
            area: ExchangeArea::new(devices.len()),
            replicas,
            parameters,
            step_lock: Mutex::new(()),
            stats: Mutex::new(ExchangeStats::default()),
        };
        model.broadcast_state()?;
        Ok(model)
    }

    /// Exchange gradients in buckets of about `bytes` (default: [`super::default_bucket_bytes`]).
    pub fn with_bucket_bytes(mut self, bytes: usize) -> DataParallel {
        let numels: Vec<usize> = self.parameters[0].iter().map(|p| p.numel()).collect();
        self.buckets = plan_buckets(&numels, bytes, tail_bucket_bytes(bytes));
        self.area = ExchangeArea::new(self.devices.len());
        self
    }

    /// The devices, one per replica.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Number of replicas.
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Always false: there is at least one replica.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// Number of gradient buckets.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Replica 0, the one whose state counts (save, evaluate and load through it).
    pub fn module(&self) -> &dyn Module {
        self.replicas[0].as_ref()
    }

    /// Every replica, in device order.
    pub fn replicas(&self) -> &[Box<dyn Module>] {
        &self.replicas
    }

    /// How `batch` rows are split over `parts` replicas: as evenly as possible, the first
    /// `batch % parts` replicas getting one row more (what a model without batch norm gets;
    /// [`DataParallel::split_for`] is the split this model uses).
    pub fn split_sizes(batch: usize, parts: usize) -> Vec<usize> {
        split_rows(batch, parts, 1)
    }

    /// Whether the model has batch norm (it then needs 2 rows per replica in training).
    pub fn has_batch_norm(&self) -> bool {
        self.batch_norm
    }

    /// The fewest rows a replica can run in the current mode: 2 for a model with batch norm
    /// in training mode, else 1.
    pub fn min_rows_per_replica(&self) -> usize {
        if self.batch_norm && self.replicas[0].is_training() {
            2
        } else {
            1
        }
    }

    /// How a batch of `batch` rows is split over this model's replicas in its current mode
    /// ([`super::split_rows`] with [`DataParallel::min_rows_per_replica`]): evenly, except
    /// that a batch-norm model in training gets no one-row slice (the rows of a short batch
    /// go to fewer replicas).
    pub fn split_for(&self, batch: usize) -> Vec<usize> {
        split_rows(batch, self.len(), self.min_rows_per_replica())
    }

    /// Error when a batch of `rows` rows is too small to run in the current mode at all (one
    /// row for a batch-norm model in training).
    fn check_batch_rows(&self, op: &'static str, rows: usize) -> Result<()> {
        let needed = self.min_rows_per_replica();
        if rows > 0 && rows < needed {
            return Err(Error::invalid(
                op,
                format!(
                    "a batch of {rows} row cannot be trained: the model has batch norm, which \
                     needs at least {needed} rows per batch in training mode; drop the batch or \
                     make it larger"
                ),
            ));
        }
        Ok(())
    }

    /// Split `tensor` along dim 0 into one slice per replica ([`DataParallel::split_for`]),
    /// each moved to its device.
    pub fn scatter(&self, tensor: &Tensor) -> Result<Vec<Tensor>> {
        if tensor.rank() == 0 {
            return Err(Error::InvalidShape {
                op: "DataParallel::scatter",
                shape: Vec::new(),
                message: "cannot split a scalar along dim 0".into(),
            });
        }
        let sizes = self.split_for(tensor.shape()[0]);
        let mut start = 0;
        let mut slices = Vec::with_capacity(sizes.len());
        for (size, device) in sizes.into_iter().zip(&self.devices) {
            slices.push(tensor.narrow(0, start, size)?.to_device(device)?);
            start += size;
        }
        Ok(slices)
    }

    /// Run `work(replica_index, barrier)` on one thread per replica (inline for one replica)
    /// and collect the results; the first real error wins, a panic becomes an error.
    fn run_replicas<T, W>(&self, work: W) -> Result<Vec<T>>
    where
        T: Send,
        W: Fn(usize, &AbortableBarrier) -> Result<T> + Sync,
    {
        let barrier = AbortableBarrier::new(self.len());
        if self.len() == 1 {
            return Ok(vec![work(0, &barrier)?]);
        }
        let results: Vec<Result<T>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.len())
                .map(|index| {
                    let (work, barrier) = (&work, &barrier);
                    scope.spawn(move || {
                        let guard = AbortOnDrop::new(barrier);
                        guard.finish(work(index, barrier))
                    })
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(index, handle)| {
                    handle.join().unwrap_or_else(|_| {
                        Err(Error::invalid(
                            "DataParallel",
                            format!(
                                "the thread of replica {index} on {} panicked",
                                self.devices[index]
                            ),
                        ))
                    })
                })
                .collect()
        });
        if let Some(position) = results
            .iter()
            .position(|r| matches!(r, Err(e) if !is_abort_echo(e)))
            .or_else(|| results.iter().position(|r| r.is_err()))
        {
            let mut results = results;
            return match results.swap_remove(position) {
                Err(error) => Err(error),
                Ok(_) => Err(Error::invalid("DataParallel", "internal: lost an error")),
            };
        }
        results.into_iter().collect()
    }

    /// One training step's forward and backward: split `inputs` and `targets` along dim 0,
    /// run the replicas concurrently, weight each replica's `loss_fn(output, targets)` (a
    /// mean over its rows) by its share, backward, and average the gradients so that every
    /// replica holds the gradients of the whole batch's mean loss. Then call the optimizer's
    /// `step` (see [`DataParallel::optimizer`]).
    pub fn forward_backward<L>(
        &self,
        inputs: &Tensor,
        targets: &Tensor,
        loss_fn: L,
    ) -> Result<ParallelStep>
    where
        L: Fn(&Tensor, &Tensor) -> Result<Tensor> + Sync,
    {
        let rows = inputs.shape().first().copied().unwrap_or(0);
        if targets.shape().first().copied() != Some(rows) {
            return Err(Error::ShapeMismatch {
                op: "DataParallel::forward_backward",
                lhs: inputs.shape().to_vec(),
                rhs: targets.shape().to_vec(),
                reason: "inputs and targets must have the same number of rows (dim 0)".into(),
            });
        }
        self.check_batch_rows("DataParallel::forward_backward", rows)?;
        let inputs = self.scatter(inputs)?;
        let targets = self.scatter(targets)?;
        self.forward_backward_scattered(&inputs, &targets, loss_fn)
    }

    /// [`DataParallel::forward_backward`] for a batch already split: `inputs[i]` and
    /// `targets[i]` go to replica `i` (moved to its device when elsewhere). The loss weights
    /// use the slices' row counts.
    pub fn forward_backward_scattered<L>(
        &self,
        inputs: &[Tensor],
        targets: &[Tensor],
        loss_fn: L,
    ) -> Result<ParallelStep>
    where
        L: Fn(&Tensor, &Tensor) -> Result<Tensor> + Sync,
    {
        self.run_step(inputs, targets, loss_fn, None)
    }

    /// [`DataParallel::forward_backward`] and then `optimizer.step()`, with the update
    /// overlapped with the exchange where the optimizer allows it
    /// ([`Optimizer::supports_partial_step`]: SGD, Adam, AdamW, Adagrad, RMSprop): each
    /// replica applies the update of a bucket's parameters as soon as their averaged gradients
    /// arrive, while the device still runs the rest of backward. The parameters end exactly
    /// as with `forward_backward` followed by `step` (the same update of the same gradients).
    /// Not for steps that must see every gradient first: gradient clipping by total norm, or
    /// `GradScaler` (use `forward_backward` and then those).
    pub fn forward_backward_step<L>(
        &self,
        inputs: &Tensor,
        targets: &Tensor,
        loss_fn: L,
        optimizer: &mut ReplicatedOptimizer,
    ) -> Result<ParallelStep>
    where
        L: Fn(&Tensor, &Tensor) -> Result<Tensor> + Sync,
    {
        let rows = inputs.shape().first().copied().unwrap_or(0);
        if targets.shape().first().copied() != Some(rows) {
            return Err(Error::ShapeMismatch {
                op: "DataParallel::forward_backward_step",
                lhs: inputs.shape().to_vec(),
                rhs: targets.shape().to_vec(),
                reason: "inputs and targets must have the same number of rows (dim 0)".into(),
            });
        }
        self.check_batch_rows("DataParallel::forward_backward_step", rows)?;
        let inputs = self.scatter(inputs)?;
        let targets = self.scatter(targets)?;
        self.forward_backward_step_scattered(&inputs, &targets, loss_fn, optimizer)
    }

    /// [`DataParallel::forward_backward_step`] for a batch already split (as
    /// [`DataParallel::forward_backward_scattered`]).
    pub fn forward_backward_step_scattered<L>(
        &self,
        inputs: &[Tensor],
        targets: &[Tensor],
        loss_fn: L,
        optimizer: &mut ReplicatedOptimizer,
    ) -> Result<ParallelStep>
    where
        L: Fn(&Tensor, &Tensor) -> Result<Tensor> + Sync,
    {
        if optimizer.replicas_mut().len() != self.len() {
            return Err(Error::invalid(
                "DataParallel::forward_backward_step",
                format!(
                    "the optimizer has {} replicas, the model {} (make it with DataParallel::optimizer)",
                    optimizer.replicas_mut().len(),
                    self.len()
                ),
            ));
        }
        if self.len() == 1 || !optimizer.supports_partial_step() {
            let step = self.run_step(inputs, targets, loss_fn, None)?;
            optimizer.step()?;
            return Ok(step);
        }
        self.run_step(inputs, targets, loss_fn, Some(optimizer))
    }

    /// The step shared by the `forward_backward*` methods; with `optimizer`, each replica's
    /// exchange also applies its optimizer bucket by bucket.
    fn run_step<L>(
        &self,
        inputs: &[Tensor],
        targets: &[Tensor],
        loss_fn: L,
        optimizer: Option<&mut ReplicatedOptimizer>,
    ) -> Result<ParallelStep>
    where
        L: Fn(&Tensor, &Tensor) -> Result<Tensor> + Sync,
    {
        if inputs.len() != self.len() || targets.len() != self.len() {
            return Err(Error::invalid(
                "DataParallel::forward_backward_scattered",
                format!(
                    "got {} input and {} target slices for {} replicas",
                    inputs.len(),
                    targets.len(),
                    self.len()
                ),
            ));
        }
        if !is_grad_enabled() {
            return Err(Error::invalid(
                "DataParallel::forward_backward",
                "gradients are disabled (inside no_grad); a training step needs them",
            ));
        }
        let split_sizes: Vec<usize> = inputs
            .iter()
            .map(|t| t.shape().first().copied().unwrap_or(0))
            .collect();
        let total: usize = split_sizes.iter().sum();
        if total == 0 {
            return Err(Error::invalid(
                "DataParallel::forward_backward",
                "the batch is empty",
            ));
        }
        let autocast_to = autocast_dtype();
        let replicas = self.len();
        let _step = self.step_lock.lock().unwrap_or_else(|p| p.into_inner());
        // Each replica thread takes its own optimizer out of its slot.
        type Slot<'o> = Mutex<Option<&'o mut (dyn Optimizer + Send + 'static)>>;
        let optimizer_slots: Option<Vec<Slot<'_>>> = optimizer.map(|optimizer| {
            optimizer
                .replicas_mut()
                .iter_mut()
                .map(|replica| {
                    Mutex::new(Some(
                        replica.as_mut() as &mut (dyn Optimizer + Send + 'static)
                    ))
                })
                .collect()
        });
        let outcomes = self.run_replicas(|index, barrier| {
            let replica_optimizer = optimizer_slots.as_ref().and_then(|slots| {
                slots[index]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
            });
            let device = &self.devices[index];
            let rows = split_sizes[index];
            let target = targets[index].detach().to_device(device)?;
            let (output, weighted) = if rows == 0 {
                (None, None)
            } else {
                let input = inputs[index].detach().to_device(device)?;
                let (output, loss) = {
                    let _autocast = match autocast_to {
                        Some(dtype) => Some(autocast(dtype, device)?),
                        None => None,
                    };
                    let output = self.replicas[index].forward(&input)?;
                    let loss = loss_fn(&output, &target)?;
                    (output, loss)
                };
                let weighted = loss.mul_scalar((rows * replicas) as f64 / total as f64)?;
                (Some(output.detach()), Some(weighted))
            };
            let timing = if replicas > 1 {
                self.exchange(index, barrier, replica_optimizer)
                    .backward_and_average(weighted.as_ref())?
            } else {
                if let Some(weighted) = &weighted {
                    weighted.backward()?;
                }
                ExchangeTiming::default()
            };
            let _guard = no_grad();
            let share = match weighted {
                Some(weighted) => weighted.detach().div_scalar(replicas as f64)?,
                None => Tensor::zeros(&[], anygrad_core::DType::F32, device)?,
            };
            Ok((output, target, share, timing))
        })?;
        let mut step = ParallelStep {
            split_sizes,
            outputs: Vec::with_capacity(replicas),
            targets: Vec::with_capacity(replicas),
            weighted_losses: Vec::with_capacity(replicas),
        };
        let mut timings = Vec::with_capacity(replicas);
        for (output, target, share, timing) in outcomes {
            step.outputs.push(output);
            step.targets.push(target);
            step.weighted_losses.push(share);
            timings.push(timing);
        }
        if replicas > 1 {
            self.record_timings(&timings);
        }
        Ok(step)
    }

    /// Replica `index`'s side of the gradient exchange of one step.
    fn exchange<'a>(
        &'a self,
        index: usize,
        barrier: &'a AbortableBarrier,
        optimizer: Option<&'a mut (dyn Optimizer + Send + 'static)>,
    ) -> ReplicaExchange<'a> {
        ReplicaExchange {
            replica: index,
            device: &self.devices[index],
            parameters: &self.parameters[index],
            buckets: &self.buckets,
            area: &self.area,
            barrier,
            steps: optimizer.map(|optimizer| {
                BucketSteps::new(optimizer, &self.parameters[index], &self.buckets)
            }),
        }
    }

    fn record_timings(&self, timings: &[ExchangeTiming]) {
        let bytes = self.buckets.iter().map(|b| b.numel * 4).sum();
        self.stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(timings, bytes);
    }

    /// Average the gradients the replicas hold now (for custom loops that ran backward on
    /// each replica themselves; [`DataParallel::forward_backward`] already does it, overlapped
    /// with backward).
    pub fn all_reduce_gradients(&self) -> Result<()> {
        if self.len() == 1 {
            return Ok(());
        }
        let _step = self.step_lock.lock().unwrap_or_else(|p| p.into_inner());
        let timings = self.run_replicas(|index, barrier| {
            self.exchange(index, barrier, None)
                .backward_and_average(None)
        })?;
        self.record_timings(&timings);
        Ok(())
    }

    /// Copy replica 0's parameters and buffers into every other replica (after loading a
    /// checkpoint into [`DataParallel::module`]).
    pub fn broadcast_state(&self) -> Result<()> {
        self.copy_from_first(|_| true)
    }

    /// Copy replica 0's buffers (BatchNorm running statistics) into every other replica.
    pub fn sync_buffers(&self) -> Result<()> {
        self.copy_from_first(|kind| kind == Kind::Buffer)
    }

    fn copy_from_first(&self, include: impl Fn(Kind) -> bool) -> Result<()> {
        let _guard = no_grad();
        let source = self.replicas[0].named_slots();
        for replica in &self.replicas[1..] {
            for ((_, from, kind), (name, to, _)) in source.iter().zip(replica.named_slots()) {
                if !include(*kind) {
                    continue;
                }
                let target = to.tensor();
                let value = from.tensor().to_device(target.device())?;
                target.assign(&value).map_err(|error| {
                    Error::invalid(
                        "DataParallel",
                        format!("copying `{name}` from replica 0 failed: {error}"),
                    )
                })?;
            }
        }
        Ok(())
    }

    /// One optimizer per replica, built by `factory` from that replica's parameter slots
    /// (all with the same hyper-parameters), stepped together.
    pub fn optimizer<F>(&self, mut factory: F) -> Result<ReplicatedOptimizer>
    where
        F: FnMut(Vec<(String, Parameter)>) -> Result<Box<dyn Optimizer + Send>>,
    {
        let optimizers = self
            .replicas
            .iter()
            .map(|replica| factory(replica.named_parameter_slots()))
            .collect::<Result<Vec<_>>>()?;
        ReplicatedOptimizer::new(optimizers)
    }

    /// Gradient-exchange time so far.
    pub fn exchange_stats(&self) -> ExchangeStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start the exchange statistics over (after warm-up steps).
    pub fn reset_exchange_stats(&self) {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner()) = ExchangeStats::default();
    }
}

impl Module for DataParallel {
    /// Split `x` along dim 0, run every replica on its slice concurrently and gather the
    /// outputs on replica 0's device (differentiable: a `backward` from there reaches every
    /// replica's parameters; call [`DataParallel::all_reduce_gradients`] afterwards).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let slices = self.scatter(x)?;
        let grad_enabled = is_grad_enabled();
        let autocast_to = autocast_dtype();
        let outputs = self.run_replicas(|index, _| {
            let device = &self.devices[index];
            let _no_grad = (!grad_enabled).then(no_grad);
            let _autocast = match autocast_to {
                Some(dtype) => Some(autocast(dtype, device)?),
                None => None,
            };
            if slices[index].shape()[0] == 0 {
                return Ok(None);
            }
            self.replicas[index].forward(&slices[index]).map(Some)
        })?;
        let home = &self.devices[0];
        let gathered = outputs
            .into_iter()
            .flatten()
            .map(|output| output.to_device(home))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Tensor> = gathered.iter().collect();
        Tensor::cat(&refs, 0)
    }

    /// Replica 0's parameters and buffers (what a checkpoint holds).
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        self.replicas[0].visit(prefix, visitor)
    }

    fn set_training(&self, training: bool) {
        for replica in &self.replicas {
            replica.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.replicas[0].is_training()
    }

    /// Clear every replica's gradients.
    fn zero_grad(&self) {
        for replica in &self.replicas {
            replica.zero_grad();
        }
    }
}
