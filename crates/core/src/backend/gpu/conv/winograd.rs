//! Winograd convolution F(m×m, 3×3) for m = 2 and 4 ([`WinogradTile`]): a 3×3, stride-1,
//! undilated convolution computed as (m + 2)² independent matrix products instead of 9 taps
//! per output, 2.25× (m = 2) or 4× (m = 4) fewer multiplications. Each m×m block of outputs
//! ("tile") comes from an (m + 2)² block of the input. For m = 2:
//!
//! `Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A`
//!
//! with `g` a 3×3 filter, `d` the 4×4 input block and the constant matrices
//! `Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]]`, `G = [[1,0,0],[½,½,½],[½,-½,½],[0,0,1]]`,
//! `Aᵀ = [[1,1,1,0],[0,1,-1,-1]]` (a correlation, as deep-learning convolutions are; m = 4
//! takes the 6×6, 6×3 and 4×6 matrices on the points 0, ±1, ±2, ∞ in [`F4`]). Summed
//! over input channels, the elementwise product becomes, for each position `k` of the
//! transformed block, one GEMM: `M[k] = U[k] · V[k]` with `U[k]` the transformed
//! filters `[out_channels, in_channels]` and `V[k]` the transformed input blocks
//! `[in_channels, tiles]`. Three kernels (`ConvKernel::Winograd`, [`WinogradStage`]) do the
//! transforms, generated per variant as straight-line code (no zero coefficients, no local
//! arrays); the GEMMs are one batched `matmul` (so the autotuner picks its kernel).
//!
//! - **Weight**: `U[k][co][ci]` from the filter, read through its strides; with `flip` the
//!   filter is read as `W[ci][co][2 - r][2 - s]`: the input gradient of a stride-1
//!   convolution is the convolution of the output gradient with the flipped, transposed
//!   filter and padding `2 - p` (`conv2d_backward_input_winograd`).
//! - **Input**: `V[k][ci][tile]` for the images of one chunk, zero outside the image; tile
//!   columns are padded to a multiple of 128 (zeros) so the GEMM's operands stay aligned.
//! - **Output**: each m×m output tile from `M[·][co][tile]`, written into the dense
//!   `[n, co, oh, ow]` result (edges of odd sizes skipped).
//!
//! The batch runs in chunks of images whose `V` and `M` together take at most
//! [`CHUNK_BYTES`], so the transient memory stays bounded whatever the batch. F32 and F16
//! (autocast): `U`, `V` and `M` are f32 whatever the operands' dtype, so an F16 convolution
//! reads and writes f16 but rounds only its result (see [`applies`]). Every global
//! access is bounds-checked, so the kernels run without wgpu's runtime checks. The autotuner
//! offers this path next to the implicit-GEMM kernels (`conv/tuning.rs`); tests check it
//! against the CPU on its own.

use std::fmt::Write;

use crate::backend::gpu::conv::epilogue::{
    self as conv_epilogue, finish, BoundEpilogue, ConvEpilogueKey,
};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::Layout;

/// Largest `V` + `M` of one chunk of images, in bytes.
pub(crate) const CHUNK_BYTES: usize = 96 << 20;

/// Tile columns of `V` and `M` are padded to a multiple of this (the aligned matmul's tile).
const COLUMN_ALIGN: usize = 128;

/// The output tile of a Winograd variant: F(2×2, 3×3) or F(4×4, 3×3).
/// The longest channel sum that F(4×4) computes in f32 (see [`WinogradTile::candidates`]).
pub(crate) const F4_F32_MAX_CHANNELS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WinogradTile {
    /// 2×2 outputs from 4×4 inputs: 16 GEMMs, 2.25× fewer multiplications than direct.
    Two,
    /// 4×4 outputs from 6×6 inputs: 36 GEMMs, 4× fewer multiplications; `V` and `M` are
    /// 2.25× the input and output instead of 4×. Its larger transform coefficients round
    /// more (still within the f32 tests' tolerance).
    Four,
}

