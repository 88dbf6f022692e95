//! The CPU backend: the reference semantics for every primitive. Data lives in a typed `Vec`;
//! generic loops are written once over two small traits (`FloatElement` computes f16 through
//! f32; `IntegerElement` computes through i64). Large contiguous work is spread with rayon,
//! matmul and conv2d (`conv.rs`: im2col, then one gemm per image) go through the `gemm` crate;
//! max pooling and its gradient are direct loops (`pool.rs`), as are the depthwise
//! convolution and its gradients (`depthwise.rs`). BF16 is stored here as 16-bit values;
//! creation, copies and casts handle it directly, and `storage.rs` runs every other primitive
//! on a BF16 operand in f32 (widened, then the result rounded back), for both backends alike.

pub(crate) mod alloc;
mod batch_norm;
mod class_pick;
mod conv;
mod conv_backward;
mod conv_epilogue;
mod depthwise;
mod elementwise;
mod host_buffer;
mod index;
mod matmul;
mod pool;
mod quantized;
mod reduce;
mod rows;
mod scan;
mod sort;
mod update;

use half::{bf16, f16};
use rayon::prelude::*;

pub use host_buffer::HostBuffer;

use crate::backend::checks::check_view;
use crate::backend::contract::{
    Attention, BackendStorage, Copying, Creation, CustomKernels, RandomNumbers,
};
use crate::dtype::{bf16_from_f32, DType, Element};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::random::{random_bits, seed_key, standard_normal, unit_uniform, Distribution};

/// Elements below which work stays on one thread (spawning costs more than it saves).
pub(crate) const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Tensor data in host memory.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuStorage {
    F32(HostBuffer<f32>),
    F16(HostBuffer<f16>),
    /// bfloat16, stored as 16 bits (computed in f32 through `storage.rs`).
    BF16(HostBuffer<bf16>),
    F64(HostBuffer<f64>),
    I32(HostBuffer<i32>),
    U32(HostBuffer<u32>),
    U8(HostBuffer<u8>),
    Bool(HostBuffer<bool>),
}

/// Apply `$body` to the vector inside any variant, rewrapping in the same variant.
macro_rules! map_same_variant {
    ($storage:expr, $data:ident => $body:expr) => {
        match $storage {
            CpuStorage::F32($data) => CpuStorage::F32($body),
            CpuStorage::F16($data) => CpuStorage::F16($body),
            CpuStorage::BF16($data) => CpuStorage::BF16($body),
            CpuStorage::F64($data) => CpuStorage::F64($body),
            CpuStorage::I32($data) => CpuStorage::I32($body),
            CpuStorage::U32($data) => CpuStorage::U32($body),
            CpuStorage::U8($data) => CpuStorage::U8($body),
            CpuStorage::Bool($data) => CpuStorage::Bool($body),
        }
    };
}
pub(crate) use map_same_variant;

/// A float element computed through an accumulator type (f16 computes in f32).
pub(crate) trait FloatElement: Copy + Send + Sync + 'static {
    type Compute: num_traits::Float + Send + Sync + std::iter::Sum + 'static;
    fn up(self) -> Self::Compute;
    fn down(value: Self::Compute) -> Self;
    fn up_f64(self) -> f64;
    fn from_f64(value: f64) -> Self;
}

impl FloatElement for f32 {
    type Compute = f32;
    fn up(self) -> f32 {
        self
    }
    fn down(value: f32) -> Self {
        value
    }
    fn up_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(value: f64) -> Self {
        value as f32
    }
}

impl FloatElement for f64 {
    type Compute = f64;
    fn up(self) -> f64 {
        self
    }
    fn down(value: f64) -> Self {
        value
    }
    fn up_f64(self) -> f64 {
        self
    }
    fn from_f64(value: f64) -> Self {
        value
    }
}

impl FloatElement for f16 {
    type Compute = f32;
    fn up(self) -> f32 {
        self.to_f32()
    }
    fn down(value: f32) -> Self {
        f16::from_f32(value)
    }
    fn up_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(value: f64) -> Self {
        f16::from_f64(value)
    }
}

