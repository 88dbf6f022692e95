//! CPU batched matmul. Float types go through the `gemm` crate (blocked, vectorized,
//! multi-threaded), which reads arbitrary row/column strides, so transposed views need no
//! copy; integer types use a plain triple loop.

use super::{CpuStorage, IntegerElement};
use crate::backend::checks::{check_matmul_shapes, check_view};
use crate::backend::contract::LinearAlgebra;
use crate::backend::cpu::HostBuffer;
use crate::error::{Error, Result};
use crate::layout::Layout;

/// Work (multiply-adds) above which gemm may use every thread.
const PARALLEL_WORK: usize = 48 * 48 * 48;

fn gemm_batched<T: Copy + Default + 'static>(
    lhs: &[T],
    ll: &Layout,
    rhs: &[T],
    rl: &Layout,
    zero: T,
    one: T,
) -> Result<Vec<T>> {
    let (batch, m, k) = (ll.shape[0], ll.shape[1], ll.shape[2]);
    let n = rl.shape[2];
    let mut out = super::alloc::filled(batch * m * n, T::default())?;
    if m == 0 || n == 0 {
        return Ok(out);
    }
    let parallelism = if m * n * k >= PARALLEL_WORK {
        gemm::Parallelism::Rayon(rayon::current_num_threads())
    } else {
        gemm::Parallelism::None
    };
    for b in 0..batch {
        let lhs_offset = ll.offset + b * ll.strides[0];
        let rhs_offset = rl.offset + b * rl.strides[0];
        let dst = &mut out[b * m * n..(b + 1) * m * n];
        if k == 0 {
            continue;
        }
        // SAFETY: `CpuStorage::matmul` checked both views lie inside their storages
        // (`check_view`: every offset + sum((size-1)*stride) is < len) and their shapes, `dst` holds exactly m*n elements laid
        // out row-major (row stride n, column stride 1), and the three regions do not alias.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                lhs.as_ptr().add(lhs_offset),
                ll.strides[2] as isize,
                ll.strides[1] as isize,
                rhs.as_ptr().add(rhs_offset),
                rl.strides[2] as isize,
                rl.strides[1] as isize,
                zero,
                one,
                false,
                false,
                false,
                parallelism,
            );
        }
    }
    Ok(out)
}

fn matmul_integer<T: IntegerElement + Default>(
    lhs: &[T],
    ll: &Layout,
    rhs: &[T],
    rl: &Layout,
) -> Result<Vec<T>> {
    let (batch, m, k) = (ll.shape[0], ll.shape[1], ll.shape[2]);
    let n = rl.shape[2];
    let mut out = super::alloc::reserved(batch * m * n)?;
    for b in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0i64;
                for p in 0..k {
                    let a = lhs
                        [ll.offset + b * ll.strides[0] + i * ll.strides[1] + p * ll.strides[2]]
                        .up();
                    let c = rhs
                        [rl.offset + b * rl.strides[0] + p * rl.strides[1] + j * rl.strides[2]]
                        .up();
                    acc = acc.wrapping_add(a.wrapping_mul(c));
                }
                out.push(T::down(acc));
            }
        }
    }
    Ok(out)
}

impl LinearAlgebra for CpuStorage {
    /// `[b, m, k] x [b, k, n] -> [b, m, n]`.
    fn matmul(&self, layout: &Layout, rhs: &CpuStorage, rhs_layout: &Layout) -> Result<CpuStorage> {
        use half::f16;
        check_matmul_shapes(layout, rhs_layout)?;
        check_view("matmul", layout, self.len())?;
        check_view("matmul", rhs_layout, rhs.len())?;
        Ok(match (self, rhs) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(HostBuffer::from(
                gemm_batched(a, layout, b, rhs_layout, 0.0, 1.0)?,
            )),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(HostBuffer::from(
                gemm_batched(a, layout, b, rhs_layout, 0.0, 1.0)?,
            )),
            (CpuStorage::F16(a), CpuStorage::F16(b)) => CpuStorage::F16(HostBuffer::from(
                gemm_batched(a, layout, b, rhs_layout, f16::ZERO, f16::ONE)?,
            )),
            (CpuStorage::I32(a), CpuStorage::I32(b)) => {
                CpuStorage::I32(HostBuffer::from(matmul_integer(a, layout, b, rhs_layout)?))
            }
            (CpuStorage::U32(a), CpuStorage::U32(b)) => {
                CpuStorage::U32(HostBuffer::from(matmul_integer(a, layout, b, rhs_layout)?))
            }
            (CpuStorage::U8(a), CpuStorage::U8(b)) => {
                CpuStorage::U8(HostBuffer::from(matmul_integer(a, layout, b, rhs_layout)?))
            }
            (CpuStorage::Bool(_), CpuStorage::Bool(_)) => {
                return Err(super::unsupported_dtype("matmul", self.dtype()))
            }
            (a, b) => {
                return Err(Error::DTypeMismatch {
                    op: "matmul",
                    lhs: a.dtype(),
                    rhs: b.dtype(),
                })
            }
        })
    }
}
