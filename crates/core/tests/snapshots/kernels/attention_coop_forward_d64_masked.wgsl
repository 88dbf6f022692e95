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
@group(0) @binding(4) var<storage, read> key_bias_data: array<f32>;
@group(0) @binding(5) var<storage, read_write> output_data: array<vec4<f16>>;
@group(0) @binding(6) var<storage, read_write> logsumexp_data: array<f32>;
// Q [64][72] at 0, K [32][72] at 4608, V [32][72] at 6912, P [64][40] at 9216.
var<workgroup> tiles: array<f16, 11776>;
// One 16 x 36 f32 tile per subgroup (scores, then P V).
var<workgroup> scratch: array<f32, 2304>;
var<workgroup> bias_tile: array<f32, 32>;
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32,
        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32) {
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
    let scratch_at = subgroup * 576u;
    let lane_scratch = scratch_at + (lane / 2u) * 36u;
    {
        let base = head * length;
        for (var i = local; i < 1024u; i += 128u) {
            let r = i / 16u;
            let c = i % 16u;
            var staged = vec4<f16>(0.0);
            if (row0 + r < length) {
                staged = query_data[(base + row0 + r) * 16u + c];
            }
            let at = 0u + r * 72u + c * 4u;
            tiles[at] = staged.x;
            tiles[at + 1u] = staged.y;
            tiles[at + 2u] = staged.z;
            tiles[at + 3u] = staged.w;
        }
    }
    workgroupBarrier();
    let q_at0 = sub_row * 72u + 0u;
    let q0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at0], 72u);
    let q_at1 = sub_row * 72u + 16u;
    let q1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at1], 72u);
    let q_at2 = sub_row * 72u + 32u;
    let q2 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at2], 72u);
    let q_at3 = sub_row * 72u + 48u;
    let q3 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[q_at3], 72u);
    var o0_0 = vec4<f32>(0.0);
    var o0_1 = vec4<f32>(0.0);
    var o1_0 = vec4<f32>(0.0);
    var o1_1 = vec4<f32>(0.0);
    var o2_0 = vec4<f32>(0.0);
    var o2_1 = vec4<f32>(0.0);
    var o3_0 = vec4<f32>(0.0);
    var o3_1 = vec4<f32>(0.0);
    var running_max = -3.0e38;
    var running_sum = 0.0;
    let base = head * key_length;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = key_length;
    for (var start = 0u; start < key_end; start += 32u) {
        workgroupBarrier();
        for (var i = local; i < 512u; i += 128u) {
            let r = i / 16u;
            let c = i % 16u;
            var staged = vec4<f16>(0.0);
            if (start + r < key_length) {
                staged = key_data[(base + start + r) * 16u + c];
            }
            let at = 4608u + r * 72u + c * 4u;
            tiles[at] = staged.x;
            tiles[at + 1u] = staged.y;
            tiles[at + 2u] = staged.z;
            tiles[at + 3u] = staged.w;
        }
        for (var i = local; i < 512u; i += 128u) {
            let r = i / 16u;
            let c = i % 16u;
            var staged = vec4<f16>(0.0);
            if (start + r < key_length) {
                staged = value_data[(base + start + r) * 16u + c];
            }
            let at = 6912u + r * 72u + c * 4u;
            tiles[at] = staged.x;
            tiles[at + 1u] = staged.y;
            tiles[at + 2u] = staged.z;
            tiles[at + 3u] = staged.w;
        }
        if (local < 32u) {
            var bias = -3.0e38;
            if (start + local < key_length) {
                bias = key_bias_data[bias_base + start + local];
            }
            bias_tile[local] = bias;
        }
        workgroupBarrier();
        {
            var s = coop_mat16x16<f32, C>();
            let k_at0 = 4608u + 0u;
            let k0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at0], 72u);
            s = coopMultiplyAdd(q0, k0, s);
            let k_at1 = 4608u + 16u;
            let k1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at1], 72u);
            s = coopMultiplyAdd(q1, k1, s);
            let k_at2 = 4608u + 32u;
            let k2 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at2], 72u);
            s = coopMultiplyAdd(q2, k2, s);
            let k_at3 = 4608u + 48u;
            let k3 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at3], 72u);
            s = coopMultiplyAdd(q3, k3, s);
            let s_at = scratch_at + 0u;
            coopStoreT(s, &scratch[s_at], 36u);
        }
        {
            var s = coop_mat16x16<f32, C>();
            let k_at0 = 5760u + 0u;
            let k0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at0], 72u);
            s = coopMultiplyAdd(q0, k0, s);
            let k_at1 = 5760u + 16u;
            let k1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at1], 72u);
            s = coopMultiplyAdd(q1, k1, s);
            let k_at2 = 5760u + 32u;
            let k2 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at2], 72u);
            s = coopMultiplyAdd(q2, k2, s);
            let k_at3 = 5760u + 48u;
            let k3 = coopLoad<coop_mat16x16<f16, B>>(&tiles[k_at3], 72u);
            s = coopMultiplyAdd(q3, k3, s);
            let s_at = scratch_at + 16u;
            coopStoreT(s, &scratch[s_at], 36u);
        }
        workgroupBarrier();
        var tile_max = -3.0e38;
        for (var c = 0u; c < 32u; c += 1u) {
            let key = start + c;
            let valid = key < key_length && bias_tile[c] > -1.0e38;
            let s = scratch[lane_scratch + c] * params.scale + bias_tile[c];
            tile_max = select(tile_max, max(tile_max, s), valid);
        }
        let new_max = max(running_max, tile_max);
        let correction = exp(running_max - new_max);
        running_max = new_max;
        var tile_sum = 0.0;
        for (var h = 0u; h < 16u; h += 1u) {
            let c = lane_half * 16u + h;
            let key = start + c;
            let valid = key < key_length && bias_tile[c] > -1.0e38;
            let s = scratch[lane_scratch + c] * params.scale + bias_tile[c];
            let p = select(0.0, exp(s - new_max), valid);
            tiles[9216u + my_row * 40u + c] = f16(p);
            tile_sum += p;
        }
        running_sum = running_sum * correction + tile_sum;
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
            var pv0 = coop_mat16x16<f32, C>();
            var pv1 = coop_mat16x16<f32, C>();
            let p_at0 = 9216u + sub_row * 40u + 0u;
            let p0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at0], 40u);
            let v_at0_0 = 6912u;
            let v0_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_0], 72u);
            pv0 = coopMultiplyAdd(p0, v0_0, pv0);
            let v_at0_1 = 6928u;
            let v0_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_1], 72u);
            pv1 = coopMultiplyAdd(p0, v0_1, pv1);
            let p_at1 = 9216u + sub_row * 40u + 16u;
            let p1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at1], 40u);
            let v_at1_0 = 8064u;
            let v1_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at1_0], 72u);
            pv0 = coopMultiplyAdd(p1, v1_0, pv0);
            let v_at1_1 = 8080u;
            let v1_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at1_1], 72u);
            pv1 = coopMultiplyAdd(p1, v1_1, pv1);
            let pv_at0 = scratch_at + 0u;
            coopStoreT(pv0, &scratch[pv_at0], 36u);
            let pv_at1 = scratch_at + 16u;
            coopStoreT(pv1, &scratch[pv_at1], 36u);
        }
        workgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o0_0 = o0_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o0_1 = o0_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            o1_0 = o1_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o1_1 = o1_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        workgroupBarrier();
        {
            var pv2 = coop_mat16x16<f32, C>();
            var pv3 = coop_mat16x16<f32, C>();
            let p_at0 = 9216u + sub_row * 40u + 0u;
            let p0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at0], 40u);
            let v_at0_2 = 6944u;
            let v0_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_2], 72u);
            pv2 = coopMultiplyAdd(p0, v0_2, pv2);
            let v_at0_3 = 6960u;
            let v0_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at0_3], 72u);
            pv3 = coopMultiplyAdd(p0, v0_3, pv3);
            let p_at1 = 9216u + sub_row * 40u + 16u;
            let p1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[p_at1], 40u);
            let v_at1_2 = 8096u;
            let v1_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at1_2], 72u);
            pv2 = coopMultiplyAdd(p1, v1_2, pv2);
            let v_at1_3 = 8112u;
            let v1_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[v_at1_3], 72u);
            pv3 = coopMultiplyAdd(p1, v1_3, pv3);
            let pv_at2 = scratch_at + 0u;
            coopStoreT(pv2, &scratch[pv_at2], 36u);
            let pv_at3 = scratch_at + 16u;
            coopStoreT(pv3, &scratch[pv_at3], 36u);
        }
        workgroupBarrier();
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            o2_0 = o2_0 + vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
            o2_1 = o2_1 + vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]);
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
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
