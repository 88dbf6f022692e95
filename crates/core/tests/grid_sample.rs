//! `Tensor::grid_sample` and `Tensor::affine_grid` on every device against a scalar reference
//! written in this file from PyTorch's formulas (unnormalize, `compute_coordinates` with
//! clamping and `reflect_coordinates`, bilinear corner weights, nearest rounding halves to
//! even, bicubic as two passes of 1-D cubic convolution with A = -0.75 and padding per tap),
//! over every mode, padding and `align_corners` on 4-D inputs and bilinear/nearest on 5-D;
//! finite-difference checks of the gradients to the input and the grid (and to `theta`).

use anygrad_core::custom_op::gradcheck;
use anygrad_core::{DType, Device, Error, GridSampleMode, GridSamplePadding, Tensor};
use anygrad_testing::{assert_close, device_tests, pseudo_random, tensor, values};

const MODES: [GridSampleMode; 3] = [
    GridSampleMode::Bilinear,
    GridSampleMode::Nearest,
    GridSampleMode::Bicubic,
];
const PADDINGS: [GridSamplePadding; 3] = [
    GridSamplePadding::Zeros,
    GridSamplePadding::Border,
    GridSamplePadding::Reflection,
];

/// The reference: an input of `shape` `[n, c, spatial...]` in row-major `data`.
struct Reference<'a> {
    data: &'a [f64],
    shape: &'a [usize],
    padding: GridSamplePadding,
    align_corners: bool,
}

