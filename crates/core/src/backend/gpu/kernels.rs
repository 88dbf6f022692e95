//! The kernel registry: every compute pipeline is named by a typed [`KernelKey`] (family,
//! dtypes, op, variant), never by a string, and this is the one place that lists the kernel
//! families. Each family lives in its own module with its WGSL source, its parameters
//! (`kernel_params!`, `runtime/params.rs`), its catalogue entries and its launcher:
//!
//! | family | module |
//! |---|---|
//! | `Fill` | `fill/` |
//! | `Prefetch` | `prefetch/` |
//! | `Random` | `random.rs` |
//! | `Unary`, `Binary`, `BinaryScalar`, `Where`, `Copy` | `elementwise/` (vec4 bodies: `elementwise/vector.rs`) |
//! | `Reduce` | `reduce/` |
//! | `Matmul` | `matmul/` (the primitive choosing among the matmuls: `matmul/primitive.rs`) |
//! | `MatmulLarge` | `matmul/large.rs` |
//! | `MatmulDot` | `matmul/dot.rs` |
//! | `MatmulCoop` | `matmul/coop.rs` |
//! | `Conv2d` | `conv/direct.rs` (shared tiles and params: `conv/gemm.rs`) |
//! | `Conv2dBackwardInput`, `Conv2dBackwardWeight`, `Conv2dSplitSum` | `conv/backward.rs` |
//! | `Winograd` | `conv/winograd.rs` |
//! | `ConvCoop` | `conv/coop.rs` |
//! | `ConvNhwc` | `conv/nhwc.rs` |
//! | `ConvPatch` | `conv/nhwc/patch.rs` |
//! | `SpaceToDepth` | `conv/nhwc/space_to_depth.rs` |
//! | `Gather`, `IndexRows`, `ScatterAdd` | `index/` |
//! | `ScatterAddOrdered` | `index/scatter_add_ordered.rs` |
//! | `IndexAddKeys`, `IndexAddSums` | `index/add.rs` |
//! | `SortRows`, `SortGlobal` | `sort/` |
//! | `MaxPool2d`, `MaxPool2dBackward` | `pool/` |
//! | `MaxPool2dVectorized` | `pool/vectorized.rs` |
//! | `MaxPool2dChannelsLast` | `pool/channels_last.rs` |
//! | `Custom` | `custom/` |
//! | `Attention` | `attention/` (WGSL generators: `attention/source.rs`) |
//! | `AttentionCoop` | `attention/coop.rs` (WGSL generator: `attention/coop/source.rs`) |
//! | `AttentionCoopBackward` | `attention/coop/backward.rs` (WGSL generator: `attention/coop/backward/source.rs`) |
//! | `Fused` | `fusion/`, `fusion/source.rs` |
//! | `CopyRows` | `copy/rows.rs` |
//! | `CopyTranspose` | `copy/transpose.rs` |
//! | `BatchNormSums`, `BatchNormInputGrad` | `norm/batch_norm.rs`, `norm/batch_norm_input.rs` |
//! | `SgdStep`, `Unscale` | `optimizer/` |
//!
//! Families build on the shared leaves `runtime/wgsl.rs` (dtype to WGSL types, the value header, op
//! expressions, `common.wgsl`) and `runtime/params.rs`; this module depends on the families only to
//! ask them for a key's source. `kernel_catalog.rs` instantiates every key so that a unit
//! test validates each with naga, no GPU needed.

use crate::backend::gpu::matmul::coop::CoopVariant;
use crate::backend::gpu::runtime::kernel::Kernel;
use crate::dtype::DType;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};

pub use super::elementwise::Access;

