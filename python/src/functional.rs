//! The native part of `anygrad.nn.functional`: convolution (and its transpose), pooling, linear,
//! normalization, attention, resampling (interpolate, grid_sample, affine_grid), dropout and
//! embedding on library tensors (cross-entropy and NLL are in `losses.rs`; the other losses and
//! the activations are written in Python over tensor methods). Sizes accept an int or a pair, as
//! in PyTorch.

use anygrad::{
    Conv2dParams, ConvTranspose2dParams, DType, GridSampleMode, GridSamplePadding, InterpolateMode,
    InterpolateSize, Tensor,
};
use pyo3::prelude::*;

use crate::errors::{run, type_error, value_error};
use crate::tensor::{optional_tensor_arg, tensor_arg, PyTensor};

/// An int or a pair of ints (`kernel_size=3` or `(3, 3)`).
fn pair(op: &str, name: &str, value: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    if let Ok(single) = value.extract::<usize>() {
        return Ok((single, single));
    }
    if let Ok((a, b)) = value.extract::<(usize, usize)>() {
        return Ok((a, b));
    }
    if let Ok(list) = value.extract::<Vec<usize>>() {
        if list.len() == 1 {
            return Ok((list[0], list[0]));
        }
    }
    Err(type_error(
        op,
        format!("{name} must be a non-negative int or a pair of them, got {value}"),
    ))
}

/// An optional pair (`None` → `default`).
fn optional_pair(
    op: &str,
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
    default: (usize, usize),
) -> PyResult<(usize, usize)> {
    match value {
        Some(value) if !value.is_none() => pair(op, name, value),
        _ => Ok(default),
    }
}

/// 2-D convolution (`F.conv2d`).
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1))]
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    groups: usize,
) -> PyResult<PyTensor> {
    const OP: &str = "conv2d";
    let input = tensor_arg(OP, "input", input)?;
    let weight = tensor_arg(OP, "weight", weight)?;
    let bias = optional_tensor_arg(OP, "bias", bias)?;
    if let Some(text) = padding.and_then(|p| p.extract::<String>().ok()) {
        return Err(value_error(
            OP,
            format!("padding={text:?} is not supported; give the padding in elements"),
        ));
    }
    let params = Conv2dParams {
        stride: optional_pair(OP, "stride", stride, (1, 1))?,
        padding: optional_pair(OP, "padding", padding, (0, 0))?,
        dilation: optional_pair(OP, "dilation", dilation, (1, 1))?,
        groups,
    };
    let (x, w, b) = (input.tensor, weight.tensor, bias.map(|b| b.tensor));
    let result = py.allow_threads(move || run(OP, || x.conv2d(&w, b.as_ref(), params)))?;
    Ok(PyTensor::wrap(result))
}

/// 2-D max pooling (`F.max_pool2d`); `stride` defaults to the kernel size.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false))]
pub fn max_pool2d(
    input: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "max_pool2d";
    let input = tensor_arg(OP, "input", input)?;
    let kernel = pair(OP, "kernel_size", kernel_size)?;
    let stride = optional_pair(OP, "stride", stride, kernel)?;
    let padding = optional_pair(OP, "padding", padding, (0, 0))?;
    if optional_pair(OP, "dilation", dilation, (1, 1))? != (1, 1) {
        return Err(value_error(OP, "dilation other than 1 is not supported"));
    }
    if ceil_mode {
        return Err(value_error(OP, "ceil_mode=True is not supported"));
    }
    Ok(input.derived(run(OP, || {
        input.tensor.max_pool2d(kernel, stride, padding)
    })?))
}

/// 2-D average pooling (`F.avg_pool2d`); `stride` defaults to the kernel size.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true))]
pub fn avg_pool2d(
    input: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "avg_pool2d";
    let input = tensor_arg(OP, "input", input)?;
    let kernel = pair(OP, "kernel_size", kernel_size)?;
    let stride = optional_pair(OP, "stride", stride, kernel)?;
    let padding = optional_pair(OP, "padding", padding, (0, 0))?;
    if ceil_mode {
        return Err(value_error(OP, "ceil_mode=True is not supported"));
    }
    if !count_include_pad && padding != (0, 0) {
        return Err(value_error(
            OP,
            "count_include_pad=False with padding is not supported",
        ));
    }
    Ok(input.derived(run(OP, || {
        input.tensor.avg_pool2d(kernel, stride, padding)
    })?))
}

