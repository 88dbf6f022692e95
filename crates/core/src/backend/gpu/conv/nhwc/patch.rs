//! The patch kernel: an f16 stride-1 (or stride-2) convolution on cooperative matrices
//! (tensor cores) that stages each input pixel once per workgroup instead of once per tap.
//!
//! The implicit GEMM (`conv/nhwc.rs`) stages A = the unrolled input, `kh * kw` copies of
//! every pixel; staging is about half of its time on the H200 (see docs/PERFORMANCE.md). Here
//! a workgroup owns an output block of `rows` output rows x 16 output columns x 64 or 128
//! output channels, stages the input patch under it (`rows + kh - 1` x `16 + kw - 1` pixels,
//! 16 channels at a time) once, and reads every tap's A fragment straight out of the patch:
//! the 16 pixels of one output row segment at tap `(a, b)` are 16 consecutive patch pixels,
//! one 16 x 16 fragment of row stride [`PIXEL_STRIDE`] (16 channels, 8 halves of padding).
//! At stride 2 the patch is `2 rows + 1` x 33 pixels and its even columns are staged before
//! its odd ones, so that the 16 output columns' pixels at a tap are again 16 consecutive
//! staged pixels; only the 8 x 128 block fits 48 KiB there ([`ConvPatchKey::stride`]).
//!
//! - Operands: the channels-last input `[n, h, w, c]` (c a multiple of 16) and the weight
//!   `[kh, kw, c, o]` as the GEMM kernels copy them; output `[n, o, oh, ow]` through
//!   `conv/epilogue.rs`'s scale, shift, residual and activation when the key has one.
//! - Stages: per block of 16 channels, one stage per tap row `a` (`kh` of them): the patch is
//!   staged at the block's first stage, the weight of the row's `kw` taps (`kw` x 16 x
//!   columns) at every stage; the next stage's loads are held in registers while this one is
//!   multiplied out. Subgroup `s` owns output rows `s * rows / 8 ..` of the block: `rows / 8`
//!   x (columns / 16) accumulators.
//! - Output columns past `ow` (the last column block of a width that 16 does not divide) are
//!   computed from zero or clamped reads and never stored.
//! - **Flat blocks** (`PatchTile::Flat*`, stride 1): a 56 x 56 output in blocks of 32 rows x
//!   16 columns computes 64 x 64 pixels, 1.31 times the useful arithmetic (28 x 28 and 14 x 14
//!   likewise). A flat block numbers the outputs over the padded input's grid instead: pixel
//!   `v = (image * Hp + oy) * Wp + ox` (`Hp`, `Wp` the padded height and width), so that the
//!   pixel under output `v` at tap `(a, b)` is padded pixel `v + a Wp + b` whatever the row.
//!   A block is `16 rows` consecutive such pixels, its patch the `16 rows + (k - 1)(Wp + 1)`
//!   consecutive padded pixels from its first; every tap's fragment is again 16 consecutive
//!   staged pixels. Only the pixels with `oy < oh` and `ox < ow` are stored (56 x 56 computes
//!   58 x 58: 1.07 times). The patch's size bounds `Wp` ([`PatchTile::flat_width`]).
//!
//! Every global read is clamped to its buffer and every store checked, so the kernel runs
//! without wgpu's runtime checks; `emulated` keys spell the matrix operations in plain WGSL
//! (tests on any f16 device; the 3 x 3 keys of the 16 x 64 and 8 x 128 blocks and the 2 x 2
//! keys of the 256-pixel flat blocks fit lavapipe's 32 KiB of workgroup memory).

use super::{channels_last_input, space_to_depth, weight_copy, OutputStore};
use crate::backend::gpu::conv::coop::dispatch_counted;
use crate::backend::gpu::conv::epilogue::{BoundEpilogue, ConvEpilogueKey};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::same_device;
use crate::backend::gpu::runtime::params::check_view;
use crate::backend::gpu::runtime::params::{kernel_params, word};
use crate::backend::gpu::runtime::storage::{GpuStorage, StorageRef};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

/// Halves between consecutive pixels of the staged patch: 16 channels and 8 of padding (a
/// fragment's 16 rows then fall on distinct memory banks).
pub(super) const PIXEL_STRIDE: usize = 24;

