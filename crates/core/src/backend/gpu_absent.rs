//! The GPU backend's stand-in when anygrad-core is built without its `gpu` cargo feature (no
//! wgpu, no pollster). `backend/mod.rs` mounts this file as `backend::gpu`, so every path into
//! the backend stays the same. `GpuDevice` and `GpuStorage` are uninhabited: each holds a
//! private `Never` (an enum with no variant; `CoopVariant` is one itself), so no GPU value can
//! exist, every `match` over `Device` and `Storage` keeps its GPU arm without a `#[cfg]`, and
//! the methods on these types are `match self.never {}`, code the compiler knows never runs.
//! (The field is private so that the rest of the crate does not see the types as empty and
//! warn that whatever follows a GPU call is unreachable.) Opening a GPU is `Error::NoAdapter`
//! saying that this build has no GPU backend; the adapter list is empty.

use crate::backend::contract::{
    Affine, Attention, BackendStorage, BatchNormalization, Convolution, Copying, Creation,
    CustomKernels, Elementwise, Epilogue, Indexing, LinearAlgebra, Pooling, QuantizedMatrices,
    RandomNumbers, Reduction, RowNormalization, Scan, Sorting, Update,
};
use crate::backend::cpu::CpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Window};
use crate::layout::{Layout, MemoryFormat};
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::quantization::QuantFormat;
use crate::random::Distribution;

pub use crate::backend::gpu_facts::{
    is_software, AdapterInfo, AutotuneMode, ExecutionMode, FusionStats, KernelDispatches,
    MemoryStats, OpTiming,
};

/// The error every attempt to open a GPU returns in this build.
fn built_without_gpu() -> Error {
    Error::NoAdapter {
        hint: "anygrad-core was built without the `gpu` feature (no GPU backend); rebuild \
               with default features to use a GPU"
            .into(),
    }
}

/// A type with no values: a field of this type makes its holder impossible to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Never {}

/// A handle to one opened GPU; none can exist in this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDevice {
    never: Never,
}

/// Tensor data in GPU memory; none can exist in this build.
#[derive(Debug)]
pub struct GpuStorage {
    never: Never,
}

/// A readback started and not waited for; none can exist in this build.
#[derive(Debug)]
pub struct GpuPendingRead {
    never: Never,
}

impl GpuPendingRead {
    /// Needs a GPU storage, which cannot exist in this build.
    pub(crate) fn finish(self) -> Result<CpuStorage> {
        match self.never {}
    }
}

/// Reused host staging for one device's transfers; none can exist in this build.
#[derive(Debug)]
pub(crate) struct GpuStaging {
    never: Never,
}

impl GpuStaging {
    /// Needs a GPU device, which cannot exist in this build.
    pub(crate) fn new(device: &GpuDevice, _len: usize) -> Result<GpuStaging> {
        match device.never {}
    }

    /// Unreachable: no staging exists.
    pub(crate) fn start_download(&mut self, _source: &GpuStorage, _offset: usize) -> Result<()> {
        match self.never {}
    }

    /// Unreachable: no staging exists.
    pub(crate) fn finish_download(&mut self, _out: &mut [f32]) -> Result<()> {
        match self.never {}
    }

    /// Unreachable: no staging exists.
    pub(crate) fn upload(&mut self, _parts: &[&[f32]]) -> Result<GpuStorage> {
        match self.never {}
    }
}

/// A cooperative-matrix (tensor-core) matmul kernel; none exists in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoopVariant {}

impl GpuDevice {
    /// Needs a GPU, which cannot exist in this build.
    #[cfg(test)]
    pub(crate) fn cached_parameter_hits(&self) -> u64 {
        match self.never {}
    }

    /// Always `Error::NoAdapter`: this build has no GPU backend.
    pub fn open(_ordinal: usize) -> Result<GpuDevice> {
        Err(built_without_gpu())
    }

    /// Always `Error::NoAdapter`: this build has no GPU backend.
    pub fn open_new_instance(_ordinal: usize) -> Result<GpuDevice> {
        Err(built_without_gpu())
    }

    /// The adapter's position in `adapter_infos()` (no device exists to ask).
    pub fn ordinal(&self) -> usize {
        match self.never {}
    }

    /// The adapter's name and graphics API (no device exists to ask).
    pub fn name(&self) -> String {
        match self.never {}
    }

    /// Wait for the GPU (no device exists to wait for).
    pub fn synchronize(&self) -> Result<()> {
        match self.never {}
    }

