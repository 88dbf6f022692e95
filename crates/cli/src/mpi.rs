//! The MPI communicator behind `anygrad train --distributed` (cargo feature `mpi`: rsmpi over
//! the system's OpenMPI). It implements anygrad's `Collective`: the gradient all-reduce is a
//! reduce to rank 0 followed by a broadcast, so every rank receives the very same bits (an
//! `MPI_Allreduce` may sum in a different order on different ranks), and
//! [`MpiCollective::abort`] ends the whole job when one rank fails. MPI is initialized with
//! `MPI_THREAD_SERIALIZED` and every call goes through one lock, because the gradient
//! exchange all-reduces from a communication thread while backward runs on the main one.

use anygrad::nn::Collective;
use anygrad::Result;
use mpi::collective::SystemOperation;
use mpi::environment::{Threading, Universe};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The world communicator of this MPI job.
pub struct MpiCollective {
    world: SimpleCommunicator,
    /// Held around every MPI call: at most one thread is inside MPI at a time.
    serial: std::sync::Mutex<()>,
    local_rank: usize,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

impl MpiCollective {
    /// Initialize MPI (once per process).
    pub fn init() -> std::result::Result<MpiCollective, String> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Serialized)
            .ok_or("MPI was already initialized in this process")?;
        if !matches!(threading, Threading::Serialized | Threading::Multiple) {
            return Err(format!(
                "this MPI library provides thread level {threading:?}; anygrad needs \
                 Serialized (calls from a communication thread, one at a time)"
            ));
        }
        let world = universe.world();
        // The rank among the processes of this host: it picks the GPU.
        let local_rank = world.split_shared(world.rank()).rank() as usize;
        Ok(MpiCollective {
            world,
            serial: std::sync::Mutex::new(()),
            local_rank,
            _universe: universe,
        })
    }

    /// This process's index among the ranks on its host.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// End every rank of the job (`MPI_Abort`).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

// SAFETY: the communicator is a handle into the MPI library, which was initialized with
// `MPI_THREAD_SERIALIZED` (checked in `init`): any thread may call MPI as long as no two do
// at once, and every call below holds `serial`. The handle itself is never mutated.
unsafe impl Send for MpiCollective {}
unsafe impl Sync for MpiCollective {}

impl MpiCollective {
    /// Hold the MPI lock.
    fn serialized(&self) -> std::sync::MutexGuard<'_, ()> {
        self.serial.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Collective for MpiCollective {
    fn rank(&self) -> usize {
        let _serial = self.serialized();
        self.world.rank() as usize
    }

    fn world_size(&self) -> usize {
        let _serial = self.serialized();
        self.world.size() as usize
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
        let _serial = self.serialized();
        let root = self.world.process_at_rank(0);
        if self.world.rank() == 0 {
            let mut sum = vec![0f32; values.len()];
            root.reduce_into_root(&values[..], &mut sum[..], SystemOperation::sum());
            values.copy_from_slice(&sum);
        } else {
            root.reduce_into(&values[..], SystemOperation::sum());
        }
        root.broadcast_into(values);
        Ok(())
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()> {
        let _serial = self.serialized();
        self.world
            .process_at_rank(root as i32)
            .broadcast_into(values);
        Ok(())
    }
}
