//! The operator registry: every supported (op_type, opset range) and its implementation,
//! joined from the families' tables (one `ops/` file each), and the look-ups the executor,
//! `info` and the coverage table of docs/ONNX.md use.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::ops::{self, OperatorEntry};

/// The families: a name (the `ops/` file) and its table.
pub fn operator_families() -> Vec<(&'static str, &'static [OperatorEntry])> {
    vec![
        ("elementwise", ops::elementwise::OPERATORS),
        ("activation", ops::activation::OPERATORS),
        ("comparison", ops::comparison::OPERATORS),
        ("bitwise", ops::bitwise::OPERATORS),
        ("reduce", ops::reduce::OPERATORS),
        ("shape", ops::shape::OPERATORS),
        ("scatter", ops::scatter::OPERATORS),
        ("tensor_scatter", ops::tensor_scatter::OPERATORS),
        ("cast", ops::cast::OPERATORS),
        ("quantize", ops::quantize::OPERATORS),
        ("linear", ops::linear::OPERATORS),
        ("determinant", ops::determinant::OPERATORS),
        ("einsum", ops::einsum::OPERATORS),
        ("conv", ops::conv::OPERATORS),
        ("causal_conv", ops::causal_conv::OPERATORS),
        ("col2im", ops::col2im::OPERATORS),
        ("pool", ops::pool::OPERATORS),
        ("max_unpool", ops::max_unpool::OPERATORS),
        ("resize", ops::resize::OPERATORS),
        ("grid_sample", ops::grid_sample::OPERATORS),
        ("normalization", ops::normalization::OPERATORS),
        ("attention", ops::attention::OPERATORS),
        ("linear_attention", ops::linear_attention::OPERATORS),
        ("recurrent", ops::recurrent::OPERATORS),
        ("loss", ops::loss::OPERATORS),
        ("detection", ops::detection::OPERATORS),
        ("unique", ops::unique::OPERATORS),
        ("window", ops::window::OPERATORS),
        ("mel_weight_matrix", ops::mel_weight_matrix::OPERATORS),
        ("control", ops::control::OPERATORS),
        ("misc", ops::misc::OPERATORS),
    ]
}

/// Every operator entry, family by family.
pub fn operator_entries() -> Vec<OperatorEntry> {
    operator_families()
        .into_iter()
        .flat_map(|(_, table)| table.iter().copied())
        .collect()
}

/// True for the default ONNX domain.
pub fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// The entries by op_type, built once.
fn by_op_type() -> &'static HashMap<&'static str, Vec<OperatorEntry>> {
    static TABLE: OnceLock<HashMap<&'static str, Vec<OperatorEntry>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: HashMap<&'static str, Vec<OperatorEntry>> = HashMap::new();
        for entry in operator_entries() {
            table.entry(entry.op_type).or_default().push(entry);
        }
        table
    })
}

/// The implementation of `op_type` in `domain` at `opset`, if any.
pub fn find_operator(domain: &str, op_type: &str, opset: i64) -> Option<OperatorEntry> {
    if !is_default_domain(domain) {
        return None;
    }
    by_op_type()
        .get(op_type)?
        .iter()
        .find(|e| (e.min_opset..=e.max_opset).contains(&opset))
        .copied()
}

/// The supported operators as (op_type, first opset, last opset), sorted by name.
pub fn supported_operators() -> Vec<(&'static str, i64, i64)> {
    let mut list: Vec<_> = operator_entries()
        .iter()
        .map(|e| (e.op_type, e.min_opset, e.max_opset))
        .collect();
    list.sort();
    list
}

/// The coverage table of docs/ONNX.md (Markdown): one row per family with its operators.
pub fn coverage_table() -> String {
    let mut out = String::from("| family | operators |\n|---|---|\n");
    for (family, table) in operator_families() {
        let mut names: Vec<String> = table
            .iter()
            .map(|e| {
                if e.min_opset > 1 {
                    format!("{} (opset {}+)", e.op_type, e.min_opset)
                } else {
                    e.op_type.to_string()
                }
            })
            .collect();
        names.sort();
        out.push_str(&format!("| {family} | {} |\n", names.join(", ")));
    }
    out.push_str(&format!(
        "\n{} operators in all.\n",
        operator_entries().len()
    ));
    out
}
