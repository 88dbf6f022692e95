//! The WGSL generators of the fused attention kernels (`attention/` holds their key,
//! parameters, catalogue and launchers). Every kernel is specialised per head size (`d`, the
//! query/key width) and value size (`dv`), both multiples of 4 up to 128, so that a row of
//! q, k, v or an accumulator is a fixed set of *named* `vec4<f32>` locals (`q0, q1, ...`):
//! a local array indexed by a loop variable would be placed in slow memory (see
//! `matmul/large.rs`). The widths are unrolled here; the rows of a staged tile are walked in
//! chunks of [`CHUNK`] (two `vec4`s of scores) by a loop with a constant trip count.
//!
//! The layout every kernel shares: one workgroup of [`BLOCK_ROWS`] invocations per
//! (block of 64 rows, batch-head); each invocation owns one row (a query row in the forward
//! and dQ kernels, a key row in the dK/dV kernel) and keeps that row's operands and
//! accumulators in registers. The other side (keys and values, or queries and output
//! gradients) is walked in tiles of [`tile_rows`] rows that the workgroup stages in
//! workgroup memory as `vec4<f32>` (f16 storage is widened while staging), so each staged
//! element is read once from storage and then 64 times from fast memory, all invocations
//! reading the same address (a broadcast).
//!
//! - **forward**: online softmax (FlashAttention): for each key tile, scores
//!   `s = q·k · scale`, the running max `m`, `correction = exp(m_old - m_new)`, the running
//!   sum `l = l · correction + Σ exp(s - m_new)` and `o = o · correction + Σ p v`; at the end
//!   `o / l` and the row's log-sum-exp `m + log l` (saved for the backward). The `[L, S]`
//!   scores never exist outside registers.
//! - **delta** (`attention/delta_source.rs`): `D = rowsum(dO ∘ O)`, written beside the row's
//!   log-sum-exp as one `vec2<f32>` (the gradient kernels then bind one row-statistics buffer:
//!   the context binds at most 8 buffers per kernel).
//! - **key-value** (dK, dV): per key row, over query tiles: `p = exp(s - lse)`,
//!   `dV += p dO`, `dp = dO·v`, `ds = p (dp - D)`, `dK += ds · scale · q`.
//! - **query** (dQ): per query row, over key tiles: the same `p` and `ds`, `dQ += ds · scale · k`.
//!
//! WGSL has no float atomics, so dQ and dK/dV are two kernels that each own their output rows
//! (FlashAttention-2's split). Causal attention (PyTorch's top-left aligned mask: key column
//! `<=` query row) skips every tile that lies wholly above the diagonal. Masked scores never
//! reach `exp` unguarded: their probability is selected to 0, and the running max starts at a
//! finite lowest value, so a row with no visible key ends with `l = 0` and writes zeros.

use std::fmt::Write;

use crate::backend::gpu::runtime::params::KernelParams;

/// Rows (queries, or keys in the dK/dV kernel) owned by one workgroup: one per invocation.
pub(crate) const BLOCK_ROWS: u32 = 64;

/// The finite "minus infinity" the running max starts from (WGSL has no infinite literals).
const LOWEST: &str = "-3.0e38";

/// Key biases at or below this mark a masked key (the host clamps `-inf` to `-3e38`).
const MASKED_BELOW: &str = "-1.0e38";

/// Stage the biases of the tile's keys into `bias_tile` (masked past the last key) and, per
/// vec4 of a chunk, nothing yet: `chunk_biases` reads them.
fn stage_bias(w: &mut String, tile: u32) {
    let _ = writeln!(
        w,
        "        if (local < {tile}u) {{
            let r = start + local;
            var bias = {LOWEST};
            if (r < key_length) {{
                bias = key_bias_data[bias_base + r];
            }}
            bias_tile[local] = bias;
        }}"
    );
}

/// `let bias_c = vec4(bias_tile[r + 4c], ..);` for each vec4 of the chunk.
fn chunk_biases(w: &mut String) {
    for c in 0..CHUNK / 4 {
        let b = c * 4;
        let _ = writeln!(
            w,
            "            let bias_{c} = vec4<f32>(bias_tile[r + {b}u], bias_tile[r + {}u], bias_tile[r + {}u], bias_tile[r + {}u]);",
            b + 1,
            b + 2,
            b + 3
        );
    }
}

