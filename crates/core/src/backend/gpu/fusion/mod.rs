//! Elementwise fusion: chains of float elementwise ops become one kernel.
//!
//! An elementwise kernel is bound by memory traffic, not arithmetic: `a * b + a` run as two
//! kernels reads `a`, `b`, writes a temporary, reads it and `a` again and writes the result
//! (24 bytes per element in f32); one fused kernel reads `a` and `b` once and writes once (12
//! bytes). Small ops are also bound by the host cost of each dispatch. So float unary, binary
//! and scalar ops are not dispatched at once: the op returns a storage whose buffer is not
//! allocated yet and *defers* a description of itself in the context's recording
//! (`DeferredOp`).
//! Anything else that touches the recording — another kernel, a copy, a readback, a flush,
//! `synchronize` — first *drains* the deferred ops, so their order relative to all other work is
//! kept exactly and nothing can observe that they were late.
//!
//! At the drain (`plan`), an op whose output tensor has already been dropped (its storage token
//! is dead: no one can ever read it again) and that is read by exactly one later deferred op is
//! *inlined* into that reader: its output never gets memory and its expression is computed in
//! registers inside the reader's kernel. Every other op is a *root*: its buffer is allocated
//! when its kernel is recorded, and written. (Using a pending result — binding it to another
//! kernel, reading it back — drains first.)
//! A root's kernel is a small SSA program (`FusedProgram`: loads of up to `MAX_LEAVES` distinct
//! input views, then unary/binary/scalar instructions); programs are cached like every kernel,
//! keyed by their structure, with sizes, offsets and scalars passed as parameters, so a training
//! loop compiles each of its fused shapes once. Results equal the unfused ops' results: each
//! instruction evaluates the same WGSL expression as the single-op kernel, in the same order.
//!
//! Fusion is on by default; `ANYGRAD_FUSION=0` or `set_elementwise_fusion(false)` turns it off,
//! and it is off while the profiler records (so that every op is timed on its own).

pub(crate) mod kernel;
pub(crate) mod source;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};

use crate::backend::gpu::fusion::kernel::FusedKernel;
use crate::backend::gpu::fusion::source::FusedParams;
use crate::backend::gpu::runtime::buffers::BufferSlot;
use crate::backend::gpu::runtime::context::MAX_BINDINGS;
use crate::backend::gpu::runtime::context::MAX_WORKGROUPS;
use crate::backend::gpu::runtime::hooks::{
    DeferredPlanner, DeferredWork, ElementwiseRequest, PlannedKernel,
};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};

/// Most distinct input views of one fused kernel (with `params` and the output this stays
/// within the 8 storage buffers per shader stage that every wgpu adapter allows).
pub(crate) const MAX_LEAVES: usize = 6;

/// Most instructions (loads included) in one fused kernel.
pub(crate) const MAX_INSTRUCTIONS: usize = 48;

/// Deferred ops held before the recording drains them on its own.
pub(crate) const MAX_DEFERRED: usize = 128;

/// 0: not read from the environment yet; 1: on; 2: off.
static FUSION: AtomicU8 = AtomicU8::new(0);

/// Turn elementwise fusion on or off for every GPU (default on, or `ANYGRAD_FUSION`).
pub fn set_elementwise_fusion(enabled: bool) {
    FUSION.store(if enabled { 1 } else { 2 }, Ordering::Relaxed);
}

/// Whether float elementwise ops on a GPU are deferred and fused (see `set_elementwise_fusion`).
pub fn elementwise_fusion_enabled() -> bool {
    match FUSION.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let off = matches!(
                std::env::var("ANYGRAD_FUSION").as_deref().map(str::trim),
                Ok("0") | Ok("off") | Ok("false")
            );
            set_elementwise_fusion(!off);
            !off
        }
    }
}

/// One instruction of a fused program; operands are indices of earlier instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FusedInstruction {
    /// Read input view `leaf` at the element's position.
    Load {
        /// Index of the input binding.
        leaf: u8,
    },
    /// `op(x)`.
    Unary {
        /// The op.
        op: UnaryOp,
        /// Operand instruction.
        x: u16,
    },
    /// `op(a, b)`.
    Binary {
        /// The op.
        op: BinaryOp,
        /// Left operand instruction.
        a: u16,
        /// Right operand instruction.
        b: u16,
    },
    /// `op(x, s)`, or `op(s, x)` when `on_left`; `s` is scalar parameter `scalar`.
    Scalar {
        /// The op.
        op: BinaryOp,
        /// Operand instruction.
        x: u16,
        /// Index of the scalar parameter.
        scalar: u8,
        /// Whether the scalar is the left operand.
        on_left: bool,
    },
}