    /// Start GPU timing (no device exists to time).
    pub fn begin_timing(&self) -> Result<bool> {
        match self.never {}
    }

    /// Stop GPU timing (no device exists to time).
    pub fn end_timing(&self) -> Result<Option<OpTiming>> {
        match self.never {}
    }

    /// Whether f16 tensors work (no device exists to ask).
    pub fn supports_f16(&self) -> bool {
        match self.never {}
    }

    /// What the adapter reports (no device exists to ask).
    pub fn info(&self) -> AdapterInfo {
        match self.never {}
    }

    /// The autotuner's mode (no device exists to ask).
    pub fn autotune_mode(&self) -> AutotuneMode {
        match self.never {}
    }

    /// Set the autotuner's mode (no device exists).
    pub fn set_autotune_mode(&self, _mode: AutotuneMode) {
        match self.never {}
    }

    /// Kernel candidates timed so far (no device exists to ask).
    pub fn autotuned_candidates(&self) -> u64 {
        match self.never {}
    }

    /// Bounds checks on every kernel (no device exists to compile them for).
    pub fn set_bounds_checks(&self, _on: bool) {
        match self.never {}
    }

    /// Whether every kernel has bounds checks (no device exists to ask).
    pub fn bounds_checks(&self) -> bool {
        match self.never {}
    }

    /// Pipelines compiled so far (no device exists to ask).
    pub fn pipelines_compiled(&self) -> u64 {
        match self.never {}
    }

    /// The current execution mode (no device exists to ask).
    pub fn execution_mode(&self) -> ExecutionMode {
        match self.never {}
    }

    /// The tensor-core matmul kernel in use (no device exists to ask).
    pub fn cooperative_matmul(&self) -> Option<CoopVariant> {
        match self.never {}
    }

    /// Why the tensor-core matmul was turned off (no device exists to ask).
    pub fn cooperative_matmul_failure(&self) -> Option<String> {
        match self.never {}
    }

    /// Whether the adapter offers f16 x f16 -> f32 cooperative matrices (no device exists).
    pub fn has_cooperative_f16_f32(&self) -> bool {
        match self.never {}
    }

    /// Whether attention of these sizes runs on tensor cores (no device exists to ask).
    pub fn cooperative_attention_covers(&self, _head_dim: usize, _value_dim: usize) -> bool {
        match self.never {}
    }

    /// Whether the fused attention runs on tensor cores (no device exists to ask).
    pub fn cooperative_attention(&self) -> bool {
        match self.never {}
    }

    /// Tensor-core attention kernels recorded so far (no device exists to ask).
    pub fn cooperative_attention_dispatches(&self) -> u64 {
        match self.never {}
    }

    /// Attention backward calls whose key-value kernel summed dQ (no device exists to ask).
    pub fn cooperative_attention_folds(&self) -> u64 {
        match self.never {}
    }

    /// Tensor-core matmul dispatches so far (no device exists to ask).
    pub fn cooperative_matmul_dispatches(&self) -> u64 {
        match self.never {}
    }

    /// Whether the tensor-core convolutions are in use (no device exists to ask).
    pub fn cooperative_conv(&self) -> bool {
        match self.never {}
    }

    /// Whether the channels-last tensor-core convolutions may run (no device exists to ask).
    pub fn channels_last_conv(&self) -> bool {
        match self.never {}
    }

    /// Make the tensor-core convolutions the default or not (no device exists).
    pub fn set_cooperative_conv(&self, _on: bool) {
        match self.never {}
    }

    /// Why the tensor-core convolutions were turned off (no device exists to ask).
    pub fn cooperative_conv_failure(&self) -> Option<String> {
        match self.never {}
    }

    /// Tensor-core convolution dispatches so far (no device exists to ask).
    pub fn cooperative_conv_dispatches(&self) -> u64 {
        match self.never {}
    }
}

impl GpuStorage {
    /// The mutation log's name of this storage (no storage exists to ask).
    pub(crate) fn write_token(&self) -> Option<u64> {
        match self.never {}
    }

    /// The element type (no storage exists to ask).
    pub fn dtype(&self) -> DType {
        match self.never {}
    }

    /// Number of stored elements (no storage exists to ask).
    pub fn len(&self) -> usize {
        match self.never {}
    }

    /// The device holding the data (no storage exists to ask).
    pub fn device(&self) -> &GpuDevice {
        match self.never {}
    }

    /// Upload CPU data (no device exists to upload to).
    pub fn from_cpu(device: &GpuDevice, _cpu: &CpuStorage) -> Result<GpuStorage> {
        match device.never {}
    }

