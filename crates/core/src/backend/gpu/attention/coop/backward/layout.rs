//! The workgroup-memory layout of the cooperative attention backward kernels
//! (`attention/coop/backward/source.rs` generates them): where each operand, P, dS and the
//! scratch live in `tiles`, how many bytes a workgroup takes, and which layouts keep the
//! block's fragments in registers (the query kernel up to d = 64, and both eight-subgroup
//! kernels).

use crate::backend::gpu::attention::coop::backward::source::{
    CoopBackward, CoopBackwardPass, TILE,
};

/// Halves per row of the P and dS tiles: [`TILE`] plus 8.
pub(crate) const PROBABILITY_ROW: u32 = TILE + 8;

/// Row length (f32) of the scratch tiles: [`TILE`] plus 8. The accumulators' stores then
/// fill every bank once per half subgroup, and the lanes' rotated reads (`k{n}`) fall on 32
/// banks.
pub(crate) const SCRATCH_ROW: u32 = TILE + 8;

/// Row length (f32) of the scratch tiles of the eight-subgroup kernels: [`TILE`]
/// plus 4, so that its workgroup memory fits 48 KiB.
pub(crate) const NARROW_SCRATCH_ROW: u32 = TILE + 4;

/// The region offsets (halves) in `tiles` of one instantiation.
pub(crate) struct Layout {
    /// Halves per row of the operands of width `d` and `dv`.
    pub(crate) first_row: u32,
    pub(crate) second_row: u32,
    /// The block's `d`-wide operand (K or Q) at 0, its `dv`-wide one (V or dO), the tile's
    /// `d`-wide operand (Q or K), its `dv`-wide one (dO or V), P (key-value only), dS.
    pub(crate) block_second: u32,
    pub(crate) tile_first: u32,
    pub(crate) tile_second: u32,
    pub(crate) probability: u32,
    pub(crate) gradient: u32,
    pub(crate) total: u32,
    /// Floats per scratch row.
    pub(crate) scratch_row: u32,
    /// The block's two operands are staged one after the other into the same region (at 0)
    /// on their way into registers.
    pub(crate) split_block: bool,
}

/// Whether the block's fragments are loaded into registers once, before the walk, so that
/// the walk's regions reuse the block's workgroup memory (28 KiB instead of 42 at d = 64): in
/// the query kernel on tensor cores for widths up to 64, and in both eight-subgroup kernels
/// ([`eight_subgroups`]). H200, 8 x 12 x 512 x 64: query kernel 148.3 → 142.2–142.8 µs in one
/// call (146.9 in a later one, against 147.7–151.3 in earlier calls without it); the
/// four-subgroup key-value kernel, whose 16 accumulators sit beside the fragments, went
/// 205.9 → 230.9 the same way, so it keeps its block in workgroup memory
/// (docs/PERFORMANCE.md). The emulation's fragments are
/// addresses into the block, which stays.
pub(crate) fn block_in_registers(key: &CoopBackward) -> bool {
    let layout_allows = if key.subgroups == 8 {
        eight_subgroups(key)
    } else {
        key.pass == CoopBackwardPass::Query
    };
    !key.emulated && layout_allows && key.head_dim <= 64 && key.value_dim <= 64
}

/// Whether `key` is an eight-subgroup kernel on tensor cores: 128 owned rows a workgroup, the
/// block's fragments in registers (loaded one operand at a time through the walk's space),
/// 36-float scratch rows: 48,384 bytes at d = dv = 64 in the key-value kernel, 37,888 in the
/// query kernel (38,016 with a key bias). Each staged tile serves twice the rows of the
/// four-subgroup kernels, and 8 warps share a multiprocessor instead of 4 (the H200 runs one
/// workgroup of more than about 25 KiB per multiprocessor). Widths are multiples of 32 up to 64, so that the 256
/// invocations share a 32-row tile's loads evenly and the block fits the registers.
pub(crate) fn eight_subgroups(key: &CoopBackward) -> bool {
    key.subgroups == 8
        && !key.emulated
        && key.head_dim <= 64
        && key.value_dim <= 64
        && key.head_dim.is_multiple_of(32)
        && key.value_dim.is_multiple_of(32)
}

pub(crate) fn layout(key: &CoopBackward) -> Layout {
    let (pass, head_dim, value_dim) = (key.pass, key.head_dim, key.value_dim);
    let rows = 16 * key.subgroups;
    let first_row = head_dim + 8;
    let second_row = value_dim + 8;
    let split_block = block_in_registers(key) && key.subgroups == 8;
    let (block_second, block_end) = if split_block {
        (0, rows * first_row.max(second_row))
    } else {
        (rows * first_row, rows * (first_row + second_row))
    };
    let tile_first = if block_in_registers(key) {
        0
    } else {
        block_end
    };
    let tile_second = tile_first + TILE * first_row;
    let probability = tile_second + TILE * second_row;
    let gradient = match pass {
        CoopBackwardPass::KeyValue => probability + rows * PROBABILITY_ROW,
        CoopBackwardPass::Query => probability,
    };
    Layout {
        first_row,
        second_row,
        block_second,
        tile_first,
        tile_second,
        probability,
        gradient,
        total: (gradient + rows * PROBABILITY_ROW).max(block_end),
        scratch_row: if split_block {
            NARROW_SCRATCH_ROW
        } else {
            SCRATCH_ROW
        },
        split_block,
    }
}

impl CoopBackward {
    /// Rows a workgroup owns: 16 per subgroup.
    pub(crate) fn block_rows(&self) -> u32 {
        16 * self.subgroups
    }

    /// Invocations per workgroup.
    pub(crate) fn threads(&self) -> u32 {
        32 * self.subgroups
    }
}

/// Bytes of workgroup memory one workgroup of `key` uses.
pub(crate) fn workgroup_bytes(key: &CoopBackward) -> u32 {
    let layout = layout(key);
    let scratch = key.subgroups * 16 * layout.scratch_row;
    let side = match key.pass {
        CoopBackwardPass::KeyValue => 2 * TILE,
        CoopBackwardPass::Query if key.key_bias => TILE,
        CoopBackwardPass::Query => 0,
    };
    2 * layout.total + 4 * (scratch + side)
}
