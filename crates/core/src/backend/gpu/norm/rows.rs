//! Kernel family `Rows`: softmax and log-softmax (and their input gradients), layer
//! normalization and RMS normalization over the last dim in one kernel each, instead of the composites' five (softmax: max, sub, exp, sum, div),
//! seven (layer norm) or five (RMS norm) passes over memory. The input is read dense (`[rows, length]`; a strided view is
//! copied first), the output written once.
//!
//! One workgroup of 256 invocations computes [`RowKey::rows_per_workgroup`] rows at a time,
//! each row by `lanes` invocations (32 to 256, a power of two: about four elements per lane,
//! `lanes_for`), rows in a grid-stride loop. A lane walks its row with stride `lanes`
//! (consecutive lanes read consecutive elements), and a row's sums and maxima are combined
//! through workgroup memory in a tree of `log2(lanes)` steps; every row of the workgroup
//! reduces in the same steps, so all barriers are in uniform control flow. Values are computed
//! in f32 (F16 storage too) in the CPU reference's order (`cpu/rows.rs`): softmax
//! `exp(x - max) / sum`; layer norm `(x - mean) * inverseSqrt(var + eps)` (two passes, biased
//! variance), then `* weight + bias` where there is an affine transform; RMS norm
//! `x * inverseSqrt(mean(x²) + eps)` (one pass for the statistic), then `* weight` where given. Every read is clamped
//! to its buffer, so the kernels need no runtime checks.

use std::fmt::Write;

use crate::backend::checks::{
    check_affine, check_row_parameter, check_rows, softmax_backward_name,
};
use crate::backend::contract::Affine;
use crate::backend::gpu::norm::kernel::NormKernel;
use crate::backend::gpu::runtime::context::MAX_WORKGROUPS;
use crate::backend::gpu::runtime::operands::unsupported;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::value_header;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

kernel_params! {
    /// Parameters of the row kernels.
    struct RowParams {
        /// Rows.
        rows: u32,
        /// Elements per row.
        length: u32,
        /// Layer norm's or RMS norm's epsilon, as the bits of an f32.
        eps_bits: u32,
    }
}

/// What a row kernel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowOp {
    /// `exp(x - max) / sum`; `safe`: the sum is clamped below at 0.5, so a row whose every
    /// value is `-inf` gives zeros instead of NaN (masked attention; any other row's sum is at
    /// least 1, from its maximum).
    Softmax {
        /// Clamp the sum (fully masked rows give zeros).
        safe: bool,
    },
    /// `x - max - log(sum(exp(x - max)))`, the max at least the lowest finite f32 (a row of
    /// only `-inf` gives NaN, as the composite does).
    LogSoftmax,
    /// The input gradient of softmax (`log` false: `y * (g - sum(g * y))`) or log-softmax
    /// (`log` true: `g - exp(y) * sum(g)`): the input is the forward's output `y`, the
    /// gradient `g` is binding 3.
    SoftmaxBackward {
        /// Log-softmax's rule rather than softmax's.
        log: bool,
    },
    /// `(x - mean) * rsqrt(var + eps)`, with `* weight + bias` when `affine`.
    LayerNorm {
        /// A weight and a bias (bindings 3 and 4).
        affine: bool,
    },
    /// `x * rsqrt(mean(x²) + eps)`, with `* weight` when `weighted`.
    RmsNorm {
        /// A weight (binding 3).
        weighted: bool,
    },
}

/// One row kernel: its dtype, op and lanes per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowKey {
    /// Storage dtype (F32 or F16).
    pub dtype: DType,
    /// What it computes.
    pub op: RowOp,
    /// Invocations per row: 32, 64, 128 or 256.
    pub lanes: u32,
}

/// The lane counts kernels exist for.
const LANES: [u32; 4] = [32, 64, 128, 256];

/// Lanes per row for rows of `length`: about four elements per lane, 32 to 256.
fn lanes_for(length: usize) -> u32 {
    let wanted = length.div_ceil(4).next_power_of_two();
    LANES
        .into_iter()
        .find(|&lanes| lanes as usize >= wanted)
        .unwrap_or(256)
}