    /// Start reading the data back (no storage exists to read).
    pub(crate) fn start_read(&self) -> Result<GpuPendingRead> {
        match self.never {}
    }

    /// Read the data back (no storage exists to read).
    pub fn to_cpu(&self) -> Result<CpuStorage> {
        match self.never {}
    }

    /// Copy the data to a device (no storage exists to copy).
    pub fn to_gpu(&self, _device: &GpuDevice) -> Result<GpuStorage> {
        match self.never {}
    }
}

/// The contract is kept trivially: every method receives a device or a storage that cannot
/// exist.
impl BackendStorage for GpuStorage {
    type Device = GpuDevice;
    const NAME: &'static str = "gpu";

    fn dtype(&self) -> DType {
        match self.never {}
    }
}

impl Creation for GpuStorage {
    fn full(device: &GpuDevice, _numel: usize, _dtype: DType, _value: f64) -> Result<Self> {
        match device.never {}
    }

    fn arange(
        device: &GpuDevice,
        _start: f64,
        _step: f64,
        _numel: usize,
        _dtype: DType,
    ) -> Result<Self> {
        match device.never {}
    }
}

impl RandomNumbers for GpuStorage {
    fn random(
        device: &GpuDevice,
        _numel: usize,
        _dtype: DType,
        _distribution: Distribution,
        _seed: u64,
        _offset: u64,
    ) -> Result<Self> {
        match device.never {}
    }
}

impl Copying for GpuStorage {
    fn copy_strided(&self, _layout: &Layout) -> Result<Self> {
        match self.never {}
    }

    fn copy_into(&self, _layout: &Layout, _dst: &mut Self, _dst_layout: &Layout) -> Result<()> {
        match self.never {}
    }

    fn cast(&self, _layout: &Layout, _dtype: DType) -> Result<Self> {
        match self.never {}
    }
}

impl Elementwise for GpuStorage {
    fn unary(&self, _layout: &Layout, _op: UnaryOp) -> Result<Self> {
        match self.never {}
    }

    fn binary(
        &self,
        _layout: &Layout,
        _rhs: &Self,
        _rhs_layout: &Layout,
        _op: BinaryOp,
    ) -> Result<Self> {
        match self.never {}
    }

    fn binary_scalar(
        &self,
        _layout: &Layout,
        _op: BinaryOp,
        _scalar: f64,
        _scalar_on_left: bool,
    ) -> Result<Self> {
        match self.never {}
    }

    fn where_select(
        &self,
        _layout: &Layout,
        _on_true: &Self,
        _on_true_layout: &Layout,
        _on_false: &Self,
        _on_false_layout: &Layout,
    ) -> Result<Self> {
        match self.never {}
    }
}

impl Reduction for GpuStorage {
    fn reduce(&self, _layout: &Layout, _op: ReduceOp, _dims: &[usize]) -> Result<Self> {
        match self.never {}
    }
}

impl LinearAlgebra for GpuStorage {
    fn matmul(&self, _layout: &Layout, _rhs: &Self, _rhs_layout: &Layout) -> Result<Self> {
        match self.never {}
    }
}

impl QuantizedMatrices for GpuStorage {
    fn quantized_matmul(
        &self,
        _layout: &Layout,
        _weights: &Self,
        _format: QuantFormat,
        _shape: [usize; 2],
    ) -> Result<Self> {
        match self.never {}
    }

    fn dequantize_rows(
        &self,
        _format: QuantFormat,
        _shape: [usize; 2],
        _rows: Option<(&Self, &Layout)>,
    ) -> Result<Self> {
        match self.never {}
    }
}

impl Convolution for GpuStorage {
    fn conv2d(
        &self,
        _layout: &Layout,
        _weight: &Self,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
    ) -> Result<Self> {
        match self.never {}
    }

    fn conv2d_epilogue(
        &self,
        _layout: &Layout,
        _weight: &Self,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
        _epilogue: &Epilogue<'_, Self>,
        _format: MemoryFormat,
    ) -> Result<Self> {
        match self.never {}
    }

    fn conv2d_epilogue_format(
        &self,
        _layout: &Layout,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
    ) -> MemoryFormat {
        match self.never {}
    }

    fn conv2d_backward_input(
        &self,
        _layout: &Layout,
        _weight: &Self,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
        _input_shape: &[usize],
    ) -> Result<Self> {
        match self.never {}
    }

