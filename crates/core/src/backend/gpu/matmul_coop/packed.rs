//! The packed cooperative-matrix matmul kernels (`packed32`, `slim32`, `wide16`, `tall16`,
//! `wide32`; see `matmul_coop.rs` for the family): one generator over a [`Geometry`] (the
//! workgroup's output tile, its grid of subgroups, each subgroup's grid of 16 x 16 f32
//! accumulators, the k-block, single or double buffering).
//!
//! What makes them "packed": A and B are bound as `array<vec4<u32>>`, so one global load
//! brings 8 halves (16 bytes, twice the staged kernels' `vec4<f16>`), and they are staged in
//! one workgroup array of 32-bit words (two halves each, stored as `bitcast<f32>` of the
//! loaded `u32`: a bit-exact move; four word stores per load instead of eight half stores).
//! The fragments are read from the words directly: SPIR-V's `OpCooperativeMatrixLoadKHR`
//! reinterprets the memory under a pointer of another scalar type (start and stride count
//! words), and naga checks only that a load's pointer base is a scalar. The array is typed
//! `f32` because naga requires a `coopStoreT` pointer of the matrix's own scalar: the f32
//! scratch tiles of the epilogue live in the same words, once the k-loop's last barrier has
//! retired every fragment read, so the scratch costs no workgroup memory.
//!
//! Layout of the staged words: `copies` copies of A's block (rows x (kb + 8) halves) and then
//! `copies` copies of B's block (kb x (columns + 8) halves); the padding keeps every row
//! 16-byte aligned and spreads the eight rows a fragment load reads at once over distinct
//! 16-byte bank groups (row pitches of 48, 80, 272 and 528 bytes).
//!
//! Double buffering (`copies` 2) is `staged32`'s: the next block's loads are issued into
//! registers before the current block is multiplied out and stored into the other copy
//! afterwards, one barrier per block. Single buffering (`copies` 1) issues the loads as
//! early, but stores them only after a barrier has retired the current block's fragment
//! reads: two barriers per block, half the workgroup memory.
//!
//! Emulated (`Coop::emulated`): fragments are `(start, stride)` in words; the multiply-add
//! unpacks halves from the words (`unpack2x16float`, so no f16 arithmetic is needed) and the
//! scratch store writes the f32 values into the words, so the emulated kernel keeps the
//! hardware kernel's staging, addressing, buffering and epilogue.

use std::fmt::Write;

use super::super::matmul::MatmulParams;
use super::super::params::KernelParams;
use super::super::wgsl::COMMON;
use super::Coop;

/// The shape of one packed kernel (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Output rows of one workgroup.
    pub(crate) rows: usize,
    /// Output columns of one workgroup.
    pub(crate) columns: usize,
    /// Subgroups (of 32 invocations) per workgroup.
    pub(crate) subgroups: usize,
    /// Subgroups across the tile's columns (the rest are stacked over its rows).
    pub(crate) grid_columns: usize,
    /// 16 x 16 accumulators per subgroup, down and across.
    pub(crate) fragments: (usize, usize),
    /// K-block staged at a time (a multiple of 16).
    pub(crate) kb: usize,
    /// Copies of the staged blocks: 2 double buffered, 1 single.
    pub(crate) copies: usize,
}

impl Geometry {
    /// Invocations per workgroup.
    pub(crate) fn threads(self) -> usize {
        32 * self.subgroups
    }

    /// Words per padded row of A's block and of B's block.
    fn row_words(self) -> (usize, usize) {
        ((self.kb + 8) / 2, (self.columns + 8) / 2)
    }

    /// Words of one copy of A's block and of B's block.
    fn block_words(self) -> (usize, usize) {
        let (a_row, b_row) = self.row_words();
        (self.rows * a_row, self.kb * b_row)
    }

    /// Words of the staging array (A's copies, then B's).
    pub(crate) fn words(self) -> usize {
        let (a, b) = self.block_words();
        self.copies * (a + b)
    }

    /// Bytes of workgroup memory (the scratch tiles share the staging words).
    pub(crate) fn workgroup_bytes(self) -> u32 {
        (4 * self.words()) as u32
    }

    /// Whether the generator's assumptions hold: the subgroups' accumulators cover the tile
    /// exactly, every loader pass covers whole rows, and the scratch fits the words.
    #[cfg(test)]
    pub(crate) fn consistent(self) -> bool {
        let threads = self.threads();
        let (quads_a, quads_b) = (self.kb / 8, self.columns / 8);
        self.kb.is_multiple_of(16)
            && self.subgroups.is_multiple_of(self.grid_columns)
            && self.rows == (self.subgroups / self.grid_columns) * self.fragments.0 * 16
            && self.columns == self.grid_columns * self.fragments.1 * 16
            && threads.is_multiple_of(quads_a)
            && (self.rows * quads_a).is_multiple_of(threads)
            && threads.is_multiple_of(quads_b)
            && (self.kb * quads_b).is_multiple_of(threads)
            && self.subgroups * 256 <= self.words()
            && (1..=2).contains(&self.copies)
    }
}

