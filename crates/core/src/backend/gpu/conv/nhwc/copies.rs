//! The channels-last copies the tensor-core convolutions read (`conv/nhwc.rs` and its
//! kernels): activations `[n, c, h, w]` copied to `[n, h, w, c]` with the channels padded to a
//! multiple of 8 (16-byte loads of eight channels), and weights to `[kh, kw, c, o]` (or
//! flipped for input gradients), the weights kept between calls while they are unchanged
//! (`conv/weight_cache.rs`), as is an output gradient between a backward's two reads of it.

use super::super::weight_cache::{self, Rearrangement};
use crate::backend::gpu::runtime::storage::{GpuStorage, StorageRef};
use crate::error::Result;
use crate::layout::{Layout, MemoryFormat};

/// The `[n, c, h, w]` view `layout` of `storage` as the channels-last kernels read it,
/// `[n, h, w, padded]` dense from offset 0: the storage itself where it already lies so with
/// no channels to pad (the output of the previous tensor-core convolution), else
/// [`channels_last_copy`]: a kept one where there is one (`conv/weight_cache.rs`), and the one made
/// now kept while `storage` lives and is not written in place if a graph is being recorded (a
/// training forward: its weight gradient reads the same copy); under `no_grad` not kept.
pub(crate) fn channels_last_input<'a>(
    storage: &'a GpuStorage,
    layout: &Layout,
    padded: usize,
) -> Result<StorageRef<'a>> {
    if layout.shape.get(1) == Some(&padded) && MemoryFormat::ChannelsLast.holds(layout) {
        return Ok(StorageRef::Borrowed(storage));
    }
    let keep = crate::grad_mode::is_grad_enabled();
    let copy = kept_copy(storage, layout, ([0, 2, 3, 1], 3, padded), keep)?;
    Ok(StorageRef::Copied(copy))
}

/// [`channels_last_copy`] of a convolution weight `[o, c, kh, kw]` (`order` brings the
/// channel dim to 2), kept for the next call while the weight is unchanged
/// (`conv/weight_cache.rs`).
pub(crate) fn weight_copy(
    weight: &GpuStorage,
    layout: &Layout,
    order: [usize; 4],
    padded: usize,
) -> Result<GpuStorage> {
    kept_copy(weight, layout, (order, 2, padded), true)
}

/// The output gradient, the `[n, o, oh, ow]` view `layout` of `grad`, as the channels-last
/// gradient kernels read it: `[n, oh, ow, padded]` dense. A convolution's backward reads it
/// twice, for the input gradient and then the weight gradient: the copy is kept
/// (`conv/weight_cache.rs`) while `grad` lives and nothing is written in place, so the second read
/// takes the first one's copy instead of transposing the gradient again.
pub(crate) fn gradient_copy(
    grad: &GpuStorage,
    layout: &Layout,
    padded: usize,
) -> Result<GpuStorage> {
    kept_copy(grad, layout, ([0, 2, 3, 1], 3, padded), true)
}

/// [`channels_last_copy`] of the view `layout` of `storage` (`(order, channel_dim, padded)`):
/// the one kept in `conv/weight_cache.rs` if there is one, else made now and, if `keep`, kept
/// there while `storage` lives and nothing is written into it in place.
fn kept_copy(
    storage: &GpuStorage,
    layout: &Layout,
    (order, channel_dim, padded): ([usize; 4], usize, usize),
    keep: bool,
) -> Result<GpuStorage> {
    let rearrangement = Rearrangement::ChannelsLast {
        order,
        channel_dim,
        padded,
    };
    weight_cache::get_or_make_kept((storage, layout), rearrangement, keep, || {
        channels_last_copy(storage, layout, &order, channel_dim, padded)
    })
}

/// Input channels of the channels-last copies: `channels`, or 8 for fewer (an image's 3
/// channels padded with zeros, so that 16 bytes still hold one pixel's channels).
pub(crate) fn padded_channels(channels: usize) -> usize {
    channels.next_multiple_of(8)
}

