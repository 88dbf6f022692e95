//! The fused attention kernel family: `softmax(q kᵀ · scale) v` in one kernel whose `[L, S]`
//! scores never leave registers (online softmax over key tiles), its row log-sum-exp saved for
//! the backward, and the backward as three kernels (`D = rowsum(dO ∘ O)`, then dK/dV per key
//! block and dQ per query block, FlashAttention-2's split: WGSL has no float atomics). The
//! WGSL is generated per pass, storage dtype, head size, value size and causal flag in
//! `attention/source.rs` (the f16 forward and gradient passes also have cooperative-matrix
//! kernels, `attention/coop.rs` and `attention/coop/backward.rs`, tried first); this module
//! holds the key, the parameters, the catalogue entries, [`supports`] (which shapes the
//! kernels cover; the tensor layer runs the composite for the rest) and the launchers.
//!
//! Operands are dense row-major storages read from element 0 (the tensor layer passes dense
//! copies of other views), bound as `array<vec4<S>>`: the widths are multiples of 4, so every
//! row starts on a `vec4`. Memory is linear in the lengths: q, k, v, o, dO and two f32 values
//! per query row (log-sum-exp and `D`). An optional f32 key-padding bias (`[rows, S]`, one row
//! per group of batch-heads) is added to the scaled scores; dK and dV are written into one
//! storage (dK first), since the context binds at most seven buffers per kernel.

pub(crate) mod coop;
pub(crate) mod delta_source;
pub(crate) mod kernel;
pub(crate) mod source;

use crate::backend::contract::Attention;
use crate::backend::gpu::attention::kernel::AttentionKernel;
use crate::backend::gpu::attention::source::{
    self as attention_source, AttentionPass, Variant, BLOCK_ROWS,
};
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::operands::same_device;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::storage_type;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{AttentionRows, AttentionShape};
use crate::layout::Layout;

const OP: &str = "scaled_dot_product_attention";

/// The largest head or value size the kernels are generated for.
pub(crate) const MAX_HEAD_DIM: usize = 128;

kernel_params! {
    /// Parameters of every fused attention kernel.
    struct AttentionParams {
        /// Batch × heads (the grid's y).
        batch_heads: u32,
        /// L: query rows per batch-head.
        query_length: u32,
        /// S: key (and value) rows per batch-head.
        key_length: u32,
        /// The factor applied to `q·k`.
        scale: f32,
        /// Batch-heads sharing one row of the key bias (1 without a bias).
        bias_group: u32,
        /// Heads per batch of the forward's operand views (batch-head `i` is head `i % heads`
        /// of batch `i / heads`); 1 for dense operands.
        heads: u32,
        /// The forward's query rows, in vec4s: row `r` of batch-head `i` starts at
        /// `offset + (i / heads) * batch + (i % heads) * head + r * row` (`AttentionRows`).
        query_offset: u32,
        query_batch: u32,
        query_head: u32,
        query_row: u32,
        /// The forward's key rows, likewise.
        key_offset: u32,
        key_batch: u32,
        key_head: u32,
        key_row: u32,
        /// The forward's value rows, likewise.
        value_offset: u32,
        value_batch: u32,
        value_head: u32,
        value_row: u32,
    }
}

/// The identity of one fused attention pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct AttentionKey {
    pub(crate) pass: AttentionPass,
    /// F32 or F16 storage (computed in f32).
    pub(crate) dtype: DType,
    /// Query/key width (a multiple of 4 up to [`MAX_HEAD_DIM`]).
    pub(crate) head_dim: u32,
    /// Value width (a multiple of 4 up to [`MAX_HEAD_DIM`]).
    pub(crate) value_dim: u32,
    pub(crate) causal: bool,
    /// A key-padding bias is bound (`attention_source::Variant::key_bias`).
    pub(crate) key_bias: bool,
}

impl AttentionKey {
    /// The WGSL of this instantiation (after `enable f16;` where needed).
    pub(crate) fn source(&self) -> String {
        attention_source::source(&Variant {
            pass: self.pass,
            stored: storage_type(self.dtype),
            head_dim: self.head_dim,
            value_dim: self.value_dim,
            causal: self.causal,
            key_bias: self.key_bias,
        })
    }
}

