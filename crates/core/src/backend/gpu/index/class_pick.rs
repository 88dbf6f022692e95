//! Kernel families `ClassPick` and `ClassPickBackward` (`Indexing::class_pick`): the fused
//! core of cross-entropy and NLL. One invocation per row reads its target, skips an ignored
//! one, checks the rest (an out-of-range class raises the dispatch's word of the index flags,
//! as `gather.wgsl` does) and writes the weighted score and the weight: one kernel where the
//! composite ops recorded a comparison, two casts, a multiply and a gather. The backward
//! writes the dense `[n, c]` gradient in one pass (one invocation per element). Products in
//! f32; `cpu/class_pick.rs` is the reference.

use crate::backend::checks::check_class_pick;
use crate::backend::gpu::index::kernel::IndexKernel;
use crate::backend::gpu::runtime::context::INDEX_SLOT_WORD;
use crate::backend::gpu::runtime::operands::{same_device, unsupported};
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{storage_type, value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

kernel_params! {
    /// Parameters of the `ClassPick` kernel.
    struct ClassPickParams {
        /// Rows (targets).
        rows: u32,
        /// Classes per row.
        classes: u32,
        /// The scores' first element.
        input_offset: u32,
        /// The targets' first element and stride.
        target_offset: u32,
        target_stride: u32,
        /// The weights' first element.
        weight_offset: u32,
        /// This dispatch's word of the index-flag buffer (set by the context).
        flag_slot: u32,
        /// 1 where targets equal to `ignore` are skipped.
        has_ignore: u32,
        ignore: i32,
    }
}

kernel_params! {
    /// Parameters of the `ClassPickBackward` kernel.
    struct ClassPickBackwardParams {
        /// Output elements (rows × classes).
        count: u32,
        /// Classes per row.
        classes: u32,
        /// The row gradient's first element.
        grad_offset: u32,
        /// The targets' first element and stride.
        target_offset: u32,
        target_stride: u32,
        /// The weights' first element.
        weight_offset: u32,
        /// 1 where targets equal to `ignore` are skipped.
        has_ignore: u32,
        ignore: i32,
    }
}

// The context writes the flag slot at word `INDEX_SLOT_WORD` of an index kernel's params.
const _: () = assert!(std::mem::offset_of!(ClassPickParams, flag_slot) == 4 * INDEX_SLOT_WORD);

/// The catalogue entries of both families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<IndexKernel>, dtype: DType, index_dtypes: &[DType]) {
    if !matches!(dtype, DType::F32 | DType::F16) {
        return;
    }
    for &index in index_dtypes {
        for weighted in [false, true] {
            keys.push(IndexKernel::ClassPick {
                dtype,
                index,
                weighted,
            });
            keys.push(IndexKernel::ClassPickBackward {
                dtype,
                index,
                weighted,
            });
        }
    }
}

/// The WGSL declarations both kernels share: the value type, the target and weight bindings
/// and `weight_of(class)`.
fn header(dtype: DType, index: DType, weighted: bool, params: &str, weight_binding: u32) -> String {
    let mut w = value_header(dtype);
    w.push_str(&format!("alias IX = {};\n", storage_type(index)));
    w.push_str(params);
    w.push_str(COMMON);
    w.push_str(
        "@group(0) @binding(2) var<storage, read> targets: array<IX>;
@group(0) @binding(3) var<storage, read_write> output: array<S>;
",
    );
    if weighted {
        w.push_str(&format!(
            "@group(0) @binding({weight_binding}) var<storage, read> weights: array<S>;
fn weight_of(picked_class: u32) -> f32 {{ return f32(load_value(weights[params.weight_offset + picked_class])); }}
"
        ));
    } else {
        w.push_str("fn weight_of(picked_class: u32) -> f32 { return 1.0; }\n");
    }
    w
}

/// WGSL of `IndexKernel::ClassPick`.
pub(crate) fn source(dtype: DType, index: DType, weighted: bool) -> String {
    let mut w = header(dtype, index, weighted, ClassPickParams::WGSL, 5);
    w.push_str(
        "@group(0) @binding(1) var<storage, read> scores: array<S>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.rows) {
        return;
    }
    let class_index = i32(targets[params.target_offset + i * params.target_stride]);
    var picked = 0.0;
    var weight = 0.0;
    if (params.has_ignore == 0u || class_index != params.ignore) {
        if (class_index < 0 || u32(class_index) >= params.classes) {
            atomicMax(&flag[params.flag_slot], 1u);
        } else {
            let picked_class = u32(class_index);
            weight = weight_of(picked_class);
            picked = weight * f32(load_value(scores[params.input_offset + i * params.classes + picked_class]));
        }
    }
    output[i] = store_value(T(picked));
    output[params.rows + i] = store_value(T(weight));
}
",
    );
    w
}

