//! Kernel family `CopyTranspose`: the dense copy of a view that is a batch of transposed
//! matrices — after merging dims (`layout::merge_dims`), `[batch, rows, columns]` (or
//! `[rows, columns]`) with the rows' stride 1 — through 64 x 64 tiles in workgroup memory, so
//! that both the reads (along the source's contiguous dim) and the writes (along the
//! destination's) are coalesced. The generic strided copy reads such a view with a stride
//! between neighbouring invocations: one 32-byte memory sector per element. Channels-last
//! copies of `[n, c, h, w]` activations (`conv/nhwc.rs`) and dense copies of transposed
//! weights are such views.
//!
//! Params: [`CopyTransposeParams`]; grid: (column tiles, row tiles, batch), 256 invocations
//! (32 x 8) per 64 x 64 tile, each moving sixteen elements. Every read and write is clamped
//! to its buffer and every store checked against the matrix.

use crate::backend::gpu::copy::kernel::CopyKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::{merge_dims, Layout};

/// Edge of a tile.
const TILE: usize = 64;

/// The smallest rows and columns worth a tile (below, the generic strided copy).
const MIN_EDGE: usize = 32;

kernel_params! {
    /// Parameters of the transposing copy.
    struct CopyTransposeParams {
        /// Rows of each matrix (the destination's second-to-last merged dim; stride 1 in the
        /// source).
        rows: u32,
        /// Columns of each matrix (contiguous in the destination).
        columns: u32,
        /// Matrices.
        batch: u32,
        /// The source's stride between columns.
        column_stride: u32,
        /// The source's stride between matrices.
        batch_stride: u32,
        /// The source view's offset.
        source_offset: u32,
        /// The destination's offset.
        destination_offset: u32,
    }
}

/// WGSL of `CopyKernel::CopyTranspose` (`paired` for 2-byte types: [`paired_source`]): a
/// [`TILE`] x [`TILE`] tile per workgroup, 16 elements
/// per invocation, generated unrolled so that every invocation issues its 16 loads before its
/// first store (one element per invocation, or a loop of dependent steps, measured at a
/// quarter of the bandwidth on an H200).
pub(crate) fn source(dtype: DType, paired: bool) -> String {
    if paired && dtype.size_in_bytes() == 2 {
        return paired_source();
    }
    use std::fmt::Write;
    let mut text = value_header(dtype);
    text.push_str(CopyTransposeParams::WGSL);
    text.push_str(COMMON);
    let padded = TILE + 1;
    text.push_str(&kernel_start(
        "S",
        TILE * padded,
        &format!("[column][row] as read (rows padded to {padded} against bank conflicts)"),
    ));
    let _ = write!(
        text,
        "    let base = params.source_offset + batch * params.batch_stride;
    let source_last = arrayLength(&source) - 1u;
    // Read: lanes along the rows (stride 1 in the source); positions past the matrix read a
    // clamped element that is never stored.
"
    );
    let reads: Vec<(usize, usize)> = (0..TILE / 8)
        .flat_map(|i| (0..TILE / 32).map(move |h| (i, h)))
        .collect();
    for (index, (i, h)) in reads.iter().enumerate() {
        let _ = writeln!(
            text,
            "    let read{index} = source[min(base + (column0 + group + {column}u) * params.column_stride + row0 + lane + {row}u, source_last)];",
            column = 8 * i,
            row = 32 * h
        );
    }
    for (index, (i, h)) in reads.iter().enumerate() {
        let _ = writeln!(
            text,
            "    if (row0 + lane + {row}u < params.rows && column0 + group + {column}u < params.columns) {{\n        \
             tile[(group + {column}u) * {padded}u + lane + {row}u] = read{index};\n    }}",
            column = 8 * i,
            row = 32 * h
        );
    }
    text.push_str(
        "    workgroupBarrier();
    // Write: lanes along the columns (contiguous in the destination).
    let destination_last = arrayLength(&destination) - 1u;
    let matrix = params.destination_offset + batch * params.rows * params.columns;
",
    );
    for (i, h) in &reads {
        let _ = writeln!(
            text,
            "    if (row0 + group + {row}u < params.rows && column0 + lane + {column}u < params.columns) {{\n        \
             destination[min(matrix + (row0 + group + {row}u) * params.columns + column0 + lane + {column}u, destination_last)] = \
             tile[(lane + {column}u) * {padded}u + group + {row}u];\n    }}",
            row = 8 * i,
            column = 32 * h
        );
    }
    text.push_str("}\n");
    text
}

