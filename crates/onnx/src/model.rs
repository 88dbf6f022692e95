//! `OnnxModel`: a loaded model (decoded, checked, sorted, its constants on the device) and
//! how it runs: inputs checked against the declarations, nodes run in order through the
//! registry, intermediate values freed after their last use, outputs returned in the
//! declared order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anygrad_core::{DType, Device, Tensor};
use prost::Message;

use crate::context::describe_node;
use crate::declaration::{Declaration, DeclaredDim};
use crate::error::{OnnxError, Result};
use crate::executor::{
    all_nodes, first_unsupported, plan_graph, run_nodes, PlannedGraph, PlannedNode, Runtime, Scope,
};
use crate::host_tensor::HostTensor;
use crate::ops::cast::round_to_bfloat16;
use crate::proto::{DataType, ModelProto};
use crate::value::Value;

/// The largest model file read (2 GiB, protobuf's own limit).
const MAX_MODEL_BYTES: u64 = 1 << 31;

/// The largest weights file read when the machine's memory is unknown (1 TiB).
const MAX_WEIGHTS_BYTES: u64 = 1 << 40;

/// A loaded ONNX model on one device.
pub struct OnnxModel {
    ir_version: i64,
    producer: String,
    graph_name: String,
    opsets: Vec<(String, i64)>,
    /// The main graph, planned.
    graph: PlannedGraph,
    inputs: Vec<Declaration>,
    outputs: Vec<Declaration>,
    /// Element types declared for values by name (inputs, outputs, value_info, initializers).
    declared_types: HashMap<String, i32>,
    device: Device,
    /// Whether planned convolution chains run fused (`set_fusion`).
    fusion: bool,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel")
            .field("graph", &self.graph_name)
            .field("nodes", &self.graph.nodes.len())
            .field("device", &self.device)
            .finish()
    }
}

