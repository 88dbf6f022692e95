//! Graphs planned for running and the loop that runs them. Planning (once, at load) turns
//! `Constant` nodes and initializers into device constants, plans graph attributes (If's
//! branches, Loop's body) as subgraphs that read names of their enclosing scopes, orders the
//! nodes (a node also waits for the outer names its subgraphs read), looks up each operator,
//! merges convolution chains into one node each (`conv_fusion.rs`), and notes after which
//! node each intermediate value is read for the last time. Running binds inputs, runs the
//! nodes through the registry (a chain through `conv2d_fused`) and frees values after their
//! last use.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anygrad_core::Device;

use crate::context::{describe_node, NodeContext};
use crate::conv_fusion::{fuse_conv_chains, fusion_enabled_by_environment, run_chain, ConvChain};
use crate::error::{OnnxError, Result};
use crate::graph_order::topological_order;
use crate::ops::misc::constant_value;
use crate::ops::OperatorEntry;
use crate::proto::{GraphProto, NodeProto};
use crate::registry::{find_operator, is_default_domain};
use crate::tensor_data::decode_tensor;
use crate::value::Value;

/// A node ready to run.
pub(crate) struct PlannedNode {
    /// The node.
    pub node: NodeProto,
    /// Its position in its graph (for nodes without a name).
    pub index: usize,
    /// The implementation, `None` when unsupported.
    pub operator: Option<OperatorEntry>,
    /// The version of the node's operator set.
    pub opset: i64,
    /// Values no later node or output reads: dropped after this node.
    pub free_after: Vec<String>,
    /// Its graph attributes, planned, by attribute name.
    pub subgraphs: HashMap<String, PlannedGraph>,
    /// For a Conv heading a fused chain (`conv_fusion.rs`): the nodes that follow it (none in
    /// a chain of one), which run with it; the planned node then stands at the chain's last
    /// position and writes the last node's output.
    pub fused: Option<Box<ConvChain>>,
}

impl PlannedNode {
    /// The names the node writes (a fused chain's: every node's).
    pub fn outputs(&self) -> impl Iterator<Item = &String> {
        self.node.output.iter().chain(
            self.fused
                .iter()
                .flat_map(|chain| chain.followers().flat_map(|f| f.node.output.iter())),
        )
    }
}

/// A graph ready to run.
pub(crate) struct PlannedGraph {
    /// Nodes in execution order.
    pub nodes: Vec<PlannedNode>,
    /// Initializers and `Constant` outputs, on the device.
    pub constants: HashMap<String, Value>,
    /// Initializer names in file order with their element counts.
    pub initializers: Vec<(String, usize)>,
    /// Input names (initializers excluded), in order.
    pub inputs: Vec<String>,
    /// Output names, in order.
    pub outputs: Vec<String>,
    /// Names the graph reads from enclosing scopes.
    pub captured: HashSet<String>,
}

/// What planning needs besides the graph.
pub(crate) struct Scope<'a> {
    /// The operator sets imported (domain, version).
    pub opsets: &'a [(String, i64)],
    /// Where external data lives.
    pub folder: Option<&'a Path>,
    /// The device constants go to.
    pub device: &'a Device,
}

impl Scope<'_> {
    fn opset_of(&self, domain: &str) -> i64 {
        self.opsets
            .iter()
            .find(|(d, _)| {
                if is_default_domain(domain) {
                    is_default_domain(d)
                } else {
                    d == domain
                }
            })
            .map(|(_, v)| *v)
            .unwrap_or(1)
    }
}

/// Plan `graph`, whose nodes may also read the names in `outer` (enclosing scopes).
pub(crate) fn plan_graph(
    graph: GraphProto,
    outer: &HashSet<String>,
    scope: &Scope,
) -> Result<PlannedGraph> {
    let mut constants = HashMap::new();
    let mut initializers = Vec::new();
    for tensor in &graph.initializer {
        let host = decode_tensor(tensor, scope.folder)?;
        let value = host
            .to_value(scope.device)
            .map_err(|message| OnnxError::Tensor {
                name: tensor.name.clone(),
                message,
            })?;
        initializers.push((tensor.name.clone(), host.data.len()));
        constants.insert(tensor.name.clone(), value);
    }
    let inputs: Vec<String> = graph
        .input
        .iter()
        .filter(|i| !constants.contains_key(&i.name))
        .map(|i| i.name.clone())
        .collect();
    let outputs: Vec<String> = graph.output.iter().map(|o| o.name.clone()).collect();
    let mut rest = Vec::new();
    for (index, node) in graph.node.into_iter().enumerate() {
        if node.op_type == "Constant" && is_default_domain(&node.domain) && node.input.is_empty() {
            let host = constant_value(&node, index, scope.folder)?;
            let value = host
                .to_value(scope.device)
                .map_err(|message| OnnxError::Node {
                    node: describe_node(&node, index),
                    message,
                })?;
            if let Some(name) = node.output.first() {
                if constants.insert(name.clone(), value).is_some() {
                    return Err(OnnxError::Model(format!(
                        "node {} writes `{name}`, which is already an initializer",
                        describe_node(&node, index)
                    )));
                }
            }
            continue;
        }
        rest.push((index, node));
    }
    let mut available: HashSet<String> = constants.keys().cloned().collect();
    available.extend(graph.input.iter().map(|i| i.name.clone()));
    let local = available.clone();
    available.extend(outer.iter().cloned());
    let kept: HashSet<String> = outputs.iter().cloned().collect();
    let (nodes, reads) = plan_nodes(rest, &available, &constants, &kept, scope)?;
    let produced: HashSet<&String> = nodes.iter().flat_map(PlannedNode::outputs).collect();
    for output in &outputs {
        if !available.contains(output) && !produced.contains(output) {
            return Err(OnnxError::Model(format!(
                "graph output `{output}` is produced by no node, initializer or input"
            )));
        }
    }
    let captured = reads
        .iter()
        .chain(&outputs)
        .filter(|n| !n.is_empty() && !local.contains(*n) && !produced.contains(n))
        .cloned()
        .collect();
    Ok(PlannedGraph {
        nodes,
        constants,
        initializers,
        inputs,
        outputs,
        captured,
    })
}

