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
@group(0) @binding(1) var<storage, read> output_data: array<vec4<S>>;
@group(0) @binding(2) var<storage, read> grad_data: array<vec4<S>>;
@group(0) @binding(3) var<storage, read> logsumexp_data: array<f32>;
@group(0) @binding(4) var<storage, read_write> statistics_data: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> query_sums_data: array<vec4<f32>>;
var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let rows = params.batch_heads * params.query_length;
    let at = (workgroup.y * workgroups.x + workgroup.x) * 256u + local;
    var product = 0.0;
    if (at < rows * 4u) {
        product = dot(vec4<f32>(grad_data[at]), vec4<f32>(output_data[at]));
        let own_row = at / 4u;
        let sums_at = ((own_row / params.query_length) * ((params.query_length + 31u) / 32u) * 32u + (own_row % params.query_length)) * 4u;
        let column = at % 4u;
        if (column + 0u < 4u) {
            query_sums_data[sums_at + column + 0u] = vec4<f32>(0.0);
        }
    }
    partial[local] = product;
    workgroupBarrier();
    let own = at / 4u;
    if (local % 4u != 0u || own >= rows) {
        return;
    }
    var total = 0.0;
    total = total + partial[local + 0u];
    total = total + partial[local + 1u];
    total = total + partial[local + 2u];
    total = total + partial[local + 3u];
    statistics_data[own] = vec2<f32>(logsumexp_data[own], total);
}
