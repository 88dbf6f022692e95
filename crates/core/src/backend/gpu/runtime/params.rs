//! Kernel parameters. Binding 0 of every kernel (but users' custom kernels, `custom/`) is
//! `params`, a struct whose Rust and WGSL declarations come from ONE `kernel_params!` list:
//! the macro emits a `#[repr(C)]` bytemuck `Pod` struct of 32-bit fields (the header the host
//! writes) and its `KernelParams::WGSL` text (`struct XParams { ... }` plus the binding), with
//! the same field names, so kernels read `params.m`, never `params[N]`.
//!
//! Variable-rank views (shapes and strides of any rank) follow the header in an optional
//! trailing runtime array, `params.tail: array<u32>`, whose layout the `tail:` line of the
//! declaration documents (for example `shape[rank], offset, strides[rank]`); `strided.wgsl`
//! walks it. The host writes header and tail into one `Params` word list, which the context
//! copies into the submission's parameter arena (`runtime/context.rs`): no allocation beyond the one
//! `Vec` a dispatch had before.
//!
//! GPU indexing is 32-bit: every position must fit in a `u32`, which the buffer-size limit (at
//! most 4 GiB, 4-byte elements) already guarantees for valid views; `word` checks it anyway
//! so a bad layout becomes an error, not a wrong read.

use crate::error::{Error, Result};
use crate::layout::Layout;

/// A growing list of parameter words.
#[derive(Debug, Default)]
pub(crate) struct Params {
    words: Vec<u32>,
}

/// A kernel family's parameter header, declared with `kernel_params!`.
pub(crate) trait KernelParams: bytemuck::Pod {
    /// The WGSL `struct` declaration (same fields, same order, plus `tail` where declared) and
    /// binding 0, `var<storage, read> params`, of that type.
    const WGSL: &'static str;
}

/// Declare a kernel family's parameter header once: a `#[repr(C)]` bytemuck struct of `u32`,
/// `i32` or `f32` fields for the host, and `KernelParams::WGSL`, its WGSL declaration with the
/// same names. An optional `tail: "layout";` line after the fields adds the trailing runtime
/// array `tail: array<u32>` (variable-rank shapes and strides) and documents its layout:
///
/// ```text
/// kernel_params! {
///     /// Header of the strided unary kernel.
///     struct UnaryParams {
///         /// Elements to write.
///         numel: u32,
///         rank: u32,
///     }
///     tail: "shape[rank], offset, strides[rank]";
/// }
/// ```
macro_rules! kernel_params {
    (
        $(#[$meta:meta])*
        struct $name:ident {
            $( $(#[doc = $field_doc:literal])* $field:ident : $type:ident ),* $(,)?
        }
        $( tail: $tail:literal; )?
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
        pub(crate) struct $name {
            $( $(#[doc = $field_doc])* pub(crate) $field: $type, )*
        }

        impl $crate::backend::gpu::runtime::params::KernelParams for $name {
            const WGSL: &'static str = concat!(
                "struct ", stringify!($name), " {\n",
                $( "    ", stringify!($field), ": ", stringify!($type), ",\n", )*
                $( "    // ", $tail, "\n    tail: array<u32>,\n", )?
                "}\n@group(0) @binding(0) var<storage, read> params: ",
                stringify!($name),
                ";\n"
            );
        }
    };
}
pub(crate) use kernel_params;

/// `value` as a parameter word, refusing values that do not fit in 32 bits.
pub(crate) fn word(value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::InvalidArgument {
        op: "gpu kernel",
        message: format!("size or stride {value} does not fit the GPU's 32-bit indexing"),
    })
}

impl Params {
    /// Raw words, without a declared header (users' custom kernels read `params[N]`).
    pub(crate) fn new() -> Params {
        Params::default()
    }

    /// Start with a family's header; `tail_words` more words are expected.
    pub(crate) fn with_header<P: KernelParams>(header: &P, tail_words: usize) -> Params {
        let header: &[u32] = bytemuck::cast_slice(std::slice::from_ref(header));
        let mut words = Vec::with_capacity(header.len() + tail_words);
        words.extend_from_slice(header);
        Params { words }
    }

    /// Append one value, refusing values that do not fit in 32 bits.
    pub(crate) fn push(&mut self, value: usize) -> Result<&mut Params> {
        self.words.push(word(value)?);
        Ok(self)
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

#[cfg(test)]
mod tests {
    use super::*;

    kernel_params! {
        /// A header with one field of each type and a tail.
        struct SampleParams {
            /// First word.
            first: u32,
            second: i32,
            third: f32,
        }
        tail: "values[first]";
    }

    kernel_params! {
        /// A header without a tail.
        struct PlainParams {
            only: u32,
        }
    }

    /// The host words follow the declaration's order, and the WGSL declares the same fields.
    #[test]
    fn header_words_and_wgsl_follow_the_declaration() {
        let header = SampleParams {
            first: 7,
            second: -1,
            third: 1.5,
        };
        let mut params = Params::with_header(&header, 1);
        params.push(9).unwrap();
        assert_eq!(params.words(), &[7, u32::MAX, 1.5f32.to_bits(), 9]);
        assert_eq!(
            SampleParams::WGSL,
            "struct SampleParams {\n    first: u32,\n    second: i32,\n    third: f32,\n    \
             // values[first]\n    tail: array<u32>,\n}\n\
             @group(0) @binding(0) var<storage, read> params: SampleParams;\n"
        );
        let plain = Params::with_header(&PlainParams { only: 3 }, 0);
        assert_eq!(plain.words(), &[3]);
        assert_eq!(
            PlainParams::WGSL,
            "struct PlainParams {\n    only: u32,\n}\n\
             @group(0) @binding(0) var<storage, read> params: PlainParams;\n"
        );
    }

    /// Sizes beyond the GPU's 32-bit indexing are errors, not wrapped words.
    #[test]
    fn values_beyond_32_bits_are_refused() {
        assert_eq!(word(5).unwrap(), 5);
        assert!(word(u32::MAX as usize + 1).is_err());
        assert!(Params::new().push(u32::MAX as usize + 1).is_err());
    }
}