/// A dense channels-last copy of the view `layout` of `storage` (`order` permutes it so
/// that the channels come where they go) with `channels` padded to `padded` by zeros in the
/// dim `channel_dim` of the permuted view.
pub(crate) fn channels_last_copy(
    storage: &GpuStorage,
    layout: &Layout,
    order: &[usize],
    channel_dim: usize,
    padded: usize,
) -> Result<GpuStorage> {
    let view = layout.permute(order);
    if view.shape[channel_dim] == padded {
        // The pixels a strided 1x1 convolution reads (rows and columns that do not merge)
        // defeat the tiled transposing copy (`copy/transpose.rs`): the generic copy would read
        // them one 32-byte sector an element. A dense copy in their own order first lets the
        // tiled copy transpose that.
        let dense = Layout::contiguous(&layout.shape);
        let copies = storage.device.context().dense_copies();
        let tiled = |source: &Layout| {
            copies.transposes(storage.dtype, source, &Layout::contiguous(&view.shape))
        };
        if !layout.is_contiguous() && !tiled(&view) && tiled(&dense.permute(order)) {
            let compact = storage.copy_strided(layout)?;
            return compact.copy_strided(&dense.permute(order));
        }
        // A weight `[o, c, kh, kw]` to `[kh, kw, c, o]` is no batch of transposes: one tiled
        // transpose to `[c, kh, kw, o]` first (the destination's innermost dim, o, made
        // contiguous), then a copy of whole rows of o into the final order. On an H200 the
        // one generic copy of a 512-channel 3x3 weight took 30 µs; a small weight's (a
        // 64-channel 3x3: 7 µs) is bound by its launch, which two kernels only double.
        if layout.is_contiguous() && layout.numel() >= TRANSPOSE_FIRST_MIN && !tiled(&view) {
            if let Some((first, then)) = transpose_first(order) {
                let step = layout.permute(&first);
                if tiled(&step) {
                    let moved = storage.copy_strided(&step)?;
                    return moved.copy_strided(&Layout::contiguous(&step.shape).permute(&then));
                }
            }
        }
        return storage.copy_strided(&view);
    }
    let mut shape = view.shape.clone();
    shape[channel_dim] = padded;
    let mut target = GpuStorage::full(&storage.device, shape.iter().product(), storage.dtype, 0.0)?;
    let target_view = Layout {
        shape: view.shape.clone(),
        strides: Layout::contiguous(&shape).strides,
        offset: 0,
    };
    storage.copy_into(&view, &mut target, &target_view)?;
    Ok(target)
}

/// The fewest elements a rearrangement takes two copies for ([`transpose_first`]).
const TRANSPOSE_FIRST_MIN: usize = 1 << 18;

/// For a copy into the order `order` (a permutation of a rank-4 source's dims): the order
/// that moves only the destination's innermost source dim to the end, and the permutation
/// that then brings that intermediate into `order`; `None` where that dim is already last
/// (nothing to transpose first).
fn transpose_first(order: &[usize]) -> Option<([usize; 4], [usize; 4])> {
    let &innermost = order.last()?;
    if order.len() != 4 || innermost == 3 {
        return None;
    }
    let mut first = [0; 4];
    for (at, dim) in (0..4).filter(|&dim| dim != innermost).enumerate() {
        first[at] = dim;
    }
    first[3] = innermost;
    let mut then = [0; 4];
    for (slot, wanted) in then.iter_mut().zip(order) {
        *slot = first.iter().position(|dim| dim == wanted)?;
    }
    Some((first, then))
}

#[cfg(test)]
mod tests {
    use super::{channels_last_copy, transpose_first};
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::conv::gemm::testing::{upload, values};
    use crate::backend::tests::support::gpu_device;
    use crate::dtype::DType;
    use crate::layout::Layout;

    /// A weight large enough for the tiled transpose, rearranged both ways the kernels read
    /// weights (forward `[kh, kw, c, o]`, input gradient `[kh, kw, o, c]`), equals the
    /// rearrangement done element by element here.
    #[test]
    fn weight_rearrangements_match_an_element_wise_permutation() {
        let Some(device) = gpu_device() else { return };
        // Above TRANSPOSE_FIRST_MIN elements: the forward order takes two copies.
        let (o, c, kh, kw) = (128, 96, 4, 6);
        assert!(o * c * kh * kw >= super::TRANSPOSE_FIRST_MIN);
        let data = values(o * c * kh * kw, 11, DType::F32);
        let weight = upload(&device, &data, DType::F32);
        let layout = Layout::contiguous(&[o, c, kh, kw]);
        for order in [[2, 3, 1, 0], [2, 3, 0, 1]] {
            let view = layout.permute(&order);
            let copy = channels_last_copy(&weight, &layout, &order, 2, view.shape[2]).unwrap();
            let CpuStorage::F32(actual) = copy.to_cpu().unwrap() else {
                panic!("dtype changed");
            };
            let mut expected = Vec::new();
            for a in 0..view.shape[0] {
                for b in 0..view.shape[1] {
                    for d in 0..view.shape[2] {
                        for e in 0..view.shape[3] {
                            let at = a * view.strides[0]
                                + b * view.strides[1]
                                + d * view.strides[2]
                                + e * view.strides[3];
                            expected.push(data[at]);
                        }
                    }
                }
            }
            let wrong = actual.iter().zip(&expected).position(|(a, e)| a != e);
            assert_eq!(actual.len(), expected.len(), "{order:?}");
            assert_eq!(wrong, None, "{order:?}: first wrong element");
        }
    }

    #[test]
    fn transposes_first_move_the_innermost_dim_last() {
        // [o, c, kh, kw] -> [kh, kw, c, o]: [c, kh, kw, o] first, then (1, 2, 0, 3).
        assert_eq!(
            transpose_first(&[2, 3, 1, 0]),
            Some(([1, 2, 3, 0], [1, 2, 0, 3]))
        );
        // [kh, kw, o, c]: c to the end, then (2, 3, 0, 1) of [o, kh, kw, c].
        assert_eq!(
            transpose_first(&[2, 3, 0, 1]),
            Some(([0, 2, 3, 1], [1, 2, 0, 3]))
        );
        assert_eq!(transpose_first(&[0, 2, 1, 3]), None);
    }
}
