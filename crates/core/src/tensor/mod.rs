//! `Tensor`: one concrete, cheaply cloned handle (`Arc`) to a view (`Layout`) of shared
//! `Storage`, plus what autograd needs (the op that produced it, `requires_grad`, `.grad`).
//! The op families live in sibling files: `create`, `elementwise`, `reduce`, `movement`,
//! `linalg`, `composite`, `grid_sample`, `display`.

mod attention;
mod attention_fused;
mod autocast;
pub(crate) mod autocast_cache;
mod batch_norm;
mod class_pick;
mod composite;
mod composite_reduce;
mod composite_scan;
mod composite_shape;
mod conv_fused;
mod conv_transpose;
mod create;
mod display;
mod einsum;
mod elementwise;
mod grid_sample;
mod host_memory;
mod index;
#[cfg(test)]
mod layering;
mod linalg;
mod movement;
mod operators;
mod promotion;
mod quantized;
mod read_later;
mod reduce;
mod resample;
mod rows;
mod selection;
mod sort;
mod update;

pub use attention::scaled_dot_product_attention;
pub use attention_fused::{
    fused_attention_enabled, fused_attention_mode, set_fused_attention, set_fused_attention_mode,
    FusedAttention, FUSED_ATTENTION_SCORES_BYTES,
};
pub use conv_fused::ConvEpilogue;
pub use conv_transpose::{Conv1dParams, ConvTranspose2dParams};
pub use grid_sample::{GridSampleMode, GridSamplePadding};
pub use linalg::Conv2dParams;
pub use movement::ShapeSpec;
pub use quantized::QuantizedMatrix;
pub use read_later::PendingRead;
pub use resample::{InterpolateMode, InterpolateSize};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use crate::mutation::mutation_epoch;

use crate::autograd::hooks::{GradientHook, HookHandle, HookList};
use crate::autograd::{self, GradFn, GradNode};
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::{Layout, MemoryFormat};
use crate::storage::Storage;

/// A unique id per tensor (autograd keys its gradient store by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    fn next() -> TensorId {
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        TensorId(COUNTER.fetch_add(1, Ordering::Relaxed))
    }
}

pub(crate) struct TensorInner {
    id: TensorId,
    storage: Arc<RwLock<Storage>>,
    layout: Layout,
    dtype: DType,
    device: Device,
    /// Shared with the storage-less graph twins made by [`Tensor::graph_edge`]; emptied by
    /// backward once used, unless the graph is retained.
    grad_fn: Option<Arc<GradNode>>,
    requires_grad: AtomicBool,
    grad: Mutex<Option<Tensor>>,
    /// A leaf's gradient hooks (`register_hook`; a non-leaf's live with its record), made on
    /// the first one.
    leaf_hooks: std::sync::OnceLock<Arc<HookList>>,
}

/// An n-dimensional array on a device, with autograd.
///
/// ```
/// use anygrad_core::{Device, DType, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], &Device::Cpu)?;
/// let y = x.matmul(&x)?.sum_all()?;
/// assert_eq!(y.item_f64()?, 54.0);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(Arc<TensorInner>);

impl Tensor {
    /// Wrap freshly computed storage (contiguous layout) with an optional autograd record.
    pub(crate) fn from_storage(
        storage: Storage,
        shape: &[usize],
        grad_fn: Option<GradFn>,
    ) -> Tensor {
        Tensor::from_view(
            Arc::new(RwLock::new(storage)),
            Layout::contiguous(shape),
            grad_fn,
        )
    }

    /// A new view of existing storage.
    pub(crate) fn from_view(
        storage: Arc<RwLock<Storage>>,
        layout: Layout,
        grad_fn: Option<GradFn>,
    ) -> Tensor {
        let (dtype, device) = {
            let guard = storage.read().unwrap_or_else(|p| p.into_inner());
            (guard.dtype(), guard.device())
        };
        Tensor(Arc::new(TensorInner {
            id: TensorId::next(),
            storage,
            layout,
            dtype,
            device,
            grad_fn: grad_fn.map(|grad_fn| Arc::new(GradNode::new(grad_fn))),
            requires_grad: AtomicBool::new(false),
            grad: Mutex::new(None),
            leaf_hooks: std::sync::OnceLock::new(),
        }))
    }

