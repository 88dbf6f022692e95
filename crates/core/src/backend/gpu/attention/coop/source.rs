//! The WGSL generator of the fused attention forward on cooperative matrices (tensor cores);
//! `attention/coop.rs` holds its key, the selection and the launcher. Same math, bindings,
//! parameters and outputs as the scalar forward (`attention/source.rs`): `o` (f16) and the f32
//! row log-sum-exp, so the backward kernels take either forward's results.
//!
//! Tile design: one workgroup of `G` subgroups owns `16 G` query rows of one batch-head;
//! subgroup `s` owns rows `16 s .. 16 s + 16`. `G` is eight (256 invocations, 128 rows: every
//! staged key tile serves twice the rows, 146 µs against 156 on the H200 at d = 64) where the
//! head and value sizes are multiples of 64 and the workgroup memory fits, else four
//! (`CoopForward::subgroups`, picked by the launcher). The block's
//! queries are staged as f16 in workgroup memory (whole, or 32 columns at a time where the
//! walk's space is smaller: `query_parts`), and each subgroup's query fragments are loaded
//! into registers before the walk. Keys and values are walked in tiles of 16 rows (32 where
//! the invocations cannot share 16 rows' loads evenly: `key_tile` in
//! `attention/coop/layout.rs`, which says why 16), staged as f16 (rows padded by 8 halves:
//! 16-byte aligned rows whose fragment loads fall on different banks) by straight-line code
//! that issues up to eight 16-byte loads per invocation before storing them
//! (`attention/coop/staging.rs`); where an invocation's share of a tile fits those eight
//! registers (d, dv <= 64), the next tile's loads are issued right after a tile is staged and
//! stay in flight while it is multiplied out. Per key tile:
//! 1. `S = Q Kᵀ`: per 16 keys one f32 accumulator, `d / 16` multiply-adds of a query fragment
//!    (row-major) by a key fragment read column-major (`coopLoad`: Kᵀ without a transposed
//!    copy); stored (`coopStoreT`) into the subgroup's 16 x tile f32 scratch (rows padded by
//!    4 floats).
//! 2. Online softmax in unrolled scalar code: lane `l` owns query row `l / 2` of its subgroup
//!    and half of the tile's columns (`(l % 2) * tile / 2 ..`), walked in an order rotated by
//!    its row (`rotated_columns`: in plain column order several lanes would read one bank at
//!    each step; rotated, the 32 lanes read 32 banks). Each lane reads its half into
//!    registers and takes the masked max in four independent chains; the pair exchanges its
//!    two maxima with one `subgroupShuffleXor` (143.6 → 132.1 µs on the H200 at 8 x 12 x 512
//!    x 64, against both lanes reading the whole row; the emulation, without real subgroups
//!    of 32, still reads its partner's half). Each lane exponentiates its half, writes `p` as f16 into the P
//!    tile and keeps a partial row sum; the pair's sums are added once at the end.
//! 3. `O += P V`: fresh accumulators per 16 value columns, stored into the scratch (in rounds
//!    of tile / 16), and added into O, which lives in registers in the
//!    accumulator layout (lane `l`: row `l / 2`, columns `(l % 2) * 8 .. + 8` of every 16
//!    columns, two `vec4<f32>` per 16 columns), after O was scaled by `exp(m_old - m_new)` —
//!    the lane's own row, so the rescale is one multiply per value.
//!
//! Where the next tile's loads fit the registers, K and V may alternate between two buffers
//! (`double_buffered`; the launcher takes it only where the kernel is no larger, which with
//! 16-key tiles is nowhere): each tile
//! issues the next tile's loads, is multiplied out, stores the next tile into the other
//! buffer and takes one workgroup barrier, where one buffer takes two (H200, 8 x 12 x 512 x
//! 64, 32-key tiles, uniform mode: 109.4–109.6 → 107.4–107.7 µs).
//!
//! Only the key tile's staging takes workgroup barriers; the scratch and P are the subgroup's
//! own, so on tensor cores their uses are ordered by subgroup barriers (`Spell::local_barrier`;
//! H200, uniform mode: 108.6 → 104.4 µs).
//!
//! That is `ForwardMode::Exact`. The launcher runs `ForwardMode::Uniform` instead, which keeps
//! O in tensor-core accumulators (`O += P V` straight into them, rescaled by one scalar a
//! subgroup) and flags the workgroups whose rows drift too far apart for that, then
//! `ForwardMode::Redo`: this exact kernel for the flagged workgroups only
//! (`attention/coop/uniform.rs` says how and why).
//!
//! Masks: keys past the end, causal (key column `<=` query row; tiles wholly past the block's
//! last row skipped) and the key-padding bias (added to the scaled score; biases `<= -1e38`
//! mark the key invisible) exactly as the scalar kernel; probabilities of masked keys are
//! selected to 0, so a row without visible keys writes zeros and a log-sum-exp of 0.
//!
//! Workgroup memory (halves, `attention/coop/layout.rs`): K `tile x (d + 8)` and V
//! `tile x (dv + 8)`, then P `16 G x (tile + 8)`, all of which Q (or a part of it) shares
//! before the walk (its own region in the emulation), plus `16 G x (tile + 4)` f32 of
//! scratch: with 16-key tiles and eight subgroups 20.6 KiB at d = dv = 64, 24.5 KiB at 128.
//! Every operand lives in one f16 array `tiles` so that the emulation (below) reads all
//! fragments the same way.
//!
//! What made it fast (H200, 8 x 12 x 512 x 64 f16, forward alone): the looped staging (a load,
//! four stores, the next load) and the rolled softmax left each key tile waiting on memory,
//! and 32 KiB a workgroup let the driver run one workgroup per multiprocessor (the time
//! doubled from 96 to 192 workgroups); Q in K's and V's space, the batched staging and the
//! unrolled softmax took it from 614–761 µs to 166.
//!
//! `emulated` keys spell the cooperative operations in plain WGSL (as `matmul/coop.rs` does):
//! a fragment is `vec3(start, row step, column step)` into `tiles`, an accumulator the 8
//! values lane `l` holds (row `l / 2`, columns `(l % 2) * 8 ..`), subgroup and lane are
//! `local / 32` and `local % 32`. Slow, but it runs the staging, masking, softmax, rescaling
//! and epilogue on any f16 device, so tests check them without tensor cores.
//!
//! naga 30: `coopStoreT` arguments and load strides are `let` bindings or literals (see
//! `matmul/coop.rs`).

