//! CPU `argsort`: the stable sort of every row along one dim (the reference for the GPU's
//! bitonic kernel in `gpu/sort.rs`). Values are compared as f64 (exact for every dtype the
//! CPU stores); NaN is larger than every number and equal to NaN, `-0.0` equals `0.0`, and
//! equal values keep their original order in both directions (as PyTorch's `stable=True`).

use crate::backend::cpu::HostBuffer;
use std::cmp::Ordering;

use rayon::prelude::*;

use super::{CpuStorage, PARALLEL_THRESHOLD};
use crate::backend::checks::{check_dim, check_view};
use crate::backend::contract::Sorting;
use crate::error::Result;
use crate::layout::Layout;

/// Ascending order of sort keys: NaN after every number.
pub(crate) fn key_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

impl Sorting for CpuStorage {
    /// The positions along `dim` that sort each row (`Sorting::argsort`): I32,
    /// contiguous, the input's shape.
    fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<CpuStorage> {
        check_view("argsort", layout, self.len())?;
        check_dim("argsort", layout, dim)?;
        let values = self.to_f64_vec(layout)?;
        let length = layout.shape[dim];
        let inner: usize = layout.shape[dim + 1..].iter().product();
        let outer: usize = layout.shape[..dim].iter().product();
        let mut out = vec![0i32; values.len()];
        if values.is_empty() {
            return Ok(CpuStorage::I32(HostBuffer::from(out)));
        }
        let sort_row = |row: usize, positions: &mut Vec<usize>| -> Vec<i32> {
            let (o, i) = (row / inner, row % inner);
            let base = o * length * inner + i;
            positions.clear();
            positions.extend(0..length);
            positions.sort_by(|&a, &b| {
                let order = key_order(values[base + a * inner], values[base + b * inner]);
                if descending {
                    order.reverse()
                } else {
                    order
                }
            });
            positions.iter().map(|&p| p as i32).collect()
        };
        let rows = outer * inner;
        let sorted: Vec<Vec<i32>> = if values.len() >= PARALLEL_THRESHOLD && rows > 1 {
            (0..rows)
                .into_par_iter()
                .map_init(Vec::new, |positions, row| sort_row(row, positions))
                .collect()
        } else {
            let mut positions = Vec::new();
            (0..rows).map(|row| sort_row(row, &mut positions)).collect()
        };
        for (row, order) in sorted.into_iter().enumerate() {
            let (o, i) = (row / inner, row % inner);
            let base = o * length * inner + i;
            for (j, index) in order.into_iter().enumerate() {
                out[base + j * inner] = index;
            }
        }
        Ok(CpuStorage::I32(HostBuffer::from(out)))
    }
}
