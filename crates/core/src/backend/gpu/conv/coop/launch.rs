//! The launchers of the cooperative-matrix convolutions (`conv/coop.rs`): which kernel applies
//! on a device, the parameters of each pass, the grid, and the weight gradient's split-K sum.
//! Each returns `Ok(None)` where the cooperative kernels do not apply (not F16, no tensor
//! cores, `ANYGRAD_COOP_CONV=off`, an empty GEMM, a driver that refused the kernel): the
//! caller then runs the regular kernel.

use super::{ConvCoopKey, ConvCoopParams, ConvCoopState, ConvCoopTile, ConvPass, KBlock};
use crate::backend::gpu::conv::backward::check_coordinates;
use crate::backend::gpu::conv::epilogue::BoundEpilogue;
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::same_device;
use crate::backend::gpu::runtime::params::{check_view, is_dense};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::backward_shape;
use crate::geometry::Conv2dParams;
use crate::geometry::Conv2dShape;
use crate::layout::Layout;

/// Workgroups the weight gradient aims for (a few waves of a large GPU).
const TARGET_WORKGROUPS: usize = 1024;
/// Fewest k-blocks one split of the weight gradient walks.
const MIN_SPLIT_BLOCKS: usize = 8;
/// Most splits of the weight gradient's K.
const MAX_SPLITS: usize = 256;
/// Largest buffer of partial sums (f32 elements: 256 MiB).
const MAX_PARTIALS: usize = 1 << 26;

/// `value` as a parameter word, refused beyond 32 bits.
fn word(op: &'static str, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| {
        Error::invalid(
            op,
            format!("size or stride {value} does not fit the GPU's 32-bit indexing"),
        )
    })
}

/// A view's `[n, c, h, w]` strides as words.
fn strides(op: &'static str, layout: &Layout) -> Result<[u32; 4]> {
    match layout.strides.as_slice() {
        &[n, c, h, w] => Ok([word(op, n)?, word(op, c)?, word(op, h)?, word(op, w)?]),
        _ => Err(Error::invalid(op, "expected a rank-4 view")),
    }
}

/// The geometry words shared by every pass.
fn geometry(op: &'static str, shape: &Conv2dShape, p: &mut ConvCoopParams) -> Result<()> {
    p.kernel_h = word(op, shape.kernel.0)?;
    p.kernel_w = word(op, shape.kernel.1)?;
    p.stride_h = word(op, shape.stride.0)?;
    p.stride_w = word(op, shape.stride.1)?;
    p.pad_h = word(op, shape.padding.0)?;
    p.pad_w = word(op, shape.padding.1)?;
    p.dilation_h = word(op, shape.dilation.0)?;
    p.dilation_w = word(op, shape.dilation.1)?;
    Ok(())
}

/// Which cooperative kernels a launcher may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoopMode {
    /// The hardware kernels where the device has them and `ANYGRAD_COOP_CONV=on` (the
    /// public entry points).
    Auto,
    /// The hardware kernels where the device has them, whatever the switch (tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Hardware,
    /// The plain-WGSL emulation, on any f16 device (tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Emulated,
}

/// The kernel of `pass` for M = `m` rows on `storage`'s device in `mode`, or `None` where
/// it may not run; the larger k-block where its workgroup memory fits.
pub(crate) fn key_for(
    storage: &GpuStorage,
    pass: ConvPass,
    m: usize,
    mode: CoopMode,
) -> Option<ConvCoopKey> {
    let context = storage.device.context();
    let state = ConvCoopState::of(context);
    let hardware = context.coop.available && state.failure().is_none();
    let usable = match mode {
        CoopMode::Auto => hardware && state.active(),
        CoopMode::Hardware => hardware,
        CoopMode::Emulated => context.supports_f16(),
    };
    if !usable {
        return None;
    }
    let emulated = mode == CoopMode::Emulated;
    let limit = context.limits.max_compute_workgroup_storage_size;
    [KBlock::ThirtyTwo, KBlock::Sixteen]
        .into_iter()
        .map(|k_block| ConvCoopKey {
            pass,
            tile: ConvCoopTile::for_rows(m),
            k_block,
            emulated,
            epilogue: None,
        })
        .find(|key| key.workgroup_bytes() <= limit)
}