/// Output columns of a workgroup's block: one fragment's rows.
pub(super) const COLUMNS_PER_BLOCK: usize = 16;

/// The output block of one workgroup: output rows x output channels (16 output columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchTile {
    /// 16 output rows x 64 channels: each subgroup two rows, four accumulators a row.
    Rows16Columns64,
    /// 8 output rows x 128 channels: each subgroup one row, eight accumulators.
    Rows8Columns128,
    /// 32 output rows x 64 channels: each subgroup four rows, 16 accumulators (64 pixels x
    /// 64 channels, as the wide matmul's subgroups); 3 x 3 and smaller kernels (a 4 x 4
    /// kernel's patch and weights pass 48 KiB).
    Rows32Columns64,
    /// 512 consecutive pixels of the padded grid (see the module header) x 64 channels: each
    /// subgroup 64 of them, 16 accumulators; padded widths up to 63, 3 x 3 and smaller.
    Flat32Columns64,
    /// 256 consecutive pixels of the padded grid x 64 channels: each subgroup 32, eight
    /// accumulators (a 56 x 56 output in 842 blocks, against 421 of the 512-pixel one);
    /// padded widths up to 63 (its 2 x 2 keys fit 32 KiB).
    Flat16Columns64,
    /// 384 consecutive pixels of the padded grid x 64 channels: each subgroup 48, twelve
    /// accumulators (a 56 x 56 output in 561 blocks: 4.25 rounds of 132 multiprocessors
    /// instead of the 512-pixel block's 3.19 rounded up to 4); padded widths up to 63.
    Flat24Columns64,
    /// 256 consecutive pixels of the padded grid x 128 channels: each subgroup 32, sixteen
    /// accumulators (every A fragment serves eight products); padded widths up to 63 (its
    /// 2 x 2 keys fit 32 KiB).
    Flat16Columns128,
}

impl PatchTile {
    /// Every tile.
    pub const ALL: [PatchTile; 7] = [
        PatchTile::Rows16Columns64,
        PatchTile::Rows8Columns128,
        PatchTile::Rows32Columns64,
        PatchTile::Flat32Columns64,
        PatchTile::Flat16Columns64,
        PatchTile::Flat24Columns64,
        PatchTile::Flat16Columns128,
    ];

    /// Output rows of the block: rows of 16 output columns, or a flat block's runs of 16
    /// consecutive pixels (one fragment each).
    pub fn rows(self) -> usize {
        match self {
            PatchTile::Rows32Columns64 | PatchTile::Flat32Columns64 => 32,
            PatchTile::Flat24Columns64 => 24,
            PatchTile::Rows16Columns64
            | PatchTile::Flat16Columns64
            | PatchTile::Flat16Columns128 => 16,
            PatchTile::Rows8Columns128 => 8,
        }
    }

    /// Output channels of the block.
    pub fn columns(self) -> usize {
        match self {
            PatchTile::Rows16Columns64
            | PatchTile::Rows32Columns64
            | PatchTile::Flat32Columns64
            | PatchTile::Flat16Columns64
            | PatchTile::Flat24Columns64 => 64,
            PatchTile::Rows8Columns128 | PatchTile::Flat16Columns128 => 128,
        }
    }

    /// The widest padded input (`w + 2 * padding`) a flat block computes; `None` for the
    /// blocks of output rows.
    pub fn flat_width(self) -> Option<usize> {
        match self {
            PatchTile::Flat32Columns64
            | PatchTile::Flat16Columns64
            | PatchTile::Flat24Columns64
            | PatchTile::Flat16Columns128 => Some(63),
            PatchTile::Rows16Columns64
            | PatchTile::Rows8Columns128
            | PatchTile::Rows32Columns64 => None,
        }
    }

