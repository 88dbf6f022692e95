//! Kernel family `Reduce`: sum, mean, max, min, argmax and argmin over a set of dims (a mean
//! is the sum divided by [`ReduceParams::divisor`] in the store: one pass, one rounding). Each output
//! is folded by a group of `lanes` invocations ([`lanes_per_output`]: the whole workgroup of
//! 256 for long reductions, fewer for short rows such as softmax's 128 scores, so a
//! workgroup folds several outputs and consecutive lanes read consecutive elements), or, for
//! a few very long reductions, per output chunk with a second pass over the partial results.
//! Key: `ReduceKernel::Reduce`; params: [`ReduceParams`]; source: the value header, the
//! reduction's header (`reduce_header`) and `shaders/reduce.wgsl`.

mod contract;
pub(crate) mod kernel;

use crate::backend::gpu::reduce::kernel::ReduceKernel;
use crate::backend::gpu::runtime::context::GpuContext;
use crate::backend::gpu::runtime::operands::unsupported;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{
    class, storage_type, value_header, Class, COMMON, STRIDED,
};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{merge_dims, Layout};
use crate::op::ReduceOp;

kernel_params! {
    /// Parameters of `shaders/reduce.wgsl`.
    struct ReduceParams {
        /// Output elements.
        outputs: u32,
        /// Elements reduced into each output.
        count: u32,
        /// Number of kept dims.
        kept_rank: u32,
        /// Number of reduced dims.
        reduced_rank: u32,
        /// The input view's offset.
        offset: u32,
        /// Workgroups (chunks) per output.
        chunks: u32,
        /// Reduced elements per chunk.
        chunk_length: u32,
        /// Invocations that fold one output (a power of two up to 256; a workgroup folds
        /// `256 / lanes` outputs).
        lanes: u32,
        /// What a mean divides each output's sum by: the elements it averages (also in the
        /// second pass of a split mean, whose `count` is the chunks); 1 for other reductions.
        divisor: u32,
    }
    tail: "kept shape[kept_rank], kept strides[kept_rank], reduced shape[reduced_rank], reduced strides[reduced_rank]";
}

/// WGSL of `ReduceKernel::Reduce` (after `enable f16;` where needed).
pub(crate) fn source(dtype: DType, op: ReduceOp) -> String {
    let mut text = value_header(dtype);
    text.push_str(&reduce_header(dtype, op));
    text.push_str(ReduceParams::WGSL);
    text.push_str(COMMON);
    text.push_str(STRIDED);
    text.push_str(include_str!("../shaders/reduce.wgsl"));
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<ReduceKernel>, dtype: DType) {
    if dtype != DType::Bool {
        // Means only of floats (`GpuStorage::reduce` refuses the others).
        for op in ReduceOp::ALL {
            if op != ReduceOp::Mean || dtype.is_float() {
                keys.push(ReduceKernel::Reduce { dtype, op });
            }
        }
    }
}

/// Accumulator type and combine functions for a reduction.
fn reduce_header(dtype: DType, op: ReduceOp) -> String {
    let (identity, merge) = match (op, class(dtype)) {
        (ReduceOp::Sum | ReduceOp::Mean, _) => ("T(0)", "a + b"),
        (ReduceOp::Max | ReduceOp::ArgMax, Class::Float) => {
            ("bitcast<f32>(0xff800000u)", "maximum_nan(a, b)")
        }
        (ReduceOp::Min | ReduceOp::ArgMin, Class::Float) => {
            ("bitcast<f32>(0x7f800000u)", "minimum_nan(a, b)")
        }
        (ReduceOp::Max | ReduceOp::ArgMax, Class::Signed) => ("-2147483647i - 1i", "max(a, b)"),
        (ReduceOp::Min | ReduceOp::ArgMin, Class::Signed) => ("2147483647i", "min(a, b)"),
        (ReduceOp::Max | ReduceOp::ArgMax, Class::Unsigned) => ("0u", "max(a, b)"),
        (ReduceOp::Min | ReduceOp::ArgMin, Class::Unsigned) => ("4294967295u", "min(a, b)"),
    };
    let better = match op {
        ReduceOp::ArgMax => "value > best",
        ReduceOp::ArgMin => "value < best",
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min => "false",
    };
    let (output, finish) = match op {
        ReduceOp::ArgMax | ReduceOp::ArgMin => ("i32", "return i32(index);"),
        ReduceOp::Mean => (
            storage_type(dtype),
            "return store_value(value / T(params.divisor));",
        ),
        ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min => {
            (storage_type(dtype), "return store_value(value);")
        }
    };
    format!(
        "alias A = T;\nalias O = {output};\nconst IS_ARG: bool = {is_arg};\n\
         fn identity() -> A {{ return {identity}; }}\n\
         fn merge(a: A, b: A) -> A {{ return {merge}; }}\n\
         fn replaces(best: A, best_index: u32, value: A, index: u32) -> bool {{\n\
         \x20   if (index == 0xFFFFFFFFu) {{ return false; }}\n\
         \x20   if (best_index == 0xFFFFFFFFu) {{ return true; }}\n\
         \x20   if (is_nan_value(best)) {{ return is_nan_value(value) && index < best_index; }}\n\
         \x20   if (is_nan_value(value)) {{ return true; }}\n\
         \x20   if ({better}) {{ return true; }}\n\
         \x20   return value == best && index < best_index;\n}}\n\
         fn finish(value: A, index: u32) -> O {{ {finish} }}\n",
        is_arg = op.is_arg(),
    )
}

