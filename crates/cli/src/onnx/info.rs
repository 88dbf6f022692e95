//! `anygrad onnx info MODEL [--json]`: what a model holds: its inputs and outputs (names,
//! element types, shapes with symbolic dims), operator sets, operator counts, parameter
//! count, and the operators anygrad cannot run yet, listed first with their nodes.

use std::path::PathBuf;

use anygrad::Device;
use anygrad_onnx::{Declaration, OnnxModel};
use clap::Args;

/// Arguments of `anygrad onnx info`.
#[derive(Args)]
pub struct InfoArgs {
    /// The `.onnx` file.
    model: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn declaration_json(d: &Declaration) -> serde_json::Value {
    serde_json::json!({
        "name": d.name,
        "dtype": d.element_type_name(),
        "shape": d.shape_text(),
    })
}

/// Print the model's summary.
pub fn run(args: InfoArgs) -> Result<(), String> {
    // Weights are decoded on the CPU; nothing runs.
    let model = OnnxModel::load(&args.model, &Device::Cpu).map_err(|e| e.to_string())?;
    let unsupported = model.unsupported_nodes();
    let counts = model.operator_counts();
    if args.json {
        let value = serde_json::json!({
            "model": args.model.display().to_string(),
            "ir_version": model.ir_version(),
            "producer": model.producer(),
            "graph": model.graph_name(),
            "opset_imports": model.opset_imports().iter().map(|(d, v)| serde_json::json!({
                "domain": if d.is_empty() { "ai.onnx" } else { d.as_str() },
                "version": v,
            })).collect::<Vec<_>>(),
            "inputs": model.inputs().iter().map(declaration_json).collect::<Vec<_>>(),
            "outputs": model.outputs().iter().map(declaration_json).collect::<Vec<_>>(),
            "operator_counts": counts,
            "parameter_count": model.parameter_count(),
            "unsupported": unsupported.iter().map(|(node, op)| serde_json::json!({
                "node": node,
                "operator": op,
            })).collect::<Vec<_>>(),
        });
        println!("{value}");
        return Ok(());
    }
    println!("model: {}", args.model.display());
    if !unsupported.is_empty() {
        println!("unsupported operators ({} nodes):", unsupported.len());
        for (node, op) in &unsupported {
            println!("  {op}: node {node}");
        }
    }
    println!(
        "ir version {}, producer `{}`, graph `{}`",
        model.ir_version(),
        model.producer(),
        model.graph_name()
    );
    let opsets: Vec<String> = model
        .opset_imports()
        .iter()
        .map(|(d, v)| format!("{} {v}", if d.is_empty() { "ai.onnx" } else { d }))
        .collect();
    println!("opset imports: {}", opsets.join(", "));
    println!("inputs:");
    for d in model.inputs() {
        println!("  {}: {} {}", d.name, d.element_type_name(), d.shape_text());
    }
    println!("outputs:");
    for d in model.outputs() {
        println!("  {}: {} {}", d.name, d.element_type_name(), d.shape_text());
    }
    println!("operators ({} nodes):", counts.values().sum::<usize>());
    for (op, count) in &counts {
        println!("  {op}: {count}");
    }
    println!("parameters: {}", model.parameter_count());
    Ok(())
}
