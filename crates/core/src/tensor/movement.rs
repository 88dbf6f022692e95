//! Shape and view ops. Everything here except `contiguous`, `cat` and `stack` is metadata
//! only: a new `Layout` over the same storage, recorded for autograd so gradients flow back
//! through the view.

use super::Tensor;
use crate::autograd::GradFn;
use crate::error::{Error, Result};
use crate::layout::{Layout, MemoryFormat};
use crate::shape::{resolve_dim, resolve_reshape};
use crate::storage::Storage;

/// Anything usable as a target shape for `reshape`: `[usize; N]`, `&[usize]`, `Vec<usize>`, or
/// signed forms (`[-1, 64]`) where one `-1` is inferred.
pub trait ShapeSpec {
    /// The signed dims (`-1` = infer).
    fn signed_dims(&self) -> Vec<isize>;
}

macro_rules! shape_spec_impl {
    ($($t:ty),*) => {
        $(
            impl ShapeSpec for &[$t] {
                fn signed_dims(&self) -> Vec<isize> {
                    self.iter().map(|&d| d as isize).collect()
                }
            }
            impl<const N: usize> ShapeSpec for [$t; N] {
                fn signed_dims(&self) -> Vec<isize> {
                    self.iter().map(|&d| d as isize).collect()
                }
            }
            impl<const N: usize> ShapeSpec for &[$t; N] {
                fn signed_dims(&self) -> Vec<isize> {
                    self.iter().map(|&d| d as isize).collect()
                }
            }
            impl ShapeSpec for Vec<$t> {
                fn signed_dims(&self) -> Vec<isize> {
                    self.iter().map(|&d| d as isize).collect()
                }
            }
            impl ShapeSpec for &Vec<$t> {
                fn signed_dims(&self) -> Vec<isize> {
                    self.iter().map(|&d| d as isize).collect()
                }
            }
        )*
    };
}
shape_spec_impl!(usize, isize, i32);

impl Tensor {
    /// A zero tensor of `shape` with this tensor's values written into its view `target`,
    /// untracked (the gradient of views: `narrow`, strided windows, a partial scatter).
    pub(crate) fn written_into_zeros(&self, shape: &[usize], target: &Layout) -> Result<Tensor> {
        let mut storage =
            Storage::full(self.device(), crate::shape::numel(shape), self.dtype(), 0.0)?;
        self.storage()
            .copy_into(self.layout(), &mut storage, target)?;
        Ok(Tensor::from_storage(storage, shape, None))
    }

    /// A view with recorded autograd (internal helper for metadata-only ops).
    fn view_with(&self, layout: Layout, make: impl FnOnce() -> GradFn) -> Tensor {
        let grad_fn = Tensor::record(&[self], self.dtype(), make);
        Tensor::from_view(self.storage_arc().clone(), layout, grad_fn)
    }

    /// The same elements with a new shape (one dim may be `-1`). A view where strides for
    /// the new shape exist (always for contiguous data; for strided data where only dims that
    /// walk memory as one are split or merged, as PyTorch's `reshape`), else a copy.
    pub fn reshape(&self, shape: impl ShapeSpec) -> Result<Tensor> {
        let target = resolve_reshape("reshape", self.shape(), &shape.signed_dims())?;
        if target == self.shape() {
            return Ok(self.clone());
        }
        if let Some(layout) = self.layout().reshape_view(&target) {
            return Ok(self.view_with(layout, || GradFn::Reshape {
                input: self.clone(),
            }));
        }
        let source = if self.is_contiguous() {
            self.clone()
        } else {
            self.contiguous()?
        };
        let layout = source
            .layout()
            .reshape(&target)
            .ok_or_else(|| Error::InvalidShape {
                op: "reshape",
                shape: self.shape().to_vec(),
                message: "internal: contiguous tensor could not be reshaped".into(),
            })?;
        Ok(source.view_with(layout, || GradFn::Reshape {
            input: source.clone(),
        }))
    }

    /// Merge dims `start..=end` into one (negative dims count from the end).
    pub fn flatten(&self, start: isize, end: isize) -> Result<Tensor> {
        if self.rank() == 0 {
            return self.reshape([1usize]);
        }
        let s = resolve_dim("flatten", start, self.rank(), self.shape())?;
        let e = resolve_dim("flatten", end, self.rank(), self.shape())?;
        if s > e {
            return Err(Error::invalid(
                "flatten",
                format!("start dim {start} comes after end dim {end}"),
            ));
        }
        let mut shape: Vec<usize> = self.shape()[..s].to_vec();
        shape.push(self.shape()[s..=e].iter().product());
        shape.extend_from_slice(&self.shape()[e + 1..]);
        self.reshape(shape)
    }

    /// Reorder dims: `perm` is a permutation of `0..rank`.
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor> {
        let mut seen = vec![false; self.rank()];
        let valid = perm.len() == self.rank()
            && perm
                .iter()
                .all(|&p| p < seen.len() && !std::mem::replace(&mut seen[p], true));
        if !valid {
            return Err(Error::InvalidShape {
                op: "permute",
                shape: self.shape().to_vec(),
                message: format!("{perm:?} is not a permutation of the dims"),
            });
        }
        let layout = self.layout().permute(perm);
        Ok(self.view_with(layout, || GradFn::Permute {
            input: self.clone(),
            perm: perm.to_vec(),
        }))
    }

