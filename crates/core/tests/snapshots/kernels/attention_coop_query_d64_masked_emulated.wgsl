enable f16;
struct AttentionParams {
    batch_heads: u32,
    query_length: u32,
    key_length: u32,
    scale: f32,
    bias_group: u32,
    heads: u32,
    query_offset: u32,
    query_batch: u32,
    query_head: u32,
    query_row: u32,
    key_offset: u32,
    key_batch: u32,
    key_head: u32,
    key_row: u32,
    value_offset: u32,
    value_batch: u32,
    value_head: u32,
    value_row: u32,
}
@group(0) @binding(0) var<storage, read> params: AttentionParams;
@group(0) @binding(1) var<storage, read> query_data: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> key_data: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> value_data: array<vec4<f16>>;
@group(0) @binding(4) var<storage, read> grad_data: array<vec4<f16>>;
@group(0) @binding(5) var<storage, read> statistics_data: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read> key_bias_data: array<f32>;
@group(0) @binding(7) var<storage, read_write> query_grad_data: array<vec4<f16>>;
// Q [64][72] at 0, dO [64][72] at 4608, K [32][72] at 9216, V [32][72] at 11520, dS [64][40] at 13824.
var<workgroup> tiles: array<f16, 16384>;
// One 16 x 40 f32 tile per subgroup (scores, then their gradients; the epilogue).
var<workgroup> scratch: array<f32, 2560>;
var<workgroup> bias_tile: array<f32, 32>;
var<private> emulated_lane: u32;
fn emulated_multiply_add(a: vec3<u32>, b: vec3<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    var result = c;
    let row = emulated_lane / 2u;
    let column = (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let x = f32(tiles[a.x + row * a.y + j * a.z]);
        let at = b.x + j * b.y + column * b.z;
        result[0] = result[0] + x * vec4<f32>(f32(tiles[at]), f32(tiles[at + b.z]), f32(tiles[at + 2u * b.z]), f32(tiles[at + 3u * b.z]));
        result[1] = result[1] + x * vec4<f32>(f32(tiles[at + 4u * b.z]), f32(tiles[at + 5u * b.z]), f32(tiles[at + 6u * b.z]), f32(tiles[at + 7u * b.z]));
    }
    return result;
}
fn emulated_store(c: array<vec4<f32>, 2>, start: u32, stride: u32) {
    let at = start + (emulated_lane / 2u) * stride + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        scratch[at + j] = c[0][j];
        scratch[at + 4u + j] = c[1][j];
    }
}
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let subgroup = local / 32u;
    let lane = local % 32u;
    emulated_lane = lane;
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * 64u;
    // This lane's row (block-relative and global; a key row in the key-value kernel, a query
    // row in the query kernel) and which 16 columns of a tile's scores it takes.
    let sub_row = subgroup * 16u;
    let my_row = sub_row + lane / 2u;
    let row = row0 + my_row;
    let lane_half = lane % 2u;
    let columns = lane_half * 16u;
    // The lane's 16 columns of a tile in an order rotated by its row, so that the 32 lanes'
    // reads of the scratch fall on 32 banks (not 4 lanes a bank) and their writes of P and dS
    // on 16.
    let k0 = columns + ((0u + lane / 2u) & 15u);
    let k1 = columns + ((1u + lane / 2u) & 15u);
    let k2 = columns + ((2u + lane / 2u) & 15u);
    let k3 = columns + ((3u + lane / 2u) & 15u);
    let k4 = columns + ((4u + lane / 2u) & 15u);
    let k5 = columns + ((5u + lane / 2u) & 15u);
    let k6 = columns + ((6u + lane / 2u) & 15u);
    let k7 = columns + ((7u + lane / 2u) & 15u);
    let k8 = columns + ((8u + lane / 2u) & 15u);
    let k9 = columns + ((9u + lane / 2u) & 15u);
    let k10 = columns + ((10u + lane / 2u) & 15u);
    let k11 = columns + ((11u + lane / 2u) & 15u);
    let k12 = columns + ((12u + lane / 2u) & 15u);
    let k13 = columns + ((13u + lane / 2u) & 15u);
    let k14 = columns + ((14u + lane / 2u) & 15u);
    let k15 = columns + ((15u + lane / 2u) & 15u);

    let scratch_at = subgroup * 640u;
    let lane_scratch = scratch_at + (lane / 2u) * 40u;
    let bias_base = (head / params.bias_group) * key_length;
    {
        let block_base = head * length;
        {
            var staged0 = vec4<f16>(0.0);
            if (row0 + (local + 0u) / 16u < length) {
                staged0 = query_data[(block_base + row0 + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            var staged1 = vec4<f16>(0.0);
            if (row0 + (local + 128u) / 16u < length) {
                staged1 = query_data[(block_base + row0 + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
            }
            var staged2 = vec4<f16>(0.0);
            if (row0 + (local + 256u) / 16u < length) {
                staged2 = query_data[(block_base + row0 + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            var staged3 = vec4<f16>(0.0);
            if (row0 + (local + 384u) / 16u < length) {
                staged3 = query_data[(block_base + row0 + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
            }
            var staged4 = vec4<f16>(0.0);
            if (row0 + (local + 512u) / 16u < length) {
                staged4 = query_data[(block_base + row0 + (local + 512u) / 16u) * 16u + (local + 512u) % 16u];
            }
            var staged5 = vec4<f16>(0.0);
            if (row0 + (local + 640u) / 16u < length) {
                staged5 = query_data[(block_base + row0 + (local + 640u) / 16u) * 16u + (local + 640u) % 16u];
            }
            var staged6 = vec4<f16>(0.0);
            if (row0 + (local + 768u) / 16u < length) {
                staged6 = query_data[(block_base + row0 + (local + 768u) / 16u) * 16u + (local + 768u) % 16u];
            }
            var staged7 = vec4<f16>(0.0);
            if (row0 + (local + 896u) / 16u < length) {
                staged7 = query_data[(block_base + row0 + (local + 896u) / 16u) * 16u + (local + 896u) % 16u];
            }
            {
                let at = 0u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged0.xy, staged0.zw, swapped);
                let second = select(staged0.zw, staged0.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 128u) / 16u) * 72u + ((local + 128u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged1.xy, staged1.zw, swapped);
                let second = select(staged1.zw, staged1.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged2.xy, staged2.zw, swapped);
                let second = select(staged2.zw, staged2.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 384u) / 16u) * 72u + ((local + 384u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged3.xy, staged3.zw, swapped);
                let second = select(staged3.zw, staged3.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 512u) / 16u) * 72u + ((local + 512u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged4.xy, staged4.zw, swapped);
                let second = select(staged4.zw, staged4.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 640u) / 16u) * 72u + ((local + 640u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged5.xy, staged5.zw, swapped);
                let second = select(staged5.zw, staged5.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 768u) / 16u) * 72u + ((local + 768u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged6.xy, staged6.zw, swapped);
                let second = select(staged6.zw, staged6.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 0u + ((local + 896u) / 16u) * 72u + ((local + 896u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged7.xy, staged7.zw, swapped);
                let second = select(staged7.zw, staged7.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
        }
        {
            var staged0 = vec4<f16>(0.0);
            if (row0 + (local + 0u) / 16u < length) {
                staged0 = grad_data[(block_base + row0 + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            var staged1 = vec4<f16>(0.0);
            if (row0 + (local + 128u) / 16u < length) {
                staged1 = grad_data[(block_base + row0 + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
            }
            var staged2 = vec4<f16>(0.0);
            if (row0 + (local + 256u) / 16u < length) {
                staged2 = grad_data[(block_base + row0 + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            var staged3 = vec4<f16>(0.0);
            if (row0 + (local + 384u) / 16u < length) {
                staged3 = grad_data[(block_base + row0 + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
            }
            var staged4 = vec4<f16>(0.0);
            if (row0 + (local + 512u) / 16u < length) {
                staged4 = grad_data[(block_base + row0 + (local + 512u) / 16u) * 16u + (local + 512u) % 16u];
            }
            var staged5 = vec4<f16>(0.0);
            if (row0 + (local + 640u) / 16u < length) {
                staged5 = grad_data[(block_base + row0 + (local + 640u) / 16u) * 16u + (local + 640u) % 16u];
            }
            var staged6 = vec4<f16>(0.0);
            if (row0 + (local + 768u) / 16u < length) {
                staged6 = grad_data[(block_base + row0 + (local + 768u) / 16u) * 16u + (local + 768u) % 16u];
            }
            var staged7 = vec4<f16>(0.0);
            if (row0 + (local + 896u) / 16u < length) {
                staged7 = grad_data[(block_base + row0 + (local + 896u) / 16u) * 16u + (local + 896u) % 16u];
            }
            {
                let at = 4608u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged0.xy, staged0.zw, swapped);
                let second = select(staged0.zw, staged0.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 128u) / 16u) * 72u + ((local + 128u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged1.xy, staged1.zw, swapped);
                let second = select(staged1.zw, staged1.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged2.xy, staged2.zw, swapped);
                let second = select(staged2.zw, staged2.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 384u) / 16u) * 72u + ((local + 384u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged3.xy, staged3.zw, swapped);
                let second = select(staged3.zw, staged3.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 512u) / 16u) * 72u + ((local + 512u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged4.xy, staged4.zw, swapped);
                let second = select(staged4.zw, staged4.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 640u) / 16u) * 72u + ((local + 640u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged5.xy, staged5.zw, swapped);
                let second = select(staged5.zw, staged5.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 768u) / 16u) * 72u + ((local + 768u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged6.xy, staged6.zw, swapped);
                let second = select(staged6.zw, staged6.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
            {
                let at = 4608u + ((local + 896u) / 16u) * 72u + ((local + 896u) % 16u) * 4u;
                let swapped = (local & 16u) != 0u;
                let flip = select(0u, 2u, swapped);
                let first = select(staged7.xy, staged7.zw, swapped);
                let second = select(staged7.zw, staged7.xy, swapped);
                tiles[at + flip] = first.x;
                tiles[at + flip + 1u] = first.y;
                tiles[at + 2u - flip] = second.x;
                tiles[at + 3u - flip] = second.y;
            }
        }
    }
    let row_statistics = statistics_data[head * length + min(row, length - 1u)];
    var dq0 = array<vec4<f32>, 2>();
    var dq1 = array<vec4<f32>, 2>();
    var dq2 = array<vec4<f32>, 2>();
    var dq3 = array<vec4<f32>, 2>();
    let tile_base = head * key_length;
    let end = key_length;
    let first_start = 0u;
    var staged0 = vec4<f16>(0.0);
    if (first_start + (local + 0u) / 16u < key_length) {
        staged0 = key_data[(tile_base + first_start + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    var staged1 = vec4<f16>(0.0);
    if (first_start + (local + 128u) / 16u < key_length) {
        staged1 = key_data[(tile_base + first_start + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
    }
    var staged2 = vec4<f16>(0.0);
    if (first_start + (local + 256u) / 16u < key_length) {
        staged2 = key_data[(tile_base + first_start + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
    }
    var staged3 = vec4<f16>(0.0);
    if (first_start + (local + 384u) / 16u < key_length) {
        staged3 = key_data[(tile_base + first_start + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
    }
    var staged4 = vec4<f16>(0.0);
    if (first_start + (local + 0u) / 16u < key_length) {
        staged4 = value_data[(tile_base + first_start + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    var staged5 = vec4<f16>(0.0);
    if (first_start + (local + 128u) / 16u < key_length) {
        staged5 = value_data[(tile_base + first_start + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
    }
    var staged6 = vec4<f16>(0.0);
    if (first_start + (local + 256u) / 16u < key_length) {
        staged6 = value_data[(tile_base + first_start + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
    }
    var staged7 = vec4<f16>(0.0);
    if (first_start + (local + 384u) / 16u < key_length) {
        staged7 = value_data[(tile_base + first_start + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
    }
    for (var start = first_start; start < end; start += 32u) {
        workgroupBarrier();
        if (local < 32u) {
            var bias = -3.0e38;
            if (start + local < key_length) {
                bias = key_bias_data[bias_base + start + local];
            }
            bias_tile[local] = bias;
        }
        {
            let at = 9216u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged0.xy, staged0.zw, swapped);
            let second = select(staged0.zw, staged0.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 9216u + ((local + 128u) / 16u) * 72u + ((local + 128u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged1.xy, staged1.zw, swapped);
            let second = select(staged1.zw, staged1.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 9216u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged2.xy, staged2.zw, swapped);
            let second = select(staged2.zw, staged2.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 9216u + ((local + 384u) / 16u) * 72u + ((local + 384u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged3.xy, staged3.zw, swapped);
            let second = select(staged3.zw, staged3.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 11520u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged4.xy, staged4.zw, swapped);
            let second = select(staged4.zw, staged4.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 11520u + ((local + 128u) / 16u) * 72u + ((local + 128u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged5.xy, staged5.zw, swapped);
            let second = select(staged5.zw, staged5.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 11520u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged6.xy, staged6.zw, swapped);
            let second = select(staged6.zw, staged6.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        {
            let at = 11520u + ((local + 384u) / 16u) * 72u + ((local + 384u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged7.xy, staged7.zw, swapped);
            let second = select(staged7.zw, staged7.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        workgroupBarrier();
        {
            staged0 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 0u) / 16u < key_length) {
                staged0 = key_data[(tile_base + (start + 32u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            staged1 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 128u) / 16u < key_length) {
                staged1 = key_data[(tile_base + (start + 32u) + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
            }
            staged2 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 256u) / 16u < key_length) {
                staged2 = key_data[(tile_base + (start + 32u) + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            staged3 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 384u) / 16u < key_length) {
                staged3 = key_data[(tile_base + (start + 32u) + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
            }
            staged4 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 0u) / 16u < key_length) {
                staged4 = value_data[(tile_base + (start + 32u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            staged5 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 128u) / 16u < key_length) {
                staged5 = value_data[(tile_base + (start + 32u) + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
            }
            staged6 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 256u) / 16u < key_length) {
                staged6 = value_data[(tile_base + (start + 32u) + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            staged7 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 384u) / 16u < key_length) {
                staged7 = value_data[(tile_base + (start + 32u) + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
            }
            var s0 = array<vec4<f32>, 2>();
            var s1 = array<vec4<f32>, 2>();
            var g0 = array<vec4<f32>, 2>();
            var g1 = array<vec4<f32>, 2>();
            let first_at0 = 0u + sub_row * 72u + 0u;
            let first0 = vec3<u32>(first_at0, 72u, 1u);
            let first_tile_at0_0 = 9216u;
            let first_tile0_0 = vec3<u32>(first_tile_at0_0, 1u, 72u);
            s0 = emulated_multiply_add(first0, first_tile0_0, s0);
            let first_tile_at0_1 = 10368u;
            let first_tile0_1 = vec3<u32>(first_tile_at0_1, 1u, 72u);
            s1 = emulated_multiply_add(first0, first_tile0_1, s1);
            let first_at1 = 0u + sub_row * 72u + 16u;
            let first1 = vec3<u32>(first_at1, 72u, 1u);
            let first_tile_at1_0 = 9232u;
            let first_tile1_0 = vec3<u32>(first_tile_at1_0, 1u, 72u);
            s0 = emulated_multiply_add(first1, first_tile1_0, s0);
            let first_tile_at1_1 = 10384u;
            let first_tile1_1 = vec3<u32>(first_tile_at1_1, 1u, 72u);
            s1 = emulated_multiply_add(first1, first_tile1_1, s1);
            let first_at2 = 0u + sub_row * 72u + 32u;
            let first2 = vec3<u32>(first_at2, 72u, 1u);
            let first_tile_at2_0 = 9248u;
            let first_tile2_0 = vec3<u32>(first_tile_at2_0, 1u, 72u);
            s0 = emulated_multiply_add(first2, first_tile2_0, s0);
            let first_tile_at2_1 = 10400u;
            let first_tile2_1 = vec3<u32>(first_tile_at2_1, 1u, 72u);
            s1 = emulated_multiply_add(first2, first_tile2_1, s1);
            let first_at3 = 0u + sub_row * 72u + 48u;
            let first3 = vec3<u32>(first_at3, 72u, 1u);
            let first_tile_at3_0 = 9264u;
            let first_tile3_0 = vec3<u32>(first_tile_at3_0, 1u, 72u);
            s0 = emulated_multiply_add(first3, first_tile3_0, s0);
            let first_tile_at3_1 = 10416u;
            let first_tile3_1 = vec3<u32>(first_tile_at3_1, 1u, 72u);
            s1 = emulated_multiply_add(first3, first_tile3_1, s1);
            let second_at0 = 4608u + sub_row * 72u + 0u;
            let second0 = vec3<u32>(second_at0, 72u, 1u);
            let second_tile_at0_0 = 11520u;
            let second_tile0_0 = vec3<u32>(second_tile_at0_0, 1u, 72u);
            g0 = emulated_multiply_add(second0, second_tile0_0, g0);
            let second_tile_at0_1 = 12672u;
            let second_tile0_1 = vec3<u32>(second_tile_at0_1, 1u, 72u);
            g1 = emulated_multiply_add(second0, second_tile0_1, g1);
            let second_at1 = 4608u + sub_row * 72u + 16u;
            let second1 = vec3<u32>(second_at1, 72u, 1u);
            let second_tile_at1_0 = 11536u;
            let second_tile1_0 = vec3<u32>(second_tile_at1_0, 1u, 72u);
            g0 = emulated_multiply_add(second1, second_tile1_0, g0);
            let second_tile_at1_1 = 12688u;
            let second_tile1_1 = vec3<u32>(second_tile_at1_1, 1u, 72u);
            g1 = emulated_multiply_add(second1, second_tile1_1, g1);
            let second_at2 = 4608u + sub_row * 72u + 32u;
            let second2 = vec3<u32>(second_at2, 72u, 1u);
            let second_tile_at2_0 = 11552u;
            let second_tile2_0 = vec3<u32>(second_tile_at2_0, 1u, 72u);
            g0 = emulated_multiply_add(second2, second_tile2_0, g0);
            let second_tile_at2_1 = 12704u;
            let second_tile2_1 = vec3<u32>(second_tile_at2_1, 1u, 72u);
            g1 = emulated_multiply_add(second2, second_tile2_1, g1);
            let second_at3 = 4608u + sub_row * 72u + 48u;
            let second3 = vec3<u32>(second_at3, 72u, 1u);
            let second_tile_at3_0 = 11568u;
            let second_tile3_0 = vec3<u32>(second_tile_at3_0, 1u, 72u);
            g0 = emulated_multiply_add(second3, second_tile3_0, g0);
            let second_tile_at3_1 = 12720u;
            let second_tile3_1 = vec3<u32>(second_tile_at3_1, 1u, 72u);
            g1 = emulated_multiply_add(second3, second_tile3_1, g1);
            let s_at0 = scratch_at;
            emulated_store(s0, s_at0, 40u);
            let s_at1 = scratch_at + 16u;
            emulated_store(s1, s_at1, 40u);
            workgroupBarrier();
            let index0 = vec4<u32>(start) + vec4<u32>(k0, k1, k2, k3);
            let bias0 = vec4<f32>(bias_tile[k0], bias_tile[k1], bias_tile[k2], bias_tile[k3]);
            let p0 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k0], scratch[lane_scratch + k1], scratch[lane_scratch + k2], scratch[lane_scratch + k3]) * params.scale + bias0 - vec4<f32>(row_statistics.x)), (index0 < vec4<u32>(key_length)) & (bias0 > vec4<f32>(-1.0e38)));
            let index1 = vec4<u32>(start) + vec4<u32>(k4, k5, k6, k7);
            let bias1 = vec4<f32>(bias_tile[k4], bias_tile[k5], bias_tile[k6], bias_tile[k7]);
            let p1 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k4], scratch[lane_scratch + k5], scratch[lane_scratch + k6], scratch[lane_scratch + k7]) * params.scale + bias1 - vec4<f32>(row_statistics.x)), (index1 < vec4<u32>(key_length)) & (bias1 > vec4<f32>(-1.0e38)));
            let index2 = vec4<u32>(start) + vec4<u32>(k8, k9, k10, k11);
            let bias2 = vec4<f32>(bias_tile[k8], bias_tile[k9], bias_tile[k10], bias_tile[k11]);
            let p2 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k8], scratch[lane_scratch + k9], scratch[lane_scratch + k10], scratch[lane_scratch + k11]) * params.scale + bias2 - vec4<f32>(row_statistics.x)), (index2 < vec4<u32>(key_length)) & (bias2 > vec4<f32>(-1.0e38)));
            let index3 = vec4<u32>(start) + vec4<u32>(k12, k13, k14, k15);
            let bias3 = vec4<f32>(bias_tile[k12], bias_tile[k13], bias_tile[k14], bias_tile[k15]);
            let p3 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k12], scratch[lane_scratch + k13], scratch[lane_scratch + k14], scratch[lane_scratch + k15]) * params.scale + bias3 - vec4<f32>(row_statistics.x)), (index3 < vec4<u32>(key_length)) & (bias3 > vec4<f32>(-1.0e38)));
            workgroupBarrier();
            emulated_store(g0, s_at0, 40u);
            emulated_store(g1, s_at1, 40u);
            workgroupBarrier();
            let ds0 = p0 * (vec4<f32>(scratch[lane_scratch + k0], scratch[lane_scratch + k1], scratch[lane_scratch + k2], scratch[lane_scratch + k3]) - vec4<f32>(row_statistics.y));
            let ds_at0 = 13824u + my_row * 40u;
            tiles[ds_at0 + k0] = f16(ds0.x);
            tiles[ds_at0 + k1] = f16(ds0.y);
            tiles[ds_at0 + k2] = f16(ds0.z);
            tiles[ds_at0 + k3] = f16(ds0.w);
            let ds1 = p1 * (vec4<f32>(scratch[lane_scratch + k4], scratch[lane_scratch + k5], scratch[lane_scratch + k6], scratch[lane_scratch + k7]) - vec4<f32>(row_statistics.y));
            let ds_at1 = 13824u + my_row * 40u;
            tiles[ds_at1 + k4] = f16(ds1.x);
            tiles[ds_at1 + k5] = f16(ds1.y);
            tiles[ds_at1 + k6] = f16(ds1.z);
            tiles[ds_at1 + k7] = f16(ds1.w);
            let ds2 = p2 * (vec4<f32>(scratch[lane_scratch + k8], scratch[lane_scratch + k9], scratch[lane_scratch + k10], scratch[lane_scratch + k11]) - vec4<f32>(row_statistics.y));
            let ds_at2 = 13824u + my_row * 40u;
            tiles[ds_at2 + k8] = f16(ds2.x);
            tiles[ds_at2 + k9] = f16(ds2.y);
            tiles[ds_at2 + k10] = f16(ds2.z);
            tiles[ds_at2 + k11] = f16(ds2.w);
            let ds3 = p3 * (vec4<f32>(scratch[lane_scratch + k12], scratch[lane_scratch + k13], scratch[lane_scratch + k14], scratch[lane_scratch + k15]) - vec4<f32>(row_statistics.y));
            let ds_at3 = 13824u + my_row * 40u;
            tiles[ds_at3 + k12] = f16(ds3.x);
            tiles[ds_at3 + k13] = f16(ds3.y);
            tiles[ds_at3 + k14] = f16(ds3.z);
            tiles[ds_at3 + k15] = f16(ds3.w);
        }
        workgroupBarrier();
        {
            let ds_at0 = 13824u + sub_row * 40u + 0u;
            let ds0 = vec3<u32>(ds_at0, 40u, 1u);
            let ds_at1 = 13824u + sub_row * 40u + 16u;
            let ds1 = vec3<u32>(ds_at1, 40u, 1u);
            let t_at0_0 = 9216u;
            let t0_0 = vec3<u32>(t_at0_0, 72u, 1u);
            dq0 = emulated_multiply_add(ds0, t0_0, dq0);
            let t_at1_0 = 10368u;
            let t1_0 = vec3<u32>(t_at1_0, 72u, 1u);
            dq0 = emulated_multiply_add(ds1, t1_0, dq0);
            let t_at0_1 = 9232u;
            let t0_1 = vec3<u32>(t_at0_1, 72u, 1u);
            dq1 = emulated_multiply_add(ds0, t0_1, dq1);
            let t_at1_1 = 10384u;
            let t1_1 = vec3<u32>(t_at1_1, 72u, 1u);
            dq1 = emulated_multiply_add(ds1, t1_1, dq1);
            let t_at0_2 = 9248u;
            let t0_2 = vec3<u32>(t_at0_2, 72u, 1u);
            dq2 = emulated_multiply_add(ds0, t0_2, dq2);
            let t_at1_2 = 10400u;
            let t1_2 = vec3<u32>(t_at1_2, 72u, 1u);
            dq2 = emulated_multiply_add(ds1, t1_2, dq2);
            let t_at0_3 = 9264u;
            let t0_3 = vec3<u32>(t_at0_3, 72u, 1u);
            dq3 = emulated_multiply_add(ds0, t0_3, dq3);
            let t_at1_3 = 10416u;
            let t1_3 = vec3<u32>(t_at1_3, 72u, 1u);
            dq3 = emulated_multiply_add(ds1, t1_3, dq3);
        }
    }
    let own = head * length + row;
    workgroupBarrier();
    {
        let out_at0 = scratch_at + 0u;
        emulated_store(dq0, out_at0, 40u);
        let out_at1 = scratch_at + 16u;
        emulated_store(dq1, out_at1, 40u);
    }
    workgroupBarrier();
    if (row < length) {
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            let out = own * 16u + 0u + lane_half * 2u;
            query_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            query_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            let out = own * 16u + 4u + lane_half * 2u;
            query_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            query_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
    }
    workgroupBarrier();
    {
        let out_at0 = scratch_at + 0u;
        emulated_store(dq2, out_at0, 40u);
        let out_at1 = scratch_at + 16u;
        emulated_store(dq3, out_at1, 40u);
    }
    workgroupBarrier();
    if (row < length) {
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            let out = own * 16u + 8u + lane_half * 2u;
            query_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            query_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            let out = own * 16u + 12u + lane_half * 2u;
            query_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            query_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
    }
}
