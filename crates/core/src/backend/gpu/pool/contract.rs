//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Pooling — max
//! pooling and its gradient, in image slices where a tensor exceeds one buffer.

use crate::backend::contract::Pooling;
use crate::backend::gpu::runtime::sliced::{Combine, Follow, Plan};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::geometry::Window;
use crate::layout::Layout;
use crate::layout::MemoryFormat;
use crate::shape::numel;

impl Pooling for GpuStorage {
    fn max_pool2d(&self, layout: &Layout, window: &Window, format: MemoryFormat) -> Result<Self> {
        // Image slices: each image pools on its own.
        let (h, w) = window.output_size(
            "max_pool2d",
            layout.shape.get(2).copied().unwrap_or(1),
            layout.shape.get(3).copied().unwrap_or(1),
        )?;
        Plan {
            op: "max_pool2d",
            operands: [(self, layout, Follow::Sliced(0))],
            rows: layout.shape.first().copied().unwrap_or(1),
            output_elements: layout.shape.get(1).copied().unwrap_or(1) * h * w,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, l)], _| GpuStorage::max_pool2d(x, l, window, format))
    }

    fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &Self,
        output_layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<Self> {
        // Image slices: an image's input gradient needs only that image's operands (each
        // slice's gradient dense in the whole input's format: concatenated over images, it is).
        let format = MemoryFormat::of(layout);
        Plan {
            op: "max_pool2d_backward",
            operands: [
                (self, layout, Follow::Sliced(0)),
                (output, output_layout, Follow::Sliced(0)),
                (grad, grad_layout, Follow::Sliced(0)),
            ],
            rows: layout.shape.first().copied().unwrap_or(1),
            output_elements: numel(layout.shape.get(1..).unwrap_or(&[])),
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(x, lx), (y, ly), (g, lg)], _| {
            GpuStorage::max_pool2d_backward(x, lx, (y, ly), (g, lg), window, format)
        })
    }
}
