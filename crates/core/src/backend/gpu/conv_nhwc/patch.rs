//! The patch kernel: an f16 stride-1 (or stride-2) convolution on cooperative matrices
//! (tensor cores) that stages each input pixel once per workgroup instead of once per tap.
//!
//! The implicit GEMM (`conv_nhwc.rs`) stages A = the unrolled input, `kh * kw` copies of
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
//!   `conv_epilogue.rs`'s scale, shift, residual and activation when the key has one.
//! - Stages: per block of 16 channels, one stage per tap row `a` (`kh` of them): the patch is
//!   staged at the block's first stage, the weight of the row's `kw` taps (`kw` x 16 x
//!   columns) at every stage; the next stage's loads are held in registers while this one is
//!   multiplied out. Subgroup `s` owns output rows `s * rows / 8 ..` of the block: `rows / 8`
//!   x (columns / 16) accumulators.
//! - Output columns past `ow` (the last column block of a width that 16 does not divide) are
//!   computed from zero or clamped reads and never stored.
//!
//! Every global read is clamped to its buffer and every store checked, so the kernel runs
//! without wgpu's runtime checks; `emulated` keys spell the matrix operations in plain WGSL
//! (tests on any f16 device; the 3 x 3 keys fit lavapipe's 32 KiB of workgroup memory).

use super::super::conv_coop::dispatch_counted;
use super::super::conv_epilogue::{self, BoundEpilogue, ConvEpilogueKey};
use super::super::kernels::KernelKey;
use super::super::matmul_coop::{store_register, Coop};
use super::super::ops::same_device;
use super::super::params::check_view;
use super::super::params::{kernel_params, word, KernelParams};
use super::super::storage::{GpuStorage, StorageRef};
use super::super::wgsl::{value_header, COMMON};
use super::{
    channels_last_input, channels_last_store, space_to_depth, weight_copy, OutputStore, Writer,
    INVOCATIONS,
};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

/// Halves between consecutive pixels of the staged patch: 16 channels and 8 of padding (a
/// fragment's 16 rows then fall on distinct memory banks).
const PIXEL_STRIDE: usize = 24;

/// Output columns of a workgroup's block: one fragment's rows.
const COLUMNS_PER_BLOCK: usize = 16;

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
}

impl PatchTile {
    /// Every tile.
    pub const ALL: [PatchTile; 3] = [
        PatchTile::Rows16Columns64,
        PatchTile::Rows8Columns128,
        PatchTile::Rows32Columns64,
    ];

    /// Output rows of the block.
    pub fn rows(self) -> usize {
        match self {
            PatchTile::Rows32Columns64 => 32,
            PatchTile::Rows16Columns64 => 16,
            PatchTile::Rows8Columns128 => 8,
        }
    }

    /// Output channels of the block.
    pub fn columns(self) -> usize {
        match self {
            PatchTile::Rows16Columns64 | PatchTile::Rows32Columns64 => 64,
            PatchTile::Rows8Columns128 => 128,
        }
    }

    /// A short name for tuning keys.
    pub fn name(self) -> &'static str {
        match self {
            PatchTile::Rows16Columns64 => "patch16x64",
            PatchTile::Rows8Columns128 => "patch8x128",
            PatchTile::Rows32Columns64 => "patch32x64",
        }
    }

    /// Halves in a staged weight row (8 of padding).
    fn weight_row(self) -> usize {
        self.columns() + 8
    }

    /// Pixels of the staged patch for a `side` x `side` kernel of stride `stride`: (rows,
    /// columns).
    fn patch(self, side: usize, stride: usize) -> (usize, usize) {
        (
            (self.rows() - 1) * stride + side,
            (COLUMNS_PER_BLOCK - 1) * stride + side,
        )
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
fn fits(tile: PatchTile, side: usize, stride: usize) -> bool {
    tile.workgroup_bytes_strided(side, stride) <= 48 * 1024
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
                    for store in OutputStore::ALL {
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
        source(self)
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
    }
}

/// Whether the patch kernel computes a convolution of this geometry (after the channels-last
/// copy or the space-to-depth rearrangement): stride 1, or 2 where the tile's patch fits,
/// undilated, a square kernel of one of [`SIDES`], channels a multiple of 16, output channels
/// a multiple of the tile's.
pub(crate) fn applies(shape: &Conv2dShape, tile: PatchTile) -> bool {
    let (stride, side) = (shape.stride.0, shape.kernel.0);
    shape.stride.1 == stride
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
        let total_blocks = batch * blocks;
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
        };
        let key = ConvPatchKey {
            tile,
            side,
            stride,
            epilogue: epilogue.map(|e| e.key),
            store: OutputStore::of(format, out_width.is_multiple_of(8)),
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
        let kernel = KernelKey::ConvPatch(key);
        crate::backend::gpu::prefetch::prefetch(weight)?;
        let recorded = dispatch_counted(input, (&kernel, emulated), words, &buffers, grid)?;
        Ok(recorded.then_some(out))
    }
}

