//! Convolution weights rearranged for the channels-last kernels, kept for the next call (and
//! an output gradient's channels-last copy, which a convolution's backward reads twice:
//! `conv_nhwc::gradient_copy`).
//!
//! The tensor-core convolutions read their weight as `[kh, kw, c, o]` (forward; the input
//! gradient's flipped taps as `[kh, kw, o, c]`; the stem's space-to-depth form), a copy of the
//! `[o, c, kh, kw]` parameter. Made on every call, those copies took 19 kernels and about 0.4
//! ms of ResNet-18's 3.4 ms autocast forward on the H200 (`anygrad profile resnet18
//! --amp`). Between two optimizer steps — every inference call — the parameter is the same,
//! so the rearrangement is made once and kept here (one list for every device: a cache inside
//! the device's context would deepen its type past what the compiler proves `Sync` by
//! default).
//!
//! An entry is keyed by its source storage's token (`GpuStorage::loan`, unique per storage
//! and never reused), the source's view and what was made of it ([`Rearrangement`]). It is
//! valid while the source lives (a `Weak` of the token) and nothing was written into the
//! source in place since it was made (`crate::mutation::write_log`: the one path for in-place
//! writes records which storage it wrote). Dead and stale entries are dropped at every lookup,
//! the oldest beyond [`CAPACITY`]; `empty_cache` drops a device's. A training step's optimizer
//! writes every weight, so there each weight's entry serves the step's later calls (the
//! forward's weight is made again for the next step) and costs nothing but its memory until
//! then.
//!
//! Activations are kept too: a convolution's forward copies a row-major input channels-last
//! (`conv_nhwc::channels_last_input`), and its weight gradient reads the same copy while the
//! input lives (autograd keeps it for the backward) — one transpose of each input a training
//! step instead of two, at the price of holding the copies from forward to backward (about
//! 250 MB for ResNet-18 at batch 64). Batch norm's in-place running statistics between them
//! write other storages, so they no longer discard the copies. Only a forward that records a
//! graph keeps its copy: under `no_grad` (inference) the copy is made for the call and dropped.

use std::sync::{Arc, Mutex, Weak};

use crate::backend::gpu::runtime::buffers::BufferSlot;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::parts::Parts;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::mutation::{mutation_epoch, write_log};

/// Entries kept (all devices) (a ResNet-50 has 53 convolutions; training adds the input
/// gradient's forms).
const CAPACITY: usize = 160;

/// What was made of a weight: a channels-last copy (`conv_nhwc::channels_last_copy`'s
/// order, channel dim and padded channels) or the stem's space-to-depth form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rearrangement {
    ChannelsLast {
        order: [usize; 4],
        channel_dim: usize,
        padded: usize,
    },
    /// `[Kh, Kw, channels, o]` of the space-to-depth convolution, for this geometry
    /// (`conv/nhwc/space_to_depth.rs`: kernel, padding and input sizes decide it).
    SpaceToDepth { geometry: [usize; 6] },
}

struct Entry {
    source: Weak<u64>,
    token: u64,
    /// The device's ordinal.
    device: usize,
    layout: Layout,
    rearrangement: Rearrangement,
    epoch: u64,
    made: Made,
}

/// A rearranged weight as the cache keeps it: its buffer and token without the device handle
/// (the device owns the cache: a handle here would keep it alive forever).
struct Made {
    slot: BufferSlot,
    loan: Arc<u64>,
    dtype: DType,
    len: usize,
    parts: Option<Arc<Parts>>,
}

impl Made {
    fn keep(storage: &GpuStorage) -> Made {
        Made {
            slot: Arc::clone(&storage.slot),
            loan: Arc::clone(&storage.loan),
            dtype: storage.dtype,
            len: storage.len,
            parts: storage.parts.clone(),
        }
    }

    /// Another handle on the kept buffer (same token: the same storage to deferred work);
    /// nobody writes these in place.
    fn storage(&self, device: &GpuDevice) -> GpuStorage {
        GpuStorage {
            slot: Arc::clone(&self.slot),
            loan: Arc::clone(&self.loan),
            dtype: self.dtype,
            len: self.len,
            device: device.clone(),
            parts: self.parts.clone(),
        }
    }
}

/// Every device's rearranged weights.
static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The `rearrangement` of the view `layout` of `source`: kept from an earlier call, or made
/// by `make` now (and kept).
pub(crate) fn get_or_make(
    source: (&GpuStorage, &Layout),
    rearrangement: Rearrangement,
    make: impl FnOnce() -> Result<GpuStorage>,
) -> Result<GpuStorage> {
    get_or_make_kept(source, rearrangement, true, make)
}

