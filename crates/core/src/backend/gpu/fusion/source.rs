//! WGSL generation for fused elementwise programs (`fusion/`).
//!
//! Bindings: `params` (0, [`FusedParams`]), the inputs `leaf0..` (1..), the output last. Each
//! op becomes a function holding the same expression as its single-op kernel (`runtime/wgsl.rs`), and
//! the body is
//! straight-line SSA: one `let` per instruction, per vector lane when the kernel moves `vec4`s,
//! each result rounded as its single-op kernel would store it (`as_stored`), so that a fused
//! chain computes bit for bit what the unfused ops compute.
//! A grid-stride loop covers any count with at most `MAX_WORKGROUPS` workgroups.

use std::fmt::Write;

use crate::backend::gpu::fusion::{FusedInstruction, FusedProgram};
use crate::backend::gpu::runtime::params::{kernel_params, KernelParams};
use crate::backend::gpu::runtime::wgsl::{
    binary_expression, unary_expression, value_header, COMMON, STRIDED,
};
use crate::dtype::DType;

kernel_params! {
    /// Header of a fused kernel's parameters.
    struct FusedParams {
        /// Elements (or vec4s, for a vector program) to write.
        units: u32,
    }
    tail: "per input: offset (in units), and for a strided input shape[rank], strides[rank]; then each scalar's f32 bits";
}

/// Elements (or vec4s) each invocation handles per trip of the main loop.
pub(crate) const UNROLL: usize = 4;

/// An identifier made from an op's name.
fn function_name(prefix: &str, debug: &str) -> String {
    format!("{prefix}_{}", debug.to_lowercase())
}

impl FusedProgram {
    /// Word of `params.tail` holding each input's offset, and the word after the last input's
    /// words (the first scalar).
    fn parameter_words(&self) -> (Vec<usize>, usize) {
        let mut word = 0;
        let mut offsets = Vec::with_capacity(self.leaf_ranks.len());
        for &rank in &self.leaf_ranks {
            offsets.push(word);
            word += 1 + 2 * rank as usize;
        }
        (offsets, word)
    }

