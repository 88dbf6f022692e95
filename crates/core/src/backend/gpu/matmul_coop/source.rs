//! The text of the first three cooperative-matrix matmul kernels (`direct`, `staged16`,
//! `staged32`; the packed ones are `packed.rs`'s): one generator, the staged k-loop and the
//! direct k-loop. The design and the naga pitfalls are `matmul_coop.rs`'s header.

use std::fmt::Write;

use super::super::matmul::MatmulParams;
use super::super::params::KernelParams;
use super::super::wgsl::COMMON;
use super::{packed, Coop, CoopVariant, B_ROW};

/// The kernel text after `enable f16;` (the header `KernelKey::source` writes).
/// params: [`MatmulParams`] (`matmul.rs`).
pub(crate) fn source_body(variant: CoopVariant, emulated: bool) -> String {
    if let Some(geometry) = variant.geometry() {
        return packed::source_body(geometry, emulated);
    }
    let coop = Coop { emulated };
    let (element, a_source, b_source) = match variant {
        CoopVariant::Direct => ("f16", "matrix_a", "matrix_b"),
        _ => ("vec4<f16>", "tile_a", "tile_b"),
    };
    let staged = variant != CoopVariant::Direct;
    // Staged: k-block, A's padded row, halves of one copy of A's and B's block, vec4s per
    // row of A's block.
    let (kb, a_row, (a_block, b_block)) = (variant.k_step(), variant.a_row(), variant.blocks());
    let quads = kb / 4;
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    if !emulated {
        w.push_str(&coop.prelude(a_source, b_source));
    }
    w.push_str(MatmulParams::WGSL);
    w.push_str(COMMON);
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<{element}>;
@group(0) @binding(2) var<storage, read> matrix_b: array<{element}>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 1024>;"#
    );
    if staged {
        let _ = writeln!(
            w,
            "// Two copies (ping-pong) of A's block [128 rows][{a_row}] and B's [{kb} k][{B_ROW}] (padded rows).\n\
             var<workgroup> tile_a: array<f16, {}>;\nvar<workgroup> tile_b: array<f16, {}>;",
            2 * a_block,
            2 * b_block
        );
    }
    if emulated {
        w.push_str(&coop.prelude(a_source, b_source));
    }
    let (subgroup, lane) = if emulated {
        (
            "    let subgroup = local / 32u;\n",
            "    let lane = local % 32u;\n    emulated_lane = lane;\n",
        )
    } else {
        ("", "")
    };
    let _ = writeln!(
        w,
        r#"
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{builtins}) {{
{subgroup}{lane}    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // This subgroup's 64 x 64 quarter of the tile.
    let sub_row = (subgroup / 2u) * 64u;
    let sub_column = (subgroup % 2u) * 64u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;"#,
        builtins = coop.subgroup_builtins(),
    );
    if staged {
        let _ = writeln!(
            w,
            r#"    let k4 = k / 4u;
    let steps = k / {kb}u;
    // Loader roles: vec4 `local % {quads}` of rows `local / {quads} + {a_rows}p` of A's block,
    // vec4 `local % 32` of k rows `local / 32 + 4p` of B's block (p = 0..{loads}); where they
    // go in a block copy.
    let a_store = (local / {quads}u) * {a_row}u + (local % {quads}u) * 4u;
    let b_store = (local / 32u) * {B_ROW}u + (local % 32u) * 4u;
    // This subgroup's first A row in a block copy.
    let a_fragment = sub_row * {a_row}u;"#,
            a_rows = 128 / quads,
            loads = kb / 4,
        );
    }
    let accumulators: Vec<String> = (0..16).map(|t| format!("c{}{}", t / 4, t % 4)).collect();
    for c in &accumulators {
        let _ = writeln!(w, "    var {c}: {};", coop.ty('C'));
    }
    let _ = writeln!(
        w,
        "    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {{"
    );
    for c in &accumulators {
        let _ = writeln!(w, "        {c} = {}();", coop.ty('C'));
    }
    if staged {
        staged_loop(&mut w, coop, variant);
    } else {
        direct_loop(&mut w, coop);
    }
    // Epilogue: this invocation writes row `lane / 2`, columns `(lane % 2) * 8 + 0..8` of
    // each 16 x 16 accumulator, as two vec4<f16> (vec4 index `c_at` for accumulator 00).
    let _ = writeln!(
        w,
        "        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;"
    );
    for (t, c) in accumulators.iter().enumerate() {
        let (i, j) = (t / 4, t % 4);
        let _ = writeln!(
            w,
            "        {}\n        workgroupBarrier();\n        {{\n\
             \x20           let at = c_at + {}u * n4 + {}u;\n\
             \x20           matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));\n\
             \x20           matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));\n\
             \x20       }}\n        workgroupBarrier();",
            coop.store_scratch(c, "scratch_at"),
            i * 16,
            j * 4
        );
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// The staged kernels' k-loop: double-buffered workgroup blocks of `variant.k_step()` k.
fn staged_loop(w: &mut String, coop: Coop, variant: CoopVariant) {
    let (kb, a_row, (a_block, b_block)) = (variant.k_step(), variant.a_row(), variant.blocks());
    let quads = kb / 4; // vec4s per row of A's block
    let loads = kb / 4; // vec4s of each block per invocation per k-block
    let a_rows = 128 / quads; // rows of A's block one vec4 per invocation covers
    let _ = writeln!(
        w,
        r#"        // This invocation's first vec4 of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 4u + (row0 + local / {quads}u) * k4 + local % {quads}u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 4u + (local / 32u) * n4 + column0 / 4u + local % 32u;"#
    );
    // The global loads of one k-block into registers a{p}, b{p}.
    let load = |w: &mut String, indent: &str, declare: &str, a_at: &str, b_at: &str| {
        for p in 0..loads {
            let _ = writeln!(
                w,
                "{indent}{declare}a{p} = matrix_a[{a_at} + {}u * k4];",
                p * a_rows
            );
        }
        for p in 0..loads {
            let _ = writeln!(
                w,
                "{indent}{declare}b{p} = matrix_b[{b_at} + {}u * n4];",
                p * 4
            );
        }
    };
    // The registers into the block copies starting at `a_at`, `b_at`.
    let store = |w: &mut String, indent: &str, a_at: &str, b_at: &str| {
        for p in 0..loads {
            for (lane, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(
                    w,
                    "{indent}tile_a[{a_at} + a_store + {}u] = a{p}.{component};",
                    p * a_rows * a_row + lane
                );
                let _ = writeln!(
                    w,
                    "{indent}tile_b[{b_at} + b_store + {}u] = b{p}.{component};",
                    p * 4 * B_ROW + lane
                );
            }
        }
    };
    let _ = writeln!(w, "        // k-block 0 into copy 0.");
    load(w, "        ", "var ", "a_start", "b_start");
    store(w, "        ", "0u", "0u");
    let _ = writeln!(
        w,
        r#"        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
            // Multiply out copy `step % 2` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * {a_block}u;
            let b_current = current * {b_block}u;
            let more = step + 1u < steps;
            if (more) {{
                let a_next = a_start + (step + 1u) * {quads}u;
                let b_next = b_start + (step + 1u) * {kb}u * n4;"#
    );
    load(w, "                ", "", "a_next", "b_next");
    let _ = writeln!(w, "            }}");
    for kk in 0..kb / 16 {
        let _ = writeln!(w, "            {{");
        for j in 0..4 {
            let start = format!("b_current + sub_column + {}u", kk * 16 * B_ROW + j * 16);
            let _ = writeln!(
                w,
                "                let fb{j} = {};",
                coop.load('B', "tile_b", &start, &format!("{B_ROW}u"))
            );
        }
        for i in 0..4 {
            let start = format!("a_current + a_fragment + {}u", i * 16 * a_row + kk * 16);
            let _ = writeln!(
                w,
                "                let fa{i} = {};",
                coop.load('A', "tile_a", &start, &format!("{a_row}u"))
            );
            for j in 0..4 {
                let _ = writeln!(
                    w,
                    "                c{i}{j} = {};",
                    coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"))
                );
            }
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(
        w,
        "            if (more) {{\n                let a_other = {a_block}u - a_current;\n                let b_other = {b_block}u - b_current;"
    );
    store(w, "                ", "a_other", "b_other");
    let _ = writeln!(
        w,
        "            }}\n            workgroupBarrier();\n        }}"
    );
}

/// The direct kernel's k-loop: fragments straight from the storage buffers, K-step 16.
fn direct_loop(w: &mut String, coop: Coop) {
    let _ = writeln!(
        w,
        r#"        // This subgroup's first element of A (row row0 + sub_row) and of B (column
        // column0 + sub_column) in batch b.
        let a_base = params.a_offset + b * params.a_batch_stride + (row0 + sub_row) * k;
        let b_base = params.b_offset + b * params.b_batch_stride + column0 + sub_column;
        for (var k0 = 0u; k0 < k; k0 = k0 + 16u) {{
            let a_at = a_base + k0;
            let b_at = b_base + k0 * n;"#
    );
    for j in 0..4 {
        let start = format!("b_at + {}u", j * 16);
        let _ = writeln!(
            w,
            "            let fb{j} = {};",
            coop.load('B', "matrix_b", &start, "n")
        );
    }
    for i in 0..4 {
        let start = format!("a_at + {}u * k", i * 16);
        let _ = writeln!(
            w,
            "            let fa{i} = {};",
            coop.load('A', "matrix_a", &start, "k")
        );
        for j in 0..4 {
            let _ = writeln!(
                w,
                "            c{i}{j} = {};",
                coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"))
            );
        }
    }
    let _ = writeln!(w, "        }}");
}
