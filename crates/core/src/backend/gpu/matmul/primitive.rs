//! What the compute primitives of `GpuStorage` share (operand checks), and the matmul primitive,
//! which picks one of four kernel families (`matmul/`, `matmul/large.rs`, `matmul/coop.rs`,
//! `matmul/dot.rs`). The other primitives live with their kernel family (`elementwise/`,
//! `reduce/`, `index/`, `conv/direct.rs`, `conv/backward.rs`, `custom/`); each checks its
//! operands on the host, fills its family's params struct and records one dispatch; nothing waits
//! for the GPU. Signatures follow `CpuStorage`'s (see the contract in `storage.rs`).

use crate::backend::gpu::matmul::coop::{MatmulCoopState, COOP_TILE};
use crate::backend::gpu::matmul::dot as matmul_dot;
use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::matmul::large::{
    aligned_applies, prefers_large_tile, split_k_factor, split_k_legal, LARGE_TILE,
};
use crate::backend::gpu::matmul::vector as matmul_vector;
use crate::backend::gpu::matmul::MatmulParams;
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{check_view, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::BinaryOp;

/// One way to compute a matmul (the autotuner's candidates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatmulChoice {
    /// The 64 x 64 kernel (`matmul/`).
    Tile64,
    /// The 128 x 128 kernel (`matmul/large.rs`), general or aligned.
    Tile128 { aligned: bool },
    /// The aligned 128 x 128 kernel over k-slices, partial products added (`matmul_split_k`).
    SplitK(usize),
    /// Operands that are not row-major (a weight gradient's transposed activations) copied
    /// dense first, then the aligned 128 x 128 kernel, over k-slices when `Some`.
    Dense(Option<usize>),
    /// An F16 product too small to fill the GPU with 64 x 64 tiles (a classifier's 64 x 1000
    /// outputs: 16 workgroups) as this many k-slices on the 64 x 64 kernel, any strides,
    /// stored in f32 and added before one rounding to f16 (`matmul_split_k_partials`).
    SplitKPartials(usize),
    /// One dot product per output over operands contiguous along k (`matmul/dot.rs`).
    Dot,
    /// A few rows times a weight's transpose, k split over 32 invocations an output
    /// (`matmul/vector.rs`).
    Vector,
}

impl MatmulChoice {
    /// The candidate's name in the autotuner's keys and cache file.
    fn name(&self) -> String {
        match self {
            MatmulChoice::Tile64 => "tile64".into(),
            MatmulChoice::Tile128 { aligned: false } => "tile128".into(),
            MatmulChoice::Tile128 { aligned: true } => "tile128-aligned".into(),
            MatmulChoice::SplitK(split) => format!("split-k{split}"),
            MatmulChoice::Dense(None) => "dense-tile128-aligned".into(),
            MatmulChoice::Dense(Some(split)) => format!("dense-split-k{split}"),
            MatmulChoice::SplitKPartials(split) => format!("tile64-split-k{split}"),
            MatmulChoice::Dot => "dot".into(),
            MatmulChoice::Vector => "vector".into(),
        }
    }
}

/// The single product `[1, m, k] x [1, k, n]` (views `a`, `b`) as `split` batches of
/// k-slices: A's column slices `[split, m, k / split]` and B's row slices `[split, k / split,
/// n]`, read through the operands' own strides.
fn k_slices(a: &Layout, b: &Layout, split: usize) -> (Layout, Layout) {
    let part = a.shape[2] / split;
    let a_slices = Layout {
        shape: vec![split, a.shape[1], part],
        strides: vec![part * a.strides[2], a.strides[1], a.strides[2]],
        offset: a.offset,
    };
    let b_slices = Layout {
        shape: vec![split, part, b.shape[2]],
        strides: vec![part * b.strides[1], b.strides[1], b.strides[2]],
        offset: b.offset,
    };
    (a_slices, b_slices)
}

