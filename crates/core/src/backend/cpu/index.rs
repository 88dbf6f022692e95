//! CPU indexing ops: index_select, gather, scatter_add and index_add. Indices of any integer dtype are
//! read as i64 and checked: an out-of-range index is an `Error`, never an out-of-bounds write.

use super::{map_same_variant, map_strided, unsupported_dtype, CpuStorage};
use crate::backend::checks::{check_dim, check_index_add_shapes, check_view};
use crate::backend::contract::Copying;
use crate::backend::contract::Indexing;
use crate::backend::cpu::HostBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::contiguous_strides;

/// Read indices as i64 in logical order, checking each against `limit`.
fn read_indices(
    op: &'static str,
    indices: &CpuStorage,
    layout: &Layout,
    limit: usize,
) -> Result<Vec<usize>> {
    read_indices_from_end(op, indices, layout, limit, false)
}

/// [`read_indices`], with an index in `[-limit, 0)` counting from the end where `wrap`.
fn read_indices_from_end(
    op: &'static str,
    indices: &CpuStorage,
    layout: &Layout,
    limit: usize,
    wrap: bool,
) -> Result<Vec<usize>> {
    if !indices.dtype().is_index() {
        return Err(Error::invalid(
            op,
            format!("indices must be an integer tensor, got {}", indices.dtype()),
        ));
    }
    indices
        .to_f64_vec(layout)?
        .into_iter()
        .map(|v| {
            let v = if wrap && v < 0.0 { v + limit as f64 } else { v };
            if v < 0.0 || v as usize >= limit {
                Err(Error::invalid(
                    op,
                    format!("index {v} is out of range for a dim of size {limit}"),
                ))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

/// For each element of `shape` (row-major), the storage position under `layout` after
/// replacing coordinate `dim` with `indices[element]`.
fn indexed_positions(
    shape: &[usize],
    layout: &Layout,
    dim: usize,
    indices: &[usize],
) -> Vec<usize> {
    let strides = contiguous_strides(shape);
    (0..indices.len())
        .map(|flat| {
            let mut position = layout.offset;
            for (d, (&size, &stride)) in shape.iter().zip(&strides).enumerate() {
                let coordinate = if size == 0 { 0 } else { (flat / stride) % size };
                let coordinate = if d == dim { indices[flat] } else { coordinate };
                position += coordinate * layout.strides[d];
            }
            position
        })
        .collect()
}

/// `out[(o, indices[j], c)] += src[(o, j, c)]` over `[outer, size, inner]` (contiguous `out`
/// of `outer * size * inner`, contiguous `src` of `outer * indices.len() * inner`), in the
/// order of `j`: the CPU's reference sum.
fn index_add_rows<T: Copy, A: Copy>(
    out: &mut [A],
    src: &[T],
    indices: &[usize],
    (outer, size, inner): (usize, usize, usize),
    add: impl Fn(A, T) -> A,
) {
    let count = indices.len();
    for o in 0..outer {
        for (j, &index) in indices.iter().enumerate() {
            let target = (o * size + index) * inner;
            let source = (o * count + j) * inner;
            for (slot, &value) in out[target..target + inner]
                .iter_mut()
                .zip(&src[source..source + inner])
            {
                *slot = add(*slot, value);
            }
        }
    }
}

fn add_at<T: Copy>(out: &mut [T], targets: &[usize], values: &[T], add: impl Fn(T, T) -> T) {
    for (&target, &value) in targets.iter().zip(values) {
        out[target] = add(out[target], value);
    }
}

impl Indexing for CpuStorage {
    /// Entries of `dim` picked by a rank-1 index vector.
    fn index_select(
        &self,
        layout: &Layout,
        indices: &CpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        select(self, layout, indices, indices_layout, (dim, false))
    }

    /// Entries of `dim` picked by a rank-1 index vector, negative ones counted from the end.
    fn index_select_wrapping(
        &self,
        layout: &Layout,
        indices: &CpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        select(self, layout, indices, indices_layout, (dim, true))
    }

    fn class_pick(
        &self,
        layout: &Layout,
        target: (&CpuStorage, &Layout),
        weight: Option<(&CpuStorage, &Layout)>,
        ignore: Option<i64>,
    ) -> Result<CpuStorage> {
        super::class_pick::class_pick(self, layout, target, weight, ignore)
    }

    fn class_pick_backward(
        &self,
        layout: &Layout,
        target: (&CpuStorage, &Layout),
        weight: Option<(&CpuStorage, &Layout)>,
        ignore: Option<i64>,
        classes: usize,
    ) -> Result<CpuStorage> {
        super::class_pick::class_pick_backward(self, layout, target, weight, ignore, classes)
    }

    /// `out[..., j, ...] = self[..., indices[..., j, ...], ...]` along `dim`.
    fn gather(
        &self,
        layout: &Layout,
        indices: &CpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        check_dim("gather", layout, dim)?;
        check_view("gather", layout, self.len())?;
        check_view("gather", indices_layout, indices.len())?;
        let index_shape = &indices_layout.shape;
        if index_shape.len() != layout.rank()
            || index_shape
                .iter()
                .zip(&layout.shape)
                .enumerate()
                .any(|(d, (&i, &s))| d != dim && i > s)
        {
            return Err(Error::ShapeMismatch {
                op: "gather",
                lhs: layout.shape.clone(),
                rhs: index_shape.clone(),
                reason: format!("index shape must have the same rank and not exceed the input outside dim {dim}"),
            });
        }
        let picked = read_indices("gather", indices, indices_layout, layout.shape[dim])?;
        let positions = indexed_positions(index_shape, layout, dim, &picked);
        Ok(map_same_variant!(self, data => positions.iter().map(|&p| data[p]).collect()))
    }

    /// A contiguous copy of the base with `src` added at `indices` along `dim`.
    fn scatter_add(
        &self,
        layout: &Layout,
        indices: &CpuStorage,
        indices_layout: &Layout,
        src: &CpuStorage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        check_dim("scatter_add", layout, dim)?;
        check_view("scatter_add", layout, self.len())?;
        check_view("scatter_add", indices_layout, indices.len())?;
        check_view("scatter_add", src_layout, src.len())?;
        let index_shape = &indices_layout.shape;
        let fits = |other: &[usize], allow_dim: bool| {
            index_shape.len() == other.len()
                && index_shape
                    .iter()
                    .zip(other)
                    .enumerate()
                    .all(|(d, (&i, &s))| (allow_dim && d == dim) || i <= s)
        };
        if !fits(&layout.shape, true) || !fits(&src_layout.shape, false) {
            return Err(Error::ShapeMismatch {
                op: "scatter_add",
                lhs: layout.shape.clone(),
                rhs: index_shape.clone(),
                reason: format!("index shape must have the rank of base and src and fit inside them (src shape {:?})", src_layout.shape),
            });
        }
        let picked = read_indices("scatter_add", indices, indices_layout, layout.shape[dim])?;
        let out_layout = Layout::contiguous(&layout.shape);
        let targets = indexed_positions(index_shape, &out_layout, dim, &picked);
        // Source elements in the index tensor's logical order.
        let mut src_view = src_layout.clone();
        src_view.shape = index_shape.clone();
        let base = self.copy_strided(layout)?;
        match (base, src) {
            (CpuStorage::F32(mut out), CpuStorage::F32(s)) => {
                add_at(
                    &mut out,
                    &targets,
                    &map_strided(s, &src_view, |x| x)?,
                    |a, b| a + b,
                );
                Ok(CpuStorage::F32(out))
            }
            (CpuStorage::F64(mut out), CpuStorage::F64(s)) => {
                add_at(
                    &mut out,
                    &targets,
                    &map_strided(s, &src_view, |x| x)?,
                    |a, b| a + b,
                );
                Ok(CpuStorage::F64(out))
            }
            (CpuStorage::F16(mut out), CpuStorage::F16(s)) => {
                add_at(
                    &mut out,
                    &targets,
                    &map_strided(s, &src_view, |x| x)?,
                    |a, b| a + b,
                );
                Ok(CpuStorage::F16(out))
            }
            (CpuStorage::I32(mut out), CpuStorage::I32(s)) => {
                add_at(
                    &mut out,
                    &targets,
                    &map_strided(s, &src_view, |x| x)?,
                    i32::wrapping_add,
                );
                Ok(CpuStorage::I32(out))
            }
            (CpuStorage::U32(mut out), CpuStorage::U32(s)) => {
                add_at(
                    &mut out,
                    &targets,
                    &map_strided(s, &src_view, |x| x)?,
                    u32::wrapping_add,
                );
                Ok(CpuStorage::U32(out))
            }
            (CpuStorage::U8(mut out), CpuStorage::U8(s)) => {
                add_at(
                    &mut out,
                    &targets,
                    &map_strided(s, &src_view, |x| x)?,
                    u8::wrapping_add,
                );
                Ok(CpuStorage::U8(out))
            }
            (base, s) => Err(Error::DTypeMismatch {
                op: "scatter_add",
                lhs: base.dtype(),
                rhs: s.dtype(),
            }),
        }
    }

    /// A contiguous copy of the base with `src` added at the 1-D `indices` along `dim`
    /// (`Indexing::index_add`): sums in index order, f16 in f32, integers wrapping.
    fn index_add(
        &self,
        layout: &Layout,
        indices: &CpuStorage,
        indices_layout: &Layout,
        src: &CpuStorage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        const OP: &str = "index_add";
        let (outer, size, inner, _) =
            check_index_add_shapes(layout, indices_layout, src_layout, dim)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, indices_layout, indices.len())?;
        check_view(OP, src_layout, src.len())?;
        let picked = read_indices(OP, indices, indices_layout, size)?;
        let extents = (outer, size, inner);
        let base = self.copy_strided(layout)?;
        let src = src.copy_strided(src_layout)?;
        match (base, src) {
            (CpuStorage::F32(mut out), CpuStorage::F32(s)) => {
                index_add_rows(&mut out, &s, &picked, extents, |a, b| a + b);
                Ok(CpuStorage::F32(out))
            }
            (CpuStorage::F64(mut out), CpuStorage::F64(s)) => {
                index_add_rows(&mut out, &s, &picked, extents, |a, b| a + b);
                Ok(CpuStorage::F64(out))
            }
            (CpuStorage::F16(out), CpuStorage::F16(s)) => {
                let mut wide: Vec<f32> = out.iter().map(|x| x.to_f32()).collect();
                index_add_rows(&mut wide, &s, &picked, extents, |a, b| a + b.to_f32());
                Ok(CpuStorage::F16(
                    wide.into_iter().map(half::f16::from_f32).collect(),
                ))
            }
            (CpuStorage::I32(mut out), CpuStorage::I32(s)) => {
                index_add_rows(&mut out, &s, &picked, extents, i32::wrapping_add);
                Ok(CpuStorage::I32(out))
            }
            (CpuStorage::U32(mut out), CpuStorage::U32(s)) => {
                index_add_rows(&mut out, &s, &picked, extents, u32::wrapping_add);
                Ok(CpuStorage::U32(out))
            }
            (CpuStorage::U8(mut out), CpuStorage::U8(s)) => {
                index_add_rows(&mut out, &s, &picked, extents, u8::wrapping_add);
                Ok(CpuStorage::U8(out))
            }
            (CpuStorage::Bool(_), CpuStorage::Bool(_)) => Err(unsupported_dtype(OP, DType::Bool)),
            (base, s) => Err(Error::DTypeMismatch {
                op: OP,
                lhs: base.dtype(),
                rhs: s.dtype(),
            }),
        }
    }
}

/// `index_select` on the CPU (`wrap`: an index in `[-size, 0)` counts from the end).
fn select(
    storage: &CpuStorage,
    layout: &Layout,
    indices: &CpuStorage,
    indices_layout: &Layout,
    (dim, wrap): (usize, bool),
) -> Result<CpuStorage> {
    check_dim("index_select", layout, dim)?;
    check_view("index_select", layout, storage.len())?;
    check_view("index_select", indices_layout, indices.len())?;
    let size = layout.shape[dim];
    let picked = read_indices_from_end("index_select", indices, indices_layout, size, wrap)?;
    let mut out_shape = layout.shape.clone();
    out_shape[dim] = picked.len();
    let outer: usize = layout.shape[..dim].iter().product();
    let inner: usize = layout.shape[dim + 1..].iter().product();
    if layout.is_contiguous() {
        // Fast path: whole rows of `inner` contiguous elements are copied at once.
        let mut ranges = Vec::with_capacity(outer * picked.len());
        for o in 0..outer {
            for &index in &picked {
                let start = layout.offset + (o * size + index) * inner;
                ranges.push(start..start + inner);
            }
        }
        return Ok(map_same_variant!(storage, data => {
            let mut out = Vec::with_capacity(outer * picked.len() * inner);
            for range in &ranges {
                out.extend_from_slice(&data[range.clone()]);
            }
            HostBuffer::from(out)
        }));
    }
    // Expand the index vector to one index per output element, then reuse the gather walk.
    let mut expanded = Vec::with_capacity(outer * picked.len() * inner);
    for _ in 0..outer {
        for &index in &picked {
            expanded.extend(std::iter::repeat_n(index, inner));
        }
    }
    let positions = indexed_positions(&out_shape, layout, dim, &expanded);
    Ok(map_same_variant!(storage, data => positions.iter().map(|&p| data[p]).collect()))
}