/// Adaptive average pooling to `output_size` (`F.adaptive_avg_pool2d`): exact when the input
/// divides evenly (or the output is 1×1); other sizes average PyTorch's overlapping windows.
#[pyfunction]
pub fn adaptive_avg_pool2d(
    input: &Bound<'_, PyAny>,
    output_size: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    const OP: &str = "adaptive_avg_pool2d";
    let input = tensor_arg(OP, "input", input)?;
    let shape = input.tensor.shape().to_vec();
    if shape.len() != 4 && shape.len() != 3 {
        return Err(crate::errors::runtime_error(
            OP,
            format!("expects a 3-D or 4-D input, got shape {shape:?}"),
        ));
    }
    let (h, w) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let (oh, ow) = if let Ok((a, b)) = output_size.extract::<(Option<usize>, Option<usize>)>() {
        (a.unwrap_or(h), b.unwrap_or(w))
    } else {
        pair(OP, "output_size", output_size)?
    };
    if oh == 0 || ow == 0 {
        return Err(value_error(OP, "output_size must be positive"));
    }
    let result = run(OP, || {
        let x = &input.tensor;
        if (oh, ow) == (1, 1) {
            return x.mean(&[-2, -1], true);
        }
        if h % oh == 0 && w % ow == 0 {
            let kernel = (h / oh, w / ow);
            return if shape.len() == 3 {
                x.unsqueeze(0)?
                    .avg_pool2d(kernel, kernel, (0, 0))?
                    .squeeze(0)
            } else {
                x.avg_pool2d(kernel, kernel, (0, 0))
            };
        }
        // PyTorch's windows: [floor(i*h/oh), ceil((i+1)*h/oh)).
        let mut rows = Vec::with_capacity(oh);
        for i in 0..oh {
            let (r0, r1) = (i * h / oh, ((i + 1) * h).div_ceil(oh));
            let band = x.narrow(-2, r0, r1 - r0)?;
            let mut cells = Vec::with_capacity(ow);
            for j in 0..ow {
                let (c0, c1) = (j * w / ow, ((j + 1) * w).div_ceil(ow));
                cells.push(band.narrow(-1, c0, c1 - c0)?.mean(&[-2, -1], true)?);
            }
            let refs: Vec<&Tensor> = cells.iter().collect();
            rows.push(Tensor::cat(&refs, -1)?);
        }
        let refs: Vec<&Tensor> = rows.iter().collect();
        Tensor::cat(&refs, -2)
    })?;
    Ok(input.derived(result))
}

/// `input @ weight.T + bias` (`F.linear`).
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
pub fn linear(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    const OP: &str = "linear";
    let input = tensor_arg(OP, "input", input)?;
    let weight = tensor_arg(OP, "weight", weight)?;
    let bias = optional_tensor_arg(OP, "bias", bias)?;
    let (x, w, b) = (input.tensor, weight.tensor, bias.map(|b| b.tensor));
    let result = py.allow_threads(move || run(OP, || x.linear(&w, b.as_ref())))?;
    Ok(PyTensor::wrap(result))
}

/// Layer normalization over the trailing `normalized_shape` dims (`F.layer_norm`).
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, bias=None, eps=1e-5))]
pub fn layer_norm(
    input: &Bound<'_, PyAny>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<PyTensor> {
    const OP: &str = "layer_norm";
    let input = tensor_arg(OP, "input", input)?;
    let shape = normalized_shape_arg(OP, normalized_shape)?;
    let weight = optional_tensor_arg(OP, "weight", weight)?;
    let bias = optional_tensor_arg(OP, "bias", bias)?;
    let result = run(OP, || {
        input.tensor.layer_norm(
            &shape,
            weight.as_ref().map(|w| &w.tensor),
            bias.as_ref().map(|b| &b.tensor),
            eps,
        )
    })?;
    Ok(PyTensor::wrap(result))
}

