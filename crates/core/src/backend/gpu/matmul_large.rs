//! The large-tile float matmul kernel, generated as fully unrolled WGSL.
//!
//! The design measured fastest with plain WGSL on an H200 (GPU-NOTES.md: 33 TFLOPS f32): one
//! workgroup of 256 invocations per 128 x 128 tile of C, k walked in steps of 8, each
//! invocation holding an 8 x 8 block of C in sixteen `vec4<f32>` *named* locals (a local array
//! indexed in a loop would be placed in slow memory), both operand blocks staged in workgroup
//! memory as `vec4` (A's block transposed so that its reads are vectors along m as well). The
//! inner loops are unrolled here, by the generator, so the driver sees straight-line FMAs.
//! Loads are bounds-checked (zero-filled), so any m, n, k and any strides work; the 64 x 64
//! kernel in `shaders/matmul.wgsl` remains for small products, where 128 x 128 tiles would
//! leave most of the GPU idle.

use std::fmt::Write;

/// Tile edge of this kernel.
pub(crate) const LARGE_TILE: usize = 128;

/// Use the large tile when it still yields at least this many workgroups (about two per
/// streaming multiprocessor of a large GPU); below, the 64 x 64 kernel keeps more SMs busy.
pub(crate) const LARGE_TILE_MIN_WORKGROUPS: usize = 256;

/// Whether a `[batch, m, n]` float product should use the large-tile kernel.
pub(crate) fn prefers_large_tile(batch: usize, m: usize, n: usize) -> bool {
    batch * m.div_ceil(LARGE_TILE) * n.div_ceil(LARGE_TILE) >= LARGE_TILE_MIN_WORKGROUPS
}

