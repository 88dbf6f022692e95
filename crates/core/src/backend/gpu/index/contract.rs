//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Indexing —
//! index_select, gather, scatter_add and index_add, in slices along a dim other than the indexed
//! one where a tensor exceeds one buffer.

use crate::backend::contract::Indexing;
use crate::backend::gpu::runtime::sliced::{first_wide_dim, Combine, Follow, Plan};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::{numel, with_size};

impl Indexing for GpuStorage {
    fn index_select(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        select_in_slices(
            self,
            layout,
            (indices, indices_layout),
            dim,
            GpuStorage::index_select,
        )
    }

    fn class_pick(
        &self,
        layout: &Layout,
        target: (&Self, &Layout),
        weight: Option<(&Self, &Layout)>,
        ignore: Option<i64>,
    ) -> Result<Self> {
        GpuStorage::class_pick(self, layout, target, weight, ignore)
    }

    fn class_pick_backward(
        &self,
        layout: &Layout,
        target: (&Self, &Layout),
        weight: Option<(&Self, &Layout)>,
        ignore: Option<i64>,
        classes: usize,
    ) -> Result<Self> {
        GpuStorage::class_pick_backward(self, layout, target, weight, ignore, classes)
    }

    fn index_select_wrapping(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        let select = GpuStorage::index_select_wrapping;
        select_in_slices(self, layout, (indices, indices_layout), dim, select)
    }

    fn gather(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        let output = indices_layout.shape.clone();
        indexing_plan(
            "gather",
            [(self, layout), (indices, indices_layout)],
            &output,
            dim,
            [false, false],
        )
        .run(|[(x, lx), (i, li)], _| GpuStorage::gather(x, lx, i, li, dim))
    }

    fn scatter_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        let output = layout.shape.clone();
        indexing_plan(
            "scatter_add",
            [(self, layout), (indices, indices_layout), (src, src_layout)],
            &output,
            dim,
            [false, false, false],
        )
        .run(|[(b, lb), (i, li), (s, ls)], _| GpuStorage::scatter_add(b, lb, i, li, s, ls, dim))
    }

    fn index_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self> {
        // Slices along a dim other than `dim` cut base and src alike; every slice reads all
        // the indices.
        let output = layout.shape.clone();
        indexing_plan(
            "index_add",
            [(self, layout), (indices, indices_layout), (src, src_layout)],
            &output,
            dim,
            [false, true, false],
        )
        .run(|[(b, lb), (i, li), (s, ls)], _| GpuStorage::index_add(b, lb, i, li, s, ls, dim))
    }
}

/// The plan of an indexing primitive whose output has `output_shape` and which picks along
/// `dim`: sliced along the output's first dim above size 1 when that is not `dim` (every
/// operand follows, except those in `whole`), whole otherwise.
fn indexing_plan<'a, const N: usize>(
    op: &'static str,
    operands: [(&'a GpuStorage, &'a Layout); N],
    output_shape: &[usize],
    dim: usize,
    whole_when_sliced: [bool; N],
) -> Plan<'a, N> {
    let total = numel(output_shape);
    match first_wide_dim(output_shape) {
        Some(wide) if wide != dim => Plan {
            op,
            operands: std::array::from_fn(|i| {
                let follow = if whole_when_sliced[i] {
                    Follow::Whole
                } else {
                    Follow::Sliced(wide)
                };
                (operands[i].0, operands[i].1, follow)
            }),
            rows: output_shape[wide],
            output_elements: total / output_shape[wide],
            combine: Combine::Concatenate,
            nests: false,
        },
        _ => Plan {
            op,
            operands: operands.map(|(storage, layout)| (storage, layout, Follow::Whole)),
            rows: 1,
            output_elements: total,
            combine: Combine::Concatenate,
            nests: false,
        },
    }
}

/// `select` (`index_select` or its wrapping twin) in slices along a dim other than `dim`
/// where the tensor exceeds one buffer.
fn select_in_slices(
    input: &GpuStorage,
    layout: &Layout,
    (indices, indices_layout): (&GpuStorage, &Layout),
    dim: usize,
    select: fn(&GpuStorage, &Layout, &GpuStorage, &Layout, usize) -> Result<GpuStorage>,
) -> Result<GpuStorage> {
    let output = with_size(&layout.shape, dim, indices_layout.numel());
    indexing_plan(
        "index_select",
        [(input, layout), (indices, indices_layout)],
        &output,
        dim,
        [false, true],
    )
    .run(|[(x, lx), (i, li)], _| select(x, lx, i, li, dim))
}