/// RMS normalization over the trailing `normalized_shape` dims (`F.rms_norm`); `eps=None` is
/// the input dtype's machine epsilon, as in PyTorch.
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, eps=None))]
pub fn rms_norm(
    input: &Bound<'_, PyAny>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    eps: Option<f64>,
) -> PyResult<PyTensor> {
    const OP: &str = "rms_norm";
    let input = tensor_arg(OP, "input", input)?;
    let shape = normalized_shape_arg(OP, normalized_shape)?;
    let weight = optional_tensor_arg(OP, "weight", weight)?;
    let result = run(OP, || {
        input
            .tensor
            .rms_norm(&shape, weight.as_ref().map(|w| &w.tensor), eps)
    })?;
    Ok(PyTensor::wrap(result))
}

/// A `normalized_shape` argument: an int or a sequence of ints.
fn normalized_shape_arg(op: &'static str, value: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if let Ok(single) = value.extract::<usize>() {
        return Ok(vec![single]);
    }
    value
        .extract()
        .map_err(|_| type_error(op, "normalized_shape must be an int or a sequence of ints"))
}

/// Transposed 2-D convolution (`F.conv_transpose2d`): weight `[in, out / groups, kh, kw]`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None))]
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    output_padding: Option<&Bound<'_, PyAny>>,
    groups: usize,
    dilation: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    const OP: &str = "conv_transpose2d";
    let input = tensor_arg(OP, "input", input)?;
    let weight = tensor_arg(OP, "weight", weight)?;
    let bias = optional_tensor_arg(OP, "bias", bias)?;
    let params = ConvTranspose2dParams {
        stride: optional_pair(OP, "stride", stride, (1, 1))?,
        padding: optional_pair(OP, "padding", padding, (0, 0))?,
        output_padding: optional_pair(OP, "output_padding", output_padding, (0, 0))?,
        dilation: optional_pair(OP, "dilation", dilation, (1, 1))?,
        groups,
    };
    let (x, w, b) = (
        input.tensor.clone(),
        weight.tensor.clone(),
        bias.map(|b| b.tensor.clone()),
    );
    let result =
        py.allow_threads(move || run(OP, || x.conv_transpose2d(&w, b.as_ref(), params)))?;
    Ok(PyTensor::wrap(result))
}

/// Scaled dot-product attention (`F.scaled_dot_product_attention`): one fused kernel on a GPU
/// where there is no mask and no dropout (and its fused backward), the composite otherwise.
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=false, scale=None))]
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    py: Python<'_>,
    query: &Bound<'_, PyAny>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    attn_mask: Option<&Bound<'_, PyAny>>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> PyResult<PyTensor> {
    const OP: &str = "scaled_dot_product_attention";
    let query = tensor_arg(OP, "query", query)?;
    let key = tensor_arg(OP, "key", key)?;
    let value = tensor_arg(OP, "value", value)?;
    let mask = optional_tensor_arg(OP, "attn_mask", attn_mask)?;
    if !(0.0..=1.0).contains(&dropout_p) {
        return Err(value_error(
            OP,
            format!("dropout_p has to be between 0 and 1, but got {dropout_p}"),
        ));
    }
    let (q, k, v, m) = (
        query.tensor.clone(),
        key.tensor.clone(),
        value.tensor.clone(),
        mask.map(|m| m.tensor.clone()),
    );
    let result = py.allow_threads(move || {
        run(OP, || {
            anygrad::scaled_dot_product_attention(
                &q,
                &k,
                &v,
                m.as_ref(),
                dropout_p,
                is_causal,
                scale,
            )
        })
    })?;
    Ok(PyTensor::wrap(result))
}

/// Resampling of `[n, c, h, w]` (`F.interpolate` without antialiasing): to `size`, or by
/// `scale_factor`; `mode` "nearest" or "bilinear".
#[pyfunction]
#[pyo3(signature = (input, size=None, scale_factor=None, mode="nearest", align_corners=false))]
pub fn interpolate(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    size: Option<(usize, usize)>,
    scale_factor: Option<(f64, f64)>,
    mode: &str,
    align_corners: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "interpolate";
    let input = tensor_arg(OP, "input", input)?;
    let size = match (size, scale_factor) {
        (Some((h, w)), None) => InterpolateSize::Size(h, w),
        (None, Some((h, w))) => InterpolateSize::Scale(h, w),
        _ => {
            return Err(value_error(
                OP,
                "exactly one of size and scale_factor must be given",
            ))
        }
    };
    let mode = match mode {
        "nearest" => InterpolateMode::Nearest,
        "bilinear" => InterpolateMode::Bilinear { align_corners },
        other => {
            return Err(value_error(
                OP,
                format!("mode must be \"nearest\" or \"bilinear\", got {other:?}"),
            ))
        }
    };
    let x = input.tensor.clone();
    let result = py.allow_threads(move || run(OP, || x.interpolate(size, mode)))?;
    Ok(PyTensor::wrap(result))
}

