//! Convolution chains fused at load: a 2-D Conv followed by an inference-form
//! BatchNormalization, a residual Add and a Relu (each optional), whose intermediate values
//! have exactly one reader and are not graph outputs, runs as one `Tensor::conv2d_fused` call —
//! the batch norm folded into a per-channel scale and shift (`batch_norm_fold.rs`, kept across
//! runs while valid), the Add's other operand as the residual, Relu as the activation — so
//! that the GPU applies them in the convolution's store, as anygrad's native ResNet does. A
//! Conv with no follower is a chain of one: its bias goes into the store too (the plain
//! `conv2d` adds it in a pass of its own), and on tensor-core GPUs its output takes the
//! channels-last format the fused convolutions around it write.
//!
//! Planning (`fuse_conv_chains`) moves a chain to the position of its last node (by then the
//! residual exists) and merges what its nodes read. Running (`run_chain`) checks what only
//! the values tell (a 2-D float input, one group unless a batch norm folds in, a residual of
//! the output's exact shape, per-channel vectors of the output's channel count) and otherwise
//! runs the chain's nodes one by one, exactly as without fusion; so does a model whose fusion
//! is switched off (`OnnxModel::set_fusion`). `ANYGRAD_ONNX_FUSION=off` plans no chains.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use anygrad_core::{ConvEpilogue, DType, Device, EpilogueActivation, Tensor};

use crate::batch_norm_fold::{BatchNormSources, FoldCache};
use crate::context::{describe_node, NodeContext, SubgraphRunner};
use crate::error::{OnnxError, Result};
use crate::executor::{all_nodes, run_node, PlannedNode, Runtime};
use crate::ops::conv::{conv2d_operands, Conv2dOperands};
use crate::proto::{AttributeType, NodeProto};
use crate::registry::is_default_domain;
use crate::value::Value;

/// The environment variable that, set to `off` (or `0`, `false`, `no`) when a model is
/// loaded, plans no fused chains in it.
pub const FUSION_VARIABLE: &str = "ANYGRAD_ONNX_FUSION";

/// Whether [`FUSION_VARIABLE`] leaves fusion on (it does unless it says `off`, `0`, `false`
/// or `no`).
pub(crate) fn fusion_enabled_by_environment() -> bool {
    match std::env::var(FUSION_VARIABLE) {
        Ok(value) => !matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "false" | "no"
        ),
        Err(_) => true,
    }
}

/// The nodes that follow a Conv (the planned node that holds this chain) in a fused chain,
/// in data-flow order.
pub(crate) struct ConvChain {
    /// An inference-form BatchNormalization of the convolution's output.
    pub batch_norm: Option<PlannedNode>,
    /// An Add of the chain's value and another operand, with the index (0 or 1) of the other
    /// operand: the residual.
    pub add: Option<(PlannedNode, usize)>,
    /// A Relu of the chain's value.
    pub relu: Option<PlannedNode>,
    /// How many runs computed the chain as one fused convolution.
    fused_runs: AtomicUsize,
    /// `[channels]` ones in f32 (the scale without a batch norm), made at the first run.
    ones: OnceLock<Tensor>,
    /// `[channels]` zeros in f32 (the shift without a batch norm or a bias), made at the
    /// first run.
    zeros: OnceLock<Tensor>,
    /// The batch norm's last fold into a scale and shift.
    fold_cache: FoldCache,
}

impl ConvChain {
    /// The followers in data-flow order.
    pub fn followers(&self) -> impl Iterator<Item = &PlannedNode> {
        self.batch_norm
            .iter()
            .chain(self.add.iter().map(|(add, _)| add))
            .chain(self.relu.iter())
    }

    /// The name of the chain's result: its last node's output (`head`'s, the Conv's, in a
    /// chain of one).
    fn output<'a>(&'a self, head: &'a PlannedNode) -> Option<&'a str> {
        self.followers()
            .last()
            .unwrap_or(head)
            .node
            .output
            .first()
            .map(String::as_str)
    }