/// The catalogue entries (`kernel_catalog.rs`): every pass, both flags, the head sizes of
/// common models (and one with different widths); other multiples of 4 are generated alike.
pub(crate) fn catalogue(keys: &mut Vec<AttentionKernel>, dtype: DType) {
    if !matches!(dtype, DType::F32 | DType::F16) {
        return;
    }
    for (head_dim, value_dim) in [(16, 16), (32, 32), (64, 64), (128, 128), (20, 12)] {
        for pass in [
            AttentionPass::Forward,
            AttentionPass::Delta,
            AttentionPass::DeltaZeroing,
            AttentionPass::KeyValue,
            AttentionPass::Query,
        ] {
            // A mask and the causal flag never come together (the op refuses both).
            for (causal, key_bias) in [(false, false), (true, false), (false, true)] {
                keys.push(AttentionKernel::Attention(AttentionKey {
                    pass,
                    dtype,
                    head_dim,
                    value_dim,
                    causal,
                    key_bias,
                }));
            }
        }
    }
}

/// Whether the fused kernels cover this call on `device`: F32, or F16 where the adapter has
/// `SHADER_F16`; head and value sizes multiples of 4 up to [`MAX_HEAD_DIM`]; non-empty
/// lengths; grids within the per-dimension limit; and every operand within one storage
/// binding (no tensor in pieces).
pub(crate) fn supports(device: &GpuDevice, dtype: DType, shape: &AttentionShape) -> bool {
    let width_ok = |width: usize| width > 0 && width.is_multiple_of(4) && width <= MAX_HEAD_DIM;
    let dtype_ok = match dtype {
        DType::F32 => true,
        DType::F16 => device.supports_f16(),
        DType::BF16 | DType::F64 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => false,
    };
    let max = device.context().limits.max_compute_workgroups_per_dimension as usize;
    let blocks = |length: usize| length.div_ceil(BLOCK_ROWS as usize);
    let fits = |numel: usize| !GpuStorage::exceeds_binding(device, numel, dtype);
    dtype_ok
        && width_ok(shape.head_dim)
        && width_ok(shape.value_dim)
        && shape.query_length > 0
        && shape.key_length > 0
        && shape.batch_heads > 0
        && shape.batch_heads <= max
        && blocks(shape.query_length) <= max
        && blocks(shape.key_length) <= max
        && [
            shape.query_numel(),
            shape.key_numel(),
            shape.value_numel(),
            shape.output_numel(),
        ]
        .into_iter()
        .all(fits)
        && !GpuStorage::exceeds_binding(device, 2 * shape.rows(), DType::F32)
        && !GpuStorage::exceeds_binding(device, shape.key_numel() + shape.value_numel(), dtype)
        && match shape.key_bias_group {
            None => true,
            Some(group) => group > 0 && shape.batch_heads.is_multiple_of(group) && !shape.causal,
        }
}

/// The parameter words and the key of one pass.
fn prepare(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
    pass: AttentionPass,
) -> Result<(Params, AttentionKernel)> {
    let dense = (
        dense_rows(shape.query_length, shape.head_dim),
        dense_rows(shape.key_length, shape.head_dim),
        dense_rows(shape.key_length, shape.value_dim),
    );
    prepare_views(device, dtype, shape, pass, dense)
}

/// The rows of a dense `[batch_heads, rows, width]` operand from element 0 (one head per
/// batch).
fn dense_rows(rows: usize, width: usize) -> AttentionRows {
    AttentionRows {
        offset: 0,
        batch: rows * width / 4,
        head: 0,
        row: width / 4,
        heads: 1,
    }
}

