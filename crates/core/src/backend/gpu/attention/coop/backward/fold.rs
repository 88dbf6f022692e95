//! The query gradient summed inside the cooperative key-value kernel
//! (`attention/coop/backward/source.rs`), where the device adds f32 atomically
//! (`SHADER_FLOAT32_ATOMIC`): the separate query kernel, which walks every key tile a second
//! time to recompute the scores and their gradients, then does not run.
//!
//! Per query tile, once every subgroup has written its 16 rows of `dSᵀ` (16 keys x 32
//! queries: after the next tile's first workgroup barrier, or after the walk), the workgroup
//! computes the tile's share of dQ from its block's keys, `dS K` (32 queries x d, the sum over
//! the block's `16 G` keys): the output is cut into pairs of 16 x 16 fragments side by side
//! (16 query rows x 32 columns), each subgroup takes `pairs / G` of them, with `dS` read
//! column-major from the `dSᵀ` rows as the A fragment and the staged K block row-major as B.
//! Each pair, times `scale`, passes through the subgroup's scratch and is added to the f32
//! dQ buffer with one `atomicAdd` a lane a row: 32 consecutive floats a subgroup, no bounds
//! test: the buffer holds [`padded_rows`] rows a batch-head, a whole number of tiles, so the
//! adds of the last tile's rows past the length land in the batch-head's own padding (never
//! in another's, even where an infinite operand makes them NaN), which the cast to the
//! query's dtype skips.
//!
//! H200, 8 x 12 x 512 x 64 (docs/PERFORMANCE.md): the fold right after
//! the tile's dS, behind a workgroup barrier of its own, took the key-value kernel from 197.5
//! to 368 µs with the row adds in a loop and 306.7 unrolled (the barrier alone: 223.1),
//! against 197.5 + 143.8 µs for the key-value and query kernels. At the next tile's first
//! barrier, with no barrier of its own and no bounds test: 289.7–291.2 µs, against
//! 196.3–198.4 and 145.6–146.7; the step 2–8% faster (0.524–0.565 against 0.535–0.566 ms, 1.53 against
//! 1.67 at T = 1024), its peak memory 51 → 64 MB (the f32 sums).
//!
//! The delta pass before the kernel zeroes the f32 buffer (`AttentionPass::DeltaZeroing` in
//! `attention/delta_source.rs`; a clear of its own cost the H200 about 14 µs a step at
//! 8 x 12 x 512 x 64, 300 against 286 µs back to back without it), and the launcher
//! (`attention/coop/backward.rs`) casts it to the query's dtype after. The sum over key
//! blocks is in whatever order the workgroups arrive, so dQ may differ from run to run in its
//! last f32 bits (as PyTorch's flash backward); deterministic algorithms (`determinism.rs`)
//! keep the query kernel.
//!
//! It applies where the head size is a multiple of 32 and its pairs (`2 d / 32`) share out
//! evenly over the subgroups ([`fold_applies`]): d = 64 and 128 with four subgroups, 32 to 128
//! with two. The eight-subgroup kernels (tensor cores, widths 32 and 64) keep their K block in
//! registers as A fragments and have no workgroup memory left for it as a B operand; at
//! d = 64 each subgroup holds the block's keys as eight B fragments of its own 16 columns
//! instead and computes one 16 x 16 fragment of the tile's dQ
//! ([`emit_fold_key_fragments`], [`folds_from_registers`]). On the H200 that fold beats the
//! eight-subgroup key-value and query kernels (175–180 µs and a 9.5 µs cast against
//! 139–141 + 96–98 µs at 8 x 12 x 512 x 64); at d = 32 it gained nothing, so there the two
//! kernels run.

use std::fmt::Write;

use crate::backend::gpu::attention::coop::backward::source::TILE;
use crate::backend::gpu::attention::coop::spell::Spell;

/// Rows a batch-head in the fold's f32 buffer: the query length rounded up to whole tiles.
pub(crate) fn padded_rows(query_length: usize) -> usize {
    query_length.next_multiple_of(TILE as usize)
}

/// Whether the key-value kernel of head size `head_dim` with `subgroups` subgroups (`causal`
/// or not) sums the query gradient: whole pairs of fragments for every subgroup, or with
/// eight subgroups [`folds_from_registers`] where it is not causal.
pub(crate) fn fold_applies(head_dim: u32, subgroups: u32, causal: bool) -> bool {
    if subgroups == 8 {
        // Causal: the H200 step took 0.357 ms with the fold against 0.337 without (0.288
        // against 0.261 back to back): the key-value kernel's workgroups walk from 4 to 16
        // tiles, and without the fold the query kernel runs beside the longest of them.
        return folds_from_registers(head_dim, subgroups) && !causal;
    }
    head_dim.is_multiple_of(32) && (2 * head_dim / 32).is_multiple_of(subgroups)
}