impl OnnxModel {
    /// Load a model file; external tensor data is read from the file's folder (and only from
    /// there).
    pub fn load(path: impl AsRef<Path>, device: &Device) -> Result<OnnxModel> {
        let path = path.as_ref();
        let bytes = anygrad_core::files::read_regular_file(path, MAX_MODEL_BYTES, "ONNX model")
            .map_err(|e| OnnxError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        Self::from_bytes_in(&bytes, Some(&folder), device)
    }

    /// A model from the bytes of a `.onnx` file (external tensor data is refused: there is
    /// no folder to read it from).
    pub fn from_bytes(bytes: &[u8], device: &Device) -> Result<OnnxModel> {
        Self::from_bytes_in(bytes, None, device)
    }

    /// A model from bytes whose external data lies in `folder`.
    pub fn from_bytes_in(
        bytes: &[u8],
        folder: Option<&Path>,
        device: &Device,
    ) -> Result<OnnxModel> {
        let model = ModelProto::decode(bytes).map_err(|e| OnnxError::Decode {
            what: "model".into(),
            message: e.to_string(),
        })?;
        Self::from_proto(model, folder, device)
    }

    /// A model from its decoded message.
    pub fn from_proto(
        model: ModelProto,
        folder: Option<&Path>,
        device: &Device,
    ) -> Result<OnnxModel> {
        let graph = model
            .graph
            .ok_or_else(|| OnnxError::Model("the file holds no graph".into()))?;
        let opsets: Vec<(String, i64)> = model
            .opset_import
            .iter()
            .map(|o| (o.domain.clone(), o.version))
            .collect();
        let inputs: Vec<Declaration> = {
            let initializer_names: HashSet<&String> =
                graph.initializer.iter().map(|t| &t.name).collect();
            graph
                .input
                .iter()
                .filter(|i| !initializer_names.contains(&i.name))
                .map(Declaration::of)
                .collect()
        };
        let outputs: Vec<Declaration> = graph.output.iter().map(Declaration::of).collect();
        let mut declared_types: HashMap<String, i32> = HashMap::new();
        for info in graph
            .input
            .iter()
            .chain(&graph.output)
            .chain(&graph.value_info)
        {
            let d = Declaration::of(info);
            if d.element_type != 0 {
                declared_types.insert(d.name, d.element_type);
            }
        }
        for tensor in &graph.initializer {
            declared_types.insert(tensor.name.clone(), tensor.data_type);
        }
        let graph_name = graph.name.clone();
        let scope = Scope {
            opsets: &opsets,
            folder,
            device,
        };
        let planned = plan_graph(graph, &HashSet::new(), &scope)?;
        Ok(OnnxModel {
            ir_version: model.ir_version,
            producer: format!("{} {}", model.producer_name, model.producer_version)
                .trim()
                .to_string(),
            graph_name,
            opsets,
            graph: planned,
            inputs,
            outputs,
            declared_types,
            device: device.clone(),
            fusion: true,
        })
    }

    /// The convolution chains planned to run as one fused convolution (Conv with its batch
    /// norm, residual Add and Relu; docs/ONNX.md), with how many runs computed each fused.
    pub fn fused_chains(&self) -> Vec<crate::FusedConvChain> {
        crate::conv_fusion::fused_chains(&self.graph.nodes)
    }

    /// Run the planned chains fused (the default) or node by node, as an unfused plan does
    /// (for comparing the two; `ANYGRAD_ONNX_FUSION=off` at load plans no chains at all).
    pub fn set_fusion(&mut self, enabled: bool) {
        self.fusion = enabled;
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The IR version of the file.
    pub fn ir_version(&self) -> i64 {
        self.ir_version
    }

    /// The producer's name and version.
    pub fn producer(&self) -> &str {
        &self.producer
    }

    /// The graph's name.
    pub fn graph_name(&self) -> &str {
        &self.graph_name
    }

    /// The operator sets imported (domain, version).
    pub fn opset_imports(&self) -> &[(String, i64)] {
        &self.opsets
    }

    /// The graph inputs the caller gives (initializers excluded).
    pub fn inputs(&self) -> &[Declaration] {
        &self.inputs
    }

    /// The graph outputs, in order.
    pub fn outputs(&self) -> &[Declaration] {
        &self.outputs
    }

    /// How many nodes use each operator (`Constant` nodes included).
    pub fn operator_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for planned in all_nodes(&self.graph.nodes) {
            *counts.entry(planned.node.op_type.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// The nodes no implementation runs, as (`"name" (OpType)`, operator with domain and
    /// opset).
    pub fn unsupported_nodes(&self) -> Vec<(String, String)> {
        all_nodes(&self.graph.nodes)
            .into_iter()
            .filter(|p| p.operator.is_none())
            .map(|p| (describe_node(&p.node, p.index), operator_name(p)))
            .collect()
    }

    /// The number of values in the initializers.
    pub fn parameter_count(&self) -> usize {
        self.graph.initializers.iter().map(|(_, n)| n).sum()
    }

    /// The float initializers as trainable tensors, by name in file order. Each is marked as
    /// requiring a gradient, so that a later run records the graph and `loss.backward()`
    /// fills their `grad()`; an optimizer stepping them changes the model.
    pub fn parameters(&self) -> Vec<(String, Tensor)> {
        self.graph
            .initializers
            .iter()
            .filter_map(|(name, _)| match self.graph.constants.get(name) {
                Some(Value::Tensor(t)) if t.dtype().is_float() => {
                    Some((name.clone(), t.requires_grad_(true)))
                }
                _ => None,
            })
            .collect()
    }

    /// Write the float initializers (their current values) to a safetensors file.
    pub fn save_safetensors(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |message: String| OnnxError::Io {
            path: path.display().to_string(),
            message,
        };
        let mut encoded = Vec::new();
        for (name, _) in &self.graph.initializers {
            let Some(Value::Tensor(t)) = self.graph.constants.get(name) else {
                continue;
            };
            let (dtype, bytes) = match t.dtype() {
                DType::F32 => (
                    safetensors::Dtype::F32,
                    t.to_vec::<f32>()
                        .map_err(|e| io(e.to_string()))?
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect::<Vec<u8>>(),
                ),
                DType::F16 => (
                    safetensors::Dtype::F16,
                    t.to_vec::<half::f16>()
                        .map_err(|e| io(e.to_string()))?
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect(),
                ),
                DType::F64 => (
                    safetensors::Dtype::F64,
                    t.to_vec::<f64>()
                        .map_err(|e| io(e.to_string()))?
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect(),
                ),
                _ => continue,
            };
            encoded.push((name.clone(), dtype, t.shape().to_vec(), bytes));
        }
        let mut views = Vec::with_capacity(encoded.len());
        for (name, dtype, shape, bytes) in &encoded {
            let view = safetensors::tensor::TensorView::new(*dtype, shape.clone(), bytes)
                .map_err(|e| io(format!("tensor `{name}`: {e}")))?;
            views.push((name.clone(), view));
        }
        let bytes = safetensors::serialize(views, None).map_err(|e| io(e.to_string()))?;
        std::fs::write(path, bytes).map_err(|e| io(e.to_string()))
    }

    /// Load float initializers from a safetensors file, the inverse of
    /// [`save_safetensors`](Self::save_safetensors): restore fine-tuned weights into a freshly
    /// loaded copy of the same model.
    ///
    /// The file must hold every float initializer (by name, with its shape) and nothing else.
    /// Values are converted to each initializer's dtype (F32, F16, BF16 and F64 entries are
    /// read) and copied into the existing tensors in place, so tensors taken earlier from
    /// [`parameters`](Self::parameters) see the loaded values. Everything is checked before
    /// anything changes: on an error (an unreadable file, missing, unexpected or mis-shaped
    /// tensors, all listed in one message) the model is unchanged.
    pub fn load_safetensors(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |message: String| OnnxError::Io {
            path: path.display().to_string(),
            message,
        };
        // The file is read whole: refuse one larger than the machine's memory (and FIFOs,
        // devices, folders) before reading anything.
        let bound = anygrad_core::host_memory::total_memory().unwrap_or(MAX_WEIGHTS_BYTES);
        let bytes = anygrad_core::files::read_regular_file(path, bound, "safetensors weights")
            .map_err(|e| io(e.to_string()))?;
        let file = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| io(format!("not a valid safetensors file: {e}")))?;
        let targets: Vec<(&String, &Tensor)> = self
            .graph
            .initializers
            .iter()
            .filter_map(|(name, _)| match self.graph.constants.get(name) {
                Some(Value::Tensor(t)) if t.dtype().is_float() => Some((name, t)),
                _ => None,
            })
            .collect();
        let mut missing = Vec::new();
        let mut problems = Vec::new();
        let mut updates = Vec::with_capacity(targets.len());
        for (name, target) in &targets {
            let view = match file.tensor(name) {
                Ok(view) => view,
                Err(_) => {
                    missing.push(name.as_str());
                    continue;
                }
            };
            if view.shape() != target.shape() {
                problems.push(format!(
                    "`{name}` has shape {:?} in the file, {:?} in the model",
                    view.shape(),
                    target.shape()
                ));
                continue;
            }
            match decode_float_entry(&view)
                .and_then(|t| t.to_dtype(target.dtype()).map_err(|e| e.to_string()))
                .and_then(|t| t.to_device(target.device()).map_err(|e| e.to_string()))
            {
                Ok(value) => updates.push((*target, value)),
                Err(message) => problems.push(format!("`{name}`: {message}")),
            }
        }
        let unexpected: Vec<String> = file
            .names()
            .into_iter()
            .filter(|name| !targets.iter().any(|(t, _)| t.as_str() == *name))
            .map(str::to_string)
            .collect();
        if !missing.is_empty() {
            problems.insert(0, format!("missing tensors: {}", missing.join(", ")));
        }
        if !unexpected.is_empty() {
            let mut unexpected = unexpected;
            unexpected.sort();
            problems.push(format!(
                "tensors the model has no float initializer for: {}",
                unexpected.join(", ")
            ));
        }
        if !problems.is_empty() {
            return Err(io(format!(
                "cannot load the weights: {}",
                problems.join("; ")
            )));
        }
        let _guard = anygrad_core::no_grad();
        for (target, value) in updates {
            target.assign(&value).map_err(|e| io(e.to_string()))?;
        }
        Ok(())
    }

    /// Run the model on `inputs` (name, value); the outputs in declared order. Graph outputs
    /// declared int64 come back as int64 values.
    pub fn run(&self, inputs: &[(&str, Value)]) -> Result<Vec<(String, Value)>> {
        if let Some(p) = first_unsupported(&self.graph.nodes) {
            return Err(OnnxError::Unsupported {
                node: describe_node(&p.node, p.index),
                operator: operator_name(p),
            });
        }
        let mut values: HashMap<String, Value> = HashMap::new();
        let mut bound: HashMap<String, usize> = HashMap::new();
        for (name, value) in inputs {
            let declared = self.inputs.iter().find(|d| d.name == *name);
            if declared.is_none() && !self.graph.constants.contains_key(*name) {
                let names: Vec<&str> = self.inputs.iter().map(|d| d.name.as_str()).collect();
                return Err(OnnxError::Input {
                    name: name.to_string(),
                    message: format!(
                        "not an input of the graph (its inputs: {})",
                        names.join(", ")
                    ),
                });
            }
            if let Some(declared) = declared {
                check_declared(declared, value, &mut bound)?;
            }
            let value = match value {
                Value::Tensor(t) if t.device() != &self.device => {
                    Value::Tensor(t.to_device(&self.device).map_err(|e| OnnxError::Input {
                        name: name.to_string(),
                        message: e.to_string(),
                    })?)
                }
                other => other.clone(),
            };
            values.insert(name.to_string(), value);
        }
        let runtime = Runtime {
            device: &self.device,
            declared_types: &self.declared_types,
            fusion: self.fusion,
        };
        run_nodes(
            &self.graph.nodes,
            &mut values,
            &self.graph.constants,
            &|_| None,
            &runtime,
        )?;
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for declared in &self.outputs {
            let value = values
                .get(&declared.name)
                .or_else(|| self.graph.constants.get(&declared.name))
                .cloned()
                .ok_or_else(|| OnnxError::MissingInput {
                    name: declared.name.clone(),
                    needed_by: "the graph's outputs".into(),
                })?;
            let value = match (&value, declared.element_type) {
                (Value::Tensor(t), code)
                    if code == DataType::Bfloat16 as i32 && t.dtype() == DType::F32 =>
                {
                    Value::Tensor(round_to_bfloat16(t).map_err(|message| OnnxError::Input {
                        name: declared.name.clone(),
                        message,
                    })?)
                }
                (Value::Tensor(t), code)
                    if code == DataType::Int64 as i32 && !t.dtype().is_float() =>
                {
                    Value::Int64(value.to_int64().map_err(|message| OnnxError::Input {
                        name: declared.name.clone(),
                        message,
                    })?)
                }
                _ => value,
            };
            outputs.push((declared.name.clone(), value));
        }
        Ok(outputs)
    }

    /// Run on host values (test data, `.npy` files); outputs come back as host values in
    /// their declared integer types.
    pub fn run_host(&self, inputs: &[(&str, HostTensor)]) -> Result<Vec<(String, HostTensor)>> {
        let mut values = Vec::with_capacity(inputs.len());
        for (name, host) in inputs {
            let value = host
                .to_value(&self.device)
                .map_err(|message| OnnxError::Input {
                    name: name.to_string(),
                    message,
                })?;
            values.push((*name, value));
        }
        let outputs = self.run(&values)?;
        let mut hosts = Vec::with_capacity(outputs.len());
        for ((name, value), declared) in outputs.into_iter().zip(&self.outputs) {
            let host = HostTensor::from_value(&value).map_err(|message| OnnxError::Input {
                name: name.clone(),
                message,
            })?;
            let host = match DataType::try_from(declared.element_type) {
                Ok(t) => host.into_integer_type(t),
                Err(_) => host,
            };
            hosts.push((name, host));
        }
        Ok(hosts)
    }
}

/// One float entry of a safetensors file as a CPU tensor of its own precision (BF16 widens to
/// F32, which holds it exactly); other element types are an error naming the type.
fn decode_float_entry(
    view: &safetensors::tensor::TensorView<'_>,
) -> std::result::Result<Tensor, String> {
    fn values<const N: usize, T>(data: &[u8], convert: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N)
            .map(|chunk| {
                let mut raw = [0u8; N];
                raw.copy_from_slice(chunk);
                convert(raw)
            })
            .collect()
    }
    let (data, shape, cpu) = (view.data(), view.shape(), Device::Cpu);
    let tensor = match view.dtype() {
        safetensors::Dtype::F32 => Tensor::from_vec(values(data, f32::from_le_bytes), shape, &cpu),
        safetensors::Dtype::F16 => {
            Tensor::from_vec(values(data, half::f16::from_le_bytes), shape, &cpu)
        }
        safetensors::Dtype::BF16 => Tensor::from_vec(
            values(data, |raw| half::bf16::from_le_bytes(raw).to_f32()),
            shape,
            &cpu,
        ),
        safetensors::Dtype::F64 => Tensor::from_vec(values(data, f64::from_le_bytes), shape, &cpu),
        other => return Err(format!("element type {other:?} is not a float type")),
    };
    tensor.map_err(|e| e.to_string())
}

/// `OpType` with its domain and opset, for messages.
fn operator_name(p: &PlannedNode) -> String {
    let domain = if p.node.domain.is_empty() {
        "ai.onnx"
    } else {
        &p.node.domain
    };
    format!("{} (domain {domain}, opset {})", p.node.op_type, p.opset)
}

/// Check a given input against its declaration (rank, fixed dims, symbolic dims bound
/// consistently across the inputs of one run).
fn check_declared(
    declared: &Declaration,
    value: &Value,
    bound: &mut HashMap<String, usize>,
) -> Result<()> {
    let Some(dims) = &declared.shape else {
        return Ok(());
    };
    let shape = value.shape();
    let fail = |message: String| OnnxError::Input {
        name: declared.name.clone(),
        message,
    };
    if dims.len() != shape.len() {
        return Err(fail(format!(
            "shape {shape:?} has rank {}, the graph declares {} (rank {})",
            shape.len(),
            declared.shape_text(),
            dims.len()
        )));
    }
    for (i, (dim, &size)) in dims.iter().zip(shape).enumerate() {
        match dim {
            DeclaredDim::Fixed(d) if *d != size => {
                return Err(fail(format!(
                    "dim {i} is {size}, the graph declares {} (shape {shape:?})",
                    declared.shape_text()
                )))
            }
            DeclaredDim::Symbolic(name) => {
                if let Some(&other) = bound.get(name) {
                    if other != size {
                        // Which dim bound the name first: one of this input's or another's.
                        let earlier = dims[..i]
                            .iter()
                            .position(|d| matches!(d, DeclaredDim::Symbolic(n) if n == name));
                        let setter = match earlier {
                            Some(k) => format!("dim {k} of this input"),
                            None => "another input".to_string(),
                        };
                        return Err(fail(format!(
                            "dim {i} (`{name}`) is {size}, but {setter} set `{name}` to {other} \
                             (shape {shape:?}, declared {})",
                            declared.shape_text()
                        )));
                    }
                } else {
                    bound.insert(name.clone(), size);
                }
            }
            _ => {}
        }
    }
    Ok(())
}
