//! Packing of kernel parameters. Kernels read sizes, offsets and strides as 32-bit words from
//! binding 0 (see `shaders/common.wgsl`). GPU indexing is 32-bit: every position must fit in a
//! `u32`, which the buffer-size limit (at most 4 GiB, 4-byte elements) already guarantees for
//! valid views; `words` checks it anyway so a bad layout becomes an error, not a wrong read.

use crate::error::{Error, Result};
use crate::layout::Layout;

/// A growing list of parameter words.
#[derive(Debug, Default)]
pub(crate) struct Params {
    words: Vec<u32>,
}

impl Params {
    pub(crate) fn new() -> Params {
        Params::default()
    }

    /// Append one value, refusing values that do not fit in 32 bits.
    pub(crate) fn push(&mut self, value: usize) -> Result<&mut Params> {
        let word = u32::try_from(value).map_err(|_| Error::InvalidArgument {
            op: "gpu kernel",
            message: format!("size or stride {value} does not fit the GPU's 32-bit indexing"),
        })?;
        self.words.push(word);
        Ok(self)
    }

    /// Append raw bits (scalars, keys).
    pub(crate) fn push_bits(&mut self, bits: u32) -> &mut Params {
        self.words.push(bits);
        self
    }

    /// Append every value of a slice.
    pub(crate) fn extend(&mut self, values: &[usize]) -> Result<&mut Params> {
        for &value in values {
            self.push(value)?;
        }
        Ok(self)
    }

    /// Append a view as `offset, strides[rank]` (the shape is written once by the caller).
    pub(crate) fn view(&mut self, layout: &Layout) -> Result<&mut Params> {
        self.push(layout.offset)?;
        self.extend(&layout.strides)
    }

    pub(crate) fn words(&self) -> &[u32] {
        &self.words
    }
}

/// True when the view can be read as `offset + i` (row-major, no gaps).
pub(crate) fn is_dense(layout: &Layout) -> bool {
    layout.is_contiguous()
}

/// The view check both backends share (see `backend/checks.rs`).
pub(crate) use crate::backend::checks::check_view;