/// A node waiting to be placed: (file position, node), its planned subgraphs, what it reads.
type Slot = (
    (usize, NodeProto),
    HashMap<String, PlannedGraph>,
    Vec<String>,
);

/// Order and plan `nodes` (with their file positions); also every name they read.
fn plan_nodes(
    nodes: Vec<(usize, NodeProto)>,
    available: &HashSet<String>,
    constants: &HashMap<String, Value>,
    kept: &HashSet<String>,
    scope: &Scope,
) -> Result<(Vec<PlannedNode>, HashSet<String>)> {
    // Inside a subgraph every name of this graph is visible.
    let mut visible = available.clone();
    for (_, n) in &nodes {
        visible.extend(n.output.iter().filter(|o| !o.is_empty()).cloned());
    }
    let mut reads: Vec<Vec<String>> = Vec::with_capacity(nodes.len());
    let mut subgraphs = Vec::with_capacity(nodes.len());
    for (_, node) in &nodes {
        let mut names: Vec<String> = node
            .input
            .iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .collect();
        let mut planned = HashMap::new();
        for attribute in &node.attribute {
            if let Some(g) = &attribute.g {
                let sub = plan_graph((**g).clone(), &visible, scope)?;
                names.extend(sub.captured.iter().cloned());
                planned.insert(attribute.name.clone(), sub);
            }
        }
        reads.push(names);
        subgraphs.push(planned);
    }
    let bare: Vec<NodeProto> = nodes.iter().map(|(_, n)| n.clone()).collect();
    let order = topological_order(&bare, &reads, available)?;
    let all_reads: HashSet<String> = reads.iter().flatten().cloned().collect();
    let mut slots: Vec<Option<Slot>> = nodes
        .into_iter()
        .zip(subgraphs)
        .zip(reads)
        .map(|((n, s), r)| Some((n, s, r)))
        .collect();
    let mut planned = Vec::with_capacity(order.len());
    let mut planned_reads = Vec::with_capacity(order.len());
    for i in order {
        let Some(((index, node), subgraphs, reads)) = slots.get_mut(i).and_then(Option::take)
        else {
            continue;
        };
        let opset = scope.opset_of(&node.domain);
        let operator = find_operator(&node.domain, &node.op_type, opset);
        planned.push(PlannedNode {
            node,
            index,
            operator,
            opset,
            free_after: Vec::new(),
            subgraphs,
            fused: None,
        });
        planned_reads.push(reads);
    }
    let (mut planned, planned_reads) = if fusion_enabled_by_environment() {
        fuse_conv_chains(planned, planned_reads, kept)
    } else {
        (planned, planned_reads)
    };
    let mut last_use: HashMap<&String, usize> = HashMap::new();
    for (k, reads) in planned_reads.iter().enumerate() {
        for name in reads {
            if !constants.contains_key(name) && !kept.contains(name) {
                last_use.insert(name, k);
            }
        }
    }
    let frees: Vec<(String, usize)> = last_use.into_iter().map(|(n, k)| (n.clone(), k)).collect();
    for (name, k) in frees {
        planned[k].free_after.push(name);
    }
    Ok((planned, all_reads))
}

/// The first node without an implementation, at any depth.
pub(crate) fn first_unsupported(nodes: &[PlannedNode]) -> Option<&PlannedNode> {
    for p in nodes {
        if p.operator.is_none() {
            return Some(p);
        }
        for sub in p.subgraphs.values() {
            if let Some(found) = first_unsupported(&sub.nodes) {
                return Some(found);
            }
        }
    }
    None
}

