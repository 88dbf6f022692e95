//! Resize (opset 10+) and Upsample (opset 7-9): nearest, linear and cubic interpolation
//! along each resized axis in turn (the filters are separable), with ONNX's coordinate
//! transformation modes, nearest rounding modes, `exclude_outside`, antialiasing,
//! `tf_crop_and_resize` with its extrapolation value, `axes` and `keep_aspect_ratio_policy`.
//! Each axis's taps and weights are computed on the host; the device gathers and blends.

use anygrad_core::{DType, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::{element_count, Value};

/// The resampling operators.
pub(crate) const OPERATORS: &[OperatorEntry] =
    &[any_opset("Resize", resize), any_opset("Upsample", upsample)];

/// How output positions map back to input coordinates and which filter blends them.
struct Settings {
    mode: String,
    coordinates: String,
    nearest: String,
    cubic_a: f64,
    exclude_outside: bool,
    extrapolation: f64,
    antialias: bool,
}

/// The taps of one axis: for each output position, `n` input indices and weights, and
/// whether the position is extrapolated (`tf_crop_and_resize`).
struct AxisPlan {
    indices: Vec<Vec<i32>>,
    weights: Vec<Vec<f64>>,
    extrapolated: Vec<bool>,
}

fn filter(settings: &Settings, ratio: f64, scale: f64) -> Vec<f64> {
    match settings.mode.as_str() {
        "nearest" => {
            if ratio.fract() == 0.0 {
                return vec![0.0, 1.0];
            }
            let up = match settings.nearest.as_str() {
                "round_prefer_ceil" => ratio >= 0.5,
                "floor" => false,
                "ceil" => true,
                _ => ratio > 0.5,
            };
            if up {
                vec![0.0, 1.0]
            } else {
                vec![1.0, 0.0]
            }
        }
        "cubic" => {
            let a = settings.cubic_a;
            if settings.antialias {
                let scale = scale.min(1.0);
                let coefficient = |x: f64| {
                    let x = x.abs();
                    if x <= 1.0 {
                        (a + 2.0) * x.powi(3) - (a + 3.0) * x * x + 1.0
                    } else if x < 2.0 {
                        a * x.powi(3) - 5.0 * a * x * x + 8.0 * a * x - 4.0 * a
                    } else {
                        0.0
                    }
                };
                let start = (-2.0 / scale).floor() as i64 + 1;
                let end = 2 - start;
                let c: Vec<f64> = (start..end)
                    .map(|i| coefficient(scale * (i as f64 - ratio)))
                    .collect();
                let total: f64 = c.iter().sum();
                return c.iter().map(|x| x / total).collect();
            }
            let r = ratio;
            vec![
                ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
                ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                ((a + 2.0) * (1.0 - r) - (a + 3.0)) * (1.0 - r) * (1.0 - r) + 1.0,
                ((a * ((1.0 - r) + 1.0) - 5.0 * a) * ((1.0 - r) + 1.0) + 8.0 * a)
                    * ((1.0 - r) + 1.0)
                    - 4.0 * a,
            ]
        }
        _ => {
            if settings.antialias {
                let scale = scale.min(1.0);
                let start = (-1.0 / scale).floor() as i64 + 1;
                let footprint = 2 - 2 * start;
                let c: Vec<f64> = (start..start + footprint)
                    .map(|i| (1.0 - ((i as f64 - ratio) * scale).abs()).clamp(0.0, 1.0))
                    .collect();
                let total: f64 = c.iter().sum();
                return c.iter().map(|x| x / total).collect();
            }
            vec![1.0 - ratio, ratio]
        }
    }
}

/// The taps of an axis of `input` positions resized to `output` with `scale` (`roi`: the
/// crop of `tf_crop_and_resize`).
fn plan_axis(
    settings: &Settings,
    input: usize,
    output: usize,
    scale: f64,
    roi: (f64, f64),
) -> AxisPlan {
    let width = scale * input as f64;
    let last = input as f64 - 1.0;
    let mut plan = AxisPlan {
        indices: Vec::with_capacity(output),
        weights: Vec::with_capacity(output),
        extrapolated: Vec::with_capacity(output),
    };
    for y in 0..output {
        let y = y as f64;
        let x = match settings.coordinates.as_str() {
            "align_corners" => {
                if width == 1.0 {
                    0.0
                } else {
                    y * last / (width - 1.0)
                }
            }
            "asymmetric" => y / scale,
            "tf_crop_and_resize" => {
                let x = if width == 1.0 {
                    (roi.1 - roi.0) * last / 2.0
                } else {
                    y * (roi.1 - roi.0) * last / (width - 1.0)
                };
                x + roi.0 * last
            }
            "pytorch_half_pixel" => {
                if width == 1.0 {
                    -0.5
                } else {
                    (y + 0.5) / scale - 0.5
                }
            }
            "half_pixel_symmetric" => {
                let adjustment = output as f64 / width;
                let center = input as f64 / 2.0;
                center * (1.0 - adjustment) + (y + 0.5) / scale - 0.5
            }
            _ => (y + 0.5) / scale - 0.5,
        };
        plan.extrapolated
            .push(settings.coordinates == "tf_crop_and_resize" && (x < 0.0 || x > last));
        let floor = x.floor();
        let ratio = if x == floor { 1.0 } else { x - floor };
        let mut weights = filter(settings, ratio, scale);
        let n = weights.len() as i64;
        let pad = (n + 1) / 2;
        let padded = x + pad as f64;
        let p = padded.floor();
        let frac = padded - p;
        let offset = if n % 2 == 0 {
            if frac == 0.0 {
                -(n / 2)
            } else {
                -(n / 2) + 1
            }
        } else if frac <= 0.5 {
            -((n - 1) / 2)
        } else {
            -((n - 1) / 2) + 1
        };
        let start = p as i64 + offset;
        let taps: Vec<i64> = (0..n).map(|k| start + k - pad).collect();
        if settings.exclude_outside {
            for (k, &t) in taps.iter().enumerate() {
                if t < 0 || t >= input as i64 {
                    weights[k] = 0.0;
                }
            }
            let total: f64 = weights.iter().sum();
            let total = if total == 0.0 { 1.0 } else { total };
            for w in &mut weights {
                *w /= total;
            }
        }
        plan.indices.push(
            taps.iter()
                .map(|&t| t.clamp(0, input as i64 - 1) as i32)
                .collect(),
        );
        plan.weights.push(weights);
    }
    plan
}

/// Resample `x` along `axis` by `plan`.
fn apply_axis(
    x: &Tensor,
    axis: usize,
    plan: &AxisPlan,
    settings: &Settings,
) -> anygrad_core::Result<Tensor> {
    let output = plan.indices.len();
    let n = plan.weights.first().map(Vec::len).unwrap_or(0);
    let mut weight_shape = vec![1usize; x.rank()];
    weight_shape[axis] = output;
    let device = x.device();
    let mut result = if settings.mode == "nearest" {
        // The tap of weight one, exactly (integer data stays exact).
        let picked: Vec<i32> = plan
            .indices
            .iter()
            .zip(&plan.weights)
            .map(|(i, w)| {
                if w.get(1).copied().unwrap_or(0.0) > 0.5 {
                    i[1]
                } else {
                    i[0]
                }
            })
            .collect();
        x.index_select(axis as isize, &Tensor::from_vec(picked, &[output], device)?)?
    } else {
        let mut sum: Option<Tensor> = None;
        for k in 0..n {
            let index: Vec<i32> = plan.indices.iter().map(|i| i[k]).collect();
            let weight: Vec<f64> = plan.weights.iter().map(|w| w[k]).collect();
            let gathered =
                x.index_select(axis as isize, &Tensor::from_vec(index, &[output], device)?)?;
            let weight = Tensor::from_vec(weight, &weight_shape, &anygrad_core::Device::Cpu)?
                .to_dtype(x.dtype())?
                .to_device(device)?;
            let term = gathered.mul(&weight)?;
            sum = Some(match sum {
                None => term,
                Some(s) => s.add(&term)?,
            });
        }
        match sum {
            Some(s) => s,
            None => x.clone(),
        }
    };
    if plan.extrapolated.iter().any(|&e| e) {
        let mask = Tensor::from_vec(plan.extrapolated.clone(), &weight_shape, device)?;
        let fill = Tensor::full(&[], settings.extrapolation, result.dtype(), device)?;
        result = Tensor::where_(&mask, &fill, &result)?;
    }
    Ok(result)
}

/// A float input (`None` when absent or empty).
fn floats(ctx: &NodeContext, i: usize) -> Result<Option<Vec<f64>>> {
    match ctx.optional(i) {
        Some(v) if v.shape().iter().product::<usize>() > 0 => {
            let values = match v {
                Value::Int64(v) => v.data.iter().map(|&x| x as f64).collect(),
                Value::Tensor(t) => ctx.core(t.to_vec_f64())?,
            };
            Ok(Some(values))
        }
        _ => Ok(None),
    }
}

fn resize(ctx: &NodeContext) -> Result<Vec<Value>> {
    let settings = Settings {
        mode: ctx.attr_string("mode", "nearest")?,
        coordinates: if ctx.opset < 11 {
            "asymmetric".into()
        } else {
            ctx.attr_string("coordinate_transformation_mode", "half_pixel")?
        },
        nearest: if ctx.opset < 11 {
            "floor".into()
        } else {
            ctx.attr_string("nearest_mode", "round_prefer_floor")?
        },
        cubic_a: ctx.attr_float("cubic_coeff_a", -0.75)? as f64,
        exclude_outside: ctx.attr_int("exclude_outside", 0)? != 0,
        extrapolation: ctx.attr_float("extrapolation_value", 0.0)? as f64,
        antialias: ctx.attr_int("antialias", 0)? != 0,
    };
    let (roi, scales, sizes) = if ctx.opset < 11 {
        (None, floats(ctx, 1)?, None)
    } else {
        (floats(ctx, 1)?, floats(ctx, 2)?, floats(ctx, 3)?)
    };
    run(ctx, settings, roi, scales, sizes)
}

fn upsample(ctx: &NodeContext) -> Result<Vec<Value>> {
    let settings = Settings {
        mode: ctx.attr_string("mode", "nearest")?,
        coordinates: "asymmetric".into(),
        nearest: "floor".into(),
        cubic_a: -0.75,
        exclude_outside: false,
        extrapolation: 0.0,
        antialias: false,
    };
    let scales = if ctx.opset < 9 {
        ctx.attr_floats("scales")?
            .map(|s| s.iter().map(|&x| x as f64).collect())
    } else {
        floats(ctx, 1)?
    };
    run(ctx, settings, None, scales, None)
}

fn run(
    ctx: &NodeContext,
    settings: Settings,
    roi: Option<Vec<f64>>,
    scales: Option<Vec<f64>>,
    sizes: Option<Vec<f64>>,
) -> Result<Vec<Value>> {
    if !matches!(
        settings.mode.as_str(),
        "nearest" | "linear" | "cubic" | "bilinear"
    ) {
        return Err(ctx.error(format!("mode `{}` is not supported", settings.mode)));
    }
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    let shape = x.shape().to_vec();
    let axes: Vec<usize> = match ctx.attr_ints("axes")? {
        Some(a) => a
            .iter()
            .map(|&a| ctx.axis(a, rank))
            .collect::<Result<_>>()?,
        None => (0..rank).collect(),
    };
    let mut scale = vec![1.0f64; rank];
    let mut out = shape.clone();
    if let Some(sizes) = sizes {
        if sizes.len() != axes.len() {
            return Err(ctx.error("sizes must hold one entry per resized axis"));
        }
        for (k, &a) in axes.iter().enumerate() {
            out[a] = sizes[k] as usize;
            scale[a] = sizes[k] / shape[a] as f64;
        }
        let policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch")?;
        if policy != "stretch" {
            let picked = axes.iter().map(|&a| scale[a]);
            let s = if policy == "not_larger" {
                picked.fold(f64::INFINITY, f64::min)
            } else {
                picked.fold(f64::NEG_INFINITY, f64::max)
            };
            for &a in &axes {
                scale[a] = s;
                out[a] = (s * shape[a] as f64 + 0.5) as usize;
            }
        }
    } else if let Some(scales) = scales {
        if scales.len() != axes.len() {
            return Err(ctx.error("scales must hold one entry per resized axis"));
        }
        for (k, &a) in axes.iter().enumerate() {
            if scales[k].is_nan() || scales[k] <= 0.0 {
                return Err(ctx.error(format!("scale {} must be positive", scales[k])));
            }
            scale[a] = scales[k];
            out[a] = (scales[k] * shape[a] as f64) as usize;
        }
    } else {
        return Err(ctx.error("needs scales or sizes"));
    }
    element_count(&out).map_err(|e| ctx.error(e))?;
    let crop = |a: usize| -> (f64, f64) {
        match &roi {
            Some(r) if r.len() == 2 * axes.len() => {
                let k = axes.iter().position(|&x| x == a).unwrap_or(0);
                (r[k], r[k + axes.len()])
            }
            Some(r) if r.len() == 2 * rank => (r[a], r[a + rank]),
            _ => (0.0, 1.0),
        }
    };
    let integer = !x.dtype().is_float();
    let mut y = if integer && settings.mode != "nearest" {
        ctx.core(x.to_dtype(DType::F32))?
    } else {
        x.clone()
    };
    let settings = Settings {
        mode: if settings.mode == "bilinear" {
            "linear".into()
        } else {
            settings.mode
        },
        ..settings
    };
    for &a in &axes {
        let roi = crop(a);
        let trivial_roi = settings.coordinates != "tf_crop_and_resize" || roi == (0.0, 1.0);
        if (scale[a] - 1.0).abs() < 1e-12 && out[a] == shape[a] && trivial_roi {
            continue;
        }
        if shape[a] == 0 {
            return Err(ctx.error(format!("cannot resize an empty axis {a}")));
        }
        let plan = plan_axis(&settings, shape[a], out[a], scale[a], roi);
        y = ctx.core(apply_axis(&y, a, &plan, &settings))?;
    }
    if y.dtype() != x.dtype() {
        y = ctx.core(y.round().and_then(|r| r.to_dtype(x.dtype())))?;
    }
    single(y)
}
