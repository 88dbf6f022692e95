//! Zero-copy access to a CPU tensor's memory for foreign arrays (numpy through the Python
//! package's `Tensor.numpy()`). A CPU storage never moves or reallocates once made: in-place
//! ops write into its elements, and no path replaces the vector behind it. So the address of
//! its first element stays valid for as long as any tensor holds the storage; whoever exports
//! it keeps such a tensor alive beside the foreign array.

use super::Tensor;
use crate::backend::cpu::CpuStorage;
use crate::storage::Storage;

impl Tensor {
    /// The address of the first element of this tensor's CPU storage (not of its view: add
    /// `layout().offset` elements), or `None` on a GPU. Valid while this tensor (or another
    /// sharing the storage) lives; reads and writes through it bypass autograd and must keep
    /// to the view's elements and the dtype's valid values.
    pub fn host_storage_address(&self) -> Option<usize> {
        let storage = self.storage();
        let Storage::Cpu(cpu) = &*storage else {
            return None;
        };
        Some(match cpu {
            CpuStorage::F32(data) => data.as_ptr() as usize,
            CpuStorage::F16(data) => data.as_ptr() as usize,
            CpuStorage::F64(data) => data.as_ptr() as usize,
            CpuStorage::I32(data) => data.as_ptr() as usize,
            CpuStorage::U32(data) => data.as_ptr() as usize,
            CpuStorage::U8(data) => data.as_ptr() as usize,
            CpuStorage::Bool(data) => data.as_ptr() as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Device, Tensor};

    #[test]
    fn the_address_is_stable_across_in_place_writes_and_shared_by_views() {
        let x = Tensor::zeros(&[4, 3], DType::F32, &Device::Cpu).unwrap();
        let address = x.host_storage_address().unwrap();
        let ones = Tensor::ones(&[4, 3], DType::F32, &Device::Cpu).unwrap();
        x.assign(&ones).unwrap();
        assert_eq!(x.host_storage_address(), Some(address));
        let view = x.narrow(0, 1, 2).unwrap();
        assert_eq!(view.host_storage_address(), Some(address));
        assert_eq!(view.layout().offset, 3);
        // The address reads the tensor's values.
        let first = unsafe { *(address as *const f32) };
        assert_eq!(first, 1.0);
    }
}
