//! Every catalogued kernel translated to HLSL (what wgpu's DX12 backend compiles) and MSL (what
//! its Metal backend compiles) with naga, on the CPU, so that a kernel that would fail to build
//! on Windows or macOS fails here instead, without such a GPU.
//!
//! The options are those wgpu 30 gives naga (wgpu-hal's `dx12/device.rs` and
//! `metal/device.rs`), at the lowest shader language versions at which wgpu exposes the
//! features the kernels use: HLSL shader model 6.2 (below it wgpu's DX12 backend has no
//! `SHADER_F16`) and MSL 2.4 (macOS 12, iOS 15). On Metal the buffers get slots as wgpu's
//! pipeline layout gives them; on DX12 naga's stand-in registers (register = binding, space =
//! group) replace the root signature's map, which does not change what translates.
//!
//! A kernel family that one backend cannot express is listed in [`UNSUPPORTED`] with the
//! reason and why the device never picks it there; every other kernel must translate.

use super::all_kernel_sources;

/// The HLSL shader model: the lowest that wgpu's DX12 backend exposes `SHADER_F16` at
/// (`dx12/adapter.rs`: `shader_model >= V6_2 && Native16BitShaderOpsSupported`). Devices with
/// a higher model get the same code with more instructions allowed.
const HLSL_SHADER_MODEL: naga::back::hlsl::ShaderModel = naga::back::hlsl::ShaderModel::V6_2;

/// The Metal Shading Language version: 2.4, what wgpu picks on macOS 12 and iOS 15
/// (`metal/adapter.rs`), at or above the 2.3 that wgpu asks of cooperative matrices
/// (`simdgroup_matrix`). naga writes the f32 atomics of the attention fold at any version;
/// Metal compiles them from MSL 3.0, and wgpu offers `SHADER_FLOAT32_ATOMIC` only there, which
/// `attention_coop_backward::fold_plan` requires.
const MSL_VERSION: (u8, u8) = (2, 4);

/// A shading language naga translates the kernels to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// HLSL for Direct3D 12.
    Hlsl,
    /// The Metal Shading Language.
    Msl,
}

/// Kernel families that one target cannot express.
struct Unsupported {
    /// Where naga cannot write them.
    target: Target,
    /// The families: the kernel names' prefix (the key's variant or name).
    families: &'static [&'static str],
    /// Only the kernels whose name contains this.
    variant: &'static str,
    /// Text naga's error must contain: the missing feature, so that another failure in the
    /// same kernels is still reported.
    error: &'static str,
    /// What is missing, and why the device never picks these kernels on that target.
    reason: &'static str,
}

/// Kernels one target cannot express (see each reason). Everything else translates.
const UNSUPPORTED: &[Unsupported] = &[Unsupported {
    target: Target::Hlsl,
    families: &[
        "MatmulCoop",
        "ConvCoop",
        "ConvNhwc",
        "ConvPatch",
        "ConvNhwcWeight",
        "AttentionCoop",
        "AttentionCoopBackward",
    ],
    // The emulated variants compute the same tiles without cooperative matrices and translate.
    variant: "emulated: false",
    error: "CooperativeMatrix",
    // naga 30's HLSL writer has no cooperative-matrix types, and wgpu 30's DX12 adapter never
    // reports `EXPERIMENTAL_COOPERATIVE_MATRIX` (wgpu-hal `dx12/adapter.rs`). `GpuContext::create`
    // requests it only where the adapter has it, and `CooperativeMatrices::detect` sets
    // `available` (which every hardware variant's launcher requires: `MatmulCoopState::order`
    // and `allows`, `conv::coop::launch`, `nhwc_usable`, `channels_last_conv`,
    // `AttentionCoopState::usable`) only on a
    // device opened with it; so on DX12 these kernels are never built.
    reason: "no cooperative matrices in naga's HLSL writer; wgpu's DX12 adapter never offers them",
}];

/// The family of a kernel: its name up to the first space, brace or parenthesis.
fn family(name: &str) -> &str {
    let end = name.find([' ', '{', '(']).unwrap_or(name.len());
    &name[..end]
}

/// The allowlist entry that covers `name` on `target`, if any.
fn excused(target: Target, name: &str) -> Option<&'static Unsupported> {
    UNSUPPORTED.iter().find(|entry| {
        entry.target == target
            && entry.families.contains(&family(name))
            && name.contains(entry.variant)
    })
}

/// Parse and validate `source` (every capability on: the device decides which kernels run).
fn parse(source: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|error| format!("parse: {}", error.emit_to_string(source)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|error| format!("validate: {}", error.emit_to_string(source)))?;
    Ok((module, info))
}