/// The bias binding, tile and base of the kernels that stage key tiles (forward, dQ).
fn key_bias_declarations(variant: &Variant, tile: u32) -> String {
    if variant.key_bias {
        format!("var<workgroup> bias_tile: array<f32, {tile}>;\n")
    } else {
        String::new()
    }
}

/// Which of the four attention kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AttentionPass {
    /// `o` and the row log-sum-exp from q, k, v.
    Forward,
    /// `D = rowsum(dO ∘ O)`, stored with the log-sum-exp as `vec2(lse, D)` per row.
    Delta,
    /// `Delta`, and zeros into the f32 query-gradient sums that the cooperative key-value
    /// kernel then adds into (`attention/coop/backward/fold.rs`: `[batch_heads, padded rows, d]`),
    /// so that no clear of its own precedes it.
    DeltaZeroing,
    /// dK and dV, one key row per invocation.
    KeyValue,
    /// dQ, one query row per invocation.
    Query,
}

/// The shape of one instantiation: what `AttentionKey` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Variant {
    pub(crate) pass: AttentionPass,
    /// WGSL storage type of q, k, v and the outputs (`f32` or `f16`).
    pub(crate) stored: &'static str,
    /// Query/key width `d` (a multiple of 4, at most 128).
    pub(crate) head_dim: u32,
    /// Value width `dv` (a multiple of 4, at most 128).
    pub(crate) value_dim: u32,
    pub(crate) causal: bool,
    /// An additive f32 bias per key (`key_bias_data`, `[rows, key_length]`, bias row
    /// `batch_head / params.bias_group`): a key-padding mask. Biases at or below `-1e38`
    /// (the host writes `-3e38` for masked keys) mark the key invisible.
    pub(crate) key_bias: bool,
}

/// Rows per staged tile: 32 while both widths are at most 64, else 16 (the two staged
/// `vec4<f32>` tiles then stay at 16 KiB of workgroup memory, and the unrolled bodies short).
pub(crate) fn tile_rows(head_dim: u32, value_dim: u32) -> u32 {
    if head_dim.max(value_dim) <= 64 {
        32
    } else {
        16
    }
}

