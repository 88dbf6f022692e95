//! The wide cooperative-matrix matmul kernels (`CoopVariant::Wide128`, `Wide256`): the
//! staged design of `matmul/coop.rs` with twice the subgroups per workgroup and 16-byte
//! operand loads.
//!
//! - One workgroup of 256 invocations (eight subgroups of 32, two high and four wide)
//!   computes a 128 x `tile_n` tile of C (`tile_n` 128 or 256); subgroup `s` owns rows
//!   `(s / 4) * 64 ..+ 64` and columns `(s % 4) * tile_n / 4 ..+ tile_n / 4` as a 4 x
//!   `tile_n / 64` grid of f32 accumulators.
//! - K is walked in blocks of 32. Operands are read from the storage buffers as
//!   `mat2x4<f16>` (8 halves, one 16-byte load; the staged kernels load `vec4<f16>`, 8
//!   bytes) into registers, then stored into f16 workgroup blocks. (Blocks declared as
//!   packed `u32` words, which would halve the stores, are accepted by naga but the H200's
//!   driver refuses to build cooperative loads of f16 matrices from `u32` memory.)
//! - One copy of each block (A's `128 x 32` halves, rows padded to 40; B's `32 x tile_n`,
//!   rows padded by 8 halves so the eight rows a fragment load reads at once start on
//!   different 16-byte bank groups), with the next block's loads held in registers while
//!   the current one is multiplied out: two barriers per block, but half the workgroup
//!   memory of double buffering, so the 128 x 256 tile fits in 48 KiB and the 128 x 128
//!   one in lavapipe's 32 KiB (its emulation runs in CI).
//! - The f16 output passes through a per-subgroup f32 scratch tile, as in `matmul/coop.rs`.
//!
//! Measured on the H200 at 4096³ (f16, f32 accumulation): Staged32 75.6 TFLOPS, Wide128
//! 101.9, Wide256 142.3 (169.4 at 8192³).

use std::fmt::Write;

use super::COOP_TILE;
use crate::backend::gpu::matmul::MatmulParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::cooperative::{block_product, store_register, Coop};
use crate::backend::gpu::runtime::wgsl::COMMON;

/// Halves of one k-block.
pub(super) const K_BLOCK: usize = 32;

/// Halves in a row of A's staged block: the k-block plus 8 of padding.
const A_ROW: usize = K_BLOCK + 8;

/// Invocations of one workgroup.
const INVOCATIONS: usize = 256;

/// Halves in a row of B's staged block for a tile `tile_n` wide (8 of padding).
fn b_row(tile_n: usize) -> usize {
    tile_n + 8
}

/// Bytes of workgroup memory a workgroup uses: one copy of each staged block and eight
/// 16 x 16 f32 scratch tiles.
pub(super) fn workgroup_bytes(tile_n: usize) -> u32 {
    let halves = COOP_TILE * A_ROW + K_BLOCK * b_row(tile_n);
    (2 * halves + 8 * 256 * 4) as u32
}

