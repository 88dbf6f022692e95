//! Autotuning: where a primitive has several correct kernels for one shape (matmul tile sizes,
//! split-K, the aligned kernel; convolution tiles, tensor cores or not), the first call with
//! a shape times each candidate on the device and every later call runs the fastest.
//!
//! - `ANYGRAD_AUTOTUNE=on` (default on hardware adapters), `off` (default on software
//!   adapters such as lavapipe, where timing would take long and decide nothing: the fixed
//!   heuristic, candidate 0, runs), `refresh` (time again, ignoring the cache file).
//! - Choices are kept in memory and in a JSON cache file, per adapter (name, driver, driver
//!   version, backend) and per key (the primitive, its dtype and shape, and which candidates
//!   were legal): `$ANYGRAD_CACHE_DIR/autotune.json`, else `$XDG_CACHE_HOME/anygrad/…`, else
//!   `$HOME/.cache/anygrad/…`. A missing, unreadable or corrupt file only means timing again;
//!   a file that cannot be written is reported once (tracing) and otherwise ignored.
//! - Timing: each candidate runs once (pipeline creation, warm-up; a tuned primitive it calls,
//!   such as the batched GEMM of a Winograd convolution, is tuned here) and the device settles;
//!   then each run is timed on its own (runs recorded back to back would overlap on the
//!   device, hiding a kernel that leaves most of it idle): on the device's clock where it has
//!   one ([`TuningClock`]; timestamp queries, from the first kernel's start to the last one's
//!   end), else from recording until the device has finished it. Runs go in rounds of one
//!   run of each candidate, [`REPEATS`] rounds at least and as many as fill [`TARGET`] per
//!   candidate (at most [`MAX_REPEATS`]). A candidate's fastest run is
//!   its cost (a GPU in a slower phase slows the runs of every candidate in those rounds
//!   alike). A candidate that returns an error is skipped. Every
//!   candidate computes the same result up to float rounding (each is tested against the CPU
//!   on its own), so a choice changes speed only.
//! - A key is timed at its first call after the host has read a result from the device since
//!   the key's first call (a training step's loss, an inference's output), and from its
//!   second call on ([`TUNE_FROM_CALL`]); calls before that run the fixed heuristic
//!   (candidate 0). A first forward or step therefore never waits for timing, even where a
//!   network repeats a shape inside it (ResNet's blocks), and compiles one kernel per shape
//!   instead of every candidate: a new machine's first result comes in seconds. A workload
//!   that never reads anything back has its keys timed from call [`TUNE_WITHOUT_READ_CALL`].
//!   One-off passes (an evaluation at an odd batch size) never wait for timing either.
//! - The candidates' untimed warm-up runs (where their pipelines are compiled: on NVIDIA's
//!   driver 0.5-2.4 s for a tensor-core kernel) run on [`WARM_UP_THREADS`] threads at once,
//!   so that timing a key costs about its slowest candidate's compilation, not their sum.
//! - Choices are shared by every device on an identical adapter in the process
//!   ([`Autotuner::for_adapter`]) and a key is timed by one thread at a time (the others wait
//!   for its choice): data-parallel replicas on two identical GPUs, or two on one GPU, run
//!   the same kernels and stay bitwise identical.
//! - The timing runs' memory (candidates' outputs and scratch buffers) is left out of the
//!   device's peak statistics: `memory_stats` reports the workload's peak.
//! - The first timing of a process on an adapter with no saved choices prints one line
//!   (tracing `info`, shown by the CLI) saying that the first steps are slower and where the
//!   choices are kept.
//! - `ANYGRAD_AUTOTUNE_FORCE` (benchmarking, any mode): a comma-separated list of candidate
//!   names, each `NAME` (exact), `NAME*` (a prefix) or `OP:NAME[*]` (only for the primitive
//!   whose key starts with `OP`, e.g. `conv2d_backward_weight:wide-split*`). Where one of them
//!   names a legal candidate of a call (the first entry that does; among candidates, the first
//!   in the tuner's order), that candidate runs untimed; elsewhere tuning is as usual.
//! - Settling flushes and waits without reading index-error flags, so a bad index stays
//!   reported by the next readback, as documented in `runtime/context.rs`.

pub(crate) mod cache_file;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::backend::gpu_facts::AutotuneMode;
use crate::error::Result;

/// Timed rounds (one run of each candidate, after one warm-up run each), at least.
pub(crate) const REPEATS: u32 = 5;

/// Timed rounds, at most.
pub(crate) const MAX_REPEATS: u32 = 200;

/// The call of a key from which on it is timed (1: its first call) once the host has read a
/// result since its first call.
pub(crate) const TUNE_FROM_CALL: u32 = 2;

