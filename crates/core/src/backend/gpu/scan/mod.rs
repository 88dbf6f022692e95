//! Kernel family `Scan` and `GpuStorage::cumsum` it serves: the running sum of every line
//! along one dim. The host moves the dim last and makes the lines dense; one workgroup of 256
//! invocations scans a line at a time (lines in a grid-stride loop): each invocation sums its
//! contiguous chunk of `ceil(length / 256)` elements, the chunks' totals are scanned in
//! workgroup memory (`log2(256)` steps, Hillis–Steele), and each invocation writes its chunk's
//! running sums from its exclusive prefix. Floats accumulate in f32 (F16 too); I32 and U32
//! wrap. The summation order differs from the CPU's sequential one, so float results agree to
//! rounding. Params: [`ScanParams`].

mod contract;
pub(crate) mod kernel;

use std::fmt::Write;

use crate::backend::checks::check_dim;
use crate::backend::gpu::runtime::context::MAX_WORKGROUPS;
use crate::backend::gpu::runtime::operands::unsupported;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::value_header;
use crate::backend::gpu::scan::kernel::ScanKernel;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

/// The dtypes the kernels exist for.
pub(crate) const SCAN_DTYPES: [DType; 4] = [DType::F32, DType::F16, DType::I32, DType::U32];

kernel_params! {
    /// Parameters of the running-sum kernel.
    struct ScanParams {
        /// Lines to scan.
        rows: u32,
        /// Elements per line.
        length: u32,
    }
}

/// WGSL of the running-sum kernel for `dtype`.
pub(crate) fn source(dtype: DType) -> String {
    let mut w = value_header(dtype);
    w.push_str(ScanParams::WGSL);
    // `write!` into a String cannot fail; the result is ignored deliberately.
    let _ = write!(
        w,
        "@group(0) @binding(1) var<storage, read> scan_input: array<S>;
@group(0) @binding(2) var<storage, read_write> scan_output: array<S>;
var<workgroup> totals: array<T, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let length = params.length;
    let chunk = (length + 255u) / 256u;
    let start = min(local * chunk, length);
    let end = min(start + chunk, length);
    for (var row = workgroup.x; row < params.rows; row = row + workgroups.x) {{
        let base = row * length;
        var sum = T(0);
        for (var i = start; i < end; i = i + 1u) {{
            sum = sum + load_value(scan_input[base + i]);
        }}
        totals[local] = sum;
        workgroupBarrier();
        for (var offset = 1u; offset < 256u; offset = offset * 2u) {{
            var before = T(0);
            if (local >= offset) {{
                before = totals[local - offset];
            }}
            workgroupBarrier();
            totals[local] = totals[local] + before;
            workgroupBarrier();
        }}
        var running = T(0);
        if (local > 0u) {{
            running = totals[local - 1u];
        }}
        for (var i = start; i < end; i = i + 1u) {{
            running = running + load_value(scan_input[base + i]);
            scan_output[base + i] = store_value(running);
        }}
        workgroupBarrier();
    }}
}}
"
    );
    w
}

impl GpuStorage {
    /// The running sum of the view along `dim` (`Scan::cumsum`): contiguous, the view's shape.
    pub fn cumsum(&self, layout: &Layout, dim: usize) -> Result<GpuStorage> {
        const OP: &str = "cumsum";
        if !SCAN_DTYPES.contains(&self.dtype) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        check_view(OP, layout, self.len)?;
        check_dim(OP, layout, dim)?;
        let numel = layout.numel();
        if numel == 0 {
            return GpuStorage::allocate(&self.device, OP, 0, self.dtype);
        }
        // Lines dense along the summed dim.
        let last = layout.rank() - 1;
        let mut permutation: Vec<usize> = (0..layout.rank()).collect();
        permutation.swap(dim, last);
        let moved = layout.permute(&permutation);
        let mut copy = None;
        let lines = self.dense_from_start(&moved, &mut copy)?;
        let length = layout.shape[dim];
        let rows = numel / length;
        let out = GpuStorage::allocate(&self.device, OP, numel, self.dtype)?;
        let header = ScanParams {
            rows: word(rows)?,
            length: word(length)?,
        };
        let groups = rows.min(MAX_WORKGROUPS as usize) as u32;
        self.device.context().dispatch(
            &ScanKernel { dtype: self.dtype },
            Params::with_header(&header, 0).words(),
            &[lines.raw()?, out.raw()?],
            (groups, 1, 1),
        )?;
        if dim == last {
            return Ok(out);
        }
        let back = Layout::contiguous(&moved.shape).permute(&permutation);
        out.copy_strided(&back)
    }
}