    /// A short name for tuning keys.
    pub fn name(self) -> &'static str {
        match self {
            PatchTile::Rows16Columns64 => "patch16x64",
            PatchTile::Rows8Columns128 => "patch8x128",
            PatchTile::Rows32Columns64 => "patch32x64",
            PatchTile::Flat32Columns64 => "patchflat32x64",
            PatchTile::Flat16Columns64 => "patchflat16x64",
            PatchTile::Flat24Columns64 => "patchflat24x64",
            PatchTile::Flat16Columns128 => "patchflat16x128",
        }
    }

    /// Halves in a staged weight row (8 of padding).
    pub(super) fn weight_row(self) -> usize {
        self.columns() + 8
    }

    /// Pixels of the staged patch for a `side` x `side` kernel of stride `stride`: (rows,
    /// columns); a flat block's is one run of pixels, as long as its widest padded input
    /// needs.
    pub(super) fn patch(self, side: usize, stride: usize) -> (usize, usize) {
        match self.flat_width() {
            Some(width) => (1, self.rows() * 16 + (side - 1) * (width + 1)),
            None => (
                (self.rows() - 1) * stride + side,
                (COLUMNS_PER_BLOCK - 1) * stride + side,
            ),
        }
    }

    /// Bytes of workgroup memory for a `side` x `side` kernel of stride 1: the patch, one tap
    /// row's weights and eight f32 scratch tiles.
    pub fn workgroup_bytes(self, side: usize) -> u32 {
        self.workgroup_bytes_strided(side, 1)
    }

    /// [`PatchTile::workgroup_bytes`] for a kernel of stride `stride`.
    pub fn workgroup_bytes_strided(self, side: usize, stride: usize) -> u32 {
        let (patch_rows, patch_columns) = self.patch(side, stride);
        let halves = patch_rows * patch_columns * PIXEL_STRIDE + side * 16 * self.weight_row();
        (2 * halves + 8 * 256 * 4) as u32
    }
}

/// Kernel sides the patch kernel is generated for (square kernels).
pub(crate) const SIDES: [usize; 3] = [2, 3, 4];

/// Strides the patch kernel is generated for (the same along both axes).
pub(crate) const STRIDES: [usize; 2] = [1, 2];

/// Whether `tile`'s patch and weights for a `side` x `side` kernel of stride `stride` fit 48
/// KiB of workgroup memory (every device with tensor cores here offers that much).
/// Flat blocks are stride 1 only.
fn fits(tile: PatchTile, side: usize, stride: usize) -> bool {
    (stride == 1 || tile.flat_width().is_none())
        && tile.workgroup_bytes_strided(side, stride) <= 48 * 1024
}

/// One patch convolution kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvPatchKey {
    /// The output block.
    pub tile: PatchTile,
    /// Kernel rows and columns (one of [`SIDES`]).
    pub side: usize,
    /// Stride along both axes: 1, or 2 (the 3 x 3 stride-2 convolutions of a ResNet's
    /// downsampling blocks; the patch's columns staged even ones first, so that a tap's 16
    /// output columns read 16 consecutive staged pixels).
    pub stride: usize,
    /// Scale, shift, residual and activation applied in the store.
    pub epilogue: Option<ConvEpilogueKey>,
    /// How the output is written (`PlanesPacked` where the output width is a multiple of 8).
    pub store: OutputStore,
    /// Plain-WGSL emulation of the matrix operations (tests on any f16 device).
    pub emulated: bool,
}

impl ConvPatchKey {
    /// Every instantiation (the naga catalogue).
    pub(crate) fn all() -> Vec<ConvPatchKey> {
        let epilogues = std::iter::once(None).chain(ConvEpilogueKey::all().into_iter().map(Some));
        let mut keys = Vec::new();
        for epilogue in epilogues {
            for tile in PatchTile::ALL {
                // Blocks whose patch and weights pass 48 KiB at this side and stride run
                // nowhere.
                let geometries = SIDES.into_iter().flat_map(|side| {
                    STRIDES
                        .into_iter()
                        .filter(move |&stride| fits(tile, side, stride))
                        .map(move |stride| (side, stride))
                });
                for (side, stride) in geometries {
                    // A flat block's 8 pixels of a lane may span two rows: no packed planes.
                    let stores = OutputStore::ALL.into_iter().filter(|&store| {
                        tile.flat_width().is_none() || store != OutputStore::PlanesPacked
                    });
                    for store in stores {
                        for emulated in [false, true] {
                            keys.push(ConvPatchKey {
                                tile,
                                side,
                                stride,
                                epilogue,
                                store,
                                emulated,
                            });
                        }
                    }
                }
            }
        }
        keys
    }

    /// The complete WGSL source.
    pub(crate) fn source(self) -> String {
        super::patch_source::source(self)
    }
}