/// An integer (or bool) element computed through i64.
pub(crate) trait IntegerElement: Copy + Send + Sync + 'static {
    fn up(self) -> i64;
    fn down(value: i64) -> Self;
}

macro_rules! integer_element {
    ($rust:ty) => {
        impl IntegerElement for $rust {
            fn up(self) -> i64 {
                self as i64
            }
            fn down(value: i64) -> Self {
                value as $rust
            }
        }
    };
}
integer_element!(i32);
integer_element!(u32);
integer_element!(u8);

impl IntegerElement for bool {
    fn up(self) -> i64 {
        self as i64
    }
    fn down(value: i64) -> Self {
        value != 0
    }
}

/// Map every element of a strided view, in logical order, into a new vector (reserved
/// fallibly: an output too large for the machine is `Error::OutOfMemory`).
pub(crate) fn map_strided<T, U, F>(data: &[T], layout: &Layout, function: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Send,
    F: Fn(T) -> U + Sync + Send,
{
    let count = layout.numel();
    let mut out = alloc::reserved(count)?;
    if count == 0 {
        return Ok(out);
    }
    if layout.is_contiguous() {
        let slice = &data[layout.offset..layout.offset + count];
        if count >= PARALLEL_THRESHOLD {
            slice
                .par_iter()
                .map(|&value| function(value))
                .collect_into_vec(&mut out);
        } else {
            out.extend(slice.iter().map(|&value| function(value)));
        }
    } else {
        out.extend(layout.positions().map(|position| function(data[position])));
    }
    Ok(out)
}

/// Combine two equal-shape strided views elementwise into a new vector (reserved fallibly).
pub(crate) fn zip_strided<A, B, U, F>(
    lhs: &[A],
    lhs_layout: &Layout,
    rhs: &[B],
    rhs_layout: &Layout,
    function: F,
) -> Result<Vec<U>>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Send,
    F: Fn(A, B) -> U + Sync + Send,
{
    let count = lhs_layout.numel();
    let mut out = alloc::reserved(count)?;
    if count == 0 {
        return Ok(out);
    }
    if lhs_layout.is_contiguous() && rhs_layout.is_contiguous() {
        let a = &lhs[lhs_layout.offset..lhs_layout.offset + count];
        let b = &rhs[rhs_layout.offset..rhs_layout.offset + count];
        if count >= PARALLEL_THRESHOLD {
            a.par_iter()
                .zip(b.par_iter())
                .map(|(&x, &y)| function(x, y))
                .collect_into_vec(&mut out);
        } else {
            out.extend(a.iter().zip(b).map(|(&x, &y)| function(x, y)));
        }
    } else {
        out.extend(
            lhs_layout
                .positions()
                .zip(rhs_layout.positions())
                .map(|(i, j)| function(lhs[i], rhs[j])),
        );
    }
    Ok(out)
}

pub(crate) fn unsupported_dtype(op: &'static str, dtype: DType) -> Error {
    Error::Unsupported {
        op,
        dtype,
        device: "cpu".into(),
        hint: String::new(),
    }
}

impl CpuStorage {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
            CpuStorage::F64(_) => DType::F64,
            CpuStorage::I32(_) => DType::I32,
            CpuStorage::U32(_) => DType::U32,
            CpuStorage::U8(_) => DType::U8,
            CpuStorage::Bool(_) => DType::Bool,
        }
    }

    /// Number of stored elements.
    pub fn len(&self) -> usize {
        match self {
            CpuStorage::F32(v) => v.len(),
            CpuStorage::F16(v) => v.len(),
            CpuStorage::BF16(v) => v.len(),
            CpuStorage::F64(v) => v.len(),
            CpuStorage::I32(v) => v.len(),
            CpuStorage::U32(v) => v.len(),
            CpuStorage::U8(v) => v.len(),
            CpuStorage::Bool(v) => v.len(),
        }
    }

    /// Build a storage from a typed vector (moved, not copied, for the built-in element
    /// types; another type implementing `Element` is converted through f64).
    pub fn from_vec<T: Element>(values: Vec<T>) -> CpuStorage {
        /// `values` as a `Vec<U>` when `T` is `U` (no copy), else back unchanged.
        fn moved<T: Element, U: 'static>(values: Vec<T>) -> std::result::Result<Vec<U>, Vec<T>> {
            let mut slot = Some(values);
            if let Some(same) =
                (&mut slot as &mut dyn std::any::Any).downcast_mut::<Option<Vec<U>>>()
            {
                return Ok(same.take().unwrap_or_default());
            }
            Err(slot.unwrap_or_default())
        }
        let converted = |values: Vec<T>| {
            let wide: Vec<f64> = values.into_iter().map(Element::to_f64).collect();
            CpuStorage::from_f64_values(&wide, T::DTYPE)
        };
        match T::DTYPE {
            DType::F32 => moved(values).map_or_else(converted, |v| CpuStorage::F32(v.into())),
            DType::F16 => moved(values).map_or_else(converted, |v| CpuStorage::F16(v.into())),
            DType::BF16 => moved(values).map_or_else(converted, |v| CpuStorage::BF16(v.into())),
            DType::F64 => moved(values).map_or_else(converted, |v| CpuStorage::F64(v.into())),
            DType::I32 => moved(values).map_or_else(converted, |v| CpuStorage::I32(v.into())),
            DType::U32 => moved(values).map_or_else(converted, |v| CpuStorage::U32(v.into())),
            DType::U8 => moved(values).map_or_else(converted, |v| CpuStorage::U8(v.into())),
            DType::Bool => moved(values).map_or_else(converted, |v| CpuStorage::Bool(v.into())),
        }
    }

    /// The strided view as a typed vector (the dtype must be `T`'s).
    pub fn to_vec<T: Element>(&self, layout: &Layout) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::DTypeMismatch {
                op: "to_vec",
                lhs: self.dtype(),
                rhs: T::DTYPE,
            });
        }
        let values = self.to_f64_vec(layout)?;
        Ok(values.into_iter().map(T::from_f64).collect())
    }

    /// The strided view converted to f64 (exact for every dtype).
    pub fn to_f64_vec(&self, layout: &Layout) -> Result<Vec<f64>> {
        Ok(match self {
            CpuStorage::F32(v) => map_strided(v, layout, |x| x as f64)?,
            CpuStorage::F16(v) => map_strided(v, layout, |x| x.to_f64())?,
            CpuStorage::BF16(v) => map_strided(v, layout, |x| x.to_f64())?,
            CpuStorage::F64(v) => map_strided(v, layout, |x| x)?,
            CpuStorage::I32(v) => map_strided(v, layout, |x| x as f64)?,
            CpuStorage::U32(v) => map_strided(v, layout, |x| x as f64)?,
            CpuStorage::U8(v) => map_strided(v, layout, |x| x as f64)?,
            CpuStorage::Bool(v) => map_strided(v, layout, |x| if x { 1.0 } else { 0.0 })?,
        })
    }

    /// A storage of f64 values converted to `dtype`.
    pub fn from_f64_values(values: &[f64], dtype: DType) -> CpuStorage {
        match dtype {
            DType::F32 => CpuStorage::F32(values.iter().map(|&v| v as f32).collect()),
            DType::F16 => CpuStorage::F16(values.iter().map(|&v| f16::from_f64(v)).collect()),
            DType::BF16 => {
                CpuStorage::BF16(values.iter().map(|&v| bf16_from_f32(v as f32)).collect())
            }
            DType::F64 => CpuStorage::F64(HostBuffer::from(values.to_vec())),
            DType::I32 => CpuStorage::I32(values.iter().map(|&v| v as i32).collect()),
            DType::U32 => CpuStorage::U32(values.iter().map(|&v| v as u32).collect()),
            DType::U8 => CpuStorage::U8(values.iter().map(|&v| v as u8).collect()),
            DType::Bool => CpuStorage::Bool(values.iter().map(|&v| v != 0.0).collect()),
        }
    }

    /// `numel` copies of `value`.
    pub fn full(numel: usize, dtype: DType, value: f64) -> Result<CpuStorage> {
        Ok(match dtype {
            DType::F32 => CpuStorage::F32(HostBuffer::from(alloc::filled(numel, value as f32)?)),
            DType::F16 => CpuStorage::F16(HostBuffer::from(alloc::filled(
                numel,
                f16::from_f64(value),
            )?)),
            DType::BF16 => CpuStorage::BF16(HostBuffer::from(alloc::filled(
                numel,
                bf16_from_f32(value as f32),
            )?)),
            DType::F64 => CpuStorage::F64(HostBuffer::from(alloc::filled(numel, value)?)),
            DType::I32 => CpuStorage::I32(HostBuffer::from(alloc::filled(numel, value as i32)?)),
            DType::U32 => CpuStorage::U32(HostBuffer::from(alloc::filled(numel, value as u32)?)),
            DType::U8 => CpuStorage::U8(HostBuffer::from(alloc::filled(numel, value as u8)?)),
            DType::Bool => CpuStorage::Bool(HostBuffer::from(alloc::filled(numel, value != 0.0)?)),
        })
    }

    /// `start + i * step` for `i in 0..numel`.
    pub fn arange(start: f64, step: f64, numel: usize, dtype: DType) -> Result<CpuStorage> {
        let mut values: Vec<f64> = alloc::reserved(numel)?;
        values.extend((0..numel).map(|i| start + i as f64 * step));
        Ok(CpuStorage::from_f64_values(&values, dtype))
    }

    /// Counter-based random values; the same numbers the GPU kernel draws.
    pub fn random(
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<CpuStorage> {
        if !dtype.is_float() {
            return Err(unsupported_dtype("random", dtype));
        }
        let key = seed_key(seed);
        let counter = |i: usize| (offset as u32).wrapping_add(i as u32);
        let mut values: Vec<f32> = alloc::reserved(numel)?;
        match distribution {
            Distribution::Uniform { low, high } => {
                let (low, high) = (low as f32, high as f32);
                (0..numel)
                    .into_par_iter()
                    .map(|i| low + (high - low) * unit_uniform(random_bits(key, counter(i))))
                    .collect_into_vec(&mut values)
            }
            Distribution::Normal { mean, std } => {
                let (mean, std) = (mean as f32, std as f32);
                (0..numel)
                    .into_par_iter()
                    .map(|i| mean + std * standard_normal(key, counter(i)))
                    .collect_into_vec(&mut values)
            }
        };
        Ok(match dtype {
            DType::F32 => CpuStorage::F32(HostBuffer::from(values)),
            DType::F16 => CpuStorage::F16(values.into_iter().map(f16::from_f32).collect()),
            DType::BF16 => CpuStorage::BF16(values.into_iter().map(bf16_from_f32).collect()),
            DType::F64 => CpuStorage::F64(values.into_iter().map(|v| v as f64).collect()),
            DType::I32 | DType::U32 | DType::U8 | DType::Bool => {
                return Err(unsupported_dtype("random", dtype))
            }
        })
    }
}