/// Sampling of `[n, c, h, w]` (or `[n, c, d, h, w]`) at the normalized positions of `grid`
/// (`F.grid_sample`): `mode` "bilinear", "nearest" or "bicubic" (4-D only), `padding_mode`
/// "zeros", "border" or "reflection".
#[pyfunction]
#[pyo3(signature = (input, grid, mode="bilinear", padding_mode="zeros", align_corners=false))]
pub fn grid_sample(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    grid: &Bound<'_, PyAny>,
    mode: &str,
    padding_mode: &str,
    align_corners: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "grid_sample";
    let input = tensor_arg(OP, "input", input)?.tensor.clone();
    let grid = tensor_arg(OP, "grid", grid)?.tensor.clone();
    let mode = run(OP, || GridSampleMode::parse(mode))?;
    let padding = run(OP, || GridSamplePadding::parse(padding_mode))?;
    let result = py.allow_threads(move || {
        run(OP, || {
            input.grid_sample(&grid, mode, padding, align_corners)
        })
    })?;
    Ok(PyTensor::wrap(result))
}

/// The sampling grid of the affine maps `theta` (`[n, 2, 3]` or `[n, 3, 4]`) over `size`
/// (`[n, c, h, w]` or `[n, c, d, h, w]`): `F.affine_grid`.
#[pyfunction]
#[pyo3(signature = (theta, size, align_corners=false))]
pub fn affine_grid(
    py: Python<'_>,
    theta: &Bound<'_, PyAny>,
    size: Vec<usize>,
    align_corners: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "affine_grid";
    let theta = tensor_arg(OP, "theta", theta)?.tensor.clone();
    let result =
        py.allow_threads(move || run(OP, || Tensor::affine_grid(&theta, &size, align_corners)))?;
    Ok(PyTensor::wrap(result))
}

/// Where a batch-norm module keeps its eval-mode scale and shift between forwards (the
/// library's `FoldCache`): `nn.BatchNorm*d` holds one and passes it to `F.batch_norm`, so an
/// inference loop folds each batch norm once instead of five small kernels a forward.
#[pyclass(frozen, name = "BatchNormFoldCache", module = "anygrad._native")]
#[derive(Default)]
pub struct PyBatchNormFoldCache {
    cache: anygrad::nn::FoldCache,
}

#[pymethods]
impl PyBatchNormFoldCache {
    #[new]
    fn new() -> Self {
        PyBatchNormFoldCache::default()
    }

    /// A copy is a new, empty cache (`copy.copy`, `copy.deepcopy` of a module).
    fn __copy__(&self) -> Self {
        PyBatchNormFoldCache::default()
    }

    /// Like `__copy__`.
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        PyBatchNormFoldCache::default()
    }

    /// Pickled as a new, empty cache.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, pyo3::types::PyTuple>)> {
        let py = slf.py();
        Ok((slf.get_type().into_any(), pyo3::types::PyTuple::empty(py)))
    }
}

/// Batch normalization over dim 1 (`F.batch_norm`, the library's `nn::batch_norm`): with
/// `training`, the batch's statistics normalize (one autograd node) and the running ones (when
/// given) move by `momentum`; without, the running ones normalize (one `x·scale + shift`).
#[pyfunction]
#[pyo3(signature = (input, running_mean, running_var, weight=None, bias=None, training=false, momentum=0.1, eps=1e-5, fold_cache=None))]
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Bound<'_, PyAny>,
    running_mean: Option<&Bound<'_, PyAny>>,
    running_var: Option<&Bound<'_, PyAny>>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    training: bool,
    momentum: f64,
    eps: f64,
    fold_cache: Option<&Bound<'_, PyBatchNormFoldCache>>,
) -> PyResult<PyTensor> {
    const OP: &str = "batch_norm";
    let input = tensor_arg(OP, "input", input)?;
    let running_mean = optional_tensor_arg(OP, "running_mean", running_mean)?;
    let running_var = optional_tensor_arg(OP, "running_var", running_var)?;
    let weight = optional_tensor_arg(OP, "weight", weight)?;
    let bias = optional_tensor_arg(OP, "bias", bias)?;
    let fold_cache = fold_cache.map(|cache| &cache.get().cache);
    let inputs = anygrad::nn::BatchNormInputs {
        running_mean: running_mean.as_ref().map(|t| &t.tensor),
        running_var: running_var.as_ref().map(|t| &t.tensor),
        weight: weight.as_ref().map(|t| &t.tensor),
        bias: bias.as_ref().map(|t| &t.tensor),
        training,
        momentum,
        eps,
        fold_cache,
    };
    let result = run(OP, || anygrad::nn::batch_norm(&input.tensor, &inputs))?;
    Ok(input.derived(result))
}

