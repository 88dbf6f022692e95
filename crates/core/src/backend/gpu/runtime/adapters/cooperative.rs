//! Cooperative matrices (tensor cores) as a fact of the opened device: whether the adapter
//! reports the one configuration the kernels are written for (16x16x16, f16 inputs, f32
//! accumulators), whether the hardware kernels can run (that configuration, `SHADER_F16`, and
//! subgroups of exactly [`SUBGROUP_SIZE`] invocations), and whether subgroup barriers exist.
//! The families that use them (matmul, convolution, attention) keep their own switches and
//! counters (`GpuContext::family_state`).

/// Invocations per subgroup the cooperative-matrix kernels are written for (four subgroups
/// per workgroup at least).
pub(crate) const SUBGROUP_SIZE: u32 = 32;

/// What one opened device offers for cooperative-matrix kernels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CooperativeMatrices {
    /// The device was opened with `EXPERIMENTAL_COOPERATIVE_MATRIX` and the adapter reported
    /// 16x16x16 with f16 inputs and f32 accumulators.
    pub(crate) f16_f32_16x16: bool,
    /// The hardware kernels can run here: the configuration above, `SHADER_F16`, and
    /// `SUBGROUP` with subgroups of exactly 32 invocations (each kernel also needs its
    /// workgroup memory).
    pub(crate) available: bool,
    /// The device has `SUBGROUP_BARRIER`: the hardware attention kernels order their
    /// subgroups' own workgroup memory with `subgroupBarrier`.
    pub(crate) subgroup_barrier: bool,
}

impl CooperativeMatrices {
    /// Whether `adapter` reports a 16x16x16 f16 x f16 -> f32 configuration (and the feature).
    fn adapter_has_f16_f32(adapter: &wgpu::Adapter) -> bool {
        adapter
            .features()
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
            && adapter.cooperative_matrix_properties().iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == wgpu::CooperativeScalarType::F32
            })
    }

    /// The support of a device opened with `features` and `limits` on `adapter`.
    pub(crate) fn detect(
        adapter: &wgpu::Adapter,
        features: wgpu::Features,
        limits: &wgpu::Limits,
    ) -> CooperativeMatrices {
        let f16_f32_16x16 = features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
            && Self::adapter_has_f16_f32(adapter);
        let info = adapter.get_info();
        let available = f16_f32_16x16
            && features.contains(wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP)
            && info.subgroup_min_size == SUBGROUP_SIZE
            && info.subgroup_max_size == SUBGROUP_SIZE
            && limits.max_compute_invocations_per_workgroup >= 4 * SUBGROUP_SIZE
            && limits.max_compute_workgroup_size_x >= 4 * SUBGROUP_SIZE;
        CooperativeMatrices {
            f16_f32_16x16,
            available,
            subgroup_barrier: features.contains(wgpu::Features::SUBGROUP_BARRIER),
        }
    }
}