/// The structure of a fused elementwise kernel (its cache key): the last instruction's value is
/// written to the output.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FusedProgram {
    /// Element type of every input and of the output (F32 or F16; computed in f32).
    pub dtype: DType,
    /// Whether the kernel moves `vec4`s (element count and every contiguous input's offset
    /// are multiples of 4; every strided input is a broadcast along its innermost dim, read
    /// once per vec4 and splat, or has contiguous rows of a multiple of 4 elements, read as
    /// four neighbours).
    pub vector: bool,
    /// Per input binding: 0 for a contiguous view, else the rank of a strided view (read
    /// through its shape and strides, e.g. a broadcast per-channel statistic).
    pub leaf_ranks: Vec<u8>,
    /// Per input binding: a strided view whose innermost stride is 1 (a bias broadcast over
    /// rows, an attention mask over heads and queries); in a vector kernel its four lanes
    /// are four consecutive elements rather than one splat.
    pub leaf_rows: Vec<bool>,
    /// Number of scalar parameters.
    pub scalars: u8,
    /// The SSA program.
    pub instructions: Vec<FusedInstruction>,
}

/// What a deferred op computes from its input (and, for binary ops, a second input).
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Unary(UnaryOp),
    Binary {
        op: BinaryOp,
        rhs: Operand,
    },
    Scalar {
        op: BinaryOp,
        on_left: bool,
        bits: u32,
    },
}

/// An input view: its buffer, the loan that owns it, its first element, and for a view that
/// is not contiguous its shape and strides.
#[derive(Debug, Clone)]
pub(crate) struct Operand {
    pub(crate) slot: BufferSlot,
    pub(crate) loan: u64,
    pub(crate) offset: usize,
    pub(crate) strided: Option<(Vec<usize>, Vec<usize>)>,
}

impl Operand {
    fn same_view(&self, other: &Operand) -> bool {
        self.loan == other.loan && self.offset == other.offset && self.strided == other.strided
    }

    /// Whether this reads a whole contiguous buffer from its start (what inlining replaces).
    fn is_whole(&self) -> bool {
        self.offset == 0 && self.strided.is_none()
    }
}

/// Highest rank of a strided input view that a fused kernel reads.
const MAX_STRIDED_RANK: usize = 6;

/// An elementwise op recorded but not yet dispatched.
#[derive(Debug)]
pub(crate) struct DeferredOp {
    pub(crate) step: Step,
    pub(crate) input: Operand,
    /// Filled (allocated) only if the op becomes a kernel of its own.
    pub(crate) output: BufferSlot,
    pub(crate) output_bytes: u64,
    pub(crate) output_loan: u64,
    /// Upgrades while the output tensor exists.
    pub(crate) output_alive: Weak<u64>,
    pub(crate) count: usize,
    pub(crate) dtype: DType,
}

impl DeferredOp {
    /// The input views, in operand order.
    fn operands(&self) -> impl Iterator<Item = &Operand> {
        let rhs = match &self.step {
            Step::Binary { rhs, .. } => Some(rhs),
            Step::Unary(_) | Step::Scalar { .. } => None,
        };
        std::iter::once(&self.input).chain(rhs)
    }
}

fn operand(storage: &GpuStorage, layout: &Layout) -> Operand {
    Operand {
        slot: Arc::clone(&storage.slot),
        loan: storage.loan_id(),
        offset: layout.offset,
        strided: if layout.is_contiguous() {
            None
        } else {
            simplify_view(&layout.shape, &layout.strides)
        },
    }
}