use std::fmt::Write;

use crate::backend::gpu::attention::coop::layout::{
    key_tile, prefetches, query_parts, regions, scratch_length, scratch_row, Regions,
};
use crate::backend::gpu::attention::coop::spell::{rotated_columns, Spell};
use crate::backend::gpu::attention::coop::staging::{
    emit_loads, emit_stores, stage, stage_columns, staged_items, Staged,
};
use crate::backend::gpu::runtime::params::KernelParams;

/// The finite "minus infinity" the running max starts from.
pub(crate) const LOWEST: &str = "-3.0e38";

/// Key biases at or below this mark a masked key (as in `attention/source.rs`).
pub(crate) const MASKED_BELOW: &str = "-1.0e38";

/// One instantiation of the cooperative forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoopForward {
    /// Query/key width: a multiple of 16 up to 128.
    pub(crate) head_dim: u32,
    /// Value width: a multiple of 16 up to 128.
    pub(crate) value_dim: u32,
    pub(crate) causal: bool,
    /// A key-padding bias is bound.
    pub(crate) key_bias: bool,
    /// Subgroups per workgroup, 16 query rows each: 8 (each staged key tile serves 128 rows)
    /// where the widths are multiples of 64 and the workgroup memory fits, else 4 (the
    /// launcher picks).
    pub(crate) subgroups: u32,
    /// Plain-WGSL emulation of the cooperative operations.
    pub(crate) emulated: bool,
    /// K and V staged in two alternating buffers (the next tile stored while the current one
    /// is read): one workgroup barrier a key tile instead of two. Only where the next tile's
    /// loads fit the registers (`LOADS_IN_FLIGHT`); the launcher takes it where it costs no
    /// workgroup memory (`attention/coop.rs`).
    pub(crate) double_buffered: bool,
    /// How rows are rescaled: exactly, uniformly (with a redo flag), or the exact redo of
    /// flagged workgroups.
    pub(crate) mode: ForwardMode,
}

