//! The input gradient of an undilated convolution on the channels-last forward kernels
//! (`conv/nhwc.rs`): a convolution of the output gradient with the weight read transposed
//! and flipped.
//!
//! At stride 1 that is one convolution with padding `k - 1 - p`. At stride `s` the input rows
//! fall into `s` residue classes (phases) `y = s * q + r`, and row `y` only meets the taps
//! `ki` with `ki = (r + p) mod s (mod s)`: every phase is a stride-1 convolution of the
//! gradient with its own sub-kernel (every `s`-th tap from the first such tap), so the
//! strided gradient is `s * s` dense stride-1 products with no zero taps — a 3x3 kernel of
//! stride 2 splits into 1x1, 1x2, 2x1 and 2x2 sub-kernels — each copied into its rows and
//! columns of the gradient. The gradient's channels-last copy is made once for all phases; a
//! phase that meets no tap (a 1x1 kernel of stride 2 reaches only even rows and columns)
//! stays zero. Stride-1 gradients also run on the patch kernel (`patch.rs`, its weight taps
//! read mirrored): [`GpuStorage::conv2d_backward_input_patch`], another tuner candidate.

use super::{gradient_copy, padded_channels, patch, weight_copy, NhwcTile, PatchTile};
use crate::backend::gpu::runtime::operands::same_device;
use crate::backend::gpu::runtime::params::check_view;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

/// One residue class of the input rows (or columns) of a strided convolution's input
/// gradient: rows `residue, residue + s, ...` (`count` of them), reached by the taps
/// `first_tap, first_tap + s, ...` (`taps` of them) of the forward kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Phase {
    residue: usize,
    first_tap: usize,
    taps: usize,
    /// The padding of the phase's stride-1 convolution (over the gradient, flipped taps).
    padding: usize,
    count: usize,
}

/// The phases of one axis: an input of `size` under a kernel of `kernel` taps, `stride`,
/// `padding`. `None` where a phase would need a negative padding (a padding at least the
/// kernel's span; the regular kernels take those).
fn phases(size: usize, kernel: usize, stride: usize, padding: usize) -> Option<Vec<Phase>> {
    (0..stride.min(size))
        .map(|residue| {
            let first_tap = (residue + padding) % stride;
            let taps = if first_tap < kernel {
                (kernel - first_tap).div_ceil(stride)
            } else {
                0
            };
            // Row `s * q + residue` meets gradient row `q + base - t` at tap `first_tap + s * t`.
            let base = (residue + padding - first_tap) / stride;
            let padding = match taps {
                0 => 0,
                _ => (taps - 1).checked_sub(base)?,
            };
            Some(Phase {
                residue,
                first_tap,
                taps,
                padding,
                count: (size - residue).div_ceil(stride),
            })
        })
        .collect()
}

