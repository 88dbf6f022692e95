//! Views and shape changes of `Tensor`: `view`, `reshape`, `permute`, `transpose`, `t`, `T`,
//! `unsqueeze`, `squeeze`, `flatten`, `unflatten`, `expand`, `expand_as`, `repeat`,
//! `contiguous`, `narrow`, `chunk`, `split`, `unbind`, `flip`, `roll`. Each keeps autograd.

use anygrad::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::{run, runtime_error, type_error};
use crate::tensor::{shape_args, tensor_arg, PyTensor};

impl PyTensor {
    /// A library view op keeping this tensor's dtype marking.
    fn view_op(
        &self,
        name: &str,
        op: impl FnOnce(&Tensor) -> anygrad::Result<Tensor>,
    ) -> PyResult<PyTensor> {
        Ok(self.derived(run(name, || op(&self.tensor))?))
    }
}

#[pymethods]
impl PyTensor {
    /// The same elements in a new shape (one size may be -1).
    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let shape = shape_args("view", shape)?;
        self.view_op("view", |t| t.reshape(shape.as_slice()))
    }

    /// The same elements in a new shape (one size may be -1).
    #[pyo3(signature = (*shape))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let shape = shape_args("reshape", shape)?;
        self.view_op("reshape", |t| t.reshape(shape.as_slice()))
    }

    /// Shaped like `other`.
    fn view_as(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let other = tensor_arg("view_as", "other", other)?;
        self.view_op("view_as", |t| t.reshape(other.tensor.shape()))
    }

    /// Shaped like `other`.
    fn reshape_as(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.view_as(other)
    }

    /// The dims reordered (`permute(2, 0, 1)` or `permute((2, 0, 1))`; negative dims count
    /// from the end).
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let dims = shape_args("permute", dims)?;
        let rank = self.tensor.rank() as isize;
        let order = dims
            .iter()
            .map(|&d| {
                let resolved = if d < 0 { d + rank } else { d };
                usize::try_from(resolved)
                    .ok()
                    .filter(|&r| (r as isize) < rank)
                    .ok_or_else(|| {
                        pyo3::exceptions::PyIndexError::new_err(format!(
                            "permute: dim {d} is out of range for a tensor of {rank} dims"
                        ))
                    })
            })
            .collect::<PyResult<Vec<usize>>>()?;
        self.view_op("permute", |t| t.permute(&order))
    }

    /// Two dims swapped.
    fn transpose(&self, dim0: isize, dim1: isize) -> PyResult<PyTensor> {
        self.view_op("transpose", |t| t.transpose(dim0, dim1))
    }

    /// Two dims swapped (`swapaxes`).
    fn swapaxes(&self, dim0: isize, dim1: isize) -> PyResult<PyTensor> {
        self.transpose(dim0, dim1)
    }

    /// The transpose of a matrix (a vector is returned as it is).
    fn t(&self) -> PyResult<PyTensor> {
        match self.tensor.rank() {
            0 | 1 => Ok(self.clone()),
            2 => self.view_op("t", |t| t.t()),
            rank => Err(runtime_error(
                "t",
                format!("expects a tensor with <= 2 dimensions, but self is {rank}D"),
            )),
        }
    }

    /// Every dim reversed (the transpose of a matrix).
    #[getter(T)]
    fn transposed(&self) -> PyResult<PyTensor> {
        let order: Vec<usize> = (0..self.tensor.rank()).rev().collect();
        self.view_op("T", |t| t.permute(&order))
    }

    /// The transpose of the last two dims (`mT`).
    #[getter(mT)]
    fn matrix_transposed(&self) -> PyResult<PyTensor> {
        self.view_op("mT", |t| t.transpose(-2, -1))
    }

    /// A new dim of size 1 at `dim`.
    fn unsqueeze(&self, dim: isize) -> PyResult<PyTensor> {
        self.view_op("unsqueeze", |t| t.unsqueeze(dim))
    }

    /// Dims of size 1 removed (all of them, or only `dim`).
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dims = crate::tensor::dims_arg("squeeze", dim)?;
        self.view_op("squeeze", |t| match dims {
            None => {
                let shape: Vec<usize> = t.shape().iter().copied().filter(|&s| s != 1).collect();
                t.reshape(shape)
            }
            Some(dims) => {
                let rank = t.rank() as isize;
                let mut resolved: Vec<isize> = dims
                    .iter()
                    .map(|&d| if d < 0 { d + rank } else { d })
                    .collect();
                resolved.sort_unstable();
                let mut out = t.clone();
                for &d in resolved.iter().rev() {
                    out = out.squeeze(d)?;
                }
                Ok(out)
            }
        })
    }

    /// Dims `start_dim..=end_dim` merged into one.
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, start_dim: isize, end_dim: isize) -> PyResult<PyTensor> {
        self.view_op("flatten", |t| t.flatten(start_dim, end_dim))
    }

    /// Dim `dim` split into `sizes`.
    fn unflatten(&self, dim: isize, sizes: Vec<isize>) -> PyResult<PyTensor> {
        let rank = self.tensor.rank() as isize;
        let d = if dim < 0 { dim + rank } else { dim };
        if d < 0 || d >= rank {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "unflatten: dim {dim} is out of range"
            )));
        }
        let d = d as usize;
        let mut shape: Vec<isize> = self.tensor.shape()[..d]
            .iter()
            .map(|&s| s as isize)
            .collect();
        let known: isize = sizes.iter().filter(|&&s| s >= 0).product();
        for &size in &sizes {
            shape.push(if size < 0 {
                self.tensor.shape()[d] as isize / known.max(1)
            } else {
                size
            });
        }
        shape.extend(self.tensor.shape()[d + 1..].iter().map(|&s| s as isize));
        self.view_op("unflatten", |t| t.reshape(shape.as_slice()))
    }

    /// Broadcast to a larger shape without copying (-1 keeps a size).
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let sizes = shape_args("expand", sizes)?;
        let rank = self.tensor.rank();
        if sizes.len() < rank {
            return Err(runtime_error(
                "expand",
                format!("the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({rank})", sizes.len()),
            ));
        }
        let offset = sizes.len() - rank;
        let mut target = Vec::with_capacity(sizes.len());
        for (i, &size) in sizes.iter().enumerate() {
            if size == -1 {
                if i < offset {
                    return Err(runtime_error(
                        "expand",
                        "-1 is not allowed in a leading, non-existing dimension",
                    ));
                }
                target.push(self.tensor.shape()[i - offset]);
            } else if size < 0 {
                return Err(runtime_error("expand", format!("invalid size {size}")));
            } else {
                target.push(size as usize);
            }
        }
        self.view_op("expand", |t| t.broadcast_to(&target))
    }

    /// Broadcast to `other`'s shape.
    fn expand_as(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let other = tensor_arg("expand_as", "other", other)?;
        self.view_op("expand_as", |t| t.broadcast_to(other.tensor.shape()))
    }

    /// Tiled `repeats` times along each dim.
    #[pyo3(signature = (*repeats))]
    fn repeat(&self, repeats: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let repeats = crate::tensor::sizes("repeat", &shape_args("repeat", repeats)?)?;
        self.view_op("repeat", |t| t.repeat(&repeats))
    }

    /// Dense in row-major order (a copy only when needed).
    #[pyo3(signature = (memory_format=None))]
    fn contiguous(&self, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = memory_format;
        self.view_op("contiguous", |t| t.contiguous())
    }

    /// `length` elements of `dim` from `start`.
    fn narrow(&self, dim: isize, start: isize, length: usize) -> PyResult<PyTensor> {
        let size = run("narrow", || self.tensor.dim(dim))? as isize;
        let start = if start < 0 { start + size } else { start };
        if start < 0 {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "narrow: start is out of range",
            ));
        }
        self.view_op("narrow", |t| t.narrow(dim, start as usize, length))
    }

    /// `chunks` nearly equal parts along `dim`.
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, chunks: usize, dim: isize) -> PyResult<Vec<PyTensor>> {
        let parts = run("chunk", || self.tensor.chunk(chunks, dim))?;
        Ok(parts.into_iter().map(|p| self.derived(p)).collect())
    }

    /// Parts of `split_size` along `dim` (or of the listed sizes).
    #[pyo3(signature = (split_size, dim=0))]
    fn split(&self, split_size: &Bound<'_, PyAny>, dim: isize) -> PyResult<Vec<PyTensor>> {
        if let Ok(size) = split_size.extract::<usize>() {
            let parts = run("split", || self.tensor.split(size, dim))?;
            return Ok(parts.into_iter().map(|p| self.derived(p)).collect());
        }
        let sizes: Vec<usize> = split_size
            .extract()
            .map_err(|_| type_error("split", "split_size must be an int or a list of ints"))?;
        let total = run("split", || self.tensor.dim(dim))?;
        if sizes.iter().sum::<usize>() != total {
            return Err(runtime_error(
                "split",
                format!("split sizes {sizes:?} do not add up to {total}"),
            ));
        }
        let mut start = 0;
        let mut parts = Vec::new();
        for size in sizes {
            parts.push(self.view_op("split", |t| t.narrow(dim, start, size))?);
            start += size;
        }
        Ok(parts)
    }

    /// The slices along `dim`, each without that dim.
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, dim: isize) -> PyResult<Vec<PyTensor>> {
        let size = run("unbind", || self.tensor.dim(dim))?;
        (0..size)
            .map(|i| self.view_op("unbind", |t| t.narrow(dim, i, 1)?.squeeze(dim)))
            .collect()
    }

    /// Reversed along `dims`.
    #[pyo3(signature = (*dims))]
    fn flip(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let dims = shape_args("flip", dims)?;
        self.view_op("flip", |t| t.flip(&dims))
    }

    /// Rolled by `shifts` along `dims`.
    #[pyo3(signature = (shifts, dims))]
    fn roll(&self, shifts: isize, dims: isize) -> PyResult<PyTensor> {
        self.view_op("roll", |t| t.roll(shifts, dims))
    }
}