/// The start both kernels share: the bindings as arrays of `element`, the workgroup tile of
/// `tile_size` elements (`tile` says how it is laid out), and the tile's coordinates, lane and
/// group of `main`.
fn kernel_start(element: &str, tile_size: usize, tile: &str) -> String {
    format!(
        "@group(0) @binding(1) var<storage, read> source: array<{element}>;
@group(0) @binding(2) var<storage, read_write> destination: array<{element}>;
// One {TILE} x {TILE} tile, {tile}.
var<workgroup> tile: array<{element}, {tile_size}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {{
    let batch = workgroup.z;
    let row0 = workgroup.y * {TILE}u;
    let column0 = workgroup.x * {TILE}u;
    let lane = local % 32u;
    let group = local / 32u;
"
    )
}

/// WGSL of `CopyKernel::CopyTranspose { paired: true }`: the F16 copy moving two halves per
/// 4-byte access, for views whose rows, columns, strides and offsets are even. The source is
/// read as pairs of rows (consecutive in it), the destination written as pairs of columns; the
/// [`TILE`] x [`TILE`] tile holds the read pairs (`[column][row pair]`, rows padded by one
/// word), and each written word takes its two halves from two tile words by bit operations,
/// so every value is copied bit for bit. Every lane of a subgroup reads or writes 4
/// consecutive bytes: one 128-byte line per instruction, half the instructions of the
/// one-element kernel.
fn paired_source() -> String {
    use std::fmt::Write;
    let mut text = String::from(CopyTransposeParams::WGSL);
    let pairs = TILE / 2;
    let padded = pairs + 1;
    text.push_str(&kernel_start(
        "u32",
        TILE * padded,
        &format!("of halves as [column][row pair] words (rows padded to {padded})"),
    ));
    let _ = write!(
        text,
        "    // Offsets and strides are even (`copy_transpose_into` checked): halves / 2 are words.
    let base = (params.source_offset + batch * params.batch_stride) / 2u;
    let source_last = arrayLength(&source) - 1u;
    // Read: lane `p` takes rows `2p, 2p + 1` of a column (one word); positions past the
    // matrix read a clamped word that is never stored.
"
    );
    for i in 0..TILE / 8 {
        let _ = writeln!(
            text,
            "    let read{i} = source[min(base + ((column0 + group + {column}u) * params.column_stride + row0) / 2u + lane, source_last)];",
            column = 8 * i
        );
    }
    for i in 0..TILE / 8 {
        let _ = writeln!(
            text,
            "    if (row0 + 2u * lane < params.rows && column0 + group + {column}u < params.columns) {{\n        \
             tile[(group + {column}u) * {padded}u + lane] = read{i};\n    }}",
            column = 8 * i
        );
    }
    text.push_str(
        "    workgroupBarrier();
    // Write: lane `q` takes columns `2q, 2q + 1` of a row (one word), its halves from the
    // words of those columns that hold the row.
    let destination_last = arrayLength(&destination) - 1u;
    let matrix = params.destination_offset + batch * params.rows * params.columns;
",
    );
    for i in 0..TILE / 8 {
        let _ = writeln!(
            text,
            "    {{\n        let row = group + {row}u;\n        \
             if (row0 + row < params.rows && column0 + 2u * lane < params.columns) {{\n            \
             let shift = (row % 2u) * 16u;\n            \
             let low = (tile[(2u * lane) * {padded}u + row / 2u] >> shift) & 0xffffu;\n            \
             let high = (tile[(2u * lane + 1u) * {padded}u + row / 2u] >> shift) & 0xffffu;\n            \
             destination[min((matrix + (row0 + row) * params.columns + column0) / 2u + lane, destination_last)] = low | (high << 16u);\n        \
             }}\n    }}",
            row = 8 * i
        );
    }
    text.push_str("}\n");
    text
}

/// Whether the tile of `dtype` fits the device's workgroup memory (16.6 KB for 4-byte types:
/// a device at WebGPU's 16 KiB minimum takes the generic strided copy instead).
pub(crate) fn fits(dtype: DType, device: &crate::backend::gpu::runtime::device::GpuDevice) -> bool {
    tile_bytes(dtype) as u64
        <= u64::from(device.context().limits.max_compute_workgroup_storage_size)
}

/// Bytes of the kernel's workgroup tile for `dtype`.
fn tile_bytes(dtype: DType) -> usize {
    TILE * (TILE + 1) * dtype.size_in_bytes()
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<CopyKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16 | DType::I32 | DType::U32) {
        keys.push(CopyKernel::CopyTranspose {
            dtype,
            paired: false,
        });
    }
    if dtype == DType::F16 {
        keys.push(CopyKernel::CopyTranspose {
            dtype,
            paired: true,
        });
    }
}

/// The `(batch, rows, columns, batch stride, column stride)` of a same-dtype copy of
/// `source` into the dense `destination` that moves transposed tiles, or `None` (see the
/// module documentation). Worth it only where rows and columns both span a tile.
pub(crate) fn transposed_view(
    dtype: DType,
    source: &Layout,
    destination: &Layout,
) -> Option<(usize, usize, usize, usize, usize)> {
    if !matches!(dtype, DType::F32 | DType::F16 | DType::I32 | DType::U32)
        || !destination.is_contiguous()
    {
        return None;
    }
    let (shape, strides) = merge_dims(&source.shape, &source.strides);
    let (batch, batch_stride, rows, row_stride, columns, column_stride) =
        match (shape.as_slice(), strides.as_slice()) {
            (&[rows, columns], &[row_stride, column_stride]) => {
                (1, 0, rows, row_stride, columns, column_stride)
            }
            (&[batch, rows, columns], &[batch_stride, row_stride, column_stride]) => (
                batch,
                batch_stride,
                rows,
                row_stride,
                columns,
                column_stride,
            ),
            _ => return None,
        };
    (row_stride == 1 && rows >= MIN_EDGE && columns >= MIN_EDGE).then_some((
        batch,
        rows,
        columns,
        batch_stride,
        column_stride,
    ))
}

#[cfg(test)]
thread_local! {
    /// Paired copies dispatched by this thread (tests check which kernel ran).
    static PAIRED_COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl GpuStorage {
    /// Copy the view `layout` of `self` into the dense view `destination_layout` of
    /// `destination` by transposed tiles (the caller checked [`transposed_view`], which gave
    /// `view`).
    pub(crate) fn copy_transpose_into(
        &self,
        (batch, rows, columns, batch_stride, column_stride): (usize, usize, usize, usize, usize),
        layout: &Layout,
        destination: &GpuStorage,
        destination_layout: &Layout,
    ) -> Result<()> {
        let header = CopyTransposeParams {
            rows: word(rows)?,
            columns: word(columns)?,
            batch: word(batch)?,
            column_stride: word(column_stride)?,
            batch_stride: word(batch_stride)?,
            source_offset: word(layout.offset)?,
            destination_offset: word(destination_layout.offset)?,
        };
        let params = Params::with_header(&header, 0);
        let grid = (
            word(columns.div_ceil(TILE))?,
            word(rows.div_ceil(TILE))?,
            word(batch)?,
        );
        // F16 two halves at a time where every word boundary falls between elements.
        let paired = self.dtype == DType::F16
            && [
                rows,
                columns,
                column_stride,
                batch_stride,
                layout.offset,
                destination_layout.offset,
            ]
            .iter()
            .all(|number| number.is_multiple_of(2));
        #[cfg(test)]
        PAIRED_COPIES.with(|copies| copies.set(copies.get() + usize::from(paired)));
        self.device.context().dispatch(
            &CopyKernel::CopyTranspose {
                dtype: self.dtype,
                paired,
            },
            params.words(),
            &[self.raw()?, destination.raw()?],
            grid,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::transposed_view;
    use crate::backend::contract::Copying;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::dtype::DType;
    use crate::layout::Layout;

    #[test]
    fn tiles_need_more_than_the_minimum_workgroup_memory_for_four_bytes() {
        assert!(super::tile_bytes(DType::F32) > 16 * 1024);
        assert!(super::tile_bytes(DType::F16) <= 16 * 1024);
    }

    #[test]
    fn views_it_takes() {
        let dense = |shape: &[usize]| Layout::contiguous(shape);
        // NCHW viewed as NHWC: [n, h*w, c] with rows of stride 1.
        let nhwc = dense(&[2, 64, 9, 9]).permute(&[0, 2, 3, 1]);
        assert_eq!(
            transposed_view(DType::F16, &nhwc, &dense(&[2, 9, 9, 64])),
            Some((2, 81, 64, 64 * 81, 81))
        );
        let t = dense(&[40, 50]).permute(&[1, 0]);
        assert_eq!(
            transposed_view(DType::F32, &t, &dense(&[50, 40])),
            Some((1, 50, 40, 0, 50))
        );
        // Not: contiguous rows, small matrices, f64, a strided destination.
        assert_eq!(
            transposed_view(DType::F32, &dense(&[64, 64]), &dense(&[64, 64])),
            None
        );
        let small = dense(&[8, 50]).permute(&[1, 0]);
        assert_eq!(transposed_view(DType::F32, &small, &dense(&[50, 8])), None);
        assert_eq!(transposed_view(DType::F64, &t, &dense(&[50, 40])), None);
        let strided = dense(&[50, 80]).narrow(1, 0, 40);
        assert_eq!(transposed_view(DType::F32, &t, &strided), None);
    }

    /// Transposed copies (a batch with an offset, odd sizes that leave partial tiles) equal
    /// the CPU's copies of the same views.
    #[test]
    fn copies_match_cpu() {
        let Some(device) = crate::backend::tests::support::gpu_device() else {
            return;
        };
        let views = [
            Layout::contiguous(&[3, 40, 5, 7]).permute(&[0, 2, 3, 1]),
            Layout::contiguous(&[70, 33]).permute(&[1, 0]),
            // Several 64 x 64 tiles each way, partial at the edges.
            Layout::contiguous(&[2, 130, 9, 10]).permute(&[0, 2, 3, 1]),
            Layout {
                shape: vec![2, 45, 37],
                strides: vec![2000, 1, 50],
                offset: 3,
            },
        ];
        for view in views {
            let len = view.extent();
            assert!(transposed_view(DType::F32, &view, &Layout::contiguous(&view.shape)).is_some());
            let values: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 7.0).collect();
            let cpu = CpuStorage::F32(crate::backend::cpu::HostBuffer::from(values.clone()));
            let expected = cpu.copy_strided(&view).unwrap();
            let gpu = GpuStorage::from_cpu(&device, &cpu).unwrap();
            let actual = gpu.copy_strided(&view).unwrap().to_cpu().unwrap();
            assert_eq!(actual, expected, "{view:?}");
        }
    }

    /// F16 copies, two halves at a time where rows, columns, strides and offsets are even and
    /// one at a time otherwise, equal the CPU's bit for bit (NaN payloads, infinities and
    /// signed zeros included).
    #[test]
    fn f16_copies_match_cpu_bit_for_bit() {
        let Some(device) = crate::backend::tests::support::f16_gpu_device() else {
            return;
        };
        // (view, whether it pairs).
        let views = [
            // Paired: NCHW to NHWC with partial tiles (rows h * w = 90); a batch at an even
            // offset.
            (
                Layout::contiguous(&[2, 130, 9, 10]).permute(&[0, 2, 3, 1]),
                true,
            ),
            (
                Layout {
                    shape: vec![2, 46, 38],
                    strides: vec![2000, 1, 50],
                    offset: 4,
                },
                true,
            ),
            // One at a time: odd rows (h * w = 35); an odd offset.
            (
                Layout::contiguous(&[3, 40, 5, 7]).permute(&[0, 2, 3, 1]),
                false,
            ),
            (
                Layout {
                    shape: vec![2, 46, 38],
                    strides: vec![2000, 1, 50],
                    offset: 3,
                },
                false,
            ),
        ];
        let specials = [0x7e01u16, 0xfc00, 0x7c00, 0x8000, 0x0001, 0x3c00];
        for (view, pairs) in views {
            let len = view.extent();
            let values: Vec<half::f16> = (0..len)
                .map(|i| match i % 7 {
                    6 => half::f16::from_bits(specials[(i / 7) % specials.len()]),
                    _ => half::f16::from_f32(i as f32 * 0.25 - 9.0),
                })
                .collect();
            let cpu = CpuStorage::F16(crate::backend::cpu::HostBuffer::from(values));
            let CpuStorage::F16(expected) = cpu.copy_strided(&view).unwrap() else {
                panic!("dtype changed")
            };
            let gpu = GpuStorage::from_cpu(&device, &cpu).unwrap();
            let before = super::PAIRED_COPIES.with(|copies| copies.get());
            let CpuStorage::F16(actual) = gpu.copy_strided(&view).unwrap().to_cpu().unwrap() else {
                panic!("dtype changed")
            };
            let paired = super::PAIRED_COPIES.with(|copies| copies.get()) > before;
            assert_eq!(paired, pairs, "{view:?}");
            let bits =
                |values: &[half::f16]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&actual), bits(&expected), "{view:?}");
        }
    }
}
