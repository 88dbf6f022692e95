//! The backend contract: `BackendStorage`, the primitives every backend implements (the CPU's
//! `CpuStorage`, the GPU's `GpuStorage`). `storage.rs` dispatches each primitive through one
//! helper that records it for the profiler and checks devices and dtypes once, so a backend
//! method may assume its operands share a device and (where stated) a dtype.
//!
//! Common rules: inputs come with their `Layout` (views are metadata, any strides); every
//! output is a new contiguous storage. Each method checks its views against its storages
//! (`backend/checks.rs`): a view reaching outside its storage, a dim out of range or operands
//! of the wrong rank is an `Error` naming the op, never a panic or a wild read. A dtype the
//! backend cannot compute in is `Error::Unsupported`.
//!
//! Adding a primitive: a method here, its implementation in `cpu/contract.rs` and
//! `gpu/contract.rs` (the compiler refuses to build until both exist), and one `Storage`
//! method in `storage.rs` whose body is one `dispatch` call.

use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{Conv2dParams, Window};
use crate::layout::{Layout, MemoryFormat};
use crate::op::{BinaryOp, EpilogueActivation, ReduceOp, UnaryOp};
use crate::random::Distribution;

/// The tensors and activation of a convolution's epilogue (`BackendStorage::conv2d_epilogue`),
/// each tensor with its view.
pub(crate) struct Epilogue<'a, S> {
    /// Per output channel multiplier, F32 `[o]`.
    pub scale: (&'a S, &'a Layout),
    /// Per output channel offset, F32 `[o]`.
    pub shift: (&'a S, &'a Layout),
    /// Added after the shift: the output's shape, the input's dtype.
    pub residual: Option<(&'a S, &'a Layout)>,
    /// Applied last.
    pub activation: EpilogueActivation,
}

/// The optional `(weight, bias)` of `BackendStorage::layer_norm_last`, each with its view.
pub(crate) type Affine<'a, S> = Option<((&'a S, &'a Layout), (&'a S, &'a Layout))>;

/// The primitives of one backend's tensor data.
pub(crate) trait BackendStorage: Sized {
    /// The handle creation needs (`()` for the CPU, the opened GPU for the GPU).
    type Device;

    /// `numel` elements of `dtype`, all equal to `value` (converted like `as`).
    fn full(device: &Self::Device, numel: usize, dtype: DType, value: f64) -> Result<Self>;