/// The call of a key from which on it is timed even where the host has read nothing since its
/// first call (a workload that only records).
pub(crate) const TUNE_WITHOUT_READ_CALL: u32 = 16;

/// How many candidates' warm-up runs (pipeline compilation) proceed at once, at most.
pub(crate) const WARM_UP_THREADS: usize = 8;

/// How long the timed runs of one candidate should take (the rounds last this times the
/// number of candidates).
pub(crate) const TARGET: Duration = Duration::from_millis(5);

/// What the tuner needs from a device: waiting for it and, where it has one, its own clock.
pub(crate) trait TuningClock {
    /// Wait until the device has finished all recorded work.
    fn settle(&self) -> Result<()>;

    /// Start timing the work recorded from now on with the device's clock; false where it
    /// cannot (then the tuner times from recording until [`TuningClock::settle`] returns).
    fn start(&self) -> Result<bool> {
        Ok(false)
    }

    /// Stop timing (waits for the device): the device time of the work recorded since a
    /// successful [`TuningClock::start`] (`None`: no kernel ran).
    fn stop(&self) -> Result<Option<Duration>> {
        Ok(None)
    }

    /// The device's memory peaks (allocated, requested bytes), where it keeps them.
    fn peaks(&self) -> Option<(u64, u64)> {
        None
    }

    /// Put back peaks from [`TuningClock::peaks`] after the timing runs: candidates' outputs
    /// and scratch buffers are the tuner's, not the workload's memory.
    fn restore_peaks(&self, _peaks: (u64, u64)) {}
}

/// The mode `ANYGRAD_AUTOTUNE` names; unset (or unknown, with a warning): on, except on a
/// software adapter.
pub(crate) fn mode_from_env(software_adapter: bool) -> AutotuneMode {
    let default = if software_adapter {
        AutotuneMode::Off
    } else {
        AutotuneMode::On
    };
    match std::env::var("ANYGRAD_AUTOTUNE")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        None | Some("") => default,
        Some("off") | Some("0") => AutotuneMode::Off,
        Some("on") | Some("1") => AutotuneMode::On,
        Some("refresh") => AutotuneMode::Refresh,
        Some(other) => {
            tracing::warn!(
                "ANYGRAD_AUTOTUNE={other:?} is not off, on or refresh; using {default:?}"
            );
            default
        }
    }
}

/// The entries of `ANYGRAD_AUTOTUNE_FORCE` (see the module header); none when unset.
pub(crate) fn forced_from_env() -> Vec<String> {
    std::env::var("ANYGRAD_AUTOTUNE_FORCE")
        .map(|value| parse_forced(&value))
        .unwrap_or_default()
}

/// The non-empty, trimmed comma-separated entries of `value`.
fn parse_forced(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(str::to_string)
        .collect()
}

/// The candidate the first matching entry of `forced` names for the call with `key` (its first
/// word is the primitive) among `names`, if any.
fn forced_choice(forced: &[String], key: &str, names: &[String]) -> Option<usize> {
    let op = key.split(' ').next().unwrap_or("");
    forced.iter().find_map(|entry| {
        let pattern = match entry.split_once(':') {
            Some((entry_op, pattern)) if entry_op == op => pattern,
            Some(_) => return None,
            None => entry.as_str(),
        };
        names
            .iter()
            .position(|name| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            })
    })
}

thread_local! {
    /// Set while this thread runs timed candidates: a candidate that calls another tuned
    /// primitive not tuned yet runs that one's default instead of tuning inside a timed run.
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    /// Candidates this thread has timed (tests running in parallel share a device's tuner).
    static MEASURED_HERE: Cell<u64> = const { Cell::new(0) };
}

/// How many candidates this thread has timed, on any tuner.
#[cfg(test)]
pub(crate) fn measured_on_this_thread() -> u64 {
    MEASURED_HERE.with(Cell::get)
}

/// The choices of one adapter (see the module header).
pub(crate) struct Autotuner {
    mode: Mutex<AutotuneMode>,
    /// Adapter identity, the cache file's top-level key.
    adapter: String,
    file: Mutex<Option<PathBuf>>,
    /// Choices, call counts and keys being timed: this tuner's own ([`Autotuner::new`]) or
    /// shared with every tuner of an identical adapter ([`Autotuner::for_adapter`]).
    shared: Arc<SharedChoices>,
    /// `ANYGRAD_AUTOTUNE_FORCE`'s entries.
    forced: Vec<String>,
    /// Candidates timed so far (for tests and the profiler's curiosity).
    measured: Mutex<u64>,
    write_failed: Mutex<bool>,
    /// A key is timed from this call of it on ([`TUNE_FROM_CALL`]; tests use 1).
    tune_from_call: u32,
}

