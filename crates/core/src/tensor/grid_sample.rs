//! Sampling an input at arbitrary normalized positions: `grid_sample` (PyTorch's
//! `torch.nn.functional.grid_sample`, ONNX's GridSample) and the grids of affine maps that
//! feed it, `affine_grid` (PyTorch's `affine_grid`, ONNX's AffineGrid).
//!
//! Both are composites of existing tensor ops, so they run on every backend and autograd
//! reaches the input, the grid and `theta` through the primitives' own rules:
//!
//! - Each spatial axis turns its grid coordinate into a few *taps*: a whole-number source
//!   position, whether that position lies inside the input, and a weight (bilinear: the two
//!   neighbours; nearest: the rounded position, halves to even; bicubic: four neighbours
//!   weighted by cubic convolution with `A = -0.75`). Positions are computed with `floor`,
//!   `round`, `clamp` and `where_`, which carry no gradient, while the weights are arithmetic
//!   in the coordinate, which does.
//! - Every combination of one tap per axis reads the input viewed as `[n, c, spatial]` with
//!   one `gather` (the flat index broadcast over the channels), is scaled by the product of
//!   its axes' weights, and the reads are summed. Taps outside the input read index 0 with
//!   weight 0 (the `zeros` padding; `border` and `reflection` first move the coordinate
//!   inside, as PyTorch's `compute_coordinates` does, and bicubic pads each tap in turn).

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// How [`Tensor::grid_sample`] blends the input values around a sampled position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridSampleMode {
    /// Linear interpolation along each spatial axis between the two nearest input values
    /// (PyTorch's `'bilinear'`, trilinear on 5-D inputs; ONNX's `linear`).
    Bilinear,
    /// The input value at the position rounded to the nearest whole number, halves to even
    /// (PyTorch's `nearbyint`).
    Nearest,
    /// Cubic convolution over the 4 x 4 neighbourhood with `A = -0.75` (PyTorch's
    /// `'bicubic'`, ONNX's `cubic`); 4-D inputs only.
    Bicubic,
}

impl GridSampleMode {
    /// The mode of a PyTorch or ONNX name: `bilinear` or `linear`, `nearest`, `bicubic` or
    /// `cubic`. Any other name is an error naming `grid_sample`.
    pub fn parse(name: &str) -> Result<GridSampleMode> {
        match name {
            "bilinear" | "linear" => Ok(GridSampleMode::Bilinear),
            "nearest" => Ok(GridSampleMode::Nearest),
            "bicubic" | "cubic" => Ok(GridSampleMode::Bicubic),
            other => Err(Error::invalid(
                GRID_SAMPLE,
                format!("mode must be bilinear, nearest or bicubic, got {other:?}"),
            )),
        }
    }
}

/// What [`Tensor::grid_sample`] reads at positions outside the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridSamplePadding {
    /// Zero outside the input.
    Zeros,
    /// The nearest edge value: coordinates are clamped into the input.
    Border,
    /// Coordinates are reflected at the input's edges (at the corner pixels' centres with
    /// `align_corners`, at their outer edges without) until they lie inside, then clamped.
    Reflection,
}

impl GridSamplePadding {
    /// The padding of a PyTorch or ONNX name: `zeros`, `border` or `reflection`. Any other
    /// name is an error naming `grid_sample`.
    pub fn parse(name: &str) -> Result<GridSamplePadding> {
        match name {
            "zeros" => Ok(GridSamplePadding::Zeros),
            "border" => Ok(GridSamplePadding::Border),
            "reflection" => Ok(GridSamplePadding::Reflection),
            other => Err(Error::invalid(
                GRID_SAMPLE,
                format!("padding_mode must be zeros, border or reflection, got {other:?}"),
            )),
        }
    }
}

const GRID_SAMPLE: &str = "grid_sample";
const AFFINE_GRID: &str = "affine_grid";

/// PyTorch's cubic convolution coefficient.
const CUBIC_A: f64 = -0.75;

/// One tap along one spatial axis, both tensors `[n, 1, points]`: the source position (whole
/// numbers; index 0 where the tap lies outside) and its weight (0 outside).
struct AxisTap {
    index: Tensor,
    weight: Tensor,
}

/// One spatial axis of the input: its size and the settings that turn a normalized
/// coordinate into taps.
struct Axis {
    size: usize,
    padding: GridSamplePadding,
    align_corners: bool,
}