/// The identity of one compute pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Write a 32-bit pattern into every word.
    Fill,
    /// Read a buffer into the L2 cache ahead of the kernel that needs it.
    Prefetch,
    /// Counter-based uniform (`normal = false`) or normal draws.
    Random { dtype: DType, normal: bool },
    /// Elementwise unary op.
    Unary {
        dtype: DType,
        op: UnaryOp,
        access: Access,
    },
    /// Elementwise binary op on two views.
    Binary {
        dtype: DType,
        op: BinaryOp,
        access: Access,
    },
    /// Elementwise binary op with a scalar.
    BinaryScalar {
        dtype: DType,
        op: BinaryOp,
        scalar_on_left: bool,
        access: Access,
    },
    /// `where(condition, on_true, on_false)`.
    Where {
        condition: DType,
        dtype: DType,
        access: Access,
    },
    /// Strided copy with dtype conversion (`copy_strided`, `cast`, `copy_into`).
    Copy {
        from: DType,
        to: DType,
        access: Access,
    },
    /// Reduction over a set of dims.
    Reduce { dtype: DType, op: ReduceOp },
    /// Batched tiled matrix product (64 x 64 tiles, any dtype but Bool); `f32_partials`: an
    /// F16 product stored in f32 (the k-slices of a split-K product, added before rounding).
    Matmul { dtype: DType, f32_partials: bool },
    /// Batched float matrix product with 128 x 128 tiles (`matmul/large.rs`); `aligned`: the
    /// vec4, double-buffered variant for shapes and layouts that pass `aligned_applies`.
    MatmulLarge { dtype: DType, aligned: bool },
    /// F16 or F32 product of operands contiguous along k, one dot product per output
    /// (`matmul/dot.rs`): small outputs such as a classifier head.
    MatmulDot { dtype: DType },
    /// F16 batched matrix product on cooperative matrices (tensor cores), f32 accumulation
    /// (`matmul/coop.rs`); `emulated`: the same kernel with the cooperative-matrix operations
    /// written in plain WGSL (tests on devices without them).
    MatmulCoop {
        variant: CoopVariant,
        emulated: bool,
    },
    /// Direct (implicit-GEMM) 2-D convolution, one group, F32 or F16 (`conv/direct.rs`); `wide`: the
    /// 128 x 128 tile instead of 64 x 128 (`conv/gemm.rs`); `epilogue`: applied in the store
    /// (`conv/epilogue.rs`).
    Conv2d {
        dtype: DType,
        wide: bool,
        epilogue: Option<crate::backend::gpu::conv::epilogue::ConvEpilogueKey>,
    },
    /// The convolution's input gradient (implicit-GEMM transposed convolution,
    /// `conv/backward.rs`); `unit_stride`: both strides are 1 (no divisibility test); `wide`:
    /// the 128 x 128 tile.
    Conv2dBackwardInput {
        dtype: DType,
        unit_stride: bool,
        wide: bool,
    },
    /// The convolution's weight gradient (split-K implicit GEMM, `conv/backward.rs`);
    /// `partial`: writes one block of f32 partial sums per split; `wide`: the 128 x 128 tile;
    /// `lean`: the loaders carry their pixel from one k-step to the next, and a column tile
    /// whose second half lies past N multiplies out its first half only
    /// (`conv/backward/weight.rs`).
    Conv2dBackwardWeight {
        dtype: DType,
        partial: bool,
        wide: bool,
        lean: bool,
    },
    /// F16 convolution (forward or a gradient) on cooperative matrices (`conv/coop.rs`).
    ConvCoop(crate::backend::gpu::conv::coop::ConvCoopKey),
    /// F16 forward convolution on cooperative matrices over channels-last copies of its
    /// operands (`conv/nhwc.rs`).
    ConvNhwc(crate::backend::gpu::conv::nhwc::ConvNhwcKey),
    /// F16 stride-1 forward convolution on cooperative matrices, each workgroup's input
    /// patch staged once (`conv/nhwc/patch.rs`).
    ConvPatch(crate::backend::gpu::conv::nhwc::ConvPatchKey),
    /// The stem's 2 x 2 space-to-depth rearrangement of an F16 input
    /// (`conv/nhwc/space_to_depth.rs`), generated for the input's channel count.
    SpaceToDepth { channels: u8 },
    /// F16 convolution weight gradient on cooperative matrices over channels-last copies
    /// (`conv/nhwc/weight.rs`).
    ConvNhwcWeight(crate::backend::gpu::conv::nhwc::ConvNhwcWeightKey),
    /// Sums the weight gradient's f32 partial sums into the storage type.
    Conv2dSplitSum { dtype: DType },
    /// One of the three transforms of the Winograd F(2x2, 3x3) convolution.
    Winograd {
        dtype: DType,
        stage: crate::backend::gpu::conv::winograd::WinogradStage,
        tile: crate::backend::gpu::conv::winograd::WinogradTile,
        /// The forward's epilogue in the output transform (`None` for the other stages).
        epilogue: Option<crate::backend::gpu::conv::epilogue::ConvEpilogueKey>,
    },
    /// `index_select` / `gather`.
    Gather { dtype: DType, index: DType },
    /// `index_select` along the last dim of a dense input (`index_rows.wgsl`).
    IndexRows { dtype: DType, index: DType },
    /// `scatter_add` (atomic adds into a copy of the base).
    ScatterAdd { dtype: DType, index: DType },
    /// `scatter_add` on floats in the CPU's order, for deterministic algorithms.
    ScatterAddOrdered { dtype: DType, index: DType },
    /// `index_add`'s check of the sorted indices (`index/add.rs`).
    IndexAddKeys { index: DType },
    /// `index_add`'s deterministic segmented sums: the chunk pass, or the pass over segments
    /// crossing chunk borders when `crossing` (`index/add.rs`).
    IndexAddSums { dtype: DType, crossing: bool },
    /// `argsort` of rows up to 1024 long inside one workgroup; `key`: the 32-bit dtype the
    /// values were cast to (F32, I32 or U32; `sort/`).
    SortRows { key: DType },
    /// `argsort` of longer rows: one bitonic step per dispatch over storage buffers.
    SortGlobal { key: DType },
    /// 2-D max pooling: one invocation per output element for any window (`window: None`,
    /// `pool/`), or tiles through workgroup memory for one window (`pool/tiled.rs`).
    MaxPool2d {
        dtype: DType,
        window: Option<super::pool::FixedWindow>,
    },
    /// 2-D max pooling forward for a window that halves the image, 16-byte loads over a
    /// contiguous input whose rows are whole vectors (`pool/vectorized.rs`).
    MaxPool2dVectorized {
        dtype: DType,
        window: super::pool::HalvingWindow,
    },
    /// 2-D max pooling forward over a channels-last input into a channels-last output, any
    /// window (`pool/channels_last.rs`).
    MaxPool2dChannelsLast {
        dtype: DType,
        taps: Option<super::pool::UnrolledTaps>,
    },
    /// Batch norm's per-channel statistics or backward sums in one pass (`norm/batch_norm.rs`).
    BatchNormSums {
        dtype: DType,
        backward: bool,
        pass: crate::backend::gpu::norm::batch_norm::SumsPass,
    },
    /// Batch norm's input gradient in one pass, per `vec4` or per element
    /// (`norm/batch_norm_input.rs`).
    BatchNormInputGrad { dtype: DType, vector: bool },
    /// One SGD step in place, with or without a momentum buffer (`optimizer/`).
    SgdStep {
        dtype: DType,
        /// With the momentum buffer's binding and update.
        momentum: bool,
        /// With a U32 flag binding that skips the step where nonzero.
        skip: bool,
    },
    /// Gradient unscaling in place with its inf/NaN flag (`optimizer/`).
    Unscale { dtype: DType },
    /// The dense copy of a view with contiguous rows, `vec4`s at a time (`copy/rows.rs`).
    CopyRows { dtype: DType },
    /// The dense copy of a batch of transposed matrices through tiles (`copy/transpose.rs`);
    /// `paired`: F16 moved two halves per 4-byte access.
    CopyTranspose { dtype: DType, paired: bool },
    /// Softmax or layer normalization over the last dim, one row per `lanes` invocations
    /// (`norm/rows.rs`).
    Rows(crate::backend::gpu::norm::rows::RowKey),
    /// Max pooling's input gradient: the routing pass over the windows, or the gather over
    /// the input elements (`pool/`), or both in one tiled kernel for one window
    /// (`pool/tiled.rs`).
    MaxPool2dBackward {
        dtype: DType,
        pass: super::pool::PoolPass,
    },
    /// A user's kernel (`custom_op::CustomOp::wgsl`): f32 inputs `input0..`, one f32 output,
    /// the user's `fn compute(i: u32) -> f32` per output element (`custom/`).
    Custom {
        inputs: u32,
        source: std::sync::Arc<str>,
    },
    /// One pass of fused scaled dot-product attention (forward or a backward kernel), per
    /// dtype, head and value size and causal flag (`attention/`).
    Attention(super::attention::AttentionKey),
    /// The f16 fused attention forward on cooperative matrices (`attention/coop.rs`).
    AttentionCoop(crate::backend::gpu::attention::coop::CoopForward),
    /// The f16 fused attention backward's key-value and query kernels on cooperative matrices
    /// (`attention/coop/backward.rs`).
    AttentionCoopBackward(crate::backend::gpu::attention::coop::backward::CoopBackward),
    /// A chain of float elementwise ops compiled into one kernel (`fusion/`).
    Fused {
        program: std::sync::Arc<super::fusion::FusedProgram>,
    },
}