/// The sum of `split` (a power of two) dense partial products of `len` elements each, stored
/// one after another: added pairwise, halves first (a fixed order: deterministic).
fn add_partials(mut partials: GpuStorage, split: usize, len: usize) -> Result<GpuStorage> {
    let mut count = split;
    while count > 1 {
        let half = count / 2;
        let both = Layout::contiguous(&[2 * half, len]);
        let (lower, upper) = (both.narrow(0, 0, half), both.narrow(0, half, half));
        partials = partials.binary(&lower, &partials, &upper, BinaryOp::Add)?;
        count = half;
    }
    Ok(partials)
}

/// Workgroups of 64 x 64 tiles below which an F16 product may be split over k
/// ([`MatmulChoice::SplitKPartials`]; the H200 has 132 multiprocessors).
const SPLIT_PARTIALS_BELOW: usize = 128;

/// Whether the F16 product `a x b` may run as `split` k-slices of f32 partial products: one
/// batch, fewer than [`SPLIT_PARTIALS_BELOW`] 64 x 64 tiles, `split` dividing k into slices of
/// at least 64 (any strides: the 64 x 64 kernel reads views).
fn split_k_partials_legal(dtype: DType, a: &Layout, b: &Layout, split: usize) -> bool {
    let (&[batch, m, k], &[_, _, n]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        return false;
    };
    dtype == DType::F16
        && batch == 1
        && m.div_ceil(64) * n.div_ceil(64) < SPLIT_PARTIALS_BELOW
        && k.is_multiple_of(split)
        && k / split >= 64
}

/// A dense copy of `view` (and its contiguous layout) unless it already is row-major with an
/// offset that is a multiple of `alignment` elements: what the aligned and cooperative matmul
/// kernels need of their operands.
fn dense_copy(
    storage: &GpuStorage,
    view: &Layout,
    alignment: usize,
) -> Result<Option<(GpuStorage, Layout)>> {
    if view.is_contiguous() && view.offset.is_multiple_of(alignment) {
        return Ok(None);
    }
    Ok(Some((
        storage.copy_strided(view)?,
        Layout::contiguous(&view.shape),
    )))
}

/// An operand: its storage and the view of it.
type Operand<'a> = (&'a GpuStorage, &'a Layout);

/// `product` of the operands after dense copies of those that need one (`dense_copy`), or
/// `None` when a copy does not fit in memory.
fn on_dense_operands<T>(
    (a, a_layout): Operand,
    (b, b_layout): Operand,
    alignment: usize,
    product: impl FnOnce(Operand, Operand) -> Result<T>,
) -> Result<Option<T>> {
    let (a_copy, b_copy) = match (
        dense_copy(a, a_layout, alignment),
        dense_copy(b, b_layout, alignment),
    ) {
        (Ok(a_copy), Ok(b_copy)) => (a_copy, b_copy),
        (Err(Error::OutOfMemory { .. }), _) | (_, Err(Error::OutOfMemory { .. })) => {
            return Ok(None)
        }
        (Err(error), _) | (_, Err(error)) => return Err(error),
    };
    let a = a_copy.as_ref().map_or((a, a_layout), |(s, l)| (s, l));
    let b = b_copy.as_ref().map_or((b, b_layout), |(s, l)| (s, l));
    product(a, b).map(Some)
}