impl WinogradTile {
    /// Both variants.
    pub(crate) const ALL: [WinogradTile; 2] = [WinogradTile::Two, WinogradTile::Four];

    /// The variants whose error meets the direct convolution's tolerance for a convolution
    /// of `dtype` summing over `channels` (input channels forward, output channels for the
    /// input gradient). F(4×4)'s transforms amplify the rounding of the f32 sums by about
    /// ten: on an H100 its f32 forward over 512 channels was off by 2.2e-4 where the direct
    /// convolution meets 1e-4 · (1 + |y|), so in f32 it serves sums of at most
    /// [`F4_F32_MAX_CHANNELS`] channels (error growing as the square root of the count). F16
    /// operands round far more than that on input: there both variants serve.
    pub(crate) fn candidates(dtype: DType, channels: usize) -> Vec<WinogradTile> {
        WinogradTile::ALL
            .into_iter()
            .filter(|tile| {
                *tile == WinogradTile::Two || dtype == DType::F16 || channels <= F4_F32_MAX_CHANNELS
            })
            .collect()
    }

    /// Outputs per tile side (m).
    fn outputs(self) -> usize {
        match self {
            WinogradTile::Two => 2,
            WinogradTile::Four => 4,
        }
    }

    /// Transformed block side (alpha = m + 2).
    fn alpha(self) -> usize {
        self.outputs() + 2
    }

    fn transforms(self) -> &'static Transforms {
        match self {
            WinogradTile::Two => &F2,
            WinogradTile::Four => &F4,
        }
    }

    /// The autotuner's name of the variant.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WinogradTile::Two => "winograd2",
            WinogradTile::Four => "winograd4",
        }
    }
}

/// The three Winograd kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WinogradStage {
    /// Filters to `U`.
    Weight,
    /// Input blocks to `V`.
    Input,
    /// `M` to output tiles.
    Output,
}

kernel_params! {
    /// Parameters of the three Winograd kernels (each reads the fields it needs).
    struct WinogradParams {
        /// Input channels of the convolution computed.
        in_channels: u32,
        /// Output channels.
        out_channels: u32,
        /// Input height.
        height: u32,
        /// Input width.
        width: u32,
        /// Output height.
        out_height: u32,
        /// Output width.
        out_width: u32,
        /// Zero padding above and below.
        pad_h: u32,
        /// Zero padding left and right.
        pad_w: u32,
        /// Tiles per image along the height.
        tiles_h: u32,
        /// Tiles per image along the width.
        tiles_w: u32,
        /// Images in this chunk.
        images: u32,
        /// The chunk's first image.
        first_image: u32,
        /// Row length of `V` and `M` (the chunk's tiles, padded).
        columns: u32,
        /// Input view offset.
        x_offset: u32,
        /// Input stride of n.
        x_stride_n: u32,
        /// Input stride of c.
        x_stride_c: u32,
        /// Input stride of h.
        x_stride_h: u32,
        /// Input stride of w.
        x_stride_w: u32,
        /// Filter view offset.
        w_offset: u32,
        /// Filter stride of its dim 0.
        w_stride_0: u32,
        /// Filter stride of its dim 1.
        w_stride_1: u32,
        /// Filter stride of its dim 2.
        w_stride_2: u32,
        /// Filter stride of its dim 3.
        w_stride_3: u32,
        /// 1: read the filter flipped and transposed (input gradient).
        flip: u32,
    }
}

/// WGSL of `ConvKernel::Winograd` (after `enable f16;` where needed).
pub(crate) fn source(
    dtype: DType,
    stage: WinogradStage,
    tile: WinogradTile,
    epilogue: Option<ConvEpilogueKey>,
) -> String {
    let mut text = value_header(dtype);
    text.push_str(WinogradParams::WGSL);
    text.push_str(COMMON);
    let transforms = tile.transforms();
    text.push_str(&match stage {
        WinogradStage::Weight => weight_body(transforms),
        WinogradStage::Input => input_body(transforms),
        WinogradStage::Output => output_body(transforms, epilogue),
    });
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<ConvKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        for stage in [
            WinogradStage::Weight,
            WinogradStage::Input,
            WinogradStage::Output,
        ] {
            for tile in WinogradTile::ALL {
                keys.push(ConvKernel::Winograd {
                    dtype,
                    stage,
                    tile,
                    epilogue: None,
                });
            }
        }
        // The forward's fused output transforms.
        for tile in WinogradTile::ALL {
            for epilogue in ConvEpilogueKey::all() {
                keys.push(ConvKernel::Winograd {
                    dtype,
                    stage: WinogradStage::Output,
                    tile,
                    epilogue: Some(epilogue),
                });
            }
        }
    }
}

