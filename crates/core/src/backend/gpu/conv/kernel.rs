//! The convolution family's key: [`ConvKernel`] (direct, backward, Winograd, tensor-core,
//! channels-last and depthwise kernels), per dtype and variant.

use crate::backend::gpu::conv::backward::WeightKernel;
use crate::backend::gpu::conv::coop::ConvCoopKey;
use crate::backend::gpu::conv::depthwise::DepthwisePass;
use crate::backend::gpu::conv::epilogue::ConvEpilogueKey;
use crate::backend::gpu::conv::nhwc::{
    ConvNhwcKey, ConvNhwcWeightKey, ConvPatchKey, SPACE_TO_DEPTH_CHANNELS,
};
use crate::backend::gpu::conv::winograd::{WinogradStage, WinogradTile};
use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one convolution kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ConvKernel {
    /// Direct (implicit-GEMM) 2-D convolution, one group, F32 or F16 (`conv/direct.rs`); `wide`: the
    /// 128 x 128 tile instead of 64 x 128 (`conv/gemm.rs`); `epilogue`: applied in the store
    /// (`conv/epilogue.rs`).
    Conv2d {
        dtype: DType,
        wide: bool,
        epilogue: Option<ConvEpilogueKey>,
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
    ConvCoop(ConvCoopKey),
    /// F16 forward convolution on cooperative matrices over channels-last copies of its
    /// operands (`conv/nhwc.rs`).
    ConvNhwc(ConvNhwcKey),
    /// F16 stride-1 forward convolution on cooperative matrices, each workgroup's input
    /// patch staged once (`conv/nhwc/patch.rs`).
    ConvPatch(ConvPatchKey),
    /// The stem's 2 x 2 space-to-depth rearrangement of an F16 input
    /// (`conv/nhwc/space_to_depth.rs`), generated for the input's channel count.
    SpaceToDepth { channels: u8 },
    /// F16 convolution weight gradient on cooperative matrices over channels-last copies
    /// (`conv/nhwc/weight.rs`).
    ConvNhwcWeight(ConvNhwcWeightKey),
    /// Sums the weight gradient's f32 partial sums into the storage type.
    Conv2dSplitSum { dtype: DType },
    /// The depthwise convolution (groups == channels) or one of its gradients
    /// (`conv/depthwise.rs`).
    Depthwise { dtype: DType, pass: DepthwisePass },
    /// One of the three transforms of the Winograd F(2x2, 3x3) convolution.
    Winograd {
        dtype: DType,
        stage: WinogradStage,
        tile: WinogradTile,
        /// The forward's epilogue in the output transform (`None` for the other stages).
        epilogue: Option<ConvEpilogueKey>,
    },
}

impl Kernel for ConvKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        let (dtype, body) = match *self {
            // The tensor-core and channels-last kernels write their own `enable` lines.
            ConvKernel::ConvCoop(key) => return key.source(),
            ConvKernel::ConvNhwc(key) => return key.source(),
            ConvKernel::ConvPatch(key) => return key.source(),
            ConvKernel::ConvNhwcWeight(key) => return key.source(),
            ConvKernel::SpaceToDepth { channels } => {
                return super::nhwc::space_to_depth_source(channels)
            }
            ConvKernel::Conv2d {
                dtype,
                wide,
                epilogue,
            } => (dtype, super::direct::source(dtype, wide, epilogue)),
            ConvKernel::Conv2dBackwardInput {
                dtype,
                unit_stride,
                wide,
            } => (
                dtype,
                super::backward::input_source(dtype, unit_stride, wide),
            ),
            ConvKernel::Conv2dBackwardWeight {
                dtype,
                partial,
                wide,
                lean,
            } => (
                dtype,
                super::backward::weight_source(dtype, partial, WeightKernel { wide, lean }),
            ),
            ConvKernel::Depthwise { dtype, pass } => (dtype, super::depthwise::source(dtype, pass)),
            ConvKernel::Conv2dSplitSum { dtype } => {
                (dtype, super::backward::split_sum_source(dtype))
            }
            ConvKernel::Winograd {
                dtype,
                stage,
                tile,
                epilogue,
            } => (dtype, super::winograd::source(dtype, stage, tile, epilogue)),
        };
        enable_f16_if(dtype == DType::F16, body)
    }

    /// Conv2d bounds-checks every access in the kernel (`conv/direct.rs`), like the matmuls;
    /// so do its backward kernels (`conv/backward.rs`), Winograd's transforms and the
    /// tensor-core kernels. The space-to-depth rearrangement and the depthwise kernels (one
    /// element an invocation, their reads bounded only by the host's view checks) keep the
    /// checks.
    fn is_trusted(&self) -> bool {
        !matches!(
            self,
            ConvKernel::SpaceToDepth { .. } | ConvKernel::Depthwise { .. }
        )
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        matches!(
            self,
            ConvKernel::ConvNhwc(_) | ConvKernel::ConvPatch(_) | ConvKernel::ConvNhwcWeight(_)
        )
    }

    fn catalogue() -> Vec<ConvKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::direct::catalogue(&mut keys, dtype);
            super::backward::catalogue(&mut keys, dtype);
            super::winograd::catalogue(&mut keys, dtype);
            super::depthwise::catalogue(&mut keys, dtype);
        }
        keys.extend(ConvCoopKey::all().into_iter().map(ConvKernel::ConvCoop));
        keys.extend(ConvNhwcKey::all().into_iter().map(ConvKernel::ConvNhwc));
        keys.extend(ConvPatchKey::all().into_iter().map(ConvKernel::ConvPatch));
        for channels in SPACE_TO_DEPTH_CHANNELS {
            keys.push(ConvKernel::SpaceToDepth { channels });
        }
        keys.extend(
            ConvNhwcWeightKey::all()
                .into_iter()
                .map(ConvKernel::ConvNhwcWeight),
        );
        keys
    }
}