/// [`get_or_make`], keeping what `make` made only if `keep`.
pub(crate) fn get_or_make_kept(
    (source, layout): (&GpuStorage, &Layout),
    rearrangement: Rearrangement,
    keep: bool,
    make: impl FnOnce() -> Result<GpuStorage>,
) -> Result<GpuStorage> {
    let token = *source.loan;
    let epoch = mutation_epoch();
    {
        let mut entries = ENTRIES.lock().unwrap_or_else(|p| p.into_inner());
        // Dead and stale entries go (a dropped buffer only goes back to the pool).
        let log = write_log();
        entries.retain(|entry| {
            entry.source.strong_count() > 0 && !log.written_since(entry.token, entry.epoch)
        });
        drop(log);
        if let Some(entry) = entries.iter().find(|entry| {
            entry.token == token && entry.rearrangement == rearrangement && entry.layout == *layout
        }) {
            return Ok(entry.made.storage(&source.device));
        }
    }
    let made = make()?;
    if !keep {
        return Ok(made);
    }
    let mut entries = ENTRIES.lock().unwrap_or_else(|p| p.into_inner());
    // The source written in place while it was made: do not keep it.
    if !write_log().written_since(token, epoch) {
        if entries.len() >= CAPACITY {
            entries.remove(0);
        }
        entries.push(Entry {
            source: Arc::downgrade(&source.loan),
            token,
            device: source.device.ordinal(),
            layout: layout.clone(),
            rearrangement,
            epoch,
            made: Made::keep(&made),
        });
    }
    Ok(made)
}

/// Drop the entries of device `ordinal` (`empty_cache`).
pub(crate) fn clear(ordinal: usize) {
    ENTRIES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|entry| entry.device != ordinal);
}

/// Whether an entry made from the storage with token `token` is kept.
#[cfg(test)]
fn holds(token: u64) -> bool {
    let entries = ENTRIES.lock().unwrap_or_else(|p| p.into_inner());
    entries.iter().any(|entry| entry.token == token)
}
#[cfg(test)]
mod tests {
    use crate::backend::gpu::conv::gemm::testing::{upload, values};
    use crate::backend::gpu::conv::nhwc::{
        channels_last_copy, channels_last_input, gradient_copy, weight_copy,
    };
    use crate::backend::tests::support::gpu_device;
    use crate::dtype::DType;
    use crate::layout::Layout;
    use crate::mutation::{mutation_epoch, note_unknown_write, note_write};
    use std::sync::{Arc, Mutex};

    /// Held by the tests that mark every kept copy stale (`note_unknown_write`) and those
    /// that assert a copy survives, so that the one does not run inside the other.
    static STALENESS: Mutex<()> = Mutex::new(());

    /// A rearranged weight is kept while its source lives and nothing is written in place,
    /// made again after a write, and dropped with its source; it equals the plain copy.
    /// Other tests share the device and the epoch, so a hit is asserted only between two
    /// calls the epoch did not change across.
    #[test]
    fn rearranged_weights_are_kept_until_written_or_dropped() {
        let Some(device) = gpu_device() else { return };
        let _serial = STALENESS.lock().unwrap_or_else(|p| p.into_inner());
        let layout = Layout::contiguous(&[6, 5, 3, 3]);
        let weight = upload(&device, &values(6 * 5 * 9, 1, DType::F32), DType::F32);
        let plain = channels_last_copy(&weight, &layout, &[2, 3, 1, 0], 2, 8).unwrap();
        let mut hits = 0;
        for _ in 0..20 {
            let before = mutation_epoch();
            let first = weight_copy(&weight, &layout, [2, 3, 1, 0], 8).unwrap();
            let second = weight_copy(&weight, &layout, [2, 3, 1, 0], 8).unwrap();
            if mutation_epoch() == before {
                assert!(Arc::ptr_eq(&first.slot, &second.slot), "not kept");
                hits += 1;
                break;
            }
        }
        assert_eq!(hits, 1, "the epoch changed under every attempt");
        let kept = weight_copy(&weight, &layout, [2, 3, 1, 0], 8).unwrap();
        assert_eq!(kept.to_cpu().unwrap(), plain.to_cpu().unwrap());
        // Another rearrangement of the same weight is its own entry.
        let flipped = weight_copy(&weight, &layout, [2, 3, 0, 1], 8).unwrap();
        assert!(!Arc::ptr_eq(&kept.slot, &flipped.slot));
        // A write in place into another storage: still kept (another test may write this
        // one's token only through `note_write` of its own storages, never this weight's).
        let other_storage = upload(&device, &values(4, 5, DType::F32), DType::F32);
        note_write(Some(*other_storage.loan));
        let after_other = weight_copy(&weight, &layout, [2, 3, 1, 0], 8).unwrap();
        assert!(
            Arc::ptr_eq(&kept.slot, &after_other.slot),
            "dropped by another write"
        );
        // A write into the weight: made again.
        note_write(Some(*weight.loan));
        let after_write = weight_copy(&weight, &layout, [2, 3, 1, 0], 8).unwrap();
        assert!(!Arc::ptr_eq(&kept.slot, &after_write.slot));
        assert_eq!(after_write.to_cpu().unwrap(), plain.to_cpu().unwrap());
        // A write into a storage not named: everything made before is stale.
        note_unknown_write();
        let after_unknown = weight_copy(&weight, &layout, [2, 3, 1, 0], 8).unwrap();
        assert!(!Arc::ptr_eq(&after_write.slot, &after_unknown.slot));
        // The source dropped: its entries go at the next lookup.
        let token = *weight.loan;
        drop(weight);
        let other = upload(&device, &values(4, 2, DType::F32), DType::F32);
        weight_copy(&other, &Layout::contiguous(&[1, 1, 2, 2]), [2, 3, 1, 0], 1).unwrap();
        assert!(!super::holds(token));
        // `empty_cache` drops them all.
        super::clear(device.ordinal());
        assert!(!super::holds(*other.loan));
    }

