//! The convolution primitives' entry points. Each has several correct kernels for a shape —
//! the cooperative-matrix (tensor-core) kernels for f16 where the adapter has them and they
//! are turned on (`conv/coop.rs`), the narrow or the wide tile (`conv/direct.rs`,
//! `conv/backward.rs`), Winograd F(2x2, 3x3) and F(4x4, 3x3) for 3x3 stride-1 filters
//! (`conv/winograd.rs`), the weight gradient's kernel variant (`conv/backward/weight.rs`:
//! tile, lean or not) and number of k-splits — and picks one through the
//! autotuner (`runtime/autotune.rs`): the fixed heuristic's choice is candidate 0 (what runs with
//! `ANYGRAD_AUTOTUNE=off`), the others are timed on first use of a shape.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::contract::{into_format, Epilogue};
use crate::backend::gpu::conv::backward::{
    weight_split_count, WeightKernel, MAX_PARTIALS, MAX_SPLITS,
};
use crate::backend::gpu::conv::coop::{key_for, ConvPass, CoopMode};
use crate::backend::gpu::conv::epilogue::BoundEpilogue;
use crate::backend::gpu::conv::gemm::{prefers_wide, K_STEP};
use crate::backend::gpu::conv::nhwc::{self as conv_nhwc, NhwcTile, PatchTile};
use crate::backend::gpu::conv::winograd::{self as conv_winograd, WinogradTile};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

/// One way to compute a convolution pass (the autotuner's candidates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConvChoice {
    /// The cooperative-matrix kernel (f16 operands, hardware support).
    Coop,
    /// The implicit-GEMM kernel with the narrow (64-row) or wide (128-row) tile.
    Tile { wide: bool },
    /// The weight gradient's kernel variant with K split this many ways.
    Splits { splits: usize, kernel: WeightKernel },
    /// Winograd F(2x2, 3x3) or F(4x4, 3x3): transforms and batched GEMMs (`conv/winograd.rs`).
    Winograd(WinogradTile),
    /// The channels-last tensor-core forward kernel with this tile (`conv/nhwc.rs`).
    Nhwc(NhwcTile),
    /// The stride-1 patch kernel with this tile (`conv/nhwc/patch.rs`).
    Patch(PatchTile),
    /// The channels-last tensor-core weight gradient with this many output channels per
    /// workgroup (`conv/nhwc/weight.rs`).
    NhwcWeight(conv_nhwc::ConvNhwcWeightKey),
}

impl ConvChoice {
    /// The candidate's name in the autotuner's keys and cache file.
    fn name(&self) -> String {
        match self {
            ConvChoice::Coop => "coop".into(),
            ConvChoice::Tile { wide: false } => "narrow".into(),
            ConvChoice::Tile { wide: true } => "wide".into(),
            ConvChoice::Splits { splits, kernel } => format!("{}split{splits}", kernel.prefix()),
            ConvChoice::Winograd(tile) => tile.name().into(),
            ConvChoice::Nhwc(tile) => tile.name().into(),
            ConvChoice::Patch(tile) => tile.name().into(),
            ConvChoice::NhwcWeight(key) if key.k_block == conv_nhwc::K_BLOCK => {
                format!("nhwc-weight{}", key.columns)
            }
            ConvChoice::NhwcWeight(key) => format!("nhwc-weight{}k{}", key.columns, key.k_block),
        }
    }
}

/// The candidates of a forward or input-gradient pass whose GEMM has `rows` rows and
/// `columns` columns: tensor cores first where they are turned on (`ANYGRAD_COOP_CONV=on` or
/// `GpuDevice::set_cooperative_conv`), then the heuristic's tile and the other tile.
///
/// Tensor cores are not a candidate otherwise: on the H200 the tuner, timing each pass on its
/// own, picked them for a few ResNet-18 layers, and autocast inference then ran slower in the
/// whole network (3,514 against 3,660 images/s; docs/PERFORMANCE.md).
fn tile_candidates(
    storage: &GpuStorage,
    f16: bool,
    pass: ConvPass,
    rows: usize,
    columns: usize,
) -> Vec<ConvChoice> {
    let wide = prefers_wide(rows, columns);
    let mut choices = Vec::with_capacity(3);
    if f16 && key_for(storage, pass, rows, CoopMode::Auto).is_some() {
        choices.push(ConvChoice::Coop);
    }
    choices.push(ConvChoice::Tile { wide });
    choices.push(ConvChoice::Tile { wide: !wide });
    choices
}