    /// A cached per-channel f32 vector of `value` (ones or zeros), `[channels]`.
    fn constant_vector(
        cache: &OnceLock<Tensor>,
        channels: usize,
        value: f64,
        device: &Device,
    ) -> anygrad_core::Result<Tensor> {
        if let Some(cached) = cache.get() {
            if cached.shape() == [channels] {
                return Ok(cached.clone());
            }
        }
        let vector = Tensor::full(&[channels], value, DType::F32, device)?;
        let _ = cache.set(vector.clone());
        Ok(vector)
    }
}

/// A chain of nodes that runs as one fused convolution ([`crate::OnnxModel::fused_chains`]);
/// a Conv without followers is a chain of one (its bias applied in the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FusedConvChain {
    /// The chain's nodes as `"name" (OpType)`, the Conv first.
    pub nodes: Vec<String>,
    /// Their operators joined by `+`: `Conv`, `Conv+Relu`, `Conv+Add+Relu`,
    /// `Conv+BatchNormalization+Relu`, ...
    pub operators: String,
    /// How many runs so far computed it as one `conv2d_fused` call (the others ran its nodes
    /// one by one: fusion switched off, or operands that only qualify for the separate ops,
    /// such as a residual that broadcasts).
    pub fused_runs: usize,
}

/// The fused chains planned in `nodes` (subgraphs included), in execution order.
pub(crate) fn fused_chains(nodes: &[PlannedNode]) -> Vec<FusedConvChain> {
    all_nodes(nodes)
        .into_iter()
        .filter_map(|planned| {
            let chain = planned.fused.as_ref()?;
            let members: Vec<&PlannedNode> =
                std::iter::once(planned).chain(chain.followers()).collect();
            Some(FusedConvChain {
                nodes: members
                    .iter()
                    .map(|p| describe_node(&p.node, p.index))
                    .collect(),
                operators: members
                    .iter()
                    .map(|p| p.node.op_type.as_str())
                    .collect::<Vec<_>>()
                    .join("+"),
                fused_runs: chain.fused_runs.load(Ordering::Relaxed),
            })
        })
        .collect()
}

/// A node of the default domain with an implementation, `op_type`, no graph attributes and
/// one output.
fn is_plain(planned: &PlannedNode, op_type: &str) -> bool {
    planned.node.op_type == op_type
        && is_default_domain(&planned.node.domain)
        && planned.operator.is_some()
        && planned.subgraphs.is_empty()
        && planned.fused.is_none()
        && planned.node.output.first().is_some_and(|o| !o.is_empty())
        && planned.node.output.iter().skip(1).all(String::is_empty)
}

/// A Conv that can head a chain (whether it is 2-D is known when it runs).
fn is_conv(planned: &PlannedNode) -> bool {
    is_plain(planned, "Conv") && planned.node.output.len() == 1 && planned.node.input.len() >= 2
}

/// A BatchNormalization in inference form reading `value`: five inputs, one output, and no
/// attribute but `epsilon`, `momentum` and `training_mode` 0.
fn is_inference_batch_norm(planned: &PlannedNode, value: &str) -> bool {
    let node = &planned.node;
    is_plain(planned, "BatchNormalization")
        && node.input.len() == 5
        && node.input[0] == value
        && node.input.iter().all(|i| !i.is_empty())
        && node.attribute.iter().all(|a| match a.name.as_str() {
            "epsilon" | "momentum" => true,
            "training_mode" => a.r#type == AttributeType::Int as i32 && a.i == 0,
            _ => false,
        })
}

/// For an Add of `value` and another operand (no legacy broadcast attributes): the index of
/// the other operand.
fn residual_index(planned: &PlannedNode, value: &str) -> Option<usize> {
    let node = &planned.node;
    if !is_plain(planned, "Add") || node.input.len() != 2 || !node.attribute.is_empty() {
        return None;
    }
    match (node.input[0] == value, node.input[1] == value) {
        (true, false) if !node.input[1].is_empty() => Some(1),
        (false, true) if !node.input[0].is_empty() => Some(0),
        _ => None,
    }
}

/// A Relu of `value`.
fn is_relu(planned: &PlannedNode, value: &str) -> bool {
    is_plain(planned, "Relu") && planned.node.input.len() == 1 && planned.node.input[0] == value
}

/// A chain found by position in the planned order: the Conv, then its followers.
struct FoundChain {
    conv: usize,
    batch_norm: Option<usize>,
    add: Option<(usize, usize)>,
    relu: Option<usize>,
}

