//! Reverse-mode automatic differentiation. An op records a `GradFn` (its inputs and whatever
//! its derivative needs) only when an input is tracked and gradients are enabled. `backward`
//! sorts the graph topologically (iteratively: deep graphs cannot overflow the stack), walks it
//! in reverse with ordinary tensor ops (so gradients are computed on the tensor's own device)
//! and accumulates into the leaves' `.grad`, as PyTorch does.

mod rules;

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::{Tensor, TensorId};

/// How a tensor was produced, with what its derivative needs.
pub(crate) enum GradFn {
    Unary {
        input: Tensor,
        op: UnaryOp,
    },
    Binary {
        lhs: Tensor,
        rhs: Tensor,
        op: BinaryOp,
    },
    BinaryScalar {
        input: Tensor,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    },
    Where {
        condition: Tensor,
        on_true: Tensor,
        on_false: Tensor,
    },
    Reduce {
        input: Tensor,
        op: ReduceOp,
        dims: Vec<usize>,
    },
    Matmul {
        lhs: Tensor,
        rhs: Tensor,
    },
    /// The direct one-group convolution (`Storage::conv2d`; the bias is a separate add).
    Conv2d {
        input: Tensor,
        weight: Tensor,
        params: crate::tensor::Conv2dParams,
    },
    Reshape {
        input: Tensor,
    },
    Permute {
        input: Tensor,
        perm: Vec<usize>,
    },
    BroadcastTo {
        input: Tensor,
    },
    Narrow {
        input: Tensor,
        dim: usize,
        start: usize,
    },
    /// A non-overlapping strided view of a contiguous input (`relative` is the view's layout
    /// measured from the input's first element).
    StridedView {
        input: Tensor,
        relative: Layout,
    },
    Copy {
        input: Tensor,
    },
    Cast {
        input: Tensor,
    },
    ToDevice {
        input: Tensor,
    },
    IndexSelect {
        input: Tensor,
        indices: Tensor,
        dim: usize,
    },
    Gather {
        input: Tensor,
        indices: Tensor,
        dim: usize,
    },
    ScatterAdd {
        base: Tensor,
        indices: Tensor,
        src: Tensor,
        dim: usize,
    },
    Cat {
        inputs: Vec<Tensor>,
        dim: usize,
    },
    Custom {
        inputs: Vec<Tensor>,
        backward: std::sync::Arc<dyn CustomBackward>,
    },
}

/// The backward of a user-defined op (see the custom-op API): maps the output gradient and the
/// inputs to one optional gradient per input.
pub trait CustomBackward: Send + Sync {
    /// Gradients with respect to each input (`None` where the input needs none).
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>>;
}

impl GradFn {
    /// The tensors this op read (graph edges).
    pub(crate) fn inputs(&self) -> Vec<&Tensor> {
        match self {
            GradFn::Unary { input, .. }
            | GradFn::BinaryScalar { input, .. }
            | GradFn::Reduce { input, .. }
            | GradFn::Reshape { input }
            | GradFn::Permute { input, .. }
            | GradFn::BroadcastTo { input }
            | GradFn::Narrow { input, .. }
            | GradFn::StridedView { input, .. }
            | GradFn::Copy { input }
            | GradFn::Cast { input }
            | GradFn::ToDevice { input }
            | GradFn::IndexSelect { input, .. }
            | GradFn::Gather { input, .. } => vec![input],
            GradFn::Binary { lhs, rhs, .. } | GradFn::Matmul { lhs, rhs } => vec![lhs, rhs],
            GradFn::Conv2d { input, weight, .. } => vec![input, weight],
            GradFn::Where {
                on_true, on_false, ..
            } => vec![on_true, on_false],
            GradFn::ScatterAdd { base, src, .. } => vec![base, src],
            GradFn::Cat { inputs, .. } | GradFn::Custom { inputs, .. } => inputs.iter().collect(),
        }
    }
}

thread_local! {
    static GRAD_DISABLED_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// True unless inside a `no_grad` scope on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_DISABLED_DEPTH.with(|depth| depth.get() == 0)
}

/// While alive, ops record no graph (inference, optimizer updates). Like `torch.no_grad()`.
pub struct NoGradGuard {
    _private: (),
}

