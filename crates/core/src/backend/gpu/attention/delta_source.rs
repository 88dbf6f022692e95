//! The WGSL of the attention backward's delta pass (`AttentionPass::Delta` and
//! `DeltaZeroing`; the other passes' generators are in `attention/source.rs`, their launcher in
//! `attention/`): `D = rowsum(dO ∘ O)` per query row, stored beside the row's log-sum-exp as
//! one `vec2<f32>`, and, for `DeltaZeroing`, the zeros of the f32 query-gradient sums that the
//! cooperative key-value kernel adds into (`attention/coop/backward/fold.rs`).

use std::fmt::Write;

use crate::backend::gpu::attention::source::{prologue, AttentionPass, Variant, BLOCK_ROWS, ENTRY};

/// `D = rowsum(dO ∘ O)`, one invocation per row (or per vec4 of a row: [`spread_delta`]);
/// `DeltaZeroing` also zeroes the row's `d` floats of the query-gradient sums.
pub(super) fn delta(w: &mut String, variant: &Variant, d4: u32, v4: u32) {
    let zeroing = variant.pass == AttentionPass::DeltaZeroing;
    let mut bindings = vec![
        ("output_data", "vec4<S>", false),
        ("grad_data", "vec4<S>", false),
        ("logsumexp_data", "f32", false),
        ("statistics_data", "vec2<f32>", true),
    ];
    if zeroing {
        bindings.push(("query_sums_data", "vec4<f32>", true));
    }
    prologue(w, variant, &bindings);
    if delta_rows_per_workgroup(variant.value_dim).is_some() {
        return spread_delta(w, zeroing.then_some(d4), v4);
    }
    let _ = writeln!(
        w,
        "{ENTRY}
    let row = workgroup.x * {BLOCK_ROWS}u + local;
    if (row >= params.query_length) {{
        return;
    }}
    let own = workgroup.y * params.query_length + row;
    var total = vec4<f32>(0.0);"
    );
    if zeroing {
        let _ = writeln!(
            w,
            "    let sums_at = {};",
            sums_row("workgroup.y", "row", d4)
        );
        for i in 0..d4 {
            let _ = writeln!(w, "    query_sums_data[sums_at + {i}u] = vec4<f32>(0.0);");
        }
    }
    for i in 0..v4 {
        let _ = writeln!(
            w,
            "    total = total + vec4<f32>(grad_data[own * {v4}u + {i}u]) * vec4<f32>(output_data[own * {v4}u + {i}u]);"
        );
    }
    w.push_str(
        "    statistics_data[own] = vec2<f32>(logsumexp_data[own], dot(total, vec4<f32>(1.0)));\n}\n",
    );
}

/// Rows of one workgroup of the spread delta kernel (`spread_delta`): 256 invocations, one
/// per vec4 of a row, where the row's vec4 count divides 256; `None` keeps the kernel with one
/// invocation a row.
pub(crate) fn delta_rows_per_workgroup(value_dim: u32) -> Option<u32> {
    let v4 = value_dim / 4;
    (value_dim.is_multiple_of(4) && v4 > 0 && 256u32.is_multiple_of(v4)).then(|| 256 / v4)
}

/// The vec4 index of the first of the query-gradient sums' floats of query row `row` of
/// batch-head `head` (WGSL expressions): `padded_rows` (`attention/coop/backward/fold.rs`) rows of
/// `d4` vec4s a batch-head.
fn sums_row(head: &str, row: &str, d4: u32) -> String {
    let tile = crate::backend::gpu::attention::coop::backward::source::TILE;
    format!(
        "(({head}) * ((params.query_length + {}u) / {tile}u) * {tile}u + ({row})) * {d4}u",
        tile - 1
    )
}

/// The delta kernel with one invocation per vec4 of `dO` and `O` (the rows of all batch-heads
/// are consecutive in both): each invocation's product goes to workgroup memory, and the first
/// invocation of each row adds the row's `v4` products. At 8 x 12 x 512 x 64 that is 786,432
/// invocations, where the kernel with one invocation a row ran 49,152 walking 16 vec4s each.
/// With `zero_width = Some(d4)` the `v4` invocations of a row also zero its `d4` vec4s of the
/// query-gradient sums between them (the padding rows past the length stay as they are: the
/// key-value kernel adds into them, and nothing reads them).
fn spread_delta(w: &mut String, zero_width: Option<u32>, v4: u32) {
    let _ = writeln!(
        w,
        "var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let rows = params.batch_heads * params.query_length;
    let at = (workgroup.y * workgroups.x + workgroup.x) * 256u + local;
    var product = 0.0;
    if (at < rows * {v4}u) {{
        product = dot(vec4<f32>(grad_data[at]), vec4<f32>(output_data[at]));"
    );
    if let Some(d4) = zero_width {
        let _ = writeln!(
            w,
            "        let own_row = at / {v4}u;
        let sums_at = {};
        let column = at % {v4}u;",
            sums_row(
                "own_row / params.query_length",
                "own_row % params.query_length",
                d4
            )
        );
        for round in 0..d4.div_ceil(v4) {
            let _ = writeln!(
                w,
                "        if (column + {first}u < {d4}u) {{
            query_sums_data[sums_at + column + {first}u] = vec4<f32>(0.0);
        }}",
                first = round * v4
            );
        }
    }
    let _ = writeln!(
        w,
        "    }}
    partial[local] = product;
    workgroupBarrier();
    let own = at / {v4}u;
    if (local % {v4}u != 0u || own >= rows) {{
        return;
    }}
    var total = 0.0;"
    );
    for c in 0..v4 {
        let _ = writeln!(w, "    total = total + partial[local + {c}u];");
    }
    w.push_str(
        "    statistics_data[own] = vec2<f32>(logsumexp_data[own], total);
}
",
    );
}
