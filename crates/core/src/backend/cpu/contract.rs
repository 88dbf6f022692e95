//! `CpuStorage` keeps the backend contract (`backend/contract.rs`): each method forwards to
//! the primitive of the same name (`mod.rs`, `elementwise.rs`, `reduce.rs`, `matmul.rs`,
//! `conv.rs`, `conv_backward.rs`, `pool.rs`, `index.rs`, `sort.rs`).

use super::CpuStorage;
use crate::backend::contract::{into_format, Affine, BackendStorage, Epilogue};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape, PoolShape, Window};
use crate::layout::{Layout, MemoryFormat};
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::random::Distribution;

impl BackendStorage for CpuStorage {
    type Device = ();

    fn full(_device: &Self::Device, numel: usize, dtype: DType, value: f64) -> Result<Self> {
        CpuStorage::full(numel, dtype, value)
    }

    fn arange(
        _device: &Self::Device,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<Self> {
        CpuStorage::arange(start, step, numel, dtype)
    }

    fn random(
        _device: &Self::Device,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Self> {
        CpuStorage::random(numel, dtype, distribution, seed, offset)
    }

    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self> {
        CpuStorage::unary(self, layout, op)
    }

    fn binary(
        &self,
        layout: &Layout,
        rhs: &Self,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Self> {
        CpuStorage::binary(self, layout, rhs, rhs_layout, op)
    }

    fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Self> {
        CpuStorage::binary_scalar(self, layout, op, scalar, scalar_on_left)
    }

    fn where_select(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_layout: &Layout,
        on_false: &Self,
        false_layout: &Layout,
    ) -> Result<Self> {
        CpuStorage::where_select(self, layout, on_true, true_layout, on_false, false_layout)
    }

    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self> {
        CpuStorage::reduce(self, layout, op, dims)
    }

    fn matmul(&self, layout: &Layout, rhs: &Self, rhs_layout: &Layout) -> Result<Self> {
        CpuStorage::matmul(self, layout, rhs, rhs_layout)
    }

    fn conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self> {
        CpuStorage::conv2d(self, layout, weight, weight_layout, params)
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
        let out =
            CpuStorage::conv2d_epilogue(self, layout, weight, weight_layout, params, epilogue)?;
        let shape = Conv2dShape::new(layout, weight_layout, params)?.output_shape();
        into_format(out, &shape, format)
    }

    fn conv2d_epilogue_format(
        &self,
        _layout: &Layout,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
    ) -> MemoryFormat {
        MemoryFormat::Contiguous
    }

    fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<Self> {
        CpuStorage::softmax_last(self, layout, safe)
    }

    fn layer_norm_last(&self, layout: &Layout, affine: Affine<'_, Self>, eps: f64) -> Result<Self> {
        CpuStorage::layer_norm_last(self, layout, affine, eps)
    }

    fn batch_norm_stats(&self, layout: &Layout) -> Result<Self> {
        CpuStorage::batch_norm_stats(self, layout)
    }

    fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        mean: &Self,
        mean_layout: &Layout,
    ) -> Result<Self> {
        CpuStorage::batch_norm_backward_sums(self, layout, input, input_layout, mean, mean_layout)
    }

    fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        coefficients: &Self,
        coefficients_layout: &Layout,
    ) -> Result<Self> {
        CpuStorage::batch_norm_backward_input(
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
        CpuStorage::conv2d_backward_input(self, layout, weight, weight_layout, params, input_shape)
    }

    fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self> {
        CpuStorage::conv2d_backward_weight(self, layout, grad, grad_layout, params, weight_shape)
    }

    fn max_pool2d(&self, layout: &Layout, window: &Window, format: MemoryFormat) -> Result<Self> {
        let out = CpuStorage::max_pool2d(self, layout, window)?;
        let shape = PoolShape::new("max_pool2d", layout, window)?.output_shape();
        into_format(out, &shape, format)
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
        let out = CpuStorage::max_pool2d_backward(
            self,
            layout,
            output,
            output_layout,
            grad,
            grad_layout,
            window,
        )?;
        into_format(out, &layout.shape, MemoryFormat::of(layout))
    }

    fn copy_strided(&self, layout: &Layout) -> Result<Self> {
        CpuStorage::copy_strided(self, layout)
    }

    fn copy_into(&self, layout: &Layout, dst: &mut Self, dst_layout: &Layout) -> Result<()> {
        CpuStorage::copy_into(self, layout, dst, dst_layout)
    }

    fn sgd_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        buffer: Option<(&mut Self, &Layout)>,
        step: &crate::update::SgdStep,
        skip: Option<&Self>,
    ) -> Result<()> {
        CpuStorage::sgd_step(self, layout, grad, buffer, step, skip)
    }

    fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut Self) -> Result<()> {
        CpuStorage::unscale(self, layout, scale, found)
    }

    fn cast(&self, layout: &Layout, dtype: DType) -> Result<Self> {
        CpuStorage::cast(self, layout, dtype)
    }

    fn index_select(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        CpuStorage::index_select(self, layout, indices, indices_layout, dim)
    }

    fn gather(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        CpuStorage::gather(self, layout, indices, indices_layout, dim)
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
        CpuStorage::scatter_add(self, layout, indices, indices_layout, src, src_layout, dim)
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
        CpuStorage::index_add(self, layout, indices, indices_layout, src, src_layout, dim)
    }

    fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<Self> {
        CpuStorage::argsort(self, layout, dim, descending)
    }
}