    /// Build the autograd record only when gradients are enabled, some input needs a gradient
    /// and the result is a float (inference builds no graph).
    pub(crate) fn record(
        inputs: &[&Tensor],
        result_dtype: DType,
        make: impl FnOnce() -> GradFn,
    ) -> Option<GradFn> {
        if result_dtype.is_float()
            && autograd::is_grad_enabled()
            && inputs.iter().any(|t| t.is_tracked())
        {
            Some(make().keep_only_needed())
        } else {
            None
        }
    }

    /// This tensor as a graph edge only: the same id, autograd record, shape, dtype and device,
    /// but not the data. An op's record holds its inputs this way when its derivative rule does
    /// not read their values (`a + b` needs neither `a` nor `b`), so an intermediate result is
    /// freed as soon as nothing else needs it — PyTorch keeps only "saved tensors" alive, and so
    /// do we. Leaves (and untracked tensors) are returned as they are: backward writes a leaf's
    /// `.grad`, which lives on the handle itself.
    pub(crate) fn graph_edge(&self) -> Tensor {
        if self.0.grad_fn.is_none() {
            return self.clone();
        }
        Tensor(Arc::new(TensorInner {
            id: self.0.id,
            storage: released_storage(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            device: self.0.device.clone(),
            grad_fn: self.0.grad_fn.clone(),
            requires_grad: AtomicBool::new(self.0.requires_grad.load(Ordering::Relaxed)),
            grad: Mutex::new(None),
            leaf_hooks: std::sync::OnceLock::new(),
        }))
    }

    /// The unique id of this tensor handle.
    pub fn id(&self) -> TensorId {
        self.0.id
    }

    /// The dims.
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }

    /// Same as [`Tensor::shape`] (PyTorch's `size()`).
    pub fn dims(&self) -> &[usize] {
        self.shape()
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.0.layout.rank()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }

    /// Size of dim `dim` (negative counts from the end).
    pub fn dim(&self, dim: isize) -> Result<usize> {
        let d = crate::shape::resolve_dim("dim", dim, self.rank(), self.shape())?;
        Ok(self.shape()[d])
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The device holding the data.
    pub fn device(&self) -> &Device {
        &self.0.device
    }

    /// The view's layout over its storage.
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// True when the view is row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }

    /// The memory format this tensor is dense in: [`MemoryFormat::ChannelsLast`] for a 4-D
    /// tensor whose strides are channels-last and not also row-major (PyTorch's
    /// `suggest_memory_format`), [`MemoryFormat::Contiguous`] otherwise. The GPU's tensor-core
    /// convolutions return channels-last results; pooling keeps its input's format.
    pub fn memory_format(&self) -> MemoryFormat {
        MemoryFormat::of(&self.0.layout)
    }

    pub(crate) fn storage(&self) -> RwLockReadGuard<'_, Storage> {
        self.0.storage.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The storage for an in-place write: advances [`mutation_epoch`] and records which
    /// storage is written (the only path that writes into an existing storage).
    pub(crate) fn storage_mut(&self) -> RwLockWriteGuard<'_, Storage> {
        let guard = self.0.storage.write().unwrap_or_else(|p| p.into_inner());
        crate::mutation::note_write(guard.write_token());
        guard
    }

    pub(crate) fn storage_arc(&self) -> &Arc<RwLock<Storage>> {
        &self.0.storage
    }

    /// The shared tensor record (weak handles: `autocast_cache.rs`).
    pub(crate) fn inner(&self) -> &Arc<TensorInner> {
        &self.0
    }

    /// The record of the op that produced this tensor: `None` for a leaf, and for a non-leaf
    /// whose record a backward already released.
    pub(crate) fn grad_fn(&self) -> Option<Arc<GradFn>> {
        self.0.grad_fn.as_ref().and_then(|node| node.record())
    }

