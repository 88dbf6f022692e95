//! Kernel parameters that repeat, bound from where they already are.
//!
//! A training or inference loop records the same kernels with the same parameter words step
//! after step, yet each submission used to upload its parameter arena with
//! `queue.write_buffer` (a staging buffer and a copy, submitted as a command buffer of its
//! own, inside `queue.submit`): on the H200 3–5 µs of the host's time before the first kernel
//! of a synchronized step reached the idle GPU (`docs/PERFORMANCE.md`, 2026-12-03 and
//! 2026-12-04). So parameter words seen a second time get a slot of their own in a
//! device buffer that is written once and never rewritten ([`ParamCache`]): later dispatches
//! with the same words bind that slot, and a submission whose words are all cached uploads
//! nothing. Words seen once (an optimizer's bias correction, a fill value) stay in the
//! per-submission arena; index kernels, whose words carry a fresh flag slot, always do, as do
//! blocks of more than [`MAX_CACHED_WORDS`]; when the buffer is full, new words go to the
//! arena (and are no longer remembered as seen).
//!
//! Bind groups are still made per dispatch: kept by the buffers they bind, they were found
//! again in the attention step but in only 8% of ResNet-18's training dispatches (the pool
//! hands buffers back in a different order each step), where making, keeping and dropping
//! them cost more than it saved (PERFORMANCE.md, 2026-12-04).

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU64;
use std::sync::MutexGuard;

use super::{
    CachedPipeline, GpuContext, Recording, ARENA_BYTES, INDEX_FLAG_SLOTS, INDEX_SLOT_WORD,
    MAX_BINDINGS,
};
use crate::error::{Error, Result};

/// Bytes of the device buffer that holds repeated parameter words.
pub(super) const PARAM_CACHE_BYTES: u64 = 256 * 1024;

/// The longest block of parameter words (spare word included) the cache takes.
const MAX_CACHED_WORDS: usize = 128;

/// Distinct parameter blocks remembered as seen once before the memory starts over.
const MAX_SEEN: usize = 8192;

/// Parameter blocks seen more than once, each at a fixed word offset of the cache buffer.
#[derive(Debug)]
pub(super) struct ParamCache {
    slots: HashMap<Box<[u32]>, u32>,
    seen: HashSet<Box<[u32]>>,
    /// The next free word.
    next: usize,
    capacity_words: usize,
    alignment_words: usize,
    /// Blocks found in the cache so far.
    pub(super) hits: u64,
}

/// What [`ParamCache::place`] decided for a block of words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    /// Already in the cache at this word offset.
    Hit(u32),
    /// Just given this word offset: the caller uploads the words there.
    Fresh(u32),
    /// Not cached (first sighting, or the cache is full): the arena holds them.
    Arena,
}

impl ParamCache {
    /// An empty cache over `capacity_words` words whose slots start at multiples of
    /// `alignment_words`.
    pub(super) fn new(capacity_words: usize, alignment_words: usize) -> ParamCache {
        ParamCache {
            slots: HashMap::new(),
            seen: HashSet::new(),
            next: 0,
            capacity_words,
            alignment_words: alignment_words.max(1),
            hits: 0,
        }
    }

    /// Where the block `words` (the kernel's parameters plus the spare zero word) goes.
    pub(super) fn place(&mut self, words: &[u32]) -> Placement {
        if let Some(&offset) = self.slots.get(words) {
            self.hits += 1;
            return Placement::Hit(offset);
        }
        let offset = self.next.next_multiple_of(self.alignment_words);
        if offset + words.len() > self.capacity_words || offset > u32::MAX as usize {
            // No slot left for it: nothing to remember.
            return Placement::Arena;
        }
        if !self.seen.contains(words) {
            if self.seen.len() >= MAX_SEEN {
                self.seen.clear();
            }
            self.seen.insert(words.into());
            return Placement::Arena;
        }
        self.next = offset + words.len();
        self.seen.remove(words);
        self.slots.insert(words.into(), offset as u32);
        Placement::Fresh(offset as u32)
    }
}