impl GpuStorage {
    /// The input gradient of an undilated convolution on the channels-last kernels: `self` is
    /// the output gradient (`[n, o, oh, ow]`, any strides), `weight` the forward's `[o, c, kh,
    /// kw]`; `Ok(None)` where it does not apply (see the module header; also when
    /// `input_shape` does not give the gradient's shape, or a sub-kernel's grid is empty).
    pub(crate) fn conv2d_backward_input_nhwc(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        input_shape: &[usize],
        (tile, emulated): (NhwcTile, bool),
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d_backward_input (channels-last tensor cores)";
        same_device(OP, self, weight)?;
        let (&[o, c, kh, kw], &[_, go, out_height, out_width], &[batch, ic, height, width]) = (
            weight_layout.shape.as_slice(),
            layout.shape.as_slice(),
            input_shape,
        ) else {
            return Ok(None);
        };
        let transposed = [c, o, kh, kw];
        if params.dilation != (1, 1)
            || go != o
            || ic != c
            || self.dtype != weight.dtype
            || !super::applies(self.dtype, &transposed, params)
            || !c.is_multiple_of(tile.columns())
            || !self.nhwc_usable(tile.workgroup_bytes(), emulated)
        {
            return Ok(None);
        }
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        let forward = Conv2dShape::new(&Layout::contiguous(input_shape), weight_layout, params)?;
        if forward.output_shape().as_slice() != layout.shape.as_slice() {
            return Ok(None);
        }
        let (Some(rows), Some(columns)) = (
            phases(height, kh, params.stride.0, params.padding.0),
            phases(width, kw, params.stride.1, params.padding.1),
        ) else {
            return Ok(None);
        };
        let numel = batch * c * height * width;
        let single = rows.len() == 1 && columns.len() == 1;
        let untouched = rows.iter().chain(&columns).any(|phase| phase.taps == 0);
        let padded = padded_channels(o);
        // The gradient [n, oh, ow, o] (o padded), shared by every phase.
        let gradient = gradient_copy(self, layout, padded)?;
        let mut out = if untouched {
            Some(GpuStorage::full(&self.device, numel, self.dtype, 0.0)?)
        } else if single {
            None
        } else {
            Some(GpuStorage::allocate(&self.device, OP, numel, self.dtype)?)
        };
        let strides = &weight_layout.strides;
        for row in &rows {
            for column in &columns {
                if row.taps == 0 || column.taps == 0 || row.count == 0 || column.count == 0 {
                    continue;
                }
                // The phase's taps of the weight, as [taps_h, taps_w, o padded, c].
                let sub_weight = Layout {
                    shape: vec![o, c, row.taps, column.taps],
                    strides: vec![
                        strides[0],
                        strides[1],
                        strides[2] * params.stride.0,
                        strides[3] * params.stride.1,
                    ],
                    offset: weight_layout.offset
                        + row.first_tap * strides[2]
                        + column.first_tap * strides[3],
                };
                let flipped_weight = weight_copy(weight, &sub_weight, [2, 3, 0, 1], padded)?;
                let phase_params = Conv2dParams {
                    stride: (1, 1),
                    padding: (row.padding, column.padding),
                    dilation: (1, 1),
                    groups: 1,
                };
                let Ok(mut shape) = Conv2dShape::new(
                    layout,
                    &Layout::contiguous(&[c, o, row.taps, column.taps]),
                    &phase_params,
                ) else {
                    return Ok(None);
                };
                // Rows past the gradient's read zeros, so any count of output rows is right.
                shape.output = (row.count, column.count);
                let Some(dense) = GpuStorage::nhwc_gemm_channels_last(
                    (&gradient, o, out_height, out_width),
                    &flipped_weight,
                    &shape,
                    true,
                    (tile, emulated, MemoryFormat::Contiguous),
                    None,
                )?
                else {
                    return Ok(None);
                };
                let Some(target) = out.as_mut() else {
                    return Ok(Some(dense));
                };
                let view = Layout {
                    shape: vec![batch, c, row.count, column.count],
                    strides: vec![
                        c * height * width,
                        height * width,
                        params.stride.0 * width,
                        params.stride.1,
                    ],
                    offset: row.residue * width + column.residue,
                };
                dense.copy_into(&Layout::contiguous(&view.shape), target, &view)?;
            }
        }
        Ok(out)
    }
}

