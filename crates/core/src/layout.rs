//! `Layout` maps a logical index to a position in storage: shape, strides (in elements) and
//! an offset. Views (transpose, narrow, broadcast, ...) only build a new `Layout` over the same
//! storage; no data moves until an op needs a contiguous buffer.

use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, numel};

/// Shape, strides and offset of a tensor view over its storage.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    pub shape: Vec<usize>,
    pub strides: Vec<usize>,
    pub offset: usize,
}

impl Layout {
    /// A row-major layout starting at offset 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// Number of elements addressed by this layout.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// True when elements are laid out row-major without gaps (offset may be non-zero).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected *= size;
        }
        true
    }

    /// The flat view `[numel]` of the storage run this view fills, where its elements fill
    /// `offset .. offset + numel` without gaps in some order of its dims (a row-major view, or
    /// a permuted one such as a channels-last activation); `None` otherwise. Elementwise ops
    /// that keep a view's strides compute such a view as one flat run.
    pub fn dense_run(&self) -> Option<Layout> {
        let flat = Layout {
            shape: vec![self.numel()],
            strides: vec![1],
            offset: self.offset,
        };
        if self.numel() == 0 {
            return Some(flat);
        }
        let mut dims: Vec<usize> = (0..self.rank()).filter(|&d| self.shape[d] != 1).collect();
        dims.sort_by_key(|&d| std::cmp::Reverse(self.strides[d]));
        let mut expected = 1;
        for &d in dims.iter().rev() {
            if self.strides[d] != expected {
                return None;
            }
            expected *= self.shape[d];
        }
        Some(flat)
    }

    /// Where every one of `views` (of one shape) fills its storage run in the same dim order,
    /// and that order is not row-major (channels-last activations, say): the flat views of
    /// their runs and the layout an elementwise result keeps (their strides, from offset 0),
    /// as PyTorch keeps a memory format. `None` otherwise (the result is row-major).
    pub fn kept_order(views: &[&Layout]) -> Option<(Vec<Layout>, Layout)> {
        let first = views.first()?;
        let same = views
            .iter()
            .all(|view| view.shape == first.shape && view.strides == first.strides);
        if !same || first.is_contiguous() {
            return None;
        }
        let runs: Option<Vec<Layout>> = views.iter().map(|view| view.dense_run()).collect();
        let kept = Layout {
            offset: 0,
            ..(*first).clone()
        };
        Some((runs?, kept))
    }

    /// How an elementwise op of one operand reads this view and lays out its result: a flat
    /// run keeping these strides where [`Layout::kept_order`] applies, else this view and a
    /// row-major result.
    pub fn elementwise_views(&self) -> (Layout, Layout) {
        match Layout::kept_order(&[self]) {
            Some((mut runs, kept)) => (runs.remove(0), kept),
            None => (self.clone(), Layout::contiguous(&self.shape)),
        }
    }

    /// The view with dims reordered by `perm`.
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// The view of `len` entries of `dim` starting at `start` (bounds checked by the caller).
    /// An empty view keeps the offset (no element of it is ever read, and its storage may be
    /// empty: `[0, 4]` narrowed to columns `2..4`).
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Layout {
        let mut out = self.clone();
        out.shape[dim] = len;
        if out.numel() > 0 {
            out.offset += start * self.strides[dim];
        }
        out
    }

    /// The view broadcast to `shape` (stride 0 along stretched dims), or a `ShapeMismatch`.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        let mismatch = || Error::ShapeMismatch {
            op: "broadcast_to",
            lhs: self.shape.clone(),
            rhs: shape.to_vec(),
            reason: "cannot be broadcast (sizes must match or be 1)".into(),
        };
        if shape.len() < self.rank() {
            return Err(mismatch());
        }
        let lead = shape.len() - self.rank();
        let mut strides = vec![0; shape.len()];
        for (i, &target) in shape.iter().enumerate() {
            if i < lead {
                continue;
            }
            let size = self.shape[i - lead];
            if size == target {
                strides[i] = self.strides[i - lead];
            } else if size == 1 {
                strides[i] = 0;
            } else {
                return Err(mismatch());
            }
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// A new layout with the same data reinterpreted as `shape`, when that needs no copy
    /// (contiguous input); `None` when the caller must copy first.
    pub fn reshape(&self, shape: &[usize]) -> Option<Layout> {
        if !self.is_contiguous() {
            return None;
        }
        Some(Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: self.offset,
        })
    }

    /// The same elements in the same order with shape `shape` (of the same element count) as
    /// a view of this one's storage, where strides for it exist: each run of dims that walk
    /// memory as one (`stride[i] == stride[i + 1] * size[i + 1]`) may be split or merged
    /// freely, never two runs into one. `None` where the elements would need a copy (PyTorch's
    /// `view` rule). Example: `[b, t, 3h]` columns `0..h` (rows `3h` apart) reshaped to
    /// `[b, t, heads, h / heads]` is a view.
    pub fn reshape_view(&self, shape: &[usize]) -> Option<Layout> {
        if numel(shape) != self.numel() {
            return None;
        }
        if self.numel() == 0 || self.is_contiguous() {
            return Some(Layout {
                shape: shape.to_vec(),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        // Walk both shapes from the innermost dim; at the end of each run of this layout's
        // dims (its element count `run`), take target dims until they hold `run` elements,
        // giving them strides within the run.
        let mut strides = vec![0; shape.len()];
        let mut target = shape.len();
        let mut base = *self.strides.last().unwrap_or(&1);
        let (mut run, mut taken) = (1usize, 1usize);
        for dim in (0..self.rank()).rev() {
            run *= self.shape[dim];
            let run_ends =
                dim == 0 || (self.shape[dim - 1] != 1 && self.strides[dim - 1] != run * base);
            if !run_ends {
                continue;
            }
            while target > 0 && (taken < run || shape[target - 1] == 1) {
                target -= 1;
                strides[target] = taken * base;
                taken *= shape[target];
            }
            if taken != run {
                return None;
            }
            if dim > 0 {
                base = self.strides[dim - 1];
                run = 1;
                taken = 1;
            }
        }
        (target == 0).then(|| Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// Storage positions of every element in logical row-major order.
    pub fn positions(&self) -> StridedPositions<'_> {
        StridedPositions {
            layout: self,
            index: vec![0; self.rank()],
            next: self.offset,
            remaining: self.numel(),
        }
    }

    /// The largest storage position this layout touches plus one (0 when empty).
    pub fn extent(&self) -> usize {
        if self.numel() == 0 {
            return self.offset;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(&size, &stride)| (size - 1) * stride)
                .sum::<usize>()
            + 1
    }
}

/// How a 4-D `[n, c, h, w]` tensor lies in memory: PyTorch's `torch.contiguous_format` and
/// `torch.channels_last`. The logical shape is `[n, c, h, w]` either way; only the strides
/// differ. The GPU's tensor-core convolutions write channels-last results (a pixel's channels
/// adjacent, as their next convolution reads them) and pooling keeps its input's format, so a
/// network's activations stay channels-last between layers without copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// Row-major `[n, c, h, w]`.
    Contiguous,
    /// `[n, h, w, c]` in memory: strides `[h * w * c, 1, w * c, c]`.
    ChannelsLast,
}

impl MemoryFormat {
    /// The dense layout of `shape` from offset 0 in this format (row-major for ranks other
    /// than 4).
    pub fn layout(self, shape: &[usize]) -> Layout {
        match (self, shape) {
            (MemoryFormat::ChannelsLast, &[n, c, h, w]) => {
                Layout::contiguous(&[n, h, w, c]).permute(&[0, 3, 1, 2])
            }
            (MemoryFormat::ChannelsLast | MemoryFormat::Contiguous, _) => Layout::contiguous(shape),
        }
    }

    /// The format of a tensor viewed through `layout`: channels-last where that layout is
    /// dense channels-last and not also row-major (`Tensor::memory_format`), else contiguous.
    pub fn of(layout: &Layout) -> MemoryFormat {
        if MemoryFormat::ChannelsLast.holds(layout) && !MemoryFormat::Contiguous.holds(layout) {
            MemoryFormat::ChannelsLast
        } else {
            MemoryFormat::Contiguous
        }
    }

    /// Whether `layout` is dense from offset 0 in this format (a tensor of 1x1 pixels or one
    /// channel is in both).
    pub fn holds(self, layout: &Layout) -> bool {
        if layout.offset != 0 {
            return false;
        }
        match (self, layout.rank()) {
            (MemoryFormat::ChannelsLast, 4) => layout.permute(&[0, 2, 3, 1]).is_contiguous(),
            (MemoryFormat::ChannelsLast, _) => false,
            (MemoryFormat::Contiguous, _) => layout.is_contiguous(),
        }
    }
}

/// Iterator over storage positions of a strided layout in logical order.
pub struct StridedPositions<'a> {
    layout: &'a Layout,
    index: Vec<usize>,
    next: usize,
    remaining: usize,
}

impl Iterator for StridedPositions<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        let current = self.next;
        self.remaining -= 1;
        for dim in (0..self.index.len()).rev() {
            self.index[dim] += 1;
            self.next += self.layout.strides[dim];
            if self.index[dim] < self.layout.shape[dim] {
                break;
            }
            self.next -= self.layout.strides[dim] * self.index[dim];
            self.index[dim] = 0;
        }
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for StridedPositions<'_> {}

/// The fewest (size, stride) pairs that enumerate the same positions in the same row-major
/// order as `shape`, `strides`: pairs of size 1 are dropped, and neighbours `d, d + 1` with
/// `strides[d] == strides[d + 1] * shape[d + 1]` merge into one (so a kernel decomposes each
/// index over fewer sizes). Zero strides are kept: a broadcast dim still repeats. Used by the
/// GPU kernels (fused elementwise programs, reductions).
#[cfg(any(feature = "gpu", test))]
pub(crate) fn merge_dims(shape: &[usize], strides: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut sizes: Vec<usize> = Vec::with_capacity(shape.len());
    let mut steps: Vec<usize> = Vec::with_capacity(shape.len());
    for (&size, &stride) in shape.iter().zip(strides) {
        if size == 1 {
            continue;
        }
        match (sizes.last_mut(), steps.last_mut()) {
            (Some(last_size), Some(last_stride)) if *last_stride == stride * size => {
                *last_size *= size;
                *last_stride = stride;
            }
            _ => {
                sizes.push(size);
                steps.push(stride);
            }
        }
    }
    (sizes, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_dims_enumerate_the_same_positions() {
        // Batch norm's reduced dims (n, h, w) of a contiguous [4, 3, 5, 6]: h and w merge.
        assert_eq!(
            merge_dims(&[4, 5, 6], &[90, 6, 1]),
            (vec![4, 30], vec![90, 1])
        );
        // Broadcast dims keep their zero strides; size-1 dims vanish.
        assert_eq!(merge_dims(&[2, 1, 3], &[0, 7, 0]), (vec![6], vec![0]));
        for (shape, strides) in [
            (vec![2, 3, 4], vec![12, 4, 1]),
            (vec![3, 2, 2], vec![1, 6, 3]),
            (vec![2, 1, 4, 2], vec![0, 5, 2, 1]),
        ] {
            let (merged_shape, merged_strides) = merge_dims(&shape, &strides);
            let original = Layout {
                shape: shape.clone(),
                strides,
                offset: 0,
            };
            let merged = Layout {
                shape: merged_shape,
                strides: merged_strides,
                offset: 0,
            };
            assert_eq!(
                original.positions().collect::<Vec<_>>(),
                merged.positions().collect::<Vec<_>>(),
                "{shape:?}"
            );
        }
    }

    #[test]
    fn transpose_positions_walk_columns() {
        let layout = Layout::contiguous(&[2, 3]).permute(&[1, 0]);
        let positions: Vec<usize> = layout.positions().collect();
        assert_eq!(positions, vec![0, 3, 1, 4, 2, 5]);
        assert!(!layout.is_contiguous());
    }

    #[test]
    fn broadcast_uses_zero_strides() {
        let layout = Layout::contiguous(&[3, 1])
            .broadcast_to(&[2, 3, 4])
            .unwrap();
        assert_eq!(layout.strides, vec![0, 1, 0]);
        assert_eq!(layout.positions().count(), 24);
        assert!(Layout::contiguous(&[3]).broadcast_to(&[4]).is_err());
    }

    /// A reshape view enumerates exactly the positions of the row-major walk of the original
    /// (the elements in the same order), and views are refused where runs would merge.
    #[test]
    fn reshape_views_keep_the_element_order() {
        // A third of the columns of [2, 3, 12] (rows 12 apart), split into heads: a view.
        let chunk = Layout::contiguous(&[2, 3, 12]).narrow(2, 4, 4);
        let heads = chunk.reshape_view(&[2, 3, 2, 2]).expect("view");
        assert_eq!(heads.strides, vec![36, 12, 2, 1]);
        // Merging the two leading dims of that chunk is a view; merging into the columns not.
        assert!(chunk.reshape_view(&[6, 4]).is_some());
        assert!(chunk.reshape_view(&[2, 12]).is_none());
        // A transpose flattened needs a copy; with size-1 dims inserted it stays a view.
        let transposed = Layout::contiguous(&[4, 6]).permute(&[1, 0]);
        assert!(transposed.reshape_view(&[24]).is_none());
        assert!(transposed.reshape_view(&[6, 1, 4, 1]).is_some());
        // Broadcast rows split into a view with zero strides.
        let broadcast = Layout::contiguous(&[1, 3]).broadcast_to(&[4, 3]).unwrap();
        assert_eq!(
            broadcast.reshape_view(&[2, 2, 3]).expect("view").strides,
            vec![0, 0, 1]
        );
        assert!(broadcast.reshape_view(&[12]).is_none());
        assert!(chunk.reshape_view(&[5, 5]).is_none());
        for (layout, shape) in [
            (chunk.clone(), vec![2, 3, 2, 2]),
            (chunk.clone(), vec![6, 4]),
            (chunk.clone(), vec![1, 6, 1, 4]),
            (transposed.clone(), vec![6, 1, 4, 1]),
            (transposed.clone(), vec![3, 2, 4]),
            (
                Layout::contiguous(&[2, 3, 4, 5]).narrow(1, 1, 2),
                vec![2, 2, 20],
            ),
            (broadcast.clone(), vec![2, 2, 3]),
        ] {
            let view = layout.reshape_view(&shape).expect("view");
            assert_eq!(
                layout.positions().collect::<Vec<_>>(),
                view.positions().collect::<Vec<_>>(),
                "{layout:?} as {shape:?}"
            );
        }
    }

    #[test]
    fn dense_runs_are_permuted_row_major_views() {
        let channels_last = MemoryFormat::ChannelsLast.layout(&[2, 3, 4, 5]);
        assert_eq!(channels_last.dense_run(), Some(Layout::contiguous(&[120])));
        let transposed = Layout::contiguous(&[3, 4]).permute(&[1, 0]);
        assert!(transposed.dense_run().is_some());
        // Every other column: gaps.
        let strided = Layout {
            shape: vec![3, 2],
            strides: vec![4, 2],
            offset: 1,
        };
        assert_eq!(strided.dense_run(), None);
        // Broadcast: overlaps.
        let broadcast = Layout::contiguous(&[1, 4]).broadcast_to(&[3, 4]).unwrap();
        assert_eq!(broadcast.dense_run(), None);
        let narrowed = Layout::contiguous(&[4, 3]).narrow(0, 1, 2);
        assert_eq!(narrowed.dense_run().map(|flat| flat.offset), Some(3));
    }

    #[test]
    fn elementwise_results_keep_a_shared_dense_order() {
        let channels_last = MemoryFormat::ChannelsLast.layout(&[2, 3, 4, 5]);
        let later = Layout {
            offset: 7,
            ..channels_last.clone()
        };
        let (runs, kept) = Layout::kept_order(&[&channels_last, &later]).unwrap();
        assert_eq!(runs[1].offset, 7);
        assert_eq!(runs[0].shape, vec![120]);
        assert_eq!(kept, channels_last);
        // Row-major, mixed orders and broadcasts keep nothing.
        let rows = Layout::contiguous(&[2, 3, 4, 5]);
        assert!(Layout::kept_order(&[&rows]).is_none());
        assert!(Layout::kept_order(&[&channels_last, &rows]).is_none());
        let broadcast = Layout::contiguous(&[1, 4]).broadcast_to(&[3, 4]).unwrap();
        assert!(Layout::kept_order(&[&broadcast]).is_none());
    }

    #[test]
    fn channels_last_layouts_walk_channels_fastest() {
        let layout = MemoryFormat::ChannelsLast.layout(&[2, 3, 4, 5]);
        assert_eq!(layout.shape, vec![2, 3, 4, 5]);
        assert_eq!(layout.strides, vec![60, 1, 15, 3]);
        assert!(MemoryFormat::ChannelsLast.holds(&layout));
        assert!(!MemoryFormat::Contiguous.holds(&layout));
        let rows = MemoryFormat::Contiguous.layout(&[2, 3, 4, 5]);
        assert!(!MemoryFormat::ChannelsLast.holds(&rows));
        // One pixel per image: both formats hold the same dense buffer.
        let pooled = MemoryFormat::ChannelsLast.layout(&[2, 3, 1, 1]);
        assert!(MemoryFormat::Contiguous.holds(&pooled));
        // A view that starts later is dense in neither.
        let later = layout.narrow(0, 1, 1);
        assert!(!MemoryFormat::ChannelsLast.holds(&later));
        assert_eq!(
            MemoryFormat::ChannelsLast.layout(&[6]),
            Layout::contiguous(&[6])
        );
    }

    #[test]
    fn narrow_moves_offset() {
        let layout = Layout::contiguous(&[4, 5]).narrow(0, 1, 2);
        assert_eq!(layout.offset, 5);
        assert_eq!(layout.positions().next(), Some(5));
        assert_eq!(layout.extent(), 15);
    }
}