/// `dot(r0, tile[base + 0u]) + dot(r1, tile[base + 1u]) + ...` over `width4` vec4s: the dot
/// product of a register row `r` with row `row` of the current chunk of `tile`, whose first
/// vec4 is at `{base}{row}` (see [`chunk_start`]).
fn row_dot(register: &str, tile: &str, base: &str, row: u32, width4: u32) -> String {
    (0..width4)
        .map(|i| format!("dot({register}{i}, {tile}[{base}{row} + {i}u])"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Rows of a staged tile handled per iteration of the (not unrolled) chunk loop: two `vec4`
/// lanes of scores. Unrolling whole tiles made shaders so long that a software GPU (lavapipe)
/// spent minutes compiling each; a chunk keeps the rescaling of the online softmax to once per
/// eight keys.
const CHUNK: u32 = 8;

/// Open the loop over the chunks of a staged tile: `r` is the chunk's first row, and
/// `{base}{t}` the first vec4 of its row `t` in a tile of `width4` vec4s per row, for every
/// `(base, width4)` given.
fn chunk_start(w: &mut String, tile: u32, bases: &[(&str, u32)]) {
    let _ = writeln!(w, "        for (var r = 0u; r < {tile}u; r += {CHUNK}u) {{");
    for (base, width4) in bases {
        for t in 0..CHUNK {
            let _ = writeln!(w, "            let {base}{t} = (r + {t}u) * {width4}u;");
        }
    }
}

/// Declare `{name}0..` as `vec4<f32>` locals read from `source` at vec4 row `row_expr`.
fn load_row(w: &mut String, name: &str, source: &str, row_expr: &str, width4: u32) {
    for i in 0..width4 {
        let _ = writeln!(
            w,
            "    let {name}{i} = vec4<f32>({source}[({row_expr}) * {width4}u + {i}u]);"
        );
    }
}

/// Declare `{name}0..` as zeroed `vec4<f32>` accumulators.
fn zero_row(w: &mut String, name: &str, width4: u32) {
    for i in 0..width4 {
        let _ = writeln!(w, "    var {name}{i} = vec4<f32>(0.0);");
    }
}

/// Stage rows `[start, start + tile)` of the `[rows, width4]` vec4 matrix at row `base` of
/// `source` into `tile`, zero past `rows` (every invocation of the workgroup takes part).
fn stage(w: &mut String, tile: &str, source: &str, width4: u32, tile_rows: u32, rows: &str) {
    let at = format!("base * {width4}u");
    let row = format!("{width4}u");
    stage_rows(w, (tile, source), width4, tile_rows, rows, (&at, &row));
}

/// [`stage`] from rows that start at vec4 `at + r * row` of `source` (expressions).
fn stage_rows(
    w: &mut String,
    (tile, source): (&str, &str),
    width4: u32,
    tile_rows: u32,
    rows: &str,
    (at, row): (&str, &str),
) {
    let count = tile_rows * width4;
    let _ = writeln!(
        w,
        "        for (var i = local; i < {count}u; i += {BLOCK_ROWS}u) {{
            let r = start + i / {width4}u;
            var staged = vec4<f32>(0.0);
            if (r < {rows}) {{
                staged = vec4<f32>({source}[{at} + r * {row} + i % {width4}u]);
            }}
            {tile}[i] = staged;
        }}"
    );
}

/// `acc_i = acc_i + Σ_t weight(t) * tile[{base}t + i]` over the chunk's rows `t`, for every
/// `i`, where the weight of row `t` is lane `t % 4` of the vec4 `{weights}_{t / 4}`.
fn accumulate(w: &mut String, acc: &str, weights: &str, tile: &str, base: &str, width4: u32) {
    const LANES: [&str; 4] = ["x", "y", "z", "w"];
    for i in 0..width4 {
        let terms: Vec<String> = (0..CHUNK)
            .map(|t| {
                format!(
                    "{weights}_{}.{} * {tile}[{base}{t} + {i}u]",
                    t / 4,
                    LANES[(t % 4) as usize],
                )
            })
            .collect();
        let _ = writeln!(
            w,
            "            {acc}{i} = {acc}{i} + {};",
            terms.join(" + ")
        );
    }
}

/// `let s_c = vec4(q·k_4c, ..) * scale;` for each vec4 of the chunk's rows: the scores of
/// register row `register` against the chunk.
fn scores(w: &mut String, register: &str, tile: &str, base: &str, width4: u32, biased: bool) {
    let bias = |c: u32| {
        if biased {
            format!(" + bias_{c}")
        } else {
            String::new()
        }
    };
    for c in 0..CHUNK / 4 {
        let lanes: Vec<String> = (0..4)
            .map(|t| row_dot(register, tile, base, c * 4 + t, width4))
            .collect();
        let _ = writeln!(
            w,
            "            let s_{c} = vec4<f32>({}) * params.scale{};",
            lanes.join(",\n                "),
            bias(c)
        );
    }
}

/// `let valid_c = ...;` for each vec4 of the chunk: which scores are visible. `row` is the
/// invocation's row, `index_c` the staged rows' indices; `staged_is_key` says which side is
/// the key (causal: key column <= query row).
fn validity(w: &mut String, limit: &str, causal: bool, staged_is_key: bool, biased: bool) {
    for c in 0..CHUNK / 4 {
        let b = c * 4;
        let _ = writeln!(
            w,
            "            let index_{c} = start + r + vec4<u32>({b}u, {}u, {}u, {}u);",
            b + 1,
            b + 2,
            b + 3
        );
        let causal_term = match (causal, staged_is_key) {
            (false, _) => String::new(),
            (true, true) => format!(" & (index_{c} <= vec4<u32>(row))"),
            (true, false) => format!(" & (vec4<u32>(row) <= index_{c})"),
        };
        let bias_term = if biased {
            format!(" & (bias_{c} > vec4<f32>({MASKED_BELOW}))")
        } else {
            String::new()
        };
        let _ = writeln!(
            w,
            "            let valid_{c} = (index_{c} < vec4<u32>({limit})){causal_term}{bias_term};"
        );
    }
}

/// The bindings, workgroup tiles and entry-point opening shared by the kernels.
pub(super) fn prologue(w: &mut String, variant: &Variant, bindings: &[(&str, &str, bool)]) {
    let _ = writeln!(w, "alias S = {};", variant.stored);
    w.push_str(crate::backend::gpu::attention::AttentionParams::WGSL);
    let bindings = bindings
        .iter()
        .filter(|(name, _, _)| variant.key_bias || *name != "key_bias_data");
    for (slot, (name, element, writable)) in bindings.enumerate() {
        let access = if *writable { "read_write" } else { "read" };
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, {access}> {name}: array<{element}>;",
            slot + 1
        );
    }
}

