//! The convolution epilogue on the GPU: `activation(value * scale[channel] + shift[channel] +
//! residual)` applied by the forward convolution kernels in their store, so that an
//! eval-mode batch norm, its ReLU and a ResNet block's residual add cost no pass over memory of
//! their own (`Convolution::conv2d_epilogue`; the CPU's reference is
//! `cpu/conv_epilogue.rs`).
//!
//! Which kernels carry it: the implicit GEMM (`conv/direct.rs`, both tiles; `store_nchw` in
//! `conv/gemm.rs`), Winograd's output transform (`conv/winograd.rs`), the channels-last
//! tensor-core forward (`conv/nhwc.rs`, bindings from 4) and the patch kernel. A kernel with an
//! epilogue is its own instantiation ([`ConvEpilogueKey`] in its `ConvKernel`): the tensors are
//! three more bindings after the kernel's own — `epilogue_scale` and `epilogue_shift` (f32,
//! one per output channel) and, with `residual`, `epilogue_residual` (the storage type, the
//! output's layout) — and each store calls `conv_epilogue(value, channel, position)`. A kernel
//! without one is generated exactly as before. Every read is clamped to its buffer, so the
//! kernels stay safe without wgpu's runtime checks; the host makes the tensors dense at offset
//! 0 (a copy only when they are views).
//!
//! The older cooperative-matrix convolutions (`conv/coop.rs`) carry it in their forward's
//! store too (bindings from 4); for fused 1x1 convolutions they are a tuning candidate wherever
//! tensor cores run (`conv/tuning.rs`).

use std::fmt::Write;

use crate::backend::checks::check_epilogue;
use crate::backend::contract::Epilogue;
use crate::backend::gpu::conv::nhwc as conv_nhwc;
use crate::backend::gpu::runtime::storage::{GpuStorage, StorageRef};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::{Layout, MemoryFormat};
use crate::op::EpilogueActivation;

/// The structure of an epilogue (its tensors are bound at dispatch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvEpilogueKey {
    /// A residual tensor is added after the shift.
    pub residual: bool,
    /// Applied last.
    pub activation: EpilogueActivation,
}

impl ConvEpilogueKey {
    /// Every epilogue (the naga catalogue).
    pub(crate) fn all() -> Vec<ConvEpilogueKey> {
        let mut keys = Vec::new();
        for residual in [false, true] {
            for activation in EpilogueActivation::ALL {
                keys.push(ConvEpilogueKey {
                    residual,
                    activation,
                });
            }
        }
        keys
    }

    /// A short name for tuning keys and kernel labels: `affine`, `affine+residual`, with
    /// `-relu` when it has one.
    pub(crate) fn name(self) -> String {
        let mut name = String::from(if self.residual {
            "affine+residual"
        } else {
            "affine"
        });
        match self.activation {
            EpilogueActivation::Identity => {}
            EpilogueActivation::Relu => name.push_str("-relu"),
        }
        name
    }

    /// Bindings used: scale, shift and the residual.
    fn bindings(self) -> u32 {
        if self.residual {
            3
        } else {
            2
        }
    }
}

/// The WGSL of `epilogue` (nothing for `None`): its bindings from `first_binding` on and
/// `fn conv_epilogue(value: f32, channel: u32, position: u32) -> f32`. Needs `S` (the storage
/// type) and `is_nan_value` (`value_header`).
pub(crate) fn declarations(epilogue: Option<ConvEpilogueKey>, first_binding: u32) -> String {
    declarations_for(epilogue, first_binding, false)
}

/// [`declarations`] for f16 kernels that store 8 consecutive outputs at once (8-aligned, the
/// residual dense from offset 0 as [`BoundEpilogue`] binds it): the residual is bound as
/// `array<mat2x4<f16>>` and read 8 values at a time by [`packed_residual`], and the function
/// is `fn conv_epilogue(value: f32, channel: u32, residual: f32) -> f32` ([`finish_packed`]).
pub(crate) fn declarations_packed(epilogue: Option<ConvEpilogueKey>, first_binding: u32) -> String {
    declarations_for(epilogue, first_binding, true)
}

/// The statement that loads the residual's 8 values from `position` (8-aligned) into
/// `residual8` for [`finish_packed`]; `None` where the epilogue has no residual.
pub(crate) fn packed_residual(epilogue: Option<ConvEpilogueKey>, position: &str) -> Option<String> {
    packed_residual_named(epilogue, "residual8", position)
}

/// [`packed_residual`] into the variable `name`: a kernel loads a row of accumulators'
/// residuals together before their stores (one wait on memory instead of one a store).
pub(crate) fn packed_residual_named(
    epilogue: Option<ConvEpilogueKey>,
    name: &str,
    position: &str,
) -> Option<String> {
    epilogue.filter(|key| key.residual).map(|_| {
        format!(
            "let {name} = epilogue_residual[min(({position}) / 8u, arrayLength(&epilogue_residual) - 1u)];"
        )
    })
}

/// The value a packed store writes at `index` (< 8) of its 8: `value` itself, or
/// `conv_epilogue(value, channel, residual)` with the residual's value from `residual8`.
pub(crate) fn finish_packed(
    epilogue: Option<ConvEpilogueKey>,
    value: &str,
    channel: &str,
    index: usize,
) -> String {
    match epilogue {
        None => value.to_string(),
        Some(key) if key.residual => format!(
            "conv_epilogue({value}, {channel}, f32(residual8[{}][{}]))",
            index / 4,
            index % 4
        ),
        Some(_) => format!("conv_epilogue({value}, {channel}, 0.0)"),
    }
}