    fn conv2d_backward_weight(
        &self,
        _layout: &Layout,
        _grad: &Self,
        _grad_layout: &Layout,
        _params: &Conv2dParams,
        _weight_shape: &[usize],
    ) -> Result<Self> {
        match self.never {}
    }

    fn depthwise_conv2d(
        &self,
        _layout: &Layout,
        _weight: &Self,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
    ) -> Result<Self> {
        match self.never {}
    }

    fn depthwise_conv2d_backward_input(
        &self,
        _layout: &Layout,
        _weight: &Self,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
        _input_shape: &[usize],
    ) -> Result<Self> {
        match self.never {}
    }

    fn depthwise_conv2d_backward_weight(
        &self,
        _layout: &Layout,
        _grad: &Self,
        _grad_layout: &Layout,
        _params: &Conv2dParams,
        _weight_shape: &[usize],
    ) -> Result<Self> {
        match self.never {}
    }
}

impl Pooling for GpuStorage {
    fn max_pool2d(
        &self,
        _layout: &Layout,
        _window: &Window,
        _format: MemoryFormat,
    ) -> Result<Self> {
        match self.never {}
    }

    fn max_pool2d_backward(
        &self,
        _layout: &Layout,
        _output: &Self,
        _output_layout: &Layout,
        _grad: &Self,
        _grad_layout: &Layout,
        _window: &Window,
    ) -> Result<Self> {
        match self.never {}
    }
}

impl RowNormalization for GpuStorage {
    fn softmax_last(&self, _layout: &Layout, _safe: bool) -> Result<Self> {
        match self.never {}
    }

    fn log_softmax_last(&self, _layout: &Layout) -> Result<Self> {
        match self.never {}
    }

    fn softmax_last_backward(
        &self,
        _layout: &Layout,
        _grad: (&Self, &Layout),
        _log: bool,
    ) -> Result<Self> {
        match self.never {}
    }

    fn layer_norm_last(
        &self,
        _layout: &Layout,
        _affine: Affine<'_, Self>,
        _eps: f64,
    ) -> Result<Self> {
        match self.never {}
    }

    fn rms_norm_last(
        &self,
        _layout: &Layout,
        _weight: Option<(&Self, &Layout)>,
        _eps: f64,
    ) -> Result<Self> {
        match self.never {}
    }

    fn rotary_last(
        &self,
        _layout: &Layout,
        _cos: (&Self, &Layout),
        _sin: (&Self, &Layout),
    ) -> Result<Self> {
        match self.never {}
    }
}

impl BatchNormalization for GpuStorage {
    fn batch_norm_stats(&self, _layout: &Layout) -> Result<Self> {
        match self.never {}
    }

    fn batch_norm_backward_sums(
        &self,
        _layout: &Layout,
        _input: &Self,
        _input_layout: &Layout,
        _mean: &Self,
        _mean_layout: &Layout,
    ) -> Result<Self> {
        match self.never {}
    }

    fn batch_norm_backward_input(
        &self,
        _layout: &Layout,
        _input: &Self,
        _input_layout: &Layout,
        _coefficients: &Self,
        _coefficients_layout: &Layout,
    ) -> Result<Self> {
        match self.never {}
    }
}

impl Indexing for GpuStorage {
    fn index_select(
        &self,
        _layout: &Layout,
        _indices: &Self,
        _indices_layout: &Layout,
        _dim: usize,
    ) -> Result<Self> {
        match self.never {}
    }

    fn index_select_wrapping(
        &self,
        _layout: &Layout,
        _indices: &Self,
        _indices_layout: &Layout,
        _dim: usize,
    ) -> Result<Self> {
        match self.never {}
    }

    fn class_pick(
        &self,
        _layout: &Layout,
        _target: (&Self, &Layout),
        _weight: Option<(&Self, &Layout)>,
        _ignore: Option<i64>,
    ) -> Result<Self> {
        match self.never {}
    }

    fn class_pick_backward(
        &self,
        _layout: &Layout,
        _target: (&Self, &Layout),
        _weight: Option<(&Self, &Layout)>,
        _ignore: Option<i64>,
        _classes: usize,
    ) -> Result<Self> {
        match self.never {}
    }

    fn gather(
        &self,
        _layout: &Layout,
        _indices: &Self,
        _indices_layout: &Layout,
        _dim: usize,
    ) -> Result<Self> {
        match self.never {}
    }

    fn scatter_add(
        &self,
        _layout: &Layout,
        _indices: &Self,
        _indices_layout: &Layout,
        _source: &Self,
        _source_layout: &Layout,
        _dim: usize,
    ) -> Result<Self> {
        match self.never {}
    }

