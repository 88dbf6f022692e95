//! The f16 matmul on cooperative matrices (tensor cores): `C[b] = A[b] x B[b]` with f16
//! storage for A, B and C, f16 x f16 products accumulated in f32 `coop_mat16x16<f32, C>`
//! matrices, and f16 output. wgpu exposes cooperative matrices as the experimental
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` feature (`enable wgpu_cooperative_matrix;` in WGSL);
//! the device requests it only where the adapter offers it (`context.rs`), and these kernels
//! run only where the adapter also reported a 16x16x16 f16-input / f32-accumulator
//! configuration, subgroups of exactly 32 invocations and enough workgroup memory
//! ([`CoopSupport`]). Everywhere else f16 matmuls take the regular kernels.
//!
//! In the first three variants one workgroup of 128 invocations (four subgroups of 32)
//! computes a [`COOP_TILE`]² (128 x 128) tile of C; subgroup `s` (the `subgroup_id` builtin)
//! owns the 64 x 64 quarter at rows `(s / 2) * 64`, columns `(s % 2) * 64`, as a 4 x 4 grid
//! of f32 accumulators. The variants ([`CoopVariant`], `ANYGRAD_COOP_MATMUL=staged|off` or a
//! variant's name: `direct|staged16|staged32|packed32|slim32|wide16|tall16|wide32`):
//! - **staged32** (the default, `staged`, where 41 KiB of workgroup memory fit) and
//!   **staged16**: K is walked in blocks of 32 or 16
//!   32; the workgroup copies A's 128 x kb and B's kb x 128 block into workgroup memory (rows
//!   padded to kb + 8 and 136 halves: 16-byte aligned, and the eight rows a fragment load
//!   reads at once fall on different banks), double buffered like `matmul_large.rs`: the
//!   next block's `vec4<f16>` loads are issued into registers before the current block is
//!   multiplied out, so one barrier per block. Each subgroup reads its fragments from there
//!   (`coopLoadT` with literal strides). staged16 needs 25 KiB of workgroup memory, staged32
//!   41 KiB (and half the barriers; measured faster on the H200); staged16's emulation
//!   (below) fits lavapipe's 32 KiB, so its staging, addressing and epilogue are tested
//!   everywhere, and staged32 was checked against the CPU on the H200;
//! - **direct**: the first design measured on the H200 (68.8 TFLOPS with one subgroup per
//!   workgroup), four subgroups per workgroup, every fragment read straight from the storage
//!   buffers (`coopLoadT` with the run-time row strides k and n), K-step 16, no barriers;
//! - the **packed** kernels (`matmul_coop/packed.rs`; the first three are
//!   `matmul_coop/source.rs`'s): A and B read 16 bytes (8 halves) per
//!   load through `array<vec4<u32>>` bindings, staged as `u32` words (half the shared-memory
//!   stores), fragments loaded from the words, the f32 scratch tiles sharing them. Workgroup
//!   memory is copies x (rows x (kb + 8) + kb x (columns + 8)) x 2 bytes:
//!   - **packed32**: staged32's geometry packed (128 x 128, four 64 x 64 subgroups, kb 32,
//!     double buffered): 2 x (128 x 40 + 32 x 136) x 2 = 37,888 B;
//!   - **slim32**: 128 x 128 by eight subgroups of 32 x 64 (2 x 4 accumulators: about half
//!     the registers, so twice the subgroups per SM), kb 32 double buffered: 37,888 B;
//!   - **wide16**: 128 x 256 by eight 64 x 64 subgroups (2 x 4), kb 16 double buffered:
//!     2 x (128 x 24 + 16 x 264) x 2 = 29,184 B; n a multiple of 256;
//!   - **tall16**: 256 x 128 by eight 64 x 64 subgroups (4 x 2), kb 16 double buffered:
//!     2 x (256 x 24 + 16 x 136) x 2 = 33,280 B; m a multiple of 256;
//!   - **wide32**: 128 x 256 like wide16 but kb 32 single buffered (the next block's loads
//!     still go out before the current block's products; two barriers per block):
//!     (128 x 40 + 32 x 264) x 2 = 27,136 B; n a multiple of 256.
//!
//! `matmul` hands the variants that apply to a shape to the autotuner (`autotune.rs`):
//! the default (staged32) is candidate 0, which runs with tuning off; the others are timed on
//! first use of a shape and the fastest kept. Naming a variant in `ANYGRAD_COOP_MATMUL`
//! forces exactly that kernel (where it applies: the regular kernels take shapes outside its
//! tile), which is how each is timed on its own. The 128 x 256 (256 x 128) variants apply
//! only where n (m) is a multiple of 256.
//!
//! Output: WGSL cannot convert a cooperative matrix to another scalar type, so each f32
//! accumulator is stored (`coopStoreT`) into a per-subgroup 16 x 16 f32 scratch tile in
//! workgroup memory; then each of the subgroup's 32 invocations converts 8 of its values
//! (half a row) to f16 and writes them as two `vec4<f16>`.
//!
//! `matmul` picks [`CoopSupport::key_for`]; if the driver refuses to build the kernel
//! (`Error::Shader`), the device turns the cooperative path off and the regular kernels take
//! over (`anygrad doctor` reports the error).
//!
//! naga 30 pitfall: its WGSL front end does not flush the expression emitter before the
//! `coopStoreT` statement, so a stride computed inside the call (`k * 1u`) is emitted only
//! after the store and the SPIR-V writer panics ("Expression [N] is not cached!"; other
//! computed arguments trigger it too). Every `coopStoreT` argument here is therefore a
//! `let` binding or a literal (`coop_store_needs_let_arguments` pins the behaviour).
//!
//! `emulated` keys generate the same kernel with the cooperative-matrix operations written in
//! plain WGSL (a fragment is its start and stride; each invocation computes its 8 values of
//! every accumulator from the memory under the fragments; subgroup and lane are `local / 32`
//! and `local % 32`): slow, but it runs the staging, double buffering, fragment addressing
//! and epilogue on any f16 device, so tests check them without tensor cores.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::kernels::KernelKey;
use super::GpuDevice;
use crate::dtype::DType;
use crate::error::Error;
use crate::layout::Layout;
use packed::Geometry;

/// Edge of the output tile of one workgroup.
pub(crate) const COOP_TILE: usize = 128;

/// Invocations per subgroup the kernels are written for (four subgroups per workgroup).
const SUBGROUP_SIZE: u32 = 32;

/// Row length (halves) of B's staged block (128 columns, padded): 272 bytes, a multiple of
/// 16 whose multiples land on distinct 16-byte bank groups for the eight rows a fragment load
/// reads at once. A's block rows (k-block + 8 halves: 48 or 80 bytes) have the same property.
const B_ROW: usize = 136;

/// Which cooperative-matrix kernel (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoopVariant {
    /// Fragments read straight from the storage buffers; k a multiple of 16.
    Direct,
    /// Operand blocks of 16 k staged in double-buffered workgroup memory (25 KiB); k a
    /// multiple of 16.
    Staged16,
    /// Operand blocks of 32 k staged in double-buffered workgroup memory (41 KiB); k a
    /// multiple of 32.
    Staged32,
    /// Staged32's tile and blocks, packed (16-byte loads, words staged, scratch shared: 37 KiB).
    Packed32,
    /// 128 x 128 by eight subgroups of 32 x 64 (half the accumulators each), packed, k-blocks
    /// of 32 double buffered (37 KiB).
    Slim32,
    /// 128 x 256 by eight subgroups of 64 x 64, packed, k-blocks of 16 double buffered
    /// (28.5 KiB); n a multiple of 256.
    Wide16,
    /// 256 x 128 by eight subgroups of 64 x 64, packed, k-blocks of 16 double buffered
    /// (32.5 KiB); m a multiple of 256.
    Tall16,
    /// 128 x 256 by eight subgroups of 64 x 64, packed, k-blocks of 32 single buffered
    /// (26.5 KiB, two barriers per block); n a multiple of 256.
    Wide32,
    /// Tests only: packed32's grid with k-blocks of 16 (20.5 KiB), so its emulation runs on
    /// devices with 32 KiB of workgroup memory (lavapipe).
    #[cfg(test)]
    TestSquare,
    /// Tests only: slim32's grid single buffered (18.5 KiB).
    #[cfg(test)]
    TestSlim,
    /// Tests only: tall16's grid single buffered (16.25 KiB).
    #[cfg(test)]
    TestTall,
}

impl CoopVariant {
    /// Every variant.
    pub const ALL: [CoopVariant; 8] = [
        CoopVariant::Direct,
        CoopVariant::Staged16,
        CoopVariant::Staged32,
        CoopVariant::Packed32,
        CoopVariant::Slim32,
        CoopVariant::Wide16,
        CoopVariant::Tall16,
        CoopVariant::Wide32,
    ];

    /// The name `ANYGRAD_COOP_MATMUL` and the autotuner use.
    pub fn name(self) -> &'static str {
        match self {
            CoopVariant::Direct => "direct",
            CoopVariant::Staged16 => "staged16",
            CoopVariant::Staged32 => "staged32",
            CoopVariant::Packed32 => "packed32",
            CoopVariant::Slim32 => "slim32",
            CoopVariant::Wide16 => "wide16",
            CoopVariant::Tall16 => "tall16",
            CoopVariant::Wide32 => "wide32",
            #[cfg(test)]
            CoopVariant::TestSquare => "test-square",
            #[cfg(test)]
            CoopVariant::TestSlim => "test-slim",
            #[cfg(test)]
            CoopVariant::TestTall => "test-tall",
        }
    }

    /// The packed kernels' geometry (`matmul_coop/packed.rs`); `None` for the first three.
    pub(crate) fn geometry(self) -> Option<Geometry> {
        let geometry =
            |(rows, columns), (subgroups, grid_columns), fragments, kb, copies| Geometry {
                rows,
                columns,
                subgroups,
                grid_columns,
                fragments,
                kb,
                copies,
            };
        match self {
            CoopVariant::Direct | CoopVariant::Staged16 | CoopVariant::Staged32 => None,
            CoopVariant::Packed32 => Some(geometry((128, 128), (4, 2), (4, 4), 32, 2)),
            CoopVariant::Slim32 => Some(geometry((128, 128), (8, 2), (2, 4), 32, 2)),
            CoopVariant::Wide16 => Some(geometry((128, 256), (8, 4), (4, 4), 16, 2)),
            CoopVariant::Tall16 => Some(geometry((256, 128), (8, 2), (4, 4), 16, 2)),
            CoopVariant::Wide32 => Some(geometry((128, 256), (8, 4), (4, 4), 32, 1)),
            #[cfg(test)]
            CoopVariant::TestSquare => Some(geometry((128, 128), (4, 2), (4, 4), 16, 2)),
            #[cfg(test)]
            CoopVariant::TestSlim => Some(geometry((128, 128), (8, 2), (2, 4), 32, 1)),
            #[cfg(test)]
            CoopVariant::TestTall => Some(geometry((256, 128), (8, 2), (4, 4), 16, 1)),
        }
    }

    /// Output rows and columns of one workgroup: m and n must be multiples of them.
    pub fn tile(self) -> (usize, usize) {
        self.geometry()
            .map_or((COOP_TILE, COOP_TILE), |g| (g.rows, g.columns))
    }

    /// Invocations per workgroup.
    pub fn threads(self) -> u32 {
        self.geometry()
            .map_or(4 * SUBGROUP_SIZE, |g| g.threads() as u32)
    }

    /// k must be a non-zero multiple of this (the staged kernels' k-block).
    pub fn k_step(self) -> usize {
        match self.geometry() {
            Some(geometry) => geometry.kb,
            None => match self {
                CoopVariant::Staged32 => 32,
                _ => 16,
            },
        }
    }

    /// Row length (halves) of A's staged block: the k-block plus 8 halves of padding.
    fn a_row(self) -> usize {
        self.k_step() + 8
    }

    /// Halves of one copy of A's and of B's staged block.
    fn blocks(self) -> (usize, usize) {
        (COOP_TILE * self.a_row(), self.k_step() * B_ROW)
    }

    /// Bytes of workgroup memory one workgroup uses (the f32 scratch tiles, and for the
    /// staged kernels two copies of both f16 blocks; the packed kernels' words).
    pub fn workgroup_bytes(self) -> u32 {
        if let Some(geometry) = self.geometry() {
            return geometry.workgroup_bytes();
        }
        let scratch = 4 * 256 * 4;
        let (a, b) = self.blocks();
        match self {
            CoopVariant::Staged16 | CoopVariant::Staged32 => (2 * (a + b) * 2) as u32 + scratch,
            _ => scratch,
        }
    }

    /// Whether a device with `limits` can run this variant's workgroups.
    pub(crate) fn fits(self, limits: &wgpu::Limits) -> bool {
        self.workgroup_bytes() <= limits.max_compute_workgroup_storage_size
            && self.threads() <= limits.max_compute_invocations_per_workgroup
            && self.threads() <= limits.max_compute_workgroup_size_x
    }

    /// `ANYGRAD_COOP_MATMUL`: `staged` (default: staged32 where its workgroup memory fits —
    /// 76.2 TFLOPS vs staged16's 65.9 at 4096 on the H200 — else staged16, with the other
    /// variants as autotuner candidates), a variant's [`name`](CoopVariant::name) (exactly
    /// that kernel, no tuning among variants), or `off` (regular kernels only). A named
    /// variant that does not fit `limits` falls back to `direct`. The second value: whether
    /// the variant was named (forced).
    fn from_env(limits: &wgpu::Limits) -> Option<(CoopVariant, bool)> {
        let staged = if CoopVariant::Staged32.fits(limits) {
            CoopVariant::Staged32
        } else {
            CoopVariant::Staged16
        };
        let setting = std::env::var("ANYGRAD_COOP_MATMUL").ok();
        let chosen = match setting.as_deref().map(str::trim) {
            None | Some("") | Some("staged") => (staged, false),
            Some("off") | Some("0") | Some("none") => return None,
            Some(name) => match CoopVariant::ALL.into_iter().find(|v| v.name() == name) {
                Some(variant) => (variant, true),
                None => {
                    let names: Vec<&str> = CoopVariant::ALL.iter().map(|v| v.name()).collect();
                    tracing::warn!(
                        "ANYGRAD_COOP_MATMUL={name} is unknown (staged|{}|off); using staged",
                        names.join("|")
                    );
                    (staged, false)
                }
            },
        };
        Some(if chosen.0.fits(limits) {
            chosen
        } else {
            (CoopVariant::Direct, chosen.1)
        })
    }
}

/// What one opened device offers for cooperative-matrix matmuls.
#[derive(Debug)]
pub(crate) struct CoopSupport {
    /// The device was opened with `EXPERIMENTAL_COOPERATIVE_MATRIX` and the adapter reported
    /// 16x16x16 with f16 inputs and f32 accumulators.
    pub(crate) f16_f32_16x16: bool,
    /// The hardware kernels can run here: the configuration above, `SHADER_F16`, and
    /// `SUBGROUP` with subgroups of exactly 32 invocations (each variant also needs its
    /// workgroup memory).
    pub(crate) available: bool,
    /// The variant `matmul` picks for eligible f16 products (`None`: unavailable, or disabled
    /// by `ANYGRAD_COOP_MATMUL=off`).
    pub(crate) chosen: Option<CoopVariant>,
    /// `ANYGRAD_COOP_MATMUL` named `chosen`: no other variant is tried.
    forced: bool,
    /// The variants that fit the device's workgroup limits, in [`CoopVariant::ALL`]'s order
    /// (the autotuner's other candidates).
    fitting: Vec<CoopVariant>,
    /// Hardware cooperative-matrix kernels recorded, for `anygrad doctor`.
    pub(crate) dispatches: AtomicU64,
    /// The variant of the last recorded hardware dispatch (its index in
    /// [`CoopVariant::ALL`] plus one; 0: none yet).
    last: AtomicUsize,
    /// Why `matmul` stopped using the hardware kernels (the driver refused one).
    failure: Mutex<Option<String>>,
    /// The cooperative-matrix convolutions (`conv_coop.rs`).
    pub(crate) conv: super::conv_coop::ConvCoopState,
    /// The cooperative-matrix attention forward (`attention_coop.rs`).
    pub(crate) attention: super::attention_coop::AttentionCoopState,
}

impl CoopSupport {
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
    ) -> CoopSupport {
        let f16_f32_16x16 = features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
            && Self::adapter_has_f16_f32(adapter);
        let info = adapter.get_info();
        let available = f16_f32_16x16
            && features.contains(wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP)
            && info.subgroup_min_size == SUBGROUP_SIZE
            && info.subgroup_max_size == SUBGROUP_SIZE
            && limits.max_compute_invocations_per_workgroup >= 4 * SUBGROUP_SIZE
            && limits.max_compute_workgroup_size_x >= 4 * SUBGROUP_SIZE;
        let (chosen, forced) = match available.then(|| CoopVariant::from_env(limits)) {
            Some(Some((variant, forced))) => (Some(variant), forced),
            _ => (None, false),
        };
        CoopSupport {
            f16_f32_16x16,
            available,
            chosen,
            forced,
            fitting: CoopVariant::ALL
                .into_iter()
                .filter(|variant| variant.fits(limits))
                .collect(),
            dispatches: AtomicU64::new(0),
            last: AtomicUsize::new(0),
            failure: Mutex::new(None),
            conv: super::conv_coop::ConvCoopState::from_env(),
            attention: super::attention_coop::AttentionCoopState::from_env(),
        }
    }

    /// The variant `matmul` uses now: `chosen`, unless a kernel failed to build.
    pub(crate) fn active(&self) -> Option<CoopVariant> {
        self.chosen.filter(|_| self.failure().is_none())
    }

    /// Why the hardware kernels were turned off, if they were.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stop using the hardware kernels on this device (`matmul` takes the regular ones).
    pub(crate) fn disable(&self, error: &Error) {
        tracing::warn!("cooperative-matrix matmul turned off: {error}");
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
    }

    /// The variants `matmul` may run for `a x b` of `dtype` (the autotuner's candidates):
    /// the active one first when it applies, then (unless `ANYGRAD_COOP_MATMUL` named one)
    /// every other variant that fits the device and applies. Empty: no cooperative kernel.
    pub(crate) fn candidates(&self, dtype: DType, a: &Layout, b: &Layout) -> Vec<CoopVariant> {
        let Some(active) = self.active() else {
            return Vec::new();
        };
        let mut candidates: Vec<CoopVariant> = Some(active)
            .filter(|&variant| coop_applies(variant, dtype, a, b))
            .into_iter()
            .collect();
        if !self.forced {
            for &variant in &self.fitting {
                if variant != active && coop_applies(variant, dtype, a, b) {
                    candidates.push(variant);
                }
            }
        }
        candidates
    }

    /// Whether this device may run `MatmulCoop { variant, emulated }` on `a x b`.
    pub(crate) fn allows(
        &self,
        variant: CoopVariant,
        emulated: bool,
        limits: &wgpu::Limits,
        (dtype, a, b): (DType, &Layout, &Layout),
    ) -> bool {
        (emulated || self.available) && variant.fits(limits) && coop_applies(variant, dtype, a, b)
    }

    /// Count one recorded hardware cooperative-matrix dispatch of `variant`.
    pub(crate) fn count(&self, variant: CoopVariant) {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
        let index = CoopVariant::ALL.iter().position(|&v| v == variant);
        self.last
            .store(index.map_or(0, |index| index + 1), Ordering::Relaxed);
    }
}

impl GpuDevice {
    /// The cooperative-matrix kernel that eligible f16 matmuls use on this device (`None`:
    /// the adapter has no 16x16x16 f16 -> f32 tensor-core configuration usable here, or
    /// `ANYGRAD_COOP_MATMUL=off`, or the driver refused the kernel: see
    /// [`GpuDevice::cooperative_matmul_failure`]).
    pub fn cooperative_matmul(&self) -> Option<CoopVariant> {
        self.context().coop.active()
    }

    /// The error that made `matmul` stop using the cooperative-matrix kernel on this device
    /// (the driver refused to build it), if that happened.
    pub fn cooperative_matmul_failure(&self) -> Option<String> {
        self.context().coop.failure()
    }

    /// Whether the adapter reported a 16x16x16 f16 x f16 -> f32 cooperative-matrix
    /// configuration and the device was opened with cooperative matrices.
    pub fn has_cooperative_f16_f32(&self) -> bool {
        self.context().coop.f16_f32_16x16
    }

    /// The cooperative-matrix variant of the last hardware matmul recorded on this device
    /// (what the autotuner or `ANYGRAD_COOP_MATMUL` picked; `anygrad bench matmul` reports
    /// it), if any ran yet.
    pub fn cooperative_matmul_last(&self) -> Option<CoopVariant> {
        let last = self.context().coop.last.load(Ordering::Relaxed);
        last.checked_sub(1)
            .and_then(|index| CoopVariant::ALL.get(index).copied())
    }

    /// Hardware cooperative-matrix matmul kernels recorded on this device so far.
    pub fn cooperative_matmul_dispatches(&self) -> u64 {
        self.context().coop.dispatches.load(Ordering::Relaxed)
    }
}

/// Whether `variant` may compute `a x b` (layouts `[batch, m, k]` and `[batch, k, n]`): F16,
/// m and n non-zero multiples of the variant's [`tile`](CoopVariant::tile) (128 or 256), k a
/// non-zero multiple of the variant's K-step, both operands row-major within a batch (column stride 1, row stride k resp. n),
/// offsets and batch strides multiples of 8 elements (16 bytes; stride 0, a broadcast batch,
/// included).
///
/// The kernels index their bindings without bounds checks and trust this predicate: under
/// it, every element (and `vec4`) they read lies inside the views `check_view` validated, and
/// every fragment starts 16-byte aligned with a row stride that is a multiple of 16 bytes.
pub(crate) fn coop_applies(variant: CoopVariant, dtype: DType, a: &Layout, b: &Layout) -> bool {
    let (&[batch, m, k], &[b_batch, b_k, n]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        return false;
    };
    let (&[a_batch_stride, a_row, a_column], &[b_batch_stride, b_row, b_column]) =
        (a.strides.as_slice(), b.strides.as_slice())
    else {
        return false;
    };
    dtype == DType::F16
        && batch > 0
        && batch == b_batch
        && k == b_k
        && m > 0
        && m.is_multiple_of(variant.tile().0)
        && n > 0
        && n.is_multiple_of(variant.tile().1)
        && k > 0
        && k.is_multiple_of(variant.k_step())
        && (a_row, a_column) == (k, 1)
        && (b_row, b_column) == (n, 1)
        && [a.offset, a_batch_stride, b.offset, b_batch_stride]
            .iter()
            .all(|value| value.is_multiple_of(8))
}

/// How the generated text spells the cooperative-matrix operations: the real ones, or plain
/// WGSL emulating them (`emulated`). The emulation is lazy and per lane: a fragment is its
/// `(start, stride)` (the kernels use fragments before the memory under them changes), and
/// lane `l` of a subgroup holds the 8 accumulator values of row `l / 2`, columns
/// `(l % 2) * 8 + 0..8`, which its multiply-add computes from the fragments' memory.
#[derive(Clone, Copy)]
pub(crate) struct Coop {
    pub(crate) emulated: bool,
}

impl Coop {
    /// The type of an operand fragment (`role` A or B) or accumulator (`C`).
    pub(crate) fn ty(self, role: char) -> String {
        match (self.emulated, role) {
            (true, 'C') => "array<vec4<f32>, 2>".into(),
            (true, _) => "vec2<u32>".into(),
            (false, 'C') => "coop_mat16x16<f32, C>".into(),
            (false, role) => format!("coop_mat16x16<f16, {role}>"),
        }
    }

    /// A row-major 16 x 16 fragment of `source` starting at element `start`.
    pub(crate) fn load(self, role: char, source: &str, start: &str, stride: &str) -> String {
        if self.emulated {
            format!("vec2<u32>({start}, {stride})")
        } else {
            format!("coopLoadT<{}>(&{source}[{start}], {stride})", self.ty(role))
        }
    }

    /// `a x b + c`.
    pub(crate) fn multiply_add(self, a: &str, b: &str, c: &str) -> String {
        let function = if self.emulated {
            "emulated_multiply_add"
        } else {
            "coopMultiplyAdd"
        };
        format!("{function}({a}, {b}, {c})")
    }

    /// Store accumulator `c` row-major into `scratch` at the `let` `start` (stride 16).
    pub(crate) fn store_scratch(self, c: &str, start: &str) -> String {
        if self.emulated {
            format!("emulated_store_scratch({c}, {start});")
        } else {
            format!("coopStoreT({c}, &scratch[{start}], 16u);")
        }
    }

    /// What precedes `common.wgsl`: the enable directive; or, emulated, the lane variable and
    /// the functions (A's fragments in `a_source`, B's in `b_source`, scalar f16 arrays).
    pub(crate) fn prelude(self, a_source: &str, b_source: &str) -> String {
        if !self.emulated {
            return "enable wgpu_cooperative_matrix;\n".into();
        }
        let b = |offset: u32| {
            (offset..offset + 4)
                .map(|j| format!("f32({b_source}[at + {j}u])"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "var<private> emulated_lane: u32;
fn emulated_multiply_add(a: vec2<u32>, b: vec2<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {{
    var result = c;
    let row = a.x + (emulated_lane / 2u) * a.y;
    let column = b.x + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {{
        let x = f32({a_source}[row + j]);
        let at = column + j * b.y;
        result[0] = result[0] + x * vec4<f32>({low});
        result[1] = result[1] + x * vec4<f32>({high});
    }}
    return result;
}}
fn emulated_store_scratch(c: array<vec4<f32>, 2>, start: u32) {{
    let at = start + emulated_lane * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {{
        scratch[at + j] = c[0][j];
        scratch[at + 4u + j] = c[1][j];
    }}
}}
",
            low = b(0),
            high = b(4)
        )
    }

    /// The parameters of `main` that name this invocation's subgroup and lane.
    pub(crate) fn subgroup_builtins(self) -> &'static str {
        if self.emulated {
            ""
        } else {
            ",\n        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32"
        }
    }
}

/// The catalogue entries (`kernel_catalog.rs`): every variant, real and emulated. naga
/// validates and translates the real ones on the CPU too (`Capabilities::all()` includes
/// cooperative matrices), and `matmul_coop/tests.rs` checks them against wgpu's SPIR-V
/// options for Vulkan.
pub(crate) fn catalogue(keys: &mut Vec<KernelKey>) {
    for variant in CoopVariant::ALL {
        for emulated in [false, true] {
            keys.push(KernelKey::MatmulCoop { variant, emulated });
        }
    }
}

mod packed;
mod source;
pub(crate) use source::source_body;
#[cfg(test)]
pub(crate) mod tests;