/// [`prepare`] for a forward whose operands' rows lie where `query`, `key` and `value` say
/// (the same heads per batch).
fn prepare_views(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
    pass: AttentionPass,
    (query, key, value): (AttentionRows, AttentionRows, AttentionRows),
) -> Result<(Params, AttentionKernel)> {
    if !supports(device, dtype, shape) {
        return Err(Error::invalid(
            OP,
            format!("the fused GPU kernels do not cover {shape:?} in {dtype}"),
        ));
    }
    let header = AttentionParams {
        batch_heads: word(shape.batch_heads)?,
        query_length: word(shape.query_length)?,
        key_length: word(shape.key_length)?,
        scale: shape.scale as f32,
        bias_group: word(shape.key_bias_group.unwrap_or(1))?,
        heads: word(query.heads)?,
        query_offset: word(query.offset)?,
        query_batch: word(query.batch)?,
        query_head: word(query.head)?,
        query_row: word(query.row)?,
        key_offset: word(key.offset)?,
        key_batch: word(key.batch)?,
        key_head: word(key.head)?,
        key_row: word(key.row)?,
        value_offset: word(value.offset)?,
        value_batch: word(value.batch)?,
        value_head: word(value.head)?,
        value_row: word(value.row)?,
    };
    let key = AttentionKernel::Attention(AttentionKey {
        pass,
        dtype,
        head_dim: word(shape.head_dim)?,
        value_dim: word(shape.value_dim)?,
        causal: shape.causal,
        key_bias: shape.key_bias_group.is_some(),
    });
    Ok((Params::with_header(&header, 0), key))
}

/// The checks of the query, key and value that both passes share.
fn check_inputs(
    query: &GpuStorage,
    key: &GpuStorage,
    value: &GpuStorage,
    shape: &AttentionShape,
) -> Result<()> {
    let dtype = query.dtype();
    check_operand("query", query, query, dtype, shape.query_numel())?;
    check_operand("key", key, query, dtype, shape.key_numel())?;
    check_operand("value", value, query, dtype, shape.value_numel())
}

/// Refuse a storage that does not hold exactly `numel` elements of `dtype` on `device`.
fn check_operand(
    name: &str,
    storage: &GpuStorage,
    reference: &GpuStorage,
    dtype: DType,
    numel: usize,
) -> Result<()> {
    same_device(OP, reference, storage)?;
    if storage.dtype() != dtype {
        return Err(Error::DTypeMismatch {
            op: OP,
            lhs: dtype,
            rhs: storage.dtype(),
        });
    }
    if storage.len() != numel {
        return Err(Error::invalid(
            OP,
            format!(
                "{name} holds {} elements, the fused kernel expects {numel}",
                storage.len()
            ),
        ));
    }
    Ok(())
}

/// Operand sizes (here, not in `geometry.rs`: only the GPU kernels need them).
impl AttentionShape {
    /// Elements of the query (and of its gradient).
    pub(crate) fn query_numel(&self) -> usize {
        self.batch_heads * self.query_length * self.head_dim
    }

    /// Elements of the key (and of its gradient).
    pub(crate) fn key_numel(&self) -> usize {
        self.batch_heads * self.key_length * self.head_dim
    }

    /// Elements of the value (and of its gradient).
    pub(crate) fn value_numel(&self) -> usize {
        self.batch_heads * self.key_length * self.value_dim
    }

    /// Elements of the output (and of its gradient).
    pub(crate) fn output_numel(&self) -> usize {
        self.batch_heads * self.query_length * self.value_dim
    }
}

/// The key bias, checked against `shape` (present exactly when `key_bias_group` is set; f32,
/// one row of `key_length` per group of batch-heads).
fn check_bias<'a>(
    query: &GpuStorage,
    key_bias: Option<&'a GpuStorage>,
    shape: &AttentionShape,
) -> Result<Option<&'a GpuStorage>> {
    match (key_bias, shape.key_bias_group) {
        (None, None) => Ok(None),
        (Some(bias), Some(group)) => {
            let rows = shape.batch_heads / group.max(1);
            check_operand("key bias", bias, query, DType::F32, rows * shape.key_length)?;
            Ok(Some(bias))
        }
        (Some(_), None) | (None, Some(_)) => Err(Error::invalid(
            OP,
            "the key bias and the shape's key_bias_group disagree",
        )),
    }
}

