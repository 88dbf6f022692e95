//! The execution order of a graph's nodes: checked once at load (Kahn's algorithm, keeping
//! the file's order where it is already valid), with an error naming the node for an input
//! that nothing produces, an output produced twice, or a cycle.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::context::describe_node;
use crate::error::{OnnxError, Result};
use crate::proto::NodeProto;

/// Node indices in an order where every node runs after the producers of its inputs.
/// `available` holds the names that exist before any node runs (graph inputs, initializers).
/// `inputs[i]` lists what node `i` reads: its inputs and the outer names its subgraphs read.
pub(crate) fn topological_order(
    nodes: &[NodeProto],
    inputs: &[Vec<String>],
    available: &HashSet<String>,
) -> Result<Vec<usize>> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        for output in node.output.iter().filter(|o| !o.is_empty()) {
            if available.contains(output) {
                return Err(OnnxError::Model(format!(
                    "node {} writes `{output}`, which is already a graph input or initializer",
                    describe_node(node, i)
                )));
            }
            if let Some(&other) = producer.get(output.as_str()) {
                return Err(OnnxError::Model(format!(
                    "nodes {} and {} both produce `{output}`",
                    describe_node(&nodes[other], other),
                    describe_node(node, i)
                )));
            }
            producer.insert(output, i);
        }
    }
    let mut waiting_on = vec![0usize; nodes.len()];
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let mut deps = BTreeSet::new();
        for input in inputs
            .get(i)
            .into_iter()
            .flatten()
            .filter(|n| !n.is_empty())
        {
            if available.contains(input) {
                continue;
            }
            match producer.get(input.as_str()) {
                Some(&p) => {
                    deps.insert(p);
                }
                None => {
                    return Err(OnnxError::Model(format!(
                        "node {} needs input `{input}`, which no node, initializer or graph \
                         input produces",
                        describe_node(node, i)
                    )))
                }
            }
        }
        waiting_on[i] = deps.len();
        for p in deps {
            consumers[p].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..nodes.len()).filter(|&i| waiting_on[i] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &c in &consumers[i] {
            waiting_on[c] -= 1;
            if waiting_on[c] == 0 {
                ready.insert(c);
            }
        }
    }
    if order.len() < nodes.len() {
        let stuck: Vec<String> = (0..nodes.len())
            .filter(|&i| waiting_on[i] > 0)
            .take(8)
            .map(|i| describe_node(&nodes[i], i))
            .collect();
        return Err(OnnxError::Model(format!(
            "the graph has a cycle through nodes {}",
            stuck.join(", ")
        )));
    }
    Ok(order)
}
