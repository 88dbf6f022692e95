//! The catalogue of every kernel the backend can build: each family's key type lists its
//! instantiations (`Kernel::catalogue`: every dtype, op and variant), and this file, which
//! sits above the families, collects them with their WGSL. A unit test validates all of them
//! with naga (parse, validate, SPIR-V), and `kernel_catalog/translation.rs` translates them
//! to HLSL (DX12) and MSL (Metal), so a template change that breaks one instantiation on any
//! backend fails without a GPU.

use super::attention::kernel::AttentionKernel;
use super::conv::kernel::ConvKernel;
use super::copy::kernel::CopyKernel;
use super::custom::kernel::CustomKernel;
use super::elementwise::kernel::ElementwiseKernel;
use super::fill::kernel::FillKernel;
use super::fusion::kernel::FusedKernel;
use super::index::kernel::IndexKernel;
use super::matmul::kernel::MatmulKernel;
use super::norm::kernel::NormKernel;
use super::optimizer::kernel::OptimizerKernel;
use super::pool::kernel::PoolKernel;
use super::prefetch::kernel::PrefetchKernel;
use super::quantized::kernel::QuantizedKernel;
use super::random::kernel::RandomKernel;
use super::reduce::kernel::ReduceKernel;
use super::runtime::kernel::Kernel;
use super::scan::kernel::ScanKernel;
use super::sort::kernel::SortKernel;

/// Every kernel the GPU backend can build, as (name, WGSL source): each family's catalogue
/// entries for every dtype, op and variant (users' custom kernels excepted; fused programs by
/// samples). The naga validation test checks all of them, and `anygrad kernels dump` writes
/// them out for review.
pub fn all_kernel_sources() -> Vec<(String, String)> {
    let mut sources = Vec::new();
    family::<FillKernel>(&mut sources);
    family::<PrefetchKernel>(&mut sources);
    family::<RandomKernel>(&mut sources);
    family::<ElementwiseKernel>(&mut sources);
    family::<ReduceKernel>(&mut sources);
    family::<MatmulKernel>(&mut sources);
    family::<QuantizedKernel>(&mut sources);
    family::<ConvKernel>(&mut sources);
    family::<PoolKernel>(&mut sources);
    family::<NormKernel>(&mut sources);
    family::<CopyKernel>(&mut sources);
    family::<OptimizerKernel>(&mut sources);
    family::<IndexKernel>(&mut sources);
    family::<SortKernel>(&mut sources);
    family::<ScanKernel>(&mut sources);
    family::<AttentionKernel>(&mut sources);
    family::<FusedKernel>(&mut sources);
    family::<CustomKernel>(&mut sources);
    sources
}

/// Append the (name, WGSL) of every instantiation of family `K`.
fn family<K: Kernel>(sources: &mut Vec<(String, String)>) {
    sources.extend(K::catalogue().iter().map(|key| (key.name(), key.source())));
}

#[cfg(test)]
mod translation;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::runtime::shader_check::naga_check;

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
