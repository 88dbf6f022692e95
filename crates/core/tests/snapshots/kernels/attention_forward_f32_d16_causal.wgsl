alias S = f32;
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
@group(0) @binding(1) var<storage, read> query_data: array<vec4<S>>;
@group(0) @binding(2) var<storage, read> key_data: array<vec4<S>>;
@group(0) @binding(3) var<storage, read> value_data: array<vec4<S>>;
@group(0) @binding(4) var<storage, read_write> output_data: array<vec4<S>>;
@group(0) @binding(5) var<storage, read_write> logsumexp_data: array<f32>;
var<workgroup> key_tile: array<vec4<f32>, 128>;
var<workgroup> value_tile: array<vec4<f32>, 128>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * 64u;
    let row = row0 + local;
    // Invocations past the last row compute on a copy of it (they must reach the barriers)
    // and write nothing.
    let clamped = min(row, length - 1u);
    let own = head * length + clamped;
    // The operands are read through views (`AttentionRows` in geometry.rs): batch-head
    // `head` is head `head % heads` of batch `head / heads`.
    let batch_index = head / params.heads;
    let head_index = head % params.heads;
    let query_at = params.query_offset + batch_index * params.query_batch + head_index * params.query_head + clamped * params.query_row;
    let key_at = params.key_offset + batch_index * params.key_batch + head_index * params.key_head;
    let value_at = params.value_offset + batch_index * params.value_batch + head_index * params.value_head;
    let q0 = vec4<f32>(query_data[query_at + 0u]);
    let q1 = vec4<f32>(query_data[query_at + 1u]);
    let q2 = vec4<f32>(query_data[query_at + 2u]);
    let q3 = vec4<f32>(query_data[query_at + 3u]);
    var o0 = vec4<f32>(0.0);
    var o1 = vec4<f32>(0.0);
    var o2 = vec4<f32>(0.0);
    var o3 = vec4<f32>(0.0);
    var running_max = -3.0e38;
    var running_sum = 0.0;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = min(key_length, row0 + 64u);
    for (var start = 0u; start < key_end; start += 32u) {
        workgroupBarrier();
        for (var i = local; i < 128u; i += 64u) {
            let r = start + i / 4u;
            var staged = vec4<f32>(0.0);
            if (r < key_length) {
                staged = vec4<f32>(key_data[key_at + r * params.key_row + i % 4u]);
            }
            key_tile[i] = staged;
        }
        for (var i = local; i < 128u; i += 64u) {
            let r = start + i / 4u;
            var staged = vec4<f32>(0.0);
            if (r < key_length) {
                staged = vec4<f32>(value_data[value_at + r * params.value_row + i % 4u]);
            }
            value_tile[i] = staged;
        }
        workgroupBarrier();
        for (var r = 0u; r < 32u; r += 8u) {
            let bk0 = (r + 0u) * 4u;
            let bk1 = (r + 1u) * 4u;
            let bk2 = (r + 2u) * 4u;
            let bk3 = (r + 3u) * 4u;
            let bk4 = (r + 4u) * 4u;
            let bk5 = (r + 5u) * 4u;
            let bk6 = (r + 6u) * 4u;
            let bk7 = (r + 7u) * 4u;
            let bv0 = (r + 0u) * 4u;
            let bv1 = (r + 1u) * 4u;
            let bv2 = (r + 2u) * 4u;
            let bv3 = (r + 3u) * 4u;
            let bv4 = (r + 4u) * 4u;
            let bv5 = (r + 5u) * 4u;
            let bv6 = (r + 6u) * 4u;
            let bv7 = (r + 7u) * 4u;
            let s_0 = vec4<f32>(dot(q0, key_tile[bk0 + 0u]) + dot(q1, key_tile[bk0 + 1u]) + dot(q2, key_tile[bk0 + 2u]) + dot(q3, key_tile[bk0 + 3u]),
                dot(q0, key_tile[bk1 + 0u]) + dot(q1, key_tile[bk1 + 1u]) + dot(q2, key_tile[bk1 + 2u]) + dot(q3, key_tile[bk1 + 3u]),
                dot(q0, key_tile[bk2 + 0u]) + dot(q1, key_tile[bk2 + 1u]) + dot(q2, key_tile[bk2 + 2u]) + dot(q3, key_tile[bk2 + 3u]),
                dot(q0, key_tile[bk3 + 0u]) + dot(q1, key_tile[bk3 + 1u]) + dot(q2, key_tile[bk3 + 2u]) + dot(q3, key_tile[bk3 + 3u])) * params.scale;
            let s_1 = vec4<f32>(dot(q0, key_tile[bk4 + 0u]) + dot(q1, key_tile[bk4 + 1u]) + dot(q2, key_tile[bk4 + 2u]) + dot(q3, key_tile[bk4 + 3u]),
                dot(q0, key_tile[bk5 + 0u]) + dot(q1, key_tile[bk5 + 1u]) + dot(q2, key_tile[bk5 + 2u]) + dot(q3, key_tile[bk5 + 3u]),
                dot(q0, key_tile[bk6 + 0u]) + dot(q1, key_tile[bk6 + 1u]) + dot(q2, key_tile[bk6 + 2u]) + dot(q3, key_tile[bk6 + 3u]),
                dot(q0, key_tile[bk7 + 0u]) + dot(q1, key_tile[bk7 + 1u]) + dot(q2, key_tile[bk7 + 2u]) + dot(q3, key_tile[bk7 + 3u])) * params.scale;
            let index_0 = start + r + vec4<u32>(0u, 1u, 2u, 3u);
            let valid_0 = (index_0 < vec4<u32>(key_length)) & (index_0 <= vec4<u32>(row));
            let index_1 = start + r + vec4<u32>(4u, 5u, 6u, 7u);
            let valid_1 = (index_1 < vec4<u32>(key_length)) & (index_1 <= vec4<u32>(row));
            var chunk_max = -3.0e38;
            let m_0 = select(vec4<f32>(-3.0e38), s_0, valid_0);
            chunk_max = max(chunk_max, max(max(m_0.x, m_0.y), max(m_0.z, m_0.w)));
            let m_1 = select(vec4<f32>(-3.0e38), s_1, valid_1);
            chunk_max = max(chunk_max, max(max(m_1.x, m_1.y), max(m_1.z, m_1.w)));
            let new_max = max(running_max, chunk_max);
            let correction = exp(running_max - new_max);
            running_max = new_max;
            let p_0 = select(vec4<f32>(0.0), exp(s_0 - vec4<f32>(new_max)), valid_0);
            let p_1 = select(vec4<f32>(0.0), exp(s_1 - vec4<f32>(new_max)), valid_1);
            running_sum = running_sum * correction + dot(p_0 + p_1, vec4<f32>(1.0));
            o0 = o0 * correction;
            o1 = o1 * correction;
            o2 = o2 * correction;
            o3 = o3 * correction;
            o0 = o0 + p_0.x * value_tile[bv0 + 0u] + p_0.y * value_tile[bv1 + 0u] + p_0.z * value_tile[bv2 + 0u] + p_0.w * value_tile[bv3 + 0u] + p_1.x * value_tile[bv4 + 0u] + p_1.y * value_tile[bv5 + 0u] + p_1.z * value_tile[bv6 + 0u] + p_1.w * value_tile[bv7 + 0u];
            o1 = o1 + p_0.x * value_tile[bv0 + 1u] + p_0.y * value_tile[bv1 + 1u] + p_0.z * value_tile[bv2 + 1u] + p_0.w * value_tile[bv3 + 1u] + p_1.x * value_tile[bv4 + 1u] + p_1.y * value_tile[bv5 + 1u] + p_1.z * value_tile[bv6 + 1u] + p_1.w * value_tile[bv7 + 1u];
            o2 = o2 + p_0.x * value_tile[bv0 + 2u] + p_0.y * value_tile[bv1 + 2u] + p_0.z * value_tile[bv2 + 2u] + p_0.w * value_tile[bv3 + 2u] + p_1.x * value_tile[bv4 + 2u] + p_1.y * value_tile[bv5 + 2u] + p_1.z * value_tile[bv6 + 2u] + p_1.w * value_tile[bv7 + 2u];
            o3 = o3 + p_0.x * value_tile[bv0 + 3u] + p_0.y * value_tile[bv1 + 3u] + p_0.z * value_tile[bv2 + 3u] + p_0.w * value_tile[bv3 + 3u] + p_1.x * value_tile[bv4 + 3u] + p_1.y * value_tile[bv5 + 3u] + p_1.z * value_tile[bv6 + 3u] + p_1.w * value_tile[bv7 + 3u];
        }
    }
    if (row < length) {
        let has_keys = running_sum > 0.0;
        let inverse = select(0.0, 1.0 / running_sum, has_keys);
        output_data[own * 4u + 0u] = vec4<S>(o0 * inverse);
        output_data[own * 4u + 1u] = vec4<S>(o1 * inverse);
        output_data[own * 4u + 2u] = vec4<S>(o2 * inverse);
        output_data[own * 4u + 3u] = vec4<S>(o3 * inverse);
        logsumexp_data[own] = select(0.0, running_max + log(running_sum), has_keys);
    }
}
