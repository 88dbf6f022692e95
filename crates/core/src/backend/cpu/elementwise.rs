//! CPU elementwise ops: unary, binary (on equal-shape views), binary with a scalar, and
//! `where`. Each is written once for floats (`FloatElement`) and once for integers
//! (`IntegerElement`); the op's own scalar function (in `op.rs`) does the maths.

use crate::backend::cpu::HostBuffer;
use half::f16;
use num_traits::{Float, NumCast, Zero};

use super::{
    map_strided, unsupported_dtype, zip_strided, CpuStorage, FloatElement, IntegerElement,
};
use crate::backend::checks::{check_bitwise_dtype, check_same_shape, check_view};
use crate::backend::contract::Elementwise;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};

fn unary_float<T: FloatElement>(data: &[T], layout: &Layout, op: UnaryOp) -> Result<Vec<T>> {
    map_strided(data, layout, |x| T::down(op.apply(x.up())))
}

fn unary_integer<T: IntegerElement>(data: &[T], layout: &Layout, op: UnaryOp) -> Result<Vec<T>> {
    map_strided(data, layout, |x| {
        T::down(op.apply_integer(x.up()).unwrap_or(0))
    })
}

/// Result of a binary op: same dtype, or `Bool` for comparisons.
enum BinaryResult<T> {
    Values(Vec<T>),
    Truth(Vec<bool>),
}

fn binary_float<T: FloatElement>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    op: BinaryOp,
) -> Result<BinaryResult<T>> {
    if op.is_comparison() {
        Ok(BinaryResult::Truth(zip_strided(a, la, b, lb, |x, y| {
            op.apply(x.up(), y.up()) != T::Compute::zero()
        })?))
    } else {
        Ok(BinaryResult::Values(zip_strided(a, la, b, lb, |x, y| {
            T::down(op.apply(x.up(), y.up()))
        })?))
    }
}

fn binary_integer<T: IntegerElement>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    op: BinaryOp,
) -> Result<BinaryResult<T>> {
    if op.is_comparison() {
        Ok(BinaryResult::Truth(zip_strided(a, la, b, lb, |x, y| {
            op.apply_integer(x.up(), y.up()) != 0
        })?))
    } else {
        Ok(BinaryResult::Values(zip_strided(a, la, b, lb, |x, y| {
            T::down(op.apply_integer(x.up(), y.up()))
        })?))
    }
}

fn scalar_float<T: FloatElement>(
    data: &[T],
    layout: &Layout,
    op: BinaryOp,
    scalar: f64,
    on_left: bool,
) -> Result<BinaryResult<T>> {
    let s: T::Compute = NumCast::from(scalar).unwrap_or_else(T::Compute::nan);
    let apply = move |x: T| {
        if on_left {
            op.apply(s, x.up())
        } else {
            op.apply(x.up(), s)
        }
    };
    if op.is_comparison() {
        Ok(BinaryResult::Truth(map_strided(data, layout, |x| {
            apply(x) != T::Compute::zero()
        })?))
    } else {
        Ok(BinaryResult::Values(map_strided(data, layout, |x| {
            T::down(apply(x))
        })?))
    }
}

fn scalar_integer<T: IntegerElement>(
    data: &[T],
    layout: &Layout,
    op: BinaryOp,
    scalar: f64,
    on_left: bool,
) -> Result<BinaryResult<T>> {
    let s = scalar as i64;
    let apply = move |x: T| {
        if on_left {
            op.apply_integer(s, x.up())
        } else {
            op.apply_integer(x.up(), s)
        }
    };
    if op.is_comparison() {
        Ok(BinaryResult::Truth(map_strided(data, layout, |x| {
            apply(x) != 0
        })?))
    } else {
        Ok(BinaryResult::Values(map_strided(data, layout, |x| {
            T::down(apply(x))
        })?))
    }
}

macro_rules! wrap_binary {
    ($result:expr, $variant:ident) => {
        match $result? {
            BinaryResult::Values(v) => CpuStorage::$variant(HostBuffer::from(v)),
            BinaryResult::Truth(v) => CpuStorage::Bool(HostBuffer::from(v)),
        }
    };
}

impl Elementwise for CpuStorage {
    /// Elementwise unary op; float ops on integer data are `Unsupported`.
    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<CpuStorage> {
        check_view(op.name(), layout, self.len())?;
        let integer_ok = op.supports_integers();
        Ok(match self {
            CpuStorage::F32(v) => CpuStorage::F32(HostBuffer::from(unary_float(v, layout, op)?)),
            CpuStorage::F16(v) => {
                CpuStorage::F16(HostBuffer::from(unary_float::<f16>(v, layout, op)?))
            }
            CpuStorage::F64(v) => CpuStorage::F64(HostBuffer::from(unary_float(v, layout, op)?)),
            CpuStorage::I32(v) if integer_ok => {
                CpuStorage::I32(HostBuffer::from(unary_integer(v, layout, op)?))
            }
            CpuStorage::U32(v) if integer_ok => {
                CpuStorage::U32(HostBuffer::from(unary_integer(v, layout, op)?))
            }
            CpuStorage::U8(v) if integer_ok => {
                CpuStorage::U8(HostBuffer::from(unary_integer(v, layout, op)?))
            }
            CpuStorage::BF16(_)
            | CpuStorage::I32(_)
            | CpuStorage::U32(_)
            | CpuStorage::U8(_)
            | CpuStorage::Bool(_) => return Err(unsupported_dtype(op.name(), self.dtype())),
        })
    }