/// What tuners of one adapter share.
#[derive(Default)]
struct SharedChoices {
    state: Mutex<ChoiceState>,
    /// Signalled when a key's timing ends.
    timed: Condvar,
    /// How many times the host has waited for a device's results (outside timing runs).
    host_reads: AtomicU64,
}

#[derive(Default)]
struct ChoiceState {
    /// Key -> chosen candidate's name: this process's choices, then (mode `On`) the file's.
    choices: HashMap<String, String>,
    /// Calls of each key not yet chosen.
    calls: HashMap<String, KeyCalls>,
    /// Keys being timed by some thread now.
    timing: HashSet<String>,
    /// Whether the file's choices were loaded (mode `On`), and how many there were.
    loaded: Option<usize>,
}

/// The calls of a key not chosen yet.
struct KeyCalls {
    /// How many there were.
    count: u32,
    /// [`SharedChoices::host_reads`] at the first of them.
    reads_at_first: u64,
}

/// Adapter identity -> the choices its tuners share.
static SHARED: OnceLock<Mutex<HashMap<String, Weak<SharedChoices>>>> = OnceLock::new();

thread_local! {
    /// Keys this thread is timing (a candidate's warm-up that calls the same key runs its
    /// candidate 0 instead of waiting for itself).
    static TIMING_HERE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Whether the one-line notice about timing has been printed in this process.
static NOTICE_PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl SharedChoices {
    fn lock(&self) -> MutexGuard<'_, ChoiceState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Ends a key's timing however it ends (an error included): the key leaves the shared and
/// the thread's sets and the waiting threads wake.
struct TimingGuard<'a> {
    shared: &'a SharedChoices,
    key: String,
}

impl Drop for TimingGuard<'_> {
    fn drop(&mut self) {
        self.shared.lock().timing.remove(&self.key);
        TIMING_HERE.with(|keys| {
            let mut keys = keys.borrow_mut();
            if let Some(position) = keys.iter().rposition(|key| key == &self.key) {
                keys.remove(position);
            }
        });
        self.shared.timed.notify_all();
    }
}

impl Autotuner {
    /// A tuner for `adapter` in `mode` with choices of its own, persisting to `file` (none:
    /// memory only). In mode `On` the file's choices for this adapter are loaded now
    /// (tests; devices use [`Autotuner::for_adapter`]).
    #[cfg(test)]
    pub(crate) fn new(mode: AutotuneMode, adapter: String, file: Option<PathBuf>) -> Autotuner {
        Autotuner::with_shared(mode, adapter, file, Arc::default())
    }

    /// A tuner for a device on `adapter` that shares its choices with every other tuner of an
    /// identical adapter in this process (see the module header).
    pub(crate) fn for_adapter(
        mode: AutotuneMode,
        adapter: String,
        file: Option<PathBuf>,
    ) -> Autotuner {
        let shared = {
            let mut registry = SHARED
                .get_or_init(Mutex::default)
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            registry.retain(|_, shared| shared.strong_count() > 0);
            match registry.get(&adapter).and_then(Weak::upgrade) {
                Some(shared) => shared,
                None => {
                    let shared = Arc::<SharedChoices>::default();
                    registry.insert(adapter.clone(), Arc::downgrade(&shared));
                    shared
                }
            }
        };
        Autotuner::with_shared(mode, adapter, file, shared)
    }

    fn with_shared(
        mode: AutotuneMode,
        adapter: String,
        file: Option<PathBuf>,
        shared: Arc<SharedChoices>,
    ) -> Autotuner {
        if mode == AutotuneMode::On {
            let mut state = shared.lock();
            if state.loaded.is_none() {
                let saved = file
                    .as_deref()
                    .and_then(|path| cache_file::read(path).remove(&adapter))
                    .unwrap_or_default();
                state.loaded = Some(saved.len());
                for (key, name) in saved {
                    state.choices.entry(key).or_insert(name);
                }
            }
        }
        Autotuner {
            mode: Mutex::new(mode),
            adapter,
            file: Mutex::new(file),
            shared,
            forced: forced_from_env(),
            measured: Mutex::new(0),
            write_failed: Mutex::new(false),
            tune_from_call: TUNE_FROM_CALL,
        }
    }

    /// Time keys from their first call (tests of the timing itself).
    #[cfg(test)]
    pub(crate) fn timing_first_calls(mut self) -> Autotuner {
        self.tune_from_call = 1;
        self
    }

