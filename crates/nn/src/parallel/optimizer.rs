//! [`ReplicatedOptimizer`]: one optimizer per data-parallel replica behind the ordinary
//! [`Optimizer`] trait. Every replica holds the same averaged gradients, so stepping every
//! optimizer (concurrently, one thread per replica) keeps the replicas' parameters
//! bit-identical. Its state (what checkpoints hold) is replica 0's; loading a state loads it
//! into every replica's optimizer.

use anygrad_core::{Error, Result};

use crate::module::Parameter;
use crate::optim::{Optimizer, OptimizerState};

/// The optimizers of every replica of a [`super::DataParallel`], stepped together.
pub struct ReplicatedOptimizer {
    optimizers: Vec<Box<dyn Optimizer + Send>>,
}

impl std::fmt::Debug for ReplicatedOptimizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicatedOptimizer")
            .field("replicas", &self.optimizers.len())
            .finish()
    }
}

impl ReplicatedOptimizer {
    /// Wrap one optimizer per replica (replica 0 first).
    pub fn new(optimizers: Vec<Box<dyn Optimizer + Send>>) -> Result<ReplicatedOptimizer> {
        if optimizers.is_empty() {
            return Err(Error::invalid(
                "ReplicatedOptimizer::new",
                "needs at least one optimizer",
            ));
        }
        Ok(ReplicatedOptimizer { optimizers })
    }

    /// Every replica's optimizer, mutably (data parallelism steps each from its replica's
    /// exchange).
    pub(crate) fn replicas_mut(&mut self) -> &mut [Box<dyn Optimizer + Send>] {
        &mut self.optimizers
    }

    /// The optimizer of replica `index`.
    pub fn replica(&self, index: usize) -> Option<&dyn Optimizer> {
        self.optimizers
            .get(index)
            .map(|o| o.as_ref() as &dyn Optimizer)
    }
}

impl Optimizer for ReplicatedOptimizer {
    fn step(&mut self) -> Result<()> {
        if self.optimizers.len() == 1 {
            return self.optimizers[0].step();
        }
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .optimizers
                .iter_mut()
                .map(|optimizer| scope.spawn(move || optimizer.step()))
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(index, handle)| {
                    handle.join().unwrap_or_else(|_| {
                        Err(Error::invalid(
                            "ReplicatedOptimizer::step",
                            format!("the step of replica {index} panicked"),
                        ))
                    })
                })
                .collect()
        });
        results.into_iter().collect()
    }

    fn supports_partial_step(&self) -> bool {
        self.optimizers.iter().all(|o| o.supports_partial_step())
    }

    fn step_parameters(&mut self, indices: &[usize]) -> Result<()> {
        for optimizer in &mut self.optimizers {
            optimizer.step_parameters(indices)?;
        }
        Ok(())
    }

    /// Replica 0's parameters.
    fn parameters(&self) -> &[(String, Parameter)] {
        self.optimizers[0].parameters()
    }

    /// Every replica's parameters (a `GradScaler` unscales them all; they hold identical
    /// gradients, so its overflow check agrees for every replica and all skip together).
    fn gradient_slots(&self) -> Vec<Parameter> {
        self.optimizers
            .iter()
            .flat_map(|optimizer| optimizer.gradient_slots())
            .collect()
    }

    fn zero_grad(&self) {
        for optimizer in &self.optimizers {
            optimizer.zero_grad();
        }
    }

    fn learning_rate(&self) -> f64 {
        self.optimizers[0].learning_rate()
    }

    fn set_learning_rate(&mut self, learning_rate: f64) {
        for optimizer in &mut self.optimizers {
            optimizer.set_learning_rate(learning_rate);
        }
    }

    fn group_count(&self) -> usize {
        self.optimizers[0].group_count()
    }

    fn group_learning_rate(&self, group: usize) -> Result<f64> {
        self.optimizers[0].group_learning_rate(group)
    }

    fn set_group_learning_rate(&mut self, group: usize, learning_rate: f64) -> Result<()> {
        for optimizer in &mut self.optimizers {
            optimizer.set_group_learning_rate(group, learning_rate)?;
        }
        Ok(())
    }

    fn group_momentum(&self, group: usize) -> Result<Option<f64>> {
        self.optimizers[0].group_momentum(group)
    }

    fn set_group_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        for optimizer in &mut self.optimizers {
            optimizer.set_group_momentum(group, momentum)?;
        }
        Ok(())
    }

    /// Replica 0's state (all replicas hold the same).
    fn state_dict(&self) -> Result<OptimizerState> {
        self.optimizers[0].state_dict()
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        for optimizer in &mut self.optimizers {
            optimizer.load_state_dict(state)?;
        }
        Ok(())
    }
}