/// The delta pass's grid: one invocation per vec4 of the output rows where the spread kernel
/// applies (`delta_rows_per_workgroup`), else one per row.
fn delta_grid(
    context: &crate::backend::gpu::runtime::context::GpuContext,
    shape: &AttentionShape,
) -> (u32, u32, u32) {
    match crate::backend::gpu::attention::delta_source::delta_rows_per_workgroup(
        shape.value_dim as u32,
    ) {
        Some(rows) => context.grid(shape.rows().div_ceil(rows as usize) as u32),
        None => grid(shape.query_length, shape),
    }
}

/// The grid of a pass over `length` rows per batch-head.
fn grid(length: usize, shape: &AttentionShape) -> (u32, u32, u32) {
    (
        length.div_ceil(BLOCK_ROWS as usize) as u32,
        shape.batch_heads as u32,
        1,
    )
}

/// Record the key-value or the query pass of the backward (`prepared` by [`prepare`] for that
/// pass): on tensor cores where they apply (`attention/coop/backward.rs`), else (or when the
/// driver refused that kernel) the scalar kernel; both take the same bindings.
fn gradient_pass(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
    pass: AttentionPass,
    (params, kernel): (Params, AttentionKernel),
    bindings: &[&wgpu::Buffer],
) -> Result<()> {
    use crate::backend::gpu::attention::coop::backward::{
        backward_key, run_backward, CoopBackwardPass,
    };
    let (coop_pass, length) = match pass {
        AttentionPass::KeyValue => (CoopBackwardPass::KeyValue, shape.key_length),
        AttentionPass::Query => (CoopBackwardPass::Query, shape.query_length),
        AttentionPass::Forward | AttentionPass::Delta | AttentionPass::DeltaZeroing => {
            return Err(Error::invalid(OP, format!("{pass:?} is no gradient pass")))
        }
    };
    if let Some(coop) = backward_key(device, dtype, shape, coop_pass) {
        if run_backward(device, coop, params.words(), bindings, shape)? {
            return Ok(());
        }
    }
    device
        .context()
        .dispatch(&kernel, params.words(), bindings, grid(length, shape))
}

impl Attention for GpuStorage {
    /// [`supports`], for the storage layer.
    fn attention_supported(device: &GpuDevice, dtype: DType, shape: &AttentionShape) -> bool {
        supports(device, dtype, shape)
    }

    /// The fused forward: `self` is the dense query, `key` and `value` dense, and the key
    /// bias where `shape.key_bias_group` says there is one. Returns the output
    /// `[batch_heads, query_length, value_dim]` (the query's dtype) and the f32 log-sum-exp of
    /// every query row's scaled scores.
    fn attention_forward(
        &self,
        key: &GpuStorage,
        value: &GpuStorage,
        key_bias: Option<&GpuStorage>,
        shape: &AttentionShape,
    ) -> Result<(GpuStorage, GpuStorage)> {
        let dtype = self.dtype();
        check_inputs(self, key, value, shape)?;
        let device = self.device();
        // Tensor cores first where they apply (`attention/coop.rs`); the scalar kernel where
        // they do not or the driver refused their kernel.
        if let Some(coop) = crate::backend::gpu::attention::coop::forward_key(device, dtype, shape)
        {
            let bias = check_bias(self, key_bias, shape)?;
            let (params, _) = prepare(device, dtype, shape, AttentionPass::Forward)?;
            let output = GpuStorage::allocate(device, OP, shape.output_numel(), dtype)?;
            let logsumexp = GpuStorage::allocate(device, OP, shape.rows(), DType::F32)?;
            let mut bindings = vec![self.raw()?, key.raw()?, value.raw()?];
            bindings.extend(bias.map(GpuStorage::raw).transpose()?);
            bindings.extend([output.raw()?, logsumexp.raw()?]);
            if crate::backend::gpu::attention::coop::run_forward(
                device,
                coop,
                params.words(),
                &bindings,
                shape,
            )? {
                return Ok((output, logsumexp));
            }
        }
        // The scalar kernel: dense operands are views with one head per batch-head.
        let dense = |rows, width| Layout::contiguous(&[shape.batch_heads, 1, rows, width]);
        self.attention_forward_views(
            &dense(shape.query_length, shape.head_dim),
            key,
            &dense(shape.key_length, shape.head_dim),
            value,
            &dense(shape.key_length, shape.value_dim),
            key_bias,
            shape,
        )
    }

