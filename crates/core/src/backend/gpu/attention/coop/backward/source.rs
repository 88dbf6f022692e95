//! The WGSL generator of the fused attention backward on cooperative matrices (tensor cores):
//! the key-value kernel (dK, dV) and the query kernel (dQ), each owning its output rows (WGSL
//! has no float atomics without `SHADER_FLOAT32_ATOMIC`). `attention/coop/backward.rs`
//! holds their key, the selection and the launcher. Same math, bindings, parameters, row
//! statistics (`(lse, D)` pairs from the scalar delta kernel) and outputs as the scalar
//! key-value and query passes (`attention/source.rs`), so either kernel of a pass may run.
//!
//! Tile design, shared by both kernels (spelled as in the forward, `attention/coop/source.rs`):
//! a workgroup of `G` subgroups (eight on tensor cores where the widths are 32 or 64:
//! `eight_subgroups` in `attention/coop/backward/layout.rs`; else four; two where the
//! device's workgroup memory does not hold four: `CoopBackward::subgroups`) owns `16 G` rows of one batch-head — key rows in the
//! key-value kernel, query rows in the query kernel; subgroup `s` owns rows `16 s .. 16 s + 16`.
//! H200, 8 x 12 x 512 x 64 (docs/PERFORMANCE.md): with eight
//! subgroups the key-value kernel took 146.2 µs and the query kernel 100.1, against 197 and
//! 146 with four (and 290 for the four-subgroup key-value kernel that also sums dQ): one
//! workgroup runs per multiprocessor either way, so eight subgroups are 8 warps there instead
//! of 4, and each staged tile serves 128 rows instead of 64.
//! The block's two operands (K and V, or Q and dO) are staged once as f16 in workgroup memory
//! (rows padded by 8 halves). The other side is walked in tiles of [`TILE`] (32) rows (Q and
//! dO, or K and V), staged alike. Per tile, each subgroup computes, with the block operand as
//! the row-major A fragment and the tile operand read column-major as B (`coopLoad`: a
//! transposed operand without a copy):
//! 1. scores and their gradients, 16 x 32 each: `Sᵀ = K Qᵀ`, `dPᵀ = V dOᵀ` (key-value
//!    kernel) or `S = Q Kᵀ`, `dP = dO Vᵀ` (query kernel);
//! 2. through the subgroup's 16 x 32 f32 scratch (first the scores, then their gradients, a
//!    barrier between): lane `l` takes row `l / 2` and the 16 columns `(l % 2) * 16 ..` (in
//!    an order rotated by its row, as in the forward: one bank per lane for the scratch) and
//!    computes `p = exp(s · scale + bias - lse)` (masked to 0) and `ds = p (dp - D)`, written
//!    as f16 into the subgroup's P and dS tiles (16 x 40 halves); the row's bias, or its
//!    log-sum-exp and `D`, stay in registers (key-value kernel: the tile's `(lse, D)` pairs are
//!    staged beside the queries; query kernel: the tile's key biases);
//! 3. the products into f32 accumulators that persist across the walk (cooperative-matrix
//!    variables, or the emulated lane layout): `dV += Pᵀ dO`, `dK += dSᵀ Q` (key-value), or
//!    `dQ += dS K` (query) — A the subgroup's P or dS tile, B the staged tile row-major.
//!
//! At the end the accumulators pass through the scratch two at a time and are written as f16
//! (`dK` and `dQ` times `scale`), dK before dV in the one key-value output as the scalar kernel.
//! With `fold_query` the key-value kernel also adds each tile's `scale dS K` to an f32 dQ
//! (`attention/coop/backward/fold.rs`): at the start of the next tile, after its first barrier, and
//! after the walk for the last tile; the eight-subgroup kernel at d = 64 first loads its keys'
//! B fragments for that into registers, while its K block is staged.
//! Six barriers per tile: before and after staging (the workgroup's), and around each use of
//! the scratch, P and dS, which only the subgroup itself touches (`Spell::local_barrier`: a
//! subgroup barrier on tensor cores; H200, 8 x 12 x 512 x 64: key-value kernel 204.3 → 195.3
//! µs, docs/PERFORMANCE.md). Where
//! an invocation's share of a tile fits eight 16-byte registers (d, dv <= 64 with four
//! subgroups), the next tile's loads are issued right after the staging barrier, in flight
//! during the current tile's products, and stored at the next tile's staging; in the
//! key-value kernel the tile's `(lse, D)` pairs travel with them (loaded at the staging
//! itself, they held every subgroup at the barrier for a load's latency each tile: H200,
//! 8 x 12 x 512 x 64, step 286–290 → 281–283 µs back to back).
//!
//! Masks as in the scalar kernels: rows and columns past the lengths, causal (key column `<=`
//! query row; the key-value kernel starts at the first query tile its keys can see, the query
//! kernel stops after the last key its rows can see) and the key-padding bias (added to the
//! scaled score; biases `<= -1e38` mark the key invisible). A masked probability is 0, so a
//! masked key gets zero gradients and a query row without visible keys a zero dQ.
//!
//! Workgroup memory (`workgroup_bytes` in `attention/coop/backward/layout.rs`), in halves
//! `16 G (d + 8) + 16 G (dv + 8)` for the block, `32 (d + 8) + 32 (dv + 8)` for the tile, `16 G x 40` for each of P (key-value only)
//! and dS, plus `G x 16 x 40` f32 of scratch and the tile's statistics (`32 x 2` f32) or key
//! biases (32 f32). At d = dv = 64 with G = 4: 48,384 bytes (key-value) and 43,008 (query;
//! 43,136 with a key bias), so the H200's 48 KiB take four subgroups up to d = dv = 64; at
//! d = dv = 128 with G = 2: 45,312 and 42,496 (42,624). (Lavapipe's 32 KiB take G = 2 at
//! d = dv = 64, G = 4 at 16.) On tensor cores the query kernel up to d = dv = 64 loads its
//! block's fragments into registers before the walk, whose tile, dS and scratch then reuse
//! the block's space: 28,672 bytes at 64 (28,800 with a key bias; `block_in_registers`). The
//! eight-subgroup kernels do so in both passes, one block operand at a time (128 rows of both
//! would not fit), with scratch rows of 36 floats: 48,384 bytes (key-value) and 37,888
//! (query) at d = dv = 64.
//!
//! `emulated` keys spell the cooperative operations in plain WGSL exactly as the forward does
//! (fragments are addresses into `tiles`, accumulators the lane's 8 values), so the staging,
//! masking, softmax gradients and epilogues run on any f16 device in tests.
//!
//! naga 30: `coopStoreT` arguments and load strides are `let` bindings or literals (see
//! `matmul/coop.rs`).

