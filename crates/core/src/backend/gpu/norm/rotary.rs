//! Kernel `Rotary`: the rotary position embedding of rows ("rotate half" layout,
//! `RowNormalization::rotary_last`) in one kernel, instead of the composite's slices, negation,
//! concatenation, two products and a sum. One invocation per output element, in a grid-stride
//! loop: element `i` of a `[head_dim]` row at position `p` (the row's index modulo `positions`)
//! reads `x[i]`, its partner `x[i ± rotary_dim / 2]` and `cos[p, i]`, `sin[p, i]`, and writes
//! `x[i] * cos + (∓partner) * sin` (computed in f32, as the CPU reference `cpu/rows.rs`), or
//! `x[i]` past `rotary_dim`. The input and tables are read dense (a strided view is copied
//! first); every read is clamped to its buffer, so the kernel needs no runtime checks.

use std::fmt::Write;

use crate::backend::checks::check_rotary;
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
    /// Parameters of the rotary kernel.
    struct RotaryParams {
        /// Output elements.
        count: u32,
        /// Elements per row (the head size).
        head_dim: u32,
        /// Positions (rows cycle through them).
        positions: u32,
        /// Leading elements of each row that are rotated (even).
        rotary_dim: u32,
    }
}

/// Invocations per workgroup.
const WORKGROUP: u32 = 256;

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<NormKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        keys.push(NormKernel::Rotary { dtype });
    }
}

/// The WGSL source of the rotary kernel for `dtype`.
pub(crate) fn source(dtype: DType) -> String {
    let mut w = value_header(dtype);
    w.push_str(RotaryParams::WGSL);
    // `write!` into a String cannot fail; the result is ignored deliberately.
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> rotary_input: array<S>;
@group(0) @binding(2) var<storage, read_write> rotary_output: array<S>;
@group(0) @binding(3) var<storage, read> rotary_cos: array<S>;
@group(0) @binding(4) var<storage, read> rotary_sin: array<S>;

fn input_at(position: u32) -> f32 {{
    return f32(rotary_input[min(position, arrayLength(&rotary_input) - 1u)]);
}}

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) global: vec3<u32>,
        @builtin(num_workgroups) workgroups: vec3<u32>) {{
    let stride = workgroups.x * {WORKGROUP}u;
    let half = params.rotary_dim / 2u;
    for (var index = global.x; index < params.count; index = index + stride) {{
        let column = index % params.head_dim;
        let value = input_at(index);
        if (column >= params.rotary_dim) {{
            rotary_output[index] = store_value(T(value));
            continue;
        }}
        let position = (index / params.head_dim) % params.positions;
        let table = min(position * params.rotary_dim + column, arrayLength(&rotary_cos) - 1u);
        let table_sin = min(position * params.rotary_dim + column, arrayLength(&rotary_sin) - 1u);
        var partner: f32;
        if (column < half) {{
            partner = -input_at(index + half);
        }} else {{
            partner = input_at(index - half);
        }}
        rotary_output[index] = store_value(T(value * f32(rotary_cos[table]) + partner * f32(rotary_sin[table_sin])));
    }}
}}"
    );
    w
}

impl GpuStorage {
    /// The rotary embedding of the view's rows (`RowNormalization::rotary_last`): one kernel.
    pub fn rotary_last(
        &self,
        layout: &Layout,
        (cos, cos_layout): (&GpuStorage, &Layout),
        (sin, sin_layout): (&GpuStorage, &Layout),
    ) -> Result<GpuStorage> {
        const OP: &str = "rotary_embedding";
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        check_view(OP, layout, self.len)?;
        let (positions, head_dim, rotary_dim) = check_rotary(
            OP,
            layout,
            self.dtype,
            (cos_layout, cos.dtype, cos.len),
            (sin_layout, sin.dtype, sin.len),
        )?;
        let count = layout.numel();
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        if count == 0 {
            return Ok(out);
        }
        let (mut input_copy, mut cos_copy, mut sin_copy) = (None, None, None);
        let input = self.dense_from_start(layout, &mut input_copy)?;
        let cos = cos.dense_from_start(cos_layout, &mut cos_copy)?;
        let sin = sin.dense_from_start(sin_layout, &mut sin_copy)?;
        let header = RotaryParams {
            count: word(count)?,
            head_dim: word(head_dim)?,
            positions: word(positions)?,
            rotary_dim: word(rotary_dim)?,
        };
        let groups = count
            .div_ceil(WORKGROUP as usize)
            .min(MAX_WORKGROUPS as usize) as u32;
        self.device.context().dispatch(
            &NormKernel::Rotary { dtype: self.dtype },
            Params::with_header(&header, 0).words(),
            &[input.raw()?, out.raw()?, cos.raw()?, sin.raw()?],
            (groups, 1, 1),
        )?;
        Ok(out)
    }
}