impl Reference<'_> {
    fn unnormalize(&self, coordinate: f64, size: usize) -> f64 {
        let size = size as f64;
        if self.align_corners {
            (coordinate + 1.0) / 2.0 * (size - 1.0)
        } else {
            ((coordinate + 1.0) * size - 1.0) / 2.0
        }
    }

    /// Reflect `x` between `twice_low / 2` and `twice_high / 2`.
    fn reflect(x: f64, twice_low: f64, twice_high: f64) -> f64 {
        if twice_low == twice_high {
            return 0.0;
        }
        let low = twice_low / 2.0;
        let span = (twice_high - twice_low) / 2.0;
        let distance = (x - low).abs();
        let extra = distance % span;
        let flips = (distance / span).floor() as i64;
        if flips % 2 == 0 {
            extra + low
        } else {
            span - extra + low
        }
    }

    /// A position moved inside the input by the padding.
    fn pad(&self, x: f64, size: usize) -> f64 {
        let last = size as f64 - 1.0;
        match self.padding {
            GridSamplePadding::Zeros => x,
            GridSamplePadding::Border => x.clamp(0.0, last),
            GridSamplePadding::Reflection => {
                let reflected = if self.align_corners {
                    Self::reflect(x, 0.0, 2.0 * last)
                } else {
                    Self::reflect(x, -1.0, 2.0 * size as f64 - 1.0)
                };
                reflected.clamp(0.0, last)
            }
        }
    }

    /// The input at whole-number `position` (outermost spatial axis first), 0 outside.
    fn at(&self, n: usize, c: usize, position: &[i64]) -> f64 {
        let spatial = &self.shape[2..];
        let mut flat = n * self.shape[1] + c;
        for (&p, &size) in position.iter().zip(spatial) {
            if p < 0 || p >= size as i64 {
                return 0.0;
            }
            flat = flat * size + p as usize;
        }
        self.data[flat]
    }

    /// The sample at normalized `grid_point` (x first, as the grid holds it).
    fn sample(&self, mode: GridSampleMode, n: usize, c: usize, grid_point: &[f64]) -> f64 {
        let spatial = &self.shape[2..];
        let k = spatial.len();
        // Outermost axis first.
        let unnormalized: Vec<f64> = (0..k)
            .map(|axis| self.unnormalize(grid_point[k - 1 - axis], spatial[axis]))
            .collect();
        match mode {
            GridSampleMode::Nearest => {
                let position: Vec<i64> = (0..k)
                    .map(|a| self.pad(unnormalized[a], spatial[a]).round_ties_even() as i64)
                    .collect();
                self.at(n, c, &position)
            }
            GridSampleMode::Bilinear => {
                let padded: Vec<f64> = (0..k)
                    .map(|a| self.pad(unnormalized[a], spatial[a]))
                    .collect();
                let mut total = 0.0;
                for corner in 0..(1usize << k) {
                    let mut weight = 1.0;
                    let mut position = Vec::with_capacity(k);
                    for (a, &p) in padded.iter().enumerate() {
                        let low = p.floor();
                        if corner >> a & 1 == 1 {
                            weight *= p - low;
                            position.push(low as i64 + 1);
                        } else {
                            weight *= low + 1.0 - p;
                            position.push(low as i64);
                        }
                    }
                    total += weight * self.at(n, c, &position);
                }
                total
            }
            GridSampleMode::Bicubic => {
                let (y, x) = (unnormalized[0], unnormalized[1]);
                let (y0, x0) = (y.floor(), x.floor());
                let (ty, tx) = (y - y0, x - x0);
                let bounded = |row: f64, column: f64| -> f64 {
                    let row = self.pad(row, spatial[0]) as i64;
                    let column = self.pad(column, spatial[1]) as i64;
                    self.at(n, c, &[row, column])
                };
                let rows: Vec<f64> = (-1..=2)
                    .map(|i| {
                        let row = y0 + i as f64;
                        cubic_interpolate(
                            [
                                bounded(row, x0 - 1.0),
                                bounded(row, x0),
                                bounded(row, x0 + 1.0),
                                bounded(row, x0 + 2.0),
                            ],
                            tx,
                        )
                    })
                    .collect();
                cubic_interpolate([rows[0], rows[1], rows[2], rows[3]], ty)
            }
        }
    }

    /// The whole output for `grid` `[n, out..., k]`.
    fn run(&self, mode: GridSampleMode, grid: &[f64], grid_shape: &[usize]) -> Vec<f64> {
        let (batch, channels) = (self.shape[0], self.shape[1]);
        let k = grid_shape[grid_shape.len() - 1];
        let points: usize = grid_shape[1..grid_shape.len() - 1].iter().product();
        let mut out = Vec::with_capacity(batch * channels * points);
        for n in 0..batch {
            for c in 0..channels {
                for p in 0..points {
                    let start = (n * points + p) * k;
                    out.push(self.sample(mode, n, c, &grid[start..start + k]));
                }
            }
        }
        out
    }
}

/// 1-D cubic convolution of four neighbours at fraction `t` past the second (A = -0.75).
fn cubic_interpolate(values: [f64; 4], t: f64) -> f64 {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    let weights = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)];
    values.iter().zip(weights).map(|(v, w)| v * w).sum()
}

/// Grid values: spread over [-1.4, 1.4] (inside and outside the input) with some exact
/// points (the ends, the centre, ties of nearest rounding).
fn grid_values(count: usize, seed: u64) -> Vec<f32> {
    let special = [-1.0f32, 1.0, 0.0, -0.5, 0.5, 0.25, -1.25, 1.5];
    pseudo_random(count, seed)
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            if i % 5 == 0 {
                special[(i / 5) % special.len()]
            } else {
                r * 1.4
            }
        })
        .collect()
}