/// Record `key` over `grid` with `params`; `Ok(false)` when the driver refused the hardware
/// kernel (the device then stops using the cooperative convolutions).
fn run(
    storage: &GpuStorage,
    key: ConvCoopKey,
    params: &ConvCoopParams,
    buffers: &[&wgpu::Buffer],
    grid: (u32, u32, u32),
) -> Result<bool> {
    let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(params));
    let kernel = ConvKernel::ConvCoop(key);
    dispatch_counted(storage, (&kernel, key.emulated), words, buffers, grid)
}

/// Record a tensor-core convolution kernel (`emulated`: its plain-WGSL form) over `grid` on
/// `storage`'s device, counting hardware dispatches; `Ok(false)` when the driver refused the
/// hardware kernel (the device then stops using every cooperative convolution).
pub(crate) fn dispatch_counted(
    storage: &GpuStorage,
    (kernel, emulated): (&ConvKernel, bool),
    words: &[u32],
    buffers: &[&wgpu::Buffer],
    grid: (u32, u32, u32),
) -> Result<bool> {
    let context = storage.device.context();
    match context.dispatch(kernel, words, buffers, grid) {
        Err(error @ Error::Shader { .. }) if !emulated => {
            ConvCoopState::of(context).disable(&error);
            Ok(false)
        }
        Err(error) => Err(error),
        Ok(()) => {
            if !emulated {
                ConvCoopState::of(context).count();
            }
            Ok(true)
        }
    }
}

/// The grid of `key` for `params` and `splits`, or `None` beyond the device's limits.
fn grid(
    storage: &GpuStorage,
    key: ConvCoopKey,
    params: &ConvCoopParams,
    splits: usize,
) -> Option<(u32, u32, u32)> {
    let max = storage
        .device
        .context()
        .limits
        .max_compute_workgroups_per_dimension as usize;
    let tiles_m = (params.m as usize).div_ceil(key.tile.rows());
    if tiles_m > max || splits > max {
        return None;
    }
    // Column tiles beyond the limit are walked by the kernel's grid-stride loop.
    let tiles_n = (params.column_tiles as usize).min(max);
    Some((tiles_n as u32, tiles_m as u32, splits as u32))
}