/// Whether the key-value kernel with `subgroups` subgroups folds with its keys as B fragments
/// held in registers ([`emit_fold_key_fragments`]): the eight-subgroup kernels, whose
/// workgroup memory has no room for a K block during the walk, where a tile's dQ has one
/// 16 x 16 fragment per subgroup (`2 d / 16 = 8`: d = 64). At d = 32 (two subgroups a
/// fragment, each summing half the keys) the H200 gained nothing: 0.305 against 0.302 ms a
/// step at 8 x 12 x 512 x 32 (docs/PERFORMANCE.md).
pub(crate) fn folds_from_registers(head_dim: u32, subgroups: u32) -> bool {
    subgroups == 8 && head_dim == 64
}

/// Where the fold reads: the `gradient_rows` rows of `dSᵀ` (at `gradient`, rows
/// `probability_row` halves apart) and the K block (at 0, rows `key_row` halves apart) in
/// `tiles`; the scratch rows `scratch_row` floats apart.
#[derive(Clone, Copy)]
pub(crate) struct FoldRegions {
    pub(crate) gradient: u32,
    pub(crate) gradient_rows: u32,
    pub(crate) probability_row: u32,
    pub(crate) key_row: u32,
    pub(crate) scratch_row: u32,
}

/// Before the walk (with the kernel's `length`, `local` and `threads` invocations): the rows a
/// batch-head in the f32 buffer (`padded_rows`), and the `dSᵀ` rows zeroed, because the first
/// tile's fold reads them before any tile wrote them.
pub(crate) fn emit_fold_prologue(w: &mut String, regions: &FoldRegions, threads: u32) {
    let _ = writeln!(
        w,
        "    let padded_rows = ((length + {TILE}u - 1u) / {TILE}u) * {TILE}u;
    for (var at = local; at < {}u; at += {threads}u) {{
        tiles[{}u + at] = f16(0.0);
    }}",
        regions.gradient_rows * regions.probability_row,
        regions.gradient
    );
}

/// At the start of the tile at `start` (after its first workgroup barrier): the previous
/// tile's dQ, now that every subgroup's `dSᵀ` rows of it are written (this tile's staging
/// stores come after, and its `dSᵀ` rows only after the next barrier). No branch around the
/// cooperative operations (naga: uniform control flow): the first tile (`first_start`) folds
/// the zeroed rows, which add nothing.
pub(crate) fn emit_fold_previous(
    w: &mut String,
    spell: &Spell,
    head_dim: u32,
    subgroups: u32,
    regions: &FoldRegions,
) {
    let _ = writeln!(
        w,
        "        let fold_start = select(start - {TILE}u, start, start == first_start);"
    );
    emit_fold(w, spell, head_dim, subgroups, regions);
}

/// After the walk over the tiles `first_start ..< end`: a workgroup barrier and the last
/// tile's dQ (the zeroed rows where the walk was empty).
pub(crate) fn emit_fold_last(
    w: &mut String,
    spell: &Spell,
    head_dim: u32,
    subgroups: u32,
    regions: &FoldRegions,
) {
    let _ = writeln!(
        w,
        "    workgroupBarrier();
    {{
        let fold_start = select(0u, first_start + ((end - first_start - 1u) / {TILE}u) * {TILE}u, end > first_start);"
    );
    emit_fold(w, spell, head_dim, subgroups, regions);
    w.push_str("    }\n");
}

/// The fold's WGSL for the query tile at `fold_start` (a `let` of the caller), whose `dSᵀ`
/// rows every subgroup has written before a workgroup barrier that precedes this; the
/// caller's next use of the scratch, dS or K comes after another. Declares nothing outside its
/// braces; uses the kernel's `subgroup`, `lane`, `scratch_at`, `head`, `padded_rows` and the
/// binding `query_grad_data` (`array<atomic<f32>>`).
fn emit_fold(w: &mut String, spell: &Spell, head_dim: u32, subgroups: u32, regions: &FoldRegions) {
    if folds_from_registers(head_dim, subgroups) {
        emit_fold_from_registers(w, spell, head_dim, subgroups, regions);
        return;
    }
    let pairs = 2 * head_dim / 32 / subgroups;
    let acc = spell.accumulator();
    let FoldRegions {
        gradient,
        probability_row,
        key_row,
        scratch_row,
        ..
    } = *regions;
    for m in 0..pairs {
        let _ = writeln!(
            w,
            "        {{
            // dQ rows fold_row.. (of the tile) and columns fold_column.. (32 wide).
            let pair = subgroup * {pairs}u + {m}u;
            let fold_row = (pair % 2u) * 16u;
            let fold_column = (pair / 2u) * 32u;
            var f0 = {acc}();
            var f1 = {acc}();"
        );
        for r in 0..subgroups {
            let _ = writeln!(
                w,
                "            let fa_at{r} = {}u + fold_row;
            let fa{r} = {};
            let fb_at{r}_0 = {}u + fold_column;
            let fb{r}_0 = {};
            f0 = {};
            let fb_at{r}_1 = fb_at{r}_0 + 16u;
            let fb{r}_1 = {};
            f1 = {};",
                gradient + r * 16 * probability_row,
                spell.load_columns('A', &format!("fa_at{r}"), probability_row),
                r * 16 * key_row,
                spell.load_rows('B', &format!("fb_at{r}_0"), key_row),
                spell.multiply_add(&format!("fa{r}"), &format!("fb{r}_0"), "f0"),
                spell.load_rows('B', &format!("fb_at{r}_1"), key_row),
                spell.multiply_add(&format!("fa{r}"), &format!("fb{r}_1"), "f1"),
            );
        }
        let _ = writeln!(
            w,
            "            let fs0 = {};
            let fs1 = {};
            let f_at0 = scratch_at;
            {}
            let f_at1 = scratch_at + 16u;
            {}
            {barrier}
            let fold_at = (head * padded_rows + fold_start + fold_row) * {head_dim}u + fold_column + lane;
{adds}            {after}
        }}",
            spell.scaled("f0", "params.scale"),
            spell.scaled("f1", "params.scale"),
            spell.store("fs0", "f_at0", scratch_row),
            spell.store("fs1", "f_at1", scratch_row),
            barrier = spell.local_barrier(),
            // Unrolled: a loop here made the kernel 60 µs slower on the H200.
            adds = (0..16)
                .map(|i| format!(
                    "            atomicAdd(&query_grad_data[fold_at + {}u], scratch[scratch_at + {}u + lane]);\n",
                    i * head_dim,
                    i * scratch_row
                ))
                .collect::<String>(),
            // The next pair reuses the scratch; the next tile starts with workgroup barriers.
            after = if m + 1 < pairs { spell.local_barrier() } else { "" },
        );
    }
}