impl Axis {
    /// The normalized coordinate (-1 and 1 are the ends) as a source position: with
    /// `align_corners` `((x + 1) / 2)(size - 1)`, without `((x + 1) size - 1) / 2`.
    fn unnormalize(&self, coordinate: &Tensor) -> Result<Tensor> {
        let size = self.size as f64;
        let shifted = coordinate.add_scalar(1.0)?;
        if self.align_corners {
            // `(x + 1) * ((size - 1) / 2)` rounds as `((x + 1) / 2) * (size - 1)` does: the
            // halving is exact either way.
            shifted.mul_scalar((size - 1.0) / 2.0)
        } else {
            shifted.mul_scalar(size / 2.0)?.sub_scalar(0.5)
        }
    }

    /// A source position moved inside by the padding (PyTorch's `compute_coordinates`): as
    /// it is for `Zeros`, clamped for `Border`, reflected then clamped for `Reflection`.
    fn pad(&self, position: &Tensor) -> Result<Tensor> {
        let last = self.size as f64 - 1.0;
        match self.padding {
            GridSamplePadding::Zeros => Ok(position.clone()),
            GridSamplePadding::Border => position.clamp(0.0, last),
            GridSamplePadding::Reflection => {
                let reflected = if self.align_corners {
                    reflect(position, 0.0, last)?
                } else {
                    reflect(position, -0.5, self.size as f64 - 0.5)?
                };
                reflected.clamp(0.0, last)
            }
        }
    }

    /// The tap at the whole-number `index` (no gradient), weighted by `weight` (`None`:
    /// one); outside the input it reads index 0 with weight 0.
    fn tap(&self, index: &Tensor, weight: Option<Tensor>) -> Result<AxisTap> {
        let clamped = index.clamp(0.0, self.size as f64 - 1.0)?;
        // NaN compares unequal, so a NaN coordinate is outside too.
        let inside = clamped.eq(index)?;
        let zero = Tensor::scalar(0.0, index.dtype(), index.device())?;
        let index = Tensor::where_(&inside, &clamped, &zero)?;
        let weight = match weight {
            Some(weight) => Tensor::where_(&inside, &weight, &zero)?,
            None => inside.to_dtype(index.dtype())?,
        };
        Ok(AxisTap { index, weight })
    }

    /// The taps of a normalized coordinate `[n, 1, points]` under `mode`.
    fn taps(&self, coordinate: &Tensor, mode: GridSampleMode) -> Result<Vec<AxisTap>> {
        let position = self.unnormalize(coordinate)?;
        match mode {
            GridSampleMode::Nearest => {
                let nearest = self.pad(&position.detach())?.round()?;
                Ok(vec![self.tap(&nearest, None)?])
            }
            GridSampleMode::Bilinear => {
                let position = self.pad(&position)?;
                let low = position.detach().floor()?;
                let high = low.add_scalar(1.0)?;
                let low_weight = high.sub(&position)?;
                let high_weight = position.sub(&low)?;
                Ok(vec![
                    self.tap(&low, Some(low_weight))?,
                    self.tap(&high, Some(high_weight))?,
                ])
            }
            GridSampleMode::Bicubic => {
                // PyTorch pads each of the four taps, not the coordinate.
                let low = position.detach().floor()?;
                let t = position.sub(&low)?;
                let weights = [
                    cubic_far(&t.add_scalar(1.0)?)?,
                    cubic_near(&t)?,
                    cubic_near(&t.rsub_scalar(1.0)?)?,
                    cubic_far(&t.rsub_scalar(2.0)?)?,
                ];
                let mut taps = Vec::with_capacity(4);
                for (offset, weight) in (-1i32..=2).zip(weights) {
                    let index = self.pad(&low.add_scalar(offset as f64)?)?.trunc()?;
                    taps.push(self.tap(&index, Some(weight))?);
                }
                Ok(taps)
            }
        }
    }
}