impl KernelKey {
    /// A readable name (labels, error messages).
    pub fn name(&self) -> String {
        match self {
            KernelKey::Custom { inputs, .. } => format!("Custom {{ inputs: {inputs} }}"),
            KernelKey::Fused { program } => format!(
                "Fused {{ {:?}, {} instructions, vector: {} }}",
                program.dtype,
                program.instructions.len(),
                program.vector
            ),
            other => format!("{other:?}"),
        }
    }

    /// Whether the kernel is compiled without wgpu's runtime bounds checks (see
    /// `GpuContext::pipeline` for why that is sound for these).
    pub fn is_trusted(&self) -> bool {
        match self {
            // Conv2d bounds-checks every access in the kernel (`conv/direct.rs`), like the matmuls;
            // so do its backward kernels (`conv/backward.rs`).
            KernelKey::Matmul { .. }
            | KernelKey::MatmulLarge { .. }
            | KernelKey::MatmulCoop { .. }
            // The dot kernel reads rows below m, columns clamped below n and vectors below k
            // of views the launcher checked (`matmul/dot.rs`, `GpuStorage::matmul_with`).
            | KernelKey::MatmulDot { .. }
            | KernelKey::ConvCoop(_)
            | KernelKey::ConvNhwc(_)
            | KernelKey::ConvPatch(_)
            | KernelKey::ConvNhwcWeight(_)
            | KernelKey::Conv2d { .. }
            | KernelKey::Conv2dBackwardInput { .. }
            | KernelKey::Conv2dBackwardWeight { .. }
            | KernelKey::Conv2dSplitSum { .. }
            | KernelKey::Winograd { .. }
            // The row kernels clamp every read and write only rows they own (`norm/rows.rs`).
            | KernelKey::Rows(_)
            // The transposing copy clamps every access to its buffer and indexes its tile
            // inside the tile (`copy/transpose.rs`).
            | KernelKey::CopyTranspose { .. }
            // The tiled max pooling checks every position against the image and the output,
            // and indexes workgroup memory inside its regions by construction (`pool/tiled.rs`).
            | KernelKey::MaxPool2d {
                window: Some(_), ..
            }
            | KernelKey::MaxPool2dBackward {
                pass: super::pool::PoolPass::Tiled(_),
                ..
            }
            // The vectorized max pooling reads only rows inside the image of planes inside the
            // view, and vectors inside those rows, for invocations below its count
            // (`pool/vectorized.rs`; `plan` checked that rows are whole vectors).
            | KernelKey::MaxPool2dVectorized { .. }
            // So does its gradient, which also reads the pooled output and its gradient only
            // for windows inside the output and writes only rows inside the image
            // (`pool/halving_backward.rs`).
            | KernelKey::MaxPool2dBackward {
                pass: super::pool::PoolPass::Halving(_),
                ..
            }
            // The channels-last max pooling clamps its reads and writes only below its count
            // (`pool/channels_last.rs`).
            | KernelKey::MaxPool2dChannelsLast { .. }
            // The prefetch reads only vectors below its count, which the launcher takes from
            // the buffer's length (`prefetch/`).
            | KernelKey::Prefetch => true,
            // The hardware attention kernels (`attention/coop/source.rs`,
            // `attention/coop/backward/source.rs`) read dense operands whose lengths the
            // launchers checked (`attention/`: `check_inputs`, `check_operand`, `check_bias`)
            // only for rows below the length they stage, write only rows below the length
            // they own, flags and fold sums inside the buffers the launchers sized for the
            // grid, and index workgroup memory with offsets fixed by the layout and the lane.
            // H200, 8 x 12 x 512 x 64 f16: forward 103.1 -> 101.5, key-value 143.5 -> 139.5,
            // query 97.8 -> 96.2 µs. The emulations (tests only) keep the checks: without
            // them lavapipe's compiler took minutes on the emulated backward (seconds with).
            KernelKey::AttentionCoop(key) => !key.emulated,
            KernelKey::AttentionCoopBackward(key) => !key.emulated,
            KernelKey::Unary { access, .. }
            | KernelKey::Binary { access, .. }
            | KernelKey::BinaryScalar { access, .. }
            | KernelKey::Copy { access, .. } => *access == Access::Vector,
            KernelKey::Fused { program } => program.vector,
            KernelKey::Fill
            | KernelKey::SpaceToDepth { .. }
            | KernelKey::Random { .. }
            | KernelKey::Where { .. }
            | KernelKey::Reduce { .. }
            | KernelKey::Gather { .. }
            | KernelKey::IndexRows { .. }
            | KernelKey::ScatterAdd { .. }
            | KernelKey::ScatterAddOrdered { .. }
            | KernelKey::IndexAddKeys { .. }
            | KernelKey::IndexAddSums { .. }
            | KernelKey::SortRows { .. }
            | KernelKey::SortGlobal { .. }
            | KernelKey::MaxPool2d { .. }
            | KernelKey::MaxPool2dBackward { .. }
            | KernelKey::CopyRows { .. }
            | KernelKey::BatchNormSums { .. }
            | KernelKey::BatchNormInputGrad { .. }
            | KernelKey::SgdStep { .. }
            | KernelKey::Unscale { .. }
            | KernelKey::Attention(_)
            | KernelKey::Custom { .. } => false,
        }
    }