/// Workgroups the split reductions aim for: about two waves of a large GPU, so that enough
/// loads are in flight (each workgroup's loop is bound by load latency, not bandwidth).
const TARGET_WORKGROUPS: usize = 2048;
/// Fewest elements one chunk of a split reduction folds.
const MIN_CHUNK: usize = 1 << 12;

/// How many chunks each output of a reduction is split into (1: no split): enough for
/// [`TARGET_WORKGROUPS`] workgroups in all, none shorter than [`MIN_CHUNK`] elements, at most
/// 1024 (the second pass folds them in a fixed order). Batch norm's statistics of a
/// `[64, 64, 56, 56]` activation: 64 outputs of 200,704 elements, 32 chunks each.
fn reduce_chunks(splittable: bool, outputs: usize, count: usize) -> usize {
    if !splittable || count < 2 * MIN_CHUNK {
        return 1;
    }
    TARGET_WORKGROUPS
        .div_ceil(outputs.max(1))
        .min(count / MIN_CHUNK)
        .clamp(1, 1024)
}

/// Invocations folding one output of `count` elements: about four elements each, a power of
/// two from 1 to 256 (the workgroup). A softmax row of 128 scores takes 32 lanes, eight rows
/// per workgroup; before, each took a whole workgroup and most of its tree steps idle.
fn lanes_per_output(chunks: usize, count: usize) -> usize {
    if chunks > 1 {
        return 256;
    }
    count.div_ceil(4).next_power_of_two().clamp(1, 256)
}

impl GpuStorage {
    /// Reduce over `dims` (keepdim-shaped output; arg reductions take one dim, return I32).
    pub fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<GpuStorage> {
        self.reduce_divided(layout, op, dims, None)
    }

