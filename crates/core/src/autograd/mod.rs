//! Reverse-mode automatic differentiation. An op records a `GradFn` (its inputs and whatever
//! its derivative needs) only when an input is tracked and gradients are enabled. `backward`
//! sorts the graph topologically (iteratively: deep graphs cannot overflow the stack), walks it
//! in reverse with ordinary tensor ops (so gradients are computed on the tensor's own device)
//! and accumulates into the leaves' `.grad`, as PyTorch does.

pub(crate) mod hooks;
mod rules;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
pub use crate::grad_mode::{enable_grad, is_grad_enabled, no_grad, EnableGradGuard, NoGradGuard};
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::{Tensor, TensorId};
pub use hooks::{GradientHook, HookHandle};

/// How a tensor was produced, with what its derivative needs.
pub(crate) enum GradFn {
    Unary {
        input: Tensor,
        op: UnaryOp,
    },
    /// A unary op whose derivative is a function of its output (relu, exp, sigmoid, tanh: see
    /// `UnaryOp::derivative_from_output`). It keeps the output (a view without a record, so no
    /// cycle) instead of the input, which then is often freed: the output is usually saved by the
    /// next op anyway, as PyTorch does.
    UnaryFromOutput {
        input: Tensor,
        output: Tensor,
        op: UnaryOp,
    },
    /// The running sum along `dim` (the `cumsum` primitive): the rule reads only the output
    /// gradient (`dx = sum(g) - cumsum(g) + g` along `dim`, the reversed running sum).
    Cumsum {
        input: Tensor,
        dim: usize,
    },
    /// Softmax (`log` false) or log-softmax (`log` true) over the last dim (the
    /// `softmax_last` and `log_softmax_last` primitives): the rule reads only the output `y`
    /// (`dx = y * (g - sum(g * y))` or `dx = g - exp(y) * sum(g)` per row), kept like
    /// `UnaryFromOutput`'s.
    SoftmaxLast {
        input: Tensor,
        output: Tensor,
        log: bool,
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
    /// The depthwise convolution (`Storage::depthwise_conv2d`: groups == channels, weight
    /// `[c * multiplier, 1, kh, kw]`; the bias is a separate add).
    DepthwiseConv2d {
        input: Tensor,
        weight: Tensor,
        params: crate::tensor::Conv2dParams,
    },
    /// The transposed convolution of one group (the `conv2d_backward_input` primitive used
    /// as a forward): `input` plays the adjoint convolution's output gradient.
    ConvTranspose2d {
        input: Tensor,
        weight: Tensor,
        params: crate::tensor::Conv2dParams,
    },
    /// Max pooling as one node: its derivative routes each output gradient to the window's
    /// first maximal input, found again from the input and the output (a view without a record).
    MaxPool2d {
        input: Tensor,
        output: Tensor,
        window: crate::geometry::Window,
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
    IndexAdd {
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

/// An op's record as its output holds it: shared by the output and its graph-edge twins, and
/// emptied by backward once used (unless the graph is retained), which frees what it saved.
pub(crate) struct GradNode {
    record: Mutex<Option<Arc<GradFn>>>,
    /// Gradient hooks on the output (`Tensor::register_hook`); made on the first one.
    hooks: std::sync::OnceLock<Arc<hooks::HookList>>,
    /// Whether the output keeps its gradient in `.grad` (`Tensor::retain_grad`).
    retains_grad: std::sync::atomic::AtomicBool,
}

impl GradNode {
    pub(crate) fn new(grad_fn: GradFn) -> GradNode {
        GradNode {
            record: Mutex::new(Some(Arc::new(grad_fn))),
            hooks: std::sync::OnceLock::new(),
            retains_grad: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Mark the output as keeping its gradient; whether it already did.
    pub(crate) fn start_retaining_grad(&self) -> bool {
        self.retains_grad
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// The output's hook list, made on first use.
    pub(crate) fn hooks(&self) -> &Arc<hooks::HookList> {
        self.hooks.get_or_init(Default::default)
    }

    /// The output's hook list, where one was made.
    pub(crate) fn existing_hooks(&self) -> Option<&Arc<hooks::HookList>> {
        self.hooks.get()
    }

    /// The record, unless released.
    pub(crate) fn record(&self) -> Option<Arc<GradFn>> {
        self.record
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Drop the record (and so the tensors it saved).
    pub(crate) fn release(&self) {
        self.record
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    }
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
            | GradFn::UnaryFromOutput { input, .. }
            | GradFn::SoftmaxLast { input, .. }
            | GradFn::Cumsum { input, .. }
            | GradFn::MaxPool2d { input, .. }
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
            GradFn::Conv2d { input, weight, .. }
            | GradFn::DepthwiseConv2d { input, weight, .. }
            | GradFn::ConvTranspose2d { input, weight, .. } => vec![input, weight],
            GradFn::Where {
                on_true, on_false, ..
            } => vec![on_true, on_false],
            GradFn::ScatterAdd { base, src, .. } | GradFn::IndexAdd { base, src, .. } => {
                vec![base, src]
            }
            GradFn::Cat { inputs, .. } | GradFn::Custom { inputs, .. } => inputs.iter().collect(),
        }
    }
}

impl GradFn {
    /// Replace each input whose values the derivative rule (in `rules.rs`) never reads by its
    /// storage-less graph edge, so the record keeps alive only what backward needs. Kept in
    /// step with the rules: an arm here that says "edge" matches a rule that reads only the
    /// input's shape, dtype or device.
    pub(crate) fn keep_only_needed(self) -> GradFn {
        match self {
            GradFn::Unary { input, op } => {
                let input = match op {
                    UnaryOp::Neg
                    | UnaryOp::Sign
                    | UnaryOp::Floor
                    | UnaryOp::Ceil
                    | UnaryOp::Round
                    | UnaryOp::Trunc => input.graph_edge(),
                    UnaryOp::Abs
                    | UnaryOp::Exp
                    | UnaryOp::Log
                    | UnaryOp::Sqrt
                    | UnaryOp::Rsqrt
                    | UnaryOp::Recip
                    | UnaryOp::Sin
                    | UnaryOp::Cos
                    | UnaryOp::Tanh
                    | UnaryOp::Sigmoid
                    | UnaryOp::Relu
                    | UnaryOp::Gelu
                    | UnaryOp::Erf
                    | UnaryOp::Silu => input,
                };
                GradFn::Unary { input, op }
            }
            GradFn::Cumsum { input, dim } => GradFn::Cumsum {
                input: input.graph_edge(),
                dim,
            },
            GradFn::SoftmaxLast { input, output, log } => GradFn::SoftmaxLast {
                input: input.graph_edge(),
                output,
                log,
            },
            GradFn::UnaryFromOutput { input, output, op } => GradFn::UnaryFromOutput {
                input: input.graph_edge(),
                output,
                op,
            },
            GradFn::Binary { lhs, rhs, op } => match op {
                BinaryOp::Add
                | BinaryOp::Sub
                | BinaryOp::Eq
                | BinaryOp::Ne
                | BinaryOp::Lt
                | BinaryOp::Le
                | BinaryOp::Gt
                | BinaryOp::Ge
                | BinaryOp::BitwiseAnd
                | BinaryOp::BitwiseOr
                | BinaryOp::BitwiseXor
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRight => GradFn::Binary {
                    lhs: lhs.graph_edge(),
                    rhs: rhs.graph_edge(),
                    op,
                },
                BinaryOp::Mul
                | BinaryOp::Div
                | BinaryOp::Maximum
                | BinaryOp::Minimum
                | BinaryOp::Pow => GradFn::Binary { lhs, rhs, op },
            },
            GradFn::BinaryScalar {
                input,
                op,
                scalar,
                scalar_on_left,
            } => {
                let needs_values = match (op, scalar_on_left) {
                    (BinaryOp::Div, true)
                    | (BinaryOp::Pow, _)
                    | (BinaryOp::Maximum, _)
                    | (BinaryOp::Minimum, _) => true,
                    (BinaryOp::Add, _)
                    | (BinaryOp::Sub, _)
                    | (BinaryOp::Mul, _)
                    | (BinaryOp::Div, false)
                    | (BinaryOp::Eq, _)
                    | (BinaryOp::Ne, _)
                    | (BinaryOp::Lt, _)
                    | (BinaryOp::Le, _)
                    | (BinaryOp::Gt, _)
                    | (BinaryOp::Ge, _)
                    | (BinaryOp::BitwiseAnd, _)
                    | (BinaryOp::BitwiseOr, _)
                    | (BinaryOp::BitwiseXor, _)
                    | (BinaryOp::ShiftLeft, _)
                    | (BinaryOp::ShiftRight, _) => false,
                };
                GradFn::BinaryScalar {
                    input: if needs_values {
                        input
                    } else {
                        input.graph_edge()
                    },
                    op,
                    scalar,
                    scalar_on_left,
                }
            }
            GradFn::Where {
                condition,
                on_true,
                on_false,
            } => GradFn::Where {
                condition,
                on_true: on_true.graph_edge(),
                on_false: on_false.graph_edge(),
            },
            GradFn::Reduce { input, op, dims } => {
                let input = match op {
                    ReduceOp::Sum | ReduceOp::Mean | ReduceOp::ArgMax | ReduceOp::ArgMin => {
                        input.graph_edge()
                    }
                    ReduceOp::Max | ReduceOp::Min => input,
                };
                GradFn::Reduce { input, op, dims }
            }
            // Their rules read every input they hold.
            needs_all @ (GradFn::Matmul { .. }
            | GradFn::Conv2d { .. }
            | GradFn::DepthwiseConv2d { .. }
            | GradFn::ConvTranspose2d { .. }
            | GradFn::MaxPool2d { .. }
            | GradFn::Custom { .. }) => needs_all,
            GradFn::Reshape { input } => GradFn::Reshape {
                input: input.graph_edge(),
            },
            GradFn::Permute { input, perm } => GradFn::Permute {
                input: input.graph_edge(),
                perm,
            },
            GradFn::BroadcastTo { input } => GradFn::BroadcastTo {
                input: input.graph_edge(),
            },
            GradFn::Narrow { input, dim, start } => GradFn::Narrow {
                input: input.graph_edge(),
                dim,
                start,
            },
            GradFn::StridedView { input, relative } => GradFn::StridedView {
                input: input.graph_edge(),
                relative,
            },
            GradFn::Copy { input } => GradFn::Copy {
                input: input.graph_edge(),
            },
            GradFn::Cast { input } => GradFn::Cast {
                input: input.graph_edge(),
            },
            GradFn::ToDevice { input } => GradFn::ToDevice {
                input: input.graph_edge(),
            },
            GradFn::IndexSelect {
                input,
                indices,
                dim,
            } => GradFn::IndexSelect {
                input: input.graph_edge(),
                indices,
                dim,
            },
            GradFn::Gather {
                input,
                indices,
                dim,
            } => GradFn::Gather {
                input: input.graph_edge(),
                indices,
                dim,
            },
            GradFn::ScatterAdd {
                base,
                indices,
                src,
                dim,
            } => GradFn::ScatterAdd {
                base: base.graph_edge(),
                indices,
                src: src.graph_edge(),
                dim,
            },
            GradFn::IndexAdd {
                base,
                indices,
                src,
                dim,
            } => GradFn::IndexAdd {
                base: base.graph_edge(),
                indices,
                src: src.graph_edge(),
                dim,
            },
            GradFn::Cat { inputs, dim } => GradFn::Cat {
                inputs: inputs.iter().map(Tensor::graph_edge).collect(),
                dim,
            },
        }
    }
}

/// Backward from a scalar (one-element) tensor.
pub(crate) fn backward(root: &Tensor) -> Result<()> {
    let seed = scalar_seed(root)?;
    backward_with_hook(root, seed, false, &mut |_| Ok(()))
}

/// Backward from a scalar `root`, keeping the graph for another backward.
pub(crate) fn backward_retaining(root: &Tensor) -> Result<()> {
    let seed = scalar_seed(root)?;
    backward_with_hook(root, seed, true, &mut |_| Ok(()))
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
pub(crate) fn backward_with(root: &Tensor, gradient: Tensor, retain_graph: bool) -> Result<()> {
    backward_with_hook(root, gradient, retain_graph, &mut |_| Ok(()))
}

/// Backward with an explicit gradient for `root`, calling `on_grad_ready(leaf)` once per leaf
/// right after its `.grad` is final: as soon as the walk (outputs before inputs) has processed
/// every recorded use of the leaf, not when it reaches the leaf itself (a parameter, made
/// before everything, comes last in the walk). Unless `retain_graph`, each node's record is
/// released right after its rule ran, so saved tensors are freed as backward goes.
pub(crate) fn backward_with_hook(
    root: &Tensor,
    gradient: Tensor,
    retain_graph: bool,
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
        let Some(grad_fn) = node.grad_fn() else {
            continue;
        };
        for input in grad_fn.inputs() {
            if input.is_tracked() && input.is_leaf() {
                *leaf_uses.entry(input.id()).or_default() += 1;
            }
        }
    }
    let mut grads: HashMap<TensorId, Tensor> = HashMap::new();
    grads.insert(root.id(), in_dtype_of(gradient, root)?);
    for node in order.iter().rev() {
        let Some(grad) = grads.remove(&node.id()) else {
            continue;
        };
        if node.is_leaf() {
            // A leaf whose uses did not all contribute (or the root itself).
            accumulate_leaf(node, grad, on_grad_ready)?;
            continue;
        }
        // Every contribution is in: the output's hooks see its whole gradient.
        let grad = node.apply_gradient_hooks(grad)?;
        let Some(grad_fn) = node.grad_fn() else {
            return Err(Error::Autograd {
                message: "trying to backward through the graph a second time: its saved tensors were freed by the first backward; use backward_retain_graph for the first one".into(),
            });
        };
        let input_grads = rules::input_gradients(&grad_fn, &grad)?;
        drop(grad);
        for (input, input_grad) in grad_fn.inputs().into_iter().zip(input_grads) {
            let Some(input_grad) = input_grad else {
                continue;
            };
            if !input.is_tracked() {
                continue;
            }
            let input_grad = in_dtype_of(input_grad, input)?;
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
        drop(grad_fn);
        if !retain_graph {
            node.release_grad_fn();
        }
    }
    Ok(())
}

/// `gradient` in the dtype of the tensor it is the gradient of. A gradient always has its
/// tensor's dtype, as in PyTorch: an explicit upstream gradient of another dtype, or a rule
/// whose result follows type promotion (an f16 activation added to an f32 one receives the
/// sum's f32 gradient), is cast here once, so no rule has to check what it receives.
fn in_dtype_of(gradient: Tensor, tensor: &Tensor) -> Result<Tensor> {
    if gradient.dtype() == tensor.dtype() {
        Ok(gradient)
    } else {
        gradient.to_dtype(tensor.dtype())
    }
}

/// Add a leaf's final gradient to its `.grad` (like PyTorch) and report it to the hook.
fn accumulate_leaf(
    leaf: &Tensor,
    grad: Tensor,
    on_grad_ready: &mut dyn FnMut(&Tensor) -> Result<()>,
) -> Result<()> {
    let grad = leaf.apply_gradient_hooks(grad)?;
    let total = match leaf.grad() {
        Some(previous) => previous.add(&grad)?,
        None => grad,
    };
    leaf.set_grad(Some(total));
    on_grad_ready(leaf)
}

/// Nodes reachable from `root` through tracked edges, inputs before outputs, each as its
/// storage-less graph edge: the order lives through the whole walk, and holding the tensors
/// themselves would keep every saved activation (and every f16 weight copy of autocast) alive
/// until backward ends instead of freeing it once its node has run.
fn topological_order(root: &Tensor) -> Vec<Tensor> {
    let mut order = Vec::new();
    let mut visited: HashSet<TensorId> = HashSet::new();
    // (node, children pushed yet?)
    let mut stack: Vec<(Tensor, bool)> = vec![(root.graph_edge(), false)];
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
                // A node reached twice is skipped when popped (`visited`).
                if input.is_tracked() {
                    stack.push((input.graph_edge(), false));
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