/// The fewest dims that address the same elements in the same order as the view `shape`,
/// `strides` (row-major over the shape), so that a kernel decomposes each index over fewer
/// sizes: dims of size 1 are dropped, neighbours `d, d + 1` with
/// `strides[d] == strides[d + 1] * shape[d + 1]` are merged (a broadcast per-channel vector
/// `[n, c, h, w]` with strides `[0, 1, 0, 0]` becomes `[c, h·w]`, `[1, 0]`), and outer dims of
/// stride 0 are dropped (they add nothing to the position). `None` when the view reads
/// `shape`'s element count contiguously.
pub(crate) fn simplify_view(
    shape: &[usize],
    strides: &[usize],
) -> Option<(Vec<usize>, Vec<usize>)> {
    let (mut sizes, mut steps) = crate::layout::merge_dims(shape, strides);
    while steps.len() > 1 && steps[0] == 0 {
        sizes.remove(0);
        steps.remove(0);
    }
    let count: usize = shape.iter().product();
    match (sizes.as_slice(), steps.as_slice()) {
        ([], _) => Some((vec![1], vec![0])),
        // Contiguous only when no outer dim was dropped: `[4, 5]` with strides `[0, 1]`
        // leaves `[5]`, `[1]`, which still wraps every 5 elements.
        ([size], [1]) if *size == count => None,
        _ => Some((sizes, steps)),
    }
}

/// Whether a fused kernel can read this view.
fn readable(layout: &Layout) -> bool {
    layout.is_contiguous() || layout.rank() <= MAX_STRIDED_RANK
}

/// Defer `request` on `input` (and `rhs` for a binary op) when it can be fused: float data
/// (F32 or F16), contiguous views, a float result, fusion on and the profiler off. Returns the
/// output storage (allocated now, written when the recording drains), or `None` when the op
/// must be dispatched as usual. The operands have been checked by the caller.
pub(crate) fn defer(
    op_name: &'static str,
    input: (&GpuStorage, &Layout),
    request: ElementwiseRequest,
    rhs: Option<(&GpuStorage, &Layout)>,
) -> Result<Option<GpuStorage>> {
    let (storage, layout) = input;
    let numel = layout.numel();
    let float = matches!(storage.dtype, DType::F32 | DType::F16);
    let comparison = match request {
        ElementwiseRequest::Unary(_) => false,
        ElementwiseRequest::Binary(op) | ElementwiseRequest::Scalar { op, .. } => {
            op.is_comparison()
        }
    };
    let views = readable(layout) && rhs.is_none_or(|(_, rhs_layout)| readable(rhs_layout));
    if !float
        || comparison
        || !views
        || numel == 0
        || numel > u32::MAX as usize
        || !elementwise_fusion_enabled()
        || crate::profile_flag::is_active()
    {
        return Ok(None);
    }
    let step = match (request, rhs) {
        (ElementwiseRequest::Unary(op), None) => Step::Unary(op),
        (ElementwiseRequest::Binary(op), Some((rhs, rhs_layout))) => Step::Binary {
            op,
            rhs: operand(rhs, rhs_layout),
        },
        (ElementwiseRequest::Scalar { op, on_left, bits }, None) => {
            Step::Scalar { op, on_left, bits }
        }
        // A binary request without its second input (or the reverse): dispatch as usual.
        (ElementwiseRequest::Unary(_) | ElementwiseRequest::Scalar { .. }, Some(_))
        | (ElementwiseRequest::Binary(_), None) => return Ok(None),
    };
    let output = GpuStorage::deferred(&storage.device, op_name, numel, storage.dtype)?;
    storage.device.context().defer(Box::new(DeferredOp {
        step,
        input: operand(storage, layout),
        output: Arc::clone(&output.slot),
        output_bytes: output.byte_len(),
        output_loan: output.loan_id(),
        output_alive: output.liveness(),
        count: numel,
        dtype: storage.dtype,
    }))?;
    Ok(Some(output))
}

/// A program being built for one root, with the views it loads.
struct Fragment {
    leaves: Vec<Operand>,
    scalars: Vec<u32>,
    instructions: Vec<FusedInstruction>,
    /// Value of each inlined producer (by its output loan), for operands that read it twice.
    inlined: HashMap<u64, u16>,
    count: usize,
    dtype: DType,
    output: BufferSlot,
    output_bytes: u64,
}

impl Fragment {
    fn new(op: &DeferredOp) -> Fragment {
        Fragment {
            leaves: Vec::new(),
            scalars: Vec::new(),
            instructions: Vec::new(),
            inlined: HashMap::new(),
            count: op.count,
            dtype: op.dtype,
            output: Arc::clone(&op.output),
            output_bytes: op.output_bytes,
        }
    }

