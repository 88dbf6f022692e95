//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Convolution —
//! convolutions, their epilogue and gradients, and the depthwise convolution and its gradients,
//! in batch slices where a tensor exceeds one buffer (weight-gradient slices are added).

use crate::backend::contract::{Convolution, Epilogue};
use crate::backend::gpu::runtime::sliced::{Combine, Follow, Plan};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::Layout;
use crate::layout::MemoryFormat;
use crate::op::BinaryOp;
use crate::shape::{numel, with_size};

impl Convolution for GpuStorage {
    fn conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self> {
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        let output = shape.output_shape();
        Plan {
            op: "conv2d",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (weight, weight_layout, Follow::Whole),
            ],
            rows: output[0],
            output_elements: numel(&output[1..]),
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, lx), (w, lw)], _| GpuStorage::conv2d(x, lx, w, lw, params))
    }

    fn conv2d_epilogue(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: &Epilogue<'_, Self>,
        format: MemoryFormat,
    ) -> Result<Self> {
        const OP: &str = "conv2d_epilogue";
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        let output = shape.output_shape();
        let (rows, output_elements) = (output[0], numel(&output[1..]));
        let (scale, shift, activation) = (epilogue.scale, epilogue.shift, epilogue.activation);
        let (input, kernels) = (
            (self, layout, Follow::Sliced(0)),
            (weight, weight_layout, Follow::Whole),
        );
        fn whole<'a>(
            (storage, view): (&'a GpuStorage, &'a Layout),
        ) -> (&'a GpuStorage, &'a Layout, Follow) {
            (storage, view, Follow::Whole)
        }
        match epilogue.residual {
            None => Plan {
                op: OP,
                operands: [input, kernels, whole(scale), whole(shift)],
                rows,
                output_elements,
                combine: Combine::Concatenate,
                nests: false,
            }
            .run(|[(x, lx), (w, lw), s, t], _| {
                let slice = Epilogue {
                    scale: s,
                    shift: t,
                    residual: None,
                    activation,
                };
                GpuStorage::conv2d_epilogue(x, lx, w, lw, params, &slice, format)
            }),
            Some((residual, residual_layout)) => Plan {
                op: OP,
                operands: [
                    input,
                    kernels,
                    whole(scale),
                    whole(shift),
                    (residual, residual_layout, Follow::Sliced(0)),
                ],
                rows,
                output_elements,
                combine: Combine::Concatenate,
                nests: false,
            }
            .run(|[(x, lx), (w, lw), s, t, r], _| {
                let slice = Epilogue {
                    scale: s,
                    shift: t,
                    residual: Some(r),
                    activation,
                };
                GpuStorage::conv2d_epilogue(x, lx, w, lw, params, &slice, format)
            }),
        }
    }

    fn conv2d_epilogue_format(
        &self,
        layout: &Layout,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> MemoryFormat {
        GpuStorage::conv2d_epilogue_format(self, layout, weight_layout, params)
    }

    fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self> {
        let rows = input_shape.first().copied().unwrap_or(1);
        Plan {
            op: "conv2d_backward_input",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (weight, weight_layout, Follow::Whole),
            ],
            rows,
            output_elements: numel(input_shape.get(1..).unwrap_or(&[])),
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(g, lg), (w, lw)], range| {
            let slice_shape = with_size(input_shape, 0, range.len());
            GpuStorage::conv2d_backward_input(g, lg, w, lw, params, &slice_shape)
        })
    }

    fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self> {
        // The weight gradient sums over images: batch slices add up.
        Plan {
            op: "conv2d_backward_weight",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (grad, grad_layout, Follow::Sliced(0)),
            ],
            rows: layout.shape.first().copied().unwrap_or(1),
            output_elements: numel(weight_shape),
            combine: Combine::Fold(BinaryOp::Add),
            nests: false,
        }
        .run(|[(x, lx), (g, lg)], _| {
            GpuStorage::conv2d_backward_weight(x, lx, g, lg, params, weight_shape)
        })
    }

    fn depthwise_conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self> {
        const OP: &str = "depthwise_conv2d";
        let shape = Conv2dShape::depthwise(OP, layout, weight_layout, params)?;
        let output = shape.output_shape();
        Plan {
            op: OP,
            operands: [
                (self, layout, Follow::Sliced(0)),
                (weight, weight_layout, Follow::Whole),
            ],
            rows: output[0],
            output_elements: numel(&output[1..]),
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, lx), (w, lw)], _| GpuStorage::depthwise_conv2d(x, lx, w, lw, params))
    }

    fn depthwise_conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self> {
        let rows = input_shape.first().copied().unwrap_or(1);
        Plan {
            op: "depthwise_conv2d_backward_input",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (weight, weight_layout, Follow::Whole),
            ],
            rows,
            output_elements: numel(input_shape.get(1..).unwrap_or(&[])),
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(g, lg), (w, lw)], range| {
            let slice_shape = with_size(input_shape, 0, range.len());
            GpuStorage::depthwise_conv2d_backward_input(g, lg, w, lw, params, &slice_shape)
        })
    }

    fn depthwise_conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self> {
        // The weight gradient sums over images: batch slices add up.
        Plan {
            op: "depthwise_conv2d_backward_weight",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (grad, grad_layout, Follow::Sliced(0)),
            ],
            rows: layout.shape.first().copied().unwrap_or(1),
            output_elements: numel(weight_shape),
            combine: Combine::Fold(BinaryOp::Add),
            nests: false,
        }
        .run(|[(x, lx), (g, lg)], _| {
            GpuStorage::depthwise_conv2d_backward_weight(x, lx, g, lg, params, weight_shape)
        })
    }
}