    /// An output gradient's channels-last copy (read by a backward's input and weight
    /// gradients) is kept between the two reads, equals the plain copy, and goes with its
    /// source.
    #[test]
    fn gradient_copies_are_kept_between_reads() {
        let Some(device) = gpu_device() else { return };
        let _serial = STALENESS.lock().unwrap_or_else(|p| p.into_inner());
        let layout = Layout::contiguous(&[2, 16, 3, 5]);
        let grad = upload(&device, &values(2 * 16 * 15, 3, DType::F32), DType::F32);
        let plain = channels_last_copy(&grad, &layout, &[0, 2, 3, 1], 3, 16).unwrap();
        let mut hits = 0;
        for _ in 0..20 {
            let before = mutation_epoch();
            let first = gradient_copy(&grad, &layout, 16).unwrap();
            let second = gradient_copy(&grad, &layout, 16).unwrap();
            if mutation_epoch() == before {
                assert!(Arc::ptr_eq(&first.slot, &second.slot), "not kept");
                assert_eq!(second.to_cpu().unwrap(), plain.to_cpu().unwrap());
                hits += 1;
                break;
            }
        }
        assert_eq!(hits, 1, "the epoch changed under every attempt");
        let token = *grad.loan;
        drop(grad);
        let other = upload(&device, &values(4, 2, DType::F32), DType::F32);
        gradient_copy(&other, &Layout::contiguous(&[1, 1, 2, 2]), 1).unwrap();
        assert!(!super::holds(token));
    }

    /// A row-major activation's channels-last copy (a convolution's forward input) is kept
    /// for the weight gradient's read across writes into other storages (batch norm's running
    /// statistics), equals the plain copy, and goes with the activation.
    #[test]
    fn activation_copies_are_kept_from_forward_to_weight_gradient() {
        let Some(device) = gpu_device() else { return };
        let _serial = STALENESS.lock().unwrap_or_else(|p| p.into_inner());
        let layout = Layout::contiguous(&[2, 8, 3, 5]);
        let x = upload(&device, &values(2 * 8 * 15, 9, DType::F32), DType::F32);
        let plain = channels_last_copy(&x, &layout, &[0, 2, 3, 1], 3, 8).unwrap();
        {
            let forward = channels_last_input(&x, &layout, 8).unwrap();
            let running_mean = upload(&device, &values(8, 4, DType::F32), DType::F32);
            note_write(Some(*running_mean.loan));
            let backward = channels_last_input(&x, &layout, 8).unwrap();
            assert!(Arc::ptr_eq(&forward.slot, &backward.slot), "made twice");
            assert_eq!(backward.to_cpu().unwrap(), plain.to_cpu().unwrap());
        }
        // Under `no_grad` (inference) a copy is made for the call and not kept.
        let y = upload(&device, &values(2 * 8 * 15, 10, DType::F32), DType::F32);
        {
            let _inference = crate::autograd::no_grad();
            let first = channels_last_input(&y, &layout, 8).unwrap();
            let second = channels_last_input(&y, &layout, 8).unwrap();
            assert!(
                !Arc::ptr_eq(&first.slot, &second.slot),
                "kept under no_grad"
            );
            assert!(!super::holds(*y.loan));
        }
        let token = *x.loan;
        drop(x);
        let other = upload(&device, &values(4, 2, DType::F32), DType::F32);
        channels_last_input(&other, &Layout::contiguous(&[1, 1, 2, 2]), 8).unwrap();
        assert!(!super::holds(token));
    }
}