    /// [`GpuStorage::reduce`], a mean dividing its sums by `divisor` where given (the
    /// elements it averages, which the second pass of a split mean no longer sees), else by
    /// the elements each output reduces.
    fn reduce_divided(
        &self,
        layout: &Layout,
        op: ReduceOp,
        dims: &[usize],
        divisor: Option<usize>,
    ) -> Result<GpuStorage> {
        let integer_mean = op == ReduceOp::Mean && !self.dtype.is_float();
        if self.dtype == DType::Bool || integer_mean {
            return Err(unsupported(op.name(), self.dtype, &self.device));
        }
        check_view(op.name(), layout, self.len)?;
        if let Some(&bad) = dims.iter().find(|&&d| d >= layout.rank()) {
            return Err(Error::InvalidShape {
                op: op.name(),
                shape: layout.shape.clone(),
                message: format!("dim {bad} is out of range"),
            });
        }
        if op.is_arg() && dims.len() != 1 {
            return Err(Error::invalid(
                op.name(),
                "argmax/argmin reduce exactly one dim",
            ));
        }
        let kept: Vec<usize> = (0..layout.rank()).filter(|d| !dims.contains(d)).collect();
        let count: usize = dims.iter().map(|&d| layout.shape[d]).product();
        let outputs: usize = kept.iter().map(|&d| layout.shape[d]).product();
        let out_dtype = if op.is_arg() { DType::I32 } else { self.dtype };
        if count == 0 && !dims.is_empty() {
            if op == ReduceOp::Mean {
                // 0 / 0, as in PyTorch.
                return GpuStorage::full(&self.device, outputs, out_dtype, f64::NAN);
            }
            if op != ReduceOp::Sum {
                return Err(Error::InvalidShape {
                    op: op.name(),
                    shape: layout.shape.clone(),
                    message: "cannot reduce over an empty dim (no identity for this reduction)"
                        .into(),
                });
            }
            return GpuStorage::full(&self.device, outputs, out_dtype, 0.0);
        }
        // Few outputs with many elements each: split each output over several workgroups and
        // reduce the partial results in a second pass. Only where partials lose nothing (f16
        // partial sums would be rounded to f16; arg reductions need their indices).
        let splittable = matches!(
            op,
            ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min
        ) && self.dtype != DType::F16;
        let chunks = reduce_chunks(splittable, outputs, count);
        let out = GpuStorage::allocate(&self.device, op.name(), outputs * chunks, out_dtype)?;
        if outputs == 0 {
            return Ok(out);
        }
        // Kept and reduced dims each as the fewest (size, stride) pairs that enumerate the same
        // positions in the same order (batch norm's [n, c, h, w] over (0, 2, 3): reduced
        // [n, h·w]), so each element's position takes fewer divisions.
        let pairs = |selected: &[usize]| {
            let shape: Vec<usize> = selected.iter().map(|&d| layout.shape[d]).collect();
            let strides: Vec<usize> = selected.iter().map(|&d| layout.strides[d]).collect();
            merge_dims(&shape, &strides)
        };
        let (kept_shape, kept_strides) = pairs(&kept);
        let (reduced_shape, reduced_strides) = if op.is_arg() {
            // An arg reduction counts its index along the one dim as it is.
            (vec![layout.shape[dims[0]]], vec![layout.strides[dims[0]]])
        } else {
            pairs(dims)
        };
        let lanes = lanes_per_output(chunks, count);
        let header = ReduceParams {
            outputs: word(outputs)?,
            count: word(count)?,
            kept_rank: word(kept_shape.len())?,
            reduced_rank: word(reduced_shape.len())?,
            offset: word(layout.offset)?,
            chunks: word(chunks)?,
            chunk_length: word(count.div_ceil(chunks))?,
            lanes: word(lanes)?,
            divisor: word(divisor.unwrap_or(count).max(1))?,
        };
        let mut params = Params::with_header(&header, 2 * layout.rank());
        for value in kept_shape
            .into_iter()
            .chain(kept_strides)
            .chain(reduced_shape)
            .chain(reduced_strides)
        {
            params.push(value)?;
        }
        // One group of `lanes` invocations per (output, chunk).
        let context: &GpuContext = self.device.context();
        let workgroups = u32::try_from((outputs * chunks).div_ceil(256 / lanes))
            .map_err(|_| Error::invalid(op.name(), "too many outputs"))?;
        // A split mean's chunks hold partial sums; the second pass divides.
        let first_op = match (op, chunks > 1) {
            (ReduceOp::Mean, true) => ReduceOp::Sum,
            _ => op,
        };
        let key = ReduceKernel::Reduce {
            dtype: self.dtype,
            op: first_op,
        };
        context.dispatch(
            &key,
            params.words(),
            &[self.raw()?, out.raw()?],
            context.grid(workgroups),
        )?;
        if chunks > 1 {
            let partials = Layout::contiguous(&[outputs, chunks]);
            return out.reduce_divided(&partials, op, &[1], Some(divisor.unwrap_or(count)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::{lanes_per_output, reduce_chunks};

    #[test]
    fn short_reductions_share_a_workgroup() {
        assert_eq!(lanes_per_output(1, 128), 32);
        assert_eq!(lanes_per_output(1, 384), 128);
        assert_eq!(lanes_per_output(1, 1), 1);
        assert_eq!(lanes_per_output(1, 5), 2);
        assert_eq!(lanes_per_output(1, 1 << 20), 256);
        assert_eq!(lanes_per_output(32, 1 << 20), 256);
    }

    #[test]
    fn split_reductions_fill_the_gpu_with_long_enough_chunks() {
        assert_eq!(reduce_chunks(true, 64, 64 * 56 * 56), 32);
        assert_eq!(reduce_chunks(true, 1, 1 << 20), 256);
        assert_eq!(reduce_chunks(true, 512, 64 * 7 * 7), 1);
        assert_eq!(reduce_chunks(true, 256, 64 * 14 * 14), 3);
        assert_eq!(reduce_chunks(false, 1, 1 << 20), 1);
        assert_eq!(reduce_chunks(true, 1, 1 << 30), 1024);
    }
}