impl GpuStorage {
    /// `[batch, m, k] x [batch, k, n] -> [batch, m, n]` (batch strides may be 0).
    pub fn matmul(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
    ) -> Result<GpuStorage> {
        // Tensor cores where they apply; a driver that refuses the (experimental) kernel
        // turns them off for this device and the regular kernels take over.
        let coop = MatmulCoopState::of(self.device.context());
        if let Some(variant) = coop.key_for(self.dtype, layout, rhs_layout) {
            let key = MatmulKernel::MatmulCoop {
                variant,
                emulated: false,
            };
            match self.matmul_with(layout, rhs, rhs_layout, key) {
                Err(error @ Error::Shader { .. }) => coop.disable(&error),
                result => return result,
            }
        } else {
            // Operands that are not row-major (a Linear layer's transposed weight, the
            // transposed activations of its weight gradient, attention's keys): dense copies,
            // one memory pass each, put them on the tensor cores where the shape allows
            // (only F16 products have tensor-core kernels: no layouts built for the others).
            if self.dtype == DType::F16
                && coop
                    .key_for(
                        self.dtype,
                        &Layout::contiguous(&layout.shape),
                        &Layout::contiguous(&rhs_layout.shape),
                    )
                    .is_some()
                && same_device("matmul", self, rhs).is_ok()
                && rhs.dtype == self.dtype
            {
                // Copies that do not fit, or a refused kernel, leave the product to the regular
                // kernels, which read the views as they are.
                let product = on_dense_operands((self, layout), (rhs, rhs_layout), 8, |a, b| {
                    let Some(variant) = coop.key_for(self.dtype, a.1, b.1) else {
                        return Ok(None);
                    };
                    let key = MatmulKernel::MatmulCoop {
                        variant,
                        emulated: false,
                    };
                    match a.0.matmul_with(a.1, b.0, b.1, key) {
                        Err(error @ Error::Shader { .. }) => {
                            coop.disable(&error);
                            Ok(None)
                        }
                        result => result.map(Some),
                    }
                })?;
                if let Some(Some(out)) = product {
                    return Ok(out);
                }
            }
        }
        self.matmul_regular(layout, rhs, rhs_layout)
    }

    /// `matmul` on the regular kernels (tile sizes, split-K, dense copies first): the
    /// candidates, the fixed heuristic's choice first; the autotuner picks one.
    fn matmul_regular(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
    ) -> Result<GpuStorage> {
        let (batch, m) = (
            layout.shape.first().copied().unwrap_or(0),
            layout.shape.get(1).copied().unwrap_or(0),
        );
        let n = rhs_layout.shape.get(2).copied().unwrap_or(0);
        let default = if matmul_vector::applies(self.dtype, layout, rhs_layout) {
            MatmulChoice::Vector
        } else if let Some(split) = split_k_factor(self.dtype, layout, rhs_layout) {
            MatmulChoice::SplitK(split)
        } else if self.dtype.is_float() && prefers_large_tile(batch, m, n) {
            MatmulChoice::Tile128 {
                aligned: aligned_applies(self.dtype, layout, rhs_layout),
            }
        } else {
            MatmulChoice::Tile64
        };
        let mut choices = vec![default];
        if self.dtype.is_float() {
            let mut others = vec![
                MatmulChoice::Tile64,
                MatmulChoice::Tile128 { aligned: false },
            ];
            if aligned_applies(self.dtype, layout, rhs_layout) {
                others.push(MatmulChoice::Tile128 { aligned: true });
            }
            for split in [2, 4, 8, 16] {
                if split_k_legal(self.dtype, layout, rhs_layout, split) {
                    others.push(MatmulChoice::SplitK(split));
                }
            }
            // Where only the operands' strides keep the aligned kernel out: the same kernels
            // after dense copies (one memory pass each), timed like the rest.
            let (a_dense, b_dense) = (
                Layout::contiguous(&layout.shape),
                Layout::contiguous(&rhs_layout.shape),
            );
            if !aligned_applies(self.dtype, layout, rhs_layout)
                && aligned_applies(self.dtype, &a_dense, &b_dense)
            {
                others.push(MatmulChoice::Dense(None));
                for split in [2, 4, 8, 16] {
                    if split_k_legal(self.dtype, &a_dense, &b_dense, split) {
                        others.push(MatmulChoice::Dense(Some(split)));
                    }
                }
            }
            others.extend(
                [2, 4, 8, 16]
                    .into_iter()
                    .filter(|&split| split_k_partials_legal(self.dtype, layout, rhs_layout, split))
                    .map(MatmulChoice::SplitKPartials),
            );
            if matmul_dot::applies(self.dtype, layout, rhs_layout) {
                others.push(MatmulChoice::Dot);
            }
            if matmul_vector::applies(self.dtype, layout, rhs_layout) {
                others.push(MatmulChoice::Vector);
            }
            for choice in others {
                if !choices.contains(&choice) {
                    choices.push(choice);
                }
            }
        }
        // Described only when tuning: with the tuner off nothing is formatted per call.
        let describe = || {
            let names: Vec<String> = choices.iter().map(MatmulChoice::name).collect();
            let k = layout.shape.get(2).copied().unwrap_or(0);
            let key = format!(
                "matmul {} {batch}x{m}x{k}x{n} {}",
                self.dtype,
                names.join(",")
            );
            (key, names)
        };
        let context = self.device.context();
        context
            .autotune
            .pick(choices.len(), describe, context, |index| {
                self.matmul_choice(layout, rhs, rhs_layout, choices[index])
            })
    }

