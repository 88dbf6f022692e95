//! The elementwise family's key: [`ElementwiseKernel`], per op, dtypes and access.

use crate::backend::gpu::elementwise::bfloat16::{Bfloat16Write, CONVERSIONS};
use crate::backend::gpu::elementwise::Access;
use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::GPU_DTYPES;
use crate::dtype::DType;
use crate::op::{BinaryOp, UnaryOp};

/// The identity of one elementwise kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ElementwiseKernel {
    /// Elementwise unary op.
    Unary {
        dtype: DType,
        op: UnaryOp,
        access: Access,
    },
    /// Elementwise binary op on two views.
    Binary {
        dtype: DType,
        op: BinaryOp,
        access: Access,
    },
    /// Elementwise binary op with a scalar.
    BinaryScalar {
        dtype: DType,
        op: BinaryOp,
        scalar_on_left: bool,
        access: Access,
    },
    /// `where(condition, on_true, on_false)`.
    Where {
        condition: DType,
        dtype: DType,
        access: Access,
    },
    /// Strided copy with dtype conversion (`copy_strided`, `cast`, `copy_into`).
    Copy {
        from: DType,
        to: DType,
        access: Access,
    },
    /// A conversion from or to BF16 (`elementwise/bfloat16.rs`): `access` is `Strided` or
    /// `Contiguous`.
    Bfloat16 {
        from: DType,
        write: Bfloat16Write,
        access: Access,
    },
}

impl ElementwiseKernel {
    /// Whether the kernel touches f16 data.
    fn uses_f16(&self) -> bool {
        match *self {
            ElementwiseKernel::Unary { dtype, .. }
            | ElementwiseKernel::Binary { dtype, .. }
            | ElementwiseKernel::BinaryScalar { dtype, .. } => dtype == DType::F16,
            ElementwiseKernel::Where {
                condition, dtype, ..
            } => condition == DType::F16 || dtype == DType::F16,
            ElementwiseKernel::Copy { from, to, .. } => from == DType::F16 || to == DType::F16,
            ElementwiseKernel::Bfloat16 { .. } => false,
        }
    }
}

impl Kernel for ElementwiseKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        let body = match *self {
            ElementwiseKernel::Unary { dtype, op, access } => {
                super::unary_source(dtype, op, access)
            }
            ElementwiseKernel::Binary { dtype, op, access } => {
                super::binary_source(dtype, op, access)
            }
            ElementwiseKernel::BinaryScalar {
                dtype,
                op,
                scalar_on_left,
                access,
            } => super::binary_scalar_source(dtype, op, scalar_on_left, access),
            ElementwiseKernel::Where {
                condition,
                dtype,
                access,
            } => super::where_source(condition, dtype, access),
            ElementwiseKernel::Copy { from, to, access } => super::copy_source(from, to, access),
            ElementwiseKernel::Bfloat16 {
                from,
                write,
                access,
            } => super::bfloat16::source(from, write, access),
        };
        enable_f16_if(self.uses_f16(), body)
    }

    /// The vec4 kernels read and write whole vectors of dense views below their count
    /// (`elementwise/vector.rs`); the others keep the checks.
    fn is_trusted(&self) -> bool {
        match self {
            ElementwiseKernel::Unary { access, .. }
            | ElementwiseKernel::Binary { access, .. }
            | ElementwiseKernel::BinaryScalar { access, .. }
            | ElementwiseKernel::Copy { access, .. } => *access == Access::Vector,
            ElementwiseKernel::Where { .. } | ElementwiseKernel::Bfloat16 { .. } => false,
        }
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<ElementwiseKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype, &GPU_DTYPES);
        }
        for access in [Access::Strided, Access::Contiguous] {
            for (from, write) in CONVERSIONS {
                keys.push(ElementwiseKernel::Bfloat16 {
                    from,
                    write,
                    access,
                });
            }
        }
        keys
    }
}