    fn push(&mut self, instruction: FusedInstruction) -> u16 {
        self.instructions.push(instruction);
        (self.instructions.len() - 1) as u16
    }

    fn leaf_index(&self, operand: &Operand) -> Option<usize> {
        self.leaves.iter().position(|leaf| leaf.same_view(operand))
    }

    /// The value of a load of `operand` (one load per distinct view).
    fn load(&mut self, operand: &Operand) -> u16 {
        let leaf = match self.leaf_index(operand) {
            Some(leaf) => leaf,
            None => {
                self.leaves.push(operand.clone());
                self.leaves.len() - 1
            }
        };
        let existing = self.instructions.iter().position(
            |instruction| matches!(instruction, FusedInstruction::Load { leaf: l } if *l as usize == leaf),
        );
        match existing {
            Some(index) => index as u16,
            None => self.push(FusedInstruction::Load { leaf: leaf as u8 }),
        }
    }

    /// Whether `other` fits into this fragment within the limits, keeping room for one more
    /// input (the other operand of the op being built).
    fn can_absorb(&self, other: &Fragment) -> bool {
        let new_leaves = other
            .leaves
            .iter()
            .filter(|leaf| self.leaf_index(leaf).is_none())
            .count();
        self.leaves.len() + new_leaves < MAX_LEAVES
            && self.instructions.len() + other.instructions.len() < MAX_INSTRUCTIONS
            && self.scalars.len() + other.scalars.len() <= u8::MAX as usize
    }

    /// Append `other`'s program; returns the value of its result.
    fn absorb(&mut self, other: Fragment) -> u16 {
        let mut map: Vec<u16> = Vec::with_capacity(other.instructions.len());
        for instruction in &other.instructions {
            let value = match *instruction {
                FusedInstruction::Load { leaf } => self.load(&other.leaves[leaf as usize]),
                FusedInstruction::Unary { op, x } => self.push(FusedInstruction::Unary {
                    op,
                    x: map[x as usize],
                }),
                FusedInstruction::Binary { op, a, b } => self.push(FusedInstruction::Binary {
                    op,
                    a: map[a as usize],
                    b: map[b as usize],
                }),
                FusedInstruction::Scalar {
                    op,
                    x,
                    scalar,
                    on_left,
                } => {
                    self.scalars.push(other.scalars[scalar as usize]);
                    self.push(FusedInstruction::Scalar {
                        op,
                        x: map[x as usize],
                        scalar: (self.scalars.len() - 1) as u8,
                        on_left,
                    })
                }
            };
            map.push(value);
        }
        map.last().copied().unwrap_or(0)
    }

    /// The kernel that computes this fragment into its output.
    fn kernel(self) -> PlannedKernel {
        // A vector kernel reads contiguous inputs as vec4s, and strided inputs whose innermost
        // dim is a broadcast (stride 0) of a multiple of 4 elements as one element splat over
        // the four lanes (four neighbours share their position).
        // Strided inputs with contiguous rows of a multiple of 4 elements are read as four
        // neighbours (the lanes of a vec4 never straddle two rows).
        let vector = self.count.is_multiple_of(4)
            && self.leaves.iter().all(|leaf| match &leaf.strided {
                None => leaf.offset.is_multiple_of(4),
                Some((shape, strides)) => match strides.last() {
                    Some(0) => {
                        shape.len() == 1 || shape.last().is_some_and(|s| s.is_multiple_of(4))
                    }
                    Some(1) => shape.last().is_some_and(|s| s.is_multiple_of(4)),
                    _ => false,
                },
            });
        let unit = if vector { 4 } else { 1 };
        let units = self.count / unit;
        let mut params = Vec::with_capacity(1 + 3 * self.leaves.len() + self.scalars.len());
        // The header, then per input: offset, then (strided views) shape and strides; see
        // `fusion/source.rs`.
        let header = FusedParams {
            units: units as u32,
        };
        params.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&header)));
        for leaf in &self.leaves {
            // Strided inputs are addressed in elements; contiguous ones in units.
            let offset_unit = if leaf.strided.is_some() { 1 } else { unit };
            params.push((leaf.offset / offset_unit) as u32);
            if let Some((shape, strides)) = &leaf.strided {
                params.extend(shape.iter().map(|&size| size as u32));
                params.extend(strides.iter().map(|&stride| stride as u32));
            }
        }
        params.extend(&self.scalars);
        let inputs: Vec<BufferSlot> = self.leaves.iter().map(|l| Arc::clone(&l.slot)).collect();
        let program = FusedProgram {
            dtype: self.dtype,
            vector,
            leaf_ranks: self
                .leaves
                .iter()
                .map(|leaf| {
                    leaf.strided
                        .as_ref()
                        .map_or(0, |(shape, _)| shape.len() as u8)
                })
                .collect(),
            leaf_rows: self
                .leaves
                .iter()
                .map(|leaf| {
                    leaf.strided
                        .as_ref()
                        .is_some_and(|(_, strides)| strides.last() == Some(&1))
                })
                .collect(),
            scalars: self.scalars.len() as u8,
            instructions: self.instructions,
        };
        PlannedKernel {
            key: Box::new(FusedKernel {
                program: Arc::new(program),
            }),
            params,
            inputs,
            output: self.output,
            output_bytes: self.output_bytes,
            // Each invocation handles `UNROLL` units per trip (`fusion/source.rs`).
            workgroups: units
                .div_ceil(256 * crate::backend::gpu::fusion::source::UNROLL)
                .clamp(1, MAX_WORKGROUPS as usize) as u32,
        }
    }
}

