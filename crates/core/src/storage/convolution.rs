//! `Storage`'s dispatch of the convolution primitives: the one-group 2-D convolution, its
//! fused epilogue and both gradients, and the depthwise convolution with both gradients (the
//! rules are on the `Convolution` trait in `backend/contract/`; `storage.rs` holds `dispatch`
//! and `run!`).

use super::{dispatch, Call, Storage};
use crate::backend::contract::{Convolution, Epilogue};
use crate::error::Result;
use crate::geometry::Conv2dParams;
use crate::layout::{Layout, MemoryFormat};
use crate::op::EpilogueActivation;

impl Storage {
    /// 2-D convolution with one group and no bias (`Convolution::conv2d`).
    pub fn conv2d(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Storage> {
        let call =
            Call::new("conv2d", [(self, layout), (weight, weight_layout)]).same_dtype(&[0, 1]);
        run!(call, |x, w| Convolution::conv2d(
            x,
            layout,
            w,
            weight_layout,
            params
        ))
    }

    /// The memory format `conv2d_epilogue` writes fastest on this backend for these operands
    /// (`Convolution::conv2d_epilogue_format`).
    pub fn conv2d_epilogue_format(
        &self,
        layout: &Layout,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> MemoryFormat {
        match self {
            Storage::Cpu(s) => s.conv2d_epilogue_format(layout, weight_layout, params),
            Storage::Gpu(s) => s.conv2d_epilogue_format(layout, weight_layout, params),
        }
    }

    /// conv2d and its epilogue in one primitive (`Convolution::conv2d_epilogue`): `scale`
    /// and `shift` F32 `[o]`, the optional `residual` of the output's shape; the output dense
    /// in `format`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv2d_epilogue(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        scale: (&Storage, &Layout),
        shift: (&Storage, &Layout),
        residual: Option<(&Storage, &Layout)>,
        activation: EpilogueActivation,
        format: MemoryFormat,
    ) -> Result<Storage> {
        const OP: &str = "conv2d_epilogue";
        let (scale_layout, shift_layout) = (scale.1, shift.1);
        match residual {
            None => {
                let operands = [(self, layout), (weight, weight_layout), scale, shift];
                let call = Call::new(OP, operands).same_dtype(&[0, 1]);
                run!(call, |x, w, s, t| Convolution::conv2d_epilogue(
                    x,
                    layout,
                    w,
                    weight_layout,
                    params,
                    &Epilogue {
                        scale: (s, scale_layout),
                        shift: (t, shift_layout),
                        residual: None,
                        activation,
                    },
                    format
                ))
            }
            Some((residual, residual_layout)) => {
                let operands = [
                    (self, layout),
                    (weight, weight_layout),
                    scale,
                    shift,
                    (residual, residual_layout),
                ];
                let call = Call::new(OP, operands).same_dtype(&[0, 1, 4]);
                run!(call, |x, w, s, t, r| Convolution::conv2d_epilogue(
                    x,
                    layout,
                    w,
                    weight_layout,
                    params,
                    &Epilogue {
                        scale: (s, scale_layout),
                        shift: (t, shift_layout),
                        residual: Some((r, residual_layout)),
                        activation,
                    },
                    format
                ))
            }
        }
    }

    /// The convolution's input gradient; `self` is the output gradient
    /// (`Convolution::conv2d_backward_input`).
    pub fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Storage> {
        let operands = [(self, layout), (weight, weight_layout)];
        let call = Call::new("conv2d_backward_input", operands).same_dtype(&[0, 1]);
        run!(call, |g, w| Convolution::conv2d_backward_input(
            g,
            layout,
            w,
            weight_layout,
            params,
            input_shape
        ))
    }

    /// The convolution's weight gradient; `self` is the forward's input
    /// (`Convolution::conv2d_backward_weight`).
    pub fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Storage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Storage> {
        let operands = [(self, layout), (grad, grad_layout)];
        let call = Call::new("conv2d_backward_weight", operands).same_dtype(&[0, 1]);
        run!(call, |x, g| Convolution::conv2d_backward_weight(
            x,
            layout,
            g,
            grad_layout,
            params,
            weight_shape
        ))
    }

    /// Depthwise 2-D convolution without bias (`Convolution::depthwise_conv2d`).
    pub fn depthwise_conv2d(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Storage> {
        let operands = [(self, layout), (weight, weight_layout)];
        let call = Call::new("depthwise_conv2d", operands).same_dtype(&[0, 1]);
        run!(call, |x, w| Convolution::depthwise_conv2d(
            x,
            layout,
            w,
            weight_layout,
            params
        ))
    }

    /// The depthwise convolution's input gradient; `self` is the output gradient
    /// (`Convolution::depthwise_conv2d_backward_input`).
    pub fn depthwise_conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Storage> {
        let operands = [(self, layout), (weight, weight_layout)];
        let call = Call::new("depthwise_conv2d_backward_input", operands).same_dtype(&[0, 1]);
        run!(call, |g, w| Convolution::depthwise_conv2d_backward_input(
            g,
            layout,
            w,
            weight_layout,
            params,
            input_shape
        ))
    }

    /// The depthwise convolution's weight gradient; `self` is the forward's input
    /// (`Convolution::depthwise_conv2d_backward_weight`).
    pub fn depthwise_conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Storage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Storage> {
        let operands = [(self, layout), (grad, grad_layout)];
        let call = Call::new("depthwise_conv2d_backward_weight", operands).same_dtype(&[0, 1]);
        run!(call, |x, g| Convolution::depthwise_conv2d_backward_weight(
            x,
            layout,
            g,
            grad_layout,
            params,
            weight_shape
        ))
    }
}