impl RowKey {
    /// Rows one workgroup computes at a time.
    pub fn rows_per_workgroup(self) -> u32 {
        256 / self.lanes
    }

    /// The WGSL source.
    pub fn source(self) -> String {
        source(self)
    }
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<NormKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        for op in [
            RowOp::Softmax { safe: false },
            RowOp::Softmax { safe: true },
            RowOp::LogSoftmax,
            RowOp::SoftmaxBackward { log: false },
            RowOp::SoftmaxBackward { log: true },
            RowOp::LayerNorm { affine: false },
            RowOp::LayerNorm { affine: true },
            RowOp::RmsNorm { weighted: false },
            RowOp::RmsNorm { weighted: true },
        ] {
            for lanes in LANES {
                keys.push(NormKernel::Rows(RowKey { dtype, op, lanes }));
            }
        }
    }
}

/// Softmax's and log-softmax's first two passes: each lane's share of the row maximum
/// (`largest`, combined over the row) and of `sum(exp(x - largest))` (`total`, this lane's part).
const ROW_MAX_AND_EXP_SUM: &str = "        var largest = -3.4028235e38;
        for (var i = lane; i < end; i = i + LANES) {
            largest = max(largest, load_at(base + i));
        }
        largest = row_combine(local, lane, largest, true);
        var total = 0.0;
        for (var i = lane; i < end; i = i + LANES) {
            total = total + exp(load_at(base + i) - largest);
        }
";