/// Turn deferred ops (in recording order) into the kernels to dispatch, in order.
/// Fusion as the runtime's planner of deferred work (`runtime/hooks.rs`): the recording
/// keeps at most [`MAX_DEFERRED`] ops and hands them to [`plan`] at each drain.
pub(crate) struct FusionPlanner;

/// The planner `backend/gpu/mod.rs` registers with every context.
pub(crate) static PLANNER: FusionPlanner = FusionPlanner;

impl DeferredPlanner for FusionPlanner {
    fn defer(
        &self,
        op_name: &'static str,
        input: (&GpuStorage, &Layout),
        request: ElementwiseRequest,
        rhs: Option<(&GpuStorage, &Layout)>,
    ) -> Result<Option<GpuStorage>> {
        defer(op_name, input, request, rhs)
    }

    fn capacity(&self) -> usize {
        MAX_DEFERRED
    }

    fn plan(&self, ops: Vec<DeferredWork>) -> Vec<PlannedKernel> {
        // Only `defer` above defers work, always a `DeferredOp`.
        plan(
            ops.into_iter()
                .filter_map(|op| op.downcast::<DeferredOp>().ok().map(|op| *op))
                .collect(),
        )
    }
}

/// Kernels bind their parameters, at most [`MAX_LEAVES`] inputs and their output.
const _: () = assert!(MAX_BINDINGS >= 2 + MAX_LEAVES);

pub(crate) fn plan(ops: Vec<DeferredOp>) -> Vec<PlannedKernel> {
    // How many distinct deferred ops read each loan.
    let mut readers: HashMap<u64, usize> = HashMap::new();
    for op in &ops {
        let mut seen: Vec<u64> = Vec::with_capacity(2);
        for operand in op.operands() {
            if !seen.contains(&operand.loan) {
                seen.push(operand.loan);
                *readers.entry(operand.loan).or_insert(0) += 1;
            }
        }
    }
    let mut kernels = Vec::new();
    // Producers waiting to be inlined into their one reader, by output loan.
    let mut waiting: HashMap<u64, Fragment> = HashMap::new();
    for op in ops {
        let mut fragment = Fragment::new(&op);
        let mut values: Vec<u16> = Vec::with_capacity(2);
        for operand in op.operands() {
            if let Some(&value) = fragment.inlined.get(&operand.loan) {
                values.push(value);
                continue;
            }
            // Inlining replaces every read of the producer's buffer by this op, so all of
            // them must be whole-buffer reads.
            let whole = op
                .operands()
                .all(|other| other.loan != operand.loan || other.is_whole());
            let value = match waiting.remove(&operand.loan) {
                Some(producer)
                    if whole
                        && producer.count == op.count
                        && producer.dtype == op.dtype
                        && fragment.can_absorb(&producer) =>
                {
                    let value = fragment.absorb(producer);
                    fragment.inlined.insert(operand.loan, value);
                    value
                }
                Some(producer) => {
                    // Cannot be inlined here after all: write it, then read it.
                    kernels.push(producer.kernel());
                    fragment.load(operand)
                }
                None => fragment.load(operand),
            };
            values.push(value);
        }
        let first = values.first().copied().unwrap_or(0);
        let instruction = match &op.step {
            Step::Unary(unary) => FusedInstruction::Unary {
                op: *unary,
                x: first,
            },
            Step::Binary { op: binary, .. } => FusedInstruction::Binary {
                op: *binary,
                a: first,
                b: values.get(1).copied().unwrap_or(first),
            },
            Step::Scalar { op, on_left, bits } => {
                fragment.scalars.push(*bits);
                FusedInstruction::Scalar {
                    op: *op,
                    x: first,
                    scalar: (fragment.scalars.len() - 1) as u8,
                    on_left: *on_left,
                }
            }
        };
        fragment.push(instruction);
        let dead = op.output_alive.upgrade().is_none();
        if dead && readers.get(&op.output_loan) == Some(&1) {
            waiting.insert(op.output_loan, fragment);
        } else {
            kernels.push(fragment.kernel());
        }
    }
    // Every waiting producer has a later reader in the batch; this only guards the invariant.
    kernels.extend(waiting.into_values().map(Fragment::kernel));
    kernels
}

