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

    /// The view with dims reordered by `perm`.
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// The view of `len` entries of `dim` starting at `start` (bounds checked by the caller).
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Layout {
        let mut out = self.clone();
        out.shape[dim] = len;
        if len > 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn narrow_moves_offset() {
        let layout = Layout::contiguous(&[4, 5]).narrow(0, 1, 2);
        assert_eq!(layout.offset, 5);
        assert_eq!(layout.positions().next(), Some(5));
        assert_eq!(layout.extent(), 15);
    }
}
