//! Fallible host allocation for CPU tensor storage. A tensor too large for the machine must
//! be an `Error::OutOfMemory`, like on the GPU, not an abort of the whole process (which is
//! what `vec![x; n]` does when the allocator says no). Storage buffers of the CPU backend are
//! made here with `Vec::try_reserve_exact`; on Linux a request larger than the machine's RAM
//! plus swap is refused before asking, so that an overcommitting kernel cannot hand out
//! memory that the first write would then kill the process for. The error's `in_use` is what
//! the process holds in RAM (its resident set: tensors live in ordinary heap memory, with no
//! allocator statistics of their own), read only once an allocation has failed.

use crate::error::{Error, Result};

/// Requests below this many bytes skip the `/proc/meminfo` check (they cannot be absurd).
const CHECK_TOTAL_ABOVE: usize = 1 << 30;

/// An empty vector with room for exactly `numel` elements, or `Error::OutOfMemory`.
pub fn reserved<T>(numel: usize) -> Result<Vec<T>> {
    let element = std::mem::size_of::<T>().max(1);
    let requested = numel.saturating_mul(element);
    let out_of_memory = || Error::OutOfMemory {
        requested: requested as u64,
        in_use: resident_bytes().unwrap_or(0),
        limit: total_memory().unwrap_or(0),
    };
    if requested >= CHECK_TOTAL_ABOVE {
        if let Some(total) = total_memory() {
            if requested as u64 > total {
                return Err(out_of_memory());
            }
        }
    }
    let mut values = Vec::new();
    values
        .try_reserve_exact(numel)
        .map_err(|_| out_of_memory())?;
    Ok(values)
}

/// `numel` copies of `value`, or `Error::OutOfMemory`.
pub fn filled<T: Clone>(numel: usize, value: T) -> Result<Vec<T>> {
    let mut values = reserved(numel)?;
    values.resize(numel, value);
    Ok(values)
}

/// The `kB` figure of the line of a `/proc` status text that starts with `name`, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|line| line.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// Bytes of RAM this process holds (`VmRSS` of `/proc/self/status`), where the system
/// reports it.
pub(crate) fn resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&text, "VmRSS:")
}

/// RAM plus swap in bytes (`MemTotal + SwapTotal` of `/proc/meminfo`), where the system
/// reports it.
pub fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    Some(kib_field(&text, "MemTotal:")?.saturating_add(kib_field(&text, "SwapTotal:").unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_requests_are_out_of_memory() {
        for numel in [usize::MAX, 1 << 60, 1 << 45] {
            let error = reserved::<f32>(numel).unwrap_err();
            assert!(matches!(error, Error::OutOfMemory { .. }), "{error}");
        }
        assert_eq!(filled(3, 7u8).unwrap(), vec![7, 7, 7]);
        assert!(reserved::<f64>(10).unwrap().capacity() >= 10);
    }

    /// The error reports the memory the process really holds, not 0: 64 MiB held (and
    /// written, so resident) show up in `in_use`.
    #[test]
    fn out_of_memory_reports_the_bytes_held() {
        if resident_bytes().is_none() {
            return; // No /proc: nothing to report.
        }
        let held = filled(64 << 20, 1u8).unwrap();
        match reserved::<f32>(1 << 60) {
            Err(Error::OutOfMemory { in_use, .. }) => {
                assert!(in_use >= 64 << 20, "in_use {in_use} with 64 MiB held")
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        drop(held);
    }
}
