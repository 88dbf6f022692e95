//! Pooling layers: `MaxPool2d`, `AvgPool2d` (core composites) and `AdaptiveAvgPool2d`,
//! which picks the cheapest exact form: a global mean for `(1, 1)`, a plain average pool
//! when the input divides evenly, and otherwise PyTorch's uneven windows
//! (`start = floor(i * in / out)`, `end = ceil((i + 1) * in / out)`), done separably (rows
//! then columns, which is exact because every window is a rectangle of equal weights).

use anygrad_core::{Error, Result, Tensor};

use crate::module::{Kind, Module, Parameter};

/// 2-D max pooling, like `torch.nn.MaxPool2d` (no `ceil_mode`).
#[derive(Debug, Clone, Copy)]
pub struct MaxPool2d {
    /// Window size.
    pub kernel: (usize, usize),
    /// Step between windows.
    pub stride: (usize, usize),
    /// Implicit `-inf` padding (at most half the kernel).
    pub padding: (usize, usize),
}

impl MaxPool2d {
    /// Square window, stride equal to the window, no padding (PyTorch's default).
    pub fn new(kernel: usize) -> MaxPool2d {
        MaxPool2d::with(kernel, None, 0)
    }

    /// Square window with a stride (`None`: the kernel size, PyTorch's `stride=None`) and
    /// padding: `MaxPool2d::with(3, 2, 1)` or `MaxPool2d::with(2, None, 0)`.
    pub fn with(kernel: usize, stride: impl Into<Option<usize>>, padding: usize) -> MaxPool2d {
        let stride = stride.into().unwrap_or(kernel);
        MaxPool2d {
            kernel: (kernel, kernel),
            stride: (stride, stride),
            padding: (padding, padding),
        }
    }

    /// Set the stride of both dims (builder style; a stride of 0 is an error at `forward`).
    pub fn stride(mut self, stride: usize) -> Self {
        self.stride = (stride, stride);
        self
    }

    /// Set the padding of both dims (builder style).
    pub fn padding(mut self, padding: usize) -> Self {
        self.padding = (padding, padding);
        self
    }
}

impl Module for MaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool2d(self.kernel, self.stride, self.padding)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// 2-D average pooling, like `torch.nn.AvgPool2d` (padding counts as zeros).
#[derive(Debug, Clone, Copy)]
pub struct AvgPool2d {
    /// Window size.
    pub kernel: (usize, usize),
    /// Step between windows.
    pub stride: (usize, usize),
    /// Implicit zero padding (at most half the kernel).
    pub padding: (usize, usize),
}

impl AvgPool2d {
    /// Square window, stride equal to the window, no padding (PyTorch's default).
    pub fn new(kernel: usize) -> AvgPool2d {
        AvgPool2d::with(kernel, None, 0)
    }

    /// Square window with a stride (`None`: the kernel size, PyTorch's `stride=None`) and
    /// padding: `AvgPool2d::with(3, 2, 1)` or `AvgPool2d::with(2, None, 0)`.
    pub fn with(kernel: usize, stride: impl Into<Option<usize>>, padding: usize) -> AvgPool2d {
        let stride = stride.into().unwrap_or(kernel);
        AvgPool2d {
            kernel: (kernel, kernel),
            stride: (stride, stride),
            padding: (padding, padding),
        }
    }

    /// Set the stride of both dims (builder style; a stride of 0 is an error at `forward`).
    pub fn stride(mut self, stride: usize) -> Self {
        self.stride = (stride, stride);
        self
    }

    /// Set the padding of both dims (builder style).
    pub fn padding(mut self, padding: usize) -> Self {
        self.padding = (padding, padding);
        self
    }
}

impl Module for AvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool2d(self.kernel, self.stride, self.padding)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Average pooling to a fixed output size, like `torch.nn.AdaptiveAvgPool2d`.
#[derive(Debug, Clone, Copy)]
pub struct AdaptiveAvgPool2d {
    /// Output `(height, width)`.
    pub output_size: (usize, usize),
}

impl AdaptiveAvgPool2d {
    /// Pool to `output_size`.
    pub fn new(output_size: (usize, usize)) -> AdaptiveAvgPool2d {
        AdaptiveAvgPool2d { output_size }
    }
}

/// Average over PyTorch's adaptive windows along one dim.
fn adaptive_mean_along(x: &Tensor, dim: usize, out: usize) -> Result<Tensor> {
    let size = x.shape()[dim];
    let mut pieces = Vec::with_capacity(out);
    for i in 0..out {
        let start = i * size / out;
        let end = ((i + 1) * size).div_ceil(out);
        pieces.push(
            x.narrow(dim as isize, start, end - start)?
                .mean(&[dim as isize], true)?,
        );
    }
    let refs: Vec<&Tensor> = pieces.iter().collect();
    Tensor::cat(&refs, dim as isize)
}

impl Module for AdaptiveAvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (oh, ow) = self.output_size;
        if x.rank() != 4 || oh == 0 || ow == 0 {
            return Err(Error::InvalidShape {
                op: "AdaptiveAvgPool2d",
                shape: x.shape().to_vec(),
                message: format!(
                    "expects a [n, c, h, w] input and a non-zero output size, got {:?}",
                    self.output_size
                ),
            });
        }
        let (h, w) = (x.shape()[2], x.shape()[3]);
        if (oh, ow) == (1, 1) {
            return x.mean(&[2, 3], true);
        }
        if h.is_multiple_of(oh) && w.is_multiple_of(ow) {
            let kernel = (h / oh, w / ow);
            return x.avg_pool2d(kernel, kernel, (0, 0));
        }
        let rows = if h == oh {
            x.clone()
        } else {
            adaptive_mean_along(x, 2, oh)?
        };
        if w == ow {
            Ok(rows)
        } else {
            adaptive_mean_along(&rows, 3, ow)
        }
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}

/// Max pooling to a fixed output size over PyTorch's adaptive windows, like
/// `torch.nn.AdaptiveMaxPool2d` (core's `adaptive_max_pool2d`; the gradient goes to each
/// window's first maximum). [`AdaptiveMaxPool2d::forward_with_indices`] also returns the flat
/// `h * w` indices of the maxima (PyTorch's `return_indices=True`).
#[derive(Debug, Clone, Copy)]
pub struct AdaptiveMaxPool2d {
    /// Output `(height, width)`.
    pub output_size: (usize, usize),
}

impl AdaptiveMaxPool2d {
    /// Pool to `output_size`.
    pub fn new(output_size: (usize, usize)) -> AdaptiveMaxPool2d {
        AdaptiveMaxPool2d { output_size }
    }

    /// The maxima and their `I32` flat indices into each `h * w` plane.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        x.adaptive_max_pool2d(self.output_size)
    }
}

impl Module for AdaptiveMaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.adaptive_max_pool2d(self.output_size)?.0)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}
