//! Python indexing of tensors: `x[i]`, negative ints, slices with steps, `None`, `...`,
//! boolean masks and integer index tensors (or lists), read (`__getitem__`) and written
//! (`__setitem__`), with NumPy's and PyTorch's rules; plus `gather`, `scatter_add`,
//! `index_select`, `masked_select` and `nonzero`.
//!
//! Reading: ints and slices (with any step) give views; index tensors gather. Several
//! index tensors broadcast together; their result dims sit where the first one was when they
//! are adjacent, and in front otherwise. Writing goes into the tensor's storage, outside
//! autograd: through the view itself when the key gives one, else by computing the updated
//! tensor (the key applied to the element positions says which elements change).

use anygrad::{DType, Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyList, PySlice, PyTuple};

use crate::errors::{index_error, run};
use crate::operators::{operand, Operand};
use crate::tensor::{tensor_arg, PyTensor};

/// One item of an index key.
enum Item {
    /// An int: selects and drops the dim.
    Int(isize),
    /// A slice.
    Slice(Py<PySlice>),
    /// `None`: a new dim of size 1.
    NewAxis,
    /// `...`: as many full slices as needed.
    Ellipsis,
    /// An index tensor: Bool (a mask over as many dims as it has) or integer.
    Tensor(Tensor),
}

impl Item {
    /// How many dims of the indexed tensor this item consumes.
    fn consumed(&self) -> usize {
        match self {
            Item::Int(_) | Item::Slice(_) => 1,
            Item::NewAxis | Item::Ellipsis => 0,
            Item::Tensor(t) if t.dtype() == DType::Bool => t.rank().max(1),
            Item::Tensor(_) => 1,
        }
    }
}

/// Parse a key into items (`device` receives list indices).
fn parse_key(key: &Bound<'_, PyAny>, device: &Device) -> PyResult<Vec<Item>> {
    let parts: Vec<Bound<'_, PyAny>> = if let Ok(tuple) = key.downcast::<PyTuple>() {
        tuple.iter().collect()
    } else {
        vec![key.clone()]
    };
    let mut items = Vec::with_capacity(parts.len());
    for part in parts {
        items.push(parse_item(&part, device)?);
    }
    if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
        return Err(index_error(
            "index",
            "an index can only have a single ellipsis ('...')",
        ));
    }
    Ok(items)
}

/// One item of a key.
fn parse_item(part: &Bound<'_, PyAny>, device: &Device) -> PyResult<Item> {
    if part.is_none() {
        return Ok(Item::NewAxis);
    }
    if part.is_instance_of::<PyEllipsis>() {
        return Ok(Item::Ellipsis);
    }
    if let Ok(slice) = part.downcast::<PySlice>() {
        return Ok(Item::Slice(slice.clone().unbind()));
    }
    if let Ok(tensor) = part.downcast::<PyTensor>() {
        let tensor = tensor.borrow();
        if tensor.tensor.dtype().is_float() {
            return Err(index_error(
                "index",
                "tensors used as indices must be long, int, byte or bool tensors",
            ));
        }
        if tensor.tensor.rank() == 0 && tensor.tensor.dtype() != DType::Bool {
            let value = tensor.values_f64(part.py())?[0];
            return Ok(Item::Int(value as isize));
        }
        let index = if tensor.tensor.dtype() == DType::U8 {
            run("index", || tensor.tensor.to_dtype(DType::Bool))?
        } else {
            tensor.tensor.clone()
        };
        return Ok(Item::Tensor(index));
    }
    if part.downcast::<pyo3::types::PyBool>().is_err() {
        if let Ok(value) = part.extract::<isize>() {
            return Ok(Item::Int(value));
        }
    }
    if part.downcast::<PyList>().is_ok() || part.hasattr("__array__")? {
        let built = part
            .py()
            .import("anygrad")?
            .getattr("as_tensor")?
            .call1((part,))?;
        let built = tensor_arg("index", "index", &built)?;
        let moved = run("index", || built.tensor.to_device(device))?;
        let moved = if moved.dtype().is_float() && moved.numel() == 0 {
            run("index", || moved.to_dtype(DType::I32))?
        } else {
            moved
        };
        if moved.dtype().is_float() {
            return Err(index_error(
                "index",
                "lists used as indices must hold ints or bools",
            ));
        }
        return Ok(Item::Tensor(moved));
    }
    Err(index_error(
        "index",
        format!(
            "only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are valid indices (got {})",
            part.get_type().name()?
        ),
    ))
}