use std::fmt::Write;

use crate::backend::gpu::attention::coop::backward::fold::{
    emit_fold_key_fragments, emit_fold_last, emit_fold_previous, emit_fold_prologue,
    folds_from_registers, FoldRegions,
};
use crate::backend::gpu::attention::coop::backward::layout::{
    block_in_registers, layout, PROBABILITY_ROW,
};
use crate::backend::gpu::attention::coop::source::{LOWEST, MASKED_BELOW};
use crate::backend::gpu::attention::coop::spell::{rotated_columns, Spell};
use crate::backend::gpu::attention::coop::staging::{
    emit_loads, emit_stores, stage, staged_items, Staged, LOADS_IN_FLIGHT,
};
use crate::backend::gpu::runtime::params::KernelParams;

/// Rows of the walked side per staged tile (queries in the key-value kernel, keys in the
/// query kernel).
pub(crate) const TILE: u32 = 32;

/// Which kernel of the cooperative backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CoopBackwardPass {
    /// dK and dV: a workgroup owns key rows and walks query tiles.
    KeyValue,
    /// dQ: a workgroup owns query rows and walks key tiles.
    Query,
}

/// One instantiation of the cooperative backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoopBackward {
    pub(crate) pass: CoopBackwardPass,
    /// Query/key width: a multiple of 16 up to 128.
    pub(crate) head_dim: u32,
    /// Value width: a multiple of 16 up to 128.
    pub(crate) value_dim: u32,
    pub(crate) causal: bool,
    /// A key-padding bias is bound.
    pub(crate) key_bias: bool,
    /// Subgroups per workgroup, 16 owned rows each: 4, or 2 where the device's workgroup
    /// memory does not hold four (the launcher picks).
    pub(crate) subgroups: u32,
    /// Plain-WGSL emulation of the cooperative operations.
    pub(crate) emulated: bool,
    /// The key-value kernel also sums the query gradient into an f32 buffer with float
    /// atomics (`attention/coop/backward/fold.rs`); false in the query kernel.
    pub(crate) fold_query: bool,
}