impl FoundChain {
    /// Positions of the chain's nodes in data-flow order.
    fn positions(&self) -> Vec<usize> {
        std::iter::once(self.conv)
            .chain(self.batch_norm)
            .chain(self.add.map(|(k, _)| k))
            .chain(self.relu)
            .collect()
    }
}

/// Replace each fusable chain of `planned` (with `reads[k]`, what node `k` reads, subgraph
/// captures included) by one node at the position of its last node, which reads what the
/// chain's nodes read from outside the chain. `kept` names values that must stay (graph
/// outputs). Returns the new nodes and their reads.
pub(crate) fn fuse_conv_chains(
    planned: Vec<PlannedNode>,
    reads: Vec<Vec<String>>,
    kept: &HashSet<String>,
) -> (Vec<PlannedNode>, Vec<Vec<String>>) {
    let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, names) in reads.iter().enumerate() {
        for name in names {
            readers.entry(name.as_str()).or_default().push(k);
        }
    }
    // The one node reading `value` once, if it is not kept and comes after `after`.
    let only_reader = |value: &str, after: usize| -> Option<usize> {
        if kept.contains(value) {
            return None;
        }
        match readers.get(value).map(Vec::as_slice) {
            Some(&[k]) if k > after => Some(k),
            _ => None,
        }
    };
    let mut claimed = vec![false; planned.len()];
    let mut chains = Vec::new();
    for (k, conv) in planned.iter().enumerate() {
        if claimed[k] || !is_conv(conv) {
            continue;
        }
        let mut chain = FoundChain {
            conv: k,
            batch_norm: None,
            add: None,
            relu: None,
        };
        let mut value = conv.node.output[0].as_str();
        let next = |value: &str, accept: &dyn Fn(&PlannedNode) -> bool| {
            only_reader(value, k).filter(|&j| !claimed[j] && accept(&planned[j]))
        };
        if let Some(j) = next(value, &|p| is_inference_batch_norm(p, value)) {
            chain.batch_norm = Some(j);
            value = planned[j].node.output[0].as_str();
        }
        if let Some(j) = next(value, &|p| residual_index(p, value).is_some()) {
            chain.add = residual_index(&planned[j], value).map(|r| (j, r));
            value = planned[j].node.output[0].as_str();
        }
        if let Some(j) = next(value, &|p| is_relu(p, value)) {
            chain.relu = Some(j);
        }
        for p in chain.positions() {
            claimed[p] = true;
        }
        chains.push(chain);
    }
    if chains.is_empty() {
        return (planned, reads);
    }
    let mut tail_of: HashMap<usize, usize> = HashMap::new();
    for (c, chain) in chains.iter().enumerate() {
        if let Some(&tail) = chain.positions().last() {
            tail_of.insert(tail, c);
        }
    }
    let mut slots: Vec<Option<(PlannedNode, Vec<String>)>> =
        planned.into_iter().zip(reads).map(Some).collect();
    let mut nodes = Vec::with_capacity(slots.len());
    let mut node_reads = Vec::with_capacity(slots.len());
    for k in 0..slots.len() {
        if let Some(&c) = tail_of.get(&k) {
            let chain = &chains[c];
            let mut take = |p: usize| slots[p].take();
            let Some((mut head, mut merged)) = take(chain.conv) else {
                continue;
            };
            let batch_norm = chain.batch_norm.and_then(&mut take);
            let add = chain.add.and_then(|(p, r)| take(p).map(|slot| (slot, r)));
            let relu = chain.relu.and_then(&mut take);
            let mut inside: HashSet<String> = head.node.output.iter().cloned().collect();
            let followers: Vec<&(PlannedNode, Vec<String>)> = batch_norm
                .iter()
                .chain(add.iter().map(|(slot, _)| slot))
                .chain(relu.iter())
                .collect();
            for (follower, follower_reads) in &followers {
                merged.extend(follower_reads.iter().cloned());
                inside.extend(follower.node.output.iter().cloned());
            }
            if let Some((last, _)) = followers.last() {
                for output in &last.node.output {
                    inside.remove(output);
                }
            }
            merged.retain(|name| !inside.contains(name));
            head.fused = Some(Box::new(ConvChain {
                batch_norm: batch_norm.map(|(p, _)| p),
                add: add.map(|((p, _), r)| (p, r)),
                relu: relu.map(|(p, _)| p),
                fused_runs: AtomicUsize::new(0),
                ones: OnceLock::new(),
                zeros: OnceLock::new(),
                fold_cache: FoldCache::default(),
            }));
            nodes.push(head);
            node_reads.push(merged);
        } else if claimed[k] {
            // A chain's node before its last: the last takes it (it comes later in the order,
            // reading what this node writes).
            continue;
        } else if let Some((node, reads)) = slots[k].take() {
            nodes.push(node);
            node_reads.push(reads);
        }
    }
    (nodes, node_reads)
}