/// Disable gradient recording until the returned guard is dropped.
pub fn no_grad() -> NoGradGuard {
    GRAD_DISABLED_DEPTH.with(|depth| depth.set(depth.get() + 1));
    NoGradGuard { _private: () }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_DISABLED_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// Backward from a scalar (one-element) tensor.
pub(crate) fn backward(root: &Tensor) -> Result<()> {
    let seed = scalar_seed(root)?;
    backward_with(root, seed)
}

/// The implicit upstream gradient of a scalar root: ones (an error for other shapes).
pub(crate) fn scalar_seed(root: &Tensor) -> Result<Tensor> {
    if root.numel() != 1 {
        return Err(Error::Autograd {
            message: format!(
                "grad can be implicitly created only for scalar outputs (shape {:?}); use backward_with(gradient)",
                root.shape()
            ),
        });
    }
    Tensor::ones(root.shape(), root.dtype(), root.device())
}

/// Backward with an explicit gradient for `root`.
pub(crate) fn backward_with(root: &Tensor, gradient: Tensor) -> Result<()> {
    backward_with_hook(root, gradient, &mut |_| Ok(()))
}

/// Backward with an explicit gradient for `root`, calling `on_grad_ready(leaf)` once per leaf
/// right after its `.grad` is final: as soon as the walk (outputs before inputs) has processed
/// every recorded use of the leaf, not when it reaches the leaf itself (a parameter, made
/// before everything, comes last in the walk).
pub(crate) fn backward_with_hook(
    root: &Tensor,
    gradient: Tensor,
    on_grad_ready: &mut dyn FnMut(&Tensor) -> Result<()>,
) -> Result<()> {
    if !root.requires_grad() {
        return Err(Error::Autograd {
            message: "the tensor does not require grad and has no graph; call requires_grad_(true) on a leaf before computing it".into(),
        });
    }
    if gradient.shape() != root.shape() {
        return Err(Error::ShapeMismatch {
            op: "backward",
            lhs: root.shape().to_vec(),
            rhs: gradient.shape().to_vec(),
            reason: "the gradient must have the output's shape".into(),
        });
    }
    let _guard = no_grad();
    // Creation order is a topological order (an op's output is made after its inputs), and
    // walking it backwards handles the last layers first, as PyTorch's engine does (the
    // depth-first order alone can leave a late layer's weight branch for the very end).
    let mut order = topological_order(root);
    order.sort_unstable_by_key(Tensor::id);
    // Uses of each leaf not processed yet: at zero its gradient is final and is accumulated
    // at once (the walk may reach the leaf itself much later).
    let mut leaf_uses: HashMap<TensorId, usize> = HashMap::new();
    for node in &order {
        for input in node.grad_fn().map(GradFn::inputs).unwrap_or_default() {
            if input.is_tracked() && input.grad_fn().is_none() {
                *leaf_uses.entry(input.id()).or_default() += 1;
            }
        }
    }
    let mut grads: HashMap<TensorId, Tensor> = HashMap::new();
    grads.insert(root.id(), gradient);
    for node in order.iter().rev() {
        let Some(grad) = grads.remove(&node.id()) else {
            continue;
        };
        match node.grad_fn() {
            // A leaf whose uses did not all contribute (or the root itself).
            None => accumulate_leaf(node, grad, on_grad_ready)?,
            Some(grad_fn) => {
                let input_grads = rules::input_gradients(grad_fn, &grad)?;
                for (input, input_grad) in grad_fn.inputs().into_iter().zip(input_grads) {
                    let Some(input_grad) = input_grad else {
                        continue;
                    };
                    if !input.is_tracked() {
                        continue;
                    }
                    let entry = match grads.remove(&input.id()) {
                        Some(existing) => existing.add(&input_grad)?,
                        None => input_grad,
                    };
                    match leaf_uses.get_mut(&input.id()) {
                        Some(uses) if *uses <= 1 => {
                            leaf_uses.remove(&input.id());
                            accumulate_leaf(input, entry, on_grad_ready)?;
                        }
                        Some(uses) => {
                            *uses -= 1;
                            grads.insert(input.id(), entry);
                        }
                        None => {
                            grads.insert(input.id(), entry);
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Add a leaf's final gradient to its `.grad` (like PyTorch) and report it to the hook.
fn accumulate_leaf(
    leaf: &Tensor,
    grad: Tensor,
    on_grad_ready: &mut dyn FnMut(&Tensor) -> Result<()>,
) -> Result<()> {
    let total = match leaf.grad() {
        Some(previous) => previous.add(&grad)?,
        None => grad,
    };
    leaf.set_grad(Some(total));
    on_grad_ready(leaf)
}

/// Nodes reachable from `root` through tracked edges, inputs before outputs.
fn topological_order(root: &Tensor) -> Vec<Tensor> {
    let mut order = Vec::new();
    let mut visited: HashSet<TensorId> = HashSet::new();
    // (node, children pushed yet?)
    let mut stack: Vec<(Tensor, bool)> = vec![(root.clone(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
            continue;
        }
        if !visited.insert(node.id()) {
            continue;
        }
        stack.push((node.clone(), true));
        if let Some(grad_fn) = node.grad_fn() {
            for input in grad_fn.inputs() {
                if input.is_tracked() && !visited.contains(&input.id()) {
                    stack.push((input.clone(), false));
                }
            }
        }
    }
    order
}

impl Tensor {
    /// Attach a user-defined backward to `output`, which was computed from `inputs` outside
    /// autograd (the hook the custom-op API uses). Returns `output` unchanged when no input is
    /// tracked or gradients are disabled.
    pub fn with_custom_backward(
        output: &Tensor,
        inputs: &[&Tensor],
        backward: std::sync::Arc<dyn CustomBackward>,
    ) -> Tensor {
        let owned: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
        let grad_fn = Tensor::record(inputs, output.dtype(), || GradFn::Custom {
            inputs: owned,
            backward,
        });
        match grad_fn {
            Some(grad_fn) => Tensor::from_view(
                output.storage_arc().clone(),
                output.layout().clone(),
                Some(grad_fn),
            ),
            None => output.clone(),
        }
    }
}