fn check_against_reference(
    device: &Device,
    input_shape: &[usize],
    grid_shape: &[usize],
    modes: &[GridSampleMode],
) {
    let count: usize = input_shape.iter().product();
    let data = pseudo_random(count, 7);
    let grid_data = grid_values(grid_shape.iter().product(), 11);
    let input = tensor(&data, input_shape, device);
    let grid = tensor(&grid_data, grid_shape, device);
    let data64: Vec<f64> = data.iter().map(|&x| x as f64).collect();
    let grid64: Vec<f64> = grid_data.iter().map(|&x| x as f64).collect();
    let mut out_shape = vec![input_shape[0], input_shape[1]];
    out_shape.extend_from_slice(&grid_shape[1..grid_shape.len() - 1]);
    for &mode in modes {
        for padding in PADDINGS {
            for align_corners in [false, true] {
                let reference = Reference {
                    data: &data64,
                    shape: input_shape,
                    padding,
                    align_corners,
                };
                let expected: Vec<f32> = reference
                    .run(mode, &grid64, grid_shape)
                    .iter()
                    .map(|&x| x as f32)
                    .collect();
                let out = input
                    .grid_sample(&grid, mode, padding, align_corners)
                    .unwrap();
                assert_eq!(out.shape(), out_shape);
                assert_close(
                    &values(&out),
                    &expected,
                    1e-5,
                    1e-4,
                    &format!("{input_shape:?} {mode:?} {padding:?} align_corners={align_corners}"),
                );
            }
        }
    }
}

fn grid_sample_2d_matches_the_reference(device: &Device) {
    check_against_reference(device, &[2, 3, 4, 5], &[2, 3, 4, 2], &MODES);
}

fn grid_sample_2d_single_pixel_axes(device: &Device) {
    // A one-pixel axis: reflection's zero-length span, border's clamp to the only pixel.
    check_against_reference(device, &[1, 2, 1, 3], &[1, 2, 3, 2], &MODES);
}

fn grid_sample_3d_matches_the_reference(device: &Device) {
    check_against_reference(
        device,
        &[2, 2, 3, 4, 5],
        &[2, 2, 3, 2, 3],
        &[GridSampleMode::Bilinear, GridSampleMode::Nearest],
    );
}

fn grid_sample_identity_grid_reproduces_the_input(device: &Device) {
    let data = pseudo_random(2 * 3 * 4 * 5, 3);
    let input = tensor(&data, &[2, 3, 4, 5], device);
    let identity = tensor(
        &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0].repeat(2),
        &[2, 2, 3],
        device,
    );
    for align_corners in [false, true] {
        let grid = Tensor::affine_grid(&identity, &[2, 3, 4, 5], align_corners).unwrap();
        for mode in MODES {
            let out = input
                .grid_sample(&grid, mode, GridSamplePadding::Zeros, align_corners)
                .unwrap();
            assert_close(&values(&out), &data, 1e-5, 1e-5, &format!("{mode:?}"));
        }
    }
}

/// PyTorch's base coordinates along one axis.
fn base_coordinates(size: usize, align_corners: bool) -> Vec<f64> {
    if size == 1 {
        return vec![0.0];
    }
    (0..size)
        .map(|i| {
            let x = -1.0 + 2.0 * i as f64 / (size - 1) as f64;
            if align_corners {
                x
            } else {
                x * (size - 1) as f64 / size as f64
            }
        })
        .collect()
}

fn affine_grid_matches_the_reference(device: &Device) {
    for align_corners in [false, true] {
        // 2-D: [n, h, w, 2], each entry theta @ [x, y, 1].
        let theta = pseudo_random(2 * 2 * 3, 5);
        let (h, w) = (3, 4);
        let grid = Tensor::affine_grid(
            &tensor(&theta, &[2, 2, 3], device),
            &[2, 1, h, w],
            align_corners,
        )
        .unwrap();
        assert_eq!(grid.shape(), [2, h, w, 2]);
        let (ys, xs) = (
            base_coordinates(h, align_corners),
            base_coordinates(w, align_corners),
        );
        let mut expected = Vec::new();
        for n in 0..2 {
            let t = |r: usize, c: usize| theta[n * 6 + r * 3 + c] as f64;
            for y in &ys {
                for x in &xs {
                    for r in 0..2 {
                        expected.push((t(r, 0) * x + t(r, 1) * y + t(r, 2)) as f32);
                    }
                }
            }
        }
        assert_close(&values(&grid), &expected, 1e-5, 1e-5, "affine_grid 2-D");

        // 3-D: [n, d, h, w, 3] from [x, y, z, 1], with a one-pixel depth.
        let theta = pseudo_random(3 * 4, 6);
        let (d, h, w) = (1, 2, 3);
        let grid = Tensor::affine_grid(
            &tensor(&theta, &[1, 3, 4], device),
            &[1, 2, d, h, w],
            align_corners,
        )
        .unwrap();
        assert_eq!(grid.shape(), [1, d, h, w, 3]);
        let t = |r: usize, c: usize| theta[r * 4 + c] as f64;
        let mut expected = Vec::new();
        for z in &base_coordinates(d, align_corners) {
            for y in &base_coordinates(h, align_corners) {
                for x in &base_coordinates(w, align_corners) {
                    for r in 0..3 {
                        expected.push((t(r, 0) * x + t(r, 1) * y + t(r, 2) * z + t(r, 3)) as f32);
                    }
                }
            }
        }
        assert_close(&values(&grid), &expected, 1e-5, 1e-5, "affine_grid 3-D");
    }
}