/// The stride-1 convolution of the gradient that gives the input gradient of an undilated
/// stride-1 convolution (padding `k - 1 - p`, the flipped weight read as `[kh, kw, o, c]`),
/// where the patch kernel with `tile` computes it: gradient channels a multiple of 16,
/// input channels of the tile's, a square kernel the kernel is generated for.
fn patch_shape(
    layout: &Layout,
    weight_layout: &Layout,
    params: &Conv2dParams,
    input_shape: &[usize],
    tile: PatchTile,
) -> Option<Conv2dShape> {
    let (&[o, c, kh, kw], &[_, go, _, _], &[_, ic, height, width]) = (
        weight_layout.shape.as_slice(),
        layout.shape.as_slice(),
        input_shape,
    ) else {
        return None;
    };
    if params.stride != (1, 1) || params.dilation != (1, 1) || params.groups != 1 {
        return None;
    }
    if go != o || ic != c {
        return None;
    }
    let forward = Conv2dShape::new(&Layout::contiguous(input_shape), weight_layout, params).ok()?;
    if forward.output_shape().as_slice() != layout.shape.as_slice() {
        return None;
    }
    let (rows, columns) = (
        phases(height, kh, 1, params.padding.0)?,
        phases(width, kw, 1, params.padding.1)?,
    );
    let gradient_params = Conv2dParams {
        stride: (1, 1),
        padding: (rows[0].padding, columns[0].padding),
        dilation: (1, 1),
        groups: 1,
    };
    let shape = Conv2dShape::new(
        layout,
        &Layout::contiguous(&[c, o, kh, kw]),
        &gradient_params,
    )
    .ok()?;
    (shape.output == (height, width) && patch::applies(&shape, tile)).then_some(shape)
}

/// Whether [`GpuStorage::conv2d_backward_input_patch`] computes this input gradient with
/// `tile` (F16 operands assumed).
pub(crate) fn patch_applies(
    layout: &Layout,
    weight_layout: &Layout,
    params: &Conv2dParams,
    input_shape: &[usize],
    tile: PatchTile,
) -> bool {
    patch_shape(layout, weight_layout, params, input_shape, tile).is_some()
}

impl GpuStorage {
    /// The input gradient of an undilated stride-1 convolution by the patch kernel with
    /// `tile`: `self` is the output gradient (`[n, o, oh, ow]`, any strides), `weight` the
    /// forward's `[o, c, kh, kw]`; `Ok(None)` where it does not apply ([`patch_applies`], the
    /// device's limits).
    pub(crate) fn conv2d_backward_input_patch(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        input_shape: &[usize],
        (tile, emulated): (PatchTile, bool),
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d_backward_input (patch, tensor cores)";
        same_device(OP, self, weight)?;
        if self.dtype != DType::F16 || weight.dtype != DType::F16 {
            return Ok(None);
        }
        let Some(shape) = patch_shape(layout, weight_layout, params, input_shape, tile) else {
            return Ok(None);
        };
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        let o = shape.channels;
        // The gradient [n, oh, ow, o] and the weight [kh, kw, o, c], read flipped.
        let gradient = gradient_copy(self, layout, o)?;
        let flipped_weight = weight_copy(weight, weight_layout, [2, 3, 0, 1], o)?;
        GpuStorage::conv2d_patch_channels_last(
            (&gradient, &flipped_weight, true),
            &shape,
            (tile, emulated, MemoryFormat::Contiguous),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{phases, Phase};

    #[test]
    fn phases_split_taps_by_residue() {
        // ResNet's 3x3 of stride 2, padding 1, over 9 rows: even rows meet the middle tap,
        // odd rows the outer two.
        let plan = phases(9, 3, 2, 1).unwrap();
        assert_eq!(
            plan,
            vec![
                Phase {
                    residue: 0,
                    first_tap: 1,
                    taps: 1,
                    padding: 0,
                    count: 5
                },
                Phase {
                    residue: 1,
                    first_tap: 0,
                    taps: 2,
                    padding: 0,
                    count: 4
                },
            ]
        );
        // A 1x1 of stride 2 never reaches odd rows.
        assert_eq!(phases(6, 1, 2, 0).unwrap()[1].taps, 0);
        // Stride 1: one phase, padding k - 1 - p.
        assert_eq!(phases(7, 3, 1, 1).unwrap()[0].padding, 1);
        assert_eq!(phases(7, 5, 1, 0).unwrap()[0].padding, 4);
        // A padding past the kernel's span needs a negative padding: refused.
        assert!(phases(7, 3, 1, 3).is_none());
    }
}
