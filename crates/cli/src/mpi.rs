//! The MPI communicator behind `anygrad train --distributed` (cargo feature `mpi`: rsmpi over
//! the system's OpenMPI). It implements anygrad's `Collective`: the gradient all-reduce is a
//! reduce to rank 0 followed by a broadcast, so every rank receives the very same bits (an
//! `MPI_Allreduce` may sum in a different order on different ranks), and
//! [`MpiCollective::abort`] ends the whole job when one rank fails.

use anygrad::nn::Collective;
use anygrad::Result;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The world communicator of this MPI job.
pub struct MpiCollective {
    world: SimpleCommunicator,
    local_rank: usize,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

impl MpiCollective {
    /// Initialize MPI (once per process).
    pub fn init() -> std::result::Result<MpiCollective, String> {
        let universe = mpi::initialize().ok_or("MPI was already initialized in this process")?;
        let world = universe.world();
        // The rank among the processes of this host: it picks the GPU.
        let local_rank = world.split_shared(world.rank()).rank() as usize;
        Ok(MpiCollective {
            world,
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

impl Collective for MpiCollective {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn world_size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
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
        self.world
            .process_at_rank(root as i32)
            .broadcast_into(values);
        Ok(())
    }
}
