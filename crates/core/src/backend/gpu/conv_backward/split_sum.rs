//! The weight gradient's split sum (`KernelKey::Conv2dSplitSum`): the weight-gradient kernels
//! split their GEMM's depth (the output pixels) over `splits` workgroups, each writing one f32
//! block of partial sums; this kernel adds the blocks up, in a fixed order (deterministic),
//! and stores the result in the gradient's dtype — in the block's own order, or permuted from
//! the channels-last GEMM's `[kh, kw, c_padded, o]` to the weight's `[o, c, kh, kw]` with the
//! padding channels cut ([`Permutation`]), so that no copy follows.
//!
//! Why it is laid out so: the early layers' gradients are small (ResNet-18's first 3x3 weight
//! has 36,864 elements) and split about 200 ways, so one invocation per element walking every
//! split left the GPU nearly empty and waiting on one load after another (30 µs on an H200).
//! A workgroup here takes 32 consecutive elements and 8 groups of splits (split `s` to group
//! `s mod 8`): each group's 32 invocations read 128 consecutive bytes a split, the 8 group
//! sums meet in workgroup memory and are added in group order. The permuted stores are
//! scattered, but the gradient is small enough to stay in L2, where they merge.

use crate::backend::gpu::kernels::KernelKey;
use crate::backend::gpu::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::storage::GpuStorage;
use crate::backend::gpu::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;

/// Consecutive elements a workgroup sums.
const ELEMENTS: usize = 32;

kernel_params! {
    /// Parameters of the split-sum kernel.
    struct SplitSumParams {
        /// Elements of one block of partial sums.
        len: u32,
        /// Blocks of partial sums.
        splits: u32,
        /// Output channels `o` of the permuted order; 0: the blocks' own order.
        out_channels: u32,
        /// Input channels `c` kept.
        channels: u32,
        /// Input channels in the blocks (`c` padded).
        padded: u32,
        /// Taps `kh * kw`.
        taps: u32,
    }
}

/// The channels-last weight gradient's order: blocks `[taps, padded, out_channels]`, stored
/// as the weight's `[out_channels, channels, taps]` (channels `channels..padded` dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Permutation {
    pub(crate) out_channels: usize,
    pub(crate) channels: usize,
    pub(crate) padded: usize,
    pub(crate) taps: usize,
}

/// WGSL of `KernelKey::Conv2dSplitSum { dtype }`.
pub(crate) fn split_sum_source(dtype: DType) -> String {
    let mut text = value_header(dtype);
    text.push_str(SplitSumParams::WGSL);
    text.push_str(COMMON);
    text.push_str(SPLIT_SUM);
    text
}

/// The kernel body. Invocation `local`: element `local % 32` of the workgroup's 32, split
/// group `local / 32`.
const SPLIT_SUM: &str = r#"@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> reduced: array<S>;

var<workgroup> group_sums: array<f32, 256>;

// Where element `i` of a block goes: itself, or from [taps, padded, o] to [o, c, taps]
// (0xffffffff: a padding channel, dropped).
fn destination(i: u32) -> u32 {
    let o = params.out_channels;
    if (o == 0u) {
        return i;
    }
    let out_channel = i % o;
    let row = i / o;
    let tap = row / params.padded;
    let channel = row % params.padded;
    if (channel >= params.channels) {
        return 0xffffffffu;
    }
    return (out_channel * params.channels + channel) * params.taps + tap;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let first = (linear_id(workgroup, workgroups, local) / 256u) * 32u;
    let i = first + local % 32u;
    let group = local / 32u;
    let len = params.len;
    let splits = params.splits;
    var total: f32 = 0.0;
    if (i < len) {
        // Splits group, group + 8, ...: two loads in flight per step.
        var s = group;
        for (; s + 8u < splits; s = s + 16u) {
            let a = partials[s * len + i];
            let b = partials[(s + 8u) * len + i];
            total = total + a + b;
        }
        if (s < splits) {
            total = total + partials[s * len + i];
        }
    }
    group_sums[local] = total;
    workgroupBarrier();
    if (local < 32u && i < len) {
        var sum = group_sums[local];
        for (var g = 1u; g < 8u; g = g + 1u) {
            sum = sum + group_sums[g * 32u + local];
        }
        let at = destination(i);
        if (at != 0xffffffffu) {
            reduced[at] = store_value(T(sum));
        }
    }
}
"#;

/// The gradient that `splits` consecutive f32 blocks of `len` partial sums in `partials` add
/// up to, in `dtype`, in a fixed order: `len` elements in the blocks' order, or the weight's
/// `[o, c, kh, kw]` under `permutation`.
pub(crate) fn sum_splits(
    partials: &GpuStorage,
    splits: usize,
    len: usize,
    dtype: DType,
    permutation: Option<Permutation>,
) -> Result<GpuStorage> {
    let numel = match permutation {
        Some(p) => p.out_channels * p.channels * p.taps,
        None => len,
    };
    let out = GpuStorage::allocate(&partials.device, "conv2d_backward_weight", numel, dtype)?;
    let p = permutation.unwrap_or(Permutation {
        out_channels: 0,
        channels: 0,
        padded: 1,
        taps: 0,
    });
    let header = SplitSumParams {
        len: word(len)?,
        splits: word(splits)?,
        out_channels: word(p.out_channels)?,
        channels: word(p.channels)?,
        padded: word(p.padded.max(1))?,
        taps: word(p.taps)?,
    };
    let words = Params::with_header(&header, 0);
    let key = KernelKey::Conv2dSplitSum { dtype };
    let invocations = len.div_ceil(ELEMENTS) * 256;
    GpuStorage::launch(
        &partials.device,
        &key,
        &words,
        &[partials.raw()?, out.raw()?],
        invocations,
    )?;
    Ok(out)
}