    /// Call `hook` with this tensor's gradient during every backward that reaches it, once
    /// all contributions are summed and before the gradient flows on (into `.grad` for a
    /// leaf); `Ok(Some(g))` replaces the gradient with `g` (same shape). Like PyTorch's
    /// `register_hook`; the tensor must require a gradient. Hooks run under `no_grad`, in the
    /// order they were added; `HookHandle::remove` takes one off.
    ///
    /// ```
    /// use anygrad_core::{Device, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &Device::Cpu)?.requires_grad_(true);
    /// let y = x.mul_scalar(3.0)?;
    /// y.register_hook(|g| Ok(Some(g.mul_scalar(10.0)?)))?;
    /// y.sum_all()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![30.0, 30.0]);
    /// # Ok::<(), anygrad_core::Error>(())
    /// ```
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::Autograd {
                message: "cannot register a hook on a tensor that doesn't require gradient".into(),
            });
        }
        let hook: GradientHook = Arc::new(hook);
        let list = match &self.0.grad_fn {
            Some(node) => node.hooks(),
            None => self.0.leaf_hooks.get_or_init(Default::default),
        };
        Ok(HookHandle {
            id: list.add(hook),
            list: Arc::downgrade(list),
        })
    }

    /// Keep this intermediate result's gradient in `.grad` during backward (summed over
    /// backward calls, like a leaf's), as PyTorch's `retain_grad`; a leaf keeps its own anyway.
    /// An error for a tensor that does not require a gradient.
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::Autograd {
                message: "can't retain_grad on a tensor that has requires_grad=False".into(),
            });
        }
        let Some(node) = &self.0.grad_fn else {
            return Ok(());
        };
        if node.start_retaining_grad() {
            return Ok(());
        }
        // A weak handle: the hook lives in this tensor's own record.
        let handle = Arc::downgrade(&self.0);
        node.hooks().add(Arc::new(move |grad: &Tensor| {
            if let Some(inner) = handle.upgrade() {
                let tensor = Tensor(inner);
                let total = match tensor.grad() {
                    Some(previous) => previous.add(grad)?,
                    None => grad.clone(),
                };
                tensor.set_grad(Some(total));
            }
            Ok(None)
        }));
        Ok(())
    }

    /// `grad` through this tensor's gradient hooks (itself where there are none).
    pub(crate) fn apply_gradient_hooks(&self, grad: Tensor) -> Result<Tensor> {
        let list = match &self.0.grad_fn {
            Some(node) => node.existing_hooks(),
            None => self.0.leaf_hooks.get(),
        };
        match list {
            Some(list) => list.apply(grad),
            None => Ok(grad),
        }
    }

    /// Drop this tensor's op record and with it what it saved for backward (PyTorch frees the
    /// graph the same way after `backward()` unless `retain_graph=True`).
    pub(crate) fn release_grad_fn(&self) {
        if let Some(node) = &self.0.grad_fn {
            node.release();
        }
    }

    /// True when two tensors share storage (views of each other).
    pub fn same_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    /// The view's elements in logical order as a `Vec<T>` (dtype must be `T`'s). Blocks until
    /// GPU work finishes.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::DTypeMismatch {
                op: "to_vec",
                lhs: self.dtype(),
                rhs: T::DTYPE,
            });
        }
        self.storage().to_vec(self.layout())
    }

    /// The elements converted to f32, whatever the dtype.
    pub fn to_vec_f32(&self) -> Result<Vec<f32>> {
        Ok(self.to_vec_f64()?.into_iter().map(|v| v as f32).collect())
    }

    /// The elements converted to f64, whatever the dtype.
    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        self.storage().to_f64_vec(self.layout())
    }

    /// The single value of a one-element tensor.
    pub fn item_f64(&self) -> Result<f64> {
        if self.numel() != 1 {
            return Err(Error::InvalidShape {
                op: "item",
                shape: self.shape().to_vec(),
                message: "only one-element tensors can be converted to a scalar".into(),
            });
        }
        Ok(self.to_vec_f64()?[0])
    }

    /// The single value of a one-element tensor as `T` (dtype must match).
    pub fn item<T: Element>(&self) -> Result<T> {
        self.item_f64()?;
        Ok(self.to_vec::<T>()?[0])
    }

    /// Copy to another device (a no-op clone when already there). Differentiable.
    pub fn to_device(&self, device: &Device) -> Result<Tensor> {
        if self.device() == device {
            return Ok(self.clone());
        }
        // Storage moves whole: a view that is not exactly its storage (strided, offset, or a
        // prefix of a larger buffer) is copied out first.
        let exact = self.is_contiguous()
            && self.layout().offset == 0
            && self.storage().len() == self.numel();
        let source = if exact { self.clone() } else { self.copy()? };
        let moved = source.storage().to_device(device)?;
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::ToDevice {
            input: self.clone(),
        });
        Ok(Tensor::from_storage(moved, self.shape(), grad_fn))
    }

    /// Convert to another dtype. Differentiable between float dtypes.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        // A dense view in another order (a channels-last activation) casts as one flat run
        // and keeps its strides (`Layout::kept_order`).
        let (view, layout) = self.layout().elementwise_views();
        let storage = self.storage().cast(&view, dtype)?;
        let grad_fn = Tensor::record(&[self], dtype, || GradFn::Cast {
            input: self.clone(),
        });
        Ok(Tensor::from_view(
            Arc::new(RwLock::new(storage)),
            layout,
            grad_fn,
        ))
    }

    /// Copy `source`'s values into this tensor's storage, in place, outside autograd (what
    /// optimizers do to parameters). Shapes, dtypes and devices must match.
    pub fn assign(&self, source: &Tensor) -> Result<()> {
        if self.shape() != source.shape() {
            return Err(Error::ShapeMismatch {
                op: "assign",
                lhs: self.shape().to_vec(),
                rhs: source.shape().to_vec(),
                reason: "must have the same shape".into(),
            });
        }
        if self.dtype() != source.dtype() {
            return Err(Error::DTypeMismatch {
                op: "assign",
                lhs: self.dtype(),
                rhs: source.dtype(),
            });
        }
        if self.device() != source.device() {
            return Err(Error::DeviceMismatch {
                op: "assign",
                lhs: self.device().to_string(),
                rhs: source.device().to_string(),
            });
        }
        let source = if self.same_storage(source) {
            source.copy()?
        } else {
            source.clone()
        };
        let src_guard = source.storage();
        let mut dst_guard = self.storage_mut();
        src_guard.copy_into(source.layout(), &mut dst_guard, self.layout())
    }

    /// A contiguous copy that owns new storage (PyTorch's `clone()`). Differentiable.
    pub fn copy(&self) -> Result<Tensor> {
        let storage = self.storage().copy_strided(self.layout())?;
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::Copy {
            input: self.clone(),
        });
        Ok(Tensor::from_storage(storage, self.shape(), grad_fn))
    }

    // ----- autograd surface -----

    /// Mark (or unmark) this leaf as needing a gradient; returns the same tensor for chaining.
    pub fn requires_grad_(&self, requires_grad: bool) -> Tensor {
        self.0.requires_grad.store(requires_grad, Ordering::Relaxed);
        self.clone()
    }

    /// True when gradients flow to or through this tensor.
    pub fn requires_grad(&self) -> bool {
        self.is_tracked()
    }

    pub(crate) fn is_tracked(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed) || self.0.grad_fn.is_some()
    }

    /// True for tensors created by the user (not produced by a recorded op).
    pub fn is_leaf(&self) -> bool {
        self.0.grad_fn.is_none()
    }

    /// The accumulated gradient of a leaf, if any.
    pub fn grad(&self) -> Option<Tensor> {
        self.0
            .grad
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replace the accumulated gradient.
    pub fn set_grad(&self, grad: Option<Tensor>) {
        *self.0.grad.lock().unwrap_or_else(|p| p.into_inner()) = grad;
    }

    /// Clear the accumulated gradient (PyTorch's `grad = None`).
    pub fn zero_grad(&self) {
        self.set_grad(None);
    }

    /// A view of the same data that autograd does not track.
    pub fn detach(&self) -> Tensor {
        Tensor::from_view(self.0.storage.clone(), self.0.layout.clone(), None)
    }

    /// Compute gradients of this scalar with respect to every tracked leaf.
    pub fn backward(&self) -> Result<()> {
        autograd::backward(self)
    }

    /// Backward from a non-scalar output with an explicit upstream gradient.
    pub fn backward_with(&self, gradient: &Tensor) -> Result<()> {
        autograd::backward_with(self, gradient.clone(), false)
    }

    /// Like [`Tensor::backward`] (scalar output) but keeps the graph and what it saved, so that
    /// backward can run through it again (PyTorch's `backward(retain_graph=True)`). A plain
    /// `backward` frees each op's saved tensors as soon as it has used them.
    pub fn backward_retain_graph(&self) -> Result<()> {
        autograd::backward_retaining(self)
    }

    /// [`Tensor::backward`] that calls `on_grad_ready(leaf)` as soon as each leaf's gradient
    /// is final (like PyTorch's post-accumulate-grad hooks): once per leaf that receives a
    /// gradient, after every contribution has been added to its `.grad`, in the order the
    /// backward walk finishes them (the last layers first). The hook runs on this thread
    /// while the rest of backward is still to be recorded, so it can start work on the
    /// finished gradients early (data parallelism sends them to the other replicas); an
    /// error it returns stops backward and is returned. Leaves the walk does not reach get
    /// no call.
    ///
    /// ```
    /// use anygrad_core::{Device, DType, Tensor};
    /// let w1 = Tensor::ones(&[2, 2], DType::F32, &Device::Cpu)?.requires_grad_(true);
    /// let w2 = Tensor::ones(&[2, 2], DType::F32, &Device::Cpu)?.requires_grad_(true);
    /// let x = Tensor::ones(&[1, 2], DType::F32, &Device::Cpu)?;
    /// let loss = x.matmul(&w1)?.matmul(&w2)?.sum_all()?;
    /// let mut ready = Vec::new();
    /// loss.backward_with_hook(|leaf| {
    ///     ready.push(leaf.id());
    ///     Ok(())
    /// })?;
    /// assert_eq!(ready, vec![w2.id(), w1.id()]);
    /// # Ok::<(), anygrad_core::Error>(())
    /// ```
    pub fn backward_with_hook<F>(&self, mut on_grad_ready: F) -> Result<()>
    where
        F: FnMut(&Tensor) -> Result<()>,
    {
        let seed = autograd::scalar_seed(self)?;
        autograd::backward_with_hook(self, seed, false, &mut on_grad_ready)
    }

    /// Check that two tensors are on the same device (error names the op and both devices).
    pub(crate) fn same_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.device() != other.device() {
            return Err(Error::DeviceMismatch {
                op,
                lhs: self.device().to_string(),
                rhs: other.device().to_string(),
            });
        }
        Ok(())
    }

    /// Device check for ops named at run time (custom ops).
    pub(crate) fn same_device_for(&self, op: &str, other: &Tensor) -> Result<()> {
        if self.device() != other.device() {
            return Err(Error::invalid(
                "custom op",
                format!(
                    "{op}: operands are on different devices ({} and {})",
                    self.device(),
                    other.device()
                ),
            ));
        }
        Ok(())
    }

    /// Check that two tensors have the same dtype.
    pub(crate) fn same_dtype(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op,
                lhs: self.dtype(),
                rhs: other.dtype(),
            });
        }
        Ok(())
    }
}

/// The storage behind every graph-edge twin (see [`Tensor::graph_edge`]): empty, so that a rule
/// reading a value it declared it does not need fails the view checks with an `Error` instead of
/// keeping memory alive.
fn released_storage() -> Arc<RwLock<Storage>> {
    static RELEASED: std::sync::OnceLock<Arc<RwLock<Storage>>> = std::sync::OnceLock::new();
    RELEASED
        .get_or_init(|| Arc::new(RwLock::new(Storage::empty())))
        .clone()
}