/// PyTorch's `reflect_coordinates`: `position` reflected at `low` and `high` until it lies
/// between them (a zero-length span gives 0).
fn reflect(position: &Tensor, low: f64, high: f64) -> Result<Tensor> {
    let span = high - low;
    if span <= 0.0 {
        return position.zeros_like();
    }
    let distance = position.sub_scalar(low)?.abs()?;
    let flips = distance.detach().div_scalar(span)?.floor()?;
    let extra = distance.sub(&flips.mul_scalar(span)?)?;
    let even = flips
        .sub(&flips.div_scalar(2.0)?.floor()?.mul_scalar(2.0)?)?
        .eq_scalar(0.0)?;
    Tensor::where_(
        &even,
        &extra.add_scalar(low)?,
        &extra.rsub_scalar(span + low)?,
    )
}

/// Cubic convolution for `|x| <= 1`: `((A + 2) x - (A + 3)) x^2 + 1`.
fn cubic_near(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(CUBIC_A + 2.0)?
        .sub_scalar(CUBIC_A + 3.0)?
        .mul(x)?
        .mul(x)?
        .add_scalar(1.0)
}

/// Cubic convolution for `1 < |x| < 2`: `((A x - 5 A) x + 8 A) x - 4 A`.
fn cubic_far(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(CUBIC_A)?
        .sub_scalar(5.0 * CUBIC_A)?
        .mul(x)?
        .add_scalar(8.0 * CUBIC_A)?
        .mul(x)?
        .sub_scalar(4.0 * CUBIC_A)
}

/// The positions PyTorch's `affine_grid` gives `size` pixels along one axis: evenly spaced
/// from -1 to 1, scaled by `(size - 1) / size` without `align_corners` (pixel centres); a
/// single pixel sits at 0.
fn base_coordinates(size: usize, align_corners: bool) -> Vec<f64> {
    if size <= 1 {
        return vec![0.0; size];
    }
    let step = 2.0 / (size as f64 - 1.0);
    let scale = if align_corners {
        1.0
    } else {
        (size as f64 - 1.0) / size as f64
    };
    (0..size)
        .map(|i| (-1.0 + step * i as f64) * scale)
        .collect()
}

