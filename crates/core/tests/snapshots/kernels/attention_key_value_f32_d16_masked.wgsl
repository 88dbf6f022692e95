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
@group(0) @binding(4) var<storage, read> grad_data: array<vec4<S>>;
@group(0) @binding(5) var<storage, read> statistics_data: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read> key_bias_data: array<f32>;
@group(0) @binding(7) var<storage, read_write> key_value_grad_data: array<vec4<S>>;
var<workgroup> query_tile: array<vec4<f32>, 128>;
var<workgroup> grad_tile: array<vec4<f32>, 128>;
var<workgroup> logsumexp_tile: array<f32, 32>;
var<workgroup> delta_tile: array<f32, 32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row = workgroup.x * 64u + local;
    let own = head * key_length + min(row, key_length - 1u);
    let row_bias = vec4<f32>(key_bias_data[(head / params.bias_group) * key_length + min(row, key_length - 1u)]);
    let k0 = vec4<f32>(key_data[(own) * 4u + 0u]);
    let k1 = vec4<f32>(key_data[(own) * 4u + 1u]);
    let k2 = vec4<f32>(key_data[(own) * 4u + 2u]);
    let k3 = vec4<f32>(key_data[(own) * 4u + 3u]);
    let v0 = vec4<f32>(value_data[(own) * 4u + 0u]);
    let v1 = vec4<f32>(value_data[(own) * 4u + 1u]);
    let v2 = vec4<f32>(value_data[(own) * 4u + 2u]);
    let v3 = vec4<f32>(value_data[(own) * 4u + 3u]);
    var dk0 = vec4<f32>(0.0);
    var dk1 = vec4<f32>(0.0);
    var dk2 = vec4<f32>(0.0);
    var dk3 = vec4<f32>(0.0);
    var dv0 = vec4<f32>(0.0);
    var dv1 = vec4<f32>(0.0);
    var dv2 = vec4<f32>(0.0);
    var dv3 = vec4<f32>(0.0);
    let base = head * length;
    for (var start = 0u; start < length; start += 32u) {
        workgroupBarrier();
        for (var i = local; i < 128u; i += 64u) {
            let r = start + i / 4u;
            var staged = vec4<f32>(0.0);
            if (r < length) {
                staged = vec4<f32>(query_data[base * 4u + r * 4u + i % 4u]);
            }
            query_tile[i] = staged;
        }
        for (var i = local; i < 128u; i += 64u) {
            let r = start + i / 4u;
            var staged = vec4<f32>(0.0);
            if (r < length) {
                staged = vec4<f32>(grad_data[base * 4u + r * 4u + i % 4u]);
            }
            grad_tile[i] = staged;
        }
        if (local < 32u) {
            let r = start + local;
            var lse = 0.0;
            var delta = 0.0;
            if (r < length) {
                let statistics = statistics_data[base + r];
                lse = statistics.x;
                delta = statistics.y;
            }
            logsumexp_tile[local] = lse;
            delta_tile[local] = delta;
        }
        workgroupBarrier();
        for (var r = 0u; r < 32u; r += 8u) {
            let bq0 = (r + 0u) * 4u;
            let bq1 = (r + 1u) * 4u;
            let bq2 = (r + 2u) * 4u;
            let bq3 = (r + 3u) * 4u;
            let bq4 = (r + 4u) * 4u;
            let bq5 = (r + 5u) * 4u;
            let bq6 = (r + 6u) * 4u;
            let bq7 = (r + 7u) * 4u;
            let bg0 = (r + 0u) * 4u;
            let bg1 = (r + 1u) * 4u;
            let bg2 = (r + 2u) * 4u;
            let bg3 = (r + 3u) * 4u;
            let bg4 = (r + 4u) * 4u;
            let bg5 = (r + 5u) * 4u;
            let bg6 = (r + 6u) * 4u;
            let bg7 = (r + 7u) * 4u;
            let bias_0 = row_bias;
            let bias_1 = row_bias;
            let s_0 = vec4<f32>(dot(k0, query_tile[bq0 + 0u]) + dot(k1, query_tile[bq0 + 1u]) + dot(k2, query_tile[bq0 + 2u]) + dot(k3, query_tile[bq0 + 3u]),
                dot(k0, query_tile[bq1 + 0u]) + dot(k1, query_tile[bq1 + 1u]) + dot(k2, query_tile[bq1 + 2u]) + dot(k3, query_tile[bq1 + 3u]),
                dot(k0, query_tile[bq2 + 0u]) + dot(k1, query_tile[bq2 + 1u]) + dot(k2, query_tile[bq2 + 2u]) + dot(k3, query_tile[bq2 + 3u]),
                dot(k0, query_tile[bq3 + 0u]) + dot(k1, query_tile[bq3 + 1u]) + dot(k2, query_tile[bq3 + 2u]) + dot(k3, query_tile[bq3 + 3u])) * params.scale + bias_0;
            let s_1 = vec4<f32>(dot(k0, query_tile[bq4 + 0u]) + dot(k1, query_tile[bq4 + 1u]) + dot(k2, query_tile[bq4 + 2u]) + dot(k3, query_tile[bq4 + 3u]),
                dot(k0, query_tile[bq5 + 0u]) + dot(k1, query_tile[bq5 + 1u]) + dot(k2, query_tile[bq5 + 2u]) + dot(k3, query_tile[bq5 + 3u]),
                dot(k0, query_tile[bq6 + 0u]) + dot(k1, query_tile[bq6 + 1u]) + dot(k2, query_tile[bq6 + 2u]) + dot(k3, query_tile[bq6 + 3u]),
                dot(k0, query_tile[bq7 + 0u]) + dot(k1, query_tile[bq7 + 1u]) + dot(k2, query_tile[bq7 + 2u]) + dot(k3, query_tile[bq7 + 3u])) * params.scale + bias_1;
            let index_0 = start + r + vec4<u32>(0u, 1u, 2u, 3u);
            let valid_0 = (index_0 < vec4<u32>(length)) & (bias_0 > vec4<f32>(-1.0e38));
            let index_1 = start + r + vec4<u32>(4u, 5u, 6u, 7u);
            let valid_1 = (index_1 < vec4<u32>(length)) & (bias_1 > vec4<f32>(-1.0e38));
            let p_0 = select(vec4<f32>(0.0), exp(s_0 - vec4<f32>(logsumexp_tile[r + 0u], logsumexp_tile[r + 1u], logsumexp_tile[r + 2u], logsumexp_tile[r + 3u])), valid_0);
            let dp_0 = vec4<f32>(dot(v0, grad_tile[bg0 + 0u]) + dot(v1, grad_tile[bg0 + 1u]) + dot(v2, grad_tile[bg0 + 2u]) + dot(v3, grad_tile[bg0 + 3u]),
            dot(v0, grad_tile[bg1 + 0u]) + dot(v1, grad_tile[bg1 + 1u]) + dot(v2, grad_tile[bg1 + 2u]) + dot(v3, grad_tile[bg1 + 3u]),
            dot(v0, grad_tile[bg2 + 0u]) + dot(v1, grad_tile[bg2 + 1u]) + dot(v2, grad_tile[bg2 + 2u]) + dot(v3, grad_tile[bg2 + 3u]),
            dot(v0, grad_tile[bg3 + 0u]) + dot(v1, grad_tile[bg3 + 1u]) + dot(v2, grad_tile[bg3 + 2u]) + dot(v3, grad_tile[bg3 + 3u]));
            let ds_0 = p_0 * (dp_0 - vec4<f32>(delta_tile[r + 0u], delta_tile[r + 1u], delta_tile[r + 2u], delta_tile[r + 3u])) * params.scale;
            let p_1 = select(vec4<f32>(0.0), exp(s_1 - vec4<f32>(logsumexp_tile[r + 4u], logsumexp_tile[r + 5u], logsumexp_tile[r + 6u], logsumexp_tile[r + 7u])), valid_1);
            let dp_1 = vec4<f32>(dot(v0, grad_tile[bg4 + 0u]) + dot(v1, grad_tile[bg4 + 1u]) + dot(v2, grad_tile[bg4 + 2u]) + dot(v3, grad_tile[bg4 + 3u]),
            dot(v0, grad_tile[bg5 + 0u]) + dot(v1, grad_tile[bg5 + 1u]) + dot(v2, grad_tile[bg5 + 2u]) + dot(v3, grad_tile[bg5 + 3u]),
            dot(v0, grad_tile[bg6 + 0u]) + dot(v1, grad_tile[bg6 + 1u]) + dot(v2, grad_tile[bg6 + 2u]) + dot(v3, grad_tile[bg6 + 3u]),
            dot(v0, grad_tile[bg7 + 0u]) + dot(v1, grad_tile[bg7 + 1u]) + dot(v2, grad_tile[bg7 + 2u]) + dot(v3, grad_tile[bg7 + 3u]));
            let ds_1 = p_1 * (dp_1 - vec4<f32>(delta_tile[r + 4u], delta_tile[r + 5u], delta_tile[r + 6u], delta_tile[r + 7u])) * params.scale;
            dv0 = dv0 + p_0.x * grad_tile[bg0 + 0u] + p_0.y * grad_tile[bg1 + 0u] + p_0.z * grad_tile[bg2 + 0u] + p_0.w * grad_tile[bg3 + 0u] + p_1.x * grad_tile[bg4 + 0u] + p_1.y * grad_tile[bg5 + 0u] + p_1.z * grad_tile[bg6 + 0u] + p_1.w * grad_tile[bg7 + 0u];
            dv1 = dv1 + p_0.x * grad_tile[bg0 + 1u] + p_0.y * grad_tile[bg1 + 1u] + p_0.z * grad_tile[bg2 + 1u] + p_0.w * grad_tile[bg3 + 1u] + p_1.x * grad_tile[bg4 + 1u] + p_1.y * grad_tile[bg5 + 1u] + p_1.z * grad_tile[bg6 + 1u] + p_1.w * grad_tile[bg7 + 1u];
            dv2 = dv2 + p_0.x * grad_tile[bg0 + 2u] + p_0.y * grad_tile[bg1 + 2u] + p_0.z * grad_tile[bg2 + 2u] + p_0.w * grad_tile[bg3 + 2u] + p_1.x * grad_tile[bg4 + 2u] + p_1.y * grad_tile[bg5 + 2u] + p_1.z * grad_tile[bg6 + 2u] + p_1.w * grad_tile[bg7 + 2u];
            dv3 = dv3 + p_0.x * grad_tile[bg0 + 3u] + p_0.y * grad_tile[bg1 + 3u] + p_0.z * grad_tile[bg2 + 3u] + p_0.w * grad_tile[bg3 + 3u] + p_1.x * grad_tile[bg4 + 3u] + p_1.y * grad_tile[bg5 + 3u] + p_1.z * grad_tile[bg6 + 3u] + p_1.w * grad_tile[bg7 + 3u];
            dk0 = dk0 + ds_0.x * query_tile[bq0 + 0u] + ds_0.y * query_tile[bq1 + 0u] + ds_0.z * query_tile[bq2 + 0u] + ds_0.w * query_tile[bq3 + 0u] + ds_1.x * query_tile[bq4 + 0u] + ds_1.y * query_tile[bq5 + 0u] + ds_1.z * query_tile[bq6 + 0u] + ds_1.w * query_tile[bq7 + 0u];
            dk1 = dk1 + ds_0.x * query_tile[bq0 + 1u] + ds_0.y * query_tile[bq1 + 1u] + ds_0.z * query_tile[bq2 + 1u] + ds_0.w * query_tile[bq3 + 1u] + ds_1.x * query_tile[bq4 + 1u] + ds_1.y * query_tile[bq5 + 1u] + ds_1.z * query_tile[bq6 + 1u] + ds_1.w * query_tile[bq7 + 1u];
            dk2 = dk2 + ds_0.x * query_tile[bq0 + 2u] + ds_0.y * query_tile[bq1 + 2u] + ds_0.z * query_tile[bq2 + 2u] + ds_0.w * query_tile[bq3 + 2u] + ds_1.x * query_tile[bq4 + 2u] + ds_1.y * query_tile[bq5 + 2u] + ds_1.z * query_tile[bq6 + 2u] + ds_1.w * query_tile[bq7 + 2u];
            dk3 = dk3 + ds_0.x * query_tile[bq0 + 3u] + ds_0.y * query_tile[bq1 + 3u] + ds_0.z * query_tile[bq2 + 3u] + ds_0.w * query_tile[bq3 + 3u] + ds_1.x * query_tile[bq4 + 3u] + ds_1.y * query_tile[bq5 + 3u] + ds_1.z * query_tile[bq6 + 3u] + ds_1.w * query_tile[bq7 + 3u];
        }
    }
    if (row < key_length) {
        let value_start = params.batch_heads * key_length * 4u;
        key_value_grad_data[own * 4u + 0u] = vec4<S>(dk0);
        key_value_grad_data[own * 4u + 1u] = vec4<S>(dk1);
        key_value_grad_data[own * 4u + 2u] = vec4<S>(dk2);
        key_value_grad_data[own * 4u + 3u] = vec4<S>(dk3);
        key_value_grad_data[value_start + own * 4u + 0u] = vec4<S>(dv0);
        key_value_grad_data[value_start + own * 4u + 1u] = vec4<S>(dv1);
        key_value_grad_data[value_start + own * 4u + 2u] = vec4<S>(dv2);
        key_value_grad_data[value_start + own * 4u + 3u] = vec4<S>(dv3);
    }
}
