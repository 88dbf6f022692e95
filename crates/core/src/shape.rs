//! Shapes and the broadcasting rule shared by every op (NumPy/PyTorch semantics: align the
//! trailing dims; a dim of size 1 stretches to match the other operand).

use crate::error::{Error, Result};

/// Number of elements of a shape (1 for a scalar of shape `[]`).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major (C-order) strides for a shape, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut running = 1;
    for (stride, &size) in strides.iter_mut().zip(shape).rev() {
        *stride = running;
        running *= size.max(1);
    }
    strides
}

/// The shape two operands broadcast to, or a `ShapeMismatch` naming `op`.
pub fn broadcast_shapes(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>> {
    let rank = lhs.len().max(rhs.len());
    let mut out = vec![0; rank];
    for (i, slot) in out.iter_mut().enumerate() {
        let l = dim_from_right(lhs, rank - 1 - i);
        let r = dim_from_right(rhs, rank - 1 - i);
        *slot = match (l, r) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => {
                return Err(Error::ShapeMismatch {
                    op,
                    lhs: lhs.to_vec(),
                    rhs: rhs.to_vec(),
                    reason: format!("cannot be broadcast together (dim {i}: {l} vs {r})"),
                })
            }
        };
    }
    Ok(out)
}

fn dim_from_right(shape: &[usize], from_right: usize) -> usize {
    if from_right < shape.len() {
        shape[shape.len() - 1 - from_right]
    } else {
        1
    }
}

/// Resolve a possibly negative dim index against a rank, PyTorch style (`-1` is the last).
pub fn resolve_dim(op: &'static str, dim: isize, rank: usize, shape: &[usize]) -> Result<usize> {
    let resolved = if dim < 0 { dim + rank as isize } else { dim };
    if resolved < 0 || resolved as usize >= rank.max(1) || (rank == 0 && resolved != 0) {
        return Err(Error::InvalidShape {
            op,
            shape: shape.to_vec(),
            message: format!("dim {dim} is out of range for a tensor of rank {rank}"),
        });
    }
    Ok(resolved as usize)
}

/// Resolve a reshape target that may hold one `-1` (inferred) entry.
pub fn resolve_reshape(op: &'static str, from: &[usize], to: &[isize]) -> Result<Vec<usize>> {
    let total = numel(from);
    let mut inferred = None;
    let mut known = 1usize;
    for (i, &d) in to.iter().enumerate() {
        if d == -1 {
            if inferred.is_some() {
                return Err(Error::invalid(op, "only one dim may be -1"));
            }
            inferred = Some(i);
        } else if d < 0 {
            return Err(Error::invalid(
                op,
                format!("invalid size {d} in shape {to:?}"),
            ));
        } else {
            known *= d as usize;
        }
    }
    let mut out: Vec<usize> = to.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = inferred {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(Error::InvalidShape {
                op,
                shape: from.to_vec(),
                message: format!("cannot reshape {total} elements into {to:?}"),
            });
        }
        out[i] = total / known;
    }
    if numel(&out) != total {
        return Err(Error::InvalidShape {
            op,
            shape: from.to_vec(),
            message: format!("cannot reshape {total} elements into {to:?}"),
        });
    }
    Ok(out)
}

/// `shape` with the size of `dim` replaced by `size` (unchanged when `dim` is out of range).
/// The GPU's sliced plans use it.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
pub(crate) fn with_size(shape: &[usize], dim: usize, size: usize) -> Vec<usize> {
    let mut shape = shape.to_vec();
    if let Some(entry) = shape.get_mut(dim) {
        *entry = size;
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy_rules() {
        assert_eq!(broadcast_shapes("t", &[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes("t", &[], &[2, 2]).unwrap(), vec![2, 2]);
        assert_eq!(broadcast_shapes("t", &[0, 1], &[1, 5]).unwrap(), vec![0, 5]);
        assert!(broadcast_shapes("t", &[3], &[4]).is_err());
    }

    #[test]
    fn reshape_infers_one_dim() {
        assert_eq!(resolve_reshape("t", &[2, 6], &[-1, 3]).unwrap(), vec![4, 3]);
        assert!(resolve_reshape("t", &[2, 6], &[-1, 5]).is_err());
        assert!(resolve_reshape("t", &[2, 6], &[-1, -1]).is_err());
    }
}