    /// Whether every element of workgroup memory the kernel reads was written by the same
    /// workgroup first (each staged tile is stored whole, zeros where past the operand, before
    /// the barrier that precedes its reads), so that wgpu's zeroing of workgroup memory at the
    /// start of every workgroup can be skipped (on an H200 the tiled max pooling went from
    /// 160 to 142 µs with this and `is_trusted`). Kernels not listed keep the zeroing.
    pub fn writes_workgroup_memory_first(&self) -> bool {
        match self {
            KernelKey::Matmul { .. }
            | KernelKey::MatmulLarge { .. }
            | KernelKey::MatmulCoop { .. }
            | KernelKey::ConvNhwc(_)
            | KernelKey::ConvPatch(_)
            | KernelKey::ConvNhwcWeight(_)
            | KernelKey::CopyTranspose { .. }
            | KernelKey::MaxPool2d {
                window: Some(_), ..
            }
            | KernelKey::MaxPool2dBackward {
                pass: super::pool::PoolPass::Tiled(_),
                ..
            }
            // Staged tiles are stored whole, and the P, dS and scratch tiles are written
            // (every row, every column a fragment reads) before the barrier that precedes their
            // reads (`attention/coop/backward/source.rs`).
            | KernelKey::AttentionCoopBackward(_)
            // So does the forward: Q, K and V staged whole, each subgroup's P rows and scratch
            // written before its barrier, the bias tile and the redo's flag copy stored before
            // the barrier that precedes their reads (`attention/coop/source.rs`).
            | KernelKey::AttentionCoop(_) => true,
            KernelKey::MaxPool2d { window: None, .. }
            | KernelKey::MaxPool2dBackward { .. }
            // No workgroup memory.
            | KernelKey::MaxPool2dVectorized { .. }
            | KernelKey::MaxPool2dChannelsLast { .. }
            | KernelKey::SpaceToDepth { .. }
            | KernelKey::ConvCoop(_)
            | KernelKey::Conv2d { .. }
            | KernelKey::Conv2dBackwardInput { .. }
            | KernelKey::Conv2dBackwardWeight { .. }
            | KernelKey::Conv2dSplitSum { .. }
            | KernelKey::Winograd { .. }
            | KernelKey::Rows(_)
            | KernelKey::Unary { .. }
            | KernelKey::Binary { .. }
            | KernelKey::BinaryScalar { .. }
            | KernelKey::Copy { .. }
            | KernelKey::Fused { .. }
            | KernelKey::MatmulDot { .. }
            | KernelKey::Fill
            | KernelKey::Prefetch
            | KernelKey::Random { .. }
            | KernelKey::Where { .. }
            | KernelKey::Reduce { .. }
            | KernelKey::Gather { .. }
            | KernelKey::IndexRows { .. }
            | KernelKey::ScatterAdd { .. }
            | KernelKey::ScatterAddOrdered { .. }
            | KernelKey::IndexAddKeys { .. }
            | KernelKey::IndexAddSums { .. }
            | KernelKey::SortRows { .. }
            | KernelKey::SortGlobal { .. }
            | KernelKey::CopyRows { .. }
            | KernelKey::BatchNormSums { .. }
            | KernelKey::BatchNormInputGrad { .. }
            | KernelKey::SgdStep { .. }
            | KernelKey::Unscale { .. }
            | KernelKey::Attention(_)
            | KernelKey::Custom { .. } => false,
        }
    }

