//! `CpuStorage::class_pick` and its gradient (`Indexing::class_pick`): the picked score and
//! weight of each row's class, reading only those elements; the references of the GPU kernels
//! (`backend/gpu/index/class_pick.rs`).

use super::CpuStorage;
use crate::backend::checks::check_class_pick;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

/// Element `position` of a float storage, as f64.
fn element(storage: &CpuStorage, position: usize) -> f64 {
    match storage {
        CpuStorage::F32(v) => v[position] as f64,
        CpuStorage::F16(v) => v[position].to_f64(),
        CpuStorage::BF16(v) => v[position].to_f64(),
        CpuStorage::F64(v) => v[position],
        CpuStorage::I32(v) => v[position] as f64,
        CpuStorage::U32(v) => v[position] as f64,
        CpuStorage::U8(v) => v[position] as f64,
        CpuStorage::Bool(v) => f64::from(u8::from(v[position])),
    }
}

/// `a · b` as the GPU computes it: in f32 for F32 and F16, in f64 for F64.
fn product(dtype: DType, a: f64, b: f64) -> f64 {
    if dtype == DType::F64 {
        a * b
    } else {
        (a as f32 * b as f32) as f64
    }
}

/// Each row's class (`None` where ignored) and its weight, checked against `classes`.
fn classes_and_weights(
    target: (&CpuStorage, &Layout),
    weight: Option<(&CpuStorage, &Layout)>,
    ignore: Option<i64>,
    classes: usize,
) -> Result<Vec<Option<(usize, f64)>>> {
    target
        .0
        .to_f64_vec(target.1)?
        .into_iter()
        .map(|t| {
            if ignore.is_some_and(|ignored| t == ignored as f64) {
                return Ok(None);
            }
            if t < 0.0 || t >= classes as f64 {
                return Err(Error::invalid(
                    "class_pick",
                    format!("target {t} is out of range for {classes} classes"),
                ));
            }
            let class = t as usize;
            let w = weight.map_or(1.0, |(w, layout)| element(w, layout.offset + class));
            Ok(Some((class, w)))
        })
        .collect()
}

/// [`Indexing::class_pick`](crate::backend::contract::Indexing::class_pick) on the CPU.
pub(super) fn class_pick(
    scores: &CpuStorage,
    layout: &Layout,
    target: (&CpuStorage, &Layout),
    weight: Option<(&CpuStorage, &Layout)>,
    ignore: Option<i64>,
) -> Result<CpuStorage> {
    let dtype = scores.dtype();
    let (rows, classes) = check_class_pick(
        (layout, scores.len(), dtype),
        (target.1, target.0.len(), target.0.dtype()),
        weight.map(|(w, l)| (l, w.len(), w.dtype())),
        None,
    )?;
    let picks = classes_and_weights(target, weight, ignore, classes)?;
    let mut out = vec![0.0; 2 * rows];
    for (i, pick) in picks.into_iter().enumerate() {
        if let Some((class, w)) = pick {
            let score = element(scores, layout.offset + i * classes + class);
            out[i] = product(dtype, w, score);
            out[rows + i] = w;
        }
    }
    Ok(CpuStorage::from_f64_values(&out, dtype))
}

/// [`Indexing::class_pick_backward`](crate::backend::contract::Indexing::class_pick_backward)
/// on the CPU.
pub(super) fn class_pick_backward(
    grad: &CpuStorage,
    layout: &Layout,
    target: (&CpuStorage, &Layout),
    weight: Option<(&CpuStorage, &Layout)>,
    ignore: Option<i64>,
    classes: usize,
) -> Result<CpuStorage> {
    let dtype = grad.dtype();
    let (rows, classes) = check_class_pick(
        (layout, grad.len(), dtype),
        (target.1, target.0.len(), target.0.dtype()),
        weight.map(|(w, l)| (l, w.len(), w.dtype())),
        Some(classes),
    )?;
    let picks = classes_and_weights(target, weight, ignore, classes)?;
    let mut out = vec![0.0; rows * classes];
    for (i, pick) in picks.into_iter().enumerate() {
        if let Some((class, w)) = pick {
            out[i * classes + class] = product(dtype, w, element(grad, layout.offset + i));
        }
    }
    Ok(CpuStorage::from_f64_values(&out, dtype))
}
