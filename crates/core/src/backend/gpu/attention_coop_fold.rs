//! The query gradient summed inside the cooperative key-value kernel
//! (`attention_coop_backward_source.rs`), where the device adds f32 atomically
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
//! H200, 8 x 12 x 512 x 64 (`bench/results/h200-session28-fold.txt`): the fold right after
//! the tile's dS, behind a workgroup barrier of its own, took the key-value kernel from 197.5
//! to 368 µs with the row adds in a loop and 306.7 unrolled (the barrier alone: 223.1),
//! against 197.5 + 143.8 µs for the key-value and query kernels. At the next tile's first
//! barrier, with no barrier of its own and no bounds test: 289.7–291.2 µs, against
//! 196.3–198.4 and 145.6–146.7; the step 2–8% faster (0.524–0.565 against 0.535–0.566 ms, 1.53 against
//! 1.67 at T = 1024), its peak memory 51 → 64 MB (the f32 sums).
//!
//! The launcher (`attention_coop_backward.rs`) zeroes the f32 buffer first and casts it to the
//! query's dtype after. The sum over key blocks is in whatever order the workgroups arrive, so
//! dQ may differ from run to run in its last f32 bits (as PyTorch's flash backward);
//! deterministic algorithms (`determinism.rs`) keep the query kernel.
//!
//! It applies where the head size is a multiple of 32 and its pairs (`2 d / 32`) share out
//! evenly over the subgroups ([`fold_applies`]): d = 64 and 128 with four subgroups, 32 to 128
//! with two. Not with eight (whose K block lives in registers as A fragments, not in workgroup
//! memory): on tensor cores, widths of 32 and 64 take the eight-subgroup key-value and query
//! kernels instead, which on the H200 beat the fold (146 + 100 µs against 290 at
//! 8 x 12 x 512 x 64), so the fold runs where four subgroups are picked (d = 128) and in the
//! emulation.

use std::fmt::Write;

use super::attention_coop_backward_source::TILE;
use super::attention_coop_source::Spell;

/// Rows a batch-head in the fold's f32 buffer: the query length rounded up to whole tiles.
pub(crate) fn padded_rows(query_length: usize) -> usize {
    query_length.next_multiple_of(TILE as usize)
}

/// Whether the key-value kernel of head size `head_dim` with `subgroups` subgroups can sum
/// the query gradient: whole pairs of fragments for every subgroup.
pub(crate) fn fold_applies(head_dim: u32, subgroups: u32) -> bool {
    head_dim.is_multiple_of(32) && (2 * head_dim / 32).is_multiple_of(subgroups)
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