    /// `start + i * step` for `i in 0..numel`, computed in f64 and converted to `dtype`
    /// (both backends give the same numbers).
    fn arange(
        device: &Self::Device,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<Self>;

    /// Counter-based random floats (see `random.rs`): element `i` uses counter `offset + i`,
    /// so both backends draw the same numbers. Integer dtypes are `Unsupported`.
    fn random(
        device: &Self::Device,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Self>;

    /// Elementwise unary op; float ops on integer data are `Unsupported`.
    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self>;

    /// Elementwise binary op. The layouts have the same shape (the tensor layer broadcasts
    /// with stride-0 views first) and the storages the same dtype (checked by the dispatcher).
    fn binary(
        &self,
        layout: &Layout,
        rhs: &Self,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Self>;

    /// `x op scalar`, or `scalar op x` when `scalar_on_left`, elementwise.
    fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Self>;

    /// `self ? on_true : on_false` elementwise: `self` is the condition (any dtype, non-zero
    /// is true); the three layouts have the same shape, `on_true` and `on_false` one dtype.
    fn where_select(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_layout: &Layout,
        on_false: &Self,
        false_layout: &Layout,
    ) -> Result<Self>;

    /// Reduction over `dims` (sorted, unique, in range): the output has the input's shape
    /// with each reduced dim set to 1 (keepdim). Arg reductions take exactly one dim and
    /// return `I32`. Reducing an empty dim is an error except for `Sum` (zeros).
    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self>;

    /// Batched matrix product: layouts are rank 3, `[batch, m, k]` and `[batch, k, n]` (a
    /// batch stride may be 0); output `[batch, m, n]`; one dtype (checked by the dispatcher).
    fn matmul(&self, layout: &Layout, rhs: &Self, rhs_layout: &Layout) -> Result<Self>;

    /// 2-D convolution with one group and no bias: input `[n, c, h, w]` and weight
    /// `[o, c, kh, kw]` (any strides, one dtype); output contiguous `[n, o, oh, ow]`. Float
    /// dtypes only. The geometry is `geometry::Conv2dShape`, the same on every backend.
    fn conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self>;

    /// conv2d followed by its epilogue, in one pass where the backend can:
    /// `activation(conv2d(x, weight)[ni, co, ..] * scale[co] + shift[co] + residual[ni, co, ..])`
    /// computed in f32 and rounded once to the convolution's dtype. `scale` and `shift` are
    /// F32 `[o]` views; `residual` (optional) has the output's shape and the input's dtype.
    /// Same rules as `conv2d`; the output is dense in `format` (`MemoryFormat::layout` of
    /// the output shape). Inference only: autograd never records it (`Tensor::conv2d_fused`
    /// runs the composite when a gradient is needed).
    fn conv2d_epilogue(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: &Epilogue<'_, Self>,
        format: MemoryFormat,
    ) -> Result<Self>;

    /// The memory format this backend writes `conv2d_epilogue`'s output in fastest for
    /// these operands: channels-last where the GPU's tensor-core convolutions run it (the
    /// next such convolution then reads it without a copy), contiguous everywhere else.
    fn conv2d_epilogue_format(
        &self,
        layout: &Layout,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> MemoryFormat;

    /// Softmax over the view's last dim (`exp(x - max) / sum` per row, computed in f32 for
    /// F16); output contiguous, the view's shape. Float dtypes only. With `safe` the sum is
    /// clamped below at 0.5: a row of only `-inf` gives zeros rather than NaN (every other
    /// row's sum is at least 1), as masked attention needs.
    fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<Self>;

    /// Layer normalization over the view's last dim: `(x - mean) * rsqrt(var + eps)` per row
    /// (biased variance), then `* weight + bias` where `affine` gives them (`[length]` views
    /// of this dtype); output contiguous, the view's shape. Float dtypes only.
    fn layer_norm_last(&self, layout: &Layout, affine: Affine<'_, Self>, eps: f64) -> Result<Self>;

    /// Batch-norm statistics in one pass: for `self` of shape `[n, c, ...]` (rank >= 2, F32
    /// or F16), a contiguous F32 `[2, c]`: row 0 the mean of each channel over every other dim,
    /// row 1 its biased variance (computed in f32 or wider, without an f32 copy of an F16
    /// input). An empty channel gives NaN, as `mean` does.
    fn batch_norm_stats(&self, layout: &Layout) -> Result<Self>;

    /// Batch norm's backward sums in one pass: `self` the output gradient `g` and `input` the
    /// forward's input (same shape `[n, c, ...]`, same dtype), `mean` the F32 `[c]` batch
    /// mean; a contiguous F32 `[2, c]`: row 0 `sum(g)`, row 1 `sum(g * (input - mean))` per
    /// channel over every other dim.
    fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        mean: &Self,
        mean_layout: &Layout,
    ) -> Result<Self>;

    /// Batch norm's input gradient in one pass: `self` the output gradient `g` and `input` the
    /// forward's input (same shape `[n, c, ...]`, same dtype, F32 or F16), `coefficients` an
    /// F32 `[4, c]` whose rows are per channel the mean μ, the scale k, the mean gradient ḡ
    /// and the slope s; a contiguous `k·(g − ḡ − (x − μ)·s)` in the input's dtype, computed in
    /// f32 or wider.
    fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        coefficients: &Self,
        coefficients_layout: &Layout,
    ) -> Result<Self>;

    /// The convolution's input gradient (the transposed convolution): `self` is the output
    /// gradient, which must have the forward output's shape, `weight` the forward's weight;
    /// returns contiguous `[n, c, h, w]` of `input_shape`.
    fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self>;

    /// The convolution's weight gradient: `self` is the forward's input `[n, c, h, w]`,
    /// `grad` the output gradient (the forward output's shape); returns contiguous
    /// `[o, c, kh, kw]` of `weight_shape`.
    fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self>;

    /// 2-D max pooling: `self` is the input `[n, c, h, w]` (any strides); output `[n, c, oh,
    /// ow]` dense in `format` (the geometry is `geometry::PoolShape`, the same on every
    /// backend). Padding reads `-inf` (never wins); a NaN in a window gives NaN, like
    /// PyTorch. Float dtypes only.
    fn max_pool2d(&self, layout: &Layout, window: &Window, format: MemoryFormat) -> Result<Self>;

    /// Max pooling's input gradient: `self` is the forward's input, `output` the forward's
    /// output and `grad` the output gradient (both of the output's shape, any strides; the
    /// three share one dtype). Each output's gradient goes to the first tap of its window, in
    /// row-major kernel order, whose input equals the output (NaN matching NaN), as PyTorch
    /// routes ties. Returns `[n, c, h, w]` dense in the input's memory format
    /// (`MemoryFormat::of(layout)`: channels-last activations get a channels-last gradient);
    /// no atomics: deterministic.
    fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &Self,
        output_layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<Self>;

    /// A contiguous copy of the view.
    fn copy_strided(&self, layout: &Layout) -> Result<Self>;

    /// Copy the view `layout` of `self` into the view `dst_layout` of `dst` (same shape, same
    /// dtype). Used by `cat`, `assign`, view gradients and the optimizers' in-place updates.
    fn copy_into(&self, layout: &Layout, dst: &mut Self, dst_layout: &Layout) -> Result<()>;

    /// One SGD step in place (`update::SgdStep`): `self` is the parameter, `grad` its
    /// gradient and `buffer` its momentum buffer (required when the step has momentum,
    /// ignored otherwise). All of one float dtype and one shape, each view contiguous (any
    /// offset; others are `Error::InvalidArgument`: the tensor layer takes the composite ops
    /// for them). The GPU writes the parameter and the buffer in one kernel. Where `skip` (a
    /// U32 storage whose first element the device reads, as `unscale` sets it) is nonzero,
    /// nothing is written: mixed precision skips a step with inf/NaN gradients without
    /// reading the flag back to the host.
    fn sgd_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        buffer: Option<(&mut Self, &Layout)>,
        step: &crate::update::SgdStep,
        skip: Option<&Self>,
    ) -> Result<()>;

    /// Mixed precision's gradient unscaling in place: every element of the view (float,
    /// contiguous, any offset) becomes `x / scale`, and where an element was inf or NaN,
    /// `found` (a U32 `[1]` storage, never cleared here) becomes nonzero.
    fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut Self) -> Result<()>;

    /// The view converted to `dtype` (contiguous output; float to integer truncates toward
    /// zero and saturates).
    fn cast(&self, layout: &Layout, dtype: DType) -> Result<Self>;

    /// Entries of `dim` picked by `indices` (an integer storage of any rank, read flat): the
    /// output shape is the input's with `dim` replaced by the number of indices.
    /// Out-of-range indices are `Error::InvalidArgument`, never a panic or a wild read.
    fn index_select(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// `out[i][j][k] = self[i][indices[i][j][k]][k]` for `dim = 1` (likewise for any dim): the
    /// output has the indices' shape. Out-of-range indices are `Error::InvalidArgument`.
    fn gather(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// A copy of `self` (the base) with `src` added at `indices` along `dim`:
    /// `out[i][indices[i][j][k]][k] += src[i][j][k]` for `dim = 1`; the output has the base's
    /// shape, `src` the base's dtype. Out-of-range indices are `Error::InvalidArgument`, never
    /// a wild write.
    fn scatter_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// `index_add` (PyTorch's `index_add`): a copy of `self` (the base) with `src` added at
    /// the 1-D integer `indices` along `dim`: `out[.., indices[j], ..] += src[.., j, ..]`.
    /// `src` has the base's shape with `dim` replaced by the number of indices, and the base's
    /// dtype; repeated indices sum up (floats in f32). Rows never indexed keep the base's
    /// value. Out-of-range or negative indices are `Error::InvalidArgument`, never a wild
    /// write. The GPU's sum is deterministic (same bits every run, no float atomics).
    fn index_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// The positions along `dim` that sort each row of the view, stable (equal values keep
    /// their order), ascending or `descending`; NaN counts as larger than every number and
    /// `-0.0` equals `0.0`. Output: contiguous `I32` of the view's shape (`sort`, `topk`
    /// gather the values with these).
    fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<Self>;
}

/// `storage`, a dense row-major `[n, c, h, w]` of `shape`, laid out in `format`: itself, or
/// its channels-last copy (for backends whose kernel writes only the row-major order).
pub(crate) fn into_format<S: BackendStorage>(
    storage: S,
    shape: &[usize],
    format: MemoryFormat,
) -> Result<S> {
    match (format, shape) {
        (MemoryFormat::ChannelsLast, &[_, channels, height, width])
            if channels > 1 && height * width > 1 =>
        {
            storage.copy_strided(&Layout::contiguous(shape).permute(&[0, 2, 3, 1]))
        }
        (MemoryFormat::ChannelsLast | MemoryFormat::Contiguous, _) => Ok(storage),
    }
}