/// The kernel text after `enable f16;`. params: [`MatmulParams`].
pub(super) fn source_body(tile_n: usize, emulated: bool) -> String {
    let coop = Coop { emulated };
    let b_row = b_row(tile_n);
    let columns = tile_n / 64; // accumulators per subgroup row
    let b_loads_per_row = tile_n / 8; // 16-byte loads per k-row of B's block
    let b_rows_per_pass = INVOCATIONS / b_loads_per_row;
    let b_loads = K_BLOCK / b_rows_per_pass;
    let a_loads = COOP_TILE * (K_BLOCK / 8) / INVOCATIONS;
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    if !emulated {
        w.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    w.push_str(MatmulParams::WGSL);
    w.push_str(COMMON);
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<mat2x4<f16>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 2048>;
// A's block [128 rows][{A_ROW}] and B's [{K_BLOCK} k][{b_row}] (padded rows).
var<workgroup> tile_a: array<f16, {}>;
var<workgroup> tile_b: array<f16, {}>;"#,
        COOP_TILE * A_ROW,
        K_BLOCK * b_row
    );
    if emulated {
        w.push_str(&coop.prelude("tile_a", "tile_b"));
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
@compute @workgroup_size({INVOCATIONS})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{builtins}) {{
{subgroup}{lane}    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let n8 = n / 8u;
    let k8 = k / 8u;
    let steps = k / {K_BLOCK}u;
    let row0 = workgroup.y * {COOP_TILE}u;
    let column0 = workgroup.x * {tile_n}u;
    // This subgroup's 64 x {sub_n} part of the tile; its first halves in the blocks.
    let sub_row = (subgroup / 4u) * 64u;
    let sub_column = (subgroup % 4u) * {sub_n}u;
    let a_fragment = sub_row * {A_ROW}u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    // Loader roles: 16-byte load `local % 4` of A's rows `local / 4 + 64p`, load
    // `local % {b_loads_per_row}` of B's k-rows `local / {b_loads_per_row} + {b_rows_per_pass}p`;
    // where they go in the blocks.
    let a_store = (local / 4u) * {A_ROW}u + (local % 4u) * 8u;
    let b_store = (local / {b_loads_per_row}u) * {b_row}u + (local % {b_loads_per_row}u) * 8u;"#,
        builtins = coop.subgroup_builtins(),
        sub_n = tile_n / 4,
    );
    let accumulators: Vec<String> = (0..4 * columns)
        .map(|t| format!("c{}{}", t / columns, t % columns))
        .collect();
    for c in &accumulators {
        let _ = writeln!(w, "    var {c}: {};", coop.ty('C'));
    }
    let _ = writeln!(
        w,
        r#"    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {{
        // This invocation's first 16-byte load of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 8u + (row0 + local / 4u) * k8 + local % 4u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 8u + (local / {b_loads_per_row}u) * n8 + column0 / 8u + local % {b_loads_per_row}u;"#
    );
    for c in &accumulators {
        let _ = writeln!(w, "        {c} = {}();", coop.ty('C'));
    }
    for p in 0..a_loads {
        let _ = writeln!(
            w,
            "        var a{p} = matrix_a[a_start + {}u * k8];",
            p * 64
        );
    }
    for p in 0..b_loads {
        let _ = writeln!(
            w,
            "        var b{p} = matrix_b[b_start + {}u * n8];",
            p * b_rows_per_pass
        );
    }
    let _ = writeln!(
        w,
        "        for (var step = 0u; step < steps; step = step + 1u) {{\n\
         \x20           // Everyone is done reading the previous block.\n\
         \x20           workgroupBarrier();"
    );
    let indent = "            ";
    for p in 0..a_loads {
        let target = ("tile_a", "a_store", p * 64 * A_ROW);
        store_register(&mut w, indent, target, &format!("a{p}"));
    }
    for p in 0..b_loads {
        let target = ("tile_b", "b_store", p * b_rows_per_pass * b_row);
        store_register(&mut w, indent, target, &format!("b{p}"));
    }
    let _ = writeln!(
        w,
        "            workgroupBarrier();\n\
         \x20           // The next block's loads fly while this one is multiplied out.\n\
         \x20           if (step + 1u < steps) {{\n\
         \x20               let a_next = a_start + (step + 1u) * {}u;\n\
         \x20               let b_next = b_start + (step + 1u) * {K_BLOCK}u * n8;",
        K_BLOCK / 8
    );
    for p in 0..a_loads {
        let _ = writeln!(
            w,
            "                a{p} = matrix_a[a_next + {}u * k8];",
            p * 64
        );
    }
    for p in 0..b_loads {
        let _ = writeln!(
            w,
            "                b{p} = matrix_b[b_next + {}u * n8];",
            p * b_rows_per_pass
        );
    }
    let _ = writeln!(w, "            }}");
    block_product(
        &mut w,
        "            ",
        coop,
        (K_BLOCK, A_ROW, b_row),
        (4, columns),
    );
    let _ = writeln!(w, "        }}");
    // Epilogue: this invocation writes row `lane / 2`, columns `(lane % 2) * 8 + 0..8` of
    // each 16 x 16 accumulator, as two vec4<f16> (vec4 index `c_at` for accumulator 00).
    let _ = writeln!(
        w,
        "        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;"
    );
    for (t, c) in accumulators.iter().enumerate() {
        let (i, j) = (t / columns, t % columns);
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
