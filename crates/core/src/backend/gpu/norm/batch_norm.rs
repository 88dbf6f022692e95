//! Kernel family `BatchNormSums`: batch norm's per-channel reductions in one pass over the
//! activation, reading F16 inputs directly (no f32 copy), instead of the composites' chains of
//! casts, elementwise passes and reductions.
//!
//! - **Statistics** (`batch_norm_stats`): mean and biased variance of each channel of a dense
//!   `[n, c, rest]` input. Each invocation sums `d = x - shift` and `d * d` in f32 over its
//!   share of the channel (the shift is the channel's first element, so the sums stay near the
//!   data's scale and the variance `(Σd² - (Σd)²/N) / N` loses little to cancellation); the
//!   workgroup adds the 256 partial sums in a tree in workgroup memory.
//! - **Backward sums** (`batch_norm_backward_sums`): `Σ g` and `Σ g * (x - mean)` per channel.
//!
//! Two passes ([`SumsPass`]): workgroups of 256 invocations each sum one split of one channel
//! (about 1,024 workgroups over all channels, so that 64 channels still fill a large GPU; an
//! invocation walks its split with stride 256, carrying `(image, i)` instead of dividing) into
//! partial sums; then one invocation per channel adds its splits' partials and finishes.
//! Output: F32 `[2, c]`. Every read is clamped to its buffer. The CPU's `cpu/batch_norm.rs` is
//! the reference.

use std::fmt::Write;

use crate::backend::checks::check_channels;
use crate::backend::gpu::norm::kernel::NormKernel;
use crate::backend::gpu::runtime::context::MAX_WORKGROUPS;
use crate::backend::gpu::runtime::operands::unsupported;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

kernel_params! {
    /// Parameters of the batch-norm sums.
    struct BatchNormParams {
        /// Images.
        images: u32,
        /// Channels.
        channels: u32,
        /// Elements per image and channel.
        rest: u32,
        /// Workgroups (splits) per channel.
        splits: u32,
        /// Elements of a channel per split.
        chunk: u32,
    }
}

/// The pass of a batch-norm sums kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SumsPass {
    /// Partial sums of one split of a channel per workgroup.
    Partial,
    /// One invocation per channel adds the splits' partial sums (and, for the statistics,
    /// turns them into the mean and the variance).
    Finish,
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<NormKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        for backward in [false, true] {
            for pass in [SumsPass::Partial, SumsPass::Finish] {
                keys.push(NormKernel::BatchNormSums {
                    dtype,
                    backward,
                    pass,
                });
            }
        }
    }
}

/// WGSL of `NormKernel::BatchNormSums`.
pub(crate) fn source(dtype: DType, backward: bool, pass: SumsPass) -> String {
    let mut w = value_header(dtype);
    w.push_str(BatchNormParams::WGSL);
    w.push_str(COMMON);
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> values: array<S>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;"
    );
    match pass {
        SumsPass::Partial => {
            if backward {
                let _ = writeln!(
                    w,
                    "@group(0) @binding(3) var<storage, read> inputs: array<S>;
@group(0) @binding(4) var<storage, read> means: array<f32>;"
                );
            }
        }
        SumsPass::Finish => {
            let _ = writeln!(
                w,
                "@group(0) @binding(3) var<storage, read> partials: array<f32>;"
            );
        }
    }
    let _ = writeln!(
        w,
        "
fn value_at(position: u32) -> f32 {{
    return f32(values[min(position, arrayLength(&values) - 1u)]);
}}
"
    );
    match pass {
        SumsPass::Finish => {
            let finish = if backward {
                "    sums[channel] = first;\n    sums[channels + channel] = second;"
            } else {
                "    // The statistics: Σd and Σd² of d = x - shift (the channel's first element).
    let count = f32(params.images * params.rest);
    let mean_shift = first / count;
    sums[channel] = value_at(channel * params.rest) + mean_shift;
    sums[channels + channel] = max(second / count - mean_shift * mean_shift, 0.0);"
            };
            let _ = writeln!(
                w,
                "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let channel = linear_id(workgroup, workgroups, local);
    let channels = params.channels;
    // Binding 1 stays in the pipeline's layout also where only the statistics read it.
    _ = arrayLength(&values);
    if (channel >= channels) {{
        return;
    }}
    var first = 0.0;
    var second = 0.0;
    let last = arrayLength(&partials) - 1u;
    for (var split = 0u; split < params.splits; split = split + 1u) {{
        first = first + partials[min((2u * split) * channels + channel, last)];
        second = second + partials[min((2u * split + 1u) * channels + channel, last)];
    }}
{finish}
}}"
            );
        }
        SumsPass::Partial => {
            let _ = writeln!(
                w,
                "var<workgroup> first_sums: array<f32, 256>;
var<workgroup> second_sums: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let images = params.images;
    let channels = params.channels;
    let rest = max(params.rest, 1u);
    let total = images * rest;
    let split = workgroup.y;
    let start = min(split * params.chunk, total);
    let end = min(start + params.chunk, total);
    for (var channel = workgroup.x; channel < channels; channel = channel + workgroups.x) {{"
            );
            if backward {
                let _ = writeln!(
                    w,
                    "        let mean = means[min(channel, arrayLength(&means) - 1u)];"
                );
            } else {
                let _ = writeln!(w, "        let shift = value_at(channel * rest);");
            }
            let _ = writeln!(
                w,
                "        var first = 0.0;
        var second = 0.0;
        // Element e = (image, i) of the channel, walked with stride 256 without dividing.
        var e = start + local;
        var image = e / rest;
        var i = e - image * rest;
        let step_images = 256u / rest;
        let step_rest = 256u - step_images * rest;
        loop {{
            if (e >= end) {{
                break;
            }}
            let position = (image * channels + channel) * rest + i;"
            );
            if backward {
                let _ = writeln!(
                    w,
                    "            let g = value_at(position);
            let x = f32(inputs[min(position, arrayLength(&inputs) - 1u)]);
            first = first + g;
            second = second + g * (x - mean);"
                );
            } else {
                let _ = writeln!(
                    w,
                    "            let d = value_at(position) - shift;
            first = first + d;
            second = second + d * d;"
                );
            }
            let _ = writeln!(
                w,
                "            e = e + 256u;
            image = image + step_images;
            i = i + step_rest;
            if (i >= rest) {{
                i = i - rest;
                image = image + 1u;
            }}
        }}
        first_sums[local] = first;
        second_sums[local] = second;
        workgroupBarrier();
        for (var stride = 128u; stride > 0u; stride = stride / 2u) {{
            if (local < stride) {{
                first_sums[local] = first_sums[local] + first_sums[local + stride];
                second_sums[local] = second_sums[local] + second_sums[local + stride];
            }}
            workgroupBarrier();
        }}
        if (local == 0u) {{
            sums[(2u * split) * channels + channel] = first_sums[0];
            sums[(2u * split + 1u) * channels + channel] = second_sums[0];
        }}
        workgroupBarrier();
    }}
}}"
            );
        }
    }
    w
}