/// Normalized coordinates of pixel-space positions whose fractions keep away from whole and
/// half numbers (the kinks of the interpolation, the clamps and the reflections), so that
/// finite differences see one smooth piece. `spatial` is the input's spatial shape; the grid
/// has `points` points of `spatial.len()` coordinates, x (the last axis) first.
fn smooth_grid(points: usize, spatial: &[usize], align_corners: bool) -> Vec<f64> {
    let fractions = [0.15, 0.3, 0.65, 0.85];
    let k = spatial.len();
    (0..points * k)
        .map(|i| {
            let size = spatial[k - 1 - i % k];
            // Whole parts from -2 to size: some points outside the input.
            let whole = (i * 7 % (size + 3)) as f64 - 2.0;
            let position = whole + fractions[i % fractions.len()];
            if align_corners {
                position * 2.0 / (size as f64 - 1.0) - 1.0
            } else {
                (2.0 * position + 1.0) / size as f64 - 1.0
            }
        })
        .collect()
}

fn grid_sample_gradients_match_finite_differences(device: &Device) {
    // f64 on the CPU; f32 with a wider step on the GPU.
    let (dtype, epsilon, tolerance) = if device.is_gpu() {
        (DType::F32, 1e-3, 2e-2)
    } else {
        (DType::F64, 1e-6, 1e-6)
    };
    let make = |data: Vec<f64>, shape: &[usize]| {
        Tensor::from_vec(data, shape, &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
            .to_device(device)
            .unwrap()
            .requires_grad_(true)
    };
    let cases: [(&[usize], &[usize]); 2] = [
        (&[1, 2, 3, 4], &[1, 2, 3, 2]),
        (&[1, 2, 2, 3, 4], &[1, 2, 2, 1, 3]),
    ];
    for (input_shape, grid_shape) in cases {
        let input_data: Vec<f64> = pseudo_random(input_shape.iter().product(), 9)
            .iter()
            .map(|&x| x as f64)
            .collect();
        for padding in PADDINGS {
            for align_corners in [false, true] {
                let input = make(input_data.clone(), input_shape);
                let grid = make(
                    smooth_grid(
                        grid_shape[1..grid_shape.len() - 1].iter().product(),
                        &input_shape[2..],
                        align_corners,
                    ),
                    grid_shape,
                );
                let report = gradcheck(
                    |t| t[0].grid_sample(&t[1], GridSampleMode::Bilinear, padding, align_corners),
                    &[input, grid],
                    epsilon,
                    tolerance,
                )
                .unwrap_or_else(|e| {
                    panic!("{input_shape:?} {padding:?} align_corners={align_corners}: {e}")
                });
                assert!(report.checked_elements > 0);
            }
        }
    }
    // Bicubic too (4-D), and affine_grid's gradient to theta through a sampling.
    let input = make(
        pseudo_random(12, 4).iter().map(|&x| x as f64).collect(),
        &[1, 1, 3, 4],
    );
    let grid = make(smooth_grid(6, &[3, 4], false), &[1, 3, 2, 2]);
    gradcheck(
        |t| {
            t[0].grid_sample(
                &t[1],
                GridSampleMode::Bicubic,
                GridSamplePadding::Reflection,
                false,
            )
        },
        &[input.clone(), grid],
        epsilon,
        tolerance,
    )
    .unwrap();
    let theta = make(vec![0.9, 0.1, 0.05, -0.15, 0.8, 0.1], &[1, 2, 3]);
    gradcheck(
        |t| {
            let grid = Tensor::affine_grid(&t[1], &[1, 1, 2, 3], false)?;
            t[0].grid_sample(
                &grid,
                GridSampleMode::Bilinear,
                GridSamplePadding::Zeros,
                false,
            )
        },
        &[input, theta],
        epsilon,
        tolerance,
    )
    .unwrap();
}

fn grid_sample_errors_name_the_op(device: &Device) {
    let input = tensor(&[0.0; 16], &[1, 1, 4, 4], device);
    let grid = tensor(&[0.0; 8], &[1, 2, 2, 2], device);
    let message = |e: Error| e.to_string();
    let bad_rank = tensor(&[0.0; 4], &[1, 4], device);
    assert!(message(
        bad_rank
            .grid_sample(
                &grid,
                GridSampleMode::Bilinear,
                GridSamplePadding::Zeros,
                false
            )
            .unwrap_err()
    )
    .starts_with("grid_sample"));
    let wrong_grid = tensor(&[0.0; 12], &[1, 2, 2, 3], device);
    let error = message(
        input
            .grid_sample(
                &wrong_grid,
                GridSampleMode::Bilinear,
                GridSamplePadding::Zeros,
                false,
            )
            .unwrap_err(),
    );
    assert!(
        error.contains("grid_sample") && error.contains("grid"),
        "{error}"
    );
    let volume = tensor(&[0.0; 8], &[1, 1, 2, 2, 2], device);
    let volume_grid = tensor(&[0.0; 3], &[1, 1, 1, 1, 3], device);
    let error = message(
        volume
            .grid_sample(
                &volume_grid,
                GridSampleMode::Bicubic,
                GridSamplePadding::Zeros,
                false,
            )
            .unwrap_err(),
    );
    assert!(
        error.contains("grid_sample") && error.contains("bicubic"),
        "{error}"
    );
    let error = message(GridSampleMode::parse("area").unwrap_err());
    assert!(
        error.contains("grid_sample") && error.contains("area"),
        "{error}"
    );
    let error = message(GridSamplePadding::parse("wrap").unwrap_err());
    assert!(
        error.contains("grid_sample") && error.contains("wrap"),
        "{error}"
    );
    let error = message(Tensor::affine_grid(&grid, &[1, 1, 2, 2], false).unwrap_err());
    assert!(
        error.contains("affine_grid") && error.contains("theta"),
        "{error}"
    );
    // A valid call works, and nothing sampled from the middle of a constant is lost.
    let ones = Tensor::ones(&[1, 2, 3, 3], DType::F32, device).unwrap();
    let centre = Tensor::zeros(&[1, 1, 1, 2], DType::F32, device).unwrap();
    let out = ones
        .grid_sample(
            &centre,
            GridSampleMode::Bicubic,
            GridSamplePadding::Zeros,
            false,
        )
        .unwrap();
    assert_close(&values(&out), &[1.0, 1.0], 1e-6, 0.0, "centre of ones");
}

device_tests!(
    grid_sample_2d_matches_the_reference,
    grid_sample_2d_single_pixel_axes,
    grid_sample_3d_matches_the_reference,
    grid_sample_identity_grid_reproduces_the_input,
    affine_grid_matches_the_reference,
    grid_sample_gradients_match_finite_differences,
    grid_sample_errors_name_the_op,
);