/// The kernel text after `enable f16;` (params: [`MatmulParams`]).
pub(crate) fn source_body(geometry: Geometry, emulated: bool) -> String {
    let coop = Coop { emulated };
    let g = geometry;
    let threads = g.threads();
    let (a_row, b_row) = g.row_words();
    let (a_block, b_block) = g.block_words();
    let b_base = g.copies * a_block;
    let (fragment_rows, fragment_columns) = g.fragments;
    let sub_rows = fragment_rows * 16;
    let sub_columns = fragment_columns * 16;
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    if emulated {
        w.push_str(EMULATION);
    } else {
        w.push_str("enable wgpu_cooperative_matrix;\n");
    }
    w.push_str(MatmulParams::WGSL);
    w.push_str(COMMON);
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// {copies} cop{plural} of A's block [{rows} rows][{a_row} words] from word 0, then of B's
// [{kb} k][{b_row} words] from word {b_base}; after the k-loop, subgroup s's 16 x 16 f32
// scratch tile at word 256 s.
var<workgroup> tile: array<f32, {words}>;

@compute @workgroup_size({threads})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{builtins}) {{"#,
        copies = g.copies,
        plural = if g.copies == 1 { "y" } else { "ies" },
        rows = g.rows,
        kb = g.kb,
        words = g.words(),
        builtins = coop.subgroup_builtins(),
    );
    if emulated {
        let _ = writeln!(
            w,
            "    let subgroup = local / 32u;\n    let lane = local % 32u;\n    emulated_lane = lane;"
        );
    }
    let (quads_a, quads_b) = (g.kb / 8, g.columns / 8);
    let (loads_a, loads_b) = (g.rows * quads_a / threads, g.kb * quads_b / threads);
    let (pass_a, pass_b) = (threads / quads_a, threads / quads_b);
    let _ = writeln!(
        w,
        r#"    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let k8 = k / 8u;
    let n8 = n / 8u;
    let steps = k / {kb}u;
    let row0 = workgroup.y * {rows}u;
    let column0 = workgroup.x * {columns}u;
    // This subgroup's {sub_rows} x {sub_columns} part of the tile.
    let sub_row = (subgroup / {grid}u) * {sub_rows}u;
    let sub_column = (subgroup % {grid}u) * {sub_columns}u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    // Loader roles: 16 bytes `local % {quads_a}` of A's block rows `local / {quads_a} + {pass_a}p`
    // (p < {loads_a}), 16 bytes `local % {quads_b}` of B's k rows `local / {quads_b} + {pass_b}p`
    // (p < {loads_b}); the words where they go in a block copy.
    let a_store = (local / {quads_a}u) * {a_row}u + (local % {quads_a}u) * 4u;
    let b_store = {b_base}u + (local / {quads_b}u) * {b_row}u + (local % {quads_b}u) * 4u;
    // This subgroup's first fragment words in a block copy.
    let a_fragment = sub_row * {a_row}u;
    let b_fragment = {b_base}u + sub_column / 2u;"#,
        kb = g.kb,
        rows = g.rows,
        columns = g.columns,
        grid = g.grid_columns,
    );
    let accumulators: Vec<String> = (0..fragment_rows * fragment_columns)
        .map(|t| format!("c{}{}", t / fragment_columns, t % fragment_columns))
        .collect();
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
    let _ = writeln!(
        w,
        r#"        // This invocation's first 16 bytes of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 8u + (row0 + local / {quads_a}u) * k8 + local % {quads_a}u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 8u + (local / {quads_b}u) * n8 + column0 / 8u + local % {quads_b}u;"#
    );
    let load = |w: &mut String, indent: &str, declare: &str, a_at: &str, b_at: &str| {
        for p in 0..loads_a {
            let _ = writeln!(
                w,
                "{indent}{declare}a{p} = matrix_a[{a_at} + {}u * k8];",
                p * pass_a
            );
        }
        for p in 0..loads_b {
            let _ = writeln!(
                w,
                "{indent}{declare}b{p} = matrix_b[{b_at} + {}u * n8];",
                p * pass_b
            );
        }
    };
    let store = |w: &mut String, indent: &str, a_at: &str, b_at: &str| {
        for p in 0..loads_a {
            for (word, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(
                    w,
                    "{indent}tile[{a_at} + a_store + {}u] = bitcast<f32>(a{p}.{component});",
                    p * pass_a * a_row + word
                );
            }
        }
        for p in 0..loads_b {
            for (word, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(
                    w,
                    "{indent}tile[{b_at} + b_store + {}u] = bitcast<f32>(b{p}.{component});",
                    p * pass_b * b_row + word
                );
            }
        }
    };
    let _ = writeln!(w, "        // k-block 0 into copy 0.");
    load(&mut w, "        ", "var ", "a_start", "b_start");
    store(&mut w, "        ", "0u", "0u");
    let double = g.copies == 2;
    let _ = writeln!(
        w,
        r#"        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
            // The next k-block's loads go out before the current block is multiplied out.
            let current = {current};
            let a_current = current * {a_block}u;
            let b_current = current * {b_block}u;
            let more = step + 1u < steps;
            if (more) {{
                let a_next = a_start + (step + 1u) * {quads_a}u;
                let b_next = b_start + (step + 1u) * {kb}u * n8;"#,
        current = if double { "step % 2u" } else { "0u" },
        kb = g.kb,
    );
    load(&mut w, "                ", "", "a_next", "b_next");
    let _ = writeln!(w, "            }}");
    for kk in 0..g.kb / 16 {
        let _ = writeln!(w, "            {{");
        for j in 0..fragment_columns {
            let start = format!("b_current + b_fragment + {}u", kk * 16 * b_row + j * 8);
            let _ = writeln!(
                w,
                "                let fb{j} = {};",
                coop.load('B', "tile", &start, &format!("{b_row}u"))
            );
        }
        for i in 0..fragment_rows {
            let start = format!("a_current + a_fragment + {}u", i * 16 * a_row + kk * 8);
            let _ = writeln!(
                w,
                "                let fa{i} = {};",
                coop.load('A', "tile", &start, &format!("{a_row}u"))
            );
            for j in 0..fragment_columns {
                let _ = writeln!(
                    w,
                    "                c{i}{j} = {};",
                    coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"))
                );
            }
        }
        let _ = writeln!(w, "            }}");
    }
    if double {
        let _ = writeln!(
            w,
            "            // Into the other copy, read by nobody since the last barrier.\n            if (more) {{\n                let a_other = {a_block}u - a_current;\n                let b_other = {b_block}u - b_current;"
        );
        store(&mut w, "                ", "a_other", "b_other");
        let _ = writeln!(
            w,
            "            }}\n            workgroupBarrier();\n        }}"
        );
    } else {
        let _ = writeln!(
            w,
            "            // The only copy, once every subgroup has read its fragments.\n            workgroupBarrier();\n            if (more) {{"
        );
        store(&mut w, "                ", "0u", "0u");
        let _ = writeln!(
            w,
            "            }}\n            workgroupBarrier();\n        }}"
        );
    }
    // Epilogue: this invocation writes row `lane / 2`, columns `(lane % 2) * 8 + 0..8` of
    // each accumulator as two vec4<f16> (vec4 index `c_at` for accumulator 00).
    let _ = writeln!(
        w,
        "        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;"
    );
    let value = |at: usize| format!("tile[lane_at + {at}u]");
    let quad = |first: usize| (first..first + 4).map(value).collect::<Vec<_>>().join(", ");
    for (t, c) in accumulators.iter().enumerate() {
        let (i, j) = (t / fragment_columns, t % fragment_columns);
        let store = if emulated {
            format!("emulated_store_scratch({c}, scratch_at);")
        } else {
            format!("coopStoreT({c}, &tile[scratch_at], 16u);")
        };
        let _ = writeln!(
            w,
            "        {store}\n        workgroupBarrier();\n        {{\n\
             \x20           let at = c_at + {}u * n4 + {}u;\n\
             \x20           matrix_c[at] = vec4<f16>(vec4<f32>({}));\n\
             \x20           matrix_c[at + 1u] = vec4<f16>(vec4<f32>({}));\n\
             \x20       }}\n        workgroupBarrier();",
            i * 16,
            j * 4,
            quad(0),
            quad(4)
        );
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// The emulated cooperative operations over the staging words (module documentation).
const EMULATION: &str = "var<private> emulated_lane: u32;
// Half `at` (counted in halves) of the staging words, as f32.
fn emulated_half(at: u32) -> f32 {
    return unpack2x16float(bitcast<u32>(tile[at / 2u]))[at % 2u];
}
fn emulated_multiply_add(a: vec2<u32>, b: vec2<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    var result = c;
    let row = 2u * a.x + (emulated_lane / 2u) * 2u * a.y;
    let column = 2u * b.x + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let x = emulated_half(row + j);
        let at = column + j * 2u * b.y;
        result[0] = result[0] + x * vec4<f32>(emulated_half(at), emulated_half(at + 1u), emulated_half(at + 2u), emulated_half(at + 3u));
        result[1] = result[1] + x * vec4<f32>(emulated_half(at + 4u), emulated_half(at + 5u), emulated_half(at + 6u), emulated_half(at + 7u));
    }
    return result;
}
fn emulated_store_scratch(c: array<vec4<f32>, 2>, start: u32) {
    let at = start + emulated_lane * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        tile[at + j] = c[0][j];
        tile[at + 4u + j] = c[1][j];
    }
}
";