/// The result of applying the basic items: the view and the advanced indices found, each
/// as (dim in the view, integer index tensor).
struct Walked {
    view: Tensor,
    advanced: Vec<(usize, Tensor)>,
    /// Whether every step was a view of the original storage.
    is_view: bool,
}

/// Apply `items` to `tensor`: ints, slices, `None` and `...` directly, index tensors
/// recorded (masks turned into one integer index per dim they cover).
fn walk(py: Python<'_>, tensor: &Tensor, items: &[Item]) -> PyResult<Walked> {
    let consumed: usize = items.iter().map(Item::consumed).sum();
    let rank = tensor.rank();
    if consumed > rank {
        return Err(index_error(
            "index",
            format!("too many indices for tensor of dimension {rank}"),
        ));
    }
    let mut view = tensor.clone();
    let mut dim = 0usize;
    let mut advanced = Vec::new();
    let mut is_view = true;
    for item in items {
        match item {
            Item::Int(index) => {
                let size = view.shape()[dim] as isize;
                let resolved = if *index < 0 { index + size } else { *index };
                if resolved < 0 || resolved >= size {
                    return Err(index_error(
                        "index",
                        format!(
                            "index {index} is out of bounds for dimension {dim} with size {size}"
                        ),
                    ));
                }
                view = run("index", || {
                    view.narrow(dim as isize, resolved as usize, 1)?
                        .squeeze(dim as isize)
                })?;
            }
            Item::Slice(slice) => {
                let size = view.shape()[dim];
                let slice = slice.bind(py);
                let step: Option<isize> = slice.getattr("step")?.extract()?;
                if step.is_some_and(|s| s <= 0) {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "index: step must be greater than zero",
                    ));
                }
                let indices = slice.indices(size as isize)?;
                let (start, stop, step) = (indices.start, indices.stop, indices.step);
                let length = if stop > start {
                    ((stop - start) + step - 1) / step
                } else {
                    0
                } as usize;
                // A view of the same storage, steps included, as in PyTorch.
                view = run("index", || {
                    view.slice_with_step(dim as isize, start as usize, length, step as usize)
                })?;
                dim += 1;
            }
            Item::NewAxis => {
                view = run("index", || view.unsqueeze(dim as isize))?;
                dim += 1;
            }
            Item::Ellipsis => {
                dim += rank - consumed;
            }
            Item::Tensor(index) if index.dtype() == DType::Bool => {
                let covered = index.rank().max(1);
                let expected = &view.shape()[dim..dim + covered];
                if index.rank() > 0 && index.shape() != expected {
                    return Err(index_error(
                        "index",
                        format!(
                            "the shape of the mask {:?} does not match the shape of the indexed tensor {:?} at dim {dim}",
                            index.shape(),
                            expected
                        ),
                    ));
                }
                let positions = run("index", || index.nonzero())?;
                for column in 0..covered {
                    let column_index = run("index", || {
                        positions.narrow(1, column, 1)?.reshape([-1isize])
                    })?;
                    advanced.push((dim + column, column_index));
                }
                dim += covered;
                is_view = false;
            }
            Item::Tensor(index) => {
                advanced.push((dim, index.clone()));
                dim += 1;
                is_view = false;
            }
        }
    }
    Ok(Walked {
        view,
        advanced,
        is_view,
    })
}

