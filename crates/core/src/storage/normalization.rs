//! `Storage`'s dispatch of the normalization primitives: softmax and log-softmax over the last
//! dim (and their input gradients), layer norm and RMS norm over the last dim, the rotary
//! embedding of rows, and batch norm's statistics, backward sums and input gradient (the rules
//! are on the `RowNormalization` and `BatchNormalization` traits in `backend/contract/`;
//! `storage.rs` holds `dispatch` and `run!`).

use super::{dispatch, Call, Storage};
use crate::backend::contract::{Affine, BatchNormalization, RowNormalization};
use crate::error::Result;
use crate::layout::Layout;

impl Storage {
    /// Softmax over the last dim; `safe` gives zeros for rows of only `-inf`
    /// (`RowNormalization::softmax_last`).
    pub fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<Storage> {
        run!(Call::new("softmax", [(self, layout)]), |x| {
            RowNormalization::softmax_last(x, layout, safe)
        })
    }

    /// Log-softmax over the last dim (`RowNormalization::log_softmax_last`).
    pub fn log_softmax_last(&self, layout: &Layout) -> Result<Storage> {
        run!(Call::new("log_softmax", [(self, layout)]), |x| {
            RowNormalization::log_softmax_last(x, layout)
        })
    }

    /// The input gradient of softmax (`log` false) or log-softmax (`log` true) over the last
    /// dim; `self` is the forward's output (`RowNormalization::softmax_last_backward`).
    pub fn softmax_last_backward(
        &self,
        layout: &Layout,
        grad: &Storage,
        grad_layout: &Layout,
        log: bool,
    ) -> Result<Storage> {
        let op = crate::backend::checks::softmax_backward_name(log);
        let call = Call::new(op, [(self, layout), (grad, grad_layout)]).same_dtype(&[0, 1]);
        run!(call, |y, g| RowNormalization::softmax_last_backward(
            y,
            layout,
            (g, grad_layout),
            log
        ))
    }

    /// Layer normalization over the last dim with an optional `(weight, bias)`
    /// (`RowNormalization::layer_norm_last`).
    pub fn layer_norm_last(
        &self,
        layout: &Layout,
        affine: Affine<'_, Storage>,
        eps: f64,
    ) -> Result<Storage> {
        match affine {
            None => {
                let call = Call::new("layer_norm", [(self, layout)]);
                run!(call, |x| RowNormalization::layer_norm_last(
                    x, layout, None, eps
                ))
            }
            Some(((weight, weight_layout), (bias, bias_layout))) => {
                let operands = [(self, layout), (weight, weight_layout), (bias, bias_layout)];
                let call = Call::new("layer_norm", operands).same_dtype(&[0, 1, 2]);
                run!(call, |x, w, b| RowNormalization::layer_norm_last(
                    x,
                    layout,
                    Some(((w, weight_layout), (b, bias_layout))),
                    eps
                ))
            }
        }
    }

    /// RMS normalization over the last dim with an optional weight
    /// (`RowNormalization::rms_norm_last`).
    pub fn rms_norm_last(
        &self,
        layout: &Layout,
        weight: Option<(&Storage, &Layout)>,
        eps: f64,
    ) -> Result<Storage> {
        match weight {
            None => {
                let call = Call::new("rms_norm", [(self, layout)]);
                run!(call, |x| RowNormalization::rms_norm_last(
                    x, layout, None, eps
                ))
            }
            Some((weight, weight_layout)) => {
                let call = Call::new("rms_norm", [(self, layout), (weight, weight_layout)])
                    .same_dtype(&[0, 1]);
                run!(call, |x, w| RowNormalization::rms_norm_last(
                    x,
                    layout,
                    Some((w, weight_layout)),
                    eps
                ))
            }
        }
    }

    /// The rotary position embedding of the view's rows by `cos` and `sin`
    /// (`RowNormalization::rotary_last`).
    pub fn rotary_last(
        &self,
        layout: &Layout,
        (cos, cos_layout): (&Storage, &Layout),
        (sin, sin_layout): (&Storage, &Layout),
    ) -> Result<Storage> {
        let call = Call::new(
            "rotary_embedding",
            [(self, layout), (cos, cos_layout), (sin, sin_layout)],
        )
        .same_dtype(&[0, 1, 2]);
        run!(call, |x, c, s| RowNormalization::rotary_last(
            x,
            layout,
            (c, cos_layout),
            (s, sin_layout)
        ))
    }

    /// Per-channel mean and biased variance in one pass (`BatchNormalization::batch_norm_stats`).
    pub fn batch_norm_stats(&self, layout: &Layout) -> Result<Storage> {
        let call = Call::new("batch_norm_stats", [(self, layout)]).f32_output();
        run!(call, |x| BatchNormalization::batch_norm_stats(x, layout))
    }

    /// Batch norm's backward sums in one pass; `self` is the output gradient
    /// (`BatchNormalization::batch_norm_backward_sums`).
    pub fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &Storage,
        input_layout: &Layout,
        mean: &Storage,
        mean_layout: &Layout,
    ) -> Result<Storage> {
        let operands = [(self, layout), (input, input_layout), (mean, mean_layout)];
        let call = Call::new("batch_norm_backward_sums", operands)
            .same_dtype(&[0, 1])
            .f32_output();
        run!(
            call,
            |g, x, m| BatchNormalization::batch_norm_backward_sums(
                g,
                layout,
                x,
                input_layout,
                m,
                mean_layout
            )
        )
    }

    /// Batch norm's input gradient in one pass; `self` is the output gradient
    /// (`BatchNormalization::batch_norm_backward_input`).
    pub fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &Storage,
        input_layout: &Layout,
        coefficients: &Storage,
        coefficients_layout: &Layout,
    ) -> Result<Storage> {
        let operands = [
            (self, layout),
            (input, input_layout),
            (coefficients, coefficients_layout),
        ];
        let call = Call::new("batch_norm_backward_input", operands).same_dtype(&[0, 1]);
        run!(call, |g, x, k| {
            BatchNormalization::batch_norm_backward_input(
                g,
                layout,
                x,
                input_layout,
                k,
                coefficients_layout,
            )
        })
    }
}
