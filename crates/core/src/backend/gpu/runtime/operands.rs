//! The operand checks every primitive of `GpuStorage` shares: a dtype the kernel lacks, two
//! operands on different contexts, two dtypes that must agree.

use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// `Error::Unsupported` for `op` on `dtype` on this device.
pub(crate) fn unsupported(op: &'static str, dtype: DType, device: &GpuDevice) -> Error {
    Error::Unsupported {
        op,
        dtype,
        device: format!("gpu:{}", device.ordinal()),
        hint: String::new(),
    }
}

/// `Error::DeviceMismatch` unless both operands live in one context.
pub(crate) fn same_device(op: &'static str, lhs: &GpuStorage, rhs: &GpuStorage) -> Result<()> {
    if lhs.device != rhs.device {
        return Err(Error::DeviceMismatch {
            op,
            lhs: format!("gpu:{}", lhs.device.ordinal()),
            rhs: format!("gpu:{} (another context)", rhs.device.ordinal()),
        });
    }
    Ok(())
}

/// `Error::DTypeMismatch` unless the dtypes are equal.
pub(crate) fn same_dtype(op: &'static str, lhs: DType, rhs: DType) -> Result<()> {
    if lhs != rhs {
        return Err(Error::DTypeMismatch { op, lhs, rhs });
    }
    Ok(())
}