/// WGSL of `IndexKernel::ClassPickBackward`.
pub(crate) fn backward_source(dtype: DType, index: DType, weighted: bool) -> String {
    let mut w = header(dtype, index, weighted, ClassPickBackwardParams::WGSL, 4);
    w.push_str(
        "@group(0) @binding(1) var<storage, read> grad: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let e = linear_id(workgroup, workgroups, local);
    if (e >= params.count) {
        return;
    }
    let row = e / params.classes;
    let column = e % params.classes;
    let class_index = i32(targets[params.target_offset + row * params.target_stride]);
    var value = 0.0;
    let kept = params.has_ignore == 0u || class_index != params.ignore;
    if (kept && class_index >= 0 && u32(class_index) == column) {
        value = weight_of(column) * f32(load_value(grad[params.grad_offset + row]));
    }
    output[e] = store_value(T(value));
}
",
    );
    w
}

/// The ignored class as the kernels' `(has_ignore, ignore)`; an ignored class outside i32
/// can equal no target the GPU holds.
fn ignore_words(ignore: Option<i64>) -> (u32, i32) {
    match ignore.map(i32::try_from) {
        Some(Ok(value)) => (1, value),
        _ => (0, 0),
    }
}

impl GpuStorage {
    /// The operands of the pick (`classes` given: of its backward) checked as
    /// `check_class_pick` does, on one device and of a dtype the kernels take; `(n, c)`.
    fn check_pick(
        &self,
        layout: &Layout,
        (target, target_layout): (&GpuStorage, &Layout),
        weight: Option<(&GpuStorage, &Layout)>,
        classes: Option<usize>,
    ) -> Result<(usize, usize)> {
        const OP: &str = "class_pick";
        same_device(OP, self, target)?;
        if let Some((w, _)) = weight {
            same_device(OP, self, w)?;
        }
        let sizes = check_class_pick(
            (layout, self.len, self.dtype),
            (target_layout, target.len, target.dtype),
            weight.map(|(w, l)| (l, w.len, w.dtype)),
            classes,
        )?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        Ok(sizes)
    }

    /// `Indexing::class_pick`; `self` holds the `[n, c]` scores.
    pub fn class_pick(
        &self,
        layout: &Layout,
        (target, target_layout): (&GpuStorage, &Layout),
        weight: Option<(&GpuStorage, &Layout)>,
        ignore: Option<i64>,
    ) -> Result<GpuStorage> {
        const OP: &str = "class_pick";
        let (rows, classes) = self.check_pick(layout, (target, target_layout), weight, None)?;
        let out = GpuStorage::allocate(&self.device, OP, 2 * rows, self.dtype)?;
        if rows == 0 {
            return Ok(out);
        }
        let (has_ignore, ignore) = ignore_words(ignore);
        let header = ClassPickParams {
            rows: word(rows)?,
            classes: word(classes)?,
            input_offset: word(layout.offset)?,
            target_offset: word(target_layout.offset)?,
            target_stride: word(target_layout.strides[0])?,
            weight_offset: word(weight.map_or(0, |(_, l)| l.offset))?,
            flag_slot: 0, // filled in by the context
            has_ignore,
            ignore,
        };
        let key = IndexKernel::ClassPick {
            dtype: self.dtype,
            index: target.dtype,
            weighted: weight.is_some(),
        };
        let context = self.device.context();
        let mut buffers = vec![
            self.raw()?,
            target.raw()?,
            out.raw()?,
            context.index_flags(),
        ];
        if let Some((w, _)) = weight {
            buffers.push(w.raw()?);
        }
        GpuStorage::launch_checked(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            rows,
            Some(OP),
        )?;
        Ok(out)
    }

    /// `Indexing::class_pick_backward`; `self` holds the `[n]` gradient of the picked row.
    pub fn class_pick_backward(
        &self,
        layout: &Layout,
        (target, target_layout): (&GpuStorage, &Layout),
        weight: Option<(&GpuStorage, &Layout)>,
        ignore: Option<i64>,
        classes: usize,
    ) -> Result<GpuStorage> {
        const OP: &str = "class_pick";
        let (rows, classes) =
            self.check_pick(layout, (target, target_layout), weight, Some(classes))?;
        let count = rows.checked_mul(classes).ok_or_else(|| {
            Error::invalid(OP, format!("{rows} rows of {classes} classes overflow"))
        })?;
        let out = GpuStorage::allocate(&self.device, OP, count, self.dtype)?;
        if count == 0 {
            return Ok(out);
        }
        let (has_ignore, ignore) = ignore_words(ignore);
        let header = ClassPickBackwardParams {
            count: word(count)?,
            classes: word(classes)?,
            grad_offset: word(layout.offset)?,
            target_offset: word(target_layout.offset)?,
            target_stride: word(target_layout.strides[0])?,
            weight_offset: word(weight.map_or(0, |(_, l)| l.offset))?,
            has_ignore,
            ignore,
        };
        let key = IndexKernel::ClassPickBackward {
            dtype: self.dtype,
            index: target.dtype,
            weighted: weight.is_some(),
        };
        let mut buffers = vec![self.raw()?, target.raw()?, out.raw()?];
        if let Some((w, _)) = weight {
            buffers.push(w.raw()?);
        }
        GpuStorage::launch(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            count,
        )?;
        Ok(out)
    }
}