fn declarations_for(epilogue: Option<ConvEpilogueKey>, first_binding: u32, packed: bool) -> String {
    let Some(key) = epilogue else {
        return String::new();
    };
    let mut w = String::new();
    let b = first_binding;
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "@group(0) @binding({b}) var<storage, read> epilogue_scale: array<f32>;
@group(0) @binding({}) var<storage, read> epilogue_shift: array<f32>;",
        b + 1
    );
    if key.residual {
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, read> epilogue_residual: array<{}>;",
            b + 2,
            if packed { "mat2x4<f16>" } else { "S" }
        );
    }
    let _ = writeln!(
        w,
        "
fn conv_epilogue(value: f32, channel: u32, {}: {}) -> f32 {{
    let scale = epilogue_scale[min(channel, arrayLength(&epilogue_scale) - 1u)];
    let shift = epilogue_shift[min(channel, arrayLength(&epilogue_shift) - 1u)];
    var result = value * scale + shift;",
        if packed { "residual" } else { "position" },
        if packed { "f32" } else { "u32" }
    );
    if key.residual && packed {
        let _ = writeln!(w, "    result = result + residual;");
    } else if key.residual {
        let _ = writeln!(
            w,
            "    result = result + f32(epilogue_residual[min(position, arrayLength(&epilogue_residual) - 1u)]);"
        );
    }
    match key.activation {
        EpilogueActivation::Identity => {}
        // NaN passes through, as `UnaryOp::Relu`'s kernel.
        EpilogueActivation::Relu => {
            let _ = writeln!(
                w,
                "    result = select(max(result, 0.0), result, is_nan_value(result));"
            );
        }
    }
    let _ = writeln!(w, "    return result;\n}}");
    w
}

/// The value a store writes: `value` itself, or `conv_epilogue(value, channel, position)`.
pub(crate) fn finish(
    epilogue: Option<ConvEpilogueKey>,
    value: &str,
    channel: &str,
    position: &str,
) -> String {
    match epilogue {
        None => value.to_string(),
        Some(_) => format!("conv_epilogue({value}, {channel}, {position})"),
    }
}

/// A tensor of the epilogue as a kernel binds it: the storage itself when its view is dense
/// from offset 0, a dense copy otherwise.
fn dense<'a>(storage: &'a GpuStorage, layout: &Layout) -> Result<StorageRef<'a>> {
    let mut copy = None;
    storage.dense_from_start(layout, &mut copy)?;
    Ok(match copy {
        Some(copy) => StorageRef::Copied(copy),
        None => StorageRef::Borrowed(storage),
    })
}

/// [`dense`] in `format`: a residual added to a channels-last output is read channels-last
/// (as the channels-last kernels read their inputs, `conv_nhwc::channels_last_input`).
fn dense_in<'a>(
    storage: &'a GpuStorage,
    layout: &Layout,
    format: MemoryFormat,
) -> Result<StorageRef<'a>> {
    match (format, layout.shape.get(1)) {
        (MemoryFormat::ChannelsLast, Some(&channels)) => {
            conv_nhwc::channels_last_input(storage, layout, channels)
        }
        (MemoryFormat::ChannelsLast | MemoryFormat::Contiguous, _) => dense(storage, layout),
    }
}

/// An epilogue checked and ready to bind.
pub(crate) struct BoundEpilogue<'a> {
    /// Its structure (part of the kernel key).
    pub(crate) key: ConvEpilogueKey,
    scale: StorageRef<'a>,
    shift: StorageRef<'a>,
    residual: Option<StorageRef<'a>>,
}

impl<'a> BoundEpilogue<'a> {
    /// Check `epilogue` against the output `[n, o, oh, ow]` of dtype `dtype` and make its
    /// tensors bindable (the residual dense row-major).
    pub(crate) fn new(
        op: &'static str,
        epilogue: &Epilogue<'a, GpuStorage>,
        output_shape: &[usize; 4],
        dtype: DType,
    ) -> Result<BoundEpilogue<'a>> {
        Self::new_in(op, epilogue, output_shape, dtype, MemoryFormat::Contiguous)
    }

    /// [`BoundEpilogue::new`] for an output written in `format`: the residual is bound dense
    /// in that format (the kernel reads it at the position it writes).
    pub(crate) fn new_in(
        op: &'static str,
        epilogue: &Epilogue<'a, GpuStorage>,
        output_shape: &[usize; 4],
        dtype: DType,
        format: MemoryFormat,
    ) -> Result<BoundEpilogue<'a>> {
        fn describe<'b>(
            (storage, layout): (&GpuStorage, &'b Layout),
        ) -> (&'b Layout, DType, usize) {
            (layout, storage.dtype, storage.len)
        }
        check_epilogue(
            op,
            output_shape,
            dtype,
            describe(epilogue.scale),
            describe(epilogue.shift),
            epilogue.residual.map(describe),
        )?;
        Ok(BoundEpilogue {
            key: ConvEpilogueKey {
                residual: epilogue.residual.is_some(),
                activation: epilogue.activation,
            },
            scale: dense(epilogue.scale.0, epilogue.scale.1)?,
            shift: dense(epilogue.shift.0, epilogue.shift.1)?,
            residual: epilogue
                .residual
                .map(|(storage, layout)| dense_in(storage, layout, format))
                .transpose()?,
        })
    }

    /// The buffers to bind after the kernel's own, in the order of [`declarations`].
    pub(crate) fn buffers(&self) -> Result<Vec<&wgpu::Buffer>> {
        let mut buffers = Vec::with_capacity(self.key.bindings() as usize);
        buffers.push(self.scale.raw()?);
        buffers.push(self.shift.raw()?);
        if let Some(residual) = &self.residual {
            buffers.push(residual.raw()?);
        }
        Ok(buffers)
    }
}

#[cfg(test)]
mod tests;
