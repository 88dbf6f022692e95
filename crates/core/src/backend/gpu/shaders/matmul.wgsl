// matmul.wgsl — batched `C[b] = A[b] x B[b]`, register-tiled.
//
// Each workgroup of 256 invocations (16 x 16) computes a 64 x 64 tile of C. The k dimension
// is walked in steps of 16: the workgroup first copies a 64 x 16 block of A and a 16 x 64
// block of B into workgroup memory (fast on-chip storage shared by the workgroup; each element
// is read from global memory once instead of 64 times), waits at a barrier, then every
// invocation multiplies out its 4 x 4 outputs from that shared copy, holding them in four
// `vec4` registers (named locals: an indexed local array would spill to slow memory).
// Invocation (tx, ty) owns rows ty + 16 i and columns tx + 16 j, so neighbouring invocations
// read neighbouring shared-memory words (no bank conflicts) and write neighbouring columns.
// Views are read through their strides (transposed and batch-broadcast views need no copy);
// edges are bounds-checked, so any m, n, k works. Batches loop (grid-stride) over z.
// params: MatmulParams (matmul.rs); C and store_product (matmul.rs): C's element type.
@group(0) @binding(1) var<storage, read> matrix_a: array<S>;
@group(0) @binding(2) var<storage, read> matrix_b: array<S>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<C>;

const TILE: u32 = 64u;
const TILE_K: u32 = 16u;
// A's block is stored k-major (transposed) so the inner loop reads it like B's block.
var<workgroup> tile_a: array<T, 1024>;
var<workgroup> tile_b: array<T, 1024>;

// Element `e` (of 1024) of a block of 16 k by 64 rows or columns, as (k, row or column):
// consecutive elements walk k when `k_fastest`, else the rows or columns.
fn block_element(e: u32, k_fastest: bool) -> vec2<u32> {
    if (k_fastest) {
        return vec2<u32>(e % TILE_K, e / TILE_K);
    }
    return vec2<u32>(e / TILE, e % TILE);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * TILE;
    let column0 = workgroup.x * TILE;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        // Consecutive invocations load along whichever dim of a block is contiguous in memory
        // (coalesced): k for A and columns for B, or the other dim of a transposed view (a
        // `linear` layer's weight). The branch is uniform.
        let a_by_rows = params.a_row_stride == 1u && params.a_column_stride != 1u;
        let b_by_k = params.b_row_stride == 1u && params.b_column_stride != 1u;
        let a_base = params.a_offset + b * params.a_batch_stride;
        let b_base = params.b_offset + b * params.b_batch_stride;
        var acc0 = vec4<T>(T(0));
        var acc1 = vec4<T>(T(0));
        var acc2 = vec4<T>(T(0));
        var acc3 = vec4<T>(T(0));
        for (var k0 = 0u; k0 < k; k0 = k0 + TILE_K) {
            for (var t = 0u; t < 4u; t = t + 1u) {
                let e = local + 256u * t;
                // A block: 64 rows x 16 k.
                let a_local = block_element(e, !a_by_rows);
                let a_local_k = a_local.x;
                let a_local_row = a_local.y;
                let a_row = row0 + a_local_row;
                let a_k = k0 + a_local_k;
                var a_value = T(0);
                if (a_row < m && a_k < k) {
                    a_value = load_value(matrix_a[a_base + a_row * params.a_row_stride + a_k * params.a_column_stride]);
                }
                tile_a[a_local_k * TILE + a_local_row] = a_value;
                // B block: 16 k x 64 columns.
                let b_local = block_element(e, b_by_k);
                let b_local_k = b_local.x;
                let b_local_column = b_local.y;
                let b_k = k0 + b_local_k;
                let b_column = column0 + b_local_column;
                var b_value = T(0);
                if (b_k < k && b_column < n) {
                    b_value = load_value(matrix_b[b_base + b_k * params.b_row_stride + b_column * params.b_column_stride]);
                }
                tile_b[b_local_k * TILE + b_local_column] = b_value;
            }
            workgroupBarrier();
            for (var kk = 0u; kk < TILE_K; kk = kk + 1u) {
                let b_row = vec4<T>(tile_b[kk * TILE + tx], tile_b[kk * TILE + tx + 16u],
                                    tile_b[kk * TILE + tx + 32u], tile_b[kk * TILE + tx + 48u]);
                acc0 = acc0 + tile_a[kk * TILE + ty] * b_row;
                acc1 = acc1 + tile_a[kk * TILE + ty + 16u] * b_row;
                acc2 = acc2 + tile_a[kk * TILE + ty + 32u] * b_row;
                acc3 = acc3 + tile_a[kk * TILE + ty + 48u] * b_row;
            }
            workgroupBarrier();
        }
        let c_base = b * m * n;
        store_row(c_base, row0 + ty, column0 + tx, m, n, acc0);
        store_row(c_base, row0 + ty + 16u, column0 + tx, m, n, acc1);
        store_row(c_base, row0 + ty + 32u, column0 + tx, m, n, acc2);
        store_row(c_base, row0 + ty + 48u, column0 + tx, m, n, acc3);
    }
}

// Write the four outputs of one row (columns column, +16, +32, +48) that lie inside C.
fn store_row(c_base: u32, row: u32, column: u32, m: u32, n: u32, values: vec4<T>) {
    if (row >= m) {
        return;
    }
    if (column < n) { matrix_c[c_base + row * n + column] = store_product(values.x); }
    if (column + 16u < n) { matrix_c[c_base + row * n + column + 16u] = store_product(values.y); }
    if (column + 32u < n) { matrix_c[c_base + row * n + column + 32u] = store_product(values.z); }
    if (column + 48u < n) { matrix_c[c_base + row * n + column + 48u] = store_product(values.w); }
}