/// Translate a validated module to HLSL with wgpu's DX12 options.
fn translate_hlsl(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Result<(), String> {
    let options = naga::back::hlsl::Options {
        shader_model: HLSL_SHADER_MODEL,
        fake_missing_bindings: true,
        zero_initialize_workgroup_memory: true,
        restrict_indexing: true,
        force_loop_bounding: true,
        ..naga::back::hlsl::Options::default()
    };
    let pipeline = naga::back::hlsl::PipelineOptions::default();
    let mut text = String::new();
    let reflection = naga::back::hlsl::Writer::new(&mut text, &options, &pipeline)
        .write(module, info, None)
        .map_err(|error| format!("hlsl: {error}"))?;
    entry_points_written("hlsl", module, &reflection.entry_point_names)
}

/// The Metal buffer slots of `module`'s bindings, as wgpu's pipeline layout assigns them
/// (`metal/device.rs`: one slot per buffer in binding order, writable storage `mutable`, then
/// the buffer of runtime array sizes), for every entry point.
fn msl_resources(module: &naga::Module) -> naga::back::msl::EntryPointResourceMap {
    let mut bindings: Vec<(naga::ResourceBinding, bool)> = module
        .global_variables
        .iter()
        .filter_map(|(_, variable)| {
            let mutable = matches!(
                variable.space,
                naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE)
            );
            variable.binding.map(|binding| (binding, mutable))
        })
        .collect();
    bindings.sort_by_key(|(binding, _)| (binding.group, binding.binding));
    let slot = |index: usize| naga::back::msl::Slot::try_from(index).expect("under 256 buffers");
    let resources = naga::back::msl::EntryPointResources {
        resources: bindings
            .iter()
            .enumerate()
            .map(|(index, (binding, mutable))| {
                let target = naga::back::msl::BindTarget {
                    buffer: Some(slot(index)),
                    mutable: *mutable,
                    ..Default::default()
                };
                (*binding, target)
            })
            .collect(),
        immediates_buffer: None,
        sizes_buffer: Some(slot(bindings.len())),
    };
    module
        .entry_points
        .iter()
        .map(|entry| (entry.name.clone(), resources.clone()))
        .collect()
}

/// Translate a validated module to MSL with wgpu's Metal options, bounds checks restricted as
/// wgpu compiles kernels that keep its runtime checks (`Kernel::is_trusted` ones turn them
/// off, which only removes code).
fn translate_msl(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Result<(), String> {
    let restrict = naga::proc::BoundsCheckPolicy::Restrict;
    let options = naga::back::msl::Options {
        lang_version: MSL_VERSION,
        per_entry_point_map: msl_resources(module),
        fake_missing_bindings: false,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: restrict,
            buffer: restrict,
            image_load: restrict,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: true,
        force_loop_bounding: true,
        emit_int_div_checks: true,
        ..naga::back::msl::Options::default()
    };
    let pipeline = naga::back::msl::PipelineOptions::default();
    let (_, translation) = naga::back::msl::write_string(module, info, &options, &pipeline)
        .map_err(|error| format!("msl: {error}"))?;
    entry_points_written("msl", module, &translation.entry_point_names)
}

/// Whether the writer wrote every entry point: both writers skip one they cannot write (a
/// binding without a target) and say so only in this list, one result per entry point.
fn entry_points_written<E: std::fmt::Display>(
    language: &str,
    module: &naga::Module,
    names: &[Result<String, E>],
) -> Result<(), String> {
    if names.len() != module.entry_points.len() {
        return Err(format!(
            "{language}: {} of {} entry points written",
            names.len(),
            module.entry_points.len()
        ));
    }
    for (entry, name) in module.entry_points.iter().zip(names) {
        if let Err(error) = name {
            return Err(format!("{language}: entry point {}: {error}", entry.name));
        }
    }
    Ok(())
}

/// Translate `source` to `target`.
fn translate(target: Target, source: &str) -> Result<(), String> {
    let (module, info) = parse(source)?;
    match target {
        Target::Hlsl => translate_hlsl(&module, &info),
        Target::Msl => translate_msl(&module, &info),
    }
}

/// Every kernel translates to HLSL and MSL, except the allowlisted families, which must in
/// turn fail (an entry that no longer applies is reported, so the list stays honest).
#[test]
fn every_kernel_translates_to_hlsl_and_msl() {
    let sources = all_kernel_sources();
    assert!(sources.len() > 500, "only {} kernels", sources.len());
    // Per target and family: the kernels with a problem, and the first one's message.
    let mut problems: std::collections::BTreeMap<(String, &str), (usize, String)> =
        std::collections::BTreeMap::new();
    for target in [Target::Hlsl, Target::Msl] {
        let mut translated = 0;
        let mut skipped = 0;
        for (name, source) in &sources {
            let problem = match (translate(target, source), excused(target, name)) {
                (Ok(()), None) => {
                    translated += 1;
                    continue;
                }
                (Err(error), Some(entry)) if error.contains(entry.error) => {
                    skipped += 1;
                    continue;
                }
                (Err(error), _) => format!("{name}: {error}"),
                (Ok(()), Some(entry)) => format!(
                    "{name} translates, yet is listed as unsupported ({})",
                    entry.reason
                ),
            };
            problems
                .entry((format!("{target:?}"), family(name)))
                .or_insert((0, problem))
                .0 += 1;
        }
        println!(
            "{target:?}: {translated} of {} kernels translate, {skipped} listed as unsupported",
            sources.len()
        );
    }
    let report: Vec<String> = problems
        .iter()
        .map(|((target, family), (count, first))| {
            format!("{target} {family}: {count} kernel(s); first: {first}")
        })
        .collect();
    assert!(
        report.is_empty(),
        "translation problems in {} families:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// The family of a kernel name is its key's variant or name.
#[test]
fn family_is_the_name_up_to_its_fields() {
    assert_eq!(family("MatmulCoop { variant: Staged }"), "MatmulCoop");
    assert_eq!(family("ConvCoop(ConvCoopKey { .. })"), "ConvCoop");
    assert_eq!(family("Fill"), "Fill");
}