kernel_params! {
    /// The parameters of the patch kernels (binding 0).
    struct ConvPatchParams {
        /// Output channels o.
        out_channels: u32,
        /// Input channels c of the channels-last input (a multiple of 16).
        channels: u32,
        /// Input height.
        height: u32,
        /// Input width.
        width: u32,
        /// Output height.
        out_height: u32,
        /// Output width.
        out_width: u32,
        /// Padding (rows).
        pad_h: u32,
        /// Padding (columns).
        pad_w: u32,
        /// Output blocks across: ow / 16 rounded up.
        blocks_x: u32,
        /// Output blocks per image: blocks down x blocks across.
        blocks: u32,
        /// Output blocks of the whole batch.
        total_blocks: u32,
        /// Stages: channels / 16 x kernel rows.
        stages: u32,
        /// 1: taps are read flipped (`(k - 1 - a, k - 1 - b)`; the input gradient).
        flip: u32,
        /// Images n (flat blocks: pixels of the padded grid past them are not stored).
        batch: u32,
    }
}

/// Whether the patch kernel computes a convolution of this geometry (after the channels-last
/// copy or the space-to-depth rearrangement): stride 1, or 2 where the tile's patch fits,
/// undilated, a square kernel of one of [`SIDES`], channels a multiple of 16, output channels
/// a multiple of the tile's.
pub(crate) fn applies(shape: &Conv2dShape, tile: PatchTile) -> bool {
    let (stride, side) = (shape.stride.0, shape.kernel.0);
    // A flat block: stride 1, its patch within 48 KiB and the padded width within its own.
    let flat = tile.flat_width().is_none_or(|width| {
        stride == 1
            && SIDES.contains(&side)
            && fits(tile, side, stride)
            && shape.input.1 + 2 * shape.padding.1 <= width
    });
    flat && shape.stride.1 == stride
        && STRIDES.contains(&stride)
        && (stride == 1 || fits(tile, side, stride))
        && shape.dilation == (1, 1)
        && shape.kernel.0 == shape.kernel.1
        && SIDES.contains(&shape.kernel.0)
        && shape.channels > 0
        && shape.channels.is_multiple_of(16)
        && shape.out_channels.is_multiple_of(tile.columns())
}

/// Whether the patch kernel with `tile` computes the public forward convolution of the view
/// `layout` with a weight of `weight_layout` (directly, or through the space-to-depth
/// rearrangement of a stride-2 stem: `space_to_depth.rs`), F16 operands assumed.
pub(crate) fn forward_applies(
    layout: &Layout,
    weight_layout: &Layout,
    params: &Conv2dParams,
    tile: PatchTile,
) -> bool {
    if params.groups != 1 || !super::applies(DType::F16, &weight_layout.shape, params) {
        return false;
    }
    let Ok(shape) = Conv2dShape::new(layout, weight_layout, params) else {
        return false;
    };
    if space_to_depth::applies(layout, &weight_layout.shape, params) {
        space_to_depth::rearranged_shape(&shape).is_ok_and(|shape| applies(&shape, tile))
    } else {
        applies(&shape, tile)
    }
}

impl GpuStorage {
    /// The forward convolution of the view `layout` of `self` with `weight` by the patch
    /// kernel with `tile` (`emulated`: the plain-WGSL kernel), `epilogue` in its store:
    /// channels-last copies of both operands (none of an input already channels-last), or the
    /// space-to-depth rearrangement of a stem; the output in `format`; `Ok(None)` where it
    /// does not apply ([`forward_applies`] and the device's limits).
    pub(crate) fn conv2d_patch(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        (tile, emulated, format): (PatchTile, bool, MemoryFormat),
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d (patch, tensor cores)";
        same_device(OP, self, weight)?;
        if self.dtype != DType::F16
            || weight.dtype != DType::F16
            || !forward_applies(layout, weight_layout, params, tile)
        {
            return Ok(None);
        }
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        let stem = space_to_depth::applies(layout, &weight_layout.shape, params);
        let side = if stem {
            space_to_depth::rearranged_shape(&shape)?.kernel.0
        } else {
            shape.kernel.0
        };
        if !self.nhwc_usable(tile.workgroup_bytes(side), emulated) {
            return Ok(None);
        }
        let (input, weight, shape) = if stem {
            let (input, weight, shape) =
                self.space_to_depth_operands((layout, weight, weight_layout), &shape)?;
            (StorageRef::Copied(input), weight, shape)
        } else {
            let channels = shape.channels;
            (
                channels_last_input(self, layout, channels)?,
                weight_copy(weight, weight_layout, [2, 3, 1, 0], channels)?,
                shape,
            )
        };
        let operands = (&*input, &weight, false);
        let run = (tile, emulated, format);
        GpuStorage::conv2d_patch_channels_last(operands, &shape, run, epilogue)
    }

