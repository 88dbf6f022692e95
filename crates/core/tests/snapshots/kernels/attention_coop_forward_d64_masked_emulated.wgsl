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
@group(0) @binding(4) var<storage, read> key_bias_data: array<f32>;
@group(0) @binding(5) var<storage, read_write> output_data: array<vec4<f16>>;
@group(0) @binding(6) var<storage, read_write> logsumexp_data: array<f32>;
// Q [64][72] at 0 (1 column parts), K [16][72] at 4608, V [16][72] at 5760, P [64][24] at 6912.
var<workgroup> tiles: array<f16, 8448>;
// One 16 x 20 f32 tile per subgroup (scores, then P V).
var<workgroup> scratch: array<f32, 1280>;
var<workgroup> bias_tile: array<f32, 16>;
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
    // This lane's query row (block-relative and global), and which half of a key tile it
    // exponentiates and which 8 of every 16 value columns it accumulates.
    let sub_row = subgroup * 16u;
    let my_row = sub_row + lane / 2u;
    let row = row0 + my_row;
    let lane_half = lane % 2u;
    let scratch_at = subgroup * 320u;
    let lane_scratch = scratch_at + (lane / 2u) * 20u;
    let query_base = head * length;
    {
        var staged0 = vec4<f16>(0.0);
        if (row0 + (local + 0u) / 16u < length) {
            staged0 = query_data[(query_base + row0 + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
        }
        var staged1 = vec4<f16>(0.0);
        if (row0 + (local + 128u) / 16u < length) {
            staged1 = query_data[(query_base + row0 + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
        }
        var staged2 = vec4<f16>(0.0);
        if (row0 + (local + 256u) / 16u < length) {
            staged2 = query_data[(query_base + row0 + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
        }
        var staged3 = vec4<f16>(0.0);
        if (row0 + (local + 384u) / 16u < length) {
            staged3 = query_data[(query_base + row0 + (local + 384u) / 16u) * 16u + (local + 384u) % 16u];
        }
        var staged4 = vec4<f16>(0.0);
        if (row0 + (local + 512u) / 16u < length) {
            staged4 = query_data[(query_base + row0 + (local + 512u) / 16u) * 16u + (local + 512u) % 16u];
        }
        var staged5 = vec4<f16>(0.0);
        if (row0 + (local + 640u) / 16u < length) {
            staged5 = query_data[(query_base + row0 + (local + 640u) / 16u) * 16u + (local + 640u) % 16u];
        }
        var staged6 = vec4<f16>(0.0);
        if (row0 + (local + 768u) / 16u < length) {
            staged6 = query_data[(query_base + row0 + (local + 768u) / 16u) * 16u + (local + 768u) % 16u];
        }
        var staged7 = vec4<f16>(0.0);
        if (row0 + (local + 896u) / 16u < length) {
            staged7 = query_data[(query_base + row0 + (local + 896u) / 16u) * 16u + (local + 896u) % 16u];
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
    workgroupBarrier();
    let q_at0 = sub_row * 72u + 0u;
    let q0 = vec3<u32>(q_at0, 72u, 1u);
    let q_at1 = sub_row * 72u + 16u;
    let q1 = vec3<u32>(q_at1, 72u, 1u);
    let q_at2 = sub_row * 72u + 32u;
    let q2 = vec3<u32>(q_at2, 72u, 1u);
    let q_at3 = sub_row * 72u + 48u;
    let q3 = vec3<u32>(q_at3, 72u, 1u);
    var o0_0 = vec4<f32>(0.0);
    var o0_1 = vec4<f32>(0.0);
    var o1_0 = vec4<f32>(0.0);
    var o1_1 = vec4<f32>(0.0);
    var o2_0 = vec4<f32>(0.0);
    var o2_1 = vec4<f32>(0.0);
    var o3_0 = vec4<f32>(0.0);
    var o3_1 = vec4<f32>(0.0);
    let c0 = ((0u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c1 = ((1u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c2 = ((2u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c3 = ((3u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c4 = ((4u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c5 = ((5u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c6 = ((6u + lane / 2u + 4u * (lane / 16u)) & 7u);
    let c7 = ((7u + lane / 2u + 4u * (lane / 16u)) & 7u);
    var running_max = -3.0e38;
    var running_sum = 0.0;
    let base = head * key_length;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = key_length;
    var staged0 = vec4<f16>(0.0);
    if (0u + (local + 0u) / 16u < key_length) {
        staged0 = key_data[(base + 0u + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    var staged1 = vec4<f16>(0.0);
    if (0u + (local + 128u) / 16u < key_length) {
        staged1 = key_data[(base + 0u + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
    }
    var staged2 = vec4<f16>(0.0);
    if (0u + (local + 0u) / 16u < key_length) {
        staged2 = value_data[(base + 0u + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    var staged3 = vec4<f16>(0.0);
    if (0u + (local + 128u) / 16u < key_length) {
        staged3 = value_data[(base + 0u + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
    }
    for (var start = 0u; start < key_end; start += 16u) {
        workgroupBarrier();
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
            let at = 5760u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
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
            let at = 5760u + ((local + 128u) / 16u) * 72u + ((local + 128u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged3.xy, staged3.zw, swapped);
            let second = select(staged3.zw, staged3.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        if (local < 16u) {
            var bias = -3.0e38;
            if (start + local < key_length) {
                bias = key_bias_data[bias_base + start + local];
            }
            bias_tile[local] = bias;
        }
        workgroupBarrier();
        staged0 = vec4<f16>(0.0);
        if ((start + 16u) + (local + 0u) / 16u < key_length) {
            staged0 = key_data[(base + (start + 16u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
        }
        staged1 = vec4<f16>(0.0);
        if ((start + 16u) + (local + 128u) / 16u < key_length) {
            staged1 = key_data[(base + (start + 16u) + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
        }
        staged2 = vec4<f16>(0.0);
        if ((start + 16u) + (local + 0u) / 16u < key_length) {
            staged2 = value_data[(base + (start + 16u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
        }
        staged3 = vec4<f16>(0.0);
        if ((start + 16u) + (local + 128u) / 16u < key_length) {
            staged3 = value_data[(base + (start + 16u) + (local + 128u) / 16u) * 16u + (local + 128u) % 16u];
        }
        {
            var s = array<vec4<f32>, 2>();
            let k_at0 = 4608u + 0u;
            let k0 = vec3<u32>(k_at0, 1u, 72u);
            s = emulated_multiply_add(q0, k0, s);
            let k_at1 = 4608u + 16u;
            let k1 = vec3<u32>(k_at1, 1u, 72u);
            s = emulated_multiply_add(q1, k1, s);
            let k_at2 = 4608u + 32u;
            let k2 = vec3<u32>(k_at2, 1u, 72u);
            s = emulated_multiply_add(q2, k2, s);
            let k_at3 = 4608u + 48u;
            let k3 = vec3<u32>(k_at3, 1u, 72u);
            s = emulated_multiply_add(q3, k3, s);
            let s_at = scratch_at + 0u;
            emulated_store(s, s_at, 20u);
        }
        workgroupBarrier();
        let own = lane_half * 8u;
        let other = 8u - own;
        var max0 = -3.0e38;
        var max1 = -3.0e38;
        var max2 = -3.0e38;
        var max3 = -3.0e38;
        let s0 = scratch[lane_scratch + own + c0] * params.scale + bias_tile[own + c0];
        let valid0 = start + own + c0 < key_length && bias_tile[own + c0] > -1.0e38;
        max0 = select(max0, max(max0, s0), valid0);
        let t0 = scratch[lane_scratch + other + c0] * params.scale + bias_tile[other + c0];
        max0 = select(max0, max(max0, t0), start + other + c0 < key_length && bias_tile[other + c0] > -1.0e38);
        let s1 = scratch[lane_scratch + own + c1] * params.scale + bias_tile[own + c1];
        let valid1 = start + own + c1 < key_length && bias_tile[own + c1] > -1.0e38;
        max1 = select(max1, max(max1, s1), valid1);
        let t1 = scratch[lane_scratch + other + c1] * params.scale + bias_tile[other + c1];
        max1 = select(max1, max(max1, t1), start + other + c1 < key_length && bias_tile[other + c1] > -1.0e38);
        let s2 = scratch[lane_scratch + own + c2] * params.scale + bias_tile[own + c2];
        let valid2 = start + own + c2 < key_length && bias_tile[own + c2] > -1.0e38;
        max2 = select(max2, max(max2, s2), valid2);
        let t2 = scratch[lane_scratch + other + c2] * params.scale + bias_tile[other + c2];
        max2 = select(max2, max(max2, t2), start + other + c2 < key_length && bias_tile[other + c2] > -1.0e38);
        let s3 = scratch[lane_scratch + own + c3] * params.scale + bias_tile[own + c3];
        let valid3 = start + own + c3 < key_length && bias_tile[own + c3] > -1.0e38;
        max3 = select(max3, max(max3, s3), valid3);
        let t3 = scratch[lane_scratch + other + c3] * params.scale + bias_tile[other + c3];
        max3 = select(max3, max(max3, t3), start + other + c3 < key_length && bias_tile[other + c3] > -1.0e38);
        let s4 = scratch[lane_scratch + own + c4] * params.scale + bias_tile[own + c4];
        let valid4 = start + own + c4 < key_length && bias_tile[own + c4] > -1.0e38;
        max0 = select(max0, max(max0, s4), valid4);
        let t4 = scratch[lane_scratch + other + c4] * params.scale + bias_tile[other + c4];
        max0 = select(max0, max(max0, t4), start + other + c4 < key_length && bias_tile[other + c4] > -1.0e38);
        let s5 = scratch[lane_scratch + own + c5] * params.scale + bias_tile[own + c5];
        let valid5 = start + own + c5 < key_length && bias_tile[own + c5] > -1.0e38;
        max1 = select(max1, max(max1, s5), valid5);
        let t5 = scratch[lane_scratch + other + c5] * params.scale + bias_tile[other + c5];
        max1 = select(max1, max(max1, t5), start + other + c5 < key_length && bias_tile[other + c5] > -1.0e38);
        let s6 = scratch[lane_scratch + own + c6] * params.scale + bias_tile[own + c6];
        let valid6 = start + own + c6 < key_length && bias_tile[own + c6] > -1.0e38;
        max2 = select(max2, max(max2, s6), valid6);
        let t6 = scratch[lane_scratch + other + c6] * params.scale + bias_tile[other + c6];
        max2 = select(max2, max(max2, t6), start + other + c6 < key_length && bias_tile[other + c6] > -1.0e38);
        let s7 = scratch[lane_scratch + own + c7] * params.scale + bias_tile[own + c7];
        let valid7 = start + own + c7 < key_length && bias_tile[own + c7] > -1.0e38;
        max3 = select(max3, max(max3, s7), valid7);
        let t7 = scratch[lane_scratch + other + c7] * params.scale + bias_tile[other + c7];
        max3 = select(max3, max(max3, t7), start + other + c7 < key_length && bias_tile[other + c7] > -1.0e38);
        let half_max = max(max(max0, max1), max(max2, max3));
        let tile_max = half_max;
        let new_max = max(running_max, tile_max);
        let correction = exp(running_max - new_max);
        running_max = new_max;
        let p_at = 6912u + my_row * 24u + own;
        let p0 = select(0.0, exp(s0 - new_max), valid0);
        tiles[p_at + c0] = f16(p0);
        let p1 = select(0.0, exp(s1 - new_max), valid1);
        tiles[p_at + c1] = f16(p1);
        let p2 = select(0.0, exp(s2 - new_max), valid2);
        tiles[p_at + c2] = f16(p2);
        let p3 = select(0.0, exp(s3 - new_max), valid3);
        tiles[p_at + c3] = f16(p3);
        let p4 = select(0.0, exp(s4 - new_max), valid4);
        tiles[p_at + c4] = f16(p4);
        let p5 = select(0.0, exp(s5 - new_max), valid5);
        tiles[p_at + c5] = f16(p5);
        let p6 = select(0.0, exp(s6 - new_max), valid6);
        tiles[p_at + c6] = f16(p6);
        let p7 = select(0.0, exp(s7 - new_max), valid7);
        tiles[p_at + c7] = f16(p7);
        running_sum = running_sum * correction + (p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7);
        o0_0 = o0_0 * correction;
        o0_1 = o0_1 * correction;
        o1_0 = o1_0 * correction;
        o1_1 = o1_1 * correction;
        o2_0 = o2_0 * correction;
        o2_1 = o2_1 * correction;
        o3_0 = o3_0 * correction;
        o3_1 = o3_1 * correction;
        workgroupBarrier();
        {
            var pv0 = array<vec4<f32>, 2>();
            let p_at0 = 6912u + sub_row * 24u + 0u;
            let p0 = vec3<u32>(p_at0, 24u, 1u);
            let v_at0_0 = 5760u;
            let v0_0 = vec3<u32>(v_at0_0, 72u, 1u);
            pv0 = emulated_multiply_add(p0, v0_0, pv0);
            let pv_at0 = scratch_at + 0u;
            emulated_store(pv0, pv_at0, 20u);
        }
        workgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o0_0 = o0_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o0_1 = o0_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        workgroupBarrier();
        {
            var pv1 = array<vec4<f32>, 2>();
            let p_at0 = 6912u + sub_row * 24u + 0u;
            let p0 = vec3<u32>(p_at0, 24u, 1u);
            let v_at0_1 = 5776u;
            let v0_1 = vec3<u32>(v_at0_1, 72u, 1u);
            pv1 = emulated_multiply_add(p0, v0_1, pv1);
            let pv_at1 = scratch_at + 0u;
            emulated_store(pv1, pv_at1, 20u);
        }
        workgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o1_0 = o1_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o1_1 = o1_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        workgroupBarrier();
        {
            var pv2 = array<vec4<f32>, 2>();
            let p_at0 = 6912u + sub_row * 24u + 0u;
            let p0 = vec3<u32>(p_at0, 24u, 1u);
            let v_at0_2 = 5792u;
            let v0_2 = vec3<u32>(v_at0_2, 72u, 1u);
            pv2 = emulated_multiply_add(p0, v0_2, pv2);
            let pv_at2 = scratch_at + 0u;
            emulated_store(pv2, pv_at2, 20u);
        }
        workgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o2_0 = o2_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o2_1 = o2_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        workgroupBarrier();
        {
            var pv3 = array<vec4<f32>, 2>();
            let p_at0 = 6912u + sub_row * 24u + 0u;
            let p0 = vec3<u32>(p_at0, 24u, 1u);
            let v_at0_3 = 5808u;
            let v0_3 = vec3<u32>(v_at0_3, 72u, 1u);
            pv3 = emulated_multiply_add(p0, v0_3, pv3);
            let pv_at3 = scratch_at + 0u;
            emulated_store(pv3, pv_at3, 20u);
        }
        workgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o3_0 = o3_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o3_1 = o3_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
    }
    workgroupBarrier();
    scratch[subgroup * 32u + lane] = running_sum;
    workgroupBarrier();
    let total = running_sum + scratch[subgroup * 32u + (lane ^ 1u)];
    if (row < length) {
        let has_keys = total > 0.0;
        let inverse = select(0.0, 1.0 / total, has_keys);
        let out_at = (head * length + row) * 16u + lane_half * 2u;
        output_data[out_at + 0u] = vec4<f16>(o0_0 * inverse);
        output_data[out_at + 1u] = vec4<f16>(o0_1 * inverse);
        output_data[out_at + 4u] = vec4<f16>(o1_0 * inverse);
        output_data[out_at + 5u] = vec4<f16>(o1_1 * inverse);
        output_data[out_at + 8u] = vec4<f16>(o2_0 * inverse);
        output_data[out_at + 9u] = vec4<f16>(o2_1 * inverse);
        output_data[out_at + 12u] = vec4<f16>(o3_0 * inverse);
        output_data[out_at + 13u] = vec4<f16>(o3_1 * inverse);
        if (lane_half == 0u) {
            logsumexp_data[head * length + row] = select(0.0, running_max + log(total), has_keys);
        }
    }
}