/// The kernel's WGSL source.
fn source(key: ConvPatchKey) -> String {
    let coop = Coop {
        emulated: key.emulated,
    };
    let (side, stride) = (key.side, key.stride);
    let (rows, columns, weight_row) = (key.tile.rows(), key.tile.columns(), key.tile.weight_row());
    let (patch_rows, patch_columns) = key.tile.patch(side, stride);
    // Stride 2 stages the patch's even columns first, then its odd ones: input column `x` of
    // the patch at staged column `(x % 2) * even_columns + x / 2`.
    let even_columns = patch_columns.div_ceil(2);
    let sub_rows = rows / 8; // output rows per subgroup
    let fragments = columns / 16; // accumulators per output row
    let patch_loads_total = patch_rows * patch_columns * 2; // 16-byte loads (8 channels)
    let patch_loads = patch_loads_total.div_ceil(INVOCATIONS);
    let weight_per_row = columns / 8; // 16-byte loads per weight row
    let weight_loads_total = side * 16 * weight_per_row;
    let weight_loads = weight_loads_total.div_ceil(INVOCATIONS);
    let mut w = Writer {
        text: String::from("enable f16;\n"),
    };
    if !key.emulated {
        w.text.push_str(&coop.prelude("input_patch", "taps"));
    }
    w.text.push_str(<ConvPatchParams as KernelParams>::WGSL);
    w.text.push_str(&value_header(DType::F16));
    w.text.push_str(COMMON);
    let _ = std::fmt::Write::write_fmt(
        &mut w.text,
        format_args!(
            "@group(0) @binding(1) var<storage, read> nhwc_input: array<mat2x4<f16>>;
@group(0) @binding(2) var<storage, read> nhwc_weight: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read_write> result: array<{}>;
{}
// One 16 x 16 f32 tile per subgroup: accumulators pass through it to the output.
var<workgroup> scratch: array<f32, 2048>;
// The input patch [{patch_rows}][{patch_columns}] pixels of 16 channels (stride {PIXEL_STRIDE})
// and one tap row's weights [{side} taps][16 channels][{weight_row}].
var<workgroup> input_patch: array<f16, {}>;
var<workgroup> taps: array<f16, {}>;
",
            key.store.result_type(),
            key.store.epilogue_declarations(key.epilogue),
            patch_rows * patch_columns * PIXEL_STRIDE,
            side * 16 * weight_row
        ),
    );
    if key.emulated {
        w.text.push_str(&coop.prelude("input_patch", "taps"));
    }
    let _ = std::fmt::Write::write_fmt(
        &mut w.text,
        format_args!(
            "
@compute @workgroup_size({INVOCATIONS})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>,
        @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{}) {{
",
            coop.subgroup_builtins()
        ),
    );
    if key.emulated {
        w.line(1, "let subgroup = local / 32u;");
        w.line(1, "let lane = local % 32u;");
        w.line(1, "emulated_lane = lane;");
    }
    for line in [
        "let block = workgroup.z * workgroups.y + workgroup.y;".to_string(),
        "if (block >= params.total_blocks) { return; }".into(),
        "let image = block / params.blocks;".into(),
        "let within = block % params.blocks;".into(),
        format!("let oy0 = (within / params.blocks_x) * {rows}u;"),
        format!("let ox0 = (within % params.blocks_x) * {COLUMNS_PER_BLOCK}u;"),
        format!("let column0 = workgroup.x * {columns}u;"),
        format!("let sub_row = subgroup * {sub_rows}u;"),
        "let scratch_at = subgroup * 256u;".into(),
        "let out_channels = params.out_channels;".into(),
        "let c8 = params.channels / 8u;".into(),
        "let input_last = arrayLength(&nhwc_input) - 1u;".into(),
        "let weight_last = arrayLength(&nhwc_weight) - 1u;".into(),
    ] {
        w.line(1, &line);
    }
    // Each patch loader's pixel and half (8 channels) of it, fixed for the whole kernel.
    for p in 0..patch_loads {
        w.line(
            1,
            &format!("let patch_index{p} = local + {}u;", p * INVOCATIONS),
        );
        w.line(
            1,
            &format!(
                "let patch_pixel{p} = min(patch_index{p}, {}u) / 2u;",
                patch_loads_total - 1
            ),
        );
        w.line(
            1,
            &format!("let patch_store{p} = patch_pixel{p} * {PIXEL_STRIDE}u + (patch_index{p} % 2u) * 8u;"),
        );
        w.line(
            1,
            &format!(
                "let iy{p} = i32(oy0 * {stride}u + patch_pixel{p} / {patch_columns}u) - i32(params.pad_h);"
            ),
        );
        // The staged column's input column (even ones first for stride 2).
        let column = match stride {
            2 => format!(
                "select(2u * (patch_pixel{p} % {patch_columns}u - {even_columns}u) + 1u, 2u * (patch_pixel{p} % {patch_columns}u), patch_pixel{p} % {patch_columns}u < {even_columns}u)"
            ),
            _ => format!("patch_pixel{p} % {patch_columns}u"),
        };
        w.line(
            1,
            &format!("let ix{p} = i32(ox0 * {stride}u + {column}) - i32(params.pad_w);"),
        );
        w.line(
            1,
            &format!(
                "let patch_inside{p} = patch_index{p} < {patch_loads_total}u && iy{p} >= 0 && iy{p} < i32(params.height) && ix{p} >= 0 && ix{p} < i32(params.width);"
            ),
        );
        w.line(
            1,
            &format!(
                "let patch_at{p} = ((image * params.height + u32(max(iy{p}, 0))) * params.width + u32(max(ix{p}, 0))) * c8 + patch_index{p} % 2u;"
            ),
        );
        w.line(1, &format!("var pa{p}: mat2x4<f16>;"));
    }
    // Each weight loader's (tap, channel) row and 8 output channels.
    for p in 0..weight_loads {
        w.line(
            1,
            &format!("let weight_index{p} = local + {}u;", p * INVOCATIONS),
        );
        w.line(
            1,
            &format!(
                "let weight_row{p} = min(weight_index{p}, {}u) / {weight_per_row}u;",
                weight_loads_total - 1
            ),
        );
        w.line(
            1,
            &format!(
                "let weight_store{p} = weight_row{p} * {weight_row}u + (weight_index{p} % {weight_per_row}u) * 8u;"
            ),
        );
        w.line(1, &format!("var wb{p}: mat2x4<f16>;"));
    }
    let accumulators: Vec<String> = (0..sub_rows * fragments)
        .map(|t| format!("c{}_{}", t / fragments, t % fragments))
        .collect();
    for c in &accumulators {
        w.line(1, &format!("var {c} = {}();", coop.ty('C')));
    }
    // The loads of stage `stage` into the registers: the patch at a channel block's first
    // tap row, the row's weights always.
    let load = |w: &mut Writer, indent: usize| {
        w.line(indent, &format!("let channel_block = stage / {side}u;"));
        w.line(indent, &format!("let tap_row = stage % {side}u;"));
        w.line(indent, "if (tap_row == 0u) {");
        for p in 0..patch_loads {
            w.line(
                indent + 1,
                &format!(
                    "if (patch_inside{p}) {{ pa{p} = nhwc_input[min(patch_at{p} + channel_block * 2u, input_last)]; }} else {{ pa{p} = mat2x4<f16>(); }}"
                ),
            );
        }
        w.line(indent, "}");
        for p in 0..weight_loads {
            // Row r of the staged weights: tap (tap_row, r / 16), channel block * 16 + r % 16
            // (the tap mirrored where flipped).
            w.line(
                indent,
                &format!(
                    "let weight_tap{p} = select(tap_row * {side}u + weight_row{p} / 16u, ({side}u - 1u - tap_row) * {side}u + {side}u - 1u - weight_row{p} / 16u, params.flip != 0u);"
                ),
            );
            w.line(
                indent,
                &format!(
                    "let weight_at{p} = ((weight_tap{p} * params.channels + channel_block * 16u + weight_row{p} % 16u) * out_channels + column0) / 8u + weight_index{p} % {weight_per_row}u;"
                ),
            );
            w.line(
                indent,
                &format!(
                    "if (weight_index{p} < {weight_loads_total}u) {{ wb{p} = nhwc_weight[min(weight_at{p}, weight_last)]; }}"
                ),
            );
        }
    };
    w.line(1, "{");
    w.line(2, "let stage = 0u;");
    load(&mut w, 2);
    w.line(1, "}");
    w.line(
        1,
        "for (var stage = 0u; stage < params.stages; stage = stage + 1u) {",
    );
    w.line(2, "// Everyone is done reading the previous stage.");
    w.line(2, "workgroupBarrier();");
    w.line(2, &format!("let tap_row = stage % {side}u;"));
    w.line(2, "if (tap_row == 0u) {");
    for p in 0..patch_loads {
        let target = ("input_patch", &*format!("patch_store{p}"), 0);
        if (p + 1) * INVOCATIONS > patch_loads_total {
            w.line(3, &format!("if (patch_index{p} < {patch_loads_total}u) {{"));
            store_register(&mut w.text, "                ", target, &format!("pa{p}"));
            w.line(3, "}");
        } else {
            store_register(&mut w.text, "            ", target, &format!("pa{p}"));
        }
    }
    w.line(2, "}");
    for p in 0..weight_loads {
        let target = ("taps", &*format!("weight_store{p}"), 0);
        if (p + 1) * INVOCATIONS > weight_loads_total {
            w.line(
                2,
                &format!("if (weight_index{p} < {weight_loads_total}u) {{"),
            );
            store_register(&mut w.text, "            ", target, &format!("wb{p}"));
            w.line(2, "}");
        } else {
            store_register(&mut w.text, "        ", target, &format!("wb{p}"));
        }
    }
    w.line(2, "workgroupBarrier();");
    w.line(
        2,
        "// The next stage's loads fly while this one is multiplied out.",
    );
    w.line(2, "if (stage + 1u < params.stages) {");
    w.line(3, "let stage = stage + 1u;");
    load(&mut w, 3);
    w.line(2, "}");
    // The taps of the row: unrolled on hardware; a loop when emulated (lavapipe compiles
    // every inlined emulated product, which grows slow quickly).
    let taps: Vec<String> = if key.emulated {
        w.line(2, &format!("for (var b = 0u; b < {side}u; b = b + 1u) {{"));
        vec!["b".into()]
    } else {
        (0..side).map(|b| format!("{b}u")).collect()
    };
    for b in &taps {
        w.line(2, "{");
        // Output column 0's input column at tap `b` is `b`: its staged column.
        let column = match stride {
            2 => format!("({b} % 2u) * {even_columns}u + {b} / 2u"),
            _ => b.clone(),
        };
        for r in 0..sub_rows {
            let start = format!(
                "(((sub_row + {r}u) * {stride}u + tap_row) * {patch_columns}u + {column}) * {PIXEL_STRIDE}u"
            );
            let fragment = coop.load('A', "input_patch", &start, &format!("{PIXEL_STRIDE}u"));
            w.line(3, &format!("let fa{r} = {fragment};"));
        }
        for j in 0..fragments {
            let start = format!("{b} * {}u + {}u", 16 * weight_row, j * 16);
            let fragment = coop.load('B', "taps", &start, &format!("{weight_row}u"));
            w.line(3, &format!("let fb{j} = {fragment};"));
            for r in 0..sub_rows {
                let c = format!("c{r}_{j}");
                let product = coop.multiply_add(&format!("fa{r}"), &format!("fb{j}"), &c);
                w.line(3, &format!("{c} = {product};"));
            }
        }
        w.line(2, "}");
    }
    if key.emulated {
        w.line(2, "}");
    }
    w.line(1, "}");
    // Epilogue: row-major, lane writes channel `lane % 16` of the 8 output columns
    // `(lane / 16) * 8 ..` of each accumulator's output row segment; channels-last, channels
    // `(lane % 2) * 8 ..+ 8` of output column `lane / 2`.
    w.line(1, "let lane_column = lane % 16u;");
    w.line(1, "let first_x = ox0 + (lane / 16u) * 8u;");
    w.line(1, "let lane_pixel = lane / 2u;");
    w.line(1, "let lane_channel = (lane % 2u) * 8u;");
    for (t, c) in accumulators.iter().enumerate() {
        let (r, j) = (t / fragments, t % fragments);
        w.line(1, &coop.store_scratch(c, "scratch_at"));
        w.line(1, "workgroupBarrier();");
        w.line(1, "{");
        if key.store == OutputStore::ChannelsLast {
            w.line(
                2,
                &format!("let channel = column0 + {}u + lane_channel;", j * 16),
            );
            w.line(2, &format!("let oy = oy0 + sub_row + {r}u;"));
            w.line(2, "let ox = ox0 + lane_pixel;");
            w.line(2, "if (oy < params.out_height && ox < params.out_width) {");
            w.line(
                3,
                "let position = ((image * params.out_height + oy) * params.out_width + ox) * out_channels + channel;",
            );
            let value_at = "scratch_at + lane_pixel * 16u + lane_channel";
            channels_last_store(&mut w, 3, key.epilogue, value_at);
            w.line(2, "}");
            w.line(1, "}");
            w.line(1, "workgroupBarrier();");
            continue;
        }
        w.line(
            2,
            &format!("let channel = column0 + {}u + lane_column;", j * 16),
        );
        w.line(2, &format!("let oy = oy0 + sub_row + {r}u;"));
        w.line(
            2,
            "let row_start = ((image * out_channels + channel) * params.out_height + oy) * params.out_width;",
        );
        w.line(
            2,
            "let value_at = scratch_at + (lane / 16u) * 128u + lane_column;",
        );
        if key.store == OutputStore::PlanesPacked {
            // The 8 columns are all inside the width or all outside (it is a multiple of 8).
            w.line(
                2,
                "if (oy < params.out_height && first_x < params.out_width) {",
            );
            w.line(3, "let position = row_start + first_x;");
            w.line(3, "var packed: mat2x4<f16>;");
            if let Some(load) = conv_epilogue::packed_residual(key.epilogue, "position") {
                w.line(3, &load);
            }
            for x in 0..8 {
                let value = format!("scratch[value_at + {}u]", x * 16);
                w.line(
                    3,
                    &format!(
                        "packed[{}][{}] = f16({});",
                        x / 4,
                        x % 4,
                        conv_epilogue::finish_packed(key.epilogue, &value, "channel", x)
                    ),
                );
            }
            w.line(
                3,
                "result[min(position / 8u, arrayLength(&result) - 1u)] = packed;",
            );
            w.line(2, "}");
        } else {
            w.line(2, "for (var x = 0u; x < 8u; x = x + 1u) {");
            w.line(
                3,
                "if (oy < params.out_height && first_x + x < params.out_width) {",
            );
            w.line(4, "let position = row_start + first_x + x;");
            w.line(4, "let value = scratch[value_at + x * 16u];");
            w.line(
                4,
                &format!(
                    "result[min(position, arrayLength(&result) - 1u)] = f16({});",
                    conv_epilogue::finish(key.epilogue, "value", "channel", "position")
                ),
            );
            w.line(3, "}");
            w.line(2, "}");
        }
        w.line(1, "}");
        w.line(1, "workgroupBarrier();");
    }
    w.line(0, "}");
    w.text
}
