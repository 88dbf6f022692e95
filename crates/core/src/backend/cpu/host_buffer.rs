//! `HostBuffer<T>`: the elements of a CPU storage. Usually a `Vec` anygrad allocated; or
//! memory another library owns (a numpy array given to `from_numpy`), borrowed for as long
//! as the buffer lives through an owner object kept beside it, so that both sides see one
//! set of elements, as PyTorch's `from_numpy` does. Either way the elements never move or
//! change in number once the buffer exists: the backend only reads and writes them in place.

use std::any::Any;
use std::fmt;

use half::f16;

use super::CpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The elements of a CPU storage: owned, or borrowed from a foreign owner.
pub struct HostBuffer<T> {
    repr: Repr<T>,
}

enum Repr<T> {
    Owned(Vec<T>),
    Foreign {
        pointer: NonNull<T>,
        len: usize,
        /// Keeps the memory alive (dropped after the last use of `pointer`).
        _owner: Box<dyn Any + Send + Sync>,
    },
}

// SAFETY: a foreign buffer is plain memory kept alive by `_owner` (itself Send + Sync) and
// accessed like a `Vec<T>`'s elements; `T` is a plain number type.
unsafe impl<T: Send> Send for HostBuffer<T> {}
unsafe impl<T: Sync> Sync for HostBuffer<T> {}

impl<T> HostBuffer<T> {
    /// A buffer over `len` elements at `pointer` that `owner` keeps alive and in place.
    ///
    /// # Safety
    /// `pointer` must be non-null, aligned for `T`, and valid for reads and writes of `len`
    /// initialized elements of `T` (each a valid value of `T`) for as long as `owner` lives;
    /// the memory must not be freed or moved while `owner` lives.
    pub unsafe fn from_foreign(
        pointer: *mut T,
        len: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Option<HostBuffer<T>> {
        let pointer = NonNull::new(pointer)?;
        Some(HostBuffer {
            repr: Repr::Foreign {
                pointer,
                len,
                _owner: owner,
            },
        })
    }

    /// Whether the elements belong to another library's object.
    pub fn is_foreign(&self) -> bool {
        matches!(self.repr, Repr::Foreign { .. })
    }

    /// The elements as a `Vec` (the same allocation when owned, else a copy).
    pub fn into_vec(self) -> Vec<T>
    where
        T: Clone,
    {
        match self.repr {
            Repr::Owned(values) => values,
            Repr::Foreign { .. } => self.to_vec(),
        }
    }
}

impl<T> Deref for HostBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(values) => values,
            // SAFETY: `from_foreign`'s contract: valid, aligned, initialized, alive.
            Repr::Foreign { pointer, len, .. } => unsafe {
                std::slice::from_raw_parts(pointer.as_ptr(), *len)
            },
        }
    }
}

impl<T> DerefMut for HostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.repr {
            Repr::Owned(values) => values,
            // SAFETY: as in `deref`, and `&mut self` is the only access through this buffer.
            Repr::Foreign { pointer, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(pointer.as_ptr(), *len)
            },
        }
    }
}

impl<T> From<Vec<T>> for HostBuffer<T> {
    fn from(values: Vec<T>) -> HostBuffer<T> {
        HostBuffer {
            repr: Repr::Owned(values),
        }
    }
}

impl<T> FromIterator<T> for HostBuffer<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> HostBuffer<T> {
        HostBuffer::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Clone> Clone for HostBuffer<T> {
    /// An owned copy of the elements.
    fn clone(&self) -> HostBuffer<T> {
        HostBuffer::from(self.to_vec())
    }
}

impl<T: PartialEq> PartialEq for HostBuffer<T> {
    fn eq(&self, other: &HostBuffer<T>) -> bool {
        **self == **other
    }
}

impl<T: fmt::Debug> fmt::Debug for HostBuffer<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, formatter)
    }
}

impl<'a, T> IntoIterator for &'a HostBuffer<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl CpuStorage {
    /// The address of the first element.
    pub fn address(&self) -> usize {
        match self {
            CpuStorage::F32(data) => data.as_ptr() as usize,
            CpuStorage::F16(data) => data.as_ptr() as usize,
            CpuStorage::BF16(data) => data.as_ptr() as usize,
            CpuStorage::F64(data) => data.as_ptr() as usize,
            CpuStorage::I32(data) => data.as_ptr() as usize,
            CpuStorage::U32(data) => data.as_ptr() as usize,
            CpuStorage::U8(data) => data.as_ptr() as usize,
            CpuStorage::Bool(data) => data.as_ptr() as usize,
        }
    }

    /// A storage of `count` elements of `dtype` at `address`, owned by `owner`
    /// (`HostBuffer::from_foreign`). Bool is refused: foreign bytes other than 0 and 1 would
    /// be invalid values.
    ///
    /// # Safety
    /// As `HostBuffer::from_foreign`, for `count` elements of `dtype` at `address`.
    pub unsafe fn from_foreign(
        address: usize,
        dtype: DType,
        count: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Result<CpuStorage> {
        let null = || Error::invalid("from_host_memory", "the memory address is null");
        // SAFETY: the caller's contract, passed on for each element type.
        unsafe {
            Ok(match dtype {
                DType::F32 => CpuStorage::F32(
                    HostBuffer::from_foreign(address as *mut f32, count, owner).ok_or_else(null)?,
                ),
                DType::F16 => CpuStorage::F16(
                    HostBuffer::from_foreign(address as *mut f16, count, owner).ok_or_else(null)?,
                ),
                DType::BF16 => CpuStorage::BF16(
                    HostBuffer::from_foreign(address as *mut half::bf16, count, owner)
                        .ok_or_else(null)?,
                ),
                DType::F64 => CpuStorage::F64(
                    HostBuffer::from_foreign(address as *mut f64, count, owner).ok_or_else(null)?,
                ),
                DType::I32 => CpuStorage::I32(
                    HostBuffer::from_foreign(address as *mut i32, count, owner).ok_or_else(null)?,
                ),
                DType::U32 => CpuStorage::U32(
                    HostBuffer::from_foreign(address as *mut u32, count, owner).ok_or_else(null)?,
                ),
                DType::U8 => CpuStorage::U8(
                    HostBuffer::from_foreign(address as *mut u8, count, owner).ok_or_else(null)?,
                ),
                DType::Bool => {
                    return Err(Error::Unsupported {
                        op: "from_host_memory",
                        dtype,
                        device: "cpu".into(),
                        hint: "; copy bool data instead".into(),
                    })
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HostBuffer;
    use std::sync::Arc;

    #[test]
    fn a_foreign_buffer_reads_and_writes_the_owners_memory_and_keeps_it_alive() {
        let owner: Arc<Vec<f32>> = Arc::new(vec![1.0, 2.0, 3.0]);
        let pointer = owner.as_ptr() as *mut f32;
        let watcher = Arc::clone(&owner);
        let mut buffer = unsafe { HostBuffer::from_foreign(pointer, 3, Box::new(owner)) }.unwrap();
        assert!(buffer.is_foreign());
        assert_eq!(&*buffer, &[1.0, 2.0, 3.0]);
        buffer[1] = 5.0;
        assert_eq!(watcher[1], 5.0);
        assert_eq!(Arc::strong_count(&watcher), 2);
        let copy = buffer.clone();
        assert!(!copy.is_foreign());
        drop(buffer);
        assert_eq!(Arc::strong_count(&watcher), 1);
        assert_eq!(copy.into_vec(), vec![1.0, 5.0, 3.0]);
    }
}