    /// Whether the kernel touches f16 data (needs `enable f16;` and `SHADER_F16`).
    pub fn uses_f16(&self) -> bool {
        match self {
            KernelKey::Fill
            | KernelKey::Prefetch
            | KernelKey::Custom { .. }
            | KernelKey::SortRows { .. }
            | KernelKey::SortGlobal { .. }
            | KernelKey::IndexAddKeys { .. } => false,
            KernelKey::MatmulCoop { .. }
            | KernelKey::ConvCoop(_)
            | KernelKey::ConvNhwc(_)
            | KernelKey::ConvPatch(_)
            | KernelKey::ConvNhwcWeight(_)
            | KernelKey::SpaceToDepth { .. }
            | KernelKey::AttentionCoop(_)
            | KernelKey::AttentionCoopBackward(_) => true,
            KernelKey::Fused { program } => program.dtype == DType::F16,
            KernelKey::Attention(key) => key.dtype == DType::F16,
            KernelKey::Rows(key) => key.dtype == DType::F16,
            KernelKey::Random { dtype, .. }
            | KernelKey::Unary { dtype, .. }
            | KernelKey::Binary { dtype, .. }
            | KernelKey::BinaryScalar { dtype, .. }
            | KernelKey::Reduce { dtype, .. }
            | KernelKey::Matmul { dtype, .. }
            | KernelKey::MatmulLarge { dtype, .. }
            | KernelKey::MatmulDot { dtype }
            | KernelKey::Conv2d { dtype, .. }
            | KernelKey::Conv2dBackwardInput { dtype, .. }
            | KernelKey::Conv2dBackwardWeight { dtype, .. }
            | KernelKey::Conv2dSplitSum { dtype }
            | KernelKey::Winograd { dtype, .. }
            | KernelKey::Gather { dtype, .. }
            | KernelKey::IndexRows { dtype, .. }
            | KernelKey::ScatterAdd { dtype, .. }
            | KernelKey::ScatterAddOrdered { dtype, .. }
            | KernelKey::MaxPool2d { dtype, .. }
            | KernelKey::MaxPool2dVectorized { dtype, .. }
            | KernelKey::MaxPool2dChannelsLast { dtype, .. }
            | KernelKey::CopyRows { dtype }
            | KernelKey::CopyTranspose { dtype, .. }
            | KernelKey::BatchNormInputGrad { dtype, .. }
            | KernelKey::SgdStep { dtype, .. }
            | KernelKey::Unscale { dtype }
            | KernelKey::BatchNormSums { dtype, .. }
            | KernelKey::MaxPool2dBackward { dtype, .. }
            | KernelKey::IndexAddSums { dtype, .. } => *dtype == DType::F16,
            KernelKey::Where {
                condition, dtype, ..
            } => *condition == DType::F16 || *dtype == DType::F16,
            KernelKey::Copy { from, to, .. } => *from == DType::F16 || *to == DType::F16,
        }
    }