/// `index` with negative entries wrapped and every entry checked against `size`. An index on
/// a GPU is wrapped there and checked by the indexing kernel itself, as CUDA's device-side
/// checks do: an entry out of range is an error at the next synchronization (a readback),
/// and no indexing waits for the GPU (reading its extremes back would: twice a batch in a
/// training loop that indexes its data with a permutation).
fn checked_index(index: &Tensor, size: usize, dim: usize) -> PyResult<Tensor> {
    let index = run("index", || index.to_dtype(DType::I32))?;
    if index.numel() == 0 {
        return Ok(index);
    }
    if index.device().is_gpu() {
        return run("index", || {
            let negative = index
                .lt_scalar(0.0)?
                .to_dtype(DType::I32)?
                .mul_scalar(size as f64)?;
            index.add(&negative)
        });
    }
    let (low, high) = run("index", || {
        let low = index.min_all()?.to_device(&Device::Cpu)?.item_f64()?;
        let high = index.max_all()?.to_device(&Device::Cpu)?.item_f64()?;
        Ok((low, high))
    })?;
    let size_f = size as f64;
    if low < -size_f || high >= size_f {
        let bad = if low < -size_f { low } else { high };
        return Err(index_error(
            "index",
            format!("index {bad} is out of bounds for dimension {dim} with size {size}"),
        ));
    }
    if low < 0.0 {
        return run("index", || {
            let negative = index
                .lt_scalar(0.0)?
                .to_dtype(DType::I32)?
                .mul_scalar(size_f)?;
            index.add(&negative)
        });
    }
    Ok(index)
}

/// Apply the advanced indices of `walked` (gathering).
fn gather_advanced(walked: Walked) -> PyResult<Tensor> {
    let Walked { view, advanced, .. } = walked;
    if advanced.is_empty() {
        return Ok(view);
    }
    let rank = view.rank();
    let dims: Vec<usize> = advanced.iter().map(|(d, _)| *d).collect();
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    // Broadcast the index tensors together.
    let mut shape: Vec<usize> = Vec::new();
    for (_, index) in &advanced {
        shape = broadcast_shapes(&shape, index.shape()).ok_or_else(|| {
            index_error(
                "index",
                "shape mismatch: indexing tensors could not be broadcast together",
            )
        })?;
    }
    // Move the indexed dims to the front, in order.
    let mut order = dims.clone();
    order.extend((0..rank).filter(|d| !dims.contains(d)));
    let moved = run("index", || view.permute(&order))?;
    let indexed_sizes: Vec<usize> = dims.iter().map(|&d| view.shape()[d]).collect();
    let rest: Vec<usize> = order[dims.len()..]
        .iter()
        .map(|&d| view.shape()[d])
        .collect();
    // One index tensor on a GPU: its kernel counts negative entries from the end itself
    // (`index_select_wrapping`) and checks the others, with no ops to wrap them first.
    let wrap_in_kernel = advanced.len() == 1 && view.device().is_gpu();
    // One linear index over the indexed dims.
    let mut linear: Option<Tensor> = None;
    for (position, (dim, index)) in advanced.iter().enumerate() {
        let index = if wrap_in_kernel {
            run("index", || index.to_dtype(DType::I32))?
        } else {
            checked_index(index, indexed_sizes[position], *dim)?
        };
        let stride: usize = indexed_sizes[position + 1..].iter().product();
        let term = run("index", || {
            let index = index.broadcast_to(&shape)?;
            if stride == 1 {
                Ok(index)
            } else {
                index.mul_scalar(stride as f64)
            }
        })?;
        linear = Some(match linear {
            None => term,
            Some(sum) => run("index", || sum.add(&term))?,
        });
    }
    let linear = run("index", || {
        linear
            .expect("one index at least")
            .to_device(view.device())?
            .reshape([-1isize])
    })?;
    let count: usize = indexed_sizes.iter().product();
    let mut flat_shape = vec![count];
    flat_shape.extend(&rest);
    let flat = run("index", || moved.reshape(flat_shape.clone()))?;
    let picked = run("index", || {
        if wrap_in_kernel {
            flat.index_select_wrapping(0, &linear)
        } else {
            flat.index_select(0, &linear)
        }
    })?;
    let mut result_shape = shape.clone();
    result_shape.extend(&rest);
    let result = run("index", || picked.reshape(result_shape.clone()))?;
    if adjacent && dims[0] > 0 {
        // The result dims go where the first indexed dim was.
        let index_rank = shape.len();
        let before = dims[0];
        let mut back: Vec<usize> = (index_rank..index_rank + before).collect();
        back.extend(0..index_rank);
        back.extend(index_rank + before..result_shape.len());
        return run("index", || result.permute(&back));
    }
    Ok(result)
}