impl GpuContext {
    /// The bind group of one dispatch: its parameter words placed (in the cache where they
    /// repeat, else in this submission's arena, with an index kernel's flag slot), then its
    /// buffers.
    pub(super) fn bind_group_locked(
        &self,
        recording: &mut MutexGuard<'_, Recording>,
        pipeline: &CachedPipeline,
        params: &[u32],
        bindings: &[&wgpu::Buffer],
        index_op: Option<&'static str>,
    ) -> Result<wgpu::BindGroup> {
        // One spare zero word: a params struct ending in a runtime array (`runtime/params.rs`) binds at
        // least one element of it, even when the dispatch's tail is empty.
        let words = params.len() + 1;
        if (words * 4) as u64 > ARENA_BYTES {
            return Err(Error::invalid(
                "gpu kernel",
                format!("{words} parameter words exceed the parameter arena"),
            ));
        }
        if bindings.len() + 1 > MAX_BINDINGS {
            return Err(Error::invalid("gpu kernel", "too many bindings"));
        }
        // Words seen before are bound where they already are ([`ParamCache`]); index
        // kernels get a fresh flag slot in their words, so theirs go to the arena.
        let mut block = [0u32; MAX_CACHED_WORDS];
        let placement = match block.get_mut(..words) {
            Some(block) if index_op.is_none() => {
                block[..params.len()].copy_from_slice(params);
                let placement = recording.param_cache.place(block);
                if let Placement::Fresh(offset) = placement {
                    let bytes: &[u8] = bytemuck::cast_slice(block);
                    self.write_buffer(&self.param_cache, u64::from(offset) * 4, bytes);
                }
                placement
            }
            _ => Placement::Arena,
        };
        let (param_buffer, offset) = match placement {
            Placement::Hit(offset) | Placement::Fresh(offset) => (&self.param_cache, offset),
            Placement::Arena => {
                // Parameters start at an offset the device accepts for a storage binding.
                let mut offset = recording
                    .params
                    .len()
                    .next_multiple_of(self.arena_alignment_words);
                if ((offset + words) * 4) as u64 > ARENA_BYTES {
                    self.flush_locked(recording)?;
                    offset = 0;
                }
                recording.params.resize(offset, 0);
                recording.params.extend_from_slice(params);
                recording.params.resize(offset + words, 0);
                if let Some(op) = index_op {
                    if recording.index_owners.len() >= INDEX_FLAG_SLOTS {
                        // Out of slots: copy the flags out now (read at the next wait) and
                        // start over.
                        if let Some(copy) = self.take_flags_locked(recording) {
                            self.flag_copies
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(copy);
                        }
                    }
                    let slot = recording.index_owners.len();
                    recording
                        .index_owners
                        .push((std::thread::current().id(), op));
                    if INDEX_SLOT_WORD < words {
                        recording.params[offset + INDEX_SLOT_WORD] = slot as u32;
                    }
                }
                (&self.arena, offset as u32)
            }
        };
        // Keep the entries on the stack.
        let mut entries: [Option<wgpu::BindGroupEntry<'_>>; MAX_BINDINGS] = Default::default();
        entries[0] = Some(wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: param_buffer,
                offset: u64::from(offset) * 4,
                size: NonZeroU64::new((words * 4) as u64),
            }),
        });
        for (slot, buffer) in bindings.iter().enumerate() {
            entries[slot + 1] = Some(wgpu::BindGroupEntry {
                binding: slot as u32 + 1,
                resource: buffer.as_entire_binding(),
            });
        }
        let entries: Vec<wgpu::BindGroupEntry<'_>> = entries.into_iter().flatten().collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.layout,
            entries: &entries,
        });
        Ok(bind_group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_cached_from_their_second_sighting_at_aligned_offsets() {
        let mut cache = ParamCache::new(64, 16);
        let a = [1u32, 2, 3, 0];
        let b = [7u32, 0];
        assert_eq!(cache.place(&a), Placement::Arena);
        assert_eq!(cache.place(&a), Placement::Fresh(0));
        assert_eq!(cache.place(&a), Placement::Hit(0));
        assert_eq!(cache.place(&b), Placement::Arena);
        assert_eq!(cache.place(&b), Placement::Fresh(16));
        assert_eq!(cache.place(&b), Placement::Hit(16));
        assert_eq!(cache.place(&a), Placement::Hit(0));
    }

    #[test]
    fn a_full_parameter_cache_leaves_new_words_in_the_arena() {
        let mut cache = ParamCache::new(20, 16);
        let a = [1u32; 10];
        let b = [2u32; 10];
        cache.place(&a);
        assert_eq!(cache.place(&a), Placement::Fresh(0));
        cache.place(&b);
        // Offset 16 + 10 words would pass the 20-word capacity.
        assert_eq!(cache.place(&b), Placement::Arena);
        assert_eq!(cache.place(&b), Placement::Arena);
        assert_eq!(cache.place(&a), Placement::Hit(0));
    }
}