    /// The complete WGSL source of this kernel: `enable f16;` where the kernel needs it, then
    /// the family's text.
    pub fn source(&self) -> String {
        let body = match self {
            // Users' kernels and fused programs write their own first line.
            KernelKey::Custom { inputs, source } => {
                return super::custom::custom_source(*inputs, source)
            }
            KernelKey::Fused { program } => return program.source(),
            // The tensor-core convolutions write their own `enable` lines.
            KernelKey::ConvCoop(key) => return key.source(),
            KernelKey::ConvNhwc(key) => return key.source(),
            KernelKey::ConvPatch(key) => return key.source(),
            KernelKey::SpaceToDepth { channels } => {
                return crate::backend::gpu::conv::nhwc::space_to_depth_source(*channels)
            }
            KernelKey::ConvNhwcWeight(key) => return key.source(),
            KernelKey::AttentionCoop(key) => return key.source(),
            KernelKey::AttentionCoopBackward(key) => return key.source(),
            KernelKey::Fill => super::fill::source(),
            KernelKey::Prefetch => super::prefetch::source(),
            KernelKey::Rows(key) => key.source(),
            KernelKey::CopyRows { dtype } => crate::backend::gpu::copy::rows::source(*dtype),
            KernelKey::CopyTranspose { dtype, paired } => {
                crate::backend::gpu::copy::transpose::source(*dtype, *paired)
            }
            KernelKey::BatchNormInputGrad { dtype, vector } => {
                crate::backend::gpu::norm::batch_norm_input::source(*dtype, *vector)
            }
            KernelKey::SgdStep {
                dtype,
                momentum,
                skip,
            } => crate::backend::gpu::optimizer::source(*dtype, *momentum, *skip),
            KernelKey::Unscale { dtype } => crate::backend::gpu::optimizer::unscale_source(*dtype),
            KernelKey::BatchNormSums {
                dtype,
                backward,
                pass,
            } => crate::backend::gpu::norm::batch_norm::source(*dtype, *backward, *pass),
            KernelKey::Random { dtype, normal } => super::random::source(*dtype, *normal),
            KernelKey::Unary { dtype, op, access } => {
                super::elementwise::unary_source(*dtype, *op, *access)
            }
            KernelKey::Binary { dtype, op, access } => {
                super::elementwise::binary_source(*dtype, *op, *access)
            }
            KernelKey::BinaryScalar {
                dtype,
                op,
                scalar_on_left,
                access,
            } => super::elementwise::binary_scalar_source(*dtype, *op, *scalar_on_left, *access),
            KernelKey::Where {
                condition,
                dtype,
                access,
            } => super::elementwise::where_source(*condition, *dtype, *access),
            KernelKey::Copy { from, to, access } => {
                super::elementwise::copy_source(*from, *to, *access)
            }
            KernelKey::Reduce { dtype, op } => super::reduce::source(*dtype, *op),
            KernelKey::Matmul {
                dtype,
                f32_partials,
            } => super::matmul::source(*dtype, *f32_partials),
            KernelKey::MatmulLarge { dtype, aligned } => {
                crate::backend::gpu::matmul::large::source(*dtype, *aligned)
            }
            KernelKey::MatmulDot { dtype } => crate::backend::gpu::matmul::dot::source(*dtype),
            KernelKey::MatmulCoop { variant, emulated } => {
                crate::backend::gpu::matmul::coop::source_body(*variant, *emulated)
            }
            KernelKey::Conv2d {
                dtype,
                wide,
                epilogue,
            } => crate::backend::gpu::conv::direct::source(*dtype, *wide, *epilogue),
            KernelKey::Conv2dBackwardInput {
                dtype,
                unit_stride,
                wide,
            } => crate::backend::gpu::conv::backward::input_source(*dtype, *unit_stride, *wide),
            KernelKey::Conv2dBackwardWeight {
                dtype,
                partial,
                wide,
                lean,
            } => crate::backend::gpu::conv::backward::weight_source(
                *dtype,
                *partial,
                crate::backend::gpu::conv::backward::WeightKernel {
                    wide: *wide,
                    lean: *lean,
                },
            ),
            KernelKey::Conv2dSplitSum { dtype } => {
                crate::backend::gpu::conv::backward::split_sum_source(*dtype)
            }
            KernelKey::Winograd {
                dtype,
                stage,
                tile,
                epilogue,
            } => crate::backend::gpu::conv::winograd::source(*dtype, *stage, *tile, *epilogue),
            KernelKey::Gather { dtype, index } => {
                crate::backend::gpu::index::gather_source(*dtype, *index, false)
            }
            KernelKey::IndexRows { dtype, index } => {
                crate::backend::gpu::index::gather_source(*dtype, *index, true)
            }
            KernelKey::ScatterAdd { dtype, index } => {
                crate::backend::gpu::index::scatter_add_source(*dtype, *index)
            }
            KernelKey::ScatterAddOrdered { dtype, index } => {
                crate::backend::gpu::index::scatter_add_ordered::source(*dtype, *index)
            }
            KernelKey::IndexAddKeys { index } => {
                crate::backend::gpu::index::add::keys_source(*index)
            }
            KernelKey::IndexAddSums { dtype, crossing } => {
                crate::backend::gpu::index::add::sums_source(*dtype, *crossing)
            }
            KernelKey::SortRows { key } => super::sort::source(*key, false),
            KernelKey::SortGlobal { key } => super::sort::source(*key, true),
            KernelKey::MaxPool2d {
                dtype,
                window: None,
            } => super::pool::source(*dtype, super::pool::PoolPass::Forward),
            KernelKey::MaxPool2d {
                dtype,
                window: Some(window),
            } => super::pool::forward_source(*dtype, *window),
            KernelKey::MaxPool2dVectorized { dtype, window } => {
                super::pool::vectorized_source(*dtype, *window)
            }
            KernelKey::MaxPool2dChannelsLast { dtype, taps } => {
                super::pool::channels_last_source(*dtype, *taps)
            }
            KernelKey::MaxPool2dBackward { dtype, pass } => super::pool::source(*dtype, *pass),
            KernelKey::Attention(key) => key.source(),
        };
        if self.uses_f16() {
            format!("enable f16;\n{body}")
        } else {
            body
        }
    }
}

impl Kernel for KernelKey {
    fn name(&self) -> String {
        KernelKey::name(self)
    }

    fn source(&self) -> String {
        KernelKey::source(self)
    }

    fn is_trusted(&self) -> bool {
        KernelKey::is_trusted(self)
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        KernelKey::writes_workgroup_memory_first(self)
    }
}