    /// The complete WGSL source of this program's kernel.
    pub fn source(&self) -> String {
        let leaves = self.leaf_ranks.len();
        let (offset_words, first_scalar) = self.parameter_words();
        let mut text = String::new();
        if self.dtype == DType::F16 {
            text.push_str("enable f16;\n");
        }
        text.push_str(&value_header(self.dtype));
        text.push_str(FusedParams::WGSL);
        text.push_str(COMMON);
        text.push_str(STRIDED);
        let element = if self.vector { "vec4<S>" } else { "S" };
        // `write!` into a String cannot fail; the results are ignored deliberately.
        for (leaf, &rank) in self.leaf_ranks.iter().enumerate() {
            // A strided input of a vector kernel is read one element at a time (and splat).
            let leaf_element = if rank == 0 { element } else { "S" };
            let _ = writeln!(
                text,
                "@group(0) @binding({}) var<storage, read> leaf{leaf}: array<{leaf_element}>;",
                leaf + 1
            );
        }
        let _ = writeln!(
            text,
            "@group(0) @binding({}) var<storage, read_write> output: array<{element}>;",
            leaves + 1
        );
        let mut defined: Vec<String> = Vec::new();
        for instruction in &self.instructions {
            let (name, function) = match *instruction {
                FusedInstruction::Load { .. } => continue,
                FusedInstruction::Unary { op, .. } => {
                    let name = function_name("unary", &format!("{op:?}"));
                    let body = unary_expression(self.dtype, op);
                    let function = format!("fn {name}(x: T) -> T {{ return {body}; }}");
                    (name, function)
                }
                FusedInstruction::Binary { op, .. } | FusedInstruction::Scalar { op, .. } => {
                    let name = function_name("binary", &format!("{op:?}"));
                    let body = binary_expression(self.dtype, op);
                    let function = format!("fn {name}(a: T, b: T) -> T {{ return {body}; }}");
                    (name, function)
                }
            };
            if !defined.contains(&name) {
                let _ = writeln!(text, "{function}");
                defined.push(name);
            }
        }
        // Each instruction's result as its single-op kernel stores it: rounded to the stored
        // type, and through an OR with a zero the compiler cannot see (a tensor has fewer than
        // 2^31 units), so that no product is contracted into the sum after it (an fma). Results
        // then equal the unfused ops' bit for bit, however the ops were grouped: two
        // data-parallel replicas on one GPU, whose deferred ops drain at moments set by the
        // other thread, stay identical.
        text.push_str(
            "var<private> runtime_zero: u32;\n\
             fn as_stored(x: T) -> T { return load_value(store_value(bitcast<T>(bitcast<u32>(x) | runtime_zero))); }\n",
        );
        let _ = writeln!(
            text,
            "@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>) {{
    runtime_zero = params.units >> 31u;
    let units = params.units;
    let stride = workgroups.x * 256u;
    var i = id.x;
    // {UNROLL} elements per invocation and trip: all loads first, so that they are in flight
    // together (the compiler may not move a load above a store to another binding).
    for (; i + {last_step}u * stride < units; i = i + {UNROLL}u * stride) {{",
            last_step = UNROLL - 1
        );
        let unrolled: Vec<(String, String)> = (0..UNROLL)
            .map(|j| (format!("i + {j}u * stride"), format!("{j}")))
            .collect();
        self.write_elements(&mut text, &unrolled, &offset_words, first_scalar);
        text.push_str("    }\n    for (; i < units; i = i + stride) {\n");
        self.write_elements(
            &mut text,
            &[("i".to_string(), "t".to_string())],
            &offset_words,
            first_scalar,
        );
        text.push_str("    }\n}\n");
        text
    }

    /// The loads, instructions and stores of the elements at `positions` (index expression,
    /// name suffix): every load first, then each element's instructions and store.
    fn write_elements(
        &self,
        text: &mut String,
        positions: &[(String, String)],
        offset_words: &[usize],
        first_scalar: usize,
    ) {
        let lanes: &[&str] = if self.vector {
            &["x", "y", "z", "w"]
        } else {
            &[""]
        };
        // Loads: `loaded<leaf>_<suffix>`, a vec4 or one element.
        for (index, suffix) in positions {
            for (leaf, &word) in offset_words.iter().enumerate() {
                let rank = self.leaf_ranks[leaf];
                if rank == 0 {
                    let _ = writeln!(
                        text,
                        "        let loaded{leaf}_{suffix} = leaf{leaf}[params.tail[{word}] + {index}];"
                    );
                    continue;
                }
                // A vector unit starts at element 4 * unit; its four lanes share one position
                // (a splat) or are the four elements from it (rows).
                let element_index = if self.vector {
                    format!("({index}) * 4u")
                } else {
                    index.clone()
                };
                let position = format!(
                    "params.tail[{word}] + strided_position({element_index}, {rank}u, {}u, {}u)",
                    word + 1,
                    word + 1 + rank as usize
                );
                if self.vector && self.leaf_rows[leaf] {
                    // Four neighbours in one row (rows are a multiple of 4 long).
                    let _ = writeln!(
                        text,
                        "        let at{leaf}_{suffix} = {position};\n        let loaded{leaf}_{suffix} = vec4<S>(leaf{leaf}[at{leaf}_{suffix}], leaf{leaf}[at{leaf}_{suffix} + 1u], leaf{leaf}[at{leaf}_{suffix} + 2u], leaf{leaf}[at{leaf}_{suffix} + 3u]);"
                    );
                } else if self.vector {
                    let _ = writeln!(
                        text,
                        "        let loaded{leaf}_{suffix} = vec4<S>(leaf{leaf}[{position}]);"
                    );
                } else {
                    let _ = writeln!(
                        text,
                        "        let loaded{leaf}_{suffix} = leaf{leaf}[{position}];"
                    );
                }
            }
        }
        for (index, suffix) in positions {
            for lane in lanes {
                // Value names: v<instruction>_<suffix><lane>.
                let value = |instruction: u16| format!("v{instruction}_{suffix}{lane}");
                for (number, instruction) in self.instructions.iter().enumerate() {
                    let expression = match *instruction {
                        FusedInstruction::Load { leaf } if self.vector => {
                            format!("load_value(loaded{leaf}_{suffix}.{lane})")
                        }
                        FusedInstruction::Load { leaf } => {
                            format!("load_value(loaded{leaf}_{suffix})")
                        }
                        FusedInstruction::Unary { op, x } => format!(
                            "{}({})",
                            function_name("unary", &format!("{op:?}")),
                            value(x)
                        ),
                        FusedInstruction::Binary { op, a, b } => format!(
                            "{}({}, {})",
                            function_name("binary", &format!("{op:?}")),
                            value(a),
                            value(b)
                        ),
                        FusedInstruction::Scalar {
                            op,
                            x,
                            scalar,
                            on_left,
                        } => {
                            let s = format!(
                                "bitcast<f32>(params.tail[{}])",
                                first_scalar + scalar as usize
                            );
                            let name = function_name("binary", &format!("{op:?}"));
                            if on_left {
                                format!("{name}({s}, {})", value(x))
                            } else {
                                format!("{name}({}, {s})", value(x))
                            }
                        }
                    };
                    let expression = match instruction {
                        FusedInstruction::Load { .. } => expression,
                        _ => format!("as_stored({expression})"),
                    };
                    let _ = writeln!(text, "        let {} = {expression};", value(number as u16));
                }
            }
            let last = self.instructions.len().saturating_sub(1) as u16;
            let stores: Vec<String> = lanes
                .iter()
                .map(|lane| format!("store_value(v{last}_{suffix}{lane})"))
                .collect();
            if self.vector {
                let _ = writeln!(
                    text,
                    "        output[{index}] = vec4<S>({});",
                    stores.join(", ")
                );
            } else {
                let _ = writeln!(text, "        output[{index}] = {};", stores[0]);
            }
        }
    }
}