/// NumPy's broadcast of two shapes.
fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let x = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let y = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// `tensor[key]`.
pub fn get_item(py: Python<'_>, tensor: &Tensor, key: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let items = parse_key(key, tensor.device())?;
    let walked = walk(py, tensor, &items)?;
    gather_advanced(walked)
}

/// The value written by `__setitem__`, as a tensor of `like`'s dtype on its device.
fn value_tensor(value: &Bound<'_, PyAny>, like: &Tensor) -> PyResult<Tensor> {
    match operand(value) {
        Some(Operand::Tensor(tensor)) => run("index_put", || {
            tensor
                .tensor
                .detach()
                .to_device(like.device())?
                .to_dtype(like.dtype())
        }),
        Some(Operand::Scalar(number, _)) => run("index_put", || {
            Tensor::scalar(number, like.dtype(), like.device())
        }),
        None => {
            let built = value
                .py()
                .import("anygrad")?
                .getattr("as_tensor")?
                .call1((value,))?;
            let built = tensor_arg("index_put", "value", &built)?;
            run("index_put", || {
                built
                    .tensor
                    .to_device(like.device())?
                    .to_dtype(like.dtype())
            })
        }
    }
}

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        crate::errors::guard("index", || {
            Ok(self.derived(get_item(py, &self.tensor, key)?))
        })
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        crate::errors::guard("index_put", || {
            let tensor = &self.tensor;
            if anygrad::is_grad_enabled() && tensor.is_leaf() && tensor.requires_grad() {
                return Err(crate::errors::runtime_error(
                    "index_put",
                    "a leaf Variable that requires grad is being used in an in-place operation",
                ));
            }
            let items = parse_key(key, tensor.device())?;
            let walked = walk(py, tensor, &items)?;
            let values = value_tensor(value, tensor)?;
            if walked.is_view && walked.advanced.is_empty() && walked.view.same_storage(tensor) {
                let target = walked.view;
                let source = run("index_put", || values.broadcast_to(target.shape())?.contiguous())
                    .map_err(|_| {
                        crate::errors::runtime_error(
                            "index_put",
                            format!("shape mismatch: value of shape {:?} cannot be broadcast to indexing result of shape {:?}", values.shape(), target.shape()),
                        )
                    })?;
                return run("index_put", || target.assign(&source));
            }
            // General case: which flat positions the key selects, then the updated tensor.
            let count = tensor.numel();
            let positions = run("index_put", || {
                Tensor::arange(0.0, count as f64, 1.0, DType::I32, tensor.device())?
                    .reshape(tensor.shape())
            })?;
            let selected = gather_advanced(walk(py, &positions, &items)?)?;
            let spread = run("index_put", || values.broadcast_to(selected.shape()))
                .map_err(|_| {
                    crate::errors::runtime_error(
                        "index_put",
                        format!("shape mismatch: value of shape {:?} cannot be broadcast to indexing result of shape {:?}", values.shape(), selected.shape()),
                    )
                })?;
            let updated = run("index_put", || {
                let flat_positions = selected.reshape([-1isize])?;
                let work = if tensor.dtype().is_float() {
                    tensor.dtype()
                } else {
                    DType::F32
                };
                let flat_values = spread.to_dtype(work)?.contiguous()?.reshape([-1isize])?;
                // A position given several times keeps its last value (as PyTorch's CPU does):
                // positions sorted stably, only the last of each run of equal ones is placed.
                let (sorted, order) = flat_positions.sort(0, false)?;
                let picks = sorted.numel();
                let is_last = if picks == 0 {
                    Tensor::zeros(&[0], DType::Bool, tensor.device())?
                } else {
                    let next = Tensor::cat(
                        &[
                            &sorted.narrow(0, 1, picks - 1)?,
                            &Tensor::full(&[1], -1.0, DType::I32, tensor.device())?,
                        ],
                        0,
                    )?;
                    sorted.ne(&next)?
                };
                let last = is_last.to_dtype(DType::F32)?;
                let in_order = flat_values.index_select(0, &order)?;
                let kept = Tensor::where_(&is_last, &in_order, &in_order.zeros_like()?)?;
                let hit = Tensor::zeros(&[count], DType::F32, tensor.device())?
                    .index_add(0, &sorted, &last)?
                    .gt_scalar(0.0)?;
                let placed =
                    Tensor::zeros(&[count], work, tensor.device())?.index_add(0, &sorted, &kept)?;
                let current = tensor.detach().to_dtype(work)?.reshape([-1isize])?;
                Tensor::where_(&hit, &placed, &current)?
                    .reshape(tensor.shape())?
                    .to_dtype(tensor.dtype())
            })?;
            run("index_put", || tensor.assign(&updated))
        })
    }

    /// Values along `dim` at `index` (`torch.gather`).
    fn gather(&self, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let index = tensor_arg("gather", "index", index)?;
        Ok(self.derived(run("gather", || self.tensor.gather(dim, &index.tensor))?))
    }

    /// Rows of `dim` at `index` (a 1-D integer tensor).
    fn index_select(&self, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let index = tensor_arg("index_select", "index", index)?;
        Ok(self.derived(run("index_select", || {
            self.tensor.index_select(dim, &index.tensor)
        })?))
    }

    /// `self` with `src` added at `index` along `dim`.
    fn scatter_add(
        &self,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let index = tensor_arg("scatter_add", "index", index)?;
        let src = tensor_arg("scatter_add", "src", src)?;
        Ok(self.derived(run("scatter_add", || {
            self.tensor.scatter_add(dim, &index.tensor, &src.tensor)
        })?))
    }

    /// `self` with rows of `source` added at `index` along `dim`.
    fn index_add(
        &self,
        dim: isize,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let index = tensor_arg("index_add", "index", index)?;
        let source = tensor_arg("index_add", "source", source)?;
        Ok(self.derived(run("index_add", || {
            self.tensor.index_add(dim, &index.tensor, &source.tensor)
        })?))
    }

    /// The elements where `mask` is true, as a 1-D tensor.
    fn masked_select(&self, mask: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let mask = tensor_arg("masked_select", "mask", mask)?;
        Ok(self.derived(run("masked_select", || {
            self.tensor.masked_select(&mask.tensor)
        })?))
    }

    /// The positions of the nonzero elements, `[n, rank]` (int64).
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<PyObject> {
        let positions = run("nonzero", || self.tensor.nonzero())?;
        if !as_tuple {
            return Ok(PyTensor::wrap(positions)
                .into_pyobject(py)?
                .into_any()
                .unbind());
        }
        let columns = (0..self.tensor.rank().max(1))
            .map(|c| {
                run("nonzero", || positions.narrow(1, c, 1)?.reshape([-1isize])).map(PyTensor::wrap)
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, columns)?.into_any().unbind())
    }
}
