//! The catalogue of every kernel the backend can build: each family's `KernelKey`s (listed by
//! the family's own `catalogue` function) for every dtype, op and variant, with their WGSL. A unit test validates all of them
//! with naga (parse, validate, SPIR-V), and `kernel_catalog/translation.rs` translates them
//! to HLSL (DX12) and MSL (Metal), so a template change that breaks one instantiation on any
//! backend fails without a GPU.

use crate::backend::gpu::runtime::wgsl::{GPU_DTYPES, INDEX_DTYPES};

/// Every kernel the GPU backend can build, as (name, WGSL source): each family's catalogue
/// entries for every dtype, op and variant (users' custom kernels excepted; fused programs by
/// samples). The naga validation test checks all of them, and `anygrad kernels dump` writes
/// them out for review.
pub fn all_kernel_sources() -> Vec<(String, String)> {
    let mut keys = Vec::new();
    super::fill::catalogue(&mut keys);
    super::prefetch::catalogue(&mut keys);
    for dtype in GPU_DTYPES {
        super::elementwise::catalogue(&mut keys, dtype, &GPU_DTYPES);
        super::random::catalogue(&mut keys, dtype);
        crate::backend::gpu::matmul::large::catalogue(&mut keys, dtype);
        crate::backend::gpu::conv::direct::catalogue(&mut keys, dtype);
        crate::backend::gpu::conv::backward::catalogue(&mut keys, dtype);
        crate::backend::gpu::conv::winograd::catalogue(&mut keys, dtype);
        super::reduce::catalogue(&mut keys, dtype);
        super::pool::catalogue(&mut keys, dtype);
        crate::backend::gpu::norm::rows::catalogue(&mut keys, dtype);
        crate::backend::gpu::copy::rows::catalogue(&mut keys, dtype);
        crate::backend::gpu::copy::transpose::catalogue(&mut keys, dtype);
        crate::backend::gpu::norm::batch_norm_input::catalogue(&mut keys, dtype);
        crate::backend::gpu::optimizer::catalogue(&mut keys, dtype);
        crate::backend::gpu::norm::batch_norm::catalogue(&mut keys, dtype);
        super::matmul::catalogue(&mut keys, dtype);
        crate::backend::gpu::matmul::dot::catalogue(&mut keys, dtype);
        crate::backend::gpu::index::catalogue(&mut keys, dtype, &INDEX_DTYPES);
        crate::backend::gpu::index::scatter_add_ordered::catalogue(&mut keys, dtype, &INDEX_DTYPES);
        super::attention::catalogue(&mut keys, dtype);
    }
    super::sort::catalogue(&mut keys);
    crate::backend::gpu::index::add::catalogue(&mut keys);
    crate::backend::gpu::matmul::coop::catalogue(&mut keys);
    crate::backend::gpu::attention::coop::catalogue(&mut keys);
    crate::backend::gpu::attention::coop::backward::catalogue(&mut keys);
    keys.extend(
        crate::backend::gpu::conv::coop::ConvCoopKey::all()
            .into_iter()
            .map(super::kernels::KernelKey::ConvCoop),
    );
    keys.extend(
        crate::backend::gpu::conv::nhwc::ConvNhwcKey::all()
            .into_iter()
            .map(super::kernels::KernelKey::ConvNhwc),
    );
    keys.extend(
        crate::backend::gpu::conv::nhwc::ConvPatchKey::all()
            .into_iter()
            .map(super::kernels::KernelKey::ConvPatch),
    );
    for channels in crate::backend::gpu::conv::nhwc::SPACE_TO_DEPTH_CHANNELS {
        keys.push(super::kernels::KernelKey::SpaceToDepth { channels });
    }
    keys.extend(
        crate::backend::gpu::conv::nhwc::ConvNhwcWeightKey::all()
            .into_iter()
            .map(super::kernels::KernelKey::ConvNhwcWeight),
    );
    super::fusion::catalogue(&mut keys);
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
mod translation;

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