/// Programs that use every fusable op, for the naga validation of every kernel.
pub(crate) fn sample_programs() -> Vec<FusedProgram> {
    let mut programs = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for vector in [false, true] {
            let mut instructions = vec![
                FusedInstruction::Load { leaf: 0 },
                FusedInstruction::Load { leaf: 1 },
            ];
            for op in UnaryOp::ALL {
                let x = (instructions.len() - 1) as u16;
                instructions.push(FusedInstruction::Unary { op, x });
            }
            for op in BinaryOp::ALL
                .into_iter()
                .filter(|op| !op.is_comparison() && !op.is_bitwise())
            {
                let a = (instructions.len() - 1) as u16;
                instructions.push(FusedInstruction::Binary { op, a, b: 1 });
                for on_left in [false, true] {
                    let x = (instructions.len() - 1) as u16;
                    instructions.push(FusedInstruction::Scalar {
                        op,
                        x,
                        scalar: on_left as u8,
                        on_left,
                    });
                }
            }
            programs.push(FusedProgram {
                dtype,
                vector,
                leaf_ranks: vec![0, 4],
                leaf_rows: vec![false, vector],
                scalars: 2,
                instructions,
            });
        }
    }
    programs
}

#[cfg(test)]
mod tests {
    use super::simplify_view;

    #[test]
    fn views_simplify_to_the_fewest_dims() {
        // A per-channel statistic broadcast over [n, c, h, w].
        assert_eq!(
            simplify_view(&[2, 3, 4, 5], &[0, 1, 0, 0]),
            Some((vec![3, 20], vec![1, 0]))
        );
        // A row vector broadcast over rows still wraps every row.
        assert_eq!(simplify_view(&[4, 5], &[0, 1]), Some((vec![5], vec![1])));
        assert_eq!(simplify_view(&[1, 4, 5], &[7, 5, 1]), None);
        // A transpose stays as it is.
        assert_eq!(
            simplify_view(&[6, 6], &[1, 6]),
            Some((vec![6, 6], vec![1, 6]))
        );
        // Size-1 dims with any stride vanish; a contiguous remainder is no view at all.
        assert_eq!(simplify_view(&[1, 8, 1], &[99, 1, 7]), None);
        // A scalar broadcast everywhere reads one element.
        assert_eq!(simplify_view(&[3, 4], &[0, 0]), Some((vec![12], vec![0])));
        // Every element of the original view maps to the same storage position.
        let (shape, strides) = ([2, 3, 2, 4], [0, 8, 4, 1]);
        let (small_shape, small_strides) =
            simplify_view(&shape, &strides).unwrap_or((vec![48], vec![1]));
        let position = |linear: usize, shape: &[usize], strides: &[usize]| {
            let mut remaining = linear;
            let mut position = 0;
            for (size, stride) in shape.iter().zip(strides).rev() {
                position += (remaining % size) * stride;
                remaining /= size;
            }
            position
        };
        for linear in 0..48 {
            assert_eq!(
                position(linear, &shape, &strides),
                position(linear, &small_shape, &small_strides)
            );
        }
    }
}