    /// `a x b` by one candidate kernel of `matmul` (each computes the same product).
    fn matmul_choice(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        choice: MatmulChoice,
    ) -> Result<GpuStorage> {
        let dtype = self.dtype;
        match choice {
            MatmulChoice::Tile64 => {
                let key = MatmulKernel::Matmul {
                    dtype,
                    f32_partials: false,
                };
                self.matmul_with(layout, rhs, rhs_layout, key)
            }
            MatmulChoice::Tile128 { aligned } => {
                let key = MatmulKernel::MatmulLarge { dtype, aligned };
                self.matmul_with(layout, rhs, rhs_layout, key)
            }
            MatmulChoice::SplitK(split) => self.matmul_split_k(layout, rhs, rhs_layout, split),
            MatmulChoice::SplitKPartials(split) => {
                self.matmul_split_k_partials(layout, rhs, rhs_layout, split)
            }
            MatmulChoice::Dot => {
                self.matmul_with(layout, rhs, rhs_layout, MatmulKernel::MatmulDot { dtype })
            }
            MatmulChoice::Vector => self.matmul_with(
                layout,
                rhs,
                rhs_layout,
                MatmulKernel::MatmulVector { dtype },
            ),
            MatmulChoice::Dense(split) => {
                let product =
                    on_dense_operands((self, layout), (rhs, rhs_layout), 4, |a, b| match split {
                        Some(split) => a.0.matmul_split_k(a.1, b.0, b.1, split),
                        None => {
                            let key = MatmulKernel::MatmulLarge {
                                dtype,
                                aligned: true,
                            };
                            a.0.matmul_with(a.1, b.0, b.1, key)
                        }
                    })?;
                match product {
                    Some(out) => Ok(out),
                    // Copies that do not fit: the 64 x 64 kernel reads the views as they are.
                    None => {
                        let key = MatmulKernel::Matmul {
                            dtype,
                            f32_partials: false,
                        };
                        self.matmul_with(layout, rhs, rhs_layout, key)
                    }
                }
            }
        }
    }

    /// A single product as `split` k-slices (`split_k_factor`): the aligned kernel computes the
    /// slices' products as `split` batches, which are then added pairwise.
    fn matmul_split_k(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        split: usize,
    ) -> Result<GpuStorage> {
        let (a_slices, b_slices) = k_slices(layout, rhs_layout, split);
        let key = MatmulKernel::MatmulLarge {
            dtype: self.dtype,
            aligned: true,
        };
        let partials = self.matmul_with(&a_slices, rhs, &b_slices, key)?;
        add_partials(partials, split, layout.shape[1] * rhs_layout.shape[2])
    }

    /// A single F16 product as `split` k-slices on the 64 x 64 kernel (the caller checked
    /// [`split_k_partials_legal`]): the slices' products as `split` batches stored in f32,
    /// added pairwise (a fixed order: deterministic), then rounded to F16 once.
    fn matmul_split_k_partials(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        split: usize,
    ) -> Result<GpuStorage> {
        let (m, n) = (layout.shape[1], rhs_layout.shape[2]);
        let (a_slices, b_slices) = k_slices(layout, rhs_layout, split);
        let key = MatmulKernel::Matmul {
            dtype: self.dtype,
            f32_partials: true,
        };
        let partials = self.matmul_with(&a_slices, rhs, &b_slices, key)?;
        add_partials(partials, split, m * n)?.cast(&Layout::contiguous(&[1, m, n]), self.dtype)
    }