fn source(key: RowKey) -> String {
    let mut w = value_header(key.dtype);
    w.push_str(RowParams::WGSL);
    let (lanes, rows) = (key.lanes, key.rows_per_workgroup());
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> row_input: array<S>;
@group(0) @binding(2) var<storage, read_write> row_output: array<S>;"
    );
    if matches!(
        key.op,
        RowOp::LayerNorm { affine: true } | RowOp::RmsNorm { weighted: true }
    ) {
        let _ = writeln!(
            w,
            "@group(0) @binding(3) var<storage, read> row_weight: array<S>;"
        );
    }
    if matches!(key.op, RowOp::SoftmaxBackward { .. }) {
        let _ = writeln!(
            w,
            "@group(0) @binding(3) var<storage, read> row_grad: array<S>;

fn grad_at(position: u32) -> f32 {{
    return f32(row_grad[min(position, arrayLength(&row_grad) - 1u)]);
}}"
        );
    }
    if key.op == (RowOp::LayerNorm { affine: true }) {
        let _ = writeln!(
            w,
            "@group(0) @binding(4) var<storage, read> row_bias: array<S>;"
        );
    }
    let _ = writeln!(
        w,
        "
const LANES: u32 = {lanes}u;
const ROWS: u32 = {rows}u;
var<workgroup> partial: array<f32, 256>;

fn load_at(position: u32) -> f32 {{
    return f32(row_input[min(position, arrayLength(&row_input) - 1u)]);
}}

// The sum (`maximum` false) or the maximum of `value` over the row's lanes, for every lane.
fn row_combine(local: u32, lane: u32, value: f32, maximum: bool) -> f32 {{
    partial[local] = value;
    workgroupBarrier();
    for (var stride = LANES / 2u; stride > 0u; stride = stride / 2u) {{
        if (lane < stride) {{
            let other = partial[local + stride];
            partial[local] = select(partial[local] + other, max(partial[local], other), maximum);
        }}
        workgroupBarrier();
    }}
    let total = partial[local - lane];
    workgroupBarrier();
    return total;
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let lane = local % LANES;
    let slot = local / LANES;
    let length = params.length;
    for (var group = workgroup.x; group * ROWS < params.rows; group = group + workgroups.x) {{
        let row = group * ROWS + slot;
        let valid = row < params.rows;
        let base = row * length;
        let end = select(0u, length, valid);"
    );
    match key.op {
        RowOp::Softmax { safe } => {
            let clamp = if safe {
                "        total = max(total, 0.5);\n"
            } else {
                ""
            };
            let _ = writeln!(
                w,
                "{ROW_MAX_AND_EXP_SUM}        total = row_combine(local, lane, total, false);
{clamp}        for (var i = lane; i < end; i = i + LANES) {{
            row_output[base + i] = store_value(T(exp(load_at(base + i) - largest) / total));
        }}"
            );
        }
        RowOp::LogSoftmax => {
            let _ = writeln!(
                w,
                "{ROW_MAX_AND_EXP_SUM}        let log_total = log(row_combine(local, lane, total, false));
        for (var i = lane; i < end; i = i + LANES) {{
            row_output[base + i] = store_value(T(load_at(base + i) - largest - log_total));
        }}"
            );
        }
        RowOp::SoftmaxBackward { log } => {
            let (summand, result) = if log {
                ("grad_at(base + i)", "g - exp(y) * total")
            } else {
                ("grad_at(base + i) * load_at(base + i)", "y * (g - total)")
            };
            let _ = writeln!(
                w,
                "        var total = 0.0;
        for (var i = lane; i < end; i = i + LANES) {{
            total = total + {summand};
        }}
        total = row_combine(local, lane, total, false);
        for (var i = lane; i < end; i = i + LANES) {{
            let y = load_at(base + i);
            let g = grad_at(base + i);
            row_output[base + i] = store_value(T({result}));
        }}"
            );
        }
        RowOp::LayerNorm { affine } => {
            let finish = if affine {
                "normalized * f32(row_weight[min(i, arrayLength(&row_weight) - 1u)]) + f32(row_bias[min(i, arrayLength(&row_bias) - 1u)])"
            } else {
                "normalized"
            };
            let _ = writeln!(
                w,
                "        let count = f32(length);
        var total = 0.0;
        for (var i = lane; i < end; i = i + LANES) {{
            total = total + load_at(base + i);
        }}
        let mean = row_combine(local, lane, total, false) / count;
        var squares = 0.0;
        for (var i = lane; i < end; i = i + LANES) {{
            let centered = load_at(base + i) - mean;
            squares = squares + centered * centered;
        }}
        let variance = row_combine(local, lane, squares, false) / count;
        let inv_std = inverseSqrt(variance + bitcast<f32>(params.eps_bits));
        for (var i = lane; i < end; i = i + LANES) {{
            let normalized = (load_at(base + i) - mean) * inv_std;
            row_output[base + i] = store_value(T({finish}));
        }}"
            );
        }
        RowOp::RmsNorm { weighted } => {
            let finish = if weighted {
                "normalized * f32(row_weight[min(i, arrayLength(&row_weight) - 1u)])"
            } else {
                "normalized"
            };
            let _ = writeln!(
                w,
                "        var squares = 0.0;
        for (var i = lane; i < end; i = i + LANES) {{
            let value = load_at(base + i);
            squares = squares + value * value;
        }}
        let mean_square = row_combine(local, lane, squares, false) / f32(length);
        let inverse_rms = inverseSqrt(mean_square + bitcast<f32>(params.eps_bits));
        for (var i = lane; i < end; i = i + LANES) {{
            let normalized = load_at(base + i) * inverse_rms;
            row_output[base + i] = store_value(T({finish}));
        }}"
            );
        }
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

impl GpuStorage {
    /// Run row kernel `op` over the view (rows = the last dim) with `extra` buffers bound
    /// after the output.
    fn rows(
        &self,
        op_name: &'static str,
        layout: &Layout,
        op: RowOp,
        eps: f64,
        extra: &[&GpuStorage],
    ) -> Result<GpuStorage> {
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(op_name, self.dtype, &self.device));
        }
        check_view(op_name, layout, self.len)?;
        let length = check_rows(op_name, layout)?;
        let numel = layout.numel();
        let out = GpuStorage::allocate(&self.device, op_name, numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        let mut copy = None;
        let input = self.dense_from_start(layout, &mut copy)?;
        let rows = numel / length;
        let key = RowKey {
            dtype: self.dtype,
            op,
            lanes: lanes_for(length),
        };
        let header = RowParams {
            rows: word(rows)?,
            length: word(length)?,
            eps_bits: (eps as f32).to_bits(),
        };
        word(numel)?;
        let groups = rows
            .div_ceil(key.rows_per_workgroup() as usize)
            .min(MAX_WORKGROUPS as usize) as u32;
        let mut buffers = vec![input.raw()?, out.raw()?];
        for storage in extra {
            buffers.push(storage.raw()?);
        }
        self.device.context().dispatch(
            &NormKernel::Rows(key),
            Params::with_header(&header, 0).words(),
            &buffers,
            (groups, 1, 1),
        )?;
        Ok(out)
    }

    /// Softmax over the last dim (`RowNormalization::softmax_last`): one row kernel.
    pub fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<GpuStorage> {
        self.rows("softmax", layout, RowOp::Softmax { safe }, 0.0, &[])
    }

    /// Log-softmax over the last dim (`RowNormalization::log_softmax_last`): one row kernel.
    pub fn log_softmax_last(&self, layout: &Layout) -> Result<GpuStorage> {
        self.rows("log_softmax", layout, RowOp::LogSoftmax, 0.0, &[])
    }

    /// The input gradient of softmax or log-softmax over the last dim, from this storage (the
    /// forward's output) and `grad` (`RowNormalization::softmax_last_backward`): one row
    /// kernel.
    pub fn softmax_last_backward(
        &self,
        layout: &Layout,
        grad: (&GpuStorage, &Layout),
        log: bool,
    ) -> Result<GpuStorage> {
        let op = softmax_backward_name(log);
        let (grad, grad_layout) = grad;
        if grad.dtype != self.dtype {
            return Err(unsupported(op, grad.dtype, &self.device));
        }
        check_view(op, grad_layout, grad.len)?;
        let mut grad_copy = None;
        let grad = grad.dense_from_start(grad_layout, &mut grad_copy)?;
        self.rows(op, layout, RowOp::SoftmaxBackward { log }, 0.0, &[grad])
    }

    /// Layer normalization over the last dim (`RowNormalization::layer_norm_last`): one row
    /// kernel, the affine transform in its store.
    pub fn layer_norm_last(
        &self,
        layout: &Layout,
        affine: Affine<'_, GpuStorage>,
        eps: f64,
    ) -> Result<GpuStorage> {
        const OP: &str = "layer_norm";
        let Some(((weight, weight_layout), (bias, bias_layout))) = affine else {
            return self.rows(OP, layout, RowOp::LayerNorm { affine: false }, eps, &[]);
        };
        let length = check_rows(OP, layout)?;
        check_affine(
            OP,
            length,
            self.dtype,
            (weight_layout, weight.dtype, weight.len),
            (bias_layout, bias.dtype, bias.len),
        )?;
        let (mut weight_copy, mut bias_copy) = (None, None);
        let weight = weight.dense_from_start(weight_layout, &mut weight_copy)?;
        let bias = bias.dense_from_start(bias_layout, &mut bias_copy)?;
        self.rows(
            OP,
            layout,
            RowOp::LayerNorm { affine: true },
            eps,
            &[weight, bias],
        )
    }

    /// RMS normalization over the last dim (`RowNormalization::rms_norm_last`): one row
    /// kernel, the weight in its store.
    pub fn rms_norm_last(
        &self,
        layout: &Layout,
        weight: Option<(&GpuStorage, &Layout)>,
        eps: f64,
    ) -> Result<GpuStorage> {
        const OP: &str = "rms_norm";
        let Some((weight, weight_layout)) = weight else {
            return self.rows(OP, layout, RowOp::RmsNorm { weighted: false }, eps, &[]);
        };
        let length = check_rows(OP, layout)?;
        check_row_parameter(
            OP,
            "weight",
            length,
            self.dtype,
            (weight_layout, weight.dtype, weight.len),
        )?;
        let mut weight_copy = None;
        let weight = weight.dense_from_start(weight_layout, &mut weight_copy)?;
        self.rows(
            OP,
            layout,
            RowOp::RmsNorm { weighted: true },
            eps,
            &[weight],
        )
    }
}