/// `let {name}{k}`: the subgroup's row-major A fragment of the block operand at `region`
/// (rows `row_length` halves apart), columns `16 k ..`.
fn block_fragment(
    w: &mut String,
    spell: &Spell,
    indent: &str,
    (name, k): (&str, u32),
    region: u32,
    row_length: u32,
) {
    let _ = writeln!(
        w,
        "{indent}let {name}_at{k} = {region}u + sub_row * {row_length}u + {}u;\n{indent}let {name}{k} = {};",
        k * 16,
        spell.load_rows('A', &format!("{name}_at{k}"), row_length)
    );
}

/// `vec4<f32>(at(k{4v}), .., at(k{4v + 3}))`: the lane's columns `4v .. 4v + 4` of its half
/// of a tile, in its rotated order (the `k{n}` of [`backward_source`]).
fn gather(at: &dyn Fn(&str) -> String, v: u32) -> String {
    let lanes: Vec<String> = (0..4).map(|i| at(&format!("k{}", 4 * v + i))).collect();
    format!("vec4<f32>({})", lanes.join(", "))
}

/// The complete WGSL of `key` (after `enable f16;`).
pub(crate) fn backward_source(key: &CoopBackward) -> String {
    let spell = Spell {
        emulated: key.emulated,
    };
    let key_value = key.pass == CoopBackwardPass::KeyValue;
    let fold = key_value && key.fold_query;
    let (d, dv) = (key.head_dim, key.value_dim);
    let layout = layout(key);
    let (first_row, second_row) = (layout.first_row, layout.second_row);
    let scratch_row = layout.scratch_row;
    let rows = key.block_rows();
    let threads = key.threads();
    let mut w = String::new();
    if !key.emulated {
        w.push_str("enable wgpu_cooperative_matrix;\n");
    }
    w.push_str(crate::backend::gpu::attention::AttentionParams::WGSL);
    let mut names = vec![
        ("query_data", "vec4<f16>", false),
        ("key_data", "vec4<f16>", false),
        ("value_data", "vec4<f16>", false),
        ("grad_data", "vec4<f16>", false),
        ("statistics_data", "vec2<f32>", false),
    ];
    if key.key_bias {
        names.push(("key_bias_data", "f32", false));
    }
    // dK then dV in one buffer, as the scalar kernel writes them.
    names.push(if key_value {
        ("key_value_grad_data", "vec4<f16>", true)
    } else {
        ("query_grad_data", "vec4<f16>", true)
    });
    for (slot, (name, element, writable)) in names.iter().enumerate() {
        let access = if *writable { "read_write" } else { "read" };
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, {access}> {name}: array<{element}>;",
            slot + 1
        );
    }
    if fold {
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, read_write> query_grad_data: array<atomic<f32>>;",
            names.len() + 1
        );
    }
    let (block_names, tile_names) = if key_value {
        (("K", "V"), ("Q", "dO"))
    } else {
        (("Q", "dO"), ("K", "V"))
    };
    let _ = writeln!(
        w,
        "// {} [{rows}][{first_row}] at 0, {} [{rows}][{second_row}] at {}, {} [{TILE}][{first_row}] at {}, {} [{TILE}][{second_row}] at {}, {}dS [{rows}][{PROBABILITY_ROW}] at {}.
var<workgroup> tiles: array<f16, {}>;
// One 16 x {scratch_row} f32 tile per subgroup (scores, then their gradients; the epilogue).
var<workgroup> scratch: array<f32, {}>;",
        block_names.0,
        block_names.1,
        layout.block_second,
        tile_names.0,
        layout.tile_first,
        tile_names.1,
        layout.tile_second,
        if key_value {
            format!("P [{rows}][{PROBABILITY_ROW}] at {}, ", layout.probability)
        } else {
            String::new()
        },
        layout.gradient,
        layout.total,
        key.subgroups * 16 * scratch_row,
    );
    if key_value {
        let _ = writeln!(
            w,
            "// The tile's (log-sum-exp, D) per query row.\nvar<workgroup> statistics_tile: array<vec2<f32>, {TILE}>;"
        );
    } else if key.key_bias {
        let _ = writeln!(w, "var<workgroup> bias_tile: array<f32, {TILE}>;");
    }
    w.push_str(spell.prelude());
    let builtins = if key.emulated {
        ""
    } else {
        ",\n        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32"
    };
    let ids = if key.emulated {
        "    let subgroup = local / 32u;\n    let lane = local % 32u;\n    emulated_lane = lane;\n"
    } else {
        ""
    };
    // The owned side's and the walked side's lengths.
    let (own_length, walked_length) = if key_value {
        ("key_length", "length")
    } else {
        ("length", "key_length")
    };
    let _ = writeln!(
        w,
        "@compute @workgroup_size({threads})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32{builtins}) {{
{ids}    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * {rows}u;
    // This lane's row (block-relative and global; a key row in the key-value kernel, a query
    // row in the query kernel) and which 16 columns of a tile's scores it takes.
    let sub_row = subgroup * 16u;
    let my_row = sub_row + lane / 2u;
    let row = row0 + my_row;
    let lane_half = lane % 2u;
    let columns = lane_half * 16u;
    // The lane's 16 columns of a tile in an order rotated by its row, so that the 32 lanes'
    // reads of the scratch fall on 32 banks (not 4 lanes a bank) and their writes of P and dS
    // on 16.
{rotated}
    let scratch_at = subgroup * {sub_scratch}u;
    let lane_scratch = scratch_at + (lane / 2u) * {scratch_row}u;
    let bias_base = (head / params.bias_group) * key_length;
    {{
        let block_base = head * {own_length};",
        sub_scratch = 16 * scratch_row,
        rotated = rotated_columns("k", "columns + ", TILE / 2),
    );
    let (block_first, block_second, tile_first, tile_second) = if key_value {
        ("key_data", "value_data", "query_data", "grad_data")
    } else {
        ("query_data", "grad_data", "key_data", "value_data")
    };
    let block_operands = [
        Staged {
            source: block_first,
            width: d,
            rows,
            first: "row0",
            base: "block_base",
            limit: own_length,
            region: 0,
            row_length: first_row,
        },
        Staged {
            source: block_second,
            width: dv,
            rows,
            first: "row0",
            base: "block_base",
            limit: own_length,
            region: layout.block_second,
            row_length: second_row,
        },
    ];
    // A split block stages its second operand once the first one's fragments are loaded.
    let staged_first = if layout.split_block { 1 } else { 2 };
    stage(&mut w, "        ", &block_operands[..staged_first], threads);
    w.push_str("    }\n");
    // The lane's row constants and the persistent accumulators.
    if key_value {
        if key.key_bias {
            let _ = writeln!(
                w,
                "    var row_bias = {LOWEST};
    if (row < key_length) {{
        row_bias = key_bias_data[bias_base + row];
    }}
    let row_visible = row < key_length && row_bias > {MASKED_BELOW};"
            );
        } else {
            let _ = writeln!(w, "    let row_visible = row < key_length;");
        }
    } else {
        let _ = writeln!(
            w,
            "    let row_statistics = statistics_data[head * length + min(row, length - 1u)];"
        );
    }
    let outputs: Vec<(String, u32)> = if key_value {
        (0..d / 16)
            .map(|j| (format!("dk{j}"), j))
            .chain((0..dv / 16).map(|j| (format!("dv{j}"), j)))
            .collect()
    } else {
        (0..d / 16).map(|j| (format!("dq{j}"), j)).collect()
    };
    for (name, _) in &outputs {
        let _ = writeln!(w, "    var {name} = {}();", spell.accumulator());
    }
    let (first, end) = if key_value {
        if key.causal {
            // Query rows before the block's first key see none of its keys.
            (format!("(row0 / {TILE}u) * {TILE}u"), "length".to_string())
        } else {
            ("0u".to_string(), "length".to_string())
        }
    } else if key.causal {
        ("0u".to_string(), format!("min(key_length, row0 + {rows}u)"))
    } else {
        ("0u".to_string(), "key_length".to_string())
    };
    let tile_operands = [
        Staged {
            source: tile_first,
            width: d,
            rows: TILE,
            first: "start",
            base: "tile_base",
            limit: walked_length,
            region: layout.tile_first,
            row_length: first_row,
        },
        Staged {
            source: tile_second,
            width: dv,
            rows: TILE,
            first: "start",
            base: "tile_base",
            limit: walked_length,
            region: layout.tile_second,
            row_length: second_row,
        },
    ];
    let tile_items = staged_items(&tile_operands, threads);
    // Where an invocation's share of a tile fits its registers, the next tile's loads are
    // issued before the current tile is multiplied out (in flight during the products) and
    // stored after the next barrier.
    let prefetch = tile_items.len() <= LOADS_IN_FLIGHT;
    if block_in_registers(key) {
        // The block's row-major fragments, once: the walk reuses their workgroup memory.
        w.push_str("    workgroupBarrier();\n");
        let block = [
            ("first", 0, d, first_row),
            ("second", layout.block_second, dv, second_row),
        ];
        for (index, (name, region, width, row_length)) in block.into_iter().enumerate() {
            if index == 1 && layout.split_block {
                let _ = writeln!(
                    w,
                    "    workgroupBarrier();\n    {{\n        let block_base = head * {own_length};"
                );
                stage(&mut w, "        ", &block_operands[1..], threads);
                w.push_str("    }\n    workgroupBarrier();\n");
            }
            for k in 0..width / 16 {
                block_fragment(&mut w, &spell, "    ", (name, k), region, row_length);
            }
            if index == 0 && fold && folds_from_registers(d, key.subgroups) {
                emit_fold_key_fragments(&mut w, &spell, d, key.subgroups, first_row);
            }
        }
    }
    let _ = writeln!(
        w,
        "    let tile_base = head * {walked_length};
    let end = {end};"
    );
    let _ = writeln!(w, "    let first_start = {first};");
    let fold_regions = FoldRegions {
        gradient: layout.gradient,
        gradient_rows: rows,
        probability_row: PROBABILITY_ROW,
        key_row: first_row,
        scratch_row,
    };
    if fold {
        emit_fold_prologue(&mut w, &fold_regions, threads);
    }
    // The key-value kernel's tile statistics travel with the prefetched loads where those
    // apply (a load issued at the staging itself held the whole workgroup at its barrier
    // for the load's latency, every tile).
    let prefetch_statistics = prefetch && key_value;
    if prefetch {
        emit_loads(&mut w, "    ", &tile_items, 0, "first_start", true);
    }
    if prefetch_statistics {
        emit_statistics_load(&mut w, "    ", "first_start", true);
    }
    let _ = writeln!(
        w,
        "    for (var start = first_start; start < end; start += {TILE}u) {{
        workgroupBarrier();"
    );
    if fold {
        emit_fold_previous(&mut w, &spell, d, key.subgroups, &fold_regions);
    }
    if prefetch_statistics {
        let _ = writeln!(
            w,
            "        if (local < {TILE}u) {{
            statistics_tile[local] = next_statistics;
        }}"
        );
    } else if key_value {
        let _ = writeln!(
            w,
            "        if (local < {TILE}u) {{
            var statistics = vec2<f32>(0.0);
            if (start + local < length) {{
                statistics = statistics_data[tile_base + start + local];
            }}
            statistics_tile[local] = statistics;
        }}"
        );
    } else if key.key_bias {
        let _ = writeln!(
            w,
            "        if (local < {TILE}u) {{
            var bias = {LOWEST};
            if (start + local < key_length) {{
                bias = key_bias_data[bias_base + start + local];
            }}
            bias_tile[local] = bias;
        }}"
        );
    }
    if prefetch {
        emit_stores(&mut w, "        ", &tile_items, 0, "");
    } else {
        stage(&mut w, "        ", &tile_operands, threads);
    }
    w.push_str("        workgroupBarrier();\n        {\n");
    if prefetch {
        emit_loads(
            &mut w,
            "            ",
            &tile_items,
            0,
            &format!("(start + {TILE}u)"),
            false,
        );
    }
    if prefetch_statistics {
        emit_statistics_load(&mut w, "            ", &format!("start + {TILE}u"), false);
    }
    // 1. Scores (s) and their gradients (g), 16 x 32 per subgroup: the block's row-major
    // fragments times the tile's read column-major.
    let acc = spell.accumulator();
    let _ = writeln!(
        w,
        "            var s0 = {acc}();\n            var s1 = {acc}();\n            var g0 = {acc}();\n            var g1 = {acc}();"
    );
    // (accumulators, fragment names, block region, tile region, width, row length)
    let products = [
        ("s", "first", 0, layout.tile_first, d, first_row),
        (
            "g",
            "second",
            layout.block_second,
            layout.tile_second,
            dv,
            second_row,
        ),
    ];
    for (target, name, block_region, tile_region, width, row_length) in products {
        for k in 0..width / 16 {
            if !block_in_registers(key) {
                let indent = "            ";
                block_fragment(&mut w, &spell, indent, (name, k), block_region, row_length);
            }
            for n in 0..TILE / 16 {
                let _ = writeln!(
                    w,
                    "            let {name}_tile_at{k}_{n} = {}u;
            let {name}_tile{k}_{n} = {};
            {target}{n} = {};",
                    tile_region + n * 16 * row_length + k * 16,
                    spell.load_columns('B', &format!("{name}_tile_at{k}_{n}"), row_length),
                    spell.multiply_add(
                        &format!("{name}{k}"),
                        &format!("{name}_tile{k}_{n}"),
                        &format!("{target}{n}")
                    )
                );
            }
        }
    }
    // 2. Probabilities from the scores, then score gradients, through the scratch.
    let _ = writeln!(
        w,
        "            let s_at0 = scratch_at;\n            {}\n            let s_at1 = scratch_at + 16u;\n            {}\n            {}",
        spell.store("s0", "s_at0", scratch_row),
        spell.store("s1", "s_at1", scratch_row),
        spell.local_barrier(),
    );
    let scratch_at = |c: &str| format!("scratch[lane_scratch + {c}]");
    for v in 0..4 {
        let _ = writeln!(
            w,
            "            let index{v} = vec4<u32>(start) + vec4<u32>(k{}, k{}, k{}, k{});",
            4 * v,
            4 * v + 1,
            4 * v + 2,
            4 * v + 3
        );
        let (score, visible, logsumexp) = if key_value {
            let causal = if key.causal {
                format!(" & (vec4<u32>(row) <= index{v})")
            } else {
                String::new()
            };
            let bias = if key.key_bias { " + row_bias" } else { "" };
            (
                format!("{} * params.scale{bias}", gather(&scratch_at, v)),
                format!("(index{v} < vec4<u32>(length)) & vec4<bool>(row_visible){causal}"),
                gather(&|c| format!("statistics_tile[{c}].x"), v),
            )
        } else {
            let causal = if key.causal {
                format!(" & (index{v} <= vec4<u32>(row))")
            } else {
                String::new()
            };
            let (bias, bias_visible) = if key.key_bias {
                let _ = writeln!(
                    w,
                    "            let bias{v} = {};",
                    gather(&|c| format!("bias_tile[{c}]"), v)
                );
                (
                    format!(" + bias{v}"),
                    format!(" & (bias{v} > vec4<f32>({MASKED_BELOW}))"),
                )
            } else {
                (String::new(), String::new())
            };
            (
                format!("{} * params.scale{bias}", gather(&scratch_at, v)),
                format!("(index{v} < vec4<u32>(key_length)){causal}{bias_visible}"),
                "vec4<f32>(row_statistics.x)".to_string(),
            )
        };
        let _ = writeln!(
            w,
            "            let p{v} = select(vec4<f32>(0.0), exp({score} - {logsumexp}), {visible});"
        );
        if key_value {
            let _ = writeln!(
                w,
                "            let p_at{v} = {}u + my_row * {PROBABILITY_ROW}u;
            tiles[p_at{v} + k{}] = f16(p{v}.x);
            tiles[p_at{v} + k{}] = f16(p{v}.y);
            tiles[p_at{v} + k{}] = f16(p{v}.z);
            tiles[p_at{v} + k{}] = f16(p{v}.w);",
                layout.probability,
                4 * v,
                4 * v + 1,
                4 * v + 2,
                4 * v + 3
            );
        }
    }
    let _ = writeln!(
        w,
        "            {barrier}\n            {}\n            {}\n            {barrier}",
        spell.store("g0", "s_at0", scratch_row),
        spell.store("g1", "s_at1", scratch_row),
        barrier = spell.local_barrier(),
    );
    for v in 0..4 {
        let delta = if key_value {
            gather(&|c| format!("statistics_tile[{c}].y"), v)
        } else {
            "vec4<f32>(row_statistics.y)".to_string()
        };
        let _ = writeln!(
            w,
            "            let ds{v} = p{v} * ({} - {delta});
            let ds_at{v} = {}u + my_row * {PROBABILITY_ROW}u;
            tiles[ds_at{v} + k{}] = f16(ds{v}.x);
            tiles[ds_at{v} + k{}] = f16(ds{v}.y);
            tiles[ds_at{v} + k{}] = f16(ds{v}.z);
            tiles[ds_at{v} + k{}] = f16(ds{v}.w);",
            gather(&scratch_at, v),
            layout.gradient,
            4 * v,
            4 * v + 1,
            4 * v + 2,
            4 * v + 3
        );
    }
    let _ = writeln!(w, "        }}\n        {}", spell.local_barrier());
    // 3. The products into the persistent accumulators: A the subgroup's P or dS rows, B the
    // staged tile row-major.
    let mut sums = vec![("ds", layout.gradient, "dk", layout.tile_first, d, first_row)];
    if key_value {
        sums.insert(
            0,
            (
                "pt",
                layout.probability,
                "dv",
                layout.tile_second,
                dv,
                second_row,
            ),
        );
    } else {
        sums[0].2 = "dq";
    }
    for (name, region, target, tile_region, width, row_length) in sums {
        let _ = writeln!(w, "        {{");
        for c in 0..TILE / 16 {
            let _ = writeln!(
                w,
                "            let {name}_at{c} = {region}u + sub_row * {PROBABILITY_ROW}u + {}u;
            let {name}{c} = {};",
                c * 16,
                spell.load_rows('A', &format!("{name}_at{c}"), PROBABILITY_ROW)
            );
        }
        for j in 0..width / 16 {
            for c in 0..TILE / 16 {
                let _ = writeln!(
                    w,
                    "            let t_at{c}_{j} = {}u;
            let t{c}_{j} = {};
            {target}{j} = {};",
                    tile_region + c * 16 * row_length + j * 16,
                    spell.load_rows('B', &format!("t_at{c}_{j}"), row_length),
                    spell.multiply_add(
                        &format!("{name}{c}"),
                        &format!("t{c}_{j}"),
                        &format!("{target}{j}")
                    )
                );
            }
        }
        let _ = writeln!(w, "        }}");
    }
    w.push_str("    }\n");
    if fold {
        emit_fold_last(&mut w, &spell, d, key.subgroups, &fold_regions);
    }
    epilogue(&mut w, &spell, key, &outputs);
    w.push_str("}\n");
    w
}

