//! The channels-last copies the tensor-core convolutions read (`conv_nhwc.rs` and its
//! kernels): activations `[n, c, h, w]` copied to `[n, h, w, c]` with the channels padded to a
//! multiple of 8 (16-byte loads of eight channels), and weights to `[kh, kw, c, o]` (or
//! flipped for input gradients), the weights kept between calls while they are unchanged
//! (`weight_cache.rs`), as is an output gradient between a backward's two reads of it.

use super::super::copy_transpose::transposed_view;
use super::super::storage::{GpuStorage, StorageRef};
use super::super::weight_cache::{self, Rearrangement};
use crate::error::Result;
use crate::layout::{Layout, MemoryFormat};

/// The `[n, c, h, w]` view `layout` of `storage` as the channels-last kernels read it,
/// `[n, h, w, padded]` dense from offset 0: the storage itself where it already lies so with
/// no channels to pad (the output of the previous tensor-core convolution), else
/// [`channels_last_copy`], kept while `storage` lives and is not written in place
/// (`weight_cache.rs`): a training step's weight gradient reads the forward's copy.
pub(crate) fn channels_last_input<'a>(
    storage: &'a GpuStorage,
    layout: &Layout,
    padded: usize,
) -> Result<StorageRef<'a>> {
    if layout.shape.get(1) == Some(&padded) && MemoryFormat::ChannelsLast.holds(layout) {
        return Ok(StorageRef::Borrowed(storage));
    }
    let copy = kept_copy(storage, layout, [0, 2, 3, 1], 3, padded)?;
    Ok(StorageRef::Copied(copy))
}

/// [`channels_last_copy`] of a convolution weight `[o, c, kh, kw]` (`order` brings the
/// channel dim to 2), kept for the next call while the weight is unchanged
/// (`weight_cache.rs`).
pub(crate) fn weight_copy(
    weight: &GpuStorage,
    layout: &Layout,
    order: [usize; 4],
    padded: usize,
) -> Result<GpuStorage> {
    kept_copy(weight, layout, order, 2, padded)
}

/// The output gradient, the `[n, o, oh, ow]` view `layout` of `grad`, as the channels-last
/// gradient kernels read it: `[n, oh, ow, padded]` dense. A convolution's backward reads it
/// twice, for the input gradient and then the weight gradient: the copy is kept
/// (`weight_cache.rs`) while `grad` lives and nothing is written in place, so the second read
/// takes the first one's copy instead of transposing the gradient again.
pub(crate) fn gradient_copy(
    grad: &GpuStorage,
    layout: &Layout,
    padded: usize,
) -> Result<GpuStorage> {
    kept_copy(grad, layout, [0, 2, 3, 1], 3, padded)
}

/// [`channels_last_copy`] of the view `layout` of `storage`, kept in `weight_cache.rs` while
/// `storage` lives and nothing is written in place.
fn kept_copy(
    storage: &GpuStorage,
    layout: &Layout,
    order: [usize; 4],
    channel_dim: usize,
    padded: usize,
) -> Result<GpuStorage> {
    let rearrangement = Rearrangement::ChannelsLast {
        order,
        channel_dim,
        padded,
    };
    weight_cache::get_or_make((storage, layout), rearrangement, || {
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
        // defeat the tiled transposing copy (`copy_transpose.rs`): the generic copy would read
        // them one 32-byte sector an element. A dense copy in their own order first lets the
        // tiled copy transpose that.
        let dense = Layout::contiguous(&layout.shape);
        let tiled = |source: &Layout| {
            transposed_view(storage.dtype, source, &Layout::contiguous(&view.shape)).is_some()
        };
        if !layout.is_contiguous() && !tiled(&view) && tiled(&dense.permute(order)) {
            let compact = storage.copy_strided(layout)?;
            return compact.copy_strided(&dense.permute(order));
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
