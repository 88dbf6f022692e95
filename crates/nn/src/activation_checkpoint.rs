//! Gradient (activation) checkpointing, like `torch.utils.checkpoint.checkpoint`: the forward
//! runs without recording a graph, so its intermediate activations are freed at once; only the
//! input is kept. In backward the forward is recomputed with the graph on (under
//! `anygrad_core::enable_grad`, since backward runs under `no_grad`) and backpropagated from
//! the incoming gradient: the input gets its gradient through the checkpoint node, the
//! parameters (leaves) accumulate theirs directly, as PyTorch's reentrant checkpoint does.
//! Memory drops from every layer's activations to the inputs of the checkpointed blocks plus
//! one block's activations at a time, for the cost of a second forward.
//!
//! The recomputed forward equals the first one, as PyTorch's `preserve_rng_state` and its
//! autocast replay ensure there: the global generator's `(seed, offset)` at the checkpoint is
//! saved and set again for the recompute (then the generator continues where it was), so
//! dropout in training mode draws the same masks; and an autocast scope active at the
//! checkpoint is entered again for the recompute (backward usually runs outside it). Random
//! draws that another thread makes while a recompute runs may repeat numbers of that range.

use std::sync::Arc;

use anygrad_core::random::{generator_state, set_generator_state};
use anygrad_core::{
    autocast, autocast_dtype, enable_grad, no_grad, CustomBackward, DType, Result, Tensor,
};

use crate::Module;

/// The checkpoint node's backward: recompute, then backpropagate the output gradient.
struct Recompute<F> {
    function: F,
    /// The global generator's `(seed, offset)` when the forward ran.
    generator: (u64, u64),
    /// The autocast dtype active when the forward ran.
    autocast: Option<DType>,
}

/// Puts the global generator back where it was when dropped (after a replayed recompute,
/// also when the recompute fails).
struct ResumeGenerator((u64, u64));

impl Drop for ResumeGenerator {
    fn drop(&mut self) {
        set_generator_state(self.0 .0, self.0 .1);
    }
}

impl<F> CustomBackward for Recompute<F>
where
    F: Fn(&Tensor) -> Result<Tensor> + Send + Sync,
{
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let mut grads: Vec<Option<Tensor>> = vec![None; inputs.len()];
        let Some(input) = inputs.first() else {
            return Ok(grads);
        };
        let _grad_on = enable_grad();
        let _resume = ResumeGenerator(generator_state());
        set_generator_state(self.generator.0, self.generator.1);
        let _autocast = match self.autocast {
            Some(dtype) => Some(autocast(dtype, input.device())?),
            None => None,
        };
        let leaf = input.detach().requires_grad_(input.requires_grad());
        let output = (self.function)(&leaf)?;
        if output.requires_grad() {
            output.backward_with(&grad_output.detach())?;
        }
        grads[0] = leaf.grad();
        Ok(grads)
    }
}

/// Run `function(input)` checkpointed: no activations are kept, the forward is recomputed in
/// backward. `parameters` are the tensors `function` learns (so the node is recorded even when
/// `input` needs no gradient); they receive their gradients during the recompute.
pub fn checkpoint_fn<F>(function: F, input: &Tensor, parameters: &[Tensor]) -> Result<Tensor>
where
    F: Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
{
    let generator = generator_state();
    let autocast = autocast_dtype();
    let output = {
        let _no_graph = no_grad();
        function(input)?
    };
    if !anygrad_core::is_grad_enabled() {
        return Ok(output);
    }
    let mut inputs: Vec<&Tensor> = vec![input];
    inputs.extend(parameters.iter());
    Ok(Tensor::with_custom_backward(
        &output,
        &inputs,
        Arc::new(Recompute {
            function,
            generator,
            autocast,
        }),
    ))
}

/// Run `module.forward(input)` checkpointed (see [`checkpoint_fn`]); the module's parameters
/// get their gradients during the recompute in backward.
pub fn checkpoint<M>(module: &Arc<M>, input: &Tensor) -> Result<Tensor>
where
    M: Module + Send + Sync + 'static,
{
    let parameters: Vec<Tensor> = module
        .named_parameters()
        .into_iter()
        .map(|(_, tensor)| tensor)
        .collect();
    let module = Arc::clone(module);
    checkpoint_fn(move |x| module.forward(x), input, &parameters)
}