/// Run the autotuner over `choices` for `op` on these operands (described only when tuning).
fn pick(
    storage: &GpuStorage,
    op: &str,
    operands: impl FnOnce() -> String,
    choices: &[ConvChoice],
    run: impl Fn(ConvChoice) -> Result<GpuStorage> + Sync,
) -> Result<GpuStorage> {
    let describe = || {
        let names: Vec<String> = choices.iter().map(ConvChoice::name).collect();
        let key = format!("{op} {} {} {}", storage.dtype, operands(), names.join(","));
        (key, names)
    };
    let context = storage.device.context();
    context.autotune.pick(
        choices.len(),
        describe,
        context,
        |index| run(choices[index]),
    )
}

/// The forward pass's patch-kernel candidates: the blocks that compute this convolution.
fn forward_patches<'a>(
    layout: &'a Layout,
    weight_layout: &'a Layout,
    params: &'a Conv2dParams,
) -> impl Iterator<Item = ConvChoice> + 'a {
    PatchTile::ALL
        .into_iter()
        .filter(|&tile| conv_nhwc::patch_applies(layout, weight_layout, params, tile))
        .map(ConvChoice::Patch)
}

/// The operands part of a forward pass's tuning key.
fn forward_operands(layout: &Layout, weight_layout: &Layout, params: &Conv2dParams) -> String {
    format!(
        "x{:?} w{:?} {}",
        layout.shape,
        weight_layout.shape,
        geometry(params)
    )
}

/// The geometry part of a tuning key.
fn geometry(params: &Conv2dParams) -> String {
    format!(
        "s{:?} p{:?} d{:?}",
        params.stride, params.padding, params.dilation
    )
}

