//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family:
//! RowNormalization and BatchNormalization — softmax and layer norm rows, in row slices where a
//! tensor exceeds one buffer; batch norm on whole tensors (a storage in pieces is
//! `Error::BufferTooLarge`, and `nn`'s batch norm takes its composite).

use crate::backend::contract::{Affine, BatchNormalization, RowNormalization};
use crate::backend::gpu::runtime::sliced::{Combine, Follow, Plan};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;

impl RowNormalization for GpuStorage {
    fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<Self> {
        let (rows_layout, length) = rows_view(layout);
        Plan {
            op: "softmax",
            operands: [(self, &rows_layout, Follow::Sliced(0))],
            rows: rows_layout.shape[0],
            output_elements: length,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, lx)], _| GpuStorage::softmax_last(x, lx, safe))
    }

    fn log_softmax_last(&self, layout: &Layout) -> Result<Self> {
        let (rows_layout, length) = rows_view(layout);
        Plan {
            op: "log_softmax",
            operands: [(self, &rows_layout, Follow::Sliced(0))],
            rows: rows_layout.shape[0],
            output_elements: length,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, lx)], _| GpuStorage::log_softmax_last(x, lx))
    }

    fn softmax_last_backward(
        &self,
        layout: &Layout,
        grad: (&Self, &Layout),
        log: bool,
    ) -> Result<Self> {
        let (grad, grad_layout) = grad;
        let op = crate::backend::checks::softmax_backward_name(log);
        // Checked on the whole views: their row views below must slice alike.
        crate::backend::checks::check_same_rows(op, layout, grad_layout)?;
        let (rows_layout, length) = rows_view(layout);
        let (grad_rows_layout, _) = rows_view(grad_layout);
        Plan {
            op,
            operands: [
                (self, &rows_layout, Follow::Sliced(0)),
                (grad, &grad_rows_layout, Follow::Sliced(0)),
            ],
            rows: rows_layout.shape[0],
            output_elements: length,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(y, ly), g], _| GpuStorage::softmax_last_backward(y, ly, g, log))
    }

    fn layer_norm_last(&self, layout: &Layout, affine: Affine<'_, Self>, eps: f64) -> Result<Self> {
        let (rows_layout, length) = rows_view(layout);
        let rows = rows_layout.shape[0];
        let input = (self, &rows_layout, Follow::Sliced(0));
        match affine {
            None => Plan {
                op: "layer_norm",
                operands: [input],
                rows,
                output_elements: length,
                combine: Combine::Concatenate,
                nests: false,
            }
            .run(|[(x, lx)], _| GpuStorage::layer_norm_last(x, lx, None, eps)),
            Some(((weight, weight_layout), (bias, bias_layout))) => Plan {
                op: "layer_norm",
                operands: [
                    input,
                    (weight, weight_layout, Follow::Whole),
                    (bias, bias_layout, Follow::Whole),
                ],
                rows,
                output_elements: length,
                combine: Combine::Concatenate,
                nests: false,
            }
            .run(|[(x, lx), w, b], _| GpuStorage::layer_norm_last(x, lx, Some((w, b)), eps)),
        }
    }

    fn rms_norm_last(
        &self,
        layout: &Layout,
        weight: Option<(&Self, &Layout)>,
        eps: f64,
    ) -> Result<Self> {
        let (rows_layout, length) = rows_view(layout);
        let rows = rows_layout.shape[0];
        let input = (self, &rows_layout, Follow::Sliced(0));
        match weight {
            None => Plan {
                op: "rms_norm",
                operands: [input],
                rows,
                output_elements: length,
                combine: Combine::Concatenate,
                nests: false,
            }
            .run(|[(x, lx)], _| GpuStorage::rms_norm_last(x, lx, None, eps)),
            Some((weight, weight_layout)) => Plan {
                op: "rms_norm",
                operands: [input, (weight, weight_layout, Follow::Whole)],
                rows,
                output_elements: length,
                combine: Combine::Concatenate,
                nests: false,
            }
            .run(|[(x, lx), w], _| GpuStorage::rms_norm_last(x, lx, Some(w), eps)),
        }
    }

    /// One kernel over the whole view: decoding's rows are far below a binding's size, and
    /// a view too large for one binding is refused by the allocation with a clear error.
    fn rotary_last(
        &self,
        layout: &Layout,
        cos: (&Self, &Layout),
        sin: (&Self, &Layout),
    ) -> Result<Self> {
        GpuStorage::rotary_last(self, layout, cos, sin)
    }
}

impl BatchNormalization for GpuStorage {
    // Whole tensors only (a storage in pieces is `Error::BufferTooLarge` from `raw()`):
    // `nn`'s batch norm then takes its composite.
    fn batch_norm_stats(&self, layout: &Layout) -> Result<Self> {
        GpuStorage::batch_norm_stats(self, layout)
    }

    fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        mean: &Self,
        mean_layout: &Layout,
    ) -> Result<Self> {
        GpuStorage::batch_norm_backward_sums(self, layout, input, input_layout, mean, mean_layout)
    }

    fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        coefficients: &Self,
        coefficients_layout: &Layout,
    ) -> Result<Self> {
        GpuStorage::batch_norm_backward_input(
            self,
            layout,
            input,
            input_layout,
            coefficients,
            coefficients_layout,
        )
    }
}

/// A row primitive's view as `[rows, length]` (rows = every leading dim) where the view
/// allows it without a copy, so that large inputs are sliced by whole rows; otherwise the view
/// itself (rank 1 or dims that do not merge: the kernel copies it dense), with the row count
/// of its first dim. Returns the view and the row length.
fn rows_view(layout: &Layout) -> (Layout, usize) {
    let length = layout.shape.last().copied().unwrap_or(1);
    let rows = layout.numel().checked_div(length).unwrap_or(0);
    match layout.reshape(&[rows, length]) {
        Some(view) => (view, length),
        None => {
            let mut view = layout.clone();
            if view.shape.is_empty() {
                view = Layout::contiguous(&[1]);
            }
            (view, length)
        }
    }
}