    /// The default cache file (see the module header), if a directory can be named.
    pub(crate) fn default_file() -> Option<PathBuf> {
        let directory = std::env::var_os("ANYGRAD_CACHE_DIR")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME")
                    .filter(|value| !value.is_empty())
                    .map(|base| PathBuf::from(base).join("anygrad"))
            })
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|value| !value.is_empty())
                    .map(|home| PathBuf::from(home).join(".cache").join("anygrad"))
            })?;
        Some(directory.join("autotune.json"))
    }

    /// The mode.
    pub(crate) fn mode(&self) -> AutotuneMode {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Change the mode (`GpuDevice::set_autotune_mode`).
    pub(crate) fn set_mode(&self, mode: AutotuneMode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    /// Stop using the cache file (tests: tuning without writing into the user's cache).
    #[cfg(test)]
    pub(crate) fn forget_file(&self) {
        *self.file.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Force candidates by name as `ANYGRAD_AUTOTUNE_FORCE=value` does (tests).
    #[cfg(test)]
    pub(crate) fn with_forced(mut self, value: &str) -> Autotuner {
        self.forced = parse_forced(value);
        self
    }

    /// The host has waited for the device's results (a readback or a synchronize): keys first
    /// called before now may be timed from their next call. The tuner's own timing runs do
    /// not count.
    pub(crate) fn note_host_read(&self) {
        if !MEASURING.with(Cell::get) {
            self.shared.host_reads.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How many candidates have been timed.
    pub(crate) fn measured(&self) -> u64 {
        *self.measured.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run the best of `count` candidates: `run(i)` runs candidate `i` (0 is the fixed
    /// heuristic's choice); `describe` gives the shape key and the candidates' names, and is
    /// only called when tuning is on (the hot path with the tuner off formats nothing);
    /// `clock` waits for the device and times the runs. A single candidate:
    /// candidate 0; else a forced candidate (`ANYGRAD_AUTOTUNE_FORCE`); else, when off,
    /// candidate 0; else a known choice; else, for a nested call inside a timed run,
    /// candidate 0 (nested primitives tune during the outer candidate's untimed warm-up run).
    pub(crate) fn pick<T>(
        &self,
        count: usize,
        describe: impl FnOnce() -> (String, Vec<String>),
        clock: &dyn TuningClock,
        run: impl Fn(usize) -> Result<T> + Sync,
    ) -> Result<T> {
        let off = self.mode() == AutotuneMode::Off;
        if count < 2 || (off && self.forced.is_empty()) {
            return run(0);
        }
        let (key, names) = describe();
        if let Some(index) = forced_choice(&self.forced, &key, &names) {
            return run(index);
        }
        if off {
            return run(0);
        }
        let known = |state: &ChoiceState| {
            state
                .choices
                .get(&key)
                .and_then(|name| names.iter().position(|candidate| candidate == name))
        };
        let mut state = self.shared.lock();
        loop {
            if let Some(index) = known(&state) {
                drop(state);
                return run(index);
            }
            let mine = TIMING_HERE.with(|keys| keys.borrow().contains(&key));
            if MEASURING.with(Cell::get) || mine {
                drop(state);
                return run(0);
            }
            if !state.timing.contains(&key) {
                break;
            }
            // Another thread is timing this key: use its choice, as every replica must.
            state = self
                .shared
                .timed
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        let reads = self.shared.host_reads.load(Ordering::Relaxed);
        let calls = state.calls.entry(key.clone()).or_insert(KeyCalls {
            count: 0,
            reads_at_first: reads,
        });
        calls.count += 1;
        let due = self.tune_from_call <= 1
            || (calls.count >= self.tune_from_call
                && (reads > calls.reads_at_first || calls.count >= TUNE_WITHOUT_READ_CALL));
        if !due {
            drop(state);
            return run(0);
        }
        state.calls.remove(&key);
        state.timing.insert(key.clone());
        let fresh_adapter = state.loaded.unwrap_or(0) == 0;
        drop(state);
        TIMING_HERE.with(|keys| keys.borrow_mut().push(key.clone()));
        let _timing = TimingGuard {
            shared: &self.shared,
            key: key.clone(),
        };
        if fresh_adapter && !NOTICE_PRINTED.swap(true, Ordering::Relaxed) {
            let place = self
                .file
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map_or("memory only".to_string(), |path| path.display().to_string());
            tracing::info!(
                "timing GPU kernel candidates for each new shape on this adapter (once per \
                 shape: the first steps are slower; choices are kept in {place}; \
                 ANYGRAD_AUTOTUNE=off skips it)"
            );
        }
        MEASURING.with(|flag| flag.set(true));
        let peaks = clock.peaks();
        let timed = self.measure(count, clock, &run);
        if let Some(peaks) = peaks {
            clock.restore_peaks(peaks);
        }
        MEASURING.with(|flag| flag.set(false));
        let (chosen, times) = timed?;
        // `ANYGRAD_LOG=anygrad_core=debug` prints what every candidate took.
        tracing::debug!(
            "autotune {key}: {}",
            names
                .iter()
                .zip(&times)
                .map(|(name, time)| match time {
                    Some(time) => format!("{name} {:.1} us", time.as_secs_f64() * 1e6),
                    None => format!("{name} failed"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(name) = names.get(chosen) {
            self.remember(&key, name);
        }
        run(chosen)
    }

    /// Time every candidate; the index of the fastest that ran (0 if none did) and each
    /// candidate's time (`None`: it failed). Candidates are timed in rounds, one run of each
    /// per round, and each keeps its fastest run: a GPU that runs slower for a while (the
    /// H200 has shown 2-5x slower phases lasting seconds, see docs/PERFORMANCE.md) slows
    /// every candidate's runs of those rounds alike instead of one candidate's whole timing.
    fn measure<T>(
        &self,
        count: usize,
        clock: &dyn TuningClock,
        run: &(impl Fn(usize) -> Result<T> + Sync),
    ) -> Result<(usize, Vec<Option<Duration>>)> {
        clock.settle()?;
        let mut fastest: Vec<Option<Duration>> = warm_up(count, run)
            .into_iter()
            .map(|ran| ran.then_some(Duration::MAX))
            .collect();
        clock.settle()?;
        // Each run is timed on its own (the device's clock, else record to finished):
        // back-to-back runs of independent work would overlap on the device and hide a kernel
        // that leaves most of it idle. As many rounds as fill about TARGET per candidate
        // (REPEATS to MAX_REPEATS).
        let live = fastest.iter().filter(|time| time.is_some()).count() as u32;
        *self.measured.lock().unwrap_or_else(|p| p.into_inner()) += u64::from(live);
        MEASURED_HERE.with(|count| count.set(count.get() + u64::from(live)));
        let started = Instant::now();
        let mut rounds = 0;
        while rounds < MAX_REPEATS && (rounds < REPEATS || started.elapsed() < TARGET * live.max(1))
        {
            for (index, time) in fastest.iter_mut().enumerate() {
                let Some(best) = time else { continue };
                let begun = Instant::now();
                let on_device = clock.start()?;
                let failed = run(index).is_err();
                let device_time = if on_device {
                    clock.stop()?
                } else {
                    clock.settle()?;
                    None
                };
                let elapsed = device_time.unwrap_or_else(|| begun.elapsed());
                *time = if failed {
                    None
                } else {
                    Some((*best).min(elapsed))
                };
            }
            rounds += 1;
        }
        let chosen = fastest
            .iter()
            .enumerate()
            .filter_map(|(index, time)| time.map(|time| (time, index)))
            .min()
            .map_or(0, |(_, index)| index);
        Ok((chosen, fastest))
    }

    /// Keep `name` for `key` in memory and (when there is a file) on disk.
    fn remember(&self, key: &str, name: &str) {
        self.shared
            .lock()
            .choices
            .insert(key.to_string(), name.to_string());
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(path) = &file else { return };
        if let Err(error) = cache_file::record(path, &self.adapter, key, name) {
            let mut failed = self.write_failed.lock().unwrap_or_else(|p| p.into_inner());
            if !*failed {
                *failed = true;
                tracing::warn!("autotune cache {} not written: {error}", path.display());
            }
        }
    }
}

/// Run each of `count` candidates once, untimed, [`WARM_UP_THREADS`] at a time: whether each
/// ran. Compiling a candidate's pipelines is most of a new key's cost and the driver compiles
/// on the calling thread, so the candidates compile side by side. The runs record into the
/// device's one queue in whatever order the threads reach it; each candidate's own work stays
/// in its order and writes only buffers of its own, so the results do not depend on it. A
/// candidate may tune the primitives it calls (a Winograd convolution's batched GEMM): its
/// timed runs then use their tuned kernels, as every later call will. The keys this thread is
/// timing travel to the helpers, so that a candidate calling one of them runs its candidate 0.
fn warm_up<T>(count: usize, run: &(impl Fn(usize) -> Result<T> + Sync)) -> Vec<bool> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |cores| cores.get())
        .min(WARM_UP_THREADS)
        .min(count);
    let was_measuring = MEASURING.with(|flag| flag.replace(false));
    let ran = if threads <= 1 {
        (0..count).map(|index| run(index).is_ok()).collect()
    } else {
        let timing_here = TIMING_HERE.with(|keys| keys.borrow().clone());
        let next = AtomicUsize::new(0);
        let ran: Vec<AtomicBool> = (0..count).map(|_| AtomicBool::new(false)).collect();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    TIMING_HERE.with(|keys| keys.borrow_mut().clone_from(&timing_here));
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= count {
                            break;
                        }
                        ran[index].store(run(index).is_ok(), Ordering::Relaxed);
                    }
                });
            }
        });
        ran.into_iter().map(AtomicBool::into_inner).collect()
    };
    MEASURING.with(|flag| flag.set(was_measuring));
    ran
}

#[cfg(test)]
mod tests {
    use super::{AutotuneMode, Autotuner, TuningClock, TUNE_FROM_CALL, TUNE_WITHOUT_READ_CALL};
    use crate::error::{Error, Result};
    use std::cell::{Cell, RefCell};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::Duration;

    /// A device without a clock of its own: the tuner times on the host.
    struct HostClock;

    impl TuningClock for HostClock {
        fn settle(&self) -> Result<()> {
            Ok(())
        }
    }

    const SETTLE: HostClock = HostClock;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    /// A tuner over candidates "slow" (sleeps), "fast" and "broken" (errors); returns what
    /// ran, in order.
    fn tune(tuner: &Autotuner, key: &str) -> (usize, Vec<usize>) {
        let ran = Mutex::new(Vec::new());
        let chosen = tuner
            .pick(
                3,
                || (key.to_string(), names(&["slow", "fast", "broken"])),
                &SETTLE,
                |index| {
                    ran.lock().unwrap().push(index);
                    match index {
                        0 => std::thread::sleep(Duration::from_millis(4)),
                        2 => return Err(Error::invalid("candidate", "broken")),
                        _ => {}
                    }
                    Ok(index)
                },
            )
            .unwrap();
        (chosen, ran.into_inner().unwrap())
    }

    #[test]
    fn the_fastest_working_candidate_is_chosen_once_and_remembered_on_disk() {
        let directory =
            std::env::temp_dir().join(format!("anygrad-autotune-{}", std::process::id()));
        let file = directory.join("autotune.json");
        let _ = std::fs::remove_file(&file);
        let tuner = Autotuner::new(AutotuneMode::On, "adapter A".into(), Some(file.clone()))
            .timing_first_calls();
        let (chosen, ran) = tune(&tuner, "matmul 1x2x3");
        assert_eq!(chosen, 1);
        assert!(ran.len() > 3 && tuner.measured() == 2, "{ran:?}");
        // Known now: the choice runs at once.
        assert_eq!(tune(&tuner, "matmul 1x2x3"), (1, vec![1]));
        // A new tuner (a new process) reads the file; another adapter does not share it.
        let again = Autotuner::new(AutotuneMode::On, "adapter A".into(), Some(file.clone()))
            .timing_first_calls();
        assert_eq!(tune(&again, "matmul 1x2x3"), (1, vec![1]));
        let other = Autotuner::new(AutotuneMode::On, "adapter B".into(), Some(file.clone()))
            .timing_first_calls();
        assert!(tune(&other, "matmul 1x2x3").1.len() > 1);
        // Refresh times again; off runs candidate 0.
        let refresh = Autotuner::new(
            AutotuneMode::Refresh,
            "adapter A".into(),
            Some(file.clone()),
        )
        .timing_first_calls();
        assert!(tune(&refresh, "matmul 1x2x3").1.len() > 1);
        let off = Autotuner::new(AutotuneMode::Off, "adapter A".into(), Some(file.clone()))
            .timing_first_calls();
        assert_eq!(tune(&off, "matmul 1x2x3"), (0, vec![0]));
        // A corrupt file is ignored (and replaced by the next choice).
        std::fs::write(&file, b"{not json").unwrap();
        let corrupt = Autotuner::new(AutotuneMode::On, "adapter A".into(), Some(file.clone()))
            .timing_first_calls();
        assert_eq!(tune(&corrupt, "matmul 1x2x3").0, 1);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"matmul 1x2x3\": \"fast\""), "{text}");
        let _ = std::fs::remove_dir_all(&directory);
    }

    /// Forced names run untimed in any mode: exact names, prefixes, the first matching
    /// entry, entries scoped to another primitive ignored; without a match, usual tuning.
    #[test]
    fn forced_candidates_run_untimed() {
        let off = Autotuner::new(AutotuneMode::Off, "adapter".into(), None)
            .timing_first_calls()
            .with_forced("fast");
        assert_eq!(tune(&off, "conv x"), (1, vec![1]));
        let on = Autotuner::new(AutotuneMode::On, "adapter".into(), None)
            .timing_first_calls()
            .with_forced(" matmul:fast , conv:sl* ,fa*");
        assert_eq!(tune(&on, "conv x"), (0, vec![0]));
        assert_eq!(tune(&on, "matmul y"), (1, vec![1]));
        assert_eq!(tune(&on, "other z"), (1, vec![1]));
        assert_eq!(on.measured(), 0);
        let unmatched = Autotuner::new(AutotuneMode::On, "adapter".into(), None)
            .timing_first_calls()
            .with_forced("conv2d:fast,nothing*");
        assert_eq!(tune(&unmatched, "conv x").0, 1);
        assert_eq!(unmatched.measured(), 2);
    }

    #[test]
    fn a_stale_choice_is_timed_again_and_a_single_candidate_is_never_timed() {
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None).timing_first_calls();
        tuner
            .shared
            .lock()
            .choices
            .insert("conv".into(), "gone".into());
        assert!(tune(&tuner, "conv").1.len() > 1);
        let ran = tuner
            .pick(1, || ("single".into(), names(&["only"])), &SETTLE, Ok)
            .unwrap();
        assert_eq!(ran, 0);
        assert_eq!(tuner.measured(), 2);
    }

    /// A candidate that calls another tuned primitive: the inner primitive is tuned during
    /// the outer candidate's untimed warm-up, and the outer timed runs use the inner choice
    /// ("fast", not candidate 0).
    #[test]
    fn nested_primitives_tune_during_the_warm_up_and_timed_runs_use_their_choice() {
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None).timing_first_calls();
        let inner_runs = Mutex::new(Vec::new());
        let chosen = tuner
            .pick(
                2,
                || ("outer".to_string(), names(&["a", "b"])),
                &SETTLE,
                |index| {
                    let (inner, ran) = tune(&tuner, "inner");
                    inner_runs.lock().unwrap().push((index, inner, ran.len()));
                    Ok(index)
                },
            )
            .unwrap();
        assert!(chosen < 2);
        let runs = inner_runs.into_inner().unwrap();
        // One warm-up tuned the inner primitive (several runs; the other warm-up, on another
        // thread, waited for its choice); every other call ran its choice once.
        let tuned: Vec<_> = runs.iter().filter(|&&(_, _, count)| count > 1).collect();
        assert_eq!(tuned.len(), 1, "{runs:?}");
        assert!(tuned[0].2 > 3, "{runs:?}");
        assert!(
            runs.iter()
                .filter(|&&(_, _, count)| count == 1)
                .all(|&(_, inner, _)| inner == 1),
            "{runs:?}"
        );
        assert_eq!(tuner.measured(), 4);
    }

    /// A device with its own clock: what it reports decides, not the host's time (here
    /// candidate 0 sleeps on the host, as a submission's latency would, but its kernels are
    /// the fastest on the device); a run that records no kernel is timed on the host.
    #[test]
    fn the_device_clock_decides_where_there_is_one() {
        struct DeviceClock {
            /// The candidate that ran last and whether the clock is running.
            last: AtomicUsize,
            running: Cell<bool>,
        }
        impl TuningClock for DeviceClock {
            fn settle(&self) -> Result<()> {
                Ok(())
            }
            fn start(&self) -> Result<bool> {
                assert!(!self.running.replace(true), "started twice");
                Ok(true)
            }
            fn stop(&self) -> Result<Option<Duration>> {
                assert!(self.running.replace(false), "stopped without a start");
                Ok(match self.last.load(Ordering::SeqCst) {
                    0 => Some(Duration::from_micros(10)),
                    1 => Some(Duration::from_micros(30)),
                    _ => None,
                })
            }
        }
        let clock = DeviceClock {
            last: AtomicUsize::new(usize::MAX),
            running: Cell::new(false),
        };
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None).timing_first_calls();
        let chosen = tuner
            .pick(
                3,
                || {
                    (
                        "device".to_string(),
                        names(&["slow host", "fast host", "no kernel"]),
                    )
                },
                &clock,
                |index| {
                    clock.last.store(index, Ordering::SeqCst);
                    // "no kernel" is timed on the host: its 1 ms loses to the device times.
                    if index != 1 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(index)
                },
            )
            .unwrap();
        assert_eq!(chosen, 0);
        assert!(!clock.running.get());
        assert_eq!(tuner.measured(), 3);
    }

    /// A key's calls run the heuristic untimed until the host has read a result since its
    /// first call (a first forward repeating a shape waits for no timing); its next call is
    /// timed.
    #[test]
    fn a_key_is_timed_at_its_first_call_after_a_host_read() {
        assert_eq!(TUNE_FROM_CALL, 2);
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None);
        for _ in 0..3 {
            assert_eq!(tune(&tuner, "conv repeated"), (0, vec![0]));
        }
        assert_eq!(tuner.measured(), 0);
        tuner.note_host_read();
        assert_eq!(tune(&tuner, "conv once"), (0, vec![0]), "first call");
        let (chosen, ran) = tune(&tuner, "conv repeated");
        assert_eq!(chosen, 1);
        assert!(ran.len() > 3, "{ran:?}");
        assert_eq!(tune(&tuner, "conv repeated"), (1, vec![1]));
        assert_eq!(tuner.measured(), 2);
        // A key first called after the read waits for the next one.
        assert_eq!(
            tune(&tuner, "conv once"),
            (0, vec![0]),
            "no read since its first call"
        );
        tuner.note_host_read();
        assert_eq!(tune(&tuner, "conv once").0, 1);
    }

    /// A workload that never reads a result back still has its keys timed, from call
    /// `TUNE_WITHOUT_READ_CALL` on.
    #[test]
    fn a_key_is_timed_without_reads_after_many_calls() {
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None);
        for call in 1..TUNE_WITHOUT_READ_CALL {
            assert_eq!(tune(&tuner, "matmul loop"), (0, vec![0]), "call {call}");
        }
        assert!(tune(&tuner, "matmul loop").1.len() > 3);
        assert_eq!(tuner.measured(), 2);
    }

    /// The candidates' warm-up runs (where their pipelines compile) overlap on several
    /// threads; the timed runs do not.
    #[test]
    fn warm_up_runs_overlap_and_timed_runs_do_not() {
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        let in_flight = AtomicUsize::new(0);
        let most = Mutex::new((0usize, 0usize));
        let runs = AtomicUsize::new(0);
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None).timing_first_calls();
        tuner
            .pick(
                4,
                || ("overlap".to_string(), names(&["a", "b", "c", "d"])),
                &SETTLE,
                |index| {
                    let warm_up = runs.fetch_add(1, Ordering::SeqCst) < 4;
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    {
                        let mut most = most.lock().unwrap();
                        if warm_up {
                            most.0 = most.0.max(now);
                        } else {
                            most.1 = most.1.max(now);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(if warm_up { 50 } else { 1 }));
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    Ok(index)
                },
            )
            .unwrap();
        let (warm_up, timed) = *most.lock().unwrap();
        assert_eq!(warm_up, cores.clamp(1, 4), "warm-ups at once");
        assert_eq!(timed, 1, "timed runs at once");
    }

    /// Tuners of one adapter share their choices, and threads asking for a key that another
    /// thread is timing wait for its choice: every thread runs the same candidate.
    #[test]
    fn tuners_of_one_adapter_share_choices_and_time_each_key_once() {
        let adapter = format!("shared adapter {}", std::process::id());
        let tuners: Vec<Autotuner> = (0..4)
            .map(|_| {
                Autotuner::for_adapter(AutotuneMode::On, adapter.clone(), None).timing_first_calls()
            })
            .collect();
        let chosen: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = tuners
                .iter()
                .map(|tuner| scope.spawn(move || tune(tuner, "matmul shared").0))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(chosen.iter().all(|&c| c == chosen[0]), "{chosen:?}");
        let timed: u64 = tuners.iter().map(Autotuner::measured).sum();
        assert_eq!(timed, 2, "one thread timed the two working candidates");
        // Another adapter's tuner shares nothing.
        let other = Autotuner::for_adapter(AutotuneMode::On, format!("{adapter} B"), None)
            .timing_first_calls();
        assert!(tune(&other, "matmul shared").1.len() > 1);
    }

    /// The timing runs' memory is put back out of the peak: the peaks saved before timing are
    /// restored after it, and a key whose choice is known never touches them.
    #[test]
    fn timing_runs_are_left_out_of_the_memory_peak() {
        struct PeakClock {
            restored: RefCell<Vec<(u64, u64)>>,
        }
        impl TuningClock for PeakClock {
            fn settle(&self) -> Result<()> {
                Ok(())
            }
            fn peaks(&self) -> Option<(u64, u64)> {
                Some((7, 5))
            }
            fn restore_peaks(&self, peaks: (u64, u64)) {
                self.restored.borrow_mut().push(peaks);
            }
        }
        let clock = PeakClock {
            restored: RefCell::new(Vec::new()),
        };
        let tuner = Autotuner::new(AutotuneMode::On, "adapter".into(), None).timing_first_calls();
        for _ in 0..3 {
            tuner
                .pick(2, || ("peaks".to_string(), names(&["a", "b"])), &clock, Ok)
                .unwrap();
        }
        assert_eq!(clock.restored.into_inner(), vec![(7, 5)]);
    }
}