    /// Swap two dims.
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        let a = resolve_dim("transpose", dim0, self.rank(), self.shape())?;
        let b = resolve_dim("transpose", dim1, self.rank(), self.shape())?;
        let mut perm: Vec<usize> = (0..self.rank()).collect();
        perm.swap(a, b);
        self.permute(&perm)
    }

    /// Transpose of a matrix (rank ≤ 2), like PyTorch's `.t()`.
    pub fn t(&self) -> Result<Tensor> {
        match self.rank() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            _ => Err(Error::InvalidShape {
                op: "t",
                shape: self.shape().to_vec(),
                message: "expects a tensor of rank <= 2; use transpose(d0, d1)".into(),
            }),
        }
    }

    /// Insert a dim of size 1 at `dim` (`-1` appends).
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_dim("unsqueeze", dim, self.rank() + 1, self.shape())?;
        let mut shape = self.shape().to_vec();
        shape.insert(d, 1);
        self.reshape(shape)
    }

    /// Remove dim `dim` if it has size 1 (otherwise the tensor is returned unchanged, as in
    /// PyTorch).
    pub fn squeeze(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_dim("squeeze", dim, self.rank(), self.shape())?;
        if self.rank() == 0 || self.shape()[d] != 1 {
            return Ok(self.clone());
        }
        let mut shape = self.shape().to_vec();
        shape.remove(d);
        self.reshape(shape)
    }

    /// A view stretched to `shape` (size-1 dims repeat with stride 0; new leading dims allowed).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        if shape == self.shape() {
            return Ok(self.clone());
        }
        let layout = self.layout().broadcast_to(shape)?;
        Ok(self.view_with(layout, || GradFn::BroadcastTo {
            input: self.clone(),
        }))
    }

    /// PyTorch's name for [`Tensor::broadcast_to`].
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        self.broadcast_to(shape)
    }

    /// PyTorch's `expand_as`: this tensor stretched to `other`'s shape (a view).
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.broadcast_to(other.shape())
            .map_err(|error| match error {
                Error::ShapeMismatch {
                    lhs, rhs, reason, ..
                } => Error::ShapeMismatch {
                    op: "expand_as",
                    lhs,
                    rhs,
                    reason,
                },
                other => other,
            })
    }

    /// PyTorch's `view_as`: the same elements in `other`'s shape, always as a view of this
    /// tensor's storage. Like PyTorch's `view`, an error where this tensor's strides allow no
    /// such view (use [`Tensor::reshape`], which copies then).
    pub fn view_as(&self, other: &Tensor) -> Result<Tensor> {
        let signed: Vec<isize> = other.shape().iter().map(|&d| d as isize).collect();
        let target = resolve_reshape("view_as", self.shape(), &signed)?;
        if target == self.shape() {
            return Ok(self.clone());
        }
        let layout = self
            .layout()
            .reshape_view(&target)
            .ok_or_else(|| Error::InvalidShape {
                op: "view_as",
                shape: self.shape().to_vec(),
                message: format!(
                    "strides {:?} give no view of shape {target:?}; use .reshape() (which \
                     copies) or .contiguous() first",
                    self.layout().strides
                ),
            })?;
        Ok(self.view_with(layout, || GradFn::Reshape {
            input: self.clone(),
        }))
    }

    /// `len` entries of `dim` starting at `start`.
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<Tensor> {
        let d = resolve_dim("narrow", dim, self.rank(), self.shape())?;
        let size = self.shape()[d];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::InvalidShape {
                op: "narrow",
                shape: self.shape().to_vec(),
                message: format!(
                    "range {start}..{} is out of bounds for dim {d} of size {size}",
                    start.saturating_add(len)
                ),
            });
        }
        if start == 0 && len == size {
            return Ok(self.clone());
        }
        let layout = self.layout().narrow(d, start, len);
        Ok(self.view_with(layout, || GradFn::Narrow {
            input: self.clone(),
            dim: d,
            start,
        }))
    }

    /// Entries `start..end` of `dim` (PyTorch's `x[.., start:end]`).
    pub fn slice(&self, dim: isize, start: usize, end: usize) -> Result<Tensor> {
        if end < start {
            return Err(Error::invalid(
                "slice",
                format!("end {end} is before start {start}"),
            ));
        }
        self.narrow(dim, start, end - start)
    }

    /// Every `step`-th entry of `dim` from `start`, `len` of them (PyTorch's
    /// `x[.., start::step]`): a view sharing the storage, as PyTorch's, with the stride along
    /// `dim` multiplied by `step`. Differentiable (the gradient lands in zeros at those entries).
    pub fn slice_with_step(
        &self,
        dim: isize,
        start: usize,
        len: usize,
        step: usize,
    ) -> Result<Tensor> {
        let d = resolve_dim("slice", dim, self.rank(), self.shape())?;
        let size = self.shape()[d];
        let reach = len
            .checked_sub(1)
            .and_then(|last| last.checked_mul(step))
            .and_then(|span| span.checked_add(start));
        if step == 0 || reach.is_some_and(|last| last >= size) || (len > 0 && reach.is_none()) {
            return Err(Error::invalid(
                "slice",
                format!(
                    "{len} entries from {start} in steps of {step} do not fit dim {d} of size {size}"
                ),
            ));
        }
        if step == 1 {
            return self.narrow(dim, start, len);
        }
        let stepped = |layout: Layout| {
            let mut out = layout.narrow(d, start, len);
            out.strides[d] *= step;
            out
        };
        let relative = stepped(Layout::contiguous(self.shape()));
        let layout = stepped(self.layout().clone());
        Ok(self.view_with(layout, || GradFn::StridedView {
            input: self.clone(),
            relative,
        }))
    }

    /// Split into `chunks` pieces along `dim` (the last may be smaller), like `torch.chunk`.
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        if chunks == 0 {
            return Err(Error::invalid(
                "chunk",
                "the number of chunks must be at least 1",
            ));
        }
        let size = self.dim(dim)?;
        self.split(size.div_ceil(chunks).max(1), dim)
    }

    /// Split into pieces of `size` along `dim` (the last may be smaller), like `torch.split`.
    pub fn split(&self, size: usize, dim: isize) -> Result<Vec<Tensor>> {
        if size == 0 {
            return Err(Error::invalid("split", "the split size must be at least 1"));
        }
        let total = self.dim(dim)?;
        (0..total)
            .step_by(size)
            .map(|start| self.narrow(dim, start, size.min(total - start)))
            .collect()
    }

    /// The same values in a contiguous row-major layout (a copy only when needed).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy()
    }

    /// The same values dense in `format` (PyTorch's `x.contiguous(memory_format=...)`): this
    /// tensor where it already is, else a copy (differentiable). Channels-last needs a 4-D
    /// tensor: `[n, c, h, w]` whose memory is `[n, h, w, c]`.
    pub fn contiguous_in(&self, format: MemoryFormat) -> Result<Tensor> {
        match format {
            MemoryFormat::Contiguous => self.contiguous(),
            MemoryFormat::ChannelsLast => {
                if self.rank() != 4 {
                    return Err(Error::invalid(
                        "contiguous_in",
                        format!(
                            "channels-last needs a 4-D [n, c, h, w] tensor, got shape {:?}",
                            self.shape()
                        ),
                    ));
                }
                if MemoryFormat::ChannelsLast.holds(self.layout()) {
                    return Ok(self.clone());
                }
                self.permute(&[0, 2, 3, 1])?.copy()?.permute(&[0, 3, 1, 2])
            }
        }
    }

    /// Join tensors along an existing dim; all other dims must match.
    pub fn cat(tensors: &[&Tensor], dim: isize) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("cat", "needs at least one tensor"))?;
        let d = resolve_dim("cat", dim, first.rank(), first.shape())?;
        let mut total = 0;
        for t in tensors {
            first.same_device("cat", t)?;
            first.same_dtype("cat", t)?;
            let compatible = t.rank() == first.rank()
                && t.shape()
                    .iter()
                    .zip(first.shape())
                    .enumerate()
                    .all(|(i, (a, b))| i == d || a == b);
            if !compatible {
                return Err(Error::ShapeMismatch {
                    op: "cat",
                    lhs: first.shape().to_vec(),
                    rhs: t.shape().to_vec(),
                    reason: format!("must match in every dim except {d}"),
                });
            }
            total += t.shape()[d];
        }
        let mut shape = first.shape().to_vec();
        shape[d] = total;
        let mut output = Storage::full(
            first.device(),
            crate::shape::numel(&shape),
            first.dtype(),
            0.0,
        )?;
        let out_layout = Layout::contiguous(&shape);
        let mut start = 0;
        for t in tensors {
            let len = t.shape()[d];
            t.storage()
                .copy_into(t.layout(), &mut output, &out_layout.narrow(d, start, len))?;
            start += len;
        }
        let inputs: Vec<Tensor> = tensors.iter().map(|t| (*t).clone()).collect();
        let grad_fn = Tensor::record(tensors, first.dtype(), || GradFn::Cat { inputs, dim: d });
        Ok(Tensor::from_storage(output, &shape, grad_fn))
    }

    /// Join tensors of equal shape along a new dim.
    pub fn stack(tensors: &[&Tensor], dim: isize) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("stack", "needs at least one tensor"))?;
        let d = resolve_dim("stack", dim, first.rank() + 1, first.shape())?;
        let expanded: Vec<Tensor> = tensors
            .iter()
            .map(|t| {
                if t.shape() != first.shape() {
                    return Err(Error::ShapeMismatch {
                        op: "stack",
                        lhs: first.shape().to_vec(),
                        rhs: t.shape().to_vec(),
                        reason: "must have the same shape".into(),
                    });
                }
                t.unsqueeze(d as isize)
            })
            .collect::<Result<_>>()?;
        let refs: Vec<&Tensor> = expanded.iter().collect();
        Tensor::cat(&refs, d as isize)
    }
}