/// Before the walk of an eight-subgroup key-value kernel that folds
/// ([`folds_from_registers`]), while its K block is staged at 0 in `tiles` (rows `key_row`
/// halves apart): which dQ fragment of a tile subgroup `s` computes (rows `fold_row ..`,
/// columns `fold_column ..`: one of the `2 x d / 16` fragments of 16 x 16), and the block's
/// keys as the eight row-major B fragments `kb{i}` (keys `16 i ..`, the fragment's 16
/// columns), kept in registers for the whole walk.
pub(crate) fn emit_fold_key_fragments(
    w: &mut String,
    spell: &Spell,
    head_dim: u32,
    subgroups: u32,
    key_row: u32,
) {
    let _ = writeln!(
        w,
        "    let fold_row = (subgroup / {columns}u) * 16u;
    let fold_column = (subgroup % {columns}u) * 16u;",
        columns = head_dim / 16,
    );
    for i in 0..subgroups {
        let _ = writeln!(
            w,
            "    let kb_at{i} = {}u + fold_column;\n    let kb{i} = {};",
            16 * i * key_row,
            spell.load_rows('B', &format!("kb_at{i}"), key_row)
        );
    }
}

/// The fold of the eight-subgroup key-value kernel: the subgroup's dQ fragment summed over
/// the block's keys, with `dS` read column-major from the `dSᵀ` rows as A and the keys'
/// fragments `kb{i}` from registers as B ([`emit_fold_key_fragments`]). Times `scale`, it
/// passes through the subgroup's scratch; each lane then adds 8 values, two rows of 16
/// floats a step.
///
/// H200, 8 x 12 x 512 x 64 (docs/PERFORMANCE.md): the key-value kernel
/// 139–141 → 175–180 µs with the fold, against 96–98 µs for the query kernel it replaces
/// (plus 9.5 µs for the cast of the sums); the synchronized step 0.39–0.41 against 0.42 ms,
/// 1.06 against 1.22 ms at T = 1024. With the keys read from the key buffer instead (a
/// second binding; no registers held) the kernel took 224 µs, the same with the atomic adds
/// skipped: the loads from global memory, not the adds, cost the time.
fn emit_fold_from_registers(
    w: &mut String,
    spell: &Spell,
    head_dim: u32,
    subgroups: u32,
    regions: &FoldRegions,
) {
    let FoldRegions {
        gradient,
        probability_row,
        scratch_row,
        ..
    } = *regions;
    let _ = writeln!(
        w,
        "        {{\n            var f0 = {}();",
        spell.accumulator()
    );
    for i in 0..subgroups {
        let _ = writeln!(
            w,
            "            let fa_at{i} = {}u + fold_row;
            let fa{i} = {};
            f0 = {};",
            gradient + 16 * i * probability_row,
            spell.load_columns('A', &format!("fa_at{i}"), probability_row),
            spell.multiply_add(&format!("fa{i}"), &format!("kb{i}"), "f0"),
        );
    }
    let _ = writeln!(
        w,
        "            let fs0 = {};
            let f_at0 = scratch_at;
            {}
            {}
            let fold_at = (head * padded_rows + fold_start + fold_row + lane / 16u) * {head_dim}u + fold_column + lane % 16u;
            let fold_read = scratch_at + (lane / 16u) * {scratch_row}u + lane % 16u;
{adds}        }}",
        spell.scaled("f0", "params.scale"),
        spell.store("fs0", "f_at0", scratch_row),
        spell.local_barrier(),
        // Unrolled, as in the pairs' fold.
        adds = (0..8)
            .map(|i| format!(
                "            atomicAdd(&query_grad_data[fold_at + {}u], scratch[fold_read + {}u]);\n",
                2 * i * head_dim,
                2 * i * scratch_row
            ))
            .collect::<String>(),
    );
}
