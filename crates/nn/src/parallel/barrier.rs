//! A barrier for the replica threads of one data-parallel step that can be *aborted*: when a
//! replica fails (an error or a panic) it aborts the barrier, and every thread waiting on it,
//! or arriving later, gets an error instead of waiting forever. `std::sync::Barrier` cannot do
//! this, and a failed replica must never hang the others.

use std::sync::{Condvar, Mutex};

use anygrad_core::{Error, Result};

/// The message of the error a waiting replica gets when another one failed (the caller reports
/// the failing replica's own error instead).
pub(crate) const ABORTED: &str = "another replica failed during the step";

#[derive(Default)]
struct State {
    arrived: usize,
    generation: u64,
    aborted: bool,
}

/// A reusable barrier for `parties` threads with an abort switch.
pub(crate) struct AbortableBarrier {
    parties: usize,
    state: Mutex<State>,
    wake: Condvar,
}

impl AbortableBarrier {
    /// A barrier for `parties` threads.
    pub(crate) fn new(parties: usize) -> AbortableBarrier {
        AbortableBarrier {
            parties,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        }
    }

    /// Wait until all parties arrived (`Ok`) or the barrier was aborted (`Err`).
    pub(crate) fn wait(&self) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.aborted {
            return Err(Error::invalid("DataParallel", ABORTED));
        }
        let generation = state.generation;
        state.arrived += 1;
        if state.arrived == self.parties {
            state.arrived = 0;
            state.generation += 1;
            self.wake.notify_all();
            return Ok(());
        }
        while state.generation == generation && !state.aborted {
            state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        if state.generation == generation {
            Err(Error::invalid("DataParallel", ABORTED))
        } else {
            Ok(())
        }
    }

    /// Release every waiter with an error, now and for every later `wait`.
    pub(crate) fn abort(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.aborted = true;
        self.wake.notify_all();
    }
}

/// Aborts the barrier when dropped while armed: a replica thread that panics unwinds through
/// it, so the other replicas are released.
pub(crate) struct AbortOnDrop<'a> {
    barrier: &'a AbortableBarrier,
    armed: bool,
}

impl<'a> AbortOnDrop<'a> {
    /// Armed guard over `barrier`.
    pub(crate) fn new(barrier: &'a AbortableBarrier) -> AbortOnDrop<'a> {
        AbortOnDrop {
            barrier,
            armed: true,
        }
    }

    /// The replica finished (successfully or with an error it reported): abort only on error.
    pub(crate) fn finish<T>(mut self, result: Result<T>) -> Result<T> {
        self.armed = false;
        if result.is_err() {
            self.barrier.abort();
        }
        result
    }
}

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.barrier.abort();
        }
    }
}

/// Whether `error` is only the echo of another replica's failure.
pub(crate) fn is_abort_echo(error: &Error) -> bool {
    matches!(error, Error::InvalidArgument { op: "DataParallel", message } if message == ABORTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_releases_waiters() {
        let barrier = AbortableBarrier::new(3);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| barrier.wait());
            std::thread::sleep(std::time::Duration::from_millis(20));
            barrier.abort();
            assert!(waiter.join().expect("no panic").is_err());
        });
        assert!(barrier.wait().is_err());
    }

    #[test]
    fn barrier_is_reusable() {
        let barrier = AbortableBarrier::new(2);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| (0..5).map(|_| barrier.wait()).collect::<Vec<_>>());
            for _ in 0..5 {
                barrier.wait().expect("both arrive");
            }
            assert!(other.join().expect("no panic").iter().all(|r| r.is_ok()));
        });
    }
}
