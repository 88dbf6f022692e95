//! Zero-copy exchange of CPU memory with foreign arrays (numpy, through the Python package's
//! `Tensor.numpy()` and `from_numpy`). A CPU storage never moves or reallocates once made:
//! in-place ops write into its elements, and no path replaces the buffer behind it. So the
//! address of its first element stays valid for as long as any tensor holds the storage;
//! whoever exports it keeps such a tensor alive beside the foreign array. The other way, a
//! tensor can be made over memory another library owns (`HostBuffer::from_foreign`), kept
//! alive by an owner object that the storage holds.

use std::any::Any;

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::Storage;

impl Tensor {
    /// The address of the first element of this tensor's CPU storage (not of its view: add
    /// `layout().offset` elements), or `None` on a GPU. Valid while this tensor (or another
    /// sharing the storage) lives; reads and writes through it bypass autograd and must keep
    /// to the view's elements and the dtype's valid values.
    pub fn host_storage_address(&self) -> Option<usize> {
        self.storage().host_address()
    }
}

impl Tensor {
    /// A CPU tensor of `dtype` and row-major `shape` over memory another library owns, which
    /// `owner` keeps alive: no copy, so writes through either side show in the other (PyTorch's
    /// `from_numpy`). Bool is refused (foreign bytes other than 0 and 1 would be invalid).
    ///
    /// # Safety
    /// `address` must be aligned for `dtype` and valid for reads and writes of the shape's
    /// element count of initialized elements for as long as `owner` lives, and the memory must
    /// neither move nor be freed while `owner` lives.
    pub unsafe fn from_host_memory(
        address: usize,
        dtype: DType,
        shape: &[usize],
        owner: Box<dyn Any + Send + Sync>,
    ) -> Result<Tensor> {
        let count = shape
            .iter()
            .try_fold(1usize, |product, &size| product.checked_mul(size))
            .ok_or_else(|| Error::invalid("from_host_memory", "the shape's size overflows"))?;
        // SAFETY: the caller's contract, passed on.
        let storage = unsafe { Storage::from_host_memory(address, dtype, count, owner)? };
        Ok(Tensor::from_storage(storage, shape, None))
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

    #[test]
    fn a_tensor_over_foreign_memory_shares_it_and_keeps_it_alive() {
        use std::sync::{Arc, Mutex};
        let owner = Arc::new(Mutex::new(vec![1.0f64, 2.0, 3.0, 4.0]));
        let address = owner.lock().unwrap().as_mut_ptr() as usize;
        let watcher = Arc::clone(&owner);
        let x = unsafe { Tensor::from_host_memory(address, DType::F64, &[2, 2], Box::new(owner)) }
            .unwrap();
        assert_eq!(x.to_vec_f64().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        x.assign(&x.mul_scalar(10.0).unwrap()).unwrap();
        assert_eq!(*watcher.lock().unwrap(), vec![10.0, 20.0, 30.0, 40.0]);
        watcher.lock().unwrap()[0] = -1.0;
        assert_eq!(x.to_vec_f64().unwrap()[0], -1.0);
        assert_eq!(x.host_storage_address(), Some(address));
        assert_eq!(Arc::strong_count(&watcher), 2);
        drop(x);
        assert_eq!(Arc::strong_count(&watcher), 1);
        let refused = unsafe { Tensor::from_host_memory(address, DType::Bool, &[1], Box::new(())) };
        assert!(refused.is_err());
    }
}