    /// Elementwise binary op on two equal-shape views of the same dtype.
    fn binary(
        &self,
        layout: &Layout,
        rhs: &CpuStorage,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<CpuStorage> {
        check_same_shape(op.name(), layout, rhs_layout)?;
        check_bitwise_dtype(op, self.dtype(), "cpu")?;
        check_view(op.name(), layout, self.len())?;
        check_view(op.name(), rhs_layout, rhs.len())?;
        Ok(match (self, rhs) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => {
                wrap_binary!(binary_float(a, layout, b, rhs_layout, op), F32)
            }
            (CpuStorage::F16(a), CpuStorage::F16(b)) => {
                wrap_binary!(binary_float(a, layout, b, rhs_layout, op), F16)
            }
            (CpuStorage::F64(a), CpuStorage::F64(b)) => {
                wrap_binary!(binary_float(a, layout, b, rhs_layout, op), F64)
            }
            (CpuStorage::I32(a), CpuStorage::I32(b)) => {
                wrap_binary!(binary_integer(a, layout, b, rhs_layout, op), I32)
            }
            (CpuStorage::U32(a), CpuStorage::U32(b)) => {
                wrap_binary!(binary_integer(a, layout, b, rhs_layout, op), U32)
            }
            (CpuStorage::U8(a), CpuStorage::U8(b)) => {
                wrap_binary!(binary_integer(a, layout, b, rhs_layout, op), U8)
            }
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => {
                wrap_binary!(binary_integer(a, layout, b, rhs_layout, op), Bool)
            }
            (a, b) => {
                return Err(Error::DTypeMismatch {
                    op: op.name(),
                    lhs: a.dtype(),
                    rhs: b.dtype(),
                })
            }
        })
    }

    /// Elementwise binary op with a scalar operand.
    fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        on_left: bool,
    ) -> Result<CpuStorage> {
        check_bitwise_dtype(op, self.dtype(), "cpu")?;
        check_view(op.name(), layout, self.len())?;
        Ok(match self {
            CpuStorage::F32(v) => wrap_binary!(scalar_float(v, layout, op, scalar, on_left), F32),
            CpuStorage::F16(v) => wrap_binary!(scalar_float(v, layout, op, scalar, on_left), F16),
            CpuStorage::F64(v) => wrap_binary!(scalar_float(v, layout, op, scalar, on_left), F64),
            CpuStorage::I32(v) => wrap_binary!(scalar_integer(v, layout, op, scalar, on_left), I32),
            CpuStorage::U32(v) => wrap_binary!(scalar_integer(v, layout, op, scalar, on_left), U32),
            CpuStorage::U8(v) => wrap_binary!(scalar_integer(v, layout, op, scalar, on_left), U8),
            CpuStorage::Bool(v) => {
                wrap_binary!(scalar_integer(v, layout, op, scalar, on_left), Bool)
            }
            CpuStorage::BF16(_) => return Err(unsupported_dtype(op.name(), self.dtype())),
        })
    }

    /// `self ? on_true : on_false`, elementwise; `self` may be any dtype (non-zero is true).
    fn where_select(
        &self,
        layout: &Layout,
        on_true: &CpuStorage,
        true_layout: &Layout,
        on_false: &CpuStorage,
        false_layout: &Layout,
    ) -> Result<CpuStorage> {
        check_same_shape("where", layout, true_layout)?;
        check_same_shape("where", layout, false_layout)?;
        check_view("where", layout, self.len())?;
        check_view("where", true_layout, on_true.len())?;
        check_view("where", false_layout, on_false.len())?;
        let condition: Vec<bool> = self
            .to_f64_vec(layout)?
            .into_iter()
            .map(|c| c != 0.0)
            .collect();
        let condition_layout = Layout::contiguous(&layout.shape);
        fn select<T: Copy + Send + Sync>(
            condition: &[bool],
            condition_layout: &Layout,
            a: &[T],
            la: &Layout,
            b: &[T],
            lb: &Layout,
        ) -> Result<Vec<T>> {
            let picked_true = zip_strided(condition, condition_layout, a, la, |c, x| (c, x))?;
            let picked_false: Vec<T> = map_strided(b, lb, |y| y)?;
            let mut out = super::alloc::reserved(picked_true.len())?;
            out.extend(
                picked_true
                    .into_iter()
                    .zip(picked_false)
                    .map(|((c, x), y)| if c { x } else { y }),
            );
            Ok(out)
        }
        let (c, cl) = (&condition, &condition_layout);
        Ok(match (on_true, on_false) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(HostBuffer::from(select(
                c,
                cl,
                a,
                true_layout,
                b,
                false_layout,
            )?)),
            (CpuStorage::F16(a), CpuStorage::F16(b)) => CpuStorage::F16(HostBuffer::from(select(
                c,
                cl,
                a,
                true_layout,
                b,
                false_layout,
            )?)),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(HostBuffer::from(select(
                c,
                cl,
                a,
                true_layout,
                b,
                false_layout,
            )?)),
            (CpuStorage::I32(a), CpuStorage::I32(b)) => CpuStorage::I32(HostBuffer::from(select(
                c,
                cl,
                a,
                true_layout,
                b,
                false_layout,
            )?)),
            (CpuStorage::U32(a), CpuStorage::U32(b)) => CpuStorage::U32(HostBuffer::from(select(
                c,
                cl,
                a,
                true_layout,
                b,
                false_layout,
            )?)),
            (CpuStorage::U8(a), CpuStorage::U8(b)) => CpuStorage::U8(HostBuffer::from(select(
                c,
                cl,
                a,
                true_layout,
                b,
                false_layout,
            )?)),
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => CpuStorage::Bool(HostBuffer::from(
                select(c, cl, a, true_layout, b, false_layout)?,
            )),
            (a, b) => {
                return Err(Error::DTypeMismatch {
                    op: "where",
                    lhs: a.dtype(),
                    rhs: b.dtype(),
                })
            }
        })
    }
}
