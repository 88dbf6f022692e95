//! Staging of operand tiles into workgroup memory for the attention kernels on cooperative
//! matrices (the forward, `attention/coop/source.rs`, and both backward kernels,
//! `attention/coop/backward/source.rs`): straight-line WGSL in which every invocation issues
//! several 16-byte loads before storing them, so that the loads are in flight together, and
//! stores that keep a subgroup's 32 stores on distinct banks. The kernels declare `tiles`
//! (an f16 array in workgroup memory) and `local` (the invocation's index).

use std::fmt::Write;

/// Staged vec4 loads in flight per invocation before they are stored to workgroup memory.
pub(crate) const LOADS_IN_FLIGHT: usize = 8;

/// One operand staged into `tiles`: rows `[first, first + rows)` of the dense `[.., width]`
/// f16 matrix `source` (row `first` at `base`), rows `row_length` halves apart from `region`,
/// zeros from row `limit` on.
pub(crate) struct Staged<'a> {
    pub(crate) source: &'a str,
    pub(crate) width: u32,
    pub(crate) rows: u32,
    pub(crate) first: &'a str,
    pub(crate) base: &'a str,
    pub(crate) limit: &'a str,
    pub(crate) region: u32,
    pub(crate) row_length: u32,
}

/// Each invocation's share of staging `operands`: per 16-byte load, the operand and the
/// first vector index it takes (the invocation adds `local`).
pub(crate) fn staged_items<'a>(
    operands: &'a [Staged<'a>],
    threads: u32,
) -> Vec<(&'a Staged<'a>, u32)> {
    let mut items = Vec::new();
    for operand in operands {
        let vectors = operand.rows * operand.width / 4;
        debug_assert!(vectors.is_multiple_of(threads));
        items.extend((0..vectors / threads).map(|n| (operand, n * threads)));
    }
    items
}

/// The loads of `items` into the registers `staged{first_slot}..` (declared here when
/// `declare`), of the tile whose first row is `first` (an expression; rows from the operand's
/// limit on load zeros).
pub(crate) fn emit_loads(
    w: &mut String,
    indent: &str,
    items: &[(&Staged, u32)],
    first_slot: usize,
    first: &str,
    declare: bool,
) {
    for (index, (operand, offset)) in items.iter().enumerate() {
        let slot = first_slot + index;
        let width4 = operand.width / 4;
        if declare {
            let _ = writeln!(w, "{indent}var staged{slot} = vec4<f16>(0.0);");
        } else {
            let _ = writeln!(w, "{indent}staged{slot} = vec4<f16>(0.0);");
        }
        let _ = writeln!(
            w,
            "{indent}if ({first} + (local + {offset}u) / {width4}u < {limit}) {{
{indent}    staged{slot} = {source}[({base} + {first} + (local + {offset}u) / {width4}u) * {width4}u + (local + {offset}u) % {width4}u];
{indent}}}",
            limit = operand.limit,
            source = operand.source,
            base = operand.base,
        );
    }
}

/// The stores of the registers `staged{first_slot}..` (as [`emit_loads`] filled them) into
/// their operands' regions of `tiles`, moved by `moved` (an expression followed by ` + `, or
/// empty), 4 halves each. Every store writes one half a lane, 8 bytes apart: lanes 16..31 of
/// a subgroup write their second pair first, so that the two halves of the subgroup fall on
/// even and odd banks (one pass each store, not two).
pub(crate) fn emit_stores(
    w: &mut String,
    indent: &str,
    items: &[(&Staged, u32)],
    first_slot: usize,
    moved: &str,
) {
    for (index, (operand, offset)) in items.iter().enumerate() {
        let slot = first_slot + index;
        let width4 = operand.width / 4;
        let _ = writeln!(
            w,
            "{indent}{{
{indent}    let at = {moved}{region}u + ((local + {offset}u) / {width4}u) * {row_length}u + ((local + {offset}u) % {width4}u) * 4u;
{indent}    let swapped = (local & 16u) != 0u;
{indent}    let flip = select(0u, 2u, swapped);
{indent}    let first = select(staged{slot}.xy, staged{slot}.zw, swapped);
{indent}    let second = select(staged{slot}.zw, staged{slot}.xy, swapped);
{indent}    tiles[at + flip] = first.x;
{indent}    tiles[at + flip + 1u] = first.y;
{indent}    tiles[at + 2u - flip] = second.x;
{indent}    tiles[at + 3u - flip] = second.y;
{indent}}}",
            region = operand.region,
            row_length = operand.row_length,
        );
    }
}

/// Stage `operands` with all `threads` invocations: every invocation issues up to
/// [`LOADS_IN_FLIGHT`] 16-byte loads, then stores them (4 halves each), and so on.
pub(crate) fn stage(w: &mut String, indent: &str, operands: &[Staged], threads: u32) {
    let items = staged_items(operands, threads);
    for batch in items.chunks(LOADS_IN_FLIGHT) {
        let _ = writeln!(w, "{indent}{{");
        let inner = format!("{indent}    ");
        emit_loads(w, &inner, batch, 0, operands[0].first, true);
        emit_stores(w, &inner, batch, 0, "");
        let _ = writeln!(w, "{indent}}}");
    }
}

/// Stage columns `[column, column + operand.width)` of `operand`'s rows, whose source rows are
/// `source_width` halves long, with all `threads` invocations in a plain loop (for operands
/// staged once, before a walk, so that a block wider than its region passes through it in
/// parts): rows `operand.row_length` halves apart from its region, zeros from its limit on.
pub(crate) fn stage_columns(
    w: &mut String,
    operand: &Staged,
    source_width: u32,
    column: u32,
    threads: u32,
) {
    let width4 = operand.width / 4;
    let _ = writeln!(
        w,
        "    for (var vector = local; vector < {vectors}u; vector += {threads}u) {{
        let row = vector / {width4}u;
        let column = vector % {width4}u;
        var value = vec4<f16>(0.0);
        if ({first} + row < {limit}) {{
            value = {source}[({base} + {first} + row) * {source4}u + {column4}u + column];
        }}
        let at = {region}u + row * {row_length}u + column * 4u;
        tiles[at] = value.x;
        tiles[at + 1u] = value.y;
        tiles[at + 2u] = value.z;
        tiles[at + 3u] = value.w;
    }}",
        vectors = operand.rows * width4,
        first = operand.first,
        limit = operand.limit,
        source = operand.source,
        base = operand.base,
        source4 = source_width / 4,
        column4 = column / 4,
        region = operand.region,
        row_length = operand.row_length,
    );
}
