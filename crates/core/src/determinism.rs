//! Deterministic algorithms, as `torch.use_deterministic_algorithms`: whether every op must
//! give the same bits on every run of the same program on the same device.
//!
//! The ops of anygrad sum in a fixed order (the GPU reductions pairwise, the split matmuls
//! and convolutions over their partial sums, `index_add` by segments), except two on the GPU
//! that add floats atomically, in the order the invocations arrive, so that their last bits
//! can differ from run to run where sums meet:
//! - the fused attention backward on tensor cores, where the device adds f32 atomically,
//!   sums the query gradient over key blocks (`backend/gpu/attention/coop/backward/fold.rs`, as
//!   PyTorch's flash backward); with deterministic algorithms on it runs its separate query
//!   kernel instead (slower: docs/PERFORMANCE.md);
//! - `scatter_add` on floats (and so the gradient of `gather`), where indices repeat; with
//!   deterministic algorithms on it runs a kernel that sums in the CPU's order instead
//!   (`backend/gpu/index/scatter_add_ordered.rs`), or, where that kernel's work would exceed
//!   [`ordered_scatter_fits`], on the CPU under the CPU-fallback policy (`fallback.rs`).
//!
//! The switch is process-wide: [`use_deterministic_algorithms`], else `ANYGRAD_DETERMINISTIC`
//! (`1`, `on` or `true`; `0`, `off` or `false`; off by default, and off with a warning for
//! any other value).

use std::sync::atomic::{AtomicU8, Ordering};

/// 0: not decided yet (read `ANYGRAD_DETERMINISTIC` on first use), 1: on, 2: off.
static DETERMINISTIC: AtomicU8 = AtomicU8::new(0);

/// Require (or stop requiring) deterministic algorithms for the whole process; overrides
/// `ANYGRAD_DETERMINISTIC`.
pub fn use_deterministic_algorithms(enabled: bool) {
    DETERMINISTIC.store(if enabled { 1 } else { 2 }, Ordering::Relaxed);
}

/// Whether deterministic algorithms are required: [`use_deterministic_algorithms`]'s choice,
/// else `ANYGRAD_DETERMINISTIC`.
pub fn are_deterministic_algorithms_enabled() -> bool {
    match DETERMINISTIC.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let enabled = std::env::var("ANYGRAD_DETERMINISTIC")
                .is_ok_and(|value| deterministic_from_text(&value));
            // A concurrent `use_deterministic_algorithms` wins over the environment.
            let _ = DETERMINISTIC.compare_exchange(
                0,
                if enabled { 1 } else { 2 },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            DETERMINISTIC.load(Ordering::Relaxed) == 1
        }
    }
}

/// What a value of `ANYGRAD_DETERMINISTIC` asks for: on for `1`, `on` or `true`; off for
/// `0`, `off`, `false` or blank; anything else is off, with a warning (tracing) that says so
/// (a misspelt `ture` must not quietly leave the run nondeterministic).
fn deterministic_from_text(value: &str) -> bool {
    match value.trim() {
        "1" | "on" | "true" => true,
        "" | "0" | "off" | "false" => false,
        other => {
            tracing::warn!(
                "ANYGRAD_DETERMINISTIC={other} is not one of 1|on|true|0|off|false; \
                 deterministic algorithms stay off"
            );
            false
        }
    }
}

/// The most index reads (output elements times the index's size along `dim`) the GPU's
/// ordered `scatter_add` takes on: 2^30, about a second of a software GPU's time.
const MAX_ORDERED_SCATTER_WORK: u128 = 1 << 30;

/// Whether a deterministic `scatter_add` on the GPU into `output_numel` elements, with an
/// index of `walk` elements along `dim`, runs the ordered kernel (one invocation per output
/// element walking the index); larger calls run on the CPU under the fallback policy.
pub fn ordered_scatter_fits(output_numel: usize, walk: usize) -> bool {
    output_numel as u128 * walk as u128 <= MAX_ORDERED_SCATTER_WORK
}

#[cfg(test)]
mod tests {
    use super::{deterministic_from_text, ordered_scatter_fits};

    #[test]
    fn environment_values_are_read_as_documented() {
        for on in ["1", "on", " true "] {
            assert!(deterministic_from_text(on), "{on:?}");
        }
        for off in ["", "0", "off", "false", "ture", "yes please"] {
            assert!(!deterministic_from_text(off), "{off:?}");
        }
    }

    #[test]
    fn ordered_scatter_work_is_bounded() {
        assert!(ordered_scatter_fits(1 << 20, 1 << 10));
        assert!(!ordered_scatter_fits(1 << 20, (1 << 10) + 1));
        assert!(ordered_scatter_fits(0, usize::MAX));
        assert!(!ordered_scatter_fits(usize::MAX, usize::MAX));
    }
}