impl GpuStorage {
    /// [`GpuStorage::conv2d`] on cooperative matrices (`mode`: see [`CoopMode`]) with
    /// `epilogue` in its store, or `None` where they do not apply.
    pub(crate) fn conv2d_coop(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        mode: CoopMode,
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d";
        if self.dtype != DType::F16 || weight.dtype != DType::F16 {
            return Ok(None);
        }
        same_device(OP, self, weight)?;
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        check_coordinates(OP, &shape)?;
        let [batch, o, oh, ow] = shape.output_shape();
        let (columns, patch) = (batch * oh * ow, shape.patch());
        let numel = batch * o * oh * ow;
        if patch == 0 || numel == 0 {
            return Ok(None);
        }
        let Some(key) = key_for(self, ConvPass::Forward, o, mode) else {
            return Ok(None);
        };
        let key = ConvCoopKey {
            epilogue: epilogue.map(|bound| bound.key),
            ..key
        };
        let dense;
        let (weight, weight_layout) = if is_dense(weight_layout) {
            (weight, weight_layout)
        } else {
            dense = (
                weight.copy_strided(weight_layout)?,
                Layout::contiguous(&weight_layout.shape),
            );
            (&dense.0, &dense.1)
        };
        let [s_n, s_c, s_h, s_w] = strides(OP, layout)?;
        let mut p = ConvCoopParams {
            m: word(OP, o)?,
            n: word(OP, columns)?,
            k: word(OP, patch)?,
            column_tiles: word(OP, columns.div_ceil(key.tile.columns()))?,
            k_chunk: word(OP, patch)?,
            plane: word(OP, oh * ow)?,
            image_stride: word(OP, o * oh * ow)?,
            row_stride: word(OP, oh * ow)?,
            a_offset: word(OP, weight_layout.offset)?,
            a_stride_c: word(OP, patch)?,
            b_offset: word(OP, layout.offset)?,
            b_stride_n: s_n,
            b_stride_c: s_c,
            b_stride_h: s_h,
            b_stride_w: s_w,
            b_height: word(OP, shape.input.0)?,
            b_width: word(OP, shape.input.1)?,
            grid_h: word(OP, oh)?,
            grid_w: word(OP, ow)?,
            ..ConvCoopParams::default()
        };
        geometry(OP, &shape, &mut p)?;
        // Positions the kernel computes (output, weight) must fit 32 bits as well.
        word(OP, numel)?;
        word(OP, weight_layout.offset + o * patch)?;
        let Some(grid) = grid(self, key, &p, 1) else {
            return Ok(None);
        };
        let out = GpuStorage::allocate(&self.device, OP, numel, DType::F16)?;
        // Bindings: A (the weight), B (the input), the result, the epilogue's tensors.
        let mut buffers = vec![weight.raw()?, self.raw()?, out.raw()?];
        if let Some(bound) = epilogue {
            buffers.extend(bound.buffers()?);
        }
        Ok(run(self, key, &p, &buffers, grid)?.then_some(out))
    }

