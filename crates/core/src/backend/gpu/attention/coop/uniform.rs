//! The cooperative attention forward's uniform rescaling (`ForwardMode::Uniform` of
//! `attention/coop/source.rs`), and the redo that makes it exact.
//!
//! The exact forward rescales each query row's output by `exp(m_old - m_new)` whenever the
//! row's running max grows. WGSL's cooperative matrices have no element access (a matrix can
//! only be multiplied by one scalar), so there the output lives in registers, and every key
//! tile's `P V` goes through the scratch to be added in: four accumulator stores, a barrier
//! and sixteen reads a lane per tile. The uniform mode keeps the output in tensor-core
//! accumulators instead, which needs every rescale to be one scalar for the subgroup's 16 rows:
//! - each row keeps a fixed **reference** `r`: its running max after the first tile in which it
//!   sees a key; its drift `m - r` (>= 0) grows as its max does;
//! - the subgroup keeps one **offset** `u = max(drift)` over its rows (`subgroupMax`; the
//!   emulation takes it through workgroup memory), and writes `p = 2^15 exp(s - r - u)`, at
//!   most 2^15, so that f16 holds it; when `u` grows, the accumulators and the row sums are
//!   scaled by `exp(u_old - u_new)`, one scalar;
//! - at the end `O = acc / sum` and `lse = r + u + log(sum) - 15 ln 2`.
//!
//! A row's largest `p` is `2^15 exp(drift - u)`. While every row of the subgroup drifts within
//! [`SPREAD`] (16) of the most drifted one, that is at least `2^15 e^-16 ≈ 3.7e-3`: a normal
//! f16 number, so its probabilities carry the precision they have in the exact forward (whose
//! largest is 1). A row that falls further behind (its max grew far less after its first tile
//! than another row's did) flags the workgroup; the exact forward then runs again in
//! `ForwardMode::Redo` for flagged workgroups only (the others leave after one uniform load),
//! overwriting their rows. So every row is exact; the uniform mode is only faster.
//!
//! H200 (8 x 12 x 512 x 64, f16): see `docs/PERFORMANCE.md`, 2026-12-03.

use std::fmt::Write;

use crate::backend::gpu::attention::coop::layout::{key_tile, Regions};
use crate::backend::gpu::attention::coop::source::{CoopForward, LOWEST, MASKED_BELOW};
use crate::backend::gpu::attention::coop::spell::Spell;

/// How far (in scaled-score units) a row may drift behind the subgroup's offset before its
/// workgroup is redone exactly.
pub(crate) const SPREAD: &str = "16.0";

/// The factor every probability is written with (2^15), and its log.
const P_SCALE: &str = "32768.0";
const LOG_P_SCALE: &str = "10.397208";

/// The uniform mode's declarations before the key walk: the output accumulators, the row's
/// reference, the subgroup's offset, the lane's redo flag; the workgroup's flag (in
/// `flag_data`, atomic) starts at 0, ordered before any lane raises it.
pub(crate) fn declare(w: &mut String, key: &CoopForward, spell: &Spell) {
    for j in 0..key.value_dim / 16 {
        let _ = writeln!(w, "    var oacc{j} = {}();", spell.accumulator());
    }
    let _ = writeln!(
        w,
        "    var reference = {LOWEST};
    var offset = 0.0;
    var redo = false;
    let flag_at = {flag};
    if (local == 0u) {{
        atomicStore(&flag_data[flag_at], 0u);
    }}
    storageBarrier();",
        flag = flag_index(key),
    );
}

