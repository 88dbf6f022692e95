//! `GpuStorage` keeps the backend contract (`backend/contract.rs`): each method forwards to
//! the primitive of the same name (`storage.rs` for creation, `matmul/primitive.rs`, `index/`,
//! `index/add.rs`, `conv/direct.rs`, `conv/backward.rs`, `pool/`, `sort/`) through a `sliced::Plan`, which says how the primitive runs
//! in slices when a tensor exceeds one GPU buffer (batch slices for convolutions and matmuls,
//! outer-dim slices for the rest) and runs it directly otherwise.

use super::sliced::{self, first_wide_dim, Combine, Follow, Plan};
use super::{GpuDevice, GpuStorage};
use crate::backend::contract::{Affine, BackendStorage, Epilogue};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape, Window};
use crate::layout::{Layout, MemoryFormat};
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::random::Distribution;

/// The product of `shape`'s sizes.
fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// `shape` with `dim` replaced by `size`.
fn replaced(shape: &[usize], dim: usize, size: usize) -> Vec<usize> {
    let mut shape = shape.to_vec();
    if let Some(entry) = shape.get_mut(dim) {
        *entry = size;
    }
    shape
}

/// The plan of an indexing primitive whose output has `output_shape` and which picks along
/// `dim`: sliced along the output's first dim above size 1 when that is not `dim` (every
/// operand follows, except those in `whole`), whole otherwise.
fn indexing_plan<'a, const N: usize>(
    op: &'static str,
    operands: [(&'a GpuStorage, &'a Layout); N],
    output_shape: &[usize],
    dim: usize,
    whole_when_sliced: [bool; N],
) -> Plan<'a, N> {
    let total = numel(output_shape);
    match first_wide_dim(output_shape) {
        Some(wide) if wide != dim => Plan {
            op,
            operands: std::array::from_fn(|i| {
                let follow = if whole_when_sliced[i] {
                    Follow::Whole
                } else {
                    Follow::Sliced(wide)
                };
                (operands[i].0, operands[i].1, follow)
            }),
            rows: output_shape[wide],
            output_elements: total / output_shape[wide],
            combine: Combine::Concatenate,
            nests: false,
        },
        _ => Plan {
            op,
            operands: operands.map(|(storage, layout)| (storage, layout, Follow::Whole)),
            rows: 1,
            output_elements: total,
            combine: Combine::Concatenate,
            nests: false,
        },
    }
}

impl BackendStorage for GpuStorage {
    type Device = GpuDevice;

    fn full(device: &Self::Device, numel: usize, dtype: DType, value: f64) -> Result<Self> {
        GpuStorage::full(device, numel, dtype, value)
    }

    fn arange(
        device: &Self::Device,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<Self> {
        GpuStorage::arange(device, start, step, numel, dtype)
    }

    fn random(
        device: &Self::Device,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Self> {
        GpuStorage::random(device, numel, dtype, distribution, seed, offset)
    }

    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self> {
        Plan::elementwise(op.name(), [(self, layout)])
            .run(|[(x, l)], _| GpuStorage::unary(x, l, op))
    }

    fn binary(
        &self,
        layout: &Layout,
        rhs: &Self,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Self> {
        Plan::elementwise(op.name(), [(self, layout), (rhs, rhs_layout)])
            .run(|[(a, la), (b, lb)], _| GpuStorage::binary(a, la, b, lb, op))
    }

    fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Self> {
        Plan::elementwise(op.name(), [(self, layout)])
            .run(|[(x, l)], _| GpuStorage::binary_scalar(x, l, op, scalar, scalar_on_left))
    }

    fn where_select(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_layout: &Layout,
        on_false: &Self,
        false_layout: &Layout,
    ) -> Result<Self> {
        let operands = [
            (self, layout),
            (on_true, true_layout),
            (on_false, false_layout),
        ];
        Plan::elementwise("where", operands)
            .run(|[(c, lc), (t, lt), (f, lf)], _| GpuStorage::where_select(c, lc, t, lt, f, lf))
    }

    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self> {
        let plan = sliced::reduction(self, layout, op, dims)?;
        if op == ReduceOp::Mean && plan.folds() {
            // Slices over a reduced dim: their sums are folded, then divided once.
            let sum = plan.run(|[(x, l)], _| GpuStorage::reduce(x, l, ReduceOp::Sum, dims))?;
            let mut kept = layout.shape.clone();
            let mut count = 1;
            for &d in dims {
                count *= kept[d];
                kept[d] = 1;
            }
            let kept = Layout::contiguous(&kept);
            return sum.binary_scalar(&kept, BinaryOp::Div, count as f64, false);
        }
        plan.run(|[(x, l)], _| GpuStorage::reduce(x, l, op, dims))
    }

    fn matmul(&self, layout: &Layout, rhs: &Self, rhs_layout: &Layout) -> Result<Self> {
        // [batch, m, k] x [batch, k, n]: batch slices, or row slices of a single matrix.
        let (batch, m) = (
            layout.shape.first().copied().unwrap_or(1),
            layout.shape.get(1).copied().unwrap_or(1),
        );
        let n = rhs_layout.shape.get(2).copied().unwrap_or(1);
        let (lhs_follow, rhs_follow, rows, per_row) = if batch > 1 {
            (Follow::Sliced(0), Follow::Sliced(0), batch, m * n)
        } else {
            (Follow::Sliced(1), Follow::Whole, m, n)
        };
        Plan {
            op: "matmul",
            operands: [(self, layout, lhs_follow), (rhs, rhs_layout, rhs_follow)],
            rows,
            output_elements: per_row,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(a, la), (b, lb)], _| GpuStorage::matmul(a, la, b, lb))
    }

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
            let slice_shape = replaced(input_shape, 0, range.len());
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

    fn max_pool2d(&self, layout: &Layout, window: &Window, format: MemoryFormat) -> Result<Self> {
        // Image slices: each image pools on its own.
        let (h, w) = window.output_size(
            "max_pool2d",
            layout.shape.get(2).copied().unwrap_or(1),
            layout.shape.get(3).copied().unwrap_or(1),
        )?;
        Plan {
            op: "max_pool2d",
            operands: [(self, layout, Follow::Sliced(0))],
            rows: layout.shape.first().copied().unwrap_or(1),
            output_elements: layout.shape.get(1).copied().unwrap_or(1) * h * w,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, l)], _| GpuStorage::max_pool2d(x, l, window, format))
    }

    fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &Self,
        output_layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<Self> {
        // Image slices: an image's input gradient needs only that image's operands (each
        // slice's gradient dense in the whole input's format: concatenated over images, it is).
        let format = MemoryFormat::of(layout);
        Plan {
            op: "max_pool2d_backward",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (output, output_layout, Follow::Sliced(0)),
                (grad, grad_layout, Follow::Sliced(0)),
            ],
            rows: layout.shape.first().copied().unwrap_or(1),
            output_elements: numel(layout.shape.get(1..).unwrap_or(&[])),
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, lx), (y, ly), (g, lg)], _| {
            GpuStorage::max_pool2d_backward(x, lx, (y, ly), (g, lg), window, format)
        })
    }

    fn copy_strided(&self, layout: &Layout) -> Result<Self> {
        Plan::elementwise("copy", [(self, layout)])
            .run(|[(x, l)], _| GpuStorage::copy_strided(x, l))
    }

    fn copy_into(&self, layout: &Layout, dst: &mut Self, dst_layout: &Layout) -> Result<()> {
        sliced::copy_into(self, layout, dst, dst_layout, &mut |s, l, d, dl| {
            GpuStorage::copy_into(s, l, d, dl)
        })
    }

    fn sgd_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        buffer: Option<(&mut Self, &Layout)>,
        step: &crate::update::SgdStep,
        skip: Option<&Self>,
    ) -> Result<()> {
        GpuStorage::sgd_step(self, layout, grad, buffer, step, skip)
    }

    fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut Self) -> Result<()> {
        GpuStorage::unscale(self, layout, scale, found)
    }

    fn cast(&self, layout: &Layout, dtype: DType) -> Result<Self> {
        Plan::elementwise("cast", [(self, layout)]).run(|[(x, l)], _| GpuStorage::cast(x, l, dtype))
    }

    fn index_select(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        let output = replaced(&layout.shape, dim, indices_layout.numel());
        indexing_plan(
            "index_select",
            [(self, layout), (indices, indices_layout)],
            &output,
            dim,
            [false, true],
        )
        .run(|[(x, lx), (i, li)], _| GpuStorage::index_select(x, lx, i, li, dim))
    }

    fn gather(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        let output = indices_layout.shape.clone();
        indexing_plan(
            "gather",
            [(self, layout), (indices, indices_layout)],
            &output,
            dim,
            [false, false],
        )
        .run(|[(x, lx), (i, li)], _| GpuStorage::gather(x, lx, i, li, dim))
    }

    fn scatter_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        let output = layout.shape.clone();
        indexing_plan(
            "scatter_add",
            [(self, layout), (indices, indices_layout), (src, src_layout)],
            &output,
            dim,
            [false, false, false],
        )
        .run(|[(b, lb), (i, li), (s, ls)], _| GpuStorage::scatter_add(b, lb, i, li, s, ls, dim))
    }

    fn index_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        // Slices along a dim other than `dim` cut base and src alike; every slice reads all
        // the indices.
        let output = layout.shape.clone();
        indexing_plan(
            "index_add",
            [(self, layout), (indices, indices_layout), (src, src_layout)],
            &output,
            dim,
            [false, true, false],
        )
        .run(|[(b, lb), (i, li), (s, ls)], _| GpuStorage::index_add(b, lb, i, li, s, ls, dim))
    }

    fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<Self> {
        sliced::sort(self, layout, dim)?
            .run(|[(x, l)], _| GpuStorage::argsort(x, l, dim, descending))
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
