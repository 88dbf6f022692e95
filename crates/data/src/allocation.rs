//! Fallible host allocation for buffers whose size comes from user data (image sides, crop
//! and resize targets, batch sizes). `Vec::with_capacity` aborts the whole process when the
//! allocator says no; these helpers return [`Error::OutOfMemory`] instead, so that an absurd
//! image or option is an error the caller can report.

use anygrad_core::{Error, Result};

/// An empty vector with room for exactly `count` elements, or [`Error::OutOfMemory`] naming
/// the bytes requested (`limit` is the host's RAM plus swap where the system reports it).
pub(crate) fn reserved<T>(count: usize) -> Result<Vec<T>> {
    let mut values = Vec::new();
    values.try_reserve_exact(count).map_err(|_| {
        let requested = count.saturating_mul(std::mem::size_of::<T>().max(1)) as u64;
        Error::OutOfMemory {
            requested,
            in_use: 0,
            limit: host_memory_bytes().unwrap_or(0),
        }
    })?;
    Ok(values)
}

/// `count` copies of `value`, or [`Error::OutOfMemory`] (see [`reserved`]).
pub(crate) fn filled<T: Clone>(count: usize, value: T) -> Result<Vec<T>> {
    let mut values = reserved(count)?;
    values.resize(count, value);
    Ok(values)
}

/// RAM plus swap in bytes (`MemTotal + SwapTotal` of `/proc/meminfo`), where the system
/// reports it; only read when an allocation has already failed.
fn host_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|line| line.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib.saturating_mul(1024))
    };
    Some(field("MemTotal:")?.saturating_add(field("SwapTotal:").unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_request_is_an_error() {
        let error = reserved::<u64>(usize::MAX / 4).unwrap_err();
        assert!(matches!(error, Error::OutOfMemory { .. }), "{error}");
        assert_eq!(filled(3, 7u8).unwrap(), vec![7, 7, 7]);
    }
}
