//! Vectorized elementwise kernels for contiguous data (`Access::Vector`).
//!
//! Memory-bound kernels are limited by how many *memory transactions* they issue, not by
//! arithmetic. A GPU serves a warp's loads in 32-byte sectors; when each invocation loads one
//! 4-byte word, the hardware must track 8x more requests than when each loads a 16-byte
//! `vec4`. So when every view is contiguous, starts at a multiple of 4 elements and the element
//! count is a multiple of 4, the kernel binds the buffers as `array<vec4<S>>` and every
//! invocation handles four elements at a time.
//!
//! The kernels also use a *grid-stride loop*: the host launches at most `MAX_WORKGROUPS`
//! workgroups (enough to fill a large GPU several times over), and each invocation walks
//! `v, v + stride, v + 2 stride, ...`. Fewer, longer-lived workgroups cost the GPU's scheduler
//! less than one tiny workgroup per 1,024 elements, and no 2-D grid is needed.
//!
//! params (all counts in vec4 units): [`VectorUnaryParams`], [`VectorBinaryParams`],
//! [`VectorScalarParams`] or [`VectorCopyParams`]. The output is always written from vector 0
//! of its binding, but for copies into a view (`destination_offset`).

use crate::backend::gpu::runtime::params::{kernel_params, KernelParams};

kernel_params! {
    /// Parameters of the vec4 unary kernels.
    struct VectorUnaryParams {
        /// vec4s to write.
        vectors: u32,
        /// The input's offset in vec4s.
        input_offset: u32,
    }
}

kernel_params! {
    /// Parameters of the vec4 binary kernels.
    struct VectorBinaryParams {
        /// vec4s to write.
        vectors: u32,
        /// The left operand's offset in vec4s.
        lhs_offset: u32,
        /// The right operand's offset in vec4s.
        rhs_offset: u32,
    }
}

kernel_params! {
    /// Parameters of the vec4 `binary_scalar` kernels.
    struct VectorScalarParams {
        /// vec4s to write.
        vectors: u32,
        /// The input's offset in vec4s.
        input_offset: u32,
        /// The scalar as bits of the compute type.
        scalar: u32,
    }
}

kernel_params! {
    /// Parameters of the vec4 copy kernels.
    struct VectorCopyParams {
        /// vec4s to copy.
        vectors: u32,
        /// The source's offset in vec4s.
        source_offset: u32,
        /// The destination's offset in vec4s.
        destination_offset: u32,
    }
}

pub(crate) use crate::backend::gpu::runtime::context::MAX_WORKGROUPS;

/// Which family a vectorized kernel serves (decides bindings and the per-element expression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VectorFamily {
    /// `output = compute(input)`; header defines `compute`, `load_value`, `store_value`.
    Unary,
    /// `output = store_result(compute(lhs, rhs))`.
    Binary,
    /// `output = store_result(compute(x, s))` or `compute(s, x)` (`SCALAR_ON_LEFT`).
    BinaryScalar,
    /// `destination = convert(source)` (`SI`, `SO`, `convert` from the header).
    Copy,
}

/// Expression of component `c` of the result, given the loaded vectors `x<j>` (and `y<j>`).
fn element(family: VectorFamily, c: &str, j: usize) -> String {
    match family {
        VectorFamily::Unary => format!("store_value(compute(load_value(x{j}.{c})))"),
        VectorFamily::Binary => {
            format!("store_result(compute(load_value(x{j}.{c}), load_value(y{j}.{c})))")
        }
        VectorFamily::BinaryScalar => format!("apply_scalar(load_value(x{j}.{c}), s)"),
        VectorFamily::Copy => format!("convert(x{j}.{c})"),
    }
}

/// Vectors each invocation handles per trip of the main loop (loads first, then stores, so
/// that several loads are in flight at once).
pub(crate) const UNROLL: usize = 4;

/// The kernel body (after the family's header and `common.wgsl`), its params struct first.
pub(crate) fn source_body(family: VectorFamily) -> String {
    let params = match family {
        VectorFamily::Unary => VectorUnaryParams::WGSL,
        VectorFamily::Binary => VectorBinaryParams::WGSL,
        VectorFamily::BinaryScalar => VectorScalarParams::WGSL,
        VectorFamily::Copy => VectorCopyParams::WGSL,
    };
    let (bindings, inputs, output_type, output_offset) = match family {
        VectorFamily::Unary => (
            "@group(0) @binding(1) var<storage, read> input: array<vec4<S>>;\n\
             @group(0) @binding(2) var<storage, read_write> output: array<vec4<S>>;\n",
            &[("x", "input", "input_offset")][..],
            "S",
            "",
        ),
        VectorFamily::Binary => (
            "@group(0) @binding(1) var<storage, read> lhs: array<vec4<S>>;\n\
             @group(0) @binding(2) var<storage, read> rhs: array<vec4<S>>;\n\
             @group(0) @binding(3) var<storage, read_write> output: array<vec4<O>>;\n",
            &[("x", "lhs", "lhs_offset"), ("y", "rhs", "rhs_offset")][..],
            "O",
            "",
        ),
        VectorFamily::BinaryScalar => (
            "@group(0) @binding(1) var<storage, read> input: array<vec4<S>>;\n\
             @group(0) @binding(2) var<storage, read_write> output: array<vec4<O>>;\n\
             fn apply_scalar(x: T, s: T) -> O {\n\
             \x20   if (SCALAR_ON_LEFT) { return store_result(compute(s, x)); }\n\
             \x20   return store_result(compute(x, s));\n}\n",
            &[("x", "input", "input_offset")][..],
            "O",
            "",
        ),
        VectorFamily::Copy => (
            "@group(0) @binding(1) var<storage, read> source: array<vec4<SI>>;\n\
             @group(0) @binding(2) var<storage, read_write> output: array<vec4<SO>>;\n",
            &[("x", "source", "source_offset")][..],
            "SO",
            "params.destination_offset + ",
        ),
    };
    let scalar = match family {
        VectorFamily::BinaryScalar => "    let s = scalar_value(params.scalar);\n",
        VectorFamily::Unary | VectorFamily::Binary | VectorFamily::Copy => "",
    };
    // Loads of the vectors at `positions[j]` into `x<j>`/`y<j>`, then one store per position.
    let block = |positions: &[String]| {
        let mut text = String::new();
        for (j, position) in positions.iter().enumerate() {
            for (name, binding, field) in inputs {
                text.push_str(&format!(
                    "        let {name}{j} = {binding}[params.{field} + {position}];\n"
                ));
            }
        }
        for (j, position) in positions.iter().enumerate() {
            let components: Vec<String> = ["x", "y", "z", "w"]
                .iter()
                .map(|c| element(family, c, j))
                .collect();
            text.push_str(&format!(
                "        output[{output_offset}{position}] = vec4<{output_type}>({});\n",
                components.join(", ")
            ));
        }
        text
    };
    let unrolled: Vec<String> = (0..UNROLL).map(|j| format!("v + {j}u * stride")).collect();
    format!(
        "{params}{bindings}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>) {{
    let vectors = params.vectors;
    let stride = workgroups.x * 256u;
{scalar}    var v = id.x;
    for (; v + {last}u * stride < vectors; v = v + {UNROLL}u * stride) {{
{}    }}
    for (; v < vectors; v = v + stride) {{
{}    }}
}}
",
        block(&unrolled),
        block(&["v".to_string()]),
        last = UNROLL - 1
    )
}
