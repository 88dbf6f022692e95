//! Movement and elementwise arithmetic on host int64 values through index tensors: the
//! importer runs the same anygrad op (reshape, slice, concat, broadcast, ...) on a CPU int32
//! tensor of element positions and then picks the int64 values at the positions that come
//! out. One implementation of each op serves device tensors and exact int64 values alike.

use anygrad_core::{Device, Tensor};

use crate::value::Int64Tensor;

/// Positions `offset..offset + count` as a CPU int32 tensor of `shape`.
fn positions(offset: usize, shape: &[usize]) -> Result<Tensor, String> {
    let count: usize = shape.iter().product();
    let end = offset
        .checked_add(count)
        .filter(|&e| e <= i32::MAX as usize)
        .ok_or("too many int64 values for host shape arithmetic")?;
    let values: Vec<i32> = (offset as i32..end as i32).collect();
    Tensor::from_vec(values, shape, &Device::Cpu).map_err(|e| e.to_string())
}

/// Run `op` on position tensors standing for `inputs` and gather the int64 values its output
/// positions name.
pub(crate) fn through_positions(
    inputs: &[&Int64Tensor],
    op: impl FnOnce(&[Tensor]) -> anygrad_core::Result<Tensor>,
) -> Result<Int64Tensor, String> {
    let mut all = Vec::new();
    let mut tensors = Vec::with_capacity(inputs.len());
    for input in inputs {
        tensors.push(positions(all.len(), &input.shape)?);
        all.extend_from_slice(&input.data);
    }
    let out = op(&tensors).map_err(|e| e.to_string())?;
    let picked = out.to_vec::<i32>().map_err(|e| e.to_string())?;
    let mut data = Vec::with_capacity(picked.len());
    for p in picked {
        data.push(
            *all.get(p as usize)
                .ok_or("host shape arithmetic picked a position out of range")?,
        );
    }
    Ok(Int64Tensor {
        shape: out.shape().to_vec(),
        data,
    })
}

/// The broadcast shape of several int64 values and, for each, the position of its value
/// behind every output element.
pub(crate) fn broadcast_positions(
    inputs: &[&Int64Tensor],
) -> Result<(Vec<usize>, Vec<Vec<usize>>), String> {
    let mut shape: Vec<usize> = Vec::new();
    for input in inputs {
        shape = broadcast_shape(&shape, &input.shape)?;
    }
    crate::value::element_count(&shape)?;
    let mut picks = Vec::with_capacity(inputs.len());
    for input in inputs {
        let t = positions(0, &input.shape)?;
        let out = t
            .broadcast_to(&shape)
            .and_then(|b| b.contiguous())
            .map_err(|e| e.to_string())?;
        let p = out.to_vec::<i32>().map_err(|e| e.to_string())?;
        picks.push(p.into_iter().map(|x| x as usize).collect());
    }
    Ok((shape, picks))
}

/// NumPy broadcasting of two shapes.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
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
        out[i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(format!("shapes {a:?} and {b:?} do not broadcast"));
        };
    }
    Ok(out)
}

/// `f` applied elementwise to broadcast int64 operands.
pub(crate) fn elementwise(
    inputs: &[&Int64Tensor],
    f: impl Fn(&[i64]) -> Result<i64, String>,
) -> Result<Int64Tensor, String> {
    let (shape, picks) = broadcast_positions(inputs)?;
    let count: usize = shape.iter().product();
    let mut data = Vec::with_capacity(count);
    let mut args = vec![0i64; inputs.len()];
    for i in 0..count {
        for (k, input) in inputs.iter().enumerate() {
            args[k] = *picks[k]
                .get(i)
                .and_then(|&p| input.data.get(p))
                .ok_or("broadcast position out of range")?;
        }
        data.push(f(&args)?);
    }
    Ok(Int64Tensor { shape, data })
}
