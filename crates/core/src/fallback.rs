//! The CPU-fallback policy. An op without a GPU kernel (a custom op, a rare composite) may run
//! on the CPU — copying its inputs down and its outputs back up — only under an explicit
//! policy, because the copies and the synchronisation they force can cost far more than the
//! op itself. `ANYGRAD_FALLBACK=error|warn|allow` (default `warn`: run it, and warn once per op
//! name) or [`set_fallback_policy`]. Every fallback is counted (calls, bytes moved, time) so the
//! profiler and `anygrad doctor` can show where the GPU path leaks to the host.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// What to do when an op has no GPU kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FallbackPolicy {
    /// Refuse with `Error::FallbackRefused`.
    Error,
    /// Run on the CPU and log one warning per op name.
    Warn,
    /// Run on the CPU silently (still counted).
    Allow,
}

impl FallbackPolicy {
    /// Parse `error`, `warn` or `allow`.
    pub fn parse(text: &str) -> Option<FallbackPolicy> {
        match text.trim().to_ascii_lowercase().as_str() {
            "error" | "deny" => Some(FallbackPolicy::Error),
            "warn" | "warning" => Some(FallbackPolicy::Warn),
            "allow" | "silent" => Some(FallbackPolicy::Allow),
            _ => None,
        }
    }
}

/// Counters of one op's fallbacks.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FallbackStats {
    /// Times the op ran on the CPU.
    pub calls: u64,
    /// Bytes copied between devices for it.
    pub bytes_moved: u64,
    /// Wall time spent in it (copies included).
    pub time: Duration,
}

struct FallbackState {
    policy: FallbackPolicy,
    warned: Vec<String>,
    stats: HashMap<String, FallbackStats>,
}

fn state() -> &'static Mutex<FallbackState> {
    static STATE: OnceLock<Mutex<FallbackState>> = OnceLock::new();
    STATE.get_or_init(|| {
        let policy = match std::env::var("ANYGRAD_FALLBACK") {
            Ok(text) => FallbackPolicy::parse(&text).unwrap_or_else(|| {
                tracing::warn!("ANYGRAD_FALLBACK={text} is unknown (error|warn|allow); using warn");
                FallbackPolicy::Warn
            }),
            Err(_) => FallbackPolicy::Warn,
        };
        Mutex::new(FallbackState {
            policy,
            warned: Vec::new(),
            stats: HashMap::new(),
        })
    })
}

fn lock() -> std::sync::MutexGuard<'static, FallbackState> {
    state()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The current policy.
pub fn fallback_policy() -> FallbackPolicy {
    lock().policy
}

/// Change the policy for the whole process.
pub fn set_fallback_policy(policy: FallbackPolicy) {
    lock().policy = policy;
}

/// Counters per op name.
pub fn fallback_stats() -> HashMap<String, FallbackStats> {
    lock().stats.clone()
}

/// Clear the counters (and the warn-once memory).
pub fn reset_fallback_stats() {
    let mut state = lock();
    state.stats.clear();
    state.warned.clear();
}

/// Run `cpu_path` as the CPU fallback of `op_name` under the policy: refused with
/// `Error::FallbackRefused` under `error`; otherwise run, counted (with `bytes_moved`, the bytes
/// the caller copies between devices) and, under `warn`, announced once per op name.
pub fn run_with_fallback<T>(
    op_name: &str,
    bytes_moved: u64,
    cpu_path: impl FnOnce() -> Result<T>,
) -> Result<T> {
    {
        let mut state = lock();
        match state.policy {
            FallbackPolicy::Error => {
                return Err(Error::FallbackRefused {
                    op: op_name.to_string(),
                })
            }
            FallbackPolicy::Warn => {
                if !state.warned.iter().any(|name| name == op_name) {
                    state.warned.push(op_name.to_string());
                    tracing::warn!(
                        "{op_name} has no GPU kernel and runs on the CPU ({bytes_moved} bytes copied); \
                         set ANYGRAD_FALLBACK=allow to silence or =error to forbid"
                    );
                }
            }
            FallbackPolicy::Allow => {}
        }
    }
    let started = Instant::now();
    let result = cpu_path();
    let elapsed = started.elapsed();
    let mut state = lock();
    let entry = state.stats.entry(op_name.to_string()).or_default();
    entry.calls += 1;
    entry.bytes_moved += bytes_moved;
    entry.time += elapsed;
    result
}