    /// [`GpuStorage::conv2d_backward_input`] on cooperative matrices (`self` the output
    /// gradient), or `None` where they do not apply.
    pub(crate) fn conv2d_backward_input_coop(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
        mode: CoopMode,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d_backward_input";
        if self.dtype != DType::F16 || weight.dtype != DType::F16 {
            return Ok(None);
        }
        same_device(OP, self, weight)?;
        let shape = backward_shape(OP, layout, input_shape, &weight_layout.shape, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        check_coordinates(OP, &shape)?;
        let (batch, c, (h, w)) = (shape.batch, shape.channels, shape.input);
        let (columns, k) = (
            batch * h * w,
            shape.out_channels * shape.kernel.0 * shape.kernel.1,
        );
        let numel = batch * c * h * w;
        if numel == 0 || k == 0 {
            return Ok(None);
        }
        let Some(key) = key_for(self, ConvPass::BackwardInput, c, mode) else {
            return Ok(None);
        };
        let [s_n, s_c, s_h, s_w] = strides(OP, layout)?;
        let mut p = ConvCoopParams {
            m: word(OP, c)?,
            n: word(OP, columns)?,
            k: word(OP, k)?,
            column_tiles: word(OP, columns.div_ceil(key.tile.columns()))?,
            k_chunk: word(OP, k)?,
            plane: word(OP, h * w)?,
            image_stride: word(OP, c * h * w)?,
            row_stride: word(OP, h * w)?,
            a_stride_c: word(OP, k)?,
            b_offset: word(OP, layout.offset)?,
            b_stride_n: s_n,
            b_stride_c: s_c,
            b_stride_h: s_h,
            b_stride_w: s_w,
            b_height: word(OP, shape.output.0)?,
            b_width: word(OP, shape.output.1)?,
            grid_h: word(OP, h)?,
            grid_w: word(OP, w)?,
            ..ConvCoopParams::default()
        };
        geometry(OP, &shape, &mut p)?;
        word(OP, numel)?;
        word(OP, c * k)?;
        let Some(grid) = grid(self, key, &p, 1) else {
            return Ok(None);
        };
        // A = the weight transposed to a dense [c, o * kh * kw] (weights are small to copy).
        let transposed = weight.copy_strided(&weight_layout.permute(&[1, 0, 2, 3]))?;
        let out = GpuStorage::allocate(&self.device, OP, numel, DType::F16)?;
        let buffers = [transposed.raw()?, self.raw()?, out.raw()?];
        Ok(run(self, key, &p, &buffers, grid)?.then_some(out))
    }

    /// [`GpuStorage::conv2d_backward_weight`] on cooperative matrices (`self` the forward's
    /// input), or `None` where they do not apply.
    pub(crate) fn conv2d_backward_weight_coop(
        &self,
        layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
        mode: CoopMode,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d_backward_weight";
        if self.dtype != DType::F16 || grad.dtype != DType::F16 {
            return Ok(None);
        }
        same_device(OP, self, grad)?;
        let shape = backward_shape(OP, grad_layout, &layout.shape, weight_shape, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, grad_layout, grad.len)?;
        check_coordinates(OP, &shape)?;
        let [batch, o, oh, ow] = shape.output_shape();
        let (columns, k) = (shape.patch(), batch * oh * ow);
        let numel = o * columns;
        if numel == 0 || k == 0 {
            return Ok(None);
        }
        let Some(key) = key_for(self, ConvPass::BackwardWeight, o, mode) else {
            return Ok(None);
        };
        let kb = key.k_block.size();
        let max = self
            .device
            .context()
            .limits
            .max_compute_workgroups_per_dimension as usize;
        let tiles =
            o.div_ceil(key.tile.rows()) * columns.div_ceil(key.tile.columns()).min(max.max(1));
        let blocks = k.div_ceil(kb);
        let splits = TARGET_WORKGROUPS
            .div_ceil(tiles.max(1))
            .min(blocks / MIN_SPLIT_BLOCKS)
            .min(MAX_PARTIALS / numel)
            .clamp(1, MAX_SPLITS);
        let k_chunk = blocks.div_ceil(splits) * kb;
        let splits = k.div_ceil(k_chunk);
        let [g_n, g_c, g_h, g_w] = strides(OP, grad_layout)?;
        let [s_n, s_c, s_h, s_w] = strides(OP, layout)?;
        let mut p = ConvCoopParams {
            m: word(OP, o)?,
            n: word(OP, columns)?,
            k: word(OP, k)?,
            column_tiles: word(OP, columns.div_ceil(key.tile.columns()))?,
            k_chunk: word(OP, k_chunk)?,
            // Columns are dense rows of the partial sums: (column / N) is always 0.
            plane: word(OP, columns)?,
            image_stride: 0,
            row_stride: word(OP, columns)?,
            split_stride: word(OP, numel)?,
            a_offset: word(OP, grad_layout.offset)?,
            a_stride_n: g_n,
            a_stride_c: g_c,
            a_stride_h: g_h,
            a_stride_w: g_w,
            b_offset: word(OP, layout.offset)?,
            b_stride_n: s_n,
            b_stride_c: s_c,
            b_stride_h: s_h,
            b_stride_w: s_w,
            b_height: word(OP, shape.input.0)?,
            b_width: word(OP, shape.input.1)?,
            grid_h: word(OP, oh)?,
            grid_w: word(OP, ow)?,
            ..ConvCoopParams::default()
        };
        geometry(OP, &shape, &mut p)?;
        word(OP, splits * numel)?;
        word(OP, splits * k_chunk)?;
        let Some(grid) = grid(self, key, &p, splits) else {
            return Ok(None);
        };
        let partials = GpuStorage::allocate(&self.device, OP, splits * numel, DType::F32)?;
        let buffers = [grad.raw()?, self.raw()?, partials.raw()?];
        if !run(self, key, &p, &buffers, grid)? {
            return Ok(None);
        }
        // The partial sums in a fixed order (deterministic), converted to f16.
        crate::backend::gpu::conv::backward::sum_splits(&partials, splits, numel, DType::F16, None)
            .map(Some)
    }
}