/// Every node, at any depth (a fused chain's followers after its Conv).
pub(crate) fn all_nodes(nodes: &[PlannedNode]) -> Vec<&PlannedNode> {
    let mut out = Vec::new();
    for p in nodes {
        out.push(p);
        if let Some(chain) = &p.fused {
            out.extend(chain.followers());
        }
        for sub in p.subgraphs.values() {
            out.extend(all_nodes(&sub.nodes));
        }
    }
    out
}

/// What running needs besides the nodes.
pub(crate) struct Runtime<'a> {
    /// The device.
    pub device: &'a Device,
    /// Declared element types by value name.
    pub declared_types: &'a HashMap<String, i32>,
    /// Whether fused chains run as one fused convolution (else node by node).
    pub fusion: bool,
}

/// Run `nodes` over `values` (graph inputs bound by the caller), reading `constants` and,
/// for names neither holds, `outer`.
pub(crate) fn run_nodes(
    nodes: &[PlannedNode],
    values: &mut HashMap<String, Value>,
    constants: &HashMap<String, Value>,
    outer: &dyn Fn(&str) -> Option<Value>,
    runtime: &Runtime,
) -> Result<()> {
    for planned in nodes {
        let results = match &planned.fused {
            Some(chain) => run_chain(planned, chain, values, constants, outer, runtime)?,
            None => run_node(planned, values, constants, outer, runtime)?,
        };
        for (name, value) in results {
            values.insert(name, value);
        }
        for name in &planned.free_after {
            values.remove(name);
        }
    }
    Ok(())
}

/// Run one node through its operator (a fused chain's head as the plain Conv it is), reading
/// `values`, then `constants`, then `outer`; its outputs by name.
pub(crate) fn run_node(
    planned: &PlannedNode,
    values: &HashMap<String, Value>,
    constants: &HashMap<String, Value>,
    outer: &dyn Fn(&str) -> Option<Value>,
    runtime: &Runtime,
) -> Result<Vec<(String, Value)>> {
    let Some(operator) = planned.operator else {
        return Err(OnnxError::Unsupported {
            node: describe_node(&planned.node, planned.index),
            operator: planned.node.op_type.clone(),
        });
    };
    let lookup = |name: &str| -> Option<Value> {
        values
            .get(name)
            .or_else(|| constants.get(name))
            .cloned()
            .or_else(|| outer(name))
    };
    let mut node_inputs = Vec::with_capacity(planned.node.input.len());
    for name in &planned.node.input {
        if name.is_empty() {
            node_inputs.push(None);
            continue;
        }
        match lookup(name) {
            Some(v) => node_inputs.push(Some(v)),
            None => {
                return Err(OnnxError::MissingInput {
                    name: name.clone(),
                    needed_by: describe_node(&planned.node, planned.index),
                })
            }
        }
    }
    let run_subgraph = |attribute: &str, arguments: &[Value]| -> Result<Vec<Value>> {
        let sub = planned
            .subgraphs
            .get(attribute)
            .ok_or_else(|| OnnxError::Node {
                node: describe_node(&planned.node, planned.index),
                message: format!("graph attribute `{attribute}` is missing"),
            })?;
        run_graph(sub, arguments, &lookup, runtime)
    };
    let ctx = NodeContext {
        node: &planned.node,
        index: planned.index,
        inputs: node_inputs,
        opset: planned.opset,
        device: runtime.device,
        declared_types: runtime.declared_types,
        subgraphs: &run_subgraph,
    };
    let results = (operator.run)(&ctx)?;
    let mut named = Vec::new();
    for (k, name) in planned.node.output.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let value = results.get(k).cloned().ok_or_else(|| {
            ctx.error(format!(
                "output {k} (`{name}`) is not produced by this implementation"
            ))
        })?;
        named.push((name.clone(), value));
    }
    Ok(named)
}

/// Run a subgraph on `arguments` (bound to its inputs in order); its outputs in order.
pub(crate) fn run_graph(
    graph: &PlannedGraph,
    arguments: &[Value],
    outer: &dyn Fn(&str) -> Option<Value>,
    runtime: &Runtime,
) -> Result<Vec<Value>> {
    if arguments.len() != graph.inputs.len() {
        return Err(OnnxError::Model(format!(
            "a subgraph with {} inputs was given {} values",
            graph.inputs.len(),
            arguments.len()
        )));
    }
    let mut values: HashMap<String, Value> = graph
        .inputs
        .iter()
        .cloned()
        .zip(arguments.iter().cloned())
        .collect();
    run_nodes(&graph.nodes, &mut values, &graph.constants, outer, runtime)?;
    graph
        .outputs
        .iter()
        .map(|name| {
            values
                .get(name)
                .or_else(|| graph.constants.get(name))
                .cloned()
                .or_else(|| outer(name))
                .ok_or_else(|| OnnxError::MissingInput {
                    name: name.clone(),
                    needed_by: "a subgraph's outputs".into(),
                })
        })
        .collect()
}