    /// The patch convolution of `shape` over the dense channels-last `input` (`[n, h, w,
    /// c]`, c = `shape.channels`) and `weight` (`[kh, kw, c, o]`, its taps read mirrored
    /// where `flip`) with `epilogue` in its store, the output in `format`; `Ok(None)` where it does not apply
    /// ([`applies`], the device's workgroup memory or grid limits, tensor cores missing
    /// unless emulated, the driver refused it).
    pub(super) fn conv2d_patch_channels_last(
        (input, weight, flip): (&GpuStorage, &GpuStorage, bool),
        shape: &Conv2dShape,
        (tile, emulated, format): (PatchTile, bool, MemoryFormat),
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d (patch, tensor cores)";
        let (side, stride) = (shape.kernel.0, shape.stride.0);
        let bytes = tile.workgroup_bytes_strided(side, stride);
        if !applies(shape, tile) || !input.nhwc_usable(bytes, emulated) {
            return Ok(None);
        }
        let [batch, out_channels, out_height, out_width] = shape.output_shape();
        let blocks_x = out_width.div_ceil(COLUMNS_PER_BLOCK);
        let blocks = blocks_x * out_height.div_ceil(tile.rows());
        let total_blocks = match tile.flat_width() {
            // Blocks of the padded grid up to the last output pixel; every pixel index the
            // kernel forms (up to a patch past the grid) fits 32 bits.
            Some(_) => {
                let (padded_height, padded_width) = (
                    shape.input.0 + 2 * shape.padding.0,
                    shape.input.1 + 2 * shape.padding.1,
                );
                let (patch_rows, patch_columns) = tile.patch(side, stride);
                word(batch * padded_height * padded_width + patch_rows * patch_columns)?;
                let last = (batch.max(1) - 1) * padded_height * padded_width
                    + (out_height.max(1) - 1) * padded_width
                    + out_width;
                last.div_ceil(tile.rows() * 16)
            }
            None => batch * blocks,
        };
        let context = input.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let grid_y = total_blocks.min(max);
        let grid_z = total_blocks.div_ceil(max.max(1));
        if out_channels / tile.columns() > max || grid_z > max {
            return Ok(None);
        }
        let count = batch * out_channels * out_height * out_width;
        let out = GpuStorage::allocate(&input.device, OP, count, input.dtype)?;
        if count == 0 {
            return Ok(Some(out));
        }
        let header = ConvPatchParams {
            out_channels: word(out_channels)?,
            channels: word(shape.channels)?,
            height: word(shape.input.0)?,
            width: word(shape.input.1)?,
            out_height: word(out_height)?,
            out_width: word(out_width)?,
            pad_h: word(shape.padding.0)?,
            pad_w: word(shape.padding.1)?,
            blocks_x: word(blocks_x)?,
            blocks: word(blocks)?,
            total_blocks: word(total_blocks)?,
            stages: word(shape.channels / 16 * side)?,
            flip: u32::from(flip),
            batch: word(batch)?,
        };
        let key = ConvPatchKey {
            tile,
            side,
            stride,
            epilogue: epilogue.map(|e| e.key),
            store: OutputStore::of(
                format,
                out_width.is_multiple_of(8) && tile.flat_width().is_none(),
            ),
            emulated,
        };
        let mut buffers = vec![input.raw()?, weight.raw()?, out.raw()?];
        if let Some(epilogue) = epilogue {
            buffers.extend(epilogue.buffers()?);
        }
        let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&header));
        let grid = (
            (out_channels / tile.columns()) as u32,
            grid_y as u32,
            grid_z as u32,
        );
        let kernel = ConvKernel::ConvPatch(key);
        weight.device.context().prefetch(weight)?;
        let recorded = dispatch_counted(input, (&kernel, emulated), words, &buffers, grid)?;
        Ok(recorded.then_some(out))
    }
}
