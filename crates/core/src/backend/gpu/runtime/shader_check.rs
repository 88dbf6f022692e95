//! Shader checks the kernel tests share: [`naga_check`] (parse, validate, SPIR-V, the
//! catalogue's test) and [`translate`] (also SPIR-V 1.6 as wgpu's Vulkan backend writes it
//! with cooperative matrices, trusted and checked bounds). Run on the CPU, so kernels are
//! checked without a GPU. Tests only (naga is a dev-dependency).

/// Parse, validate and translate `source` to SPIR-V with naga (what wgpu runs for Vulkan, and
/// the SPIR-V writer has failure modes of its own); the error names the stage with naga's
/// message. Runs on the CPU, so kernels are checked without a GPU.
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

/// Parse, validate and write SPIR-V: with naga's defaults, and as wgpu's Vulkan backend
/// does on an H200 (SPIR-V 1.6, its capability list, trusted and checked bounds).
pub(crate) fn translate(name: &str, source: &str) {
    use naga::back::spv::{self, Capability};
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|error| panic!("{name}: {}", error.emit_to_string(source)));
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .unwrap_or_else(|error| panic!("{name}: {}", error.emit_to_string(source)));
    spv::write_vec(&module, &info, &spv::Options::default(), None)
        .unwrap_or_else(|error| panic!("{name}: default SPIR-V: {error}"));
    let capabilities = [
        Capability::Shader,
        Capability::Matrix,
        Capability::Float16,
        Capability::GroupNonUniform,
        Capability::GroupNonUniformVote,
        Capability::GroupNonUniformArithmetic,
        Capability::GroupNonUniformBallot,
        Capability::GroupNonUniformShuffle,
        Capability::GroupNonUniformShuffleRelative,
        Capability::GroupNonUniformQuad,
        Capability::CooperativeMatrixKHR,
        Capability::VulkanMemoryModel,
        Capability::AtomicFloat32AddEXT,
    ];
    for policy in [BoundsCheckPolicy::Unchecked, BoundsCheckPolicy::Restrict] {
        let options = spv::Options {
            lang_version: (1, 6),
            capabilities: Some(capabilities.iter().copied().collect()),
            bounds_check_policies: BoundsCheckPolicies {
                index: policy,
                buffer: policy,
                image_load: policy,
                binding_array: policy,
            },
            ..spv::Options::default()
        };
        spv::write_vec(&module, &info, &options, None)
            .unwrap_or_else(|error| panic!("{name}: SPIR-V 1.6 ({policy:?}): {error}"));
    }
}
