//! The pooling family's key: [`PoolKernel`] (max pooling forward and gradient, any window
//! or one generated per window), per dtype and variant.

use crate::backend::gpu::pool::{FixedWindow, HalvingWindow, PoolPass, UnrolledTaps};
use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;

/// The identity of one pooling kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum PoolKernel {
    /// 2-D max pooling: one invocation per output element for any window (`window: None`,
    /// `pool/`), or tiles through workgroup memory for one window (`pool/tiled.rs`).
    MaxPool2d {
        dtype: DType,
        window: Option<FixedWindow>,
    },
    /// 2-D max pooling forward for a window that halves the image, 16-byte loads over a
    /// contiguous input whose rows are whole vectors (`pool/vectorized.rs`).
    MaxPool2dVectorized { dtype: DType, window: HalvingWindow },
    /// 2-D max pooling forward over a channels-last input into a channels-last output, any
    /// window (`pool/channels_last.rs`).
    MaxPool2dChannelsLast {
        dtype: DType,
        taps: Option<UnrolledTaps>,
    },
    /// Max pooling's input gradient: the routing pass over the windows, or the gather over
    /// the input elements (`pool/`), or both in one tiled kernel for one window
    /// (`pool/tiled.rs`).
    MaxPool2dBackward { dtype: DType, pass: PoolPass },
}

impl Kernel for PoolKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        let (dtype, body) = match *self {
            PoolKernel::MaxPool2d {
                dtype,
                window: None,
            } => (dtype, super::source(dtype, PoolPass::Forward)),
            PoolKernel::MaxPool2d {
                dtype,
                window: Some(window),
            } => (dtype, super::forward_source(dtype, window)),
            PoolKernel::MaxPool2dVectorized { dtype, window } => {
                (dtype, super::vectorized_source(dtype, window))
            }
            PoolKernel::MaxPool2dChannelsLast { dtype, taps } => {
                (dtype, super::channels_last_source(dtype, taps))
            }
            PoolKernel::MaxPool2dBackward { dtype, pass } => (dtype, super::source(dtype, pass)),
        };
        enable_f16_if(dtype == DType::F16, body)
    }

    fn is_trusted(&self) -> bool {
        match self {
            // The tiled max pooling checks every position against the image and the output,
            // and indexes workgroup memory inside its regions by construction (`pool/tiled.rs`).
            PoolKernel::MaxPool2d {
                window: Some(_), ..
            }
            | PoolKernel::MaxPool2dBackward {
                pass: PoolPass::Tiled(_),
                ..
            }
            // The vectorized max pooling reads only rows inside the image of planes inside the
            // view, and vectors inside those rows, for invocations below its count
            // (`pool/vectorized.rs`; `plan` checked that rows are whole vectors).
            | PoolKernel::MaxPool2dVectorized { .. }
            // So does its gradient, which also reads the pooled output and its gradient only
            // for windows inside the output and writes only rows inside the image
            // (`pool/halving_backward.rs`).
            | PoolKernel::MaxPool2dBackward {
                pass: PoolPass::Halving(_),
                ..
            }
            // The channels-last max pooling clamps its reads and writes only below its count
            // (`pool/channels_last.rs`).
            | PoolKernel::MaxPool2dChannelsLast { .. } => true,
            PoolKernel::MaxPool2d { window: None, .. } | PoolKernel::MaxPool2dBackward { .. } => {
                false
            }
        }
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        matches!(
            self,
            PoolKernel::MaxPool2d {
                window: Some(_),
                ..
            } | PoolKernel::MaxPool2dBackward {
                pass: PoolPass::Tiled(_),
                ..
            }
        )
    }

    fn catalogue() -> Vec<PoolKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype);
        }
        keys
    }
}
