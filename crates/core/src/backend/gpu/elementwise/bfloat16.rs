//! The BF16 conversions: the only kernels that read or write BF16 data, which the GPU stores
//! two elements to a u32 word (`runtime/wgsl.rs`). `convert_into` (the elementwise family's
//! copy and cast) sends here every copy whose source or destination is BF16: a BF16 view
//! widened into F32, an F32 or BF16 view written into a dense BF16 storage a word at a time,
//! or into any BF16 view a half word at a time (atomics, so neighbours never race); other
//! dtypes pass through F32 on the way. Every other op on BF16 data runs in f32: `storage.rs`
//! widens the operands with these kernels and rounds the result back with them.

use super::{elementwise_params, Access};
use crate::backend::gpu::elementwise::kernel::ElementwiseKernel;
use crate::backend::gpu::elementwise::ElementwiseParams;
use crate::backend::gpu::runtime::params::{is_dense, KernelParams};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{COMMON, STRIDED};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

const TEMPLATE: &str = include_str!("../shaders/bfloat16.wgsl");

/// How a BF16 conversion kernel writes its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Bfloat16Write {
    /// An F32 destination (from BF16), one invocation per element.
    Float32,
    /// A dense BF16 destination starting at element 0, one invocation per u32 word.
    Words,
    /// A BF16 destination of any view, one invocation per element (atomic half words).
    Halves,
}

impl Bfloat16Write {
    fn marker(self) -> &'static str {
        match self {
            Bfloat16Write::Float32 => "#ifdef_write_f32",
            Bfloat16Write::Words => "#ifdef_write_words",
            Bfloat16Write::Halves => "#ifdef_write_halves",
        }
    }
}

/// The `(from, write)` pairs that have a kernel: BF16 into F32, and F32 or BF16 into BF16.
pub(crate) const CONVERSIONS: [(DType, Bfloat16Write); 5] = [
    (DType::BF16, Bfloat16Write::Float32),
    (DType::F32, Bfloat16Write::Words),
    (DType::BF16, Bfloat16Write::Words),
    (DType::F32, Bfloat16Write::Halves),
    (DType::BF16, Bfloat16Write::Halves),
];

/// WGSL of `ElementwiseKernel::Bfloat16`: the template with the blocks of `write` kept.
pub(crate) fn source(from: DType, write: Bfloat16Write, access: Access) -> String {
    let load = if from == DType::BF16 {
        "alias SI = u32;\nfn load_bits(position: u32) -> u32 {\n    \
         return (source[position >> 1u] >> ((position & 1u) * 16u)) & 0xffffu;\n}\n"
    } else {
        "alias SI = u32;\nfn load_bits(position: u32) -> u32 {\n    \
         return round_to_bfloat16(source[position]);\n}\n"
    };
    let mut text = String::from(load);
    text.push_str(&format!(
        "const CONTIGUOUS: bool = {};\n",
        access != Access::Strided
    ));
    text.push_str(ElementwiseParams::WGSL);
    text.push_str(COMMON);
    text.push_str(STRIDED);
    let mut kept = true;
    for line in TEMPLATE.lines() {
        if line.starts_with("#ifdef_") {
            kept = line == write.marker();
        } else if line == "#endif" {
            kept = true;
        } else if kept {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// Copy the view `layout` of `source` (F32 or BF16) into the view `destination_layout` of
/// `destination` (BF16 from F32 or BF16, or F32 from BF16), rounding f32 to nearest even.
pub(crate) fn convert(
    source: &GpuStorage,
    layout: &Layout,
    destination: &GpuStorage,
    destination_layout: &Layout,
) -> Result<()> {
    let numel = layout.numel();
    let write = match (source.dtype, destination.dtype) {
        (DType::BF16, DType::F32) => Bfloat16Write::Float32,
        (DType::F32 | DType::BF16, DType::BF16) => {
            // Whole words only where the view is the whole destination: a word's other half
            // would otherwise belong to another element.
            if is_dense(destination_layout)
                && destination_layout.offset == 0
                && numel == destination.len
            {
                Bfloat16Write::Words
            } else {
                Bfloat16Write::Halves
            }
        }
        (from, to) => {
            return Err(Error::invalid(
                "cast",
                format!("internal: no bfloat16 kernel converts {from} to {to}"),
            ))
        }
    };
    let access = if is_dense(layout) && is_dense(destination_layout) {
        Access::Contiguous
    } else {
        Access::Strided
    };
    let key = ElementwiseKernel::Bfloat16 {
        from: source.dtype,
        write,
        access,
    };
    let params = elementwise_params(numel, layout, &[layout, destination_layout])?;
    let invocations = match write {
        Bfloat16Write::Words => numel.div_ceil(2),
        Bfloat16Write::Float32 | Bfloat16Write::Halves => numel,
    };
    GpuStorage::launch(
        &source.device,
        &key,
        &params,
        &[source.raw()?, destination.raw()?],
        invocations,
    )
}
