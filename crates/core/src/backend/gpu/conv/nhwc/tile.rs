//! The output tiles of the channels-last forward convolution (`conv/nhwc.rs`): their pixels,
//! channels, k-block depth and workgroup memory, and the subgroup layout the generator
//! follows (eight subgroups; 64 pixels a subgroup, 48 in the 96-pixel tiles).

use super::K_BLOCK;

/// The output tile of one workgroup: pixels x output channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NhwcTile {
    /// 256 pixels x 64 channels (subgroups 4 high, 2 wide).
    Rows256Columns64,
    /// 128 pixels x 128 channels (subgroups 2 high, 4 wide).
    Rows128Columns128,
    /// 128 pixels x 64 channels (subgroups 2 high, 4 wide).
    Rows128Columns64,
    /// 128 x 128 as [`NhwcTile::Rows128Columns128`], K walked in blocks of 64 instead of 32:
    /// half the barriers, twice the loads in flight a block (on the H200 3-10% faster than
    /// the 32-deep tile on ResNet-18's 3x3 layers of 128 to 512 channels).
    Rows128Columns128Deep,
    /// 96 pixels x 128 channels (subgroups 2 high, 4 wide; 48 x 32 each).
    Rows96Columns128,
    /// 96 x 128 as [`NhwcTile::Rows96Columns128`], K walked in blocks of 64.
    Rows96Columns128Deep,
}

impl NhwcTile {
    /// Every tile.
    pub const ALL: [NhwcTile; 6] = [
        NhwcTile::Rows256Columns64,
        NhwcTile::Rows128Columns128,
        NhwcTile::Rows128Columns64,
        NhwcTile::Rows128Columns128Deep,
        NhwcTile::Rows96Columns128,
        NhwcTile::Rows96Columns128Deep,
    ];

    /// Pixels (GEMM rows) of the tile.
    pub fn rows(self) -> usize {
        match self {
            NhwcTile::Rows256Columns64 => 256,
            NhwcTile::Rows128Columns128
            | NhwcTile::Rows128Columns64
            | NhwcTile::Rows128Columns128Deep => 128,
            NhwcTile::Rows96Columns128 | NhwcTile::Rows96Columns128Deep => 96,
        }
    }

    /// Pixels one subgroup owns: 64, or 48 in the 96-pixel tiles.
    pub(super) fn subgroup_rows(self) -> usize {
        match self {
            NhwcTile::Rows96Columns128 | NhwcTile::Rows96Columns128Deep => 48,
            NhwcTile::Rows256Columns64
            | NhwcTile::Rows128Columns128
            | NhwcTile::Rows128Columns64
            | NhwcTile::Rows128Columns128Deep => 64,
        }
    }

    /// Output channels (GEMM columns) of the tile.
    pub fn columns(self) -> usize {
        match self {
            NhwcTile::Rows128Columns128
            | NhwcTile::Rows128Columns128Deep
            | NhwcTile::Rows96Columns128
            | NhwcTile::Rows96Columns128Deep => 128,
            NhwcTile::Rows256Columns64 | NhwcTile::Rows128Columns64 => 64,
        }
    }

    /// Halves of K one block stages: one tap's 32 or 64 channels (or several taps' fewer).
    pub fn k_block(self) -> usize {
        match self {
            NhwcTile::Rows128Columns128Deep | NhwcTile::Rows96Columns128Deep => 2 * K_BLOCK,
            NhwcTile::Rows256Columns64
            | NhwcTile::Rows128Columns128
            | NhwcTile::Rows128Columns64
            | NhwcTile::Rows96Columns128 => K_BLOCK,
        }
    }

    /// Halves in a row of A's staged block (8 of padding).
    pub(super) fn a_row(self) -> usize {
        self.k_block() + 8
    }

    /// A short name for tuning keys.
    pub fn name(self) -> &'static str {
        match self {
            NhwcTile::Rows256Columns64 => "nhwc256x64",
            NhwcTile::Rows128Columns128 => "nhwc128x128",
            NhwcTile::Rows128Columns64 => "nhwc128x64",
            NhwcTile::Rows128Columns128Deep => "nhwc128x128k64",
            NhwcTile::Rows96Columns128 => "nhwc96x128",
            NhwcTile::Rows96Columns128Deep => "nhwc96x128k64",
        }
    }

    /// Halves in a row of B's staged block.
    pub(super) fn b_row(self) -> usize {
        self.columns() + 8
    }

    /// Bytes of workgroup memory: one copy of each block and eight f32 scratch tiles.
    pub fn workgroup_bytes(self) -> u32 {
        let halves = self.rows() * self.a_row() + self.k_block() * self.b_row();
        (2 * halves + 8 * 256 * 4) as u32
    }
}