impl GpuStorage {
    /// Run the sums kernel over `self` (`[n, c, ...]`), with `extra` bindings after the output.
    fn batch_norm_sums(
        &self,
        op: &'static str,
        layout: &Layout,
        backward: Option<(&GpuStorage, &GpuStorage)>,
    ) -> Result<GpuStorage> {
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(op, self.dtype, &self.device));
        }
        check_view(op, layout, self.len)?;
        let (n, c, rest) = check_channels(op, layout)?;
        word(layout.numel())?;
        let out = GpuStorage::allocate(&self.device, op, 2 * c, DType::F32)?;
        if c == 0 {
            return Ok(out);
        }
        if n * rest == 0 {
            // An empty channel: NaN statistics (as `mean`), zero sums.
            let fill = if backward.is_some() { 0.0 } else { f64::NAN };
            return GpuStorage::full(&self.device, 2 * c, DType::F32, fill);
        }
        // Enough workgroups to fill a large GPU: about 1,024 over all channels, each split at
        // least 4,096 elements.
        let total = n * rest;
        let splits = (1024 / c)
            .clamp(1, total.div_ceil(4096).max(1))
            .min(MAX_WORKGROUPS as usize);
        let chunk = total.div_ceil(splits);
        let header = BatchNormParams {
            images: word(n)?,
            channels: word(c)?,
            rest: word(rest)?,
            splits: word(splits)?,
            chunk: word(chunk)?,
        };
        let words = Params::with_header(&header, 0);
        let partials = GpuStorage::allocate(&self.device, op, 2 * c * splits, DType::F32)?;
        let mut buffers = vec![self.raw()?, partials.raw()?];
        if let Some((input, mean)) = backward {
            buffers.push(input.raw()?);
            buffers.push(mean.raw()?);
        }
        let context = self.device.context();
        let key = |pass| NormKernel::BatchNormSums {
            dtype: self.dtype,
            backward: backward.is_some(),
            pass,
        };
        context.dispatch(
            &key(SumsPass::Partial),
            words.words(),
            &buffers,
            (c.min(MAX_WORKGROUPS as usize) as u32, splits as u32, 1),
        )?;
        GpuStorage::launch(
            &self.device,
            &key(SumsPass::Finish),
            &words,
            &[self.raw()?, out.raw()?, partials.raw()?],
            c,
        )?;
        Ok(out)
    }

    /// Per-channel mean and biased variance (`BatchNormalization::batch_norm_stats`).
    pub fn batch_norm_stats(&self, layout: &Layout) -> Result<GpuStorage> {
        let mut copy = None;
        let input = self.dense_from_start(layout, &mut copy)?;
        input.batch_norm_sums("batch_norm_stats", &Layout::contiguous(&layout.shape), None)
    }

    /// Per-channel `Σ g` and `Σ g (x - mean)`; `self` is `g`
    /// (`BatchNormalization::batch_norm_backward_sums`).
    pub fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &GpuStorage,
        input_layout: &Layout,
        mean: &GpuStorage,
        mean_layout: &Layout,
    ) -> Result<GpuStorage> {
        const OP: &str = "batch_norm_backward_sums";
        check_view(OP, input_layout, input.len)?;
        check_view(OP, mean_layout, mean.len)?;
        let (_, c, _) = check_channels(OP, layout)?;
        if input_layout.shape != layout.shape || input.dtype != self.dtype {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: layout.shape.clone(),
                rhs: input_layout.shape.clone(),
                reason: "the gradient and the input must have one shape and dtype".into(),
            });
        }
        if mean_layout.shape != [c] || mean.dtype != DType::F32 {
            return Err(Error::invalid(
                OP,
                format!(
                    "the mean must be float32 [{c}], got {} {:?}",
                    mean.dtype, mean_layout.shape
                ),
            ));
        }
        let (mut g_copy, mut x_copy, mut mean_copy) = (None, None, None);
        let g = self.dense_from_start(layout, &mut g_copy)?;
        let x = input.dense_from_start(input_layout, &mut x_copy)?;
        let mean = mean.dense_from_start(mean_layout, &mut mean_copy)?;
        g.batch_norm_sums(OP, &Layout::contiguous(&layout.shape), Some((x, mean)))
    }
}