/// Run the planned node `head`, which holds `chain`: fused when `runtime` allows it and the
/// operands qualify, else node by node. Its result by name.
pub(crate) fn run_chain(
    head: &PlannedNode,
    chain: &ConvChain,
    values: &mut HashMap<String, Value>,
    constants: &HashMap<String, Value>,
    outer: &dyn Fn(&str) -> Option<Value>,
    runtime: &Runtime,
) -> Result<Vec<(String, Value)>> {
    if runtime.fusion {
        if let (Some(output), Some(y)) = (
            chain.output(head),
            run_fused(head, chain, values, constants, outer, runtime)?,
        ) {
            chain.fused_runs.fetch_add(1, Ordering::Relaxed);
            return Ok(vec![(output.to_string(), Value::Tensor(y))]);
        }
    }
    // Node by node, exactly as an unfused plan runs them.
    let mut intermediates = Vec::new();
    let mut results = run_node(head, values, constants, outer, runtime)?;
    for follower in chain.followers() {
        for (name, value) in results {
            values.insert(name.clone(), value);
            intermediates.push(name);
        }
        results = run_node(follower, values, constants, outer, runtime)?;
    }
    for name in intermediates {
        values.remove(&name);
    }
    Ok(results)
}

/// The output shape `[n, o, oh, ow]` of a 2-D convolution, if its operands fit together.
fn output_shape(operands: &Conv2dOperands) -> Option<[usize; 4]> {
    let (x, w, p) = (
        operands.input.shape(),
        operands.weight.shape(),
        operands.params,
    );
    let (&[n, c, h, width], &[o, per_group, kh, kw]) = (x, w) else {
        return None;
    };
    if p.groups == 0 || c != per_group.checked_mul(p.groups)? || o % p.groups != 0 {
        return None;
    }
    let along = |size: usize, kernel: usize, stride: usize, pad: usize, dilation: usize| {
        let span = dilation
            .checked_mul(kernel.checked_sub(1)?)?
            .checked_add(1)?;
        let padded = size.checked_add(pad.checked_mul(2)?)?;
        Some(padded.checked_sub(span)?.checked_div(stride)? + 1)
    };
    Some([
        n,
        o,
        along(h, kh, p.stride.0, p.padding.0, p.dilation.0)?,
        along(width, kw, p.stride.1, p.padding.1, p.dilation.1)?,
    ])
}

/// The context a node of the chain runs with (chains hold no graph attributes).
fn node_context<'a>(
    planned: &'a PlannedNode,
    inputs: Vec<Option<Value>>,
    runtime: &'a Runtime<'_>,
    subgraphs: &'a SubgraphRunner<'a>,
) -> NodeContext<'a> {
    NodeContext {
        node: &planned.node,
        index: planned.index,
        inputs,
        opset: planned.opset,
        device: runtime.device,
        declared_types: runtime.declared_types,
        subgraphs,
    }
}