    fn index_add(
        &self,
        _layout: &Layout,
        _indices: &Self,
        _indices_layout: &Layout,
        _source: &Self,
        _source_layout: &Layout,
        _dim: usize,
    ) -> Result<Self> {
        match self.never {}
    }
}

impl Sorting for GpuStorage {
    fn argsort(&self, _layout: &Layout, _dim: usize, _descending: bool) -> Result<Self> {
        match self.never {}
    }
}

impl Scan for GpuStorage {
    fn cumsum(&self, _layout: &Layout, _dim: usize) -> Result<Self> {
        match self.never {}
    }
}

impl Update for GpuStorage {
    fn sgd_step(
        &mut self,
        _layout: &Layout,
        _grad: (&Self, &Layout),
        _buffer: Option<(&mut Self, &Layout)>,
        _step: &crate::update::SgdStep,
        _skip: Option<&Self>,
    ) -> Result<()> {
        match self.never {}
    }

    fn adam_step(
        &mut self,
        _layout: &Layout,
        _grad: (&Self, &Layout),
        _moments: crate::backend::contract::AdamMoments<'_, Self>,
        _step: &crate::update::AdamStep,
    ) -> Result<()> {
        match self.never {}
    }

    fn unscale(&mut self, _layout: &Layout, _scale: f64, _found: &mut Self) -> Result<()> {
        match self.never {}
    }
}

/// The defaults: no fused attention (unreachable: no GPU storage exists).
impl Attention for GpuStorage {}

/// The default: no user kernels (unreachable: no GPU device exists).
impl CustomKernels for GpuStorage {}

/// Number of usable GPU adapters: none in this build.
pub fn device_count() -> usize {
    0
}

/// Every usable adapter: none in this build.
pub fn adapter_infos() -> Vec<AdapterInfo> {
    Vec::new()
}

/// Memory counters of a device (no device exists to ask).
pub fn memory_stats(device: &GpuDevice) -> MemoryStats {
    match device.never {}
}

/// Elementwise-fusion counters of a device (no device exists to ask).
pub fn fusion_stats(device: &GpuDevice) -> FusionStats {
    match device.never {}
}

/// Kernels dispatched on a device (no device exists to ask).
pub fn kernel_dispatches(device: &GpuDevice) -> KernelDispatches {
    match device.never {}
}

/// Give cached buffers back to the driver (no device exists).
pub fn empty_cache(device: &GpuDevice) {
    match device.never {}
}

/// Restart peak-memory tracking (no device exists).
pub fn reset_peak_memory(device: &GpuDevice) {
    match device.never {}
}

/// Change the execution mode (no device exists).
pub fn set_execution_mode(device: &GpuDevice, _mode: ExecutionMode) -> Result<()> {
    match device.never {}
}

/// Every kernel's WGSL source: none in this build.
pub fn all_kernel_sources() -> Vec<(String, String)> {
    Vec::new()
}

/// Whether elementwise fusion is on: there is nothing to fuse in this build.
pub fn elementwise_fusion_enabled() -> bool {
    false
}

/// Turn elementwise fusion on or off: nothing to switch in this build.
pub fn set_elementwise_fusion(_enabled: bool) {}

#[cfg(test)]
mod tests {
    use crate::{device_count, device_name, Device, Error};

    /// Every way of asking for a GPU answers without panicking: an error that names the
    /// missing feature, an empty adapter list, or the CPU.
    #[test]
    fn asking_for_a_gpu_names_the_missing_feature() {
        for result in [Device::gpu(0), Device::parse("gpu"), Device::parse("gpu:1")] {
            let error = result.expect_err("no GPU in this build");
            assert!(matches!(error, Error::NoAdapter { .. }), "{error:?}");
            assert!(
                error.to_string().contains("without the `gpu` feature"),
                "{error}"
            );
        }
        let (device, reason) = Device::best_available();
        assert_eq!(device, Device::Cpu);
        assert!(
            reason
                .as_deref()
                .is_some_and(|r| r.contains("`gpu` feature")),
            "{reason:?}"
        );
        assert_eq!(Device::parse("best").expect("best"), Device::Cpu);
        assert_eq!(device_count(), 0);
        assert_eq!(device_name(0), None);
        assert!(crate::gpu::adapter_infos().is_empty());
        assert!(crate::gpu::all_kernel_sources().is_empty());
        assert!(crate::gpu::GpuDevice::open_new_instance(0).is_err());
        assert!(!crate::elementwise_fusion_enabled());
    }
}
