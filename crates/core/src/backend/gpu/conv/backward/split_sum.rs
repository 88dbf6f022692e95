//! The weight gradient's split sum (`ConvKernel::Conv2dSplitSum`): the weight-gradient kernels
//! split their GEMM's depth (the output pixels) over `splits` workgroups, each writing one f32
//! block of partial sums; this kernel adds the blocks up, in a fixed order (deterministic),
//! and stores the result in the gradient's dtype — in the blocks' own order, or permuted from
//! the channels-last GEMM's `[kh, kw, c_padded, o]` to the weight's `[o, c, kh, kw]` with the
//! padding channels cut ([`Permutation`]).
//!
//! Two shapes of work, one kernel (`groups` in its parameters):
//! - **Many splits** (at least [`MANY_SPLITS`]; small gradients: ResNet-18's first 3x3 weight
//!   has 36,864 elements split about 200 ways): one invocation per element walking every split
//!   left the GPU nearly empty, waiting on one load after another (30 µs on an H200). A
//!   workgroup takes 32 elements and 8 groups of splits (split `s` to group `s mod 8`); each
//!   group's 32 invocations read 128 consecutive bytes a split, and the 8 group sums meet in
//!   workgroup memory, added in group order (19 µs). These gradients are small, so the
//!   permutation is done by the stores themselves (scattered).
//! - **Few splits** (large gradients): one invocation per element, 256 a workgroup, and the
//!   permutation by one strided copy after it. Scattered stores and idle groups made the
//!   512-channel 3x3 gradient (2.4 M elements, 4 splits) take 106–116 µs against 15 + 29.

use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

/// Splits from which a workgroup's invocations split the splits (8 groups of 32 elements).
const MANY_SPLITS: usize = 16;

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
        /// Groups of splits a workgroup's invocations form: 1 or 8 (`256 / groups` elements a
        /// workgroup).
        groups: u32,
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

/// WGSL of `ConvKernel::Conv2dSplitSum { dtype }`.
pub(crate) fn split_sum_source(dtype: DType) -> String {
    let mut text = value_header(dtype);
    text.push_str(SplitSumParams::WGSL);
    text.push_str(COMMON);
    text.push_str(SPLIT_SUM);
    text
}

/// The kernel body. Invocation `local`: element `local % E` of the workgroup's
/// `E = 256 / groups`, split group `local / E`.
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
    let groups = params.groups;
    let elements = 256u / groups;
    let first = (linear_id(workgroup, workgroups, local) / 256u) * elements;
    let i = first + local % elements;
    let group = local / elements;
    let len = params.len;
    let splits = params.splits;
    var total: f32 = 0.0;
    if (i < len) {
        // Splits group, group + groups, ...: two loads in flight per step.
        var s = group;
        for (; s + groups < splits; s = s + 2u * groups) {
            let a = partials[s * len + i];
            let b = partials[(s + groups) * len + i];
            total = total + a + b;
        }
        if (s < splits) {
            total = total + partials[s * len + i];
        }
    }
    group_sums[local] = total;
    workgroupBarrier();
    if (local < elements && i < len) {
        var sum = group_sums[local];
        for (var g = 1u; g < groups; g = g + 1u) {
            sum = sum + group_sums[g * elements + local];
        }
        let at = destination(i);
        if (at != 0xffffffffu) {
            reduced[at] = store_value(T(sum));
        }
    }
}
"#;

/// The gradient that `splits` consecutive f32 blocks of `len` partial sums in `partials` add
/// up to, in `dtype`, in a fixed order (see the module header): `len` elements in the blocks'
/// order, or the weight's `[o, c, kh, kw]` under `permutation`.
pub(crate) fn sum_splits(
    partials: &GpuStorage,
    splits: usize,
    len: usize,
    dtype: DType,
    permutation: Option<Permutation>,
) -> Result<GpuStorage> {
    let groups = if splits >= MANY_SPLITS { 8 } else { 1 };
    if let Some(p) = permutation.filter(|_| groups == 1) {
        // Few splits, a large gradient: the blocks' order, then one strided copy.
        let sums = sum_splits(partials, splits, len, dtype, None)?;
        let weight_order = Layout::contiguous(&[p.taps, p.padded, p.out_channels])
            .permute(&[2, 1, 0])
            .narrow(1, 0, p.channels);
        return sums.copy_strided(&weight_order);
    }
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
        groups: word(groups)?,
    };
    let words = Params::with_header(&header, 0);
    let key = ConvKernel::Conv2dSplitSum { dtype };
    let invocations = len.div_ceil(256 / groups) * 256;
    GpuStorage::launch(
        &partials.device,
        &key,
        &words,
        &[partials.raw()?, out.raw()?],
        invocations,
    )?;
    Ok(out)
}