/// Whether the forward convolution of these operands can run as Winograd: F32 or F16, a
/// 3×3 filter, stride 1, no dilation. F16 operands keep `U`, `V` and `M` in f32: rounded to
/// f16 they lost 1-2% where the output transform subtracts them (measured in tests).
pub(crate) fn applies(dtype: DType, weight_shape: &[usize], params: &Conv2dParams) -> bool {
    matches!(dtype, DType::F32 | DType::F16)
        && weight_shape.len() == 4
        && weight_shape[2] == 3
        && weight_shape[3] == 3
        && params.stride == (1, 1)
        && params.dilation == (1, 1)
        && params.groups == 1
}

/// Whether the input gradient can: what [`applies`] asks, and padding at most 2 (the
/// gradient is a convolution with padding `2 - p`).
pub(crate) fn applies_backward_input(
    dtype: DType,
    weight_shape: &[usize],
    params: &Conv2dParams,
) -> bool {
    applies(dtype, weight_shape, params) && params.padding.0 <= 2 && params.padding.1 <= 2
}

/// The convolution one Winograd run computes: `[n, in_channels, h, w]` into
/// `[n, out_channels, oh, ow]` with a 3×3 filter read through `w_layout` (flipped and
/// transposed where `flip`).
struct Problem<'a> {
    tile: WinogradTile,
    input: &'a GpuStorage,
    input_layout: &'a Layout,
    weight: &'a GpuStorage,
    weight_layout: &'a Layout,
    flip: bool,
    in_channels: usize,
    out_channels: usize,
    padding: (usize, usize),
    output_shape: [usize; 4],
    /// Applied by the output transform (forward only).
    epilogue: Option<&'a BoundEpilogue<'a>>,
}

impl GpuStorage {
    /// The forward convolution by F(2×2, 3×3) or F(4×4, 3×3) (see [`applies`]; an error
    /// otherwise), with the `epilogue` in the output transform where there is one.
    pub(crate) fn conv2d_winograd<'a>(
        &'a self,
        layout: &'a Layout,
        weight: &'a GpuStorage,
        weight_layout: &'a Layout,
        params: &Conv2dParams,
        tile: WinogradTile,
        epilogue: Option<&'a BoundEpilogue<'a>>,
    ) -> Result<GpuStorage> {
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        if !applies(self.dtype, &weight_layout.shape, params) || weight.dtype != self.dtype {
            return Err(Error::invalid(
                "conv2d",
                "the Winograd kernels take F32 or F16 3x3 filters at stride 1",
            ));
        }
        winograd(&Problem {
            tile,
            input: self,
            input_layout: layout,
            weight,
            weight_layout,
            flip: false,
            in_channels: shape.channels,
            out_channels: weight_layout.shape[0],
            padding: params.padding,
            output_shape: shape.output_shape(),
            epilogue,
        })
    }

    /// The input gradient of a stride-1 3×3 convolution by F(2×2, 3×3): `self` is the output
    /// gradient `[n, o, oh, ow]`, `weight` the forward's `[o, c, 3, 3]` (see
    /// [`applies_backward_input`]; an error otherwise).
    pub(crate) fn conv2d_backward_input_winograd(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
        tile: WinogradTile,
    ) -> Result<GpuStorage> {
        let (&[n, c, h, w], &[o, wc, _, _], &[gn, go, _, _]) = (
            input_shape,
            weight_layout.shape.as_slice(),
            layout.shape.as_slice(),
        ) else {
            return Err(Error::invalid(
                "conv2d_backward_input",
                "expects [n, c, h, w] shapes",
            ));
        };
        if !applies_backward_input(self.dtype, &weight_layout.shape, params)
            || weight.dtype != self.dtype
            || wc != c
            || gn != n
            || go != o
        {
            return Err(Error::invalid(
                "conv2d_backward_input",
                "the Winograd kernels take F32 or F16 3x3 filters at stride 1, padding <= 2",
            ));
        }
        winograd(&Problem {
            tile,
            input: self,
            input_layout: layout,
            weight,
            weight_layout,
            flip: true,
            in_channels: o,
            out_channels: c,
            padding: (2 - params.padding.0, 2 - params.padding.1),
            output_shape: [n, c, h, w],
            epilogue: None,
        })
    }
}