    /// Whether [`GpuStorage::attention_forward_views`] runs the same kernel as the dense
    /// forward for this call: the scalar forward (the cooperative one, where it applies, reads
    /// dense operands only, so the caller passes dense copies there).
    fn attention_forward_takes_views(
        device: &GpuDevice,
        dtype: DType,
        shape: &AttentionShape,
    ) -> bool {
        supports(device, dtype, shape)
            && crate::backend::gpu::attention::coop::forward_key(device, dtype, shape).is_none()
    }

    /// The fused forward (scalar kernel) reading the query `self`, the key and the value
    /// through `[batch, heads, rows, width]` views (`AttentionRows::of` must address each: the
    /// tensor layer copies the others dense) whose batch and head counts multiply to
    /// `shape.batch_heads`; otherwise as [`GpuStorage::attention_forward`] (dense output and
    /// log-sum-exp).
    #[allow(clippy::too_many_arguments)]
    fn attention_forward_views(
        &self,
        query_layout: &Layout,
        key: &GpuStorage,
        key_layout: &Layout,
        value: &GpuStorage,
        value_layout: &Layout,
        key_bias: Option<&GpuStorage>,
        shape: &AttentionShape,
    ) -> Result<(GpuStorage, GpuStorage)> {
        let dtype = self.dtype();
        let operands = [
            (
                "query",
                self,
                query_layout,
                shape.query_length,
                shape.head_dim,
            ),
            ("key", key, key_layout, shape.key_length, shape.head_dim),
            (
                "value",
                value,
                value_layout,
                shape.key_length,
                shape.value_dim,
            ),
        ];
        let mut rows: Vec<AttentionRows> = Vec::with_capacity(3);
        for (name, storage, layout, length, width) in operands {
            same_device(OP, self, storage)?;
            if storage.dtype() != dtype {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    lhs: dtype,
                    rhs: storage.dtype(),
                });
            }
            check_view(OP, layout, storage.len())?;
            let view = AttentionRows::of(layout).filter(|view| {
                layout.shape[0] * view.heads == shape.batch_heads
                    && layout.shape[2..] == [length, width]
                    && rows.first().is_none_or(|first| first.heads == view.heads)
            });
            let Some(view) = view else {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "the {name} view {layout:?} is no [batch, heads, {length}, {width}] view \
                         the kernel can address"
                    ),
                ));
            };
            rows.push(view);
        }
        let bias = check_bias(self, key_bias, shape)?;
        let device = self.device();
        let (params, kernel) = prepare_views(
            device,
            dtype,
            shape,
            AttentionPass::Forward,
            (rows[0], rows[1], rows[2]),
        )?;
        let output = GpuStorage::allocate(device, OP, shape.output_numel(), dtype)?;
        let logsumexp = GpuStorage::allocate(device, OP, shape.rows(), DType::F32)?;
        let mut bindings = vec![self.raw()?, key.raw()?, value.raw()?];
        bindings.extend(bias.map(GpuStorage::raw).transpose()?);
        bindings.extend([output.raw()?, logsumexp.raw()?]);
        device.context().dispatch(
            &kernel,
            params.words(),
            &bindings,
            grid(shape.query_length, shape),
        )?;
        Ok((output, logsumexp))
    }

    /// The fused backward: `self` the dense query, then key, value, the forward's output and
    /// log-sum-exp, the output's gradient (dense) and the key bias as in the forward. Returns
    /// the query's gradient and one storage holding the key's gradient followed by the
    /// value's (their dtype, computed in f32).
    #[allow(clippy::too_many_arguments)]
    fn attention_backward(
        &self,
        key: &GpuStorage,
        value: &GpuStorage,
        output: &GpuStorage,
        logsumexp: &GpuStorage,
        grad_output: &GpuStorage,
        key_bias: Option<&GpuStorage>,
        shape: &AttentionShape,
    ) -> Result<(GpuStorage, GpuStorage)> {
        let dtype = self.dtype();
        check_inputs(self, key, value, shape)?;
        check_operand("output", output, self, dtype, shape.output_numel())?;
        check_operand(
            "grad_output",
            grad_output,
            self,
            dtype,
            shape.output_numel(),
        )?;
        check_operand("logsumexp", logsumexp, self, DType::F32, shape.rows())?;
        let bias = check_bias(self, key_bias, shape)?;
        let device = self.device();
        let context = device.context();
        // (log-sum-exp, D) per row; where the key-value kernel will sum the query gradient
        // (`attention/coop/backward/fold.rs`), the same pass zeroes the f32 sums it adds into.
        let statistics = GpuStorage::allocate(device, OP, 2 * shape.rows(), DType::F32)?;
        let fold = crate::backend::gpu::attention::coop::backward::fold_plan(device, dtype, shape)
            .map(|plan| -> Result<_> {
                let sums = GpuStorage::allocate(device, OP, plan.sums_numel, DType::F32)?;
                Ok((plan, sums))
            })
            .transpose()?;
        let pass = match fold {
            Some(_) => AttentionPass::DeltaZeroing,
            None => AttentionPass::Delta,
        };
        let (params, kernel) = prepare(device, dtype, shape, pass)?;
        let mut delta_bindings = vec![
            output.raw()?,
            grad_output.raw()?,
            logsumexp.raw()?,
            statistics.raw()?,
        ];
        if let Some((_, sums)) = &fold {
            delta_bindings.push(sums.raw()?);
        }
        context.dispatch(
            &kernel,
            params.words(),
            &delta_bindings,
            delta_grid(context, shape),
        )?;
        let key_value_grad =
            GpuStorage::allocate(device, OP, shape.key_numel() + shape.value_numel(), dtype)?;
        let mut bindings = vec![
            self.raw()?,
            key.raw()?,
            value.raw()?,
            grad_output.raw()?,
            statistics.raw()?,
        ];
        bindings.extend(bias.map(GpuStorage::raw).transpose()?);
        bindings.push(key_value_grad.raw()?);
        let key_value = prepare(device, dtype, shape, AttentionPass::KeyValue)?;
        if let Some((plan, sums)) = fold {
            let folded = crate::backend::gpu::attention::coop::backward::run_folded(
                device,
                dtype,
                shape,
                plan,
                sums,
                key_value.0.words(),
                &bindings,
            )?;
            if let Some(query_grad) = folded {
                return Ok((query_grad, key_value_grad));
            }
        }
        gradient_pass(
            device,
            dtype,
            shape,
            AttentionPass::KeyValue,
            key_value,
            &bindings,
        )?;
        let query_grad = GpuStorage::allocate(device, OP, shape.query_numel(), dtype)?;
        bindings.pop();
        bindings.push(query_grad.raw()?);
        let query = prepare(device, dtype, shape, AttentionPass::Query)?;
        gradient_pass(device, dtype, shape, AttentionPass::Query, query, &bindings)?;
        Ok((query_grad, key_value_grad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::attention::source::tile_rows;
    use crate::backend::gpu::runtime::kernel::Kernel;

    /// Every pass validates with naga for widths the catalogue does not list, tiles of both
    /// sizes included (the catalogue test covers the listed ones).
    #[test]
    fn uneven_widths_validate() {
        for (head_dim, value_dim) in [(4, 8), (96, 40), (128, 4)] {
            for pass in [
                AttentionPass::Forward,
                AttentionPass::Delta,
                AttentionPass::DeltaZeroing,
                AttentionPass::KeyValue,
                AttentionPass::Query,
            ] {
                for (dtype, causal, key_bias) in
                    [(DType::F32, true, false), (DType::F16, false, true)]
                {
                    let key = AttentionKernel::Attention(AttentionKey {
                        pass,
                        dtype,
                        head_dim,
                        value_dim,
                        causal,
                        key_bias,
                    });
                    if let Err(error) =
                        crate::backend::gpu::runtime::shader_check::naga_check(&key.source())
                    {
                        panic!("{key:?}: {error}");
                    }
                }
            }
        }
        assert_eq!(tile_rows(64, 64), 32);
        assert_eq!(tile_rows(128, 64), 16);
    }
}