/// The chain as one `conv2d_fused` call, or `None` when its operands do not qualify (not a
/// 2-D float convolution; several groups without a batch norm; a residual that is not of the
/// output's exact shape; vectors that are not one per output channel): the caller then runs
/// the nodes one by one, which also reports any error of theirs.
fn run_fused(
    head: &PlannedNode,
    chain: &ConvChain,
    values: &HashMap<String, Value>,
    constants: &HashMap<String, Value>,
    outer: &dyn Fn(&str) -> Option<Value>,
    runtime: &Runtime,
) -> Result<Option<Tensor>> {
    let lookup = |name: &str| -> Option<Value> {
        values
            .get(name)
            .or_else(|| constants.get(name))
            .cloned()
            .or_else(|| outer(name))
    };
    // A node's inputs; `inside` (the chain's value it reads) is left out: never computed.
    let gather = |node: &NodeProto, inside: Option<&str>| -> Option<Vec<Option<Value>>> {
        node.input
            .iter()
            .map(|name| {
                if name.is_empty() || Some(name.as_str()) == inside {
                    Some(None)
                } else {
                    lookup(name).map(Some)
                }
            })
            .collect()
    };
    let no_subgraphs = |attribute: &str, _: &[Value]| -> Result<Vec<Value>> {
        Err(OnnxError::Model(format!(
            "a fused convolution chain has no graph attribute `{attribute}`"
        )))
    };
    let Some(conv_inputs) = gather(&head.node, None) else {
        return Ok(None);
    };
    let conv = node_context(head, conv_inputs, runtime, &no_subgraphs);
    match conv.optional(0) {
        Some(Value::Tensor(x)) if x.rank() == 4 && x.dtype().is_float() => {}
        _ => return Ok(None),
    }
    let operands = conv2d_operands(&conv)?;
    // The one-pass primitive needs one group; with several, only a batch norm's fold gains
    // over the separate ops.
    if operands.params.groups != 1 && chain.batch_norm.is_none() {
        return Ok(None);
    }
    // Under autocast both are cast to its dtype (as the unfused Conv does).
    if !operands.weight.dtype().is_float() {
        return Ok(None);
    }
    let Some(shape) = output_shape(&operands) else {
        return Ok(None);
    };
    let channels = shape[1];
    let per_channel = |t: &Tensor| t.dtype().is_float() && t.shape() == [channels];
    if operands.bias.as_ref().is_some_and(|b| !per_channel(b)) {
        return Ok(None);
    }
    let device = runtime.device;
    let (scale, shift) = match &chain.batch_norm {
        None => {
            let scale = conv.core(ConvChain::constant_vector(
                &chain.ones,
                channels,
                1.0,
                device,
            ))?;
            let shift = match &operands.bias {
                Some(bias) => bias.clone(),
                None => conv.core(ConvChain::constant_vector(
                    &chain.zeros,
                    channels,
                    0.0,
                    device,
                ))?,
            };
            (scale, shift)
        }
        Some(batch_norm) => {
            let Some(inputs) = gather(&batch_norm.node, Some(&head.node.output[0])) else {
                return Ok(None);
            };
            let norm = node_context(batch_norm, inputs, runtime, &no_subgraphs);
            let mut vectors = Vec::with_capacity(4);
            for i in 1..5 {
                match norm.optional(i) {
                    Some(Value::Tensor(t)) if per_channel(t) => vectors.push(t.clone()),
                    _ => return Ok(None),
                }
            }
            let [gamma, beta, mean, variance] = <[Tensor; 4]>::try_from(vectors)
                .map_err(|_| norm.error("expected four per-channel vectors"))?;
            let sources = BatchNormSources {
                gamma: &gamma,
                beta: &beta,
                mean: &mean,
                variance: &variance,
                conv_bias: operands.bias.as_ref(),
                epsilon: norm.attr_float("epsilon", 1e-5)? as f64,
            };
            norm.core(chain.fold_cache.scale_shift(&sources))?
        }
    };
    let residual = match &chain.add {
        None => None,
        Some((add, index)) => {
            let name = &add.node.input[*index];
            match lookup(name) {
                Some(Value::Tensor(t)) if t.dtype().is_float() && t.shape() == shape => Some(t),
                _ => return Ok(None),
            }
        }
    };
    let activation = if chain.relu.is_some() {
        EpilogueActivation::Relu
    } else {
        EpilogueActivation::Identity
    };
    let epilogue = ConvEpilogue {
        scale: &scale,
        shift: &shift,
        residual: residual.as_ref(),
        activation,
    };
    let y = conv.core(
        operands
            .input
            .conv2d_fused(&operands.weight, operands.params, &epilogue),
    )?;
    Ok(Some(y))
}