fn winograd(problem: &Problem) -> Result<GpuStorage> {
    const OP: &str = "conv2d (Winograd)";
    let input = problem.input;
    let device = &input.device;
    let dtype = input.dtype;
    check_view(OP, problem.input_layout, input.len)?;
    check_view(OP, problem.weight_layout, problem.weight.len)?;
    let [batch, out_channels, out_height, out_width] = problem.output_shape;
    let (in_channels, height, width) = match problem.input_layout.shape.as_slice() {
        &[_, c, h, w] => (c, h, w),
        _ => return Err(Error::invalid(OP, "expects a [n, c, h, w] input")),
    };
    if in_channels != problem.in_channels || out_channels != problem.out_channels {
        return Err(Error::invalid(OP, "channel counts disagree"));
    }
    let out = GpuStorage::allocate(
        device,
        OP,
        batch * out_channels * out_height * out_width,
        dtype,
    )?;
    if in_channels == 0 && problem.epilogue.is_some() {
        return Err(Error::invalid(OP, "no input channels to transform"));
    }
    if out.len == 0 || in_channels == 0 {
        return if out.len == 0 {
            Ok(out)
        } else {
            GpuStorage::full(device, out.len, dtype, 0.0)
        };
    }
    let (m, alpha) = (problem.tile.outputs(), problem.tile.alpha());
    let points = alpha * alpha;
    let (tiles_h, tiles_w) = (out_height.div_ceil(m), out_width.div_ceil(m));
    let tiles_per_image = tiles_h * tiles_w;
    let element = DType::F32.size_in_bytes();
    let image_bytes = points * (in_channels + out_channels) * tiles_per_image * element;
    let images_per_chunk = (CHUNK_BYTES / image_bytes.max(1)).clamp(1, batch);
    let x = problem.input_layout;
    let wl = problem.weight_layout;
    let mut header = WinogradParams {
        in_channels: word(in_channels)?,
        out_channels: word(out_channels)?,
        height: word(height)?,
        width: word(width)?,
        out_height: word(out_height)?,
        out_width: word(out_width)?,
        pad_h: word(problem.padding.0)?,
        pad_w: word(problem.padding.1)?,
        tiles_h: word(tiles_h)?,
        tiles_w: word(tiles_w)?,
        images: 0,
        first_image: 0,
        columns: 0,
        x_offset: word(x.offset)?,
        x_stride_n: word(x.strides[0])?,
        x_stride_c: word(x.strides[1])?,
        x_stride_h: word(x.strides[2])?,
        x_stride_w: word(x.strides[3])?,
        w_offset: word(wl.offset)?,
        w_stride_0: word(wl.strides[0])?,
        w_stride_1: word(wl.strides[1])?,
        w_stride_2: word(wl.strides[2])?,
        w_stride_3: word(wl.strides[3])?,
        flip: u32::from(problem.flip),
    };
    // Transformed filters, [points, out_channels, in_channels].
    let filters = out_channels * in_channels;
    let transformed = GpuStorage::allocate(device, OP, points * filters, DType::F32)?;
    GpuStorage::launch(
        device,
        &ConvKernel::Winograd {
            dtype,
            stage: WinogradStage::Weight,
            tile: problem.tile,
            epilogue: None,
        },
        &Params::with_header(&header, 0),
        &[problem.weight.raw()?, transformed.raw()?],
        filters,
    )?;
    let u_layout = Layout::contiguous(&[points, out_channels, in_channels]);
    let mut first = 0;
    while first < batch {
        let images = images_per_chunk.min(batch - first);
        let tiles = images * tiles_per_image;
        let columns = tiles.next_multiple_of(COLUMN_ALIGN);
        header.images = word(images)?;
        header.first_image = word(first)?;
        header.columns = word(columns)?;
        word(points * in_channels.max(out_channels) * columns)?;
        let words = Params::with_header(&header, 0);
        let blocks = GpuStorage::allocate(device, OP, points * in_channels * columns, DType::F32)?;
        GpuStorage::launch(
            device,
            &ConvKernel::Winograd {
                dtype,
                stage: WinogradStage::Input,
                tile: problem.tile,
                epilogue: None,
            },
            &words,
            &[input.raw()?, blocks.raw()?],
            in_channels * columns,
        )?;
        let products = transformed.matmul(
            &u_layout,
            &blocks,
            &Layout::contiguous(&[points, in_channels, columns]),
        )?;
        drop(blocks);
        let mut buffers = vec![products.raw()?, out.raw()?];
        if let Some(epilogue) = problem.epilogue {
            buffers.extend(epilogue.buffers()?);
        }
        GpuStorage::launch(
            device,
            &ConvKernel::Winograd {
                dtype,
                stage: WinogradStage::Output,
                tile: problem.tile,
                epilogue: problem.epilogue.map(|e| e.key),
            },
            &words,
            &buffers,
            out_channels * tiles,
        )?;
        first += images;
    }
    Ok(out)
}

