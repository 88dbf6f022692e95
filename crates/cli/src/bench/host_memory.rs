//! The host's memory as `/proc/meminfo` reports it (Linux): what the CPU backend and software
//! GPU adapters (whose buffers are host memory) can hold, for the benchmarks' up-front
//! checks and `--batch auto`.

/// The byte count of a `/proc/meminfo` line such as `MemTotal:` (given in kB), where the
/// system reports it.
pub fn meminfo_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// RAM plus swap in bytes (`MemTotal + SwapTotal`): more than this can never be held at once.
pub fn total_bytes() -> Option<u64> {
    Some(meminfo_bytes("MemTotal:")?.saturating_add(meminfo_bytes("SwapTotal:").unwrap_or(0)))
}