impl BackendStorage for CpuStorage {
    type Device = ();
    const NAME: &'static str = "cpu";

    fn dtype(&self) -> DType {
        CpuStorage::dtype(self)
    }
}

impl Creation for CpuStorage {
    fn full(_device: &(), numel: usize, dtype: DType, value: f64) -> Result<Self> {
        CpuStorage::full(numel, dtype, value)
    }

    fn arange(_device: &(), start: f64, step: f64, numel: usize, dtype: DType) -> Result<Self> {
        CpuStorage::arange(start, step, numel, dtype)
    }
}

impl RandomNumbers for CpuStorage {
    fn random(
        _device: &(),
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Self> {
        CpuStorage::random(numel, dtype, distribution, seed, offset)
    }
}

/// The CPU has no fused attention: the tensor layer runs the composite.
impl Attention for CpuStorage {}

/// User WGSL kernels run on GPUs; a custom op's CPU function runs here.
impl CustomKernels for CpuStorage {}

impl Copying for CpuStorage {
    /// A contiguous copy of the view.
    fn copy_strided(&self, layout: &Layout) -> Result<CpuStorage> {
        check_view("copy", layout, self.len())?;
        Ok(map_same_variant!(self, data => HostBuffer::from(map_strided(data, layout, |x| x)?)))
    }