    /// `matmul` with a chosen kernel (`Matmul`, for floats `MatmulLarge`, for F16
    /// `MatmulCoop` where `MatmulCoopState::allows` it).
    pub(crate) fn matmul_with(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        key: MatmulKernel,
    ) -> Result<GpuStorage> {
        same_device("matmul", self, rhs)?;
        same_dtype("matmul", self.dtype, rhs.dtype)?;
        if self.dtype == DType::Bool {
            return Err(unsupported("matmul", self.dtype, &self.device));
        }
        if layout.rank() != 3
            || rhs_layout.rank() != 3
            || layout.shape[0] != rhs_layout.shape[0]
            || layout.shape[2] != rhs_layout.shape[1]
        {
            return Err(Error::ShapeMismatch {
                op: "matmul",
                lhs: layout.shape.clone(),
                rhs: rhs_layout.shape.clone(),
                reason: "must be [batch, m, k] and [batch, k, n]".into(),
            });
        }
        check_view("matmul", layout, self.len)?;
        check_view("matmul", rhs_layout, rhs.len)?;
        // The aligned kernel has no bounds checks: it must only run where its predicate holds.
        if let MatmulKernel::MatmulLarge { aligned: true, .. } = key {
            if !aligned_applies(self.dtype, layout, rhs_layout) {
                return Err(Error::invalid(
                    "matmul",
                    "the aligned kernel needs row-major operands, m and n multiples of 128 and aligned k, offsets and batch strides",
                ));
            }
        }
        if let MatmulKernel::MatmulDot { .. } = key {
            if !matmul_dot::applies(self.dtype, layout, rhs_layout) {
                return Err(Error::invalid(
                    "matmul",
                    "the dot kernel needs F16 or F32 operands contiguous along k, at most 256 rows, and offsets, strides and k in whole 16-byte vectors",
                ));
            }
        }
        if let MatmulKernel::MatmulVector { .. } = key {
            if !matmul_vector::applies(self.dtype, layout, rhs_layout) {
                return Err(Error::invalid(
                    "matmul",
                    "the vector kernel needs F16 or F32 operands contiguous along k, 1 to 4 rows, and offsets, strides and k in whole 16-byte vectors",
                ));
            }
        }
        // So do the cooperative-matrix kernels, which also need the device's support.
        if let MatmulKernel::MatmulCoop { variant, emulated } = key {
            let context = self.device.context();
            let operands = (self.dtype, layout, rhs_layout);
            if !MatmulCoopState::allows(context, variant, emulated, operands) {
                return Err(Error::invalid(
                    "matmul",
                    "the cooperative-matrix kernel needs a device with 16x16x16 f16 -> f32 cooperative matrices, F16 row-major operands, m and n multiples of 128, aligned k, offsets and batch strides",
                ));
            }
        }
        let (batch, m, k, n) = (
            layout.shape[0],
            layout.shape[1],
            layout.shape[2],
            rhs_layout.shape[2],
        );
        let out_dtype = match key {
            MatmulKernel::Matmul {
                f32_partials: true, ..
            } => DType::F32,
            _ => self.dtype,
        };
        let out = GpuStorage::allocate(&self.device, "matmul", batch * m * n, out_dtype)?;
        if batch * m * n == 0 {
            return Ok(out);
        }
        let params =
            Params::with_header(&MatmulParams::new([batch, m, n, k], layout, rhs_layout)?, 0);
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let (tile_m, tile_n) = match key {
            MatmulKernel::MatmulLarge { .. } => (LARGE_TILE, LARGE_TILE),
            MatmulKernel::MatmulCoop { variant, .. } => (COOP_TILE, variant.tile_n()),
            MatmulKernel::MatmulDot { .. } => (matmul_dot::ROWS, matmul_dot::COLUMNS),
            MatmulKernel::MatmulVector { .. } => (matmul_vector::ROWS, matmul_vector::COLUMNS),
            _ => (64, 64),
        };
        let (tiles_n, tiles_m) = (n.div_ceil(tile_n), m.div_ceil(tile_m));
        if tiles_n > max || tiles_m > max {
            return Err(Error::invalid(
                "matmul",
                format!("a {m}x{n} output needs more than {max} tiles per dimension; split it"),
            ));
        }
        // The kernels loop over batches (grid-stride in z), so any batch count fits the grid.
        let grid = (tiles_n as u32, tiles_m as u32, batch.min(max) as u32);
        if let MatmulKernel::MatmulDot { .. } = key {
            // Its invocations step through B's rows in lock-step: from L2, not memory.
            rhs.device.context().prefetch(rhs)?;
        }
        context.dispatch(
            &key,
            params.words(),
            &[self.raw()?, rhs.raw()?, out.raw()?],
            grid,
        )?;
        if let MatmulKernel::MatmulCoop {
            emulated: false, ..
        } = key
        {
            MatmulCoopState::of(context).count();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::{matmul_dot, matmul_vector, split_k_partials_legal, MatmulChoice};
    use crate::backend::contract::LinearAlgebra;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::backend::tests::support::gpu_device as gpu;
    use crate::dtype::DType;
    use crate::layout::Layout;
    use half::f16;

    /// `a x b` by `choice`, read back as f32.
    fn product(
        (a, a_layout): (&GpuStorage, &Layout),
        (b, b_layout): (&GpuStorage, &Layout),
        choice: MatmulChoice,
    ) -> Vec<f32> {
        match a
            .matmul_choice(a_layout, b, b_layout, choice)
            .unwrap()
            .to_cpu()
            .unwrap()
        {
            CpuStorage::F32(values) => (values).into_vec(),
            CpuStorage::F16(values) => values.iter().map(|x| x.to_f32()).collect(),
            other => panic!("{}: dtype changed to {:?}", choice.name(), other.dtype()),
        }
    }

    /// The dense-copy candidates on a weight gradient's shape (A a transposed view, B a
    /// column slice): the aligned kernel and split-K after the copies, against the CPU.
    #[test]
    fn dense_candidates_match_cpu() {
        let Some(device) = gpu() else { return };
        let (m, k, n) = (128usize, 1024usize, 256usize);
        let a_values: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect();
        let b_values: Vec<f32> = (0..k * (n + 64))
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 24.0)
            .collect();
        // A stored as [k, m] and read transposed; B a [k, n] slice of [k, n + 64].
        let a_layout = Layout {
            shape: vec![1, m, k],
            strides: vec![m * k, 1, m],
            offset: 0,
        };
        let b_layout = Layout {
            shape: vec![1, k, n],
            strides: vec![k * (n + 64), n + 64, 1],
            offset: 32,
        };
        let (a_cpu, b_cpu) = (
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(a_values)),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(b_values)),
        );
        let CpuStorage::F32(expected) = a_cpu.matmul(&a_layout, &b_cpu, &b_layout).unwrap() else {
            panic!("dtype changed")
        };
        let a = GpuStorage::from_cpu(&device, &a_cpu).unwrap();
        let b = GpuStorage::from_cpu(&device, &b_cpu).unwrap();
        for choice in [
            MatmulChoice::Dense(None),
            MatmulChoice::Dense(Some(2)),
            MatmulChoice::Dense(Some(8)),
        ] {
            let actual = a
                .matmul_choice(&a_layout, &b, &b_layout, choice)
                .unwrap()
                .to_cpu()
                .unwrap();
            let CpuStorage::F32(actual) = actual else {
                panic!("dtype changed")
            };
            for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-4 * (1.0 + x.abs()),
                    "{}: element {i}: {x} vs {y}",
                    choice.name()
                );
            }
        }
    }

    /// An F16 classifier's product (64 x 512 by a transposed 1000 x 512 weight, 16 tiles)
    /// over k-slices with f32 partial products, every legal split, and by the dot kernel,
    /// against the CPU's f32 product of the same f16 values: within one f16 rounding.
    #[test]
    fn f16_split_k_partials_match_cpu() {
        let Some(device) = gpu() else { return };
        if !crate::backend::tests::support::has_or_skip(
            &device,
            crate::backend::tests::support::Requirement::F16,
            "the test",
        ) {
            return;
        }
        let (m, k, n) = (64usize, 512usize, 1000usize);
        let a_values: Vec<f16> = (0..m * k)
            .map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 50.0))
            .collect();
        let weight: Vec<f16> = (0..n * k)
            .map(|i| f16::from_f32(((i * 53 % 97) as f32 - 48.0) / 48.0))
            .collect();
        let a_layout = Layout::contiguous(&[1, m, k]);
        // The weight [n, k] read as [k, n]: a linear layer's transposed view.
        let b_layout = Layout {
            shape: vec![1, k, n],
            strides: vec![n * k, 1, k],
            offset: 0,
        };
        let widen = |v: &[f16]| CpuStorage::F32(v.iter().map(|x| x.to_f32()).collect());
        let CpuStorage::F32(expected) = widen(&a_values)
            .matmul(&a_layout, &widen(&weight), &b_layout)
            .unwrap()
        else {
            panic!("dtype changed")
        };
        let a = GpuStorage::from_cpu(
            &device,
            &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(a_values)),
        )
        .unwrap();
        let b = GpuStorage::from_cpu(
            &device,
            &CpuStorage::F16(crate::backend::cpu::HostBuffer::from(weight)),
        )
        .unwrap();
        let splits: Vec<usize> = [2, 4, 8, 16]
            .into_iter()
            .filter(|&split| split_k_partials_legal(DType::F16, &a_layout, &b_layout, split))
            .collect();
        assert_eq!(splits, [2, 4, 8]);
        assert!(!split_k_partials_legal(DType::F32, &a_layout, &b_layout, 2));
        assert!(matmul_dot::applies(DType::F16, &a_layout, &b_layout));
        let choices = splits.into_iter().map(MatmulChoice::SplitKPartials);
        for choice in choices.chain([MatmulChoice::Dot]) {
            let actual = product((&a, &a_layout), (&b, &b_layout), choice);
            assert_eq!(actual.len(), expected.len());
            for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-3 * (1.0 + x.abs()),
                    "{}: element {i}: {x} vs {y}",
                    choice.name()
                );
            }
        }
    }

    /// The dot kernel in f32 on awkward views: batches (one operand broadcast), offsets, a
    /// padded row stride, k not a multiple of four vectors, odd n and m over one workgroup's
    /// rows; and a view it must refuse (B not contiguous along k).
    #[test]
    fn dot_kernel_matches_cpu_on_views() {
        let Some(device) = gpu() else { return };
        let (batch, m, k, n) = (2usize, 70usize, 20usize, 13usize);
        // A: [batch, m, k] inside rows of 24, at offset 8.
        let a_layout = Layout {
            shape: vec![batch, m, k],
            strides: vec![m * 24, 24, 1],
            offset: 8,
        };
        // B: the transpose of one [n, k] weight for both batches (batch stride 0), offset 4.
        let b_layout = Layout {
            shape: vec![batch, k, n],
            strides: vec![0, 1, k],
            offset: 4,
        };
        let a_values: Vec<f32> = (0..8 + batch * m * 24)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect();
        let b_values: Vec<f32> = (0..4 + n * k)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 24.0)
            .collect();
        let (a_cpu, b_cpu) = (
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(a_values)),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(b_values)),
        );
        let CpuStorage::F32(expected) = a_cpu.matmul(&a_layout, &b_cpu, &b_layout).unwrap() else {
            panic!("dtype changed")
        };
        let a = GpuStorage::from_cpu(&device, &a_cpu).unwrap();
        let b = GpuStorage::from_cpu(&device, &b_cpu).unwrap();
        assert!(matmul_dot::applies(DType::F32, &a_layout, &b_layout));
        let actual = product((&a, &a_layout), (&b, &b_layout), MatmulChoice::Dot);
        assert_eq!(actual.len(), expected.len());
        for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
            assert!(
                (x - y).abs() <= 1e-4 * (1.0 + x.abs()),
                "element {i}: {x} vs {y}"
            );
        }
        // B row-major (not contiguous along k): refused, not computed wrong.
        let b_row_major = Layout::contiguous(&[1, k, n]);
        let a_one = Layout::contiguous(&[1, m, k]);
        assert!(!matmul_dot::applies(DType::F32, &a_one, &b_row_major));
        assert!(a
            .matmul_choice(&a_one, &b, &b_row_major, MatmulChoice::Dot)
            .is_err());
    }

    /// The vector kernel on a decode step's shapes and awkward views, f32 and f16: one to four
    /// rows, two batches (B broadcast), offsets, a padded row stride, k of 13 vectors (not a
    /// multiple of the 32 invocations splitting it) and of 72 (several rounds), n not a multiple
    /// of a workgroup's 8 columns and over many workgroups; refused for five rows or B not
    /// contiguous along k.
    #[test]
    fn vector_kernel_matches_cpu_on_views() {
        let Some(device) = gpu() else { return };
        let f16_ok = crate::backend::tests::support::has_or_skip(
            &device,
            crate::backend::tests::support::Requirement::F16,
            "the f16 half of the test",
        );
        for (dtype, lanes) in [(DType::F32, 4usize), (DType::F16, 8)] {
            if dtype == DType::F16 && !f16_ok {
                continue;
            }
            for (batch, m, vectors, n) in [
                (1usize, 1usize, 72usize, 300usize),
                (2, 3, 13, 21),
                (1, 4, 1, 9),
            ] {
                let k = vectors * lanes;
                let row = k + lanes;
                let a_layout = Layout {
                    shape: vec![batch, m, k],
                    strides: vec![m * row, row, 1],
                    offset: lanes,
                };
                let b_layout = Layout {
                    shape: vec![batch, k, n],
                    strides: vec![0, 1, k],
                    offset: 2 * lanes,
                };
                let a_values: Vec<f32> = (0..lanes + batch * m * row)
                    .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                    .collect();
                let b_values: Vec<f32> = (0..2 * lanes + n * k)
                    .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
                    .collect();
                let store = |values: Vec<f32>| match dtype {
                    DType::F16 => {
                        CpuStorage::F16(values.iter().map(|&x| f16::from_f32(x)).collect())
                    }
                    _ => CpuStorage::F32(crate::backend::cpu::HostBuffer::from(values)),
                };
                let widen = |storage: &CpuStorage| match storage {
                    CpuStorage::F16(v) => CpuStorage::F32(v.iter().map(|x| x.to_f32()).collect()),
                    other => other.clone(),
                };
                let (a_cpu, b_cpu) = (store(a_values), store(b_values));
                let CpuStorage::F32(expected) = widen(&a_cpu)
                    .matmul(&a_layout, &widen(&b_cpu), &b_layout)
                    .unwrap()
                else {
                    panic!("dtype changed")
                };
                let a = GpuStorage::from_cpu(&device, &a_cpu).unwrap();
                let b = GpuStorage::from_cpu(&device, &b_cpu).unwrap();
                assert!(matmul_vector::applies(dtype, &a_layout, &b_layout));
                let actual = product((&a, &a_layout), (&b, &b_layout), MatmulChoice::Vector);
                assert_eq!(actual.len(), expected.len());
                let tolerance = if dtype == DType::F16 { 2e-3 } else { 1e-5 };
                for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
                    assert!(
                        (x - y).abs() <= tolerance * (1.0 + x.abs()),
                        "{dtype:?} {batch}x{m}x{k}x{n}: element {i}: {x} vs {y}"
                    );
                }
            }
        }
        let a_five = Layout::contiguous(&[1, 5, 8]);
        let b_transposed = Layout {
            shape: vec![1, 8, 4],
            strides: vec![32, 1, 8],
            offset: 0,
        };
        assert!(!matmul_vector::applies(DType::F32, &a_five, &b_transposed));
        let a_one = Layout::contiguous(&[1, 1, 8]);
        assert!(matmul_vector::applies(DType::F32, &a_one, &b_transposed));
        assert!(!matmul_vector::applies(
            DType::F32,
            &a_one,
            &Layout::contiguous(&[1, 8, 4])
        ));
        let values = CpuStorage::F32((0..40).map(|i| i as f32).collect());
        let a = GpuStorage::from_cpu(&device, &values).unwrap();
        assert!(a
            .matmul_choice(&a_five, &a, &b_transposed, MatmulChoice::Vector)
            .is_err());
    }
}