/// The rest of a key tile once `tile_max` (the row's masked max over the tile) and the
/// lane's scores `s{h}` / `valid{h}` are known: the probabilities, the uniform rescale and
/// `O += P V` into the accumulators.
pub(crate) fn tile(w: &mut String, key: &CoopForward, regions: &Regions, spell: &Spell) {
    let tile = key_tile(key);
    let half_tile = tile / 2;
    let _ = writeln!(
        w,
        "        let new_max = max(running_max, tile_max);
        running_max = new_max;
        let has_keys = new_max > {MASKED_BELOW};
        if (reference <= {MASKED_BELOW} && has_keys) {{
            reference = new_max;
        }}
        let drift = select({LOWEST}, new_max - reference, has_keys);"
    );
    if key.emulated {
        // The subgroup's max through its own scratch rows, once every lane has read its
        // scores from them.
        let _ = writeln!(
            w,
            "        workgroupBarrier();
        if (lane_half == 0u) {{
            scratch[scratch_at + lane / 2u] = drift;
        }}
        workgroupBarrier();
        var most = scratch[scratch_at];
        for (var r = 1u; r < 16u; r++) {{
            most = max(most, scratch[scratch_at + r]);
        }}"
        );
    } else {
        w.push_str("        let most = subgroupMax(drift);\n");
    }
    let _ = writeln!(
        w,
        "        let new_offset = max(offset, most);
        let correction = exp(offset - new_offset);
        offset = new_offset;
        redo = redo || (has_keys && new_offset - drift > {SPREAD});
        let shift = reference + new_offset;
        let p_at = {}u + my_row * {}u + own;",
        regions.probability, regions.probability_row,
    );
    for h in 0..half_tile {
        let _ = writeln!(
            w,
            "        let p{h} = select(0.0, exp(s{h} - shift) * {P_SCALE}, valid{h});
        tiles[p_at + c{h}] = f16(p{h});"
        );
    }
    let sum: Vec<String> = (0..half_tile).map(|h| format!("p{h}")).collect();
    let _ = writeln!(
        w,
        "        running_sum = running_sum * correction + ({});",
        sum.join(" + ")
    );
    for j in 0..key.value_dim / 16 {
        let _ = writeln!(
            w,
            "        oacc{j} = {};",
            spell.scaled(&format!("oacc{j}"), "correction")
        );
    }
    let _ = writeln!(w, "        {}", spell.local_barrier());
    for c in 0..tile / 16 {
        let _ = writeln!(
            w,
            "        let p_at{c} = {}u + sub_row * {}u + {}u;\n        let pf{c} = {};",
            regions.probability,
            regions.probability_row,
            c * 16,
            spell.load_rows('A', &format!("p_at{c}"), regions.probability_row)
        );
    }
    for j in 0..key.value_dim / 16 {
        for c in 0..tile / 16 {
            let _ = writeln!(
                w,
                "        let v_at{c}_{j} = {}{}u;\n        let v{c}_{j} = {};\n        oacc{j} = {};",
                regions.moved,
                regions.value + c * 16 * regions.value_row + j * 16,
                spell.load_rows('B', &format!("v_at{c}_{j}"), regions.value_row),
                spell.multiply_add(&format!("pf{c}"), &format!("v{c}_{j}"), &format!("oacc{j}"))
            );
        }
    }
}

/// After the key walk: the pair's row sums, the accumulators through the scratch two at a
/// time into the f16 output, the log-sum-exp, and the workgroup's redo flag.
pub(crate) fn epilogue(w: &mut String, key: &CoopForward, spell: &Spell, scratch_row: u32) {
    let dv4 = key.value_dim / 4;
    let _ = writeln!(
        w,
        "    }}
    if (redo) {{
        atomicOr(&flag_data[flag_at], 1u);
    }}
    workgroupBarrier();
    scratch[subgroup * 32u + lane] = running_sum;
    workgroupBarrier();
    let total = running_sum + scratch[subgroup * 32u + (lane ^ 1u)];
    let has_keys = total > 0.0;
    let inverse = select(0.0, 1.0 / total, has_keys);
    let out_at = (head * length + row) * {dv4}u + lane_half * 2u;"
    );
    let columns: Vec<u32> = (0..key.value_dim / 16).collect();
    // As many accumulators a round as a scratch row holds (the key tile's width).
    for round in columns.chunks((key_tile(key) / 16) as usize) {
        w.push_str("    workgroupBarrier();\n");
        for (slot, &j) in round.iter().enumerate() {
            let _ = writeln!(
                w,
                "    {{\n        let at = scratch_at + {}u;\n        {}\n    }}",
                slot * 16,
                spell.store(&format!("oacc{j}"), "at", scratch_row)
            );
        }
        w.push_str("    workgroupBarrier();\n    if (row < length) {\n");
        for (slot, &j) in round.iter().enumerate() {
            let _ = writeln!(
                w,
                "        {{
            let at = lane_scratch + {}u + lane_half * 8u;
            output_data[out_at + {}u] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * inverse);
            output_data[out_at + {}u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * inverse);
        }}",
                slot * 16,
                j * 4,
                j * 4 + 1
            );
        }
        w.push_str("    }\n");
    }
    let _ = writeln!(
        w,
        "    if (row < length && lane_half == 0u) {{
        logsumexp_data[head * length + row] = select(0.0, reference + offset + log(total) - {LOG_P_SCALE}, has_keys);
    }}
}}"
    );
}

/// The redo's start (`ForwardMode::Redo`): a workgroup whose uniform run raised no flag
/// leaves at once (one load, made uniform for the barriers after it through the first
/// scratch value, which nothing reads before the walk writes it).
pub(crate) fn redo_gate(w: &mut String, key: &CoopForward) {
    let _ = writeln!(
        w,
        "    if (local == 0u) {{
        scratch[0] = f32(flag_data[{flag}]);
    }}
    if (workgroupUniformLoad(&scratch[0]) == 0.0) {{
        return;
    }}",
        flag = flag_index(key),
    );
}

/// The workgroup's slot in `flag_data`: one flag per block of query rows of each batch-head.
fn flag_index(key: &CoopForward) -> String {
    let rows = key.block_rows();
    format!("head * ((length + {rows}u - 1u) / {rows}u) + workgroup.x")
}