/// Coefficients of one Winograd variant: `Bᵀ` (alpha × alpha), `G` (alpha × 3), `Aᵀ`
/// (m × alpha).
struct Transforms {
    bt: &'static [&'static [f64]],
    g: &'static [&'static [f64]],
    at: &'static [&'static [f64]],
}

const F2: Transforms = Transforms {
    bt: &[
        &[1.0, 0.0, -1.0, 0.0],
        &[0.0, 1.0, 1.0, 0.0],
        &[0.0, -1.0, 1.0, 0.0],
        &[0.0, 1.0, 0.0, -1.0],
    ],
    g: &[
        &[1.0, 0.0, 0.0],
        &[0.5, 0.5, 0.5],
        &[0.5, -0.5, 0.5],
        &[0.0, 0.0, 1.0],
    ],
    at: &[&[1.0, 1.0, 1.0, 0.0], &[0.0, 1.0, -1.0, -1.0]],
};

const F4: Transforms = Transforms {
    bt: &[
        &[4.0, 0.0, -5.0, 0.0, 1.0, 0.0],
        &[0.0, -4.0, -4.0, 1.0, 1.0, 0.0],
        &[0.0, 4.0, -4.0, -1.0, 1.0, 0.0],
        &[0.0, -2.0, -1.0, 2.0, 1.0, 0.0],
        &[0.0, 2.0, -1.0, -2.0, 1.0, 0.0],
        &[0.0, 4.0, 0.0, -5.0, 0.0, 1.0],
    ],
    g: &[
        &[1.0 / 4.0, 0.0, 0.0],
        &[-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
        &[-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
        &[1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
        &[1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
        &[0.0, 0.0, 1.0],
    ],
    at: &[
        &[1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
        &[0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
        &[0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
        &[0.0, 1.0, -1.0, 8.0, -8.0, 1.0],
    ],
};

/// `sum_k coefficients[k] * names(k)` as a WGSL expression, zero terms left out.
fn combination(coefficients: &[f64], names: impl Fn(usize) -> String) -> String {
    let terms: Vec<String> = coefficients
        .iter()
        .enumerate()
        .filter(|(_, &c)| c != 0.0)
        .map(|(k, &c)| {
            if c == 1.0 {
                names(k)
            } else if c == -1.0 {
                format!("-{}", names(k))
            } else {
                format!("{c:?} * {}", names(k))
            }
        })
        .collect();
    if terms.is_empty() {
        "0.0".into()
    } else {
        terms.join(" + ")
    }
}

/// `left · X · rightᵀ` for the matrix of scalars `{name}_{r}_{c}` (`rows` × `columns`),
/// as `let {out}_{i}_{j}` statements through `let {out}t_{i}_{c}`.
fn sandwich(
    w: &mut String,
    (name, out): (&str, &str),
    left: &[&[f64]],
    right: &[&[f64]],
    columns: usize,
) {
    for (i, row) in left.iter().enumerate() {
        for c in 0..columns {
            let value = combination(row, |r| format!("{name}_{r}_{c}"));
            let _ = writeln!(w, "    let {out}t_{i}_{c} = {value};");
        }
    }
    for i in 0..left.len() {
        for (j, row) in right.iter().enumerate() {
            let value = combination(row, |c| format!("{out}t_{i}_{c}"));
            let _ = writeln!(w, "    let {out}_{i}_{j} = {value};");
        }
    }
}

const MAIN: &str = "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);";

/// Filters to `U[k][co][ci]`, one invocation per (co, ci).
fn weight_body(t: &Transforms) -> String {
    let alpha = t.bt.len();
    let mut w = String::from(
        "@group(0) @binding(1) var<storage, read> winograd_filter: array<S>;
@group(0) @binding(2) var<storage, read_write> winograd_transformed: array<f32>;

fn tap(co: u32, ci: u32, r: u32, s: u32) -> f32 {
    var position = params.w_offset + co * params.w_stride_0 + ci * params.w_stride_1
        + r * params.w_stride_2 + s * params.w_stride_3;
    if (params.flip != 0u) {
        position = params.w_offset + ci * params.w_stride_0 + co * params.w_stride_1
            + (2u - r) * params.w_stride_2 + (2u - s) * params.w_stride_3;
    }
    if (position >= arrayLength(&winograd_filter)) {
        return 0.0;
    }
    return f32(load_value(winograd_filter[position]));
}

",
    );
    w.push_str(MAIN);
    w.push_str(
        "
    let filters = params.out_channels * params.in_channels;
    if (i >= filters) {
        return;
    }
    let co = i / params.in_channels;
    let ci = i % params.in_channels;
",
    );
    for r in 0..3 {
        for c in 0..3 {
            let _ = writeln!(w, "    let g_{r}_{c} = tap(co, ci, {r}u, {c}u);");
        }
    }
    sandwich(&mut w, ("g", "u"), t.g, t.g, 3);
    for a in 0..alpha {
        for b in 0..alpha {
            let _ = writeln!(
                w,
                "    store_at({}u * filters + i, u_{a}_{b});",
                a * alpha + b
            );
        }
    }
    w.push_str("}\n\nfn store_at(position: u32, value: f32) {\n    if (position < arrayLength(&winograd_transformed)) {\n        winograd_transformed[position] = value;\n    }\n}\n");
    w
}

/// Input blocks to `V[k][ci][tile]`, one invocation per (ci, padded tile column).
fn input_body(t: &Transforms) -> String {
    let alpha = t.bt.len();
    let m = t.at.len();
    let mut w = String::from(
        "@group(0) @binding(1) var<storage, read> winograd_image: array<S>;
@group(0) @binding(2) var<storage, read_write> winograd_blocks: array<f32>;

// The input pixel (y, x) of the view, zero outside the image (padding) or past the buffer.
fn pixel(base: u32, y: i32, x: i32) -> f32 {
    if (y < 0 || y >= i32(params.height) || x < 0 || x >= i32(params.width)) {
        return 0.0;
    }
    let position = base + u32(y) * params.x_stride_h + u32(x) * params.x_stride_w;
    if (position >= arrayLength(&winograd_image)) {
        return 0.0;
    }
    return f32(load_value(winograd_image[position]));
}

fn store_at(position: u32, value: f32) {
    if (position < arrayLength(&winograd_blocks)) {
        winograd_blocks[position] = value;
    }
}

",
    );
    w.push_str(MAIN);
    let _ = writeln!(
        w,
        "
    let columns = params.columns;
    if (i >= params.in_channels * columns) {{
        return;
    }}
    let ci = i / columns;
    let column = i % columns;
    let per_image = params.tiles_h * params.tiles_w;
    // Padding columns read nothing (a base past every buffer) and store zeros.
    var base = 0xFFFFFFFFu;
    var y0 = 0i;
    var x0 = 0i;
    if (column < params.images * per_image) {{
        let n = params.first_image + column / per_image;
        let tile = column % per_image;
        y0 = i32((tile / params.tiles_w) * {m}u) - i32(params.pad_h);
        x0 = i32((tile % params.tiles_w) * {m}u) - i32(params.pad_w);
        base = params.x_offset + n * params.x_stride_n + ci * params.x_stride_c;
    }}"
    );
    for r in 0..alpha {
        for c in 0..alpha {
            let _ = writeln!(
                w,
                "    let d_{r}_{c} = select(0.0, pixel(base, y0 + {r}, x0 + {c}), base != 0xFFFFFFFFu);"
            );
        }
    }
    sandwich(&mut w, ("d", "v"), t.bt, t.bt, alpha);
    let _ = writeln!(w, "    let plane = params.in_channels * columns;");
    for a in 0..alpha {
        for b in 0..alpha {
            let _ = writeln!(
                w,
                "    store_at({}u * plane + i, v_{a}_{b});",
                a * alpha + b
            );
        }
    }
    w.push_str("}\n");
    w
}

/// `M[k][co][tile]` to the m×m output tile, one invocation per (co, tile of the chunk), each
/// value through the `epilogue` where there is one.
fn output_body(t: &Transforms, epilogue: Option<ConvEpilogueKey>) -> String {
    let alpha = t.bt.len();
    let m = t.at.len();
    let mut w = String::from(
        "@group(0) @binding(1) var<storage, read> winograd_products: array<f32>;
@group(0) @binding(2) var<storage, read_write> winograd_result: array<S>;

fn product(position: u32) -> f32 {
    if (position >= arrayLength(&winograd_products)) {
        return 0.0;
    }
    return winograd_products[position];
}

",
    );
    w.push_str(&conv_epilogue::declarations(epilogue, 3));
    w.push_str(MAIN);
    w.push_str(
        "
    let per_image = params.tiles_h * params.tiles_w;
    let tiles = params.images * per_image;
    if (i >= params.out_channels * tiles) {
        return;
    }
    let co = i / tiles;
    let column = i % tiles;
    let plane = params.out_channels * params.columns;
    let at = co * params.columns + column;
",
    );
    for a in 0..alpha {
        for b in 0..alpha {
            let _ = writeln!(
                w,
                "    let m_{a}_{b} = product({}u * plane + at);",
                a * alpha + b
            );
        }
    }
    sandwich(&mut w, ("m", "y"), t.at, t.at, alpha);
    let _ = writeln!(
        w,
        "    let n = params.first_image + column / per_image;
    let tile = column % per_image;
    let y0 = (tile / params.tiles_w) * {m}u;
    let x0 = (tile % params.tiles_w) * {m}u;
    let base = (n * params.out_channels + co) * params.out_height * params.out_width;"
    );
    for a in 0..m {
        for b in 0..m {
            let value = finish(epilogue, &format!("y_{a}_{b}"), "co", "position");
            let _ = writeln!(
                w,
                "    if (y0 + {a}u < params.out_height && x0 + {b}u < params.out_width) {{
        let position = base + (y0 + {a}u) * params.out_width + x0 + {b}u;
        if (position < arrayLength(&winograd_result)) {{
            winograd_result[position] = store_value(T({value}));
        }}
    }}"
            );
        }
    }
    w.push_str("}\n");
    w
}

#[cfg(test)]
mod tests;
