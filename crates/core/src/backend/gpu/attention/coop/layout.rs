//! The workgroup-memory layout of the cooperative attention forward
//! (`attention/coop/source.rs` generates it): how many keys a staged tile holds, in how many
//! column parts the block's queries pass into registers, where Q, K, V and P live in `tiles`,
//! the scratch rows, and how many bytes a workgroup takes. The H200 runs two workgroups on a
//! multiprocessor only where each takes at most 23 KiB (one above: a four-subgroup forward
//! took 113.0 µs at 23,552 bytes and 177.6–179.0 at 27,552 to 47,552, padded in an
//! uncommitted build; docs/PERFORMANCE.md, 2026-12-04), so the layout is sized for
//! that.

use crate::backend::gpu::attention::coop::source::CoopForward;
use crate::backend::gpu::attention::coop::staging::LOADS_IN_FLIGHT;

/// Keys (and values) per staged tile where sixteen do not apply ([`key_tile`]).
pub(crate) const KEY_TILE: u32 = 32;

/// Keys (and values) per staged tile of `key`: 16 where the invocations share a 16-row tile's
/// 16-byte loads evenly (every layout on tensor cores at the common head sizes), else
/// [`KEY_TILE`]. Sixteen keys take about half the workgroup memory (K, V, P and the scratch
/// all shrink), and the H200 runs two workgroups on a multiprocessor only where a workgroup
/// takes at most 23 KiB: the eight-subgroup forward at d = 64 took 93.5 µs with 16-key tiles
/// (21 KiB) against 105.4 with 32 (46 KiB), at 8 x 12 x 512 x 64 (docs/PERFORMANCE.md,
/// 2026-12-04).
pub(crate) fn key_tile(key: &CoopForward) -> u32 {
    let even = |width: u32| (16 * width / 4).is_multiple_of(key.threads());
    if even(key.head_dim) && even(key.value_dim) {
        16
    } else {
        KEY_TILE
    }
}

/// How many column parts of 32 the block's queries are staged in, one after the other,
/// on their way into registers: on tensor cores with 16-key tiles, whose K, V and P regions
/// are smaller than the block's queries (eight subgroups at d = 64: 10,752 bytes against
/// 18,432); else 1 (the emulation keeps Q in a region of its own).
pub(crate) fn query_parts(key: &CoopForward) -> u32 {
    let whole = key.block_rows() * (key.head_dim + 8);
    if key.emulated || whole <= walk_halves(key) || !key.head_dim.is_multiple_of(32) {
        1
    } else {
        key.head_dim / 32
    }
}

/// The region offsets (halves) in `tiles`: Q, K, V, P, and the total. Q is staged once and
/// its fragments loaded into registers before the walk, so on tensor cores it shares its
/// space with K and V (less workgroup memory: more workgroups on a multiprocessor); the
/// emulation's fragments are addresses into `tiles`, so there Q keeps a region of its own.
pub(crate) struct Regions {
    pub(crate) query_row: u32,
    pub(crate) key_row: u32,
    pub(crate) value_row: u32,
    pub(crate) probability_row: u32,
    pub(crate) key: u32,
    pub(crate) value: u32,
    pub(crate) probability: u32,
    pub(crate) total: u32,
    /// Halves from the first K/V buffer to the second (0 with one buffer).
    pub(crate) buffer: u32,
    /// The walk's expression (with ` + `) that moves K/V fragment starts into the current
    /// buffer: `kv + ` with two buffers, else empty.
    pub(crate) moved: &'static str,
}

/// Halves of the walk's regions: K and V (in one or two buffers), then P.
fn walk_halves(key: &CoopForward) -> u32 {
    let tile = key_tile(key);
    let buffers = if double_buffer_applies(key) { 2 } else { 1 };
    buffers * tile * (key.head_dim + key.value_dim + 16) + key.block_rows() * (tile + 8)
}

/// The regions of `key`.
pub(crate) fn regions(key: &CoopForward) -> Regions {
    let tile = key_tile(key);
    let walk = walk_halves(key);
    let buffers = if double_buffer_applies(key) { 2 } else { 1 };
    let (head_dim, value_dim, emulated) = (key.head_dim, key.value_dim, key.emulated);
    let block_rows = key.block_rows();
    let query_row = head_dim / query_parts(key) + 8;
    let key_row = head_dim + 8;
    let value_row = value_dim + 8;
    let probability_row = tile + 8;
    let key = if emulated { block_rows * query_row } else { 0 };
    let value = key + tile * key_row;
    let buffer = if buffers == 2 {
        tile * (key_row + value_row)
    } else {
        0
    };
    // P follows K and V; on tensor cores Q (loaded into registers before the walk) shares
    // the space of all three.
    let probability = key + buffers * tile * (key_row + value_row);
    let total = (key + walk).max(block_rows * query_row);
    Regions {
        query_row,
        key_row,
        value_row,
        probability_row,
        key,
        value,
        probability,
        total,
        buffer,
        moved: if buffers == 2 { "kv + " } else { "" },
    }
}

/// Whether `key` stages K and V in two buffers: asked for, and the next tile's loads stay in
/// registers ([`prefetches`]).
pub(crate) fn double_buffer_applies(key: &CoopForward) -> bool {
    key.double_buffered && prefetches(key)
}

/// Whether an invocation's share of a key tile fits its registers, so that the next tile's
/// loads are issued while the current tile is multiplied out.
pub(crate) fn prefetches(key: &CoopForward) -> bool {
    tile_loads(key) <= LOADS_IN_FLIGHT
}

/// 16-byte loads an invocation issues to stage one K and V tile.
fn tile_loads(key: &CoopForward) -> usize {
    let vectors = key_tile(key) * (key.head_dim + key.value_dim) / 4;
    vectors.div_ceil(key.threads()) as usize
}

/// Row length (f32) of the scratch tiles: the key tile plus 4, so that the 16 rows the lanes
/// of a subgroup read at once start on different banks (a multiple of 16 bytes, as
/// cooperative stores want).
pub(crate) fn scratch_row(key: &CoopForward) -> u32 {
    key_tile(key) + 4
}

/// f32 values of the scratch: one 16 x [`scratch_row`] tile per subgroup.
pub(crate) fn scratch_length(key: &CoopForward) -> u32 {
    key.subgroups * 16 * scratch_row(key)
}

/// Bytes of workgroup memory one workgroup of `key` uses.
pub(crate) fn workgroup_bytes(key: &CoopForward) -> u32 {
    let buffers = if double_buffer_applies(key) { 2 } else { 1 };
    let bias = if key.key_bias {
        4 * key_tile(key) * buffers
    } else {
        0
    };
    2 * regions(key).total + 4 * scratch_length(key) + bias
}