/// The complete WGSL (after `enable f16;` where needed) of one instantiation.
pub(crate) fn source(variant: &Variant) -> String {
    let mut w = String::new();
    let d4 = variant.head_dim / 4;
    let v4 = variant.value_dim / 4;
    let tile = tile_rows(variant.head_dim, variant.value_dim);
    match variant.pass {
        AttentionPass::Forward => forward(&mut w, variant, d4, v4, tile),
        AttentionPass::Delta | AttentionPass::DeltaZeroing => {
            crate::backend::gpu::attention::delta_source::delta(&mut w, variant, d4, v4)
        }
        AttentionPass::KeyValue => key_value(&mut w, variant, d4, v4, tile),
        AttentionPass::Query => query(&mut w, variant, d4, v4, tile),
    }
    w
}

pub(super) const ENTRY: &str = "@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {";

/// The forward kernel: online softmax over key tiles.
fn forward(w: &mut String, variant: &Variant, d4: u32, v4: u32, tile: u32) {
    prologue(
        w,
        variant,
        &[
            ("query_data", "vec4<S>", false),
            ("key_data", "vec4<S>", false),
            ("value_data", "vec4<S>", false),
            ("key_bias_data", "f32", false),
            ("output_data", "vec4<S>", true),
            ("logsumexp_data", "f32", true),
        ],
    );
    let _ = writeln!(
        w,
        "var<workgroup> key_tile: array<vec4<f32>, {}>;
var<workgroup> value_tile: array<vec4<f32>, {}>;
{}{ENTRY}
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * {BLOCK_ROWS}u;
    let row = row0 + local;
    // Invocations past the last row compute on a copy of it (they must reach the barriers)
    // and write nothing.
    let clamped = min(row, length - 1u);
    let own = head * length + clamped;
    // The operands are read through views (`AttentionRows` in geometry.rs): batch-head
    // `head` is head `head % heads` of batch `head / heads`.
    let batch_index = head / params.heads;
    let head_index = head % params.heads;
    let query_at = params.query_offset + batch_index * params.query_batch + head_index * params.query_head + clamped * params.query_row;
    let key_at = params.key_offset + batch_index * params.key_batch + head_index * params.key_head;
    let value_at = params.value_offset + batch_index * params.value_batch + head_index * params.value_head;",
        tile * d4,
        tile * v4,
        key_bias_declarations(variant, tile)
    );
    for i in 0..d4 {
        let _ = writeln!(w, "    let q{i} = vec4<f32>(query_data[query_at + {i}u]);");
    }
    zero_row(w, "o", v4);
    let key_end = if variant.causal {
        format!("min(key_length, row0 + {BLOCK_ROWS}u)")
    } else {
        "key_length".into()
    };
    let _ = writeln!(
        w,
        "    var running_max = {LOWEST};
    var running_sum = 0.0;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = {key_end};
    for (var start = 0u; start < key_end; start += {tile}u) {{
        workgroupBarrier();"
    );
    let tiles = [
        ("key_tile", "key_data", d4, "key_at", "params.key_row"),
        (
            "value_tile",
            "value_data",
            v4,
            "value_at",
            "params.value_row",
        ),
    ];
    for (tile_name, source, width4, at, row) in tiles {
        stage_rows(
            w,
            (tile_name, source),
            width4,
            tile,
            "key_length",
            (at, row),
        );
    }
    if variant.key_bias {
        stage_bias(w, tile);
    }
    w.push_str("        workgroupBarrier();\n");
    chunk_start(w, tile, &[("bk", d4), ("bv", v4)]);
    if variant.key_bias {
        chunk_biases(w);
    }
    scores(w, "q", "key_tile", "bk", d4, variant.key_bias);
    validity(w, "key_length", variant.causal, true, variant.key_bias);
    let _ = writeln!(w, "            var chunk_max = {LOWEST};");
    for c in 0..CHUNK / 4 {
        let _ = writeln!(
            w,
            "            let m_{c} = select(vec4<f32>({LOWEST}), s_{c}, valid_{c});
            chunk_max = max(chunk_max, max(max(m_{c}.x, m_{c}.y), max(m_{c}.z, m_{c}.w)));"
        );
    }
    w.push_str(
        "            let new_max = max(running_max, chunk_max);
            let correction = exp(running_max - new_max);
            running_max = new_max;\n",
    );
    let mut sum_terms = Vec::new();
    for c in 0..CHUNK / 4 {
        let _ = writeln!(
            w,
            "            let p_{c} = select(vec4<f32>(0.0), exp(s_{c} - vec4<f32>(new_max)), valid_{c});"
        );
        sum_terms.push(format!("p_{c}"));
    }
    let _ = writeln!(
        w,
        "            running_sum = running_sum * correction + dot({}, vec4<f32>(1.0));",
        sum_terms.join(" + ")
    );
    for i in 0..v4 {
        let _ = writeln!(w, "            o{i} = o{i} * correction;");
    }
    accumulate(w, "o", "p", "value_tile", "bv", v4);
    w.push_str("        }\n");
    let _ = writeln!(
        w,
        "    }}
    if (row < length) {{
        let has_keys = running_sum > 0.0;
        let inverse = select(0.0, 1.0 / running_sum, has_keys);"
    );
    for i in 0..v4 {
        let _ = writeln!(
            w,
            "        output_data[own * {v4}u + {i}u] = vec4<S>(o{i} * inverse);"
        );
    }
    w.push_str(
        "        logsumexp_data[own] = select(0.0, running_max + log(running_sum), has_keys);
    }
}\n",
    );
}

/// The per-chunk probabilities and score gradients shared by both gradient kernels: `p` from
/// the scores and the log-sum-exp, `dp` from the output-gradient and value rows, `ds`.
fn probabilities(
    w: &mut String,
    lse: &dyn Fn(u32) -> String,
    dp: &dyn Fn(u32) -> String,
    delta: &dyn Fn(u32) -> String,
) {
    for c in 0..CHUNK / 4 {
        let _ = writeln!(
            w,
            "            let p_{c} = select(vec4<f32>(0.0), exp(s_{c} - {}), valid_{c});
            let dp_{c} = vec4<f32>({});
            let ds_{c} = p_{c} * (dp_{c} - {}) * params.scale;",
            lse(c),
            dp(c),
            delta(c)
        );
    }
}

/// dK and dV: one key row per invocation, over query tiles.
fn key_value(w: &mut String, variant: &Variant, d4: u32, v4: u32, tile: u32) {
    prologue(
        w,
        variant,
        &[
            ("query_data", "vec4<S>", false),
            ("key_data", "vec4<S>", false),
            ("value_data", "vec4<S>", false),
            ("grad_data", "vec4<S>", false),
            ("statistics_data", "vec2<f32>", false),
            ("key_bias_data", "f32", false),
            // dK then dV in one buffer (the context binds at most 7 buffers per kernel).
            ("key_value_grad_data", "vec4<S>", true),
        ],
    );
    let first = if variant.causal {
        // Query rows before the block's first key see none of its keys.
        format!("(workgroup.x * {BLOCK_ROWS}u / {tile}u) * {tile}u")
    } else {
        "0u".into()
    };
    let _ = writeln!(
        w,
        "var<workgroup> query_tile: array<vec4<f32>, {}>;
var<workgroup> grad_tile: array<vec4<f32>, {}>;
var<workgroup> logsumexp_tile: array<f32, {tile}>;
var<workgroup> delta_tile: array<f32, {tile}>;
{ENTRY}
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row = workgroup.x * {BLOCK_ROWS}u + local;
    let own = head * key_length + min(row, key_length - 1u);",
        tile * d4,
        tile * v4
    );
    if variant.key_bias {
        let _ = writeln!(
            w,
            "    let row_bias = vec4<f32>(key_bias_data[(head / params.bias_group) * key_length + min(row, key_length - 1u)]);"
        );
    }
    load_row(w, "k", "key_data", "own", d4);
    load_row(w, "v", "value_data", "own", v4);
    zero_row(w, "dk", d4);
    zero_row(w, "dv", v4);
    let _ = writeln!(
        w,
        "    let base = head * length;
    for (var start = {first}; start < length; start += {tile}u) {{
        workgroupBarrier();"
    );
    stage(w, "query_tile", "query_data", d4, tile, "length");
    stage(w, "grad_tile", "grad_data", v4, tile, "length");
    let _ = writeln!(
        w,
        "        if (local < {tile}u) {{
            let r = start + local;
            var lse = 0.0;
            var delta = 0.0;
            if (r < length) {{
                let statistics = statistics_data[base + r];
                lse = statistics.x;
                delta = statistics.y;
            }}
            logsumexp_tile[local] = lse;
            delta_tile[local] = delta;
        }}
        workgroupBarrier();"
    );
    chunk_start(w, tile, &[("bq", d4), ("bg", v4)]);
    if variant.key_bias {
        for c in 0..CHUNK / 4 {
            let _ = writeln!(w, "            let bias_{c} = row_bias;");
        }
    }
    scores(w, "k", "query_tile", "bq", d4, variant.key_bias);
    validity(w, "length", variant.causal, false, variant.key_bias);
    let lanes = |tile_name: &'static str| {
        move |c: u32| {
            let b = c * 4;
            format!(
                "vec4<f32>({tile_name}[r + {b}u], {tile_name}[r + {}u], {tile_name}[r + {}u], {tile_name}[r + {}u])",
                b + 1,
                b + 2,
                b + 3
            )
        }
    };
    let dp = |c: u32| {
        (0..4)
            .map(|t| row_dot("v", "grad_tile", "bg", c * 4 + t, v4))
            .collect::<Vec<_>>()
            .join(",\n            ")
    };
    probabilities(w, &lanes("logsumexp_tile"), &dp, &lanes("delta_tile"));
    accumulate(w, "dv", "p", "grad_tile", "bg", v4);
    accumulate(w, "dk", "ds", "query_tile", "bq", d4);
    let _ = writeln!(
        w,
        "        }}
    }}
    if (row < key_length) {{
        let value_start = params.batch_heads * key_length * {d4}u;"
    );
    for i in 0..d4 {
        let _ = writeln!(
            w,
            "        key_value_grad_data[own * {d4}u + {i}u] = vec4<S>(dk{i});"
        );
    }
    for i in 0..v4 {
        let _ = writeln!(
            w,
            "        key_value_grad_data[value_start + own * {v4}u + {i}u] = vec4<S>(dv{i});"
        );
    }
    w.push_str("    }\n}\n");
}

/// dQ: one query row per invocation, over key tiles.
fn query(w: &mut String, variant: &Variant, d4: u32, v4: u32, tile: u32) {
    prologue(
        w,
        variant,
        &[
            ("query_data", "vec4<S>", false),
            ("key_data", "vec4<S>", false),
            ("value_data", "vec4<S>", false),
            ("grad_data", "vec4<S>", false),
            ("statistics_data", "vec2<f32>", false),
            ("key_bias_data", "f32", false),
            ("query_grad_data", "vec4<S>", true),
        ],
    );
    let key_end = if variant.causal {
        format!("min(key_length, row0 + {BLOCK_ROWS}u)")
    } else {
        "key_length".into()
    };
    let _ = writeln!(
        w,
        "var<workgroup> key_tile: array<vec4<f32>, {}>;
var<workgroup> value_tile: array<vec4<f32>, {}>;
{}{ENTRY}
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * {BLOCK_ROWS}u;
    let row = row0 + local;
    let own = head * length + min(row, length - 1u);",
        tile * d4,
        tile * v4,
        key_bias_declarations(variant, tile)
    );
    load_row(w, "q", "query_data", "own", d4);
    load_row(w, "g", "grad_data", "own", v4);
    zero_row(w, "dq", d4);
    let _ = writeln!(
        w,
        "    let statistics = statistics_data[own];
    let row_logsumexp = vec4<f32>(statistics.x);
    let row_delta = vec4<f32>(statistics.y);
    let base = head * key_length;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = {key_end};
    for (var start = 0u; start < key_end; start += {tile}u) {{
        workgroupBarrier();"
    );
    stage(w, "key_tile", "key_data", d4, tile, "key_length");
    stage(w, "value_tile", "value_data", v4, tile, "key_length");
    if variant.key_bias {
        stage_bias(w, tile);
    }
    w.push_str("        workgroupBarrier();\n");
    chunk_start(w, tile, &[("bk", d4), ("bv", v4)]);
    if variant.key_bias {
        chunk_biases(w);
    }
    scores(w, "q", "key_tile", "bk", d4, variant.key_bias);
    validity(w, "key_length", variant.causal, true, variant.key_bias);
    let dp = |c: u32| {
        (0..4)
            .map(|t| row_dot("g", "value_tile", "bv", c * 4 + t, v4))
            .collect::<Vec<_>>()
            .join(",\n            ")
    };
    probabilities(w, &|_| "row_logsumexp".into(), &dp, &|_| "row_delta".into());
    accumulate(w, "dq", "ds", "key_tile", "bk", d4);
    w.push_str("        }\n    }\n    if (row < length) {\n");
    for i in 0..d4 {
        let _ = writeln!(
            w,
            "        query_grad_data[own * {d4}u + {i}u] = vec4<S>(dq{i});"
        );
    }
    w.push_str("    }\n}\n");
}
