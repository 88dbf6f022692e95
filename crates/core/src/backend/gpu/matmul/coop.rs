//! The f16 matmul on cooperative matrices (tensor cores): `C[b] = A[b] x B[b]` with f16
//! storage for A, B and C, f16 x f16 products accumulated in f32 `coop_mat16x16<f32, C>`
//! matrices, and f16 output. wgpu exposes cooperative matrices as the experimental
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` feature (`enable wgpu_cooperative_matrix;` in WGSL);
//! the device requests it only where the adapter offers it (`runtime/context.rs`), and these kernels
//! run only where the adapter also reported a 16x16x16 f16-input / f32-accumulator
//! configuration, subgroups of exactly 32 invocations and enough workgroup memory
//! (`runtime/adapters/cooperative.rs`; [`MatmulCoopState`] holds the variants tried here).
//! Everywhere else f16 matmuls take the regular kernels.
//!
//! One workgroup of 128 invocations (four subgroups of 32) computes a [`COOP_TILE`]²
//! (128 x 128) tile of C; subgroup `s` (the `subgroup_id` builtin) owns the 64 x 64 quarter
//! at rows `(s / 2) * 64`, columns `(s % 2) * 64`, as a 4 x 4 grid of f32 accumulators. The
//! variants ([`CoopVariant`], `ANYGRAD_COOP_MATMUL=staged|staged16|staged32|wide128|wide256|direct|off`):
//! - **staged32** (the default, `staged`, where 41 KiB of workgroup memory fit) and
//!   **staged16**: K is walked in blocks of 32 or 16
//!   32; the workgroup copies A's 128 x kb and B's kb x 128 block into workgroup memory (rows
//!   padded to kb + 8 and 136 halves: 16-byte aligned, and the eight rows a fragment load
//!   reads at once fall on different banks), double buffered like `matmul/large.rs`: the
//!   next block's `vec4<f16>` loads are issued into registers before the current block is
//!   multiplied out, so one barrier per block. Each subgroup reads its fragments from there
//!   (`coopLoadT` with literal strides). staged16 needs 25 KiB of workgroup memory, staged32
//!   41 KiB (and half the barriers; measured faster on the H200); staged16's emulation
//!   (below) fits lavapipe's 32 KiB, so its staging, addressing and epilogue are tested
//!   everywhere, and staged32 was checked against the CPU on the H200;
//! - **direct**: the first design measured on the H200 (68.8 TFLOPS with one subgroup per
//!   workgroup), four subgroups per workgroup, every fragment read straight from the storage
//!   buffers (`coopLoadT` with the run-time row strides k and n), K-step 16, no barriers.
//!
//! Output: WGSL cannot convert a cooperative matrix to another scalar type, so each f32
//! accumulator is stored (`coopStoreT`) into a per-subgroup 16 x 16 f32 scratch tile in
//! workgroup memory; then each of the subgroup's 32 invocations converts 8 of its values
//! (half a row) to f16 and writes them as two `vec4<f16>`.
//!
//! `matmul` picks [`MatmulCoopState::key_for`]; if the driver refuses to build the kernel
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

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::matmul::MatmulParams;
use crate::backend::gpu::runtime::context::GpuContext;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::cooperative::Coop;
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::dtype::DType;
use crate::error::Error;
use crate::layout::Layout;

/// Edge of the output tile of one workgroup.
pub(crate) const COOP_TILE: usize = 128;

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
    /// Eight subgroups, a 128 x 128 tile, 16-byte loads into packed single-copy blocks
    /// (`matmul_coop/packed.rs`, 26.5 KiB); k a multiple of 32.
    Wide128,
    /// The same with a 128 x 256 tile (34.5 KiB); n a multiple of 256, k of 32.
    Wide256,
}

impl CoopVariant {
    /// Every variant.
    pub const ALL: [CoopVariant; 5] = [
        CoopVariant::Direct,
        CoopVariant::Staged16,
        CoopVariant::Staged32,
        CoopVariant::Wide128,
        CoopVariant::Wide256,
    ];

    /// k must be a non-zero multiple of this (the staged kernels' k-block).
    pub fn k_step(self) -> usize {
        match self {
            CoopVariant::Direct | CoopVariant::Staged16 => 16,
            CoopVariant::Staged32 => 32,
            CoopVariant::Wide128 | CoopVariant::Wide256 => wide::K_BLOCK,
        }
    }

    /// Columns of C one workgroup computes (its rows: 128); n must be a multiple.
    pub fn tile_n(self) -> usize {
        match self {
            CoopVariant::Wide256 => 256,
            CoopVariant::Direct
            | CoopVariant::Staged16
            | CoopVariant::Staged32
            | CoopVariant::Wide128 => COOP_TILE,
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
    /// staged kernels two copies of both f16 blocks).
    pub fn workgroup_bytes(self) -> u32 {
        let scratch = 4 * 256 * 4;
        let (a, b) = self.blocks();
        match self {
            CoopVariant::Direct => scratch,
            CoopVariant::Staged16 | CoopVariant::Staged32 => (2 * (a + b) * 2) as u32 + scratch,
            CoopVariant::Wide128 | CoopVariant::Wide256 => wide::workgroup_bytes(self.tile_n()),
        }
    }

    /// The variants `matmul` tries, in order, under `ANYGRAD_COOP_MATMUL`: `auto` (the
    /// default: Wide256, Wide128, Staged32, Staged16 — the fastest first, measured on the
    /// H200 at 4096³: 142, 102, 76 and 66 TFLOPS — so every shape the predicate admits
    /// finds one), `staged` (Staged32, else Staged16), one variant by name (`staged16`,
    /// `staged32`, `wide128`, `wide256`, `direct`), or `off` (none: regular kernels only).
    /// Variants whose workgroup memory exceeds `limit` are left out; a named one falls back
    /// to `direct`.
    fn order_from_env(limit: u32) -> Vec<CoopVariant> {
        let fits = |variant: &CoopVariant| variant.workgroup_bytes() <= limit;
        let auto = || -> Vec<CoopVariant> {
            let order = [
                CoopVariant::Wide256,
                CoopVariant::Wide128,
                CoopVariant::Staged32,
                CoopVariant::Staged16,
            ];
            let fitting: Vec<CoopVariant> = order.into_iter().filter(fits).collect();
            if fitting.is_empty() {
                vec![CoopVariant::Direct]
            } else {
                fitting
            }
        };
        let staged = || {
            if fits(&CoopVariant::Staged32) {
                CoopVariant::Staged32
            } else {
                CoopVariant::Staged16
            }
        };
        let named = match std::env::var("ANYGRAD_COOP_MATMUL")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            None | Some("") | Some("auto") => return auto(),
            Some("staged") => staged(),
            Some("staged16") => CoopVariant::Staged16,
            Some("staged32") => CoopVariant::Staged32,
            Some("wide128") => CoopVariant::Wide128,
            Some("wide256") => CoopVariant::Wide256,
            Some("direct") => CoopVariant::Direct,
            Some("off") | Some("0") | Some("none") => return Vec::new(),
            Some(other) => {
                tracing::warn!("ANYGRAD_COOP_MATMUL={other} is unknown (auto|staged|staged16|staged32|wide128|wide256|direct|off); using auto");
                return auto();
            }
        };
        vec![if fits(&named) {
            named
        } else {
            CoopVariant::Direct
        }]
    }
}

/// The cooperative-matrix matmul's state on one device (`GpuContext::family_state`); whether
/// the device has cooperative matrices at all is the context's `coop`
/// (`runtime/adapters/cooperative.rs`).
#[derive(Debug)]
pub(crate) struct MatmulCoopState {
    /// The variants `matmul` tries for eligible f16 products, in order (empty: unavailable,
    /// or disabled by `ANYGRAD_COOP_MATMUL=off`).
    pub(crate) order: Vec<CoopVariant>,
    /// Hardware cooperative-matrix kernels recorded, for `anygrad doctor`.
    pub(crate) dispatches: AtomicU64,
    /// Why `matmul` stopped using the hardware kernels (the driver refused one).
    failure: Mutex<Option<String>>,
}

impl MatmulCoopState {
    /// The state of `context`'s device, created at first use from its support and
    /// `ANYGRAD_COOP_MATMUL`.
    pub(crate) fn of(context: &GpuContext) -> Arc<MatmulCoopState> {
        context.family_state(|context| MatmulCoopState {
            order: if context.coop.available {
                CoopVariant::order_from_env(context.limits.max_compute_workgroup_storage_size)
            } else {
                Vec::new()
            },
            dispatches: AtomicU64::new(0),
            failure: Mutex::new(None),
        })
    }

    /// The variant `matmul` prefers now: the first of `order`, unless a kernel failed to
    /// build.
    pub(crate) fn active(&self) -> Option<CoopVariant> {
        self.order
            .first()
            .copied()
            .filter(|_| self.failure().is_none())
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

    /// The variant `matmul` uses for `a x b` of `dtype`, when a cooperative kernel applies
    /// (the first of `order` whose predicate holds).
    pub(crate) fn key_for(&self, dtype: DType, a: &Layout, b: &Layout) -> Option<CoopVariant> {
        self.active()?;
        first_applicable(&self.order, dtype, a, b)
    }

    /// Whether `context`'s device may run `MatmulCoop { variant, emulated }` on `a x b`.
    pub(crate) fn allows(
        context: &GpuContext,
        variant: CoopVariant,
        emulated: bool,
        (dtype, a, b): (DType, &Layout, &Layout),
    ) -> bool {
        (emulated || context.coop.available)
            && context.limits.max_compute_workgroup_storage_size >= variant.workgroup_bytes()
            && coop_applies(variant, dtype, a, b)
    }

    /// Count one recorded hardware cooperative-matrix dispatch.
    pub(crate) fn count(&self) {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
    }
}

impl GpuDevice {
    /// The cooperative-matrix kernel that eligible f16 matmuls use on this device (`None`:
    /// the adapter has no 16x16x16 f16 -> f32 tensor-core configuration usable here, or
    /// `ANYGRAD_COOP_MATMUL=off`, or the driver refused the kernel: see
    /// [`GpuDevice::cooperative_matmul_failure`]).
    pub fn cooperative_matmul(&self) -> Option<CoopVariant> {
        MatmulCoopState::of(self.context()).active()
    }

    /// The error that made `matmul` stop using the cooperative-matrix kernel on this device
    /// (the driver refused to build it), if that happened.
    pub fn cooperative_matmul_failure(&self) -> Option<String> {
        MatmulCoopState::of(self.context()).failure()
    }

    /// Whether the adapter reported a 16x16x16 f16 x f16 -> f32 cooperative-matrix
    /// configuration and the device was opened with cooperative matrices.
    pub fn has_cooperative_f16_f32(&self) -> bool {
        self.context().coop.f16_f32_16x16
    }

    /// Hardware cooperative-matrix matmul kernels recorded on this device so far.
    pub fn cooperative_matmul_dispatches(&self) -> u64 {
        MatmulCoopState::of(self.context())
            .dispatches
            .load(Ordering::Relaxed)
    }
}

/// Whether `variant` may compute `a x b` (layouts `[batch, m, k]` and `[batch, k, n]`): F16,
/// m and n non-zero multiples of [`COOP_TILE`], k a non-zero multiple of the variant's
/// K-step, both operands row-major within a batch (column stride 1, row stride k resp. n),
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
        && m.is_multiple_of(COOP_TILE)
        && n > 0
        && n.is_multiple_of(variant.tile_n())
        && k > 0
        && k.is_multiple_of(variant.k_step())
        && (a_row, a_column) == (k, 1)
        && (b_row, b_column) == (n, 1)
        && [a.offset, a_batch_stride, b.offset, b_batch_stride]
            .iter()
            .all(|value| value.is_multiple_of(8))
}

/// The first of `order` whose predicate ([`coop_applies`]) holds for `a x b`.
pub(crate) fn first_applicable(
    order: &[CoopVariant],
    dtype: DType,
    a: &Layout,
    b: &Layout,
) -> Option<CoopVariant> {
    order
        .iter()
        .copied()
        .find(|&variant| coop_applies(variant, dtype, a, b))
}

/// The catalogue entries (`kernel_catalog.rs`): every variant, real and emulated. naga
/// validates and translates the real ones on the CPU too (`Capabilities::all()` includes
/// cooperative matrices), and `matmul/coop/tests.rs` checks them against wgpu's SPIR-V
/// options for Vulkan.
pub(crate) fn catalogue(keys: &mut Vec<MatmulKernel>) {
    for variant in CoopVariant::ALL {
        for emulated in [false, true] {
            keys.push(MatmulKernel::MatmulCoop { variant, emulated });
        }
    }
}

/// The kernel text after `enable f16;` (the header `MatmulKernel::source` writes).
/// params: [`MatmulParams`] (`matmul/`).
pub(crate) fn source_body(variant: CoopVariant, emulated: bool) -> String {
    if let CoopVariant::Wide128 | CoopVariant::Wide256 = variant {
        return wide::source_body(variant.tile_n(), emulated);
    }
    let coop = Coop { emulated };
    let (element, a_source, b_source) = match variant {
        CoopVariant::Direct => ("f16", "matrix_a", "matrix_b"),
        CoopVariant::Staged16
        | CoopVariant::Staged32
        | CoopVariant::Wide128
        | CoopVariant::Wide256 => ("vec4<f16>", "tile_a", "tile_b"),
    };
    let staged = variant != CoopVariant::Direct;
    // Staged: k-block, A's padded row, halves of one copy of A's and B's block, vec4s per
    // row of A's block.
    let (kb, a_row, (a_block, b_block)) = (variant.k_step(), variant.a_row(), variant.blocks());
    let quads = kb / 4;
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    if !emulated {
        w.push_str(&coop.prelude(a_source, b_source));
    }
    w.push_str(MatmulParams::WGSL);
    w.push_str(COMMON);
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<{element}>;
@group(0) @binding(2) var<storage, read> matrix_b: array<{element}>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 1024>;"#
    );
    if staged {
        let _ = writeln!(
            w,
            "// Two copies (ping-pong) of A's block [128 rows][{a_row}] and B's [{kb} k][{B_ROW}] (padded rows).\n\
             var<workgroup> tile_a: array<f16, {}>;\nvar<workgroup> tile_b: array<f16, {}>;",
            2 * a_block,
            2 * b_block
        );
    }
    if emulated {
        w.push_str(&coop.prelude(a_source, b_source));
    }
    let (subgroup, lane) = if emulated {
        (
            "    let subgroup = local / 32u;\n",
            "    let lane = local % 32u;\n    emulated_lane = lane;\n",
        )
    } else {
        ("", "")
    };
    let _ = writeln!(
        w,
        r#"
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{builtins}) {{
{subgroup}{lane}    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // This subgroup's 64 x 64 quarter of the tile.
    let sub_row = (subgroup / 2u) * 64u;
    let sub_column = (subgroup % 2u) * 64u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;"#,
        builtins = coop.subgroup_builtins(),
    );
    if staged {
        let _ = writeln!(
            w,
            r#"    let k4 = k / 4u;
    let steps = k / {kb}u;
    // Loader roles: vec4 `local % {quads}` of rows `local / {quads} + {a_rows}p` of A's block,
    // vec4 `local % 32` of k rows `local / 32 + 4p` of B's block (p = 0..{loads}); where they
    // go in a block copy.
    let a_store = (local / {quads}u) * {a_row}u + (local % {quads}u) * 4u;
    let b_store = (local / 32u) * {B_ROW}u + (local % 32u) * 4u;
    // This subgroup's first A row in a block copy.
    let a_fragment = sub_row * {a_row}u;"#,
            a_rows = 128 / quads,
            loads = kb / 4,
        );
    }
    let accumulators: Vec<String> = (0..16).map(|t| format!("c{}{}", t / 4, t % 4)).collect();
    for c in &accumulators {
        let _ = writeln!(w, "    var {c}: {};", coop.ty('C'));
    }
    let _ = writeln!(
        w,
        "    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {{"
    );
    for c in &accumulators {
        let _ = writeln!(w, "        {c} = {}();", coop.ty('C'));
    }
    if staged {
        staged_loop(&mut w, coop, variant);
    } else {
        direct_loop(&mut w, coop);
    }
    // Epilogue: this invocation writes row `lane / 2`, columns `(lane % 2) * 8 + 0..8` of
    // each 16 x 16 accumulator, as two vec4<f16> (vec4 index `c_at` for accumulator 00).
    let _ = writeln!(
        w,
        "        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;"
    );
    for (t, c) in accumulators.iter().enumerate() {
        let (i, j) = (t / 4, t % 4);
        let _ = writeln!(
            w,
            "        {}\n        workgroupBarrier();\n        {{\n\
             \x20           let at = c_at + {}u * n4 + {}u;\n\
             \x20           matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));\n\
             \x20           matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));\n\
             \x20       }}\n        workgroupBarrier();",
            coop.store_scratch(c, "scratch_at"),
            i * 16,
            j * 4
        );
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// The staged kernels' k-loop: double-buffered workgroup blocks of `variant.k_step()` k.
fn staged_loop(w: &mut String, coop: Coop, variant: CoopVariant) {
    let (kb, a_row, (a_block, b_block)) = (variant.k_step(), variant.a_row(), variant.blocks());
    let quads = kb / 4; // vec4s per row of A's block
    let loads = kb / 4; // vec4s of each block per invocation per k-block
    let a_rows = 128 / quads; // rows of A's block one vec4 per invocation covers
    let _ = writeln!(
        w,
        r#"        // This invocation's first vec4 of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 4u + (row0 + local / {quads}u) * k4 + local % {quads}u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 4u + (local / 32u) * n4 + column0 / 4u + local % 32u;"#
    );
    // The global loads of one k-block into registers a{p}, b{p}.
    let load = |w: &mut String, indent: &str, declare: &str, a_at: &str, b_at: &str| {
        for p in 0..loads {
            let _ = writeln!(
                w,
                "{indent}{declare}a{p} = matrix_a[{a_at} + {}u * k4];",
                p * a_rows
            );
        }
        for p in 0..loads {
            let _ = writeln!(
                w,
                "{indent}{declare}b{p} = matrix_b[{b_at} + {}u * n4];",
                p * 4
            );
        }
    };
    // The registers into the block copies starting at `a_at`, `b_at`.
    let store = |w: &mut String, indent: &str, a_at: &str, b_at: &str| {
        for p in 0..loads {
            for (lane, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(
                    w,
                    "{indent}tile_a[{a_at} + a_store + {}u] = a{p}.{component};",
                    p * a_rows * a_row + lane
                );
                let _ = writeln!(
                    w,
                    "{indent}tile_b[{b_at} + b_store + {}u] = b{p}.{component};",
                    p * 4 * B_ROW + lane
                );
            }
        }
    };
    let _ = writeln!(w, "        // k-block 0 into copy 0.");
    load(w, "        ", "var ", "a_start", "b_start");
    store(w, "        ", "0u", "0u");
    let _ = writeln!(
        w,
        r#"        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
            // Multiply out copy `step % 2` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * {a_block}u;
            let b_current = current * {b_block}u;
            let more = step + 1u < steps;
            if (more) {{
                let a_next = a_start + (step + 1u) * {quads}u;
                let b_next = b_start + (step + 1u) * {kb}u * n4;"#
    );
    load(w, "                ", "", "a_next", "b_next");
    let _ = writeln!(w, "            }}");
    for kk in 0..kb / 16 {
        let _ = writeln!(w, "            {{");
        for j in 0..4 {
            let start = format!("b_current + sub_column + {}u", kk * 16 * B_ROW + j * 16);
            let _ = writeln!(
                w,
                "                let fb{j} = {};",
                coop.load('B', "tile_b", &start, &format!("{B_ROW}u"))
            );
        }
        for i in 0..4 {
            let start = format!("a_current + a_fragment + {}u", i * 16 * a_row + kk * 16);
            let _ = writeln!(
                w,
                "                let fa{i} = {};",
                coop.load('A', "tile_a", &start, &format!("{a_row}u"))
            );
            for j in 0..4 {
                let _ = writeln!(
                    w,
                    "                c{i}{j} = {};",
                    coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"))
                );
            }
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(
        w,
        "            if (more) {{\n                let a_other = {a_block}u - a_current;\n                let b_other = {b_block}u - b_current;"
    );
    store(w, "                ", "a_other", "b_other");
    let _ = writeln!(
        w,
        "            }}\n            workgroupBarrier();\n        }}"
    );
}

/// The direct kernel's k-loop: fragments straight from the storage buffers, K-step 16.
fn direct_loop(w: &mut String, coop: Coop) {
    let _ = writeln!(
        w,
        r#"        // This subgroup's first element of A (row row0 + sub_row) and of B (column
        // column0 + sub_column) in batch b.
        let a_base = params.a_offset + b * params.a_batch_stride + (row0 + sub_row) * k;
        let b_base = params.b_offset + b * params.b_batch_stride + column0 + sub_column;
        for (var k0 = 0u; k0 < k; k0 = k0 + 16u) {{
            let a_at = a_base + k0;
            let b_at = b_base + k0 * n;"#
    );
    for j in 0..4 {
        let start = format!("b_at + {}u", j * 16);
        let _ = writeln!(
            w,
            "            let fb{j} = {};",
            coop.load('B', "matrix_b", &start, "n")
        );
    }
    for i in 0..4 {
        let start = format!("a_at + {}u * k", i * 16);
        let _ = writeln!(
            w,
            "            let fa{i} = {};",
            coop.load('A', "matrix_a", &start, "k")
        );
        for j in 0..4 {
            let _ = writeln!(
                w,
                "            c{i}{j} = {};",
                coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"))
            );
        }
    }
    let _ = writeln!(w, "        }}");
}

#[cfg(test)]
pub(crate) mod tests;
mod wide;
