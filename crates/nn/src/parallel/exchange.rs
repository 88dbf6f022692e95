//! The in-process gradient exchange of [`super::DataParallel`]: every replica thread flattens
//! each bucket of its gradients on its device, reads it into host memory, and the replicas then
//! average it together: replica `i` sums elements `[i·len/N, (i+1)·len/N)` of every replica's
//! copy, always in replica order 0, 1, ..., N-1, and divides by N; each replica assembles the
//! averaged chunks and uploads them as its new gradients. Every element is summed in the same
//! order whichever thread sums it, and every replica uploads the same bytes, so all replicas
//! end with bit-identical gradients. While one thread uploads a bucket, the others already read
//! the next one back.

use std::ops::Range;
use std::sync::RwLock;
use std::time::Instant;

use anygrad_core::{profiler, Device, Result, Tensor};

use super::barrier::AbortableBarrier;
use super::buckets::{flatten_gradients, scatter_gradients, Bucket};
use crate::module::Parameter;

/// Host staging shared by the replica threads, kept across steps so that the chunk buffers
/// are reused.
pub(crate) struct ExchangeArea {
    /// Each replica's copy of the current bucket.
    downloads: Vec<RwLock<Vec<f32>>>,
    /// The averaged chunk each replica computed.
    chunks: Vec<RwLock<Vec<f32>>>,
}

impl ExchangeArea {
    /// Staging for `replicas` threads.
    pub(crate) fn new(replicas: usize) -> ExchangeArea {
        ExchangeArea {
            downloads: (0..replicas).map(|_| RwLock::new(Vec::new())).collect(),
            chunks: (0..replicas).map(|_| RwLock::new(Vec::new())).collect(),
        }
    }
}

/// The part of a `len`-element bucket that replica `index` of `parts` averages.
pub(crate) fn chunk_range(len: usize, parts: usize, index: usize) -> Range<usize> {
    (index * len / parts)..((index + 1) * len / parts)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// Average replica `replica`'s gradients with the others' (called by every replica thread at
/// once). Returns the seconds spent, measured after the device finished backward.
pub(crate) fn exchange_gradients(
    replica: usize,
    device: &Device,
    parameters: &[Parameter],
    buckets: &[Bucket],
    barrier: &AbortableBarrier,
    area: &ExchangeArea,
) -> Result<f64> {
    let replicas = area.downloads.len();
    profiler::scope("gradient_exchange", device, || {
        // Record every bucket's flattening first, so the device runs them right after
        // backward while the host starts reading the first bucket.
        let flats: Vec<Tensor> = buckets
            .iter()
            .map(|bucket| flatten_gradients(parameters, bucket))
            .collect::<Result<_>>()?;
        device.synchronize()?;
        let started = Instant::now();
        let scale = 1.0 / replicas as f32;
        for (bucket, flat) in buckets.iter().zip(flats) {
            let host = flat.to_vec::<f32>()?;
            drop(flat);
            *write(&area.downloads[replica]) = host;
            barrier.wait()?;
            {
                let range = chunk_range(bucket.numel, replicas, replica);
                let mut chunk = write(&area.chunks[replica]);
                chunk.clear();
                chunk.extend_from_slice(&read(&area.downloads[0])[range.clone()]);
                for other in &area.downloads[1..] {
                    let other = read(other);
                    for (sum, value) in chunk.iter_mut().zip(&other[range.clone()]) {
                        *sum += *value;
                    }
                }
                for value in chunk.iter_mut() {
                    *value *= scale;
                }
            }
            barrier.wait()?;
            let mut averaged = Vec::with_capacity(bucket.numel);
            for chunk in &area.chunks {
                averaged.extend_from_slice(&read(chunk));
            }
            scatter_gradients(parameters, bucket, averaged, device)?;
        }
        Ok(started.elapsed().as_secs_f64())
    })
}

#[cfg(test)]
mod tests {
    use super::chunk_range;

    #[test]
    fn chunks_tile_the_bucket() {
        for parts in 1..6 {
            let mut next = 0;
            for index in 0..parts {
                let range = chunk_range(17, parts, index);
                assert_eq!(range.start, next);
                next = range.end;
            }
            assert_eq!(next, 17);
        }
    }
}
