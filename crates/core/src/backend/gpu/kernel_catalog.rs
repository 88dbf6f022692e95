//! The catalogue of every kernel the backend can build: each `KernelKey` instantiated for
//! every dtype, op and access pattern, with its WGSL source. A unit test validates all of them
//! with naga (parse, validate, SPIR-V), so a template change that breaks one instantiation
//! fails without a GPU.

use super::kernels::{unary_supported, Access, KernelKey};
use crate::dtype::DType;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};

/// The dtypes the GPU stores.
pub const GPU_DTYPES: [DType; 6] = [
    DType::F32,
    DType::F16,
    DType::I32,
    DType::U32,
    DType::U8,
    DType::Bool,
];
/// Dtypes an index tensor may have.
pub const INDEX_DTYPES: [DType; 3] = [DType::I32, DType::U32, DType::U8];

/// Every kernel the backend can build: (name, WGSL source). Used by the naga validation test.
pub fn all_kernel_sources() -> Vec<(String, String)> {
    let mut keys = vec![KernelKey::Fill];
    for dtype in GPU_DTYPES {
        for access in [Access::Strided, Access::Contiguous, Access::Vector] {
            for op in UnaryOp::ALL {
                if unary_supported(dtype, op) {
                    keys.push(KernelKey::Unary { dtype, op, access });
                }
            }
            for op in BinaryOp::ALL {
                keys.push(KernelKey::Binary { dtype, op, access });
                for scalar_on_left in [false, true] {
                    keys.push(KernelKey::BinaryScalar {
                        dtype,
                        op,
                        scalar_on_left,
                        access,
                    });
                }
            }
            for condition in GPU_DTYPES {
                keys.push(KernelKey::Where {
                    condition,
                    dtype,
                    access,
                });
            }
            for to in GPU_DTYPES {
                keys.push(KernelKey::Copy {
                    from: dtype,
                    to,
                    access,
                });
            }
        }
        if dtype.is_float() {
            for normal in [false, true] {
                keys.push(KernelKey::Random { dtype, normal });
            }
            for aligned in [false, true] {
                keys.push(KernelKey::MatmulLarge { dtype, aligned });
            }
            for flag in [false, true] {
                keys.push(KernelKey::Conv2d { dtype, wide: flag });
                for wide in [false, true] {
                    keys.push(KernelKey::Conv2dBackwardInput {
                        dtype,
                        unit_stride: flag,
                        wide,
                    });
                }
                keys.push(KernelKey::Conv2dBackwardWeight {
                    dtype,
                    partial: flag,
                });
            }
            keys.push(KernelKey::Conv2dSplitSum { dtype });
        }
        if dtype != DType::Bool {
            for op in ReduceOp::ALL {
                keys.push(KernelKey::Reduce { dtype, op });
            }
            keys.push(KernelKey::Matmul { dtype });
        }
        for index in INDEX_DTYPES {
            keys.push(KernelKey::Gather { dtype, index });
            keys.push(KernelKey::IndexRows { dtype, index });
            if dtype != DType::Bool {
                keys.push(KernelKey::ScatterAdd { dtype, index });
            }
        }
    }
    // Cooperative-matrix matmuls: naga validates and translates them on the CPU too
    // (`Capabilities::all()` includes cooperative matrices); `matmul_coop.rs` also checks them
    // against wgpu's SPIR-V options for Vulkan.
    for variant in super::matmul_coop::CoopVariant::ALL {
        for emulated in [false, true] {
            keys.push(KernelKey::MatmulCoop { variant, emulated });
        }
    }
    keys.extend(
        super::conv_coop::ConvCoopKey::all()
            .into_iter()
            .map(KernelKey::ConvCoop),
    );
    keys.extend(
        super::fusion::sample_programs()
            .into_iter()
            .map(|program| KernelKey::Fused {
                program: std::sync::Arc::new(program),
            }),
    );
    keys.into_iter()
        .map(|key| (key.name(), key.source()))
        .collect()
}

/// Parse, validate and translate `source` to SPIR-V with naga (what wgpu runs for Vulkan, and
/// the SPIR-V writer has failure modes of its own); the error names the stage with naga's
/// message. Runs on the CPU, so kernels are checked without a GPU.
#[cfg(test)]
pub(crate) fn naga_check(source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|error| format!("parse: {}", error.emit_to_string(source)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|error| format!("validate: {}", error.emit_to_string(source)))?;
    let options = naga::back::spv::Options::default();
    naga::back::spv::write_vec(&module, &info, &options, None)
        .map_err(|error| format!("spir-v: {error}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every template instantiation must parse, validate and translate.
    #[test]
    fn every_kernel_validates_with_naga() {
        let sources = all_kernel_sources();
        assert!(sources.len() > 500, "only {} kernels", sources.len());
        let failures: Vec<String> = sources
            .iter()
            .filter_map(|(name, source)| naga_check(source).err().map(|e| format!("{name}: {e}")))
            .collect();
        assert!(
            failures.is_empty(),
            "{} kernels failed:\n{}",
            failures.len(),
            failures[..failures.len().min(5)].join("\n")
        );
    }
}