impl Tensor {
    /// Sample `self` at the positions of `grid`, like `torch.nn.functional.grid_sample`
    /// (and ONNX's GridSample).
    ///
    /// `self` is `[n, c, h, w]` with `grid` `[n, out_h, out_w, 2]`, or volumetric
    /// `[n, c, d, h, w]` with `grid` `[n, out_d, out_h, out_w, 3]`; the result is
    /// `[n, c, out_h, out_w]` (or `[n, c, out_d, out_h, out_w]`). The grid's last dim holds
    /// normalized coordinates, x (the width) first, then y (and z): -1 and 1 are the corner
    /// pixels' centres with `align_corners`, their outer edges without. `mode` blends the
    /// values around each position (bicubic on 4-D inputs only), `padding` says what lies
    /// outside the input. Input and grid are float tensors of one dtype on one device
    /// (float16 computes in float32). Differentiable in the input and the grid (the grid's
    /// gradient is zero in nearest mode, as in PyTorch).
    ///
    /// Errors (naming `grid_sample`): ranks other than 4 and 5, a grid whose rank, batch or
    /// last dim does not match the input, empty spatial dims, bicubic on a 5-D input,
    /// integer or mismatched dtypes, different devices.
    pub fn grid_sample(
        &self,
        grid: &Tensor,
        mode: GridSampleMode,
        padding: GridSamplePadding,
        align_corners: bool,
    ) -> Result<Tensor> {
        self.check_grid_sample(grid, mode)?;
        let rank = self.rank();
        let spatial_rank = rank - 2;
        let (batch, channels) = (self.shape()[0], self.shape()[1]);
        let sizes = &self.shape()[2..];
        let out_spatial = &grid.shape()[1..rank - 1];
        let points: usize = out_spatial.iter().product();
        let mut out_shape = vec![batch, channels];
        out_shape.extend_from_slice(out_spatial);
        if batch == 0 || channels == 0 || points == 0 {
            return Tensor::zeros(&out_shape, self.dtype(), self.device());
        }
        // Half precision cannot hold positions past 2048 (bfloat16: 256) exactly: compute in f32.
        let work = if matches!(self.dtype(), DType::F16 | DType::BF16) {
            DType::F32
        } else {
            self.dtype()
        };
        let input =
            self.to_dtype(work)?
                .reshape(vec![batch, channels, sizes.iter().product::<usize>()])?;
        // [n, points, k] -> [n, k, points]: coordinate j is row j of each sample.
        let coordinates = grid
            .to_dtype(work)?
            .reshape(vec![batch, points, spatial_rank])?
            .transpose(1, 2)?;
        // Per spatial axis (outermost first), its taps; the grid lists the axes innermost
        // first (x is the width).
        let mut axes_taps = Vec::with_capacity(spatial_rank);
        for (axis, &size) in sizes.iter().enumerate() {
            let coordinate = coordinates.narrow(1, spatial_rank - 1 - axis, 1)?;
            let axis = Axis {
                size,
                padding,
                align_corners,
            };
            axes_taps.push(axis.taps(&coordinate, mode)?);
        }
        // Each tap's index as int32, times the axis's stride in the flat input.
        let mut stride = 1usize;
        let mut strided_indices: Vec<Vec<Tensor>> = vec![Vec::new(); spatial_rank];
        for axis in (0..spatial_rank).rev() {
            for tap in &axes_taps[axis] {
                let index = tap.index.to_dtype(DType::I32)?;
                let index = if stride == 1 {
                    index
                } else {
                    index.mul_scalar(stride as f64)?
                };
                strided_indices[axis].push(index);
            }
            stride *= sizes[axis];
        }
        let gather_shape = [batch, channels, points];
        let mut total: Option<Tensor> = None;
        // Every combination of one tap per axis, counted like an odometer.
        let mut choice = vec![0usize; spatial_rank];
        loop {
            let mut flat: Option<Tensor> = None;
            let mut weight: Option<Tensor> = None;
            for (axis, &pick) in choice.iter().enumerate() {
                let index = &strided_indices[axis][pick];
                let tap_weight = &axes_taps[axis][pick].weight;
                flat = Some(match flat {
                    None => index.clone(),
                    Some(sum) => sum.add(index)?,
                });
                weight = Some(match weight {
                    None => tap_weight.clone(),
                    Some(product) => product.mul(tap_weight)?,
                });
            }
            let (flat, weight) = flat.zip(weight).expect("at least one spatial axis");
            let read = input.gather(2, &flat.expand(&gather_shape)?)?;
            let term = read.mul(&weight)?;
            total = Some(match total {
                None => term,
                Some(sum) => sum.add(&term)?,
            });
            // Next combination.
            let mut axis = spatial_rank;
            loop {
                if axis == 0 {
                    let total = total.expect("at least one combination");
                    return total.reshape(out_shape)?.to_dtype(self.dtype());
                }
                axis -= 1;
                choice[axis] += 1;
                if choice[axis] < axes_taps[axis].len() {
                    break;
                }
                choice[axis] = 0;
            }
        }
    }

    /// The argument checks of [`Tensor::grid_sample`].
    fn check_grid_sample(&self, grid: &Tensor, mode: GridSampleMode) -> Result<()> {
        self.same_device(GRID_SAMPLE, grid)?;
        let rank = self.rank();
        if rank != 4 && rank != 5 {
            return Err(Error::InvalidShape {
                op: GRID_SAMPLE,
                shape: self.shape().to_vec(),
                message: format!("input must be [n, c, h, w] or [n, c, d, h, w], got rank {rank}"),
            });
        }
        let spatial_rank = rank - 2;
        if grid.rank() != rank
            || grid.shape()[0] != self.shape()[0]
            || grid.shape()[rank - 1] != spatial_rank
        {
            return Err(Error::ShapeMismatch {
                op: GRID_SAMPLE,
                lhs: self.shape().to_vec(),
                rhs: grid.shape().to_vec(),
                reason: format!(
                    "(input and grid): the grid must be [n, {}{spatial_rank}] with the input's \
                     batch size n",
                    "out, ".repeat(spatial_rank)
                ),
            });
        }
        let spatial_elements: usize = self.shape()[2..].iter().product();
        if spatial_elements > i32::MAX as usize {
            return Err(Error::InvalidShape {
                op: GRID_SAMPLE,
                shape: self.shape().to_vec(),
                message: format!(
                    "input's spatial dims must hold at most {} elements",
                    i32::MAX
                ),
            });
        }
        if self.shape()[2..].contains(&0) {
            return Err(Error::InvalidShape {
                op: GRID_SAMPLE,
                shape: self.shape().to_vec(),
                message: "input must have non-empty spatial dims".into(),
            });
        }
        if mode == GridSampleMode::Bicubic && rank != 4 {
            return Err(Error::invalid(
                GRID_SAMPLE,
                format!("bicubic mode needs a 4-D input, got {rank}-D"),
            ));
        }
        if !self.dtype().is_float() || self.dtype() != grid.dtype() {
            return Err(Error::invalid(
                GRID_SAMPLE,
                format!(
                    "input and grid must be float tensors of one dtype, got {} and {}",
                    self.dtype(),
                    grid.dtype()
                ),
            ));
        }
        Ok(())
    }