    /// Copy the view `layout` into the view `dst_layout` of `dst`.
    fn copy_into(&self, layout: &Layout, dst: &mut CpuStorage, dst_layout: &Layout) -> Result<()> {
        fn write<T: Copy + Send + Sync>(
            src: &[T],
            layout: &Layout,
            dst: &mut [T],
            dst_layout: &Layout,
        ) {
            for (from, to) in layout.positions().zip(dst_layout.positions()) {
                dst[to] = src[from];
            }
        }
        if layout.shape != dst_layout.shape {
            return Err(Error::ShapeMismatch {
                op: "copy",
                lhs: layout.shape.clone(),
                rhs: dst_layout.shape.clone(),
                reason: "must have the same shape".into(),
            });
        }
        check_view("copy", layout, self.len())?;
        check_view("copy", dst_layout, dst.len())?;
        match (self, dst) {
            (CpuStorage::F32(s), CpuStorage::F32(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::F16(s), CpuStorage::F16(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::BF16(s), CpuStorage::BF16(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::F64(s), CpuStorage::F64(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::I32(s), CpuStorage::I32(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::U32(s), CpuStorage::U32(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::U8(s), CpuStorage::U8(d)) => write(s, layout, d, dst_layout),
            (CpuStorage::Bool(s), CpuStorage::Bool(d)) => write(s, layout, d, dst_layout),
            (s, d) => {
                return Err(Error::DTypeMismatch {
                    op: "copy",
                    lhs: s.dtype(),
                    rhs: d.dtype(),
                })
            }
        }
        Ok(())
    }

    /// Convert the view to `dtype` (float → integer truncates toward zero and saturates).
    fn cast(&self, layout: &Layout, dtype: DType) -> Result<CpuStorage> {
        check_view("cast", layout, self.len())?;
        if self.dtype() == dtype {
            return self.copy_strided(layout);
        }
        match (self, dtype) {
            (CpuStorage::F32(v), DType::F16) => Ok(CpuStorage::F16(HostBuffer::from(map_strided(
                v,
                layout,
                f16::from_f32,
            )?))),
            (CpuStorage::F16(v), DType::F32) => Ok(CpuStorage::F32(HostBuffer::from(map_strided(
                v,
                layout,
                |x| x.to_f32(),
            )?))),
            (CpuStorage::F32(v), DType::BF16) => Ok(CpuStorage::BF16(HostBuffer::from(
                map_strided(v, layout, bf16_from_f32)?,
            ))),
            (CpuStorage::BF16(v), DType::F32) => Ok(CpuStorage::F32(HostBuffer::from(
                map_strided(v, layout, |x| x.to_f32())?,
            ))),
            (CpuStorage::F32(v), DType::I32) => Ok(CpuStorage::I32(HostBuffer::from(map_strided(
                v,
                layout,
                |x| x as i32,
            )?))),
            (CpuStorage::I32(v), DType::F32) => Ok(CpuStorage::F32(HostBuffer::from(map_strided(
                v,
                layout,
                |x| x as f32,
            )?))),
            (CpuStorage::Bool(v), DType::F32) => Ok(CpuStorage::F32(HostBuffer::from(
                map_strided(v, layout, |x| x as u8 as f32)?,
            ))),
            _ => Ok(CpuStorage::from_f64_values(
                &self.to_f64_vec(layout)?,
                dtype,
            )),
        }
    }
}