impl GpuStorage {
    /// 2-D convolution with one group and no bias: `[n, c, h, w]` (any strides) by
    /// `[o, c, kh, kw]` into a contiguous `[n, o, oh, ow]`, by the implicit-GEMM kernel
    /// (`conv/direct.rs`, narrow or wide tile), Winograd for 3x3 stride-1 filters or, for F16 where
    /// the adapter has them, the cooperative-matrix kernel; the autotuner picks. F32 and F16.
    pub fn conv2d(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<GpuStorage> {
        self.conv2d_tuned(layout, weight, weight_layout, params, None)
    }

    /// The memory format [`GpuStorage::conv2d_epilogue`] writes fastest
    /// (`Convolution::conv2d_epilogue_format`): channels-last where the channels-last
    /// tensor-core kernels compute the convolution on this device (their stores write it in
    /// 16-byte runs and the next such convolution reads it without a copy), contiguous
    /// everywhere else.
    pub fn conv2d_epilogue_format(
        &self,
        layout: &Layout,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> MemoryFormat {
        let tensor_cores = layout.rank() == 4
            && self.device.channels_last_conv()
            && conv_nhwc::applies(self.dtype, &weight_layout.shape, params)
            && conv_nhwc::tiles_for(weight_layout.shape[0])
                .into_iter()
                .any(|tile| self.nhwc_usable(tile.workgroup_bytes(), false));
        if tensor_cores {
            MemoryFormat::ChannelsLast
        } else {
            MemoryFormat::Contiguous
        }
    }

    /// [`GpuStorage::conv2d`] with its epilogue in the kernels' store
    /// (`Convolution::conv2d_epilogue`, `conv/epilogue.rs`): every forward kernel carries
    /// it. The output is dense in `format`: channels-last by the channels-last tensor-core
    /// kernels where they run (the autotuner picks among them), else by a copy of the
    /// row-major result.
    pub fn conv2d_epilogue(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: &Epilogue<'_, GpuStorage>,
        format: MemoryFormat,
    ) -> Result<GpuStorage> {
        const OP: &str = "conv2d_epilogue";
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        let output = shape.output_shape();
        let row_major = || -> Result<GpuStorage> {
            let bound = BoundEpilogue::new(OP, epilogue, &output, self.dtype)?;
            self.conv2d_tuned(layout, weight, weight_layout, params, Some(&bound))
        };
        match format {
            MemoryFormat::Contiguous => row_major(),
            MemoryFormat::ChannelsLast => {
                let f16 = self.dtype == DType::F16 && weight.dtype == DType::F16;
                if f16 && conv_nhwc::applies(self.dtype, &weight_layout.shape, params) {
                    let format = MemoryFormat::ChannelsLast;
                    let bound = BoundEpilogue::new_in(OP, epilogue, &output, self.dtype, format)?;
                    let operands = (layout, weight, weight_layout);
                    if let Some(out) = self.conv2d_channels_last_tuned(operands, params, &bound)? {
                        return Ok(out);
                    }
                }
                into_format(row_major()?, &output, MemoryFormat::ChannelsLast)
            }
        }
    }

    /// The channels-last forward with `epilogue` (bound channels-last): the autotuner's pick
    /// among the channels-last tiles and the patch kernels that apply; `Ok(None)` where none
    /// runs here (no tensor cores, limits, the driver refused them).
    fn conv2d_channels_last_tuned(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        epilogue: &BoundEpilogue<'_>,
    ) -> Result<Option<GpuStorage>> {
        let format = MemoryFormat::ChannelsLast;
        let mut choices: Vec<ConvChoice> = conv_nhwc::tiles_for(weight_layout.shape[0])
            .into_iter()
            .map(ConvChoice::Nhwc)
            .collect();
        choices.extend(forward_patches(layout, weight_layout, params));
        let operands = || forward_operands(layout, weight_layout, params);
        let op = format!("conv2d+{}>channels-last", epilogue.key.name());
        // A candidate that does not run here (over the workgroup memory, refused by the
        // driver) hands over to the first tile; where that does not run either, no
        // channels-last kernel does (`Ok(None)`).
        let first = choices.first().copied();
        let refused = AtomicBool::new(false);
        let out = pick(self, &op, operands, &choices, |choice| {
            let operands = (layout, weight, weight_layout);
            let mut out = match choice {
                ConvChoice::Nhwc(tile) => {
                    self.conv2d_nhwc(operands, params, (tile, false, format), Some(epilogue))?
                }
                ConvChoice::Patch(tile) => {
                    self.conv2d_patch(operands, params, (tile, false, format), Some(epilogue))?
                }
                ConvChoice::Coop
                | ConvChoice::Tile { .. }
                | ConvChoice::Winograd(_)
                | ConvChoice::Splits { .. }
                | ConvChoice::NhwcWeight(_) => None,
            };
            if let (None, Some(ConvChoice::Nhwc(tile))) = (&out, first) {
                out = self.conv2d_nhwc(operands, params, (tile, false, format), Some(epilogue))?;
            }
            match out {
                Some(out) => Ok(out),
                None => {
                    refused.store(true, Ordering::Relaxed);
                    Err(Error::invalid("conv2d", "no channels-last kernel ran"))
                }
            }
        });
        match out {
            Ok(out) => Ok(Some(out)),
            Err(_) if refused.load(Ordering::Relaxed) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The forward pass's candidates and the autotuner's pick, with or without an epilogue.
    fn conv2d_tuned(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<GpuStorage> {
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        let [batch, o, oh, ow] = shape.output_shape();
        let f16 =
            self.dtype == crate::dtype::DType::F16 && weight.dtype == crate::dtype::DType::F16;
        let mut choices = tile_candidates(self, f16, ConvPass::Forward, o, batch * oh * ow);
        // 1x1 convolutions (ResNet's shortcuts) gather one value per tap: the cooperative
        // kernel is a candidate for them wherever tensor cores run.
        let pointwise = weight_layout.shape.get(2..) == Some(&[1, 1][..]);
        if f16
            && pointwise
            && !choices.contains(&ConvChoice::Coop)
            && key_for(self, ConvPass::Forward, o, CoopMode::Hardware).is_some()
        {
            choices.push(ConvChoice::Coop);
        }
        // Channels-last tensor cores first where they apply (they carry the epilogue too).
        if f16
            && self.device.channels_last_conv()
            && conv_nhwc::applies(self.dtype, &weight_layout.shape, params)
        {
            let tiles = conv_nhwc::tiles_for(o);
            choices.splice(0..0, tiles.into_iter().map(ConvChoice::Nhwc));
            // The patch kernels after them: the autotuner times them where they apply.
            choices.extend(forward_patches(layout, weight_layout, params));
        }
        if conv_winograd::applies(self.dtype, &weight_layout.shape, params)
            && (epilogue.is_none() || shape.channels > 0)
        {
            let tiles = WinogradTile::candidates(self.dtype, weight_layout.shape[1]);
            choices.extend(tiles.into_iter().map(ConvChoice::Winograd));
        }
        let operands = || forward_operands(layout, weight_layout, params);
        let op = match epilogue {
            None => "conv2d".to_string(),
            Some(epilogue) => format!("conv2d+{}", epilogue.key.name()),
        };
        // Where a tensor-core kernel does not run (the driver refused it), the regular one does.
        let regular = || self.conv2d_with(layout, weight, weight_layout, params, None, epilogue);
        pick(self, &op, operands, &choices, |choice| match choice {
            // Where the cooperative kernel does not run (an empty product, or the driver
            // refused it), the regular kernel does.
            ConvChoice::Coop => {
                let operands = (layout, weight, weight_layout);
                match self.conv2d_coop(operands, params, CoopMode::Hardware, epilogue)? {
                    Some(out) => Ok(out),
                    None => regular(),
                }
            }
            ConvChoice::Tile { wide } => {
                self.conv2d_with(layout, weight, weight_layout, params, Some(wide), epilogue)
            }
            ConvChoice::Winograd(tile) => {
                self.conv2d_winograd(layout, weight, weight_layout, params, tile, epilogue)
            }
            ConvChoice::Nhwc(tile) => {
                let operands = (layout, weight, weight_layout);
                let run = (tile, false, MemoryFormat::Contiguous);
                match self.conv2d_nhwc(operands, params, run, epilogue)? {
                    Some(out) => Ok(out),
                    None => regular(),
                }
            }
            ConvChoice::Patch(tile) => {
                let operands = (layout, weight, weight_layout);
                let run = (tile, false, MemoryFormat::Contiguous);
                match self.conv2d_patch(operands, params, run, epilogue)? {
                    Some(out) => Ok(out),
                    None => regular(),
                }
            }
            ConvChoice::Splits { .. } | ConvChoice::NhwcWeight(_) => {
                Err(Error::invalid("conv2d", "no k-splits here"))
            }
        })
    }

    /// Gradient of the one-group convolution with respect to its input: `self` is the output
    /// gradient `[n, o, oh, ow]` (any strides), `weight` the forward's `[o, c, kh, kw]` (any
    /// strides); returns a contiguous `[n, c, h, w]` for `input_shape`, by the implicit-GEMM
    /// kernel (`conv/backward.rs`, narrow or wide tile) or, for F16 where the adapter has them,
    /// the cooperative-matrix kernel; the autotuner picks. F32 and F16.
    pub fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<GpuStorage> {
        let (channels, columns) = match input_shape {
            [n, c, h, w] => (*c, n * h * w),
            _ => (0, 0),
        };
        let f16 =
            self.dtype == crate::dtype::DType::F16 && weight.dtype == crate::dtype::DType::F16;
        let mut choices = tile_candidates(self, f16, ConvPass::BackwardInput, channels, columns);
        if conv_winograd::applies_backward_input(self.dtype, &weight_layout.shape, params) {
            // The input gradient sums over the output channels.
            let tiles = WinogradTile::candidates(self.dtype, weight_layout.shape[0]);
            choices.extend(tiles.into_iter().map(ConvChoice::Winograd));
        }
        // Channels-last tensor cores first for undilated gradients (convolutions of the
        // gradient with the flipped weight, one per stride phase;
        // `conv2d_backward_input_nhwc` checks the rest).
        if f16 && self.device.channels_last_conv() && params.dilation == (1, 1) {
            let tiles = conv_nhwc::tiles_for(channels);
            choices.splice(0..0, tiles.into_iter().map(ConvChoice::Nhwc));
            // The patch kernels for stride-1 gradients, after them.
            let patches = PatchTile::ALL.into_iter().filter(|&tile| {
                conv_nhwc::patch_input_gradient_applies(
                    layout,
                    weight_layout,
                    params,
                    input_shape,
                    tile,
                )
            });
            choices.extend(patches.map(ConvChoice::Patch));
        }
        let operands = || {
            format!(
                "g{:?} w{:?} x{input_shape:?} {}",
                layout.shape,
                weight_layout.shape,
                geometry(params)
            )
        };
        // Where a tensor-core kernel does not run (the driver refused it), the regular one does.
        let regular = || {
            self.conv2d_backward_input_with(
                layout,
                weight,
                weight_layout,
                params,
                input_shape,
                None,
            )
        };
        pick(
            self,
            "conv2d_backward_input",
            operands,
            &choices,
            |choice| match choice {
                ConvChoice::Coop => match self.conv2d_backward_input_coop(
                    layout,
                    weight,
                    weight_layout,
                    params,
                    input_shape,
                    CoopMode::Hardware,
                )? {
                    Some(out) => Ok(out),
                    None => regular(),
                },
                ConvChoice::Tile { wide } => self.conv2d_backward_input_with(
                    layout,
                    weight,
                    weight_layout,
                    params,
                    input_shape,
                    Some(wide),
                ),
                ConvChoice::Winograd(tile) => self.conv2d_backward_input_winograd(
                    layout,
                    weight,
                    weight_layout,
                    params,
                    input_shape,
                    tile,
                ),
                ConvChoice::Nhwc(tile) => match self.conv2d_backward_input_nhwc(
                    (layout, weight, weight_layout),
                    params,
                    input_shape,
                    (tile, false),
                )? {
                    Some(out) => Ok(out),
                    None => regular(),
                },
                ConvChoice::Patch(tile) => match self.conv2d_backward_input_patch(
                    (layout, weight, weight_layout),
                    params,
                    input_shape,
                    (tile, false),
                )? {
                    Some(out) => Ok(out),
                    None => regular(),
                },
                ConvChoice::Splits { .. } | ConvChoice::NhwcWeight(_) => Err(Error::invalid(
                    "conv2d_backward_input",
                    "not a candidate of this pass",
                )),
            },
        )
    }

    /// Gradient of the one-group convolution with respect to its weight: `self` is the
    /// forward's input `[n, c, h, w]` (any strides), `grad` the output gradient
    /// `[n, o, oh, ow]` (any strides); returns a contiguous `[o, c, kh, kw]` for
    /// `weight_shape`, by the split-K implicit-GEMM kernel (`conv/backward/weight.rs`; its
    /// variant — narrow or wide tile, lean or not — and the number of splits around
    /// `split_count`'s are tuned) or, for F16 where the adapter has them, the
    /// cooperative-matrix kernel; the autotuner picks. F32 and F16.
    pub fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<GpuStorage> {
        let f16 = self.dtype == crate::dtype::DType::F16 && grad.dtype == crate::dtype::DType::F16;
        let (o, patch) = match weight_shape {
            [o, c, kh, kw] => (*o, c * kh * kw),
            _ => (0, 0),
        };
        let depth: usize = match grad_layout.shape.as_slice() {
            [n, _, oh, ow] => n * oh * ow,
            _ => 0,
        };
        let mut choices = Vec::new();
        if f16 && key_for(self, ConvPass::BackwardWeight, o, CoopMode::Auto).is_some() {
            choices.push(ConvChoice::Coop);
        }
        let max = self
            .device
            .context()
            .limits
            .max_compute_workgroups_per_dimension as usize;
        let outputs = o * patch;
        let steps = depth.div_ceil(K_STEP);
        let fits = |splits: usize| {
            (1..=MAX_SPLITS).contains(&splits)
                && splits <= steps.max(1)
                && (splits == 1 || splits.saturating_mul(outputs) <= MAX_PARTIALS)
        };
        let mut push = |splits: usize, wide: bool, lean: bool| {
            let choice = ConvChoice::Splits {
                splits,
                kernel: WeightKernel { wide, lean },
            };
            if fits(splits) && !choices.contains(&choice) {
                choices.push(choice);
            }
        };
        // The narrow tile around `split_count`'s count (the first is the heuristic's choice),
        // the wide tile where M has more rows than one narrow tile (split more: it has half
        // the row tiles), and the lean variant (pixel walk, half-tile skip) at each tile's
        // centre count.
        let narrow = weight_split_count(o, patch, depth, max, false);
        for splits in [narrow, narrow / 2, narrow * 2, narrow * 4] {
            push(splits, false, false);
        }
        let wide = o > 64;
        let wide_centre = weight_split_count(o, patch, depth, max, true);
        if wide {
            for splits in [wide_centre, wide_centre / 2, wide_centre * 2] {
                push(splits, true, false);
            }
        }
        push(narrow, false, true);
        if wide {
            push(wide_centre, true, true);
        }
        if choices.is_empty() {
            choices.push(ConvChoice::Splits {
                splits: narrow,
                kernel: WeightKernel::default(),
            });
        }
        // Channels-last tensor cores first where they apply: 128 output channels per
        // workgroup where 128 divide them, and 64.
        if f16
            && self.device.channels_last_conv()
            && conv_nhwc::applies(self.dtype, weight_shape, params)
        {
            let columns = [128, 64].into_iter().filter(|c| o.is_multiple_of(*c));
            let nhwc: Vec<ConvChoice> = columns
                .flat_map(|columns| {
                    [conv_nhwc::K_BLOCK, 2 * conv_nhwc::K_BLOCK].map(|k_block| {
                        ConvChoice::NhwcWeight(conv_nhwc::ConvNhwcWeightKey {
                            columns,
                            k_block,
                            emulated: false,
                        })
                    })
                })
                .collect();
            choices.splice(0..0, nhwc);
        }
        let operands = || {
            format!(
                "x{:?} g{:?} w{weight_shape:?} {}",
                layout.shape,
                grad_layout.shape,
                geometry(params)
            )
        };
        pick(
            self,
            "conv2d_backward_weight",
            operands,
            &choices,
            |choice| match choice {
                ConvChoice::Coop => match self.conv2d_backward_weight_coop(
                    layout,
                    grad,
                    grad_layout,
                    params,
                    weight_shape,
                    CoopMode::Hardware,
                )? {
                    Some(out) => Ok(out),
                    None => self.conv2d_backward_weight_with(
                        layout,
                        grad,
                        grad_layout,
                        params,
                        weight_shape,
                        (WeightKernel::default(), None),
                    ),
                },
                ConvChoice::Splits { splits, kernel } => self.conv2d_backward_weight_with(
                    layout,
                    grad,
                    grad_layout,
                    params,
                    weight_shape,
                    (kernel, Some(splits)),
                ),
                ConvChoice::NhwcWeight(key) => match self.conv2d_backward_weight_nhwc(
                    (layout, grad, grad_layout),
                    params,
                    weight_shape,
                    key,
                )? {
                    Some(out) => Ok(out),
                    None => self.conv2d_backward_weight_with(
                        layout,
                        grad,
                        grad_layout,
                        params,
                        weight_shape,
                        (WeightKernel::default(), None),
                    ),
                },
                ConvChoice::Tile { .. }
                | ConvChoice::Winograd(_)
                | ConvChoice::Nhwc(_)
                | ConvChoice::Patch(_) => {
                    Err(Error::invalid("conv2d_backward_weight", "one tile only"))
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::contract::{Convolution, LinearAlgebra};
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::conv::backward::WeightKernel;
    use crate::backend::gpu::runtime::autotune::measured_on_this_thread;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::backend::gpu_facts::AutotuneMode;
    use crate::backend::tests::support::gpu_device;
    use crate::geometry::Conv2dParams;
    use crate::layout::Layout;

    fn numbers(count: usize, seed: usize) -> Vec<f32> {
        (0..count)
            .map(|i| ((i * 37 + seed * 11) % 101) as f32 / 50.0 - 1.0)
            .collect()
    }

    fn assert_near(what: &str, expected: &CpuStorage, actual: &GpuStorage) {
        let (CpuStorage::F32(expected), CpuStorage::F32(actual)) =
            (expected, &actual.to_cpu().unwrap())
        else {
            panic!("{what}: not f32");
        };
        assert_eq!(expected.len(), actual.len(), "{what}");
        for (i, (x, y)) in expected.iter().zip(actual).enumerate() {
            assert!(
                (x - y).abs() <= 1e-4 * (1.0 + x.abs()),
                "{what}[{i}]: {x} vs {y}"
            );
        }
    }

    /// With the autotuner on (off by default on this software adapter), the tuned matmul and
    /// convolution passes time their candidates once per shape and agree with the CPU; every
    /// split count of the weight gradient agrees with the CPU on its own.
    #[test]
    fn tuned_kernels_match_cpu_and_are_timed_once() {
        let Some(device) = gpu_device() else { return };
        let tuner = &device.context().autotune;
        tuner.forget_file();
        tuner.set_mode(AutotuneMode::On);
        let upload = |values: &[f32]| {
            GpuStorage::from_cpu(
                &device,
                &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(values.to_vec())),
            )
            .unwrap()
        };
        // A single product with split-K candidates (128 x 1024 x 128).
        let (a, b) = (numbers(128 * 1024, 1), numbers(1024 * 128, 2));
        let (a_layout, b_layout) = (
            Layout::contiguous(&[1, 128, 1024]),
            Layout::contiguous(&[1, 1024, 128]),
        );
        let expected = CpuStorage::F32(crate::backend::cpu::HostBuffer::from(a.clone()))
            .matmul(
                &a_layout,
                &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(b.clone())),
                &b_layout,
            )
            .unwrap();
        let (a, b) = (upload(&a), upload(&b));
        let before = measured_on_this_thread();
        // The first call runs the heuristic's kernel untimed; the second times the candidates.
        assert_near(
            "matmul",
            &expected,
            &a.matmul(&a_layout, &b, &b_layout).unwrap(),
        );
        assert_eq!(measured_on_this_thread(), before, "a first call was timed");
        assert_near(
            "matmul second call",
            &expected,
            &a.matmul(&a_layout, &b, &b_layout).unwrap(),
        );
        let timed = measured_on_this_thread() - before;
        assert!(timed >= 4, "{timed} matmul candidates timed");
        assert_near(
            "matmul again",
            &expected,
            &a.matmul(&a_layout, &b, &b_layout).unwrap(),
        );
        assert_eq!(
            measured_on_this_thread() - before,
            timed,
            "the choice was not reused"
        );
        // Convolution passes: 3 x 3, padding 1, 8 -> 16 channels on 2 images of 10 x 10.
        let params = Conv2dParams {
            padding: (1, 1),
            ..Conv2dParams::default()
        };
        let (x, w, g) = (
            numbers(2 * 8 * 100, 3),
            numbers(16 * 8 * 9, 4),
            numbers(2 * 16 * 100, 5),
        );
        let (x_layout, w_layout, g_layout) = (
            Layout::contiguous(&[2, 8, 10, 10]),
            Layout::contiguous(&[16, 8, 3, 3]),
            Layout::contiguous(&[2, 16, 10, 10]),
        );
        let (cx, cw, cg) = (
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(x.clone())),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(w.clone())),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(g.clone())),
        );
        let (gx, gw, gg) = (upload(&x), upload(&w), upload(&g));
        let weight_gradient = cx
            .conv2d_backward_weight(&x_layout, &cg, &g_layout, &params, &w_layout.shape)
            .unwrap();
        // Twice: heuristic kernels first, timed candidates on the second call.
        for _ in 0..2 {
            assert_near(
                "conv2d",
                &cx.conv2d(&x_layout, &cw, &w_layout, &params).unwrap(),
                &gx.conv2d(&x_layout, &gw, &w_layout, &params).unwrap(),
            );
            assert_near(
                "conv2d_backward_input",
                &cg.conv2d_backward_input(&g_layout, &cw, &w_layout, &params, &x_layout.shape)
                    .unwrap(),
                &gg.conv2d_backward_input(&g_layout, &gw, &w_layout, &params, &x_layout.shape)
                    .unwrap(),
            );
            assert_near(
                "conv2d_backward_weight",
                &weight_gradient,
                &gx.conv2d_backward_weight(&x_layout, &gg, &g_layout, &params, &w_layout.shape)
                    .unwrap(),
            );
        }
        for kernel in WeightKernel::ALL {
            for splits in [1, 2, 3, 7] {
                let forced = gx
                    .conv2d_backward_weight_with(
                        &x_layout,
                        &gg,
                        &g_layout,
                        &params,
                        &w_layout.shape,
                        (kernel, Some(splits)),
                    )
                    .unwrap();
                assert_near(
                    &format!("weight gradient, {kernel:?}, {splits} splits"),
                    &weight_gradient,
                    &forced,
                );
            }
        }
        assert!(
            measured_on_this_thread() - before > timed,
            "no convolution candidate timed"
        );
        tuner.set_mode(AutotuneMode::Off);
    }
}