    /// The sampling grid of a batch of affine maps, like `torch.nn.functional.affine_grid`
    /// (and ONNX's AffineGrid): for `size` `[n, c, h, w]` and `theta` `[n, 2, 3]`, the grid
    /// `[n, h, w, 2]` whose entry at pixel (i, j) is `theta[n] @ [x_j, y_i, 1]`; for `size`
    /// `[n, c, d, h, w]` and `theta` `[n, 3, 4]`, `[n, d, h, w, 3]` from `[x, y, z, 1]`. The
    /// base coordinates run from -1 to 1 over each axis: through the corner pixels' centres
    /// with `align_corners`, through the pixel centres of a [-1, 1] span without (a single
    /// pixel sits at 0). `theta` is a float tensor; the grid has its dtype and device, and is
    /// differentiable in `theta`.
    ///
    /// Errors (naming `affine_grid`): a `size` of other than 4 or 5 entries, a `theta` of the
    /// wrong shape for it or of an integer dtype.
    pub fn affine_grid(theta: &Tensor, size: &[usize], align_corners: bool) -> Result<Tensor> {
        let spatial_rank = match size.len() {
            4 => 2,
            5 => 3,
            other => {
                return Err(Error::invalid(
                    AFFINE_GRID,
                    format!(
                        "size must be [n, c, h, w] or [n, c, d, h, w], got {other} entries \
                         {size:?}"
                    ),
                ))
            }
        };
        let batch = size[0];
        if theta.shape() != [batch, spatial_rank, spatial_rank + 1] {
            return Err(Error::ShapeMismatch {
                op: AFFINE_GRID,
                lhs: theta.shape().to_vec(),
                rhs: size.to_vec(),
                reason: format!(
                    "(theta and size): theta must be [n, {spatial_rank}, {}] for a size with \
                     {} entries",
                    spatial_rank + 1,
                    size.len()
                ),
            });
        }
        if !theta.dtype().is_float() {
            return Err(Error::invalid(
                AFFINE_GRID,
                format!("theta must be a float tensor, got {}", theta.dtype()),
            ));
        }
        let spatial = &size[2..];
        let points: usize = spatial.iter().product();
        let mut out_shape = vec![batch];
        out_shape.extend_from_slice(spatial);
        out_shape.push(spatial_rank);
        if batch == 0 || points == 0 {
            return Tensor::zeros(&out_shape, theta.dtype(), theta.device());
        }
        // Rows [x, y, (z,) 1] in row-major order of the spatial dims (x follows the last).
        let axes: Vec<Vec<f64>> = spatial
            .iter()
            .map(|&s| base_coordinates(s, align_corners))
            .collect();
        let mut base = Vec::with_capacity(points * (spatial_rank + 1));
        let mut position = vec![0usize; spatial_rank];
        for _ in 0..points {
            for axis in (0..spatial_rank).rev() {
                base.push(axes[axis][position[axis]]);
            }
            base.push(1.0);
            for axis in (0..spatial_rank).rev() {
                position[axis] += 1;
                if position[axis] < spatial[axis] {
                    break;
                }
                position[axis] = 0;
            }
        }
        let work = if matches!(theta.dtype(), DType::F16 | DType::BF16) {
            DType::F32
        } else {
            theta.dtype()
        };
        let base_shape = [1, points, spatial_rank + 1];
        let base = if work == DType::F64 {
            Tensor::from_vec(base, &base_shape, theta.device())?
        } else {
            let base: Vec<f32> = base.iter().map(|&x| x as f32).collect();
            Tensor::from_vec(base, &base_shape, theta.device())?
        };
        let base = base.expand(&[batch, points, spatial_rank + 1])?;
        base.matmul(&theta.to_dtype(work)?.transpose(1, 2)?)?
            .reshape(out_shape)?
            .to_dtype(theta.dtype())
    }
}