/// Which kernel of the forward: the launcher runs `Uniform`, then `Redo` over the same
/// bindings (`attention/coop/uniform.rs`); `Exact` alone is the same result by the per-row
/// rescaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ForwardMode {
    /// Per-row rescaling of an output held in registers.
    Exact,
    /// The output in tensor-core accumulators rescaled by one scalar a subgroup; writes a
    /// redo flag per workgroup (`flag_data`).
    Uniform,
    /// `Exact` for the workgroups whose flag `Uniform` raised; the others leave at once.
    Redo,
}

impl CoopForward {
    /// Query rows a workgroup owns: 16 per subgroup.
    pub(crate) fn block_rows(&self) -> u32 {
        16 * self.subgroups
    }

    /// Invocations per workgroup.
    pub(crate) fn threads(&self) -> u32 {
        32 * self.subgroups
    }
}

/// The complete WGSL of `key` (after `enable f16;`).
pub(crate) fn forward_source(key: &CoopForward) -> String {
    let tile = key_tile(key);
    let scratch_floats = scratch_row(key);
    let spell = Spell {
        emulated: key.emulated,
    };
    let (d, dv) = (key.head_dim, key.value_dim);
    let regions = regions(key);
    let (block_rows, threads) = (key.block_rows(), key.threads());
    let Regions {
        query_row,
        key_row,
        value_row,
        probability_row,
        ..
    } = regions;
    let mut w = String::new();
    if !key.emulated {
        w.push_str("enable wgpu_cooperative_matrix;\n");
    }
    w.push_str(crate::backend::gpu::attention::AttentionParams::WGSL);
    let mut names = vec![
        ("query_data", "vec4<f16>", false),
        ("key_data", "vec4<f16>", false),
        ("value_data", "vec4<f16>", false),
    ];
    if key.key_bias {
        names.push(("key_bias_data", "f32", false));
    }
    names.extend([
        ("output_data", "vec4<f16>", true),
        ("logsumexp_data", "f32", true),
    ]);
    match key.mode {
        ForwardMode::Exact => {}
        ForwardMode::Uniform => names.push(("flag_data", "atomic<u32>", true)),
        ForwardMode::Redo => names.push(("flag_data", "u32", false)),
    }
    for (slot, (name, element, writable)) in names.iter().enumerate() {
        let access = if *writable { "read_write" } else { "read" };
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, {access}> {name}: array<{element}>;",
            slot + 1
        );
    }
    let _ = writeln!(
        w,
        "// Q [{block_rows}][{query_row}] at 0 ({parts} column parts), K [{tile}][{key_row}] at {k}, V [{tile}][{value_row}] at {v}, P [{block_rows}][{probability_row}] at {p}.
var<workgroup> tiles: array<f16, {total}>;
// One 16 x {scratch_floats} f32 tile per subgroup (scores, then P V).
var<workgroup> scratch: array<f32, {scratch}>;",
        parts = query_parts(key),
        k = regions.key,
        v = regions.value,
        p = regions.probability,
        total = regions.total,
        scratch = scratch_length(key),
    );
    if key.key_bias {
        let _ = writeln!(
            w,
            "var<workgroup> bias_tile: array<f32, {}>;",
            tile * if regions.buffer > 0 { 2 } else { 1 }
        );
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
    let key_end = if key.causal {
        format!("min(key_length, row0 + {block_rows}u)")
    } else {
        "key_length".into()
    };
    let _ = writeln!(
        w,
        "@compute @workgroup_size({threads})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32{builtins}) {{
{ids}    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * {block_rows}u;
    // This lane's query row (block-relative and global), and which half of a key tile it
    // exponentiates and which 8 of every 16 value columns it accumulates.
    let sub_row = subgroup * 16u;
    let my_row = sub_row + lane / 2u;
    let row = row0 + my_row;
    let lane_half = lane % 2u;
    let scratch_at = subgroup * {sub_scratch}u;
    let lane_scratch = scratch_at + (lane / 2u) * {scratch_floats}u;
    let query_base = head * length;",
        sub_scratch = 16 * scratch_floats,
    );
    if key.mode == ForwardMode::Redo {
        crate::backend::gpu::attention::coop::uniform::redo_gate(&mut w, key);
    }
    // The block's queries into registers: staged whole, or (16-key tiles on tensor cores)
    // 32 columns at a time through the walk's space, two fragments a part.
    let parts = query_parts(key);
    let part_width = d / parts;
    let query = Staged {
        source: "query_data",
        width: part_width,
        rows: block_rows,
        first: "row0",
        base: "query_base",
        limit: "length",
        region: 0,
        row_length: query_row,
    };
    for part in 0..parts {
        if parts == 1 {
            stage(&mut w, "    ", std::slice::from_ref(&query), threads);
        } else {
            if part > 0 {
                let _ = writeln!(w, "    workgroupBarrier();");
            }
            stage_columns(&mut w, &query, d, part * part_width, threads);
        }
        let _ = writeln!(w, "    workgroupBarrier();");
        let fragments = part_width / 16;
        for k in part * fragments..(part + 1) * fragments {
            let _ = writeln!(
                w,
                "    let q_at{k} = sub_row * {query_row}u + {}u;",
                (k % fragments) * 16
            );
            let _ = writeln!(
                w,
                "    let q{k} = {};",
                spell.load_rows('A', &format!("q_at{k}"), query_row)
            );
        }
    }
    let uniform = key.mode == ForwardMode::Uniform;
    if uniform {
        crate::backend::gpu::attention::coop::uniform::declare(&mut w, key, &spell);
    } else {
        for j in 0..dv / 16 {
            let _ = writeln!(
                w,
                "    var o{j}_0 = vec4<f32>(0.0);\n    var o{j}_1 = vec4<f32>(0.0);"
            );
        }
    }
    // The lane reads (and writes) the columns of its half of a key tile in an order rotated
    // by its row, so that the 32 lanes' reads of the scratch fall on 32 banks (not 4 lanes a
    // bank) and their writes of P on 16.
    let half_tile = tile / 2;
    w.push_str(&rotated_columns("c", "", half_tile));
    let tile_operands = [
        Staged {
            source: "key_data",
            width: d,
            rows: tile,
            first: "start",
            base: "base",
            limit: "key_length",
            region: regions.key,
            row_length: key_row,
        },
        Staged {
            source: "value_data",
            width: dv,
            rows: tile,
            first: "start",
            base: "base",
            limit: "key_length",
            region: regions.value,
            row_length: value_row,
        },
    ];
    let tile_items = staged_items(&tile_operands, threads);
    // Where an invocation's share of a key tile fits its registers, the next tile's loads are
    // issued once the current tile is staged (in flight during its products and softmax) and
    // stored at the next tile's staging.
    let prefetch = prefetches(key);
    let double = regions.buffer > 0;
    // On tensor cores the pair of lanes of a row exchanges its half maxima with one shuffle;
    // the emulation (no real subgroups of 32) reads the partner's half of the row instead.
    let shuffle = !key.emulated;
    let _ = writeln!(
        w,
        "    var running_max = {LOWEST};
    var running_sum = 0.0;
    let base = head * key_length;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = {key_end};"
    );
    if prefetch {
        emit_loads(&mut w, "    ", &tile_items, 0, "0u", true);
    }
    // The key bias of the tile starting at `first`, into `bias_tile` at `at`.
    let bias_load = |first: &str| {
        format!(
            "var bias = {LOWEST};
            if ({first} + local < key_length) {{
                bias = key_bias_data[bias_base + {first} + local];
            }}"
        )
    };
    if double {
        // The first tile into buffer 0 (once every subgroup has its Q fragments: Q shares the
        // space); each tile then issues the next tile's loads, is multiplied out, and stores
        // the next tile into the other buffer before the one barrier of the tile.
        w.push_str("    workgroupBarrier();\n");
        emit_stores(&mut w, "    ", &tile_items, 0, "");
        if key.key_bias {
            let _ = writeln!(
                w,
                "    if (local < {tile}u) {{\n        {}\n        bias_tile[local] = bias;\n    }}",
                bias_load("0u")
            );
        }
        let _ = writeln!(
            w,
            "    workgroupBarrier();
    for (var start = 0u; start < key_end; start += {tile}u) {{
        let parity = (start / {tile}u) % 2u;
        let kv = parity * {buffer}u;
        let next_kv = {buffer}u - kv;
        let bias_at = parity * {tile}u;",
            buffer = regions.buffer,
        );
        emit_loads(
            &mut w,
            "        ",
            &tile_items,
            0,
            &format!("(start + {tile}u)"),
            false,
        );
        if key.key_bias {
            let _ = writeln!(
                w,
                "        var next_bias = {LOWEST};
        if (local < {tile}u && start + {tile}u + local < key_length) {{
            next_bias = key_bias_data[bias_base + start + {tile}u + local];
        }}"
            );
        }
    } else {
        let _ = writeln!(
            w,
            "    for (var start = 0u; start < key_end; start += {tile}u) {{
        workgroupBarrier();"
        );
        if prefetch {
            emit_stores(&mut w, "        ", &tile_items, 0, "");
        } else {
            stage(&mut w, "        ", &tile_operands, threads);
        }
        if key.key_bias {
            let _ = writeln!(
                w,
                "        if (local < {tile}u) {{
            {}
            bias_tile[local] = bias;
        }}",
                bias_load("start")
            );
        }
        w.push_str("        workgroupBarrier();\n");
        if prefetch {
            emit_loads(
                &mut w,
                "        ",
                &tile_items,
                0,
                &format!("(start + {tile}u)"),
                false,
            );
        }
    }
    // S = Q Kᵀ per 16 keys.
    for n in 0..tile / 16 {
        let _ = writeln!(
            w,
            "        {{\n            var s = {}();",
            spell.accumulator()
        );
        for k in 0..d / 16 {
            let start = format!(
                "{}{}u + {}u",
                regions.moved,
                regions.key + n * 16 * key_row,
                k * 16
            );
            let _ = writeln!(
                w,
                "            let k_at{k} = {start};\n            let k{k} = {};\n            s = {};",
                spell.load_columns('B', &format!("k_at{k}"), key_row),
                spell.multiply_add(&format!("q{k}"), &format!("k{k}"), "s")
            );
        }
        let _ = writeln!(
            w,
            "            let s_at = scratch_at + {}u;\n            {}\n        }}",
            n * 16,
            spell.store("s", "s_at", scratch_floats)
        );
    }
    let _ = writeln!(w, "        {}", spell.local_barrier());
    // Online softmax, unrolled: the lane's own half of its row (`own`) and its partner's
    // half (`other`) read into registers, the max over both in four independent chains,
    // then the lane's 16 probabilities.
    let bias_moved = if double { "bias_at + " } else { "" };
    let score = |half: &str, h: u32| -> (String, String) {
        let column = format!("{half} + c{h}");
        let (bias_add, bias_valid) = if key.key_bias {
            (
                format!(" + bias_tile[{bias_moved}{column}]"),
                format!(" && bias_tile[{bias_moved}{column}] > {MASKED_BELOW}"),
            )
        } else {
            (String::new(), String::new())
        };
        let key_index = format!("start + {column}");
        let causal = if key.causal {
            format!(" && ({key_index}) <= row")
        } else {
            String::new()
        };
        (
            format!("scratch[lane_scratch + {column}] * params.scale{bias_add}"),
            format!("{key_index} < key_length{causal}{bias_valid}"),
        )
    };
    let _ = writeln!(
        w,
        "        let own = lane_half * {half_tile}u;
        let other = {half_tile}u - own;
        var max0 = {LOWEST};
        var max1 = {LOWEST};
        var max2 = {LOWEST};
        var max3 = {LOWEST};"
    );
    for h in 0..half_tile {
        let (own_score, own_valid) = score("own", h);
        let (other_score, other_valid) = score("other", h);
        let chain = h % 4;
        let _ = writeln!(
            w,
            "        let s{h} = {own_score};
        let valid{h} = {own_valid};
        max{chain} = select(max{chain}, max(max{chain}, s{h}), valid{h});"
        );
        if !shuffle {
            let _ = writeln!(
                w,
                "        let t{h} = {other_score};
        max{chain} = select(max{chain}, max(max{chain}, t{h}), {other_valid});"
            );
        }
    }
    let _ = writeln!(
        w,
        "        let half_max = max(max(max0, max1), max(max2, max3));"
    );
    let _ = writeln!(
        w,
        "        let tile_max = {};",
        if shuffle {
            "max(half_max, subgroupShuffleXor(half_max, 1u))"
        } else {
            "half_max"
        }
    );
    if uniform {
        crate::backend::gpu::attention::coop::uniform::tile(&mut w, key, &regions, &spell);
    } else {
        let _ = writeln!(
            w,
            "        let new_max = max(running_max, tile_max);
        let correction = exp(running_max - new_max);
        running_max = new_max;
        let p_at = {p_region}u + my_row * {probability_row}u + own;",
            p_region = regions.probability,
        );
        for h in 0..half_tile {
            let _ = writeln!(
                w,
                "        let p{h} = select(0.0, exp(s{h} - new_max), valid{h});
        tiles[p_at + c{h}] = f16(p{h});"
            );
        }
        let sum: Vec<String> = (0..half_tile).map(|h| format!("p{h}")).collect();
        let _ = writeln!(
            w,
            "        running_sum = running_sum * correction + ({});",
            sum.join(" + ")
        );
        for j in 0..dv / 16 {
            let _ = writeln!(
                w,
                "        o{j}_0 = o{j}_0 * correction;\n        o{j}_1 = o{j}_1 * correction;"
            );
        }
        let _ = writeln!(w, "        {}", spell.local_barrier());
        // O += P V, in rounds of as many accumulators as the scratch holds (tile / 16).
        let per_round = tile / 16;
        let columns = dv / 16;
        let mut j0 = 0;
        while j0 < columns {
            let round: Vec<u32> = (j0..(j0 + per_round).min(columns)).collect();
            if j0 > 0 {
                let _ = writeln!(w, "        {}", spell.local_barrier());
            }
            let _ = writeln!(w, "        {{");
            for &j in &round {
                let _ = writeln!(w, "            var pv{j} = {}();", spell.accumulator());
            }
            for c in 0..tile / 16 {
                let _ = writeln!(
                w,
                "            let p_at{c} = {}u + sub_row * {probability_row}u + {}u;\n            let p{c} = {};",
                regions.probability,
                c * 16,
                spell.load_rows('A', &format!("p_at{c}"), probability_row)
            );
                for &j in &round {
                    let _ = writeln!(
                    w,
                    "            let v_at{c}_{j} = {}{}u;\n            let v{c}_{j} = {};\n            pv{j} = {};",
                    regions.moved,
                    regions.value + c * 16 * value_row + j * 16,
                    spell.load_rows('B', &format!("v_at{c}_{j}"), value_row),
                    spell.multiply_add(&format!("p{c}"), &format!("v{c}_{j}"), &format!("pv{j}"))
                );
                }
            }
            for (slot, &j) in round.iter().enumerate() {
                let _ = writeln!(
                    w,
                    "            let pv_at{j} = scratch_at + {}u;\n            {}",
                    slot * 16,
                    spell.store(&format!("pv{j}"), &format!("pv_at{j}"), scratch_floats)
                );
            }
            let _ = writeln!(w, "        }}\n        {}", spell.local_barrier());
            for (slot, &j) in round.iter().enumerate() {
                let _ = writeln!(
                w,
                "        {{
            let at = lane_scratch + {}u + lane_half * 8u;
            o{j}_0 = o{j}_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o{j}_1 = o{j}_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }}",
                slot * 16
            );
            }
            j0 += per_round;
        }
    }
    if double {
        // The next tile into the other buffer, then the tile's one barrier.
        emit_stores(&mut w, "        ", &tile_items, 0, "next_kv + ");
        if key.key_bias {
            let _ = writeln!(
                w,
                "        if (local < {tile}u) {{
            bias_tile[{tile}u - bias_at + local] = next_bias;
        }}"
            );
        }
        w.push_str("        workgroupBarrier();\n");
    }
    if uniform {
        crate::backend::gpu::attention::coop::uniform::epilogue(
            &mut w,
            key,
            &spell,
            scratch_floats,
        );
        return w;
    }
    // The pair's partial sums, then the epilogue.
    let dv4 = dv / 4;
    let _ = writeln!(
        w,
        "    }}
    workgroupBarrier();
    scratch[subgroup * 32u + lane] = running_sum;
    workgroupBarrier();
    let total = running_sum + scratch[subgroup * 32u + (lane ^ 1u)];
    if (row < length) {{
        let has_keys = total > 0.0;
        let inverse = select(0.0, 1.0 / total, has_keys);
        let out_at = (head * length + row) * {dv4}u + lane_half * 2u;"
    );
    for j in 0..dv / 16 {
        let _ = writeln!(
            w,
            "        output_data[out_at + {}u] = vec4<f16>(o{j}_0 * inverse);\n        output_data[out_at + {}u] = vec4<f16>(o{j}_1 * inverse);",
            j * 4,
            j * 4 + 1
        );
    }
    w.push_str(
        "        if (lane_half == 0u) {
            logsumexp_data[head * length + row] = select(0.0, running_max + log(total), has_keys);
        }
    }
}
",
    );
    w
}
