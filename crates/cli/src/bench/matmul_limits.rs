//! What `bench matmul --sizes` may ask of a device, checked for every size before the first
//! matrix is made: an `n x n` product needs its right-hand matrix in one storage binding on a
//! GPU (the matmul kernel slices the left-hand rows, never the right-hand matrix) and its
//! three matrices (both operands and the product) in memory. Without this a size beyond
//! either limit fills memory with random numbers for minutes (89 s on lavapipe for 65536 in
//! f16) before the first product fails.

use anygrad::{DType, Device, Error, Result};

use super::host_memory;

/// The limits one device sets on a product's matrices.
#[derive(Debug, Clone, PartialEq)]
pub struct MatmulLimits {
    /// The largest buffer one kernel binding sees, in bytes, and where that figure comes from
    /// (`None`: no such limit, the CPU).
    pub binding: Option<(u64, String)>,
    /// Memory for tensors, in bytes, and what it is (`None`: not reported).
    pub memory: Option<(u64, String)>,
}

/// The per-binding cap `ANYGRAD_MAX_BINDING_BYTES` sets, parsed as the GPU backend does
/// (`backend/gpu/runtime/buffers.rs`: a byte count of at least 4096, rounded down to 4 bytes).
fn binding_cap_from_environment() -> Option<u64> {
    let text = std::env::var("ANYGRAD_MAX_BINDING_BYTES").ok()?;
    let cap = text.trim().parse::<u64>().ok()?;
    (cap >= 4096).then_some(cap / 4 * 4)
}

/// The host's RAM plus swap, described.
fn host_memory() -> Option<(u64, String)> {
    host_memory::total_bytes().map(|total| (total, "the host's RAM plus swap".to_string()))
}

impl MatmulLimits {
    /// The limits of `device`: a GPU's binding limit (lowered by `ANYGRAD_MAX_BINDING_BYTES`
    /// where set) and its memory where the adapter reports it, or the host's where the
    /// adapter is a software rasterizer; the CPU's memory is the host's.
    pub fn of(device: &Device) -> MatmulLimits {
        match device {
            Device::Cpu => MatmulLimits {
                binding: None,
                memory: host_memory(),
            },
            Device::Gpu(gpu) => {
                let info = gpu.info();
                let adapter = info.max_storage_binding_size.min(info.max_buffer_size);
                let binding = match binding_cap_from_environment() {
                    Some(cap) if cap < adapter => (
                        cap,
                        format!("set by ANYGRAD_MAX_BINDING_BYTES; the adapter's is {adapter}"),
                    ),
                    _ => (
                        adapter,
                        "this adapter's max_storage_buffer_binding_size".to_string(),
                    ),
                };
                let memory = match info.memory_bytes {
                    Some(bytes) => Some((bytes, "this adapter's memory".to_string())),
                    None if info.device_type == "Cpu" => host_memory().map(|(bytes, _)| {
                        (
                            bytes,
                            "the host's RAM plus swap, which this software adapter uses"
                                .to_string(),
                        )
                    }),
                    None => None,
                };
                MatmulLimits {
                    binding: Some(binding),
                    memory,
                }
            }
        }
    }

    /// `Err` naming the first size of `sizes` whose `dtype` matrices exceed a limit: which
    /// limit (per-buffer binding or memory), the bytes needed, the limit, and the largest
    /// size that fits.
    pub fn check(&self, sizes: &[usize], dtype: DType) -> Result<()> {
        let element = dtype.size_in_bytes() as u64;
        for &n in sizes {
            let matrix = (n as u64).saturating_mul(n as u64).saturating_mul(element);
            let mut problems = Vec::new();
            if let Some((limit, source)) = &self.binding {
                if matrix > *limit {
                    problems.push(format!(
                        "the {n}x{n} {dtype} right-hand matrix needs {matrix} bytes in one buffer \
                         (the matmul kernel binds it whole), above the per-buffer binding limit \
                         of {limit} bytes ({source}), a limit of one buffer, not of memory; the \
                         largest size under it is {}",
                        largest_side(*limit, element)
                    ));
                }
            }
            if let Some((memory, source)) = &self.memory {
                let total = matrix.saturating_mul(3);
                if total > *memory {
                    problems.push(format!(
                        "the three {n}x{n} {dtype} matrices (both operands and the product) \
                         need {total} bytes, more than the memory of {memory} bytes ({source}): \
                         out of memory before the first product; the largest size that fits \
                         is {}",
                        largest_side(memory / 3, element)
                    ));
                }
            }
            if !problems.is_empty() {
                return Err(Error::invalid(
                    "bench matmul",
                    format!("--sizes {n}: {}", problems.join("; and ")),
                ));
            }
        }
        Ok(())
    }
}

/// The largest `n` with `n * n * element <= bytes`.
fn largest_side(bytes: u64, element: u64) -> u64 {
    let elements = bytes / element.max(1);
    let mut side = (elements as f64).sqrt() as u64;
    while side.saturating_mul(side) > elements {
        side -= 1;
    }
    while (side + 1).saturating_mul(side + 1) <= elements {
        side += 1;
    }
    side
}

#[cfg(test)]
mod tests {
    use super::{largest_side, MatmulLimits};
    use anygrad::DType;

    fn limits(binding: Option<u64>, memory: Option<u64>) -> MatmulLimits {
        MatmulLimits {
            binding: binding.map(|bytes| (bytes, "test binding".to_string())),
            memory: memory.map(|bytes| (bytes, "test memory".to_string())),
        }
    }

    #[test]
    fn largest_side_is_exact() {
        assert_eq!(largest_side(128 << 20, 2), 8192);
        assert_eq!(largest_side((128 << 20) - 1, 2), 8191);
        assert_eq!(largest_side(15, 4), 1);
        assert_eq!(largest_side(3, 4), 0);
    }

    #[test]
    fn each_limit_is_named_with_its_numbers() {
        let lavapipe = limits(Some(128 << 20), Some(20 << 30));
        assert!(lavapipe.check(&[256, 8192], DType::F16).is_ok());
        let binding = lavapipe.check(&[256, 8193], DType::F16).unwrap_err();
        let text = binding.to_string();
        assert!(
            text.contains("--sizes 8193")
                && text.contains("per-buffer binding limit of 134217728 bytes (test binding)")
                && text.contains("largest size under it is 8192")
                && !text.contains("memory of"),
            "{text}"
        );
        let both = lavapipe
            .check(&[65536], DType::F16)
            .unwrap_err()
            .to_string();
        assert!(
            both.contains("binding limit") && both.contains("memory of 21474836480 bytes"),
            "{both}"
        );
        let cpu = limits(None, Some(1 << 30));
        let memory = cpu.check(&[16384], DType::F32).unwrap_err().to_string();
        assert!(
            memory.contains("3221225472 bytes")
                && memory.contains("out of memory")
                && !memory.contains("binding"),
            "{memory}"
        );
        assert!(limits(None, None).check(&[1 << 20], DType::F32).is_ok());
    }
}
