//! NonMaxSuppression: per batch and class, boxes above the score threshold taken by
//! decreasing score (the lower index first among equal scores), each kept unless its IoU with
//! a kept box exceeds the threshold, up to `max_output_boxes_per_class`. Computed on the host;
//! the selected `[batch, class, box]` triples come back as int64.

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::{Int64Tensor, Value};

/// The detection operators.
pub(crate) const OPERATORS: &[OperatorEntry] =
    &[any_opset("NonMaxSuppression", non_max_suppression)];

/// A box as (x_min, x_max, y_min, y_max).
fn corners(b: &[f64], center_point_box: bool) -> (f64, f64, f64, f64) {
    if center_point_box {
        let (w, h) = (b[2] / 2.0, b[3] / 2.0);
        (b[0] - w, b[0] + w, b[1] - h, b[1] + h)
    } else {
        (
            b[1].min(b[3]),
            b[1].max(b[3]),
            b[0].min(b[2]),
            b[0].max(b[2]),
        )
    }
}

/// Whether `a` and `b` overlap by more than `threshold` (intersection over union).
fn suppresses(a: &[f64], b: &[f64], center_point_box: bool, threshold: f64) -> bool {
    let (ax0, ax1, ay0, ay1) = corners(a, center_point_box);
    let (bx0, bx1, by0, by1) = corners(b, center_point_box);
    let (ix0, ix1) = (ax0.max(bx0), ax1.min(bx1));
    let (iy0, iy1) = (ay0.max(by0), ay1.min(by1));
    if ix1 <= ix0 || iy1 <= iy0 {
        return false;
    }
    let intersection = (ix1 - ix0) * (iy1 - iy0);
    let area_a = (ax1 - ax0) * (ay1 - ay0);
    let area_b = (bx1 - bx0) * (by1 - by0);
    let union = area_a + area_b - intersection;
    if intersection <= 0.0 || area_a <= 0.0 || area_b <= 0.0 || union <= 0.0 {
        return false;
    }
    intersection / union > threshold
}

fn non_max_suppression(ctx: &NodeContext) -> Result<Vec<Value>> {
    let boxes = ctx.tensor(0)?;
    let scores = ctx.tensor(1)?;
    let (&[batches, count, 4], &[score_batches, classes, score_count]) =
        (boxes.shape(), scores.shape())
    else {
        return Err(ctx.error("boxes must be [batch, boxes, 4] and scores [batch, classes, boxes]"));
    };
    if score_batches != batches || score_count != count {
        return Err(ctx.error("boxes and scores disagree on batch or box count"));
    }
    let present = |i: usize| {
        ctx.optional(i)
            .is_some_and(|v| v.shape().iter().product::<usize>() > 0)
    };
    let max_output = if present(2) {
        ctx.scalar(2)?.max(0.0) as usize
    } else {
        0
    };
    let iou_threshold = if present(3) { ctx.scalar(3)? } else { 0.0 };
    let score_threshold = if present(4) {
        Some(ctx.scalar(4)?)
    } else {
        None
    };
    let center_point_box = ctx.attr_int("center_point_box", 0)? != 0;
    let box_values = ctx.core(boxes.to_vec_f64())?;
    let score_values = ctx.core(scores.to_vec_f64())?;
    let mut selected: Vec<i64> = Vec::new();
    for b in 0..batches {
        let batch_boxes = &box_values[b * count * 4..(b + 1) * count * 4];
        for c in 0..classes {
            let class_scores =
                &score_values[(b * classes + c) * count..(b * classes + c + 1) * count];
            let mut candidates: Vec<usize> = (0..count)
                .filter(|&i| score_threshold.is_none_or(|t| class_scores[i] > t))
                .collect();
            candidates.sort_by(|&x, &y| {
                class_scores[y]
                    .partial_cmp(&class_scores[x])
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(x.cmp(&y))
            });
            let mut kept: Vec<usize> = Vec::new();
            for i in candidates {
                if kept.len() >= max_output {
                    break;
                }
                let bi = &batch_boxes[i * 4..i * 4 + 4];
                if kept.iter().all(|&k| {
                    !suppresses(
                        bi,
                        &batch_boxes[k * 4..k * 4 + 4],
                        center_point_box,
                        iou_threshold,
                    )
                }) {
                    kept.push(i);
                    selected.extend([b as i64, c as i64, i as i64]);
                }
            }
        }
    }
    let rows = selected.len() / 3;
    single(Int64Tensor {
        shape: vec![rows, 3],
        data: selected,
    })
}