/// The kernel body (after the header that defines `S`, `T`, `load_value`, `store_value`).
/// params: as `matmul.wgsl`.
pub(crate) fn source_body() -> String {
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<S>;
@group(0) @binding(2) var<storage, read> matrix_b: array<S>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<S>;

// [8 k][32 vec4]: A's block transposed (vectors along m), B's block (vectors along n).
var<workgroup> tile_a: array<vec4<f32>, 256>;
var<workgroup> tile_b: array<vec4<f32>, 256>;

fn load_a(base: u32, row: u32, column: u32, m: u32, k: u32) -> f32 {{
    if (row < m && column < k) {{
        return f32(load_value(matrix_a[base + row * params[6] + column * params[7]]));
    }}
    return 0.0;
}}

fn load_b(base: u32, row: u32, column: u32, k: u32, n: u32) -> f32 {{
    if (row < k && column < n) {{
        return f32(load_value(matrix_b[base + row * params[10] + column * params[11]]));
    }}
    return 0.0;
}}

fn store_c(index: u32, inside: bool, value: f32) {{
    if (inside) {{
        matrix_c[index] = store_value(T(value));
    }}
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let batch = params[0];
    let m = params[1];
    let n = params[2];
    let k = params[3];
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // Loader roles: A's block is 128 rows x 8 k (each invocation: one row, 4 k values);
    // B's block is 8 k x 128 columns (each invocation: one k row, 4 columns).
    let a_row = local / 2u;
    let a_k = (local % 2u) * 4u;
    let b_k = local / 32u;
    let b_column = (local % 32u) * 4u;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {{
        let a_base = params[4] + b * params[5];
        let b_base = params[8] + b * params[9];"#
    );
    for i in 0..8 {
        let _ = writeln!(
            w,
            "        var c{i}0 = vec4<f32>(0.0);\n        var c{i}1 = vec4<f32>(0.0);"
        );
    }
    let _ = writeln!(w, r#"        for (var k0 = 0u; k0 < k; k0 = k0 + 8u) {{"#);
    for j in 0..4 {
        let _ = writeln!(
            w,
            "            tile_a[(a_k + {j}u) * 32u + a_row / 4u][a_row % 4u] = load_a(a_base, row0 + a_row, k0 + a_k + {j}u, m, k);"
        );
    }
    let _ = writeln!(
        w,
        r#"            tile_b[b_k * 32u + local % 32u] = vec4<f32>(
                load_b(b_base, k0 + b_k, column0 + b_column, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 1u, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 2u, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 3u, k, n));
            workgroupBarrier();"#
    );
    for kk in 0..8 {
        let _ = writeln!(
            w,
            "            {{\n                let a_low = tile_a[{a} + ty * 2u];\n                let a_high = tile_a[{a} + ty * 2u + 1u];\n                let b_low = tile_b[{a} + tx * 2u];\n                let b_high = tile_b[{a} + tx * 2u + 1u];",
            a = kk * 32
        );
        for i in 0..8 {
            let (vector, component) = if i < 4 {
                ("a_low", ["x", "y", "z", "w"][i])
            } else {
                ("a_high", ["x", "y", "z", "w"][i - 4])
            };
            let _ = writeln!(
                w,
                "                c{i}0 = c{i}0 + {vector}.{component} * b_low;\n                c{i}1 = c{i}1 + {vector}.{component} * b_high;"
            );
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(
        w,
        r#"            workgroupBarrier();
        }}
        let c_base = b * m * n;
        let column = column0 + tx * 8u;"#
    );
    for i in 0..8 {
        let _ = writeln!(w, "        {{\n            let row = row0 + ty * 8u + {i}u;\n            let start = c_base + row * n + column;");
        for (half, vector) in ["0", "1"].iter().enumerate() {
            for (lane, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let offset = half * 4 + lane;
                let _ = writeln!(
                    w,
                    "            store_c(start + {offset}u, row < m && column + {offset}u < n, c{i}{vector}.{component});"
                );
            }
        }
        let _ = writeln!(w, "        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

#[cfg(test)]
mod tests {
    use super::super::kernels::KernelKey;
    use super::super::GpuDevice;
    use super::super::GpuStorage;
    use crate::backend::cpu::CpuStorage;
    use crate::dtype::DType;
    use crate::layout::Layout;

    /// The large-tile kernel against the CPU on edge sizes (forced, whatever the heuristic).
    #[test]
    fn large_tile_kernel_matches_cpu() {
        let Ok(device) = GpuDevice::open(0) else {
            assert!(
                std::env::var("ANYGRAD_REQUIRE_GPU").as_deref() != Ok("1"),
                "no GPU"
            );
            eprintln!("SKIP: no GPU adapter");
            return;
        };
        for (batch, m, k, n, transpose) in [
            (1, 130, 9, 129, false),
            (2, 1, 20, 200, true),
            (1, 128, 128, 128, false),
        ] {
            let a: Vec<f32> = (0..batch * m * k)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                .collect();
            let b: Vec<f32> = (0..batch * k * n)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 24.0)
                .collect();
            let a_layout = Layout::contiguous(&[batch, m, k]);
            let b_layout = if transpose {
                Layout::contiguous(&[batch, n, k]).permute(&[0, 2, 1])
            } else {
                Layout::contiguous(&[batch, k, n])
            };
            let (a_cpu, b_cpu) = (CpuStorage::F32(a), CpuStorage::F32(b));
            let expected = a_cpu.matmul(&a_layout, &b_cpu, &b_layout).unwrap();
            let (a_gpu, b_gpu) = (
                GpuStorage::from_cpu(&device, &a_cpu).unwrap(),
                GpuStorage::from_cpu(&device, &b_cpu).unwrap(),
            );
            let actual = a_gpu
                .matmul_with(
                    &a_layout,
                    &b_gpu,
                    &b_layout,
                    KernelKey::MatmulLarge { dtype: DType::F32 },
                )
                .unwrap()
                .to_cpu()
                .unwrap();
            let (CpuStorage::F32(expected), CpuStorage::F32(actual)) = (expected, actual) else {
                panic!("dtype changed");
            };
            for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-4 * (1.0 + x.abs()),
                    "{batch}x{m}x{k}x{n}: element {i}: {x} vs {y}"
                );
            }
        }
    }
}
