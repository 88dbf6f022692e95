//! How the channels-last tensor-core kernels (`conv/nhwc.rs`, `conv/nhwc/patch.rs`) write
//! their output: row-major planes (one value or 16 bytes a store) or channels-last pixels
//! (`MemoryFormat::ChannelsLast`: a lane's 8 channels of one pixel as one 16-byte store, the
//! residual read the same way), through the convolution epilogue (`conv/epilogue.rs`).

use super::Writer;
use crate::backend::gpu::conv::epilogue::{self as conv_epilogue, ConvEpilogueKey};
use crate::layout::MemoryFormat;

/// How a channels-last kernel (`conv/nhwc.rs`, `conv/nhwc/patch.rs`) writes its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStore {
    /// Row-major `[n, o, oh, ow]`: each lane writes its 8 pixels of a channel as 8 stores,
    /// each checked.
    Planes,
    /// Row-major, the pixel runs (planes, or rows for the patch kernel) multiples of 8: each
    /// lane's 8 pixels of a channel as one 16-byte store.
    PlanesPacked,
    /// Channels-last `[n, oh, ow, o]` (`MemoryFormat::ChannelsLast`): each lane's 8 channels
    /// of a pixel as one 16-byte store (output channels are multiples of 64).
    ChannelsLast,
}

impl OutputStore {
    /// Every store (the naga catalogue).
    pub const ALL: [OutputStore; 3] = [
        OutputStore::Planes,
        OutputStore::PlanesPacked,
        OutputStore::ChannelsLast,
    ];

    /// The store of an output in `format` whose row-major pixel runs are multiples of 8 where
    /// `aligned`.
    pub(crate) fn of(format: MemoryFormat, aligned: bool) -> OutputStore {
        match format {
            MemoryFormat::ChannelsLast => OutputStore::ChannelsLast,
            MemoryFormat::Contiguous if aligned => OutputStore::PlanesPacked,
            MemoryFormat::Contiguous => OutputStore::Planes,
        }
    }

    /// Whether each lane writes 16 bytes at once (the result and residual bound as
    /// `mat2x4<f16>`, `conv_epilogue::declarations_packed`).
    pub(crate) fn packed(self) -> bool {
        match self {
            OutputStore::Planes => false,
            OutputStore::PlanesPacked | OutputStore::ChannelsLast => true,
        }
    }

    /// The WGSL element type of the result binding.
    pub(crate) fn result_type(self) -> &'static str {
        if self.packed() {
            "mat2x4<f16>"
        } else {
            "f16"
        }
    }

    /// The epilogue's declarations for this store (bindings from 4).
    pub(crate) fn epilogue_declarations(self, epilogue: Option<ConvEpilogueKey>) -> String {
        if self.packed() {
            conv_epilogue::declarations_packed(epilogue, 4)
        } else {
            conv_epilogue::declarations(epilogue, 4)
        }
    }
}

/// The statement that writes `value` (f32, channel `channel`) to the row-major `result` at
/// element `position`, through the epilogue when `epilogue` is some; `indent` deep.
pub(crate) fn planes_store(w: &mut Writer, indent: usize, epilogue: Option<ConvEpilogueKey>) {
    w.line(
        indent,
        &format!(
            "result[min(position, arrayLength(&result) - 1u)] = f16({});",
            conv_epilogue::finish(epilogue, "value", "channel", "position")
        ),
    );
}

/// The name of the residual vector [`preload_row_residuals`] loads for accumulator row
/// `row`, column fragment `fragment`.
pub(crate) fn preloaded_residual(row: usize, fragment: usize) -> String {
    format!("residual_{row}_{fragment}")
}

/// The loads of one row of accumulators' residuals, ahead of the row's channels-last stores
/// (one wait on memory a row instead of one a store): for each of the row's `fragments`
/// column fragments, lane `lane`'s 8 channels `first_channel + 16 fragment + (lane % 2) * 8`
/// of the output pixel whose index (image, row and column flattened) is `pixel`. The loads
/// are clamped to the buffer; the caller stores only real pixels. Nothing without a residual.
pub(crate) fn preload_row_residuals(
    w: &mut Writer,
    epilogue: Option<ConvEpilogueKey>,
    (row, fragments): (usize, usize),
    pixel: &str,
    first_channel: &str,
) {
    for fragment in 0..fragments {
        let position = format!(
            "{pixel} * out_channels + {first_channel} + {}u + lane_channel",
            fragment * 16
        );
        let name = preloaded_residual(row, fragment);
        if let Some(load) = conv_epilogue::packed_residual_named(epilogue, &name, &position) {
            w.line(1, &load);
        }
    }
}

/// The statements that write lane `lane`'s 8 channels `channel ..+ 8` of one pixel to the
/// channels-last `result` at element `position` (8-aligned), taking value `r` from
/// `scratch[{value_at} + r]`, through the epilogue when `epilogue` is some; `indent` deep.
/// `preloaded` names the residual vector where the kernel loaded it ahead (the residual is
/// loaded here otherwise).
pub(crate) fn channels_last_store(
    w: &mut Writer,
    indent: usize,
    epilogue: Option<ConvEpilogueKey>,
    value_at: &str,
    preloaded: Option<&str>,
) {
    w.line(indent, "var packed: mat2x4<f16>;");
    match preloaded {
        Some(name) if epilogue.is_some_and(|key| key.residual) => {
            w.line(indent, &format!("let residual8 = {name};"));
        }
        _ => {
            if let Some(load) = conv_epilogue::packed_residual(epilogue, "position") {
                w.line(indent, &load);
            }
        }
    }
    for r in 0..8 {
        let value = format!("scratch[{value_at} + {r}u]");
        let channel = format!("channel + {r}u");
        w.line(
            indent,
            &format!(
                "packed[{}][{}] = f16({});",
                r / 4,
                r % 4,
                conv_epilogue::finish_packed(epilogue, &value, &channel, r)
            ),
        );
    }
    w.line(
        indent,
        "result[min(position / 8u, arrayLength(&result) - 1u)] = packed;",
    );
}
