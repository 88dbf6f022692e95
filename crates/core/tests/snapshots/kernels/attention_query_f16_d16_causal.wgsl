enable f16;
alias S = f16;
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
@group(0) @binding(4) var<storage, read> grad_data: array<vec4<S>>;
@group(0) @binding(5) var<storage, read> statistics_data: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> query_grad_data: array<vec4<S>>;
var<workgroup> key_tile: array<vec4<f32>, 128>;
var<workgroup> value_tile: array<vec4<f32>, 128>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * 64u;
    let row = row0 + local;
    let own = head * length + min(row, length - 1u);
    let q0 = vec4<f32>(query_data[(own) * 4u + 0u]);
    let q1 = vec4<f32>(query_data[(own) * 4u + 1u]);
    let q2 = vec4<f32>(query_data[(own) * 4u + 2u]);
    let q3 = vec4<f32>(query_data[(own) * 4u + 3u]);
    let g0 = vec4<f32>(grad_data[(own) * 4u + 0u]);
    let g1 = vec4<f32>(grad_data[(own) * 4u + 1u]);
    let g2 = vec4<f32>(grad_data[(own) * 4u + 2u]);
    let g3 = vec4<f32>(grad_data[(own) * 4u + 3u]);
    var dq0 = vec4<f32>(0.0);
    var dq1 = vec4<f32>(0.0);
    var dq2 = vec4<f32>(0.0);
    var dq3 = vec4<f32>(0.0);
    let statistics = statistics_data[own];
    let row_logsumexp = vec4<f32>(statistics.x);
    let row_delta = vec4<f32>(statistics.y);
    let base = head * key_length;
    let bias_base = (head / params.bias_group) * key_length;
    let key_end = min(key_length, row0 + 64u);
    for (var start = 0u; start < key_end; start += 32u) {
        workgroupBarrier();
        for (var i = local; i < 128u; i += 64u) {
            let r = start + i / 4u;
            var staged = vec4<f32>(0.0);
            if (r < key_length) {
                staged = vec4<f32>(key_data[base * 4u + r * 4u + i % 4u]);
            }
            key_tile[i] = staged;
        }
        for (var i = local; i < 128u; i += 64u) {
            let r = start + i / 4u;
            var staged = vec4<f32>(0.0);
            if (r < key_length) {
                staged = vec4<f32>(value_data[base * 4u + r * 4u + i % 4u]);
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
            let p_0 = select(vec4<f32>(0.0), exp(s_0 - row_logsumexp), valid_0);
            let dp_0 = vec4<f32>(dot(g0, value_tile[bv0 + 0u]) + dot(g1, value_tile[bv0 + 1u]) + dot(g2, value_tile[bv0 + 2u]) + dot(g3, value_tile[bv0 + 3u]),
            dot(g0, value_tile[bv1 + 0u]) + dot(g1, value_tile[bv1 + 1u]) + dot(g2, value_tile[bv1 + 2u]) + dot(g3, value_tile[bv1 + 3u]),
            dot(g0, value_tile[bv2 + 0u]) + dot(g1, value_tile[bv2 + 1u]) + dot(g2, value_tile[bv2 + 2u]) + dot(g3, value_tile[bv2 + 3u]),
            dot(g0, value_tile[bv3 + 0u]) + dot(g1, value_tile[bv3 + 1u]) + dot(g2, value_tile[bv3 + 2u]) + dot(g3, value_tile[bv3 + 3u]));
            let ds_0 = p_0 * (dp_0 - row_delta) * params.scale;
            let p_1 = select(vec4<f32>(0.0), exp(s_1 - row_logsumexp), valid_1);
            let dp_1 = vec4<f32>(dot(g0, value_tile[bv4 + 0u]) + dot(g1, value_tile[bv4 + 1u]) + dot(g2, value_tile[bv4 + 2u]) + dot(g3, value_tile[bv4 + 3u]),
            dot(g0, value_tile[bv5 + 0u]) + dot(g1, value_tile[bv5 + 1u]) + dot(g2, value_tile[bv5 + 2u]) + dot(g3, value_tile[bv5 + 3u]),
            dot(g0, value_tile[bv6 + 0u]) + dot(g1, value_tile[bv6 + 1u]) + dot(g2, value_tile[bv6 + 2u]) + dot(g3, value_tile[bv6 + 3u]),
            dot(g0, value_tile[bv7 + 0u]) + dot(g1, value_tile[bv7 + 1u]) + dot(g2, value_tile[bv7 + 2u]) + dot(g3, value_tile[bv7 + 3u]));
            let ds_1 = p_1 * (dp_1 - row_delta) * params.scale;
            dq0 = dq0 + ds_0.x * key_tile[bk0 + 0u] + ds_0.y * key_tile[bk1 + 0u] + ds_0.z * key_tile[bk2 + 0u] + ds_0.w * key_tile[bk3 + 0u] + ds_1.x * key_tile[bk4 + 0u] + ds_1.y * key_tile[bk5 + 0u] + ds_1.z * key_tile[bk6 + 0u] + ds_1.w * key_tile[bk7 + 0u];
            dq1 = dq1 + ds_0.x * key_tile[bk0 + 1u] + ds_0.y * key_tile[bk1 + 1u] + ds_0.z * key_tile[bk2 + 1u] + ds_0.w * key_tile[bk3 + 1u] + ds_1.x * key_tile[bk4 + 1u] + ds_1.y * key_tile[bk5 + 1u] + ds_1.z * key_tile[bk6 + 1u] + ds_1.w * key_tile[bk7 + 1u];
            dq2 = dq2 + ds_0.x * key_tile[bk0 + 2u] + ds_0.y * key_tile[bk1 + 2u] + ds_0.z * key_tile[bk2 + 2u] + ds_0.w * key_tile[bk3 + 2u] + ds_1.x * key_tile[bk4 + 2u] + ds_1.y * key_tile[bk5 + 2u] + ds_1.z * key_tile[bk6 + 2u] + ds_1.w * key_tile[bk7 + 2u];
            dq3 = dq3 + ds_0.x * key_tile[bk0 + 3u] + ds_0.y * key_tile[bk1 + 3u] + ds_0.z * key_tile[bk2 + 3u] + ds_0.w * key_tile[bk3 + 3u] + ds_1.x * key_tile[bk4 + 3u] + ds_1.y * key_tile[bk5 + 3u] + ds_1.z * key_tile[bk6 + 3u] + ds_1.w * key_tile[bk7 + 3u];
        }
    }
    if (row < length) {
        query_grad_data[own * 4u + 0u] = vec4<S>(dq0);
        query_grad_data[own * 4u + 1u] = vec4<S>(dq1);
        query_grad_data[own * 4u + 2u] = vec4<S>(dq2);
        query_grad_data[own * 4u + 3u] = vec4<S>(dq3);
    }
}
