enable f16;
enable wgpu_cooperative_matrix;
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
@group(0) @binding(4) var<storage, read_write> output_data: array<vec4<f16>>;
@group(0) @binding(5) var<storage, read_write> logsumexp_data: array<f32>;
@group(0) @binding(6) var<storage, read> flag_data: array<u32>;
// Q [128][40] at 0 (2 column parts), K [16][72] at 0, V [16][72] at 1152, P [128][24] at 2304.
var<workgroup> tiles: array<f16, 5376>;
// One 16 x 20 f32 tile per subgroup (scores, then P V).
var<workgroup> scratch: array<f32, 2560>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32,
        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * 128u;
    // This lane's query row (block-relative and global), and which half of a key tile it
    // exponentiates and which 8 of every 16 value columns it accumulates.
    let sub_row = subgroup * 16u;
    let my_row = sub_row + lane / 2u;
    let row = row0 + my_row;
    let lane_half = lane % 2u;
    let scratch_at = subgroup * 320u;
    let lane_scratch = scratch_at + (lane / 2u) * 20u;
    let query_base = head * length;
    if (local == 0u) {
        scratch[0] = f32(flag_data[head * ((length + 128u - 1u) / 128u) + workgroup.x]);
    }
    if (workgroupUniformLoad(&scratch[0]) == 0.0) {
        return;
    }
    for (var vector = local; vector < 1024u; vector += 256u) {
        let row = vector / 8u;
        let column = vector % 8u;
        var value = vec4<f16>(0.0);
        if (row0 + row < length) {
            value = query_data[(query_base + row0 + row) * 16u + 0u + column];
        }
        let at = 0u + row * 40u + column * 4u;
        tiles[at] = value.x;
        tiles[at + 1u] = value.y;
        tiles[at + 2u] = value.z;
        tiles[at + 3u] = value.w;
    }
    workgroupBarrier();
    let q_at0 = sub_row * 40u + 0u;
    let q0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at0], 40u);
    let q_at1 = sub_row * 40u + 16u;
    let q1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at1], 40u);
    workgroupBarrier();
    for (var vector = local; vector < 1024u; vector += 256u) {
        let row = vector / 8u;
        let column = vector % 8u;
        var value = vec4<f16>(0.0);
        if (row0 + row < length) {
            value = query_data[(query_base + row0 + row) * 16u + 8u + column];
        }
        let at = 0u + row * 40u + column * 4u;
        tiles[at] = value.x;
        tiles[at + 1u] = value.y;
        tiles[at + 2u] = value.z;
        tiles[at + 3u] = value.w;
    }
    workgroupBarrier();
    let q_at2 = sub_row * 40u + 0u;
    let q2 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at2], 40u);
    let q_at3 = sub_row * 40u + 16u;
    let q3 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at3], 40u);
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
    if (0u + (local + 0u) / 16u < key_length) {
        staged1 = value_data[(base + 0u + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    for (var start = 0u; start < key_end; start += 16u) {
        workgroupBarrier();
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
            let at = 1152u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged1.xy, staged1.zw, swapped);
            let second = select(staged1.zw, staged1.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        workgroupBarrier();
        staged0 = vec4<f16>(0.0);
        if ((start + 16u) + (local + 0u) / 16u < key_length) {
            staged0 = key_data[(base + (start + 16u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
        }
        staged1 = vec4<f16>(0.0);
        if ((start + 16u) + (local + 0u) / 16u < key_length) {
            staged1 = value_data[(base + (start + 16u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
        }
        {
            var s = coop_mat16x16<f32, C>();
            let k_at0 = 0u + 0u;
            let k0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at0], 72u);
            s = coopMultiplyAdd(q0, k0, s);
            let k_at1 = 0u + 16u;
            let k1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at1], 72u);
            s = coopMultiplyAdd(q1, k1, s);
            let k_at2 = 0u + 32u;
            let k2 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at2], 72u);
            s = coopMultiplyAdd(q2, k2, s);
            let k_at3 = 0u + 48u;
            let k3 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at3], 72u);
            s = coopMultiplyAdd(q3, k3, s);
            let s_at = scratch_at + 0u;
            coopStoreT(s, &scratch[s_at], 20u);
        }
        subgroupBarrier();
        let own = lane_half * 8u;
        let other = 8u - own;
        var max0 = -3.0e38;
        var max1 = -3.0e38;
        var max2 = -3.0e38;
        var max3 = -3.0e38;
        let s0 = scratch[lane_scratch + own + c0] * params.scale;
        let valid0 = start + own + c0 < key_length;
        max0 = select(max0, max(max0, s0), valid0);
        let s1 = scratch[lane_scratch + own + c1] * params.scale;
        let valid1 = start + own + c1 < key_length;
        max1 = select(max1, max(max1, s1), valid1);
        let s2 = scratch[lane_scratch + own + c2] * params.scale;
        let valid2 = start + own + c2 < key_length;
        max2 = select(max2, max(max2, s2), valid2);
        let s3 = scratch[lane_scratch + own + c3] * params.scale;
        let valid3 = start + own + c3 < key_length;
        max3 = select(max3, max(max3, s3), valid3);
        let s4 = scratch[lane_scratch + own + c4] * params.scale;
        let valid4 = start + own + c4 < key_length;
        max0 = select(max0, max(max0, s4), valid4);
        let s5 = scratch[lane_scratch + own + c5] * params.scale;
        let valid5 = start + own + c5 < key_length;
        max1 = select(max1, max(max1, s5), valid5);
        let s6 = scratch[lane_scratch + own + c6] * params.scale;
        let valid6 = start + own + c6 < key_length;
        max2 = select(max2, max(max2, s6), valid6);
        let s7 = scratch[lane_scratch + own + c7] * params.scale;
        let valid7 = start + own + c7 < key_length;
        max3 = select(max3, max(max3, s7), valid7);
        let half_max = max(max(max0, max1), max(max2, max3));
        let tile_max = max(half_max, subgroupShuffleXor(half_max, 1u));
        let new_max = max(running_max, tile_max);
        let correction = exp(running_max - new_max);
        running_max = new_max;
        let p_at = 2304u + my_row * 24u + own;
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
        subgroupBarrier();
        {
            var pv0 = coop_mat16x16<f32, C>();
            let p_at0 = 2304u + sub_row * 24u + 0u;
            let p0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at0], 24u);
            let v_at0_0 = 1152u;
            let v0_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_0], 72u);
            pv0 = coopMultiplyAdd(p0, v0_0, pv0);
            let pv_at0 = scratch_at + 0u;
            coopStoreT(pv0, &scratch[pv_at0], 20u);
        }
        subgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o0_0 = o0_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o0_1 = o0_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        subgroupBarrier();
        {
            var pv1 = coop_mat16x16<f32, C>();
            let p_at0 = 2304u + sub_row * 24u + 0u;
            let p0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at0], 24u);
            let v_at0_1 = 1168u;
            let v0_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_1], 72u);
            pv1 = coopMultiplyAdd(p0, v0_1, pv1);
            let pv_at1 = scratch_at + 0u;
            coopStoreT(pv1, &scratch[pv_at1], 20u);
        }
        subgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o1_0 = o1_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o1_1 = o1_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        subgroupBarrier();
        {
            var pv2 = coop_mat16x16<f32, C>();
            let p_at0 = 2304u + sub_row * 24u + 0u;
            let p0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at0], 24u);
            let v_at0_2 = 1184u;
            let v0_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_2], 72u);
            pv2 = coopMultiplyAdd(p0, v0_2, pv2);
            let pv_at2 = scratch_at + 0u;
            coopStoreT(pv2, &scratch[pv_at2], 20u);
        }
        subgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o2_0 = o2_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o2_1 = o2_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        subgroupBarrier();
        {
            var pv3 = coop_mat16x16<f32, C>();
            let p_at0 = 2304u + sub_row * 24u + 0u;
            let p0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at0], 24u);
            let v_at0_3 = 1200u;
            let v0_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_3], 72u);
            pv3 = coopMultiplyAdd(p0, v0_3, pv3);
            let pv_at3 = scratch_at + 0u;
            coopStoreT(pv3, &scratch[pv_at3], 20u);
        }
        subgroupBarrier();
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