/// The key-value kernel's load of the `(lse, D)` pairs of the query tile starting at `first`
/// (an expression) into `next_statistics` (declared here when `declare`): one pair for each
/// of the first [`TILE`] invocations, zeros past the length; stored at the tile's staging.
fn emit_statistics_load(w: &mut String, indent: &str, first: &str, declare: bool) {
    let declaration = if declare { "var " } else { "" };
    let _ = writeln!(
        w,
        "{indent}{declaration}next_statistics = vec2<f32>(0.0);
{indent}if (local < {TILE}u && {first} + local < length) {{
{indent}    next_statistics = statistics_data[tile_base + {first} + local];
{indent}}}"
    );
}

/// Write the accumulators `outputs` (name, 16-column group) as f16 through the scratch, two
/// at a time: dK and dQ times `scale`, dV after dK in the key-value output.
fn epilogue(w: &mut String, spell: &Spell, key: &CoopBackward, outputs: &[(String, u32)]) {
    let (d4, dv4) = (key.head_dim / 4, key.value_dim / 4);
    let scratch_row = layout(key).scratch_row;
    let (limit, target) = match key.pass {
        CoopBackwardPass::KeyValue => ("key_length", "key_value_grad_data"),
        CoopBackwardPass::Query => ("length", "query_grad_data"),
    };
    let _ = writeln!(w, "    let own = head * {limit} + row;");
    if key.pass == CoopBackwardPass::KeyValue {
        let _ = writeln!(
            w,
            "    let value_start = params.batch_heads * key_length * {d4}u;"
        );
    }
    for round in outputs.chunks(2) {
        w.push_str("    workgroupBarrier();\n    {\n");
        for (slot, (name, _)) in round.iter().enumerate() {
            let _ = writeln!(
                w,
                "        let out_at{slot} = scratch_at + {}u;\n        {}",
                slot * 16,
                spell.store(name, &format!("out_at{slot}"), scratch_row)
            );
        }
        w.push_str("    }\n    workgroupBarrier();\n");
        let _ = writeln!(w, "    if (row < {limit}) {{");
        for (slot, (name, j)) in round.iter().enumerate() {
            let (at, factor) = if name.starts_with("dv") {
                (format!("value_start + own * {dv4}u"), "")
            } else {
                (format!("own * {d4}u"), " * params.scale")
            };
            let _ = writeln!(
                w,
                "        {{
            let at = lane_scratch + {}u + lane_half * 8u;
            let out = {at} + {}u + lane_half * 2u;
            {target}[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]){factor});
            {target}[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]){factor});
        }}",
                slot * 16,
                j * 4
            );
        }
        w.push_str("    }\n");
    }
}