/// Zero each element with probability `p` and scale the rest by 1/(1-p) (`F.dropout`).
#[pyfunction]
#[pyo3(signature = (input, p=0.5, training=true))]
pub fn dropout(input: &Bound<'_, PyAny>, p: f64, training: bool) -> PyResult<PyTensor> {
    const OP: &str = "dropout";
    let input = tensor_arg(OP, "input", input)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(value_error(
            OP,
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ));
    }
    if !training || p == 0.0 {
        return Ok(input);
    }
    let result = run(OP, || {
        let x = &input.tensor;
        if p == 1.0 {
            return x.mul_scalar(0.0);
        }
        let keep = Tensor::full(x.shape(), 1.0 - p, DType::F32, x.device())?.bernoulli()?;
        x.mul(&keep.to_dtype(x.dtype())?)?
            .mul_scalar(1.0 / (1.0 - p))
    })?;
    Ok(PyTensor::wrap(result))
}

/// Whole channels zeroed with probability `p` (`F.dropout2d`).
#[pyfunction]
#[pyo3(signature = (input, p=0.5, training=true))]
pub fn dropout2d(input: &Bound<'_, PyAny>, p: f64, training: bool) -> PyResult<PyTensor> {
    let input = tensor_arg("dropout2d", "input", input)?;
    Ok(PyTensor::wrap(run("dropout2d", || {
        input.tensor.dropout2d(p, training)
    })?))
}

/// Rows of `weight` at `input`'s indices (`F.embedding`), shaped `input.shape + [dim]`.
#[pyfunction]
#[pyo3(signature = (input, weight, padding_idx=None))]
pub fn embedding(
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    padding_idx: Option<i64>,
) -> PyResult<PyTensor> {
    const OP: &str = "embedding";
    let input = tensor_arg(OP, "input", input)?;
    let weight = tensor_arg(OP, "weight", weight)?;
    let _ = padding_idx;
    let result = run(OP, || {
        let flat = input.tensor.reshape([-1isize])?;
        let rows = weight.tensor.index_select(0, &flat)?;
        let mut shape = input.tensor.shape().to_vec();
        shape.push(weight.tensor.shape().get(1).copied().unwrap_or(1));
        rows.reshape(shape)
    })?;
    Ok(PyTensor::wrap(result))
}

/// Register the functional bindings.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(conv2d, module)?)?;
    module.add_function(wrap_pyfunction!(conv_transpose2d, module)?)?;
    module.add_function(wrap_pyfunction!(scaled_dot_product_attention, module)?)?;
    module.add_function(wrap_pyfunction!(interpolate, module)?)?;
    module.add_function(wrap_pyfunction!(grid_sample, module)?)?;
    module.add_function(wrap_pyfunction!(affine_grid, module)?)?;
    module.add_function(wrap_pyfunction!(max_pool2d, module)?)?;
    module.add_function(wrap_pyfunction!(avg_pool2d, module)?)?;
    module.add_function(wrap_pyfunction!(adaptive_avg_pool2d, module)?)?;
    module.add_function(wrap_pyfunction!(linear, module)?)?;
    module.add_function(wrap_pyfunction!(layer_norm, module)?)?;
    module.add_function(wrap_pyfunction!(rms_norm, module)?)?;
    module.add_function(wrap_pyfunction!(batch_norm, module)?)?;
    module.add_class::<PyBatchNormFoldCache>()?;
    module.add_function(wrap_pyfunction!(dropout, module)?)?;
    module.add_function(wrap_pyfunction!(dropout2d, module)?)?;
    module.add_function(wrap_pyfunction!(embedding, module)?)?;
    Ok(())
}
