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
@group(0) @binding(4) var<storage, read> grad_data: array<vec4<f16>>;
@group(0) @binding(5) var<storage, read> statistics_data: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> key_value_grad_data: array<vec4<f16>>;
// K [128][72] at 0, V [128][72] at 0, Q [32][72] at 0, dO [32][72] at 2304, P [128][40] at 4608, dS [128][40] at 9728.
var<workgroup> tiles: array<f16, 14848>;
// One 16 x 36 f32 tile per subgroup (scores, then their gradients; the epilogue).
var<workgroup> scratch: array<f32, 4608>;
// The tile's (log-sum-exp, D) per query row.
var<workgroup> statistics_tile: array<vec2<f32>, 32>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32,
        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let head = workgroup.y;
    let length = params.query_length;
    let key_length = params.key_length;
    let row0 = workgroup.x * 128u;
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

    let scratch_at = subgroup * 576u;
    let lane_scratch = scratch_at + (lane / 2u) * 36u;
    let bias_base = (head / params.bias_group) * key_length;
    {
        let block_base = head * key_length;
        {
            var staged0 = vec4<f16>(0.0);
            if (row0 + (local + 0u) / 16u < key_length) {
                staged0 = key_data[(block_base + row0 + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            var staged1 = vec4<f16>(0.0);
            if (row0 + (local + 256u) / 16u < key_length) {
                staged1 = key_data[(block_base + row0 + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            var staged2 = vec4<f16>(0.0);
            if (row0 + (local + 512u) / 16u < key_length) {
                staged2 = key_data[(block_base + row0 + (local + 512u) / 16u) * 16u + (local + 512u) % 16u];
            }
            var staged3 = vec4<f16>(0.0);
            if (row0 + (local + 768u) / 16u < key_length) {
                staged3 = key_data[(block_base + row0 + (local + 768u) / 16u) * 16u + (local + 768u) % 16u];
            }
            var staged4 = vec4<f16>(0.0);
            if (row0 + (local + 1024u) / 16u < key_length) {
                staged4 = key_data[(block_base + row0 + (local + 1024u) / 16u) * 16u + (local + 1024u) % 16u];
            }
            var staged5 = vec4<f16>(0.0);
            if (row0 + (local + 1280u) / 16u < key_length) {
                staged5 = key_data[(block_base + row0 + (local + 1280u) / 16u) * 16u + (local + 1280u) % 16u];
            }
            var staged6 = vec4<f16>(0.0);
            if (row0 + (local + 1536u) / 16u < key_length) {
                staged6 = key_data[(block_base + row0 + (local + 1536u) / 16u) * 16u + (local + 1536u) % 16u];
            }
            var staged7 = vec4<f16>(0.0);
            if (row0 + (local + 1792u) / 16u < key_length) {
                staged7 = key_data[(block_base + row0 + (local + 1792u) / 16u) * 16u + (local + 1792u) % 16u];
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
                let at = 0u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
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
                let at = 0u + ((local + 512u) / 16u) * 72u + ((local + 512u) % 16u) * 4u;
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
                let at = 0u + ((local + 768u) / 16u) * 72u + ((local + 768u) % 16u) * 4u;
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
                let at = 0u + ((local + 1024u) / 16u) * 72u + ((local + 1024u) % 16u) * 4u;
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
                let at = 0u + ((local + 1280u) / 16u) * 72u + ((local + 1280u) % 16u) * 4u;
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
                let at = 0u + ((local + 1536u) / 16u) * 72u + ((local + 1536u) % 16u) * 4u;
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
                let at = 0u + ((local + 1792u) / 16u) * 72u + ((local + 1792u) % 16u) * 4u;
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
    let row_visible = row < key_length;
    var dk0 = coop_mat16x16<f32, C>();
    var dk1 = coop_mat16x16<f32, C>();
    var dk2 = coop_mat16x16<f32, C>();
    var dk3 = coop_mat16x16<f32, C>();
    var dv0 = coop_mat16x16<f32, C>();
    var dv1 = coop_mat16x16<f32, C>();
    var dv2 = coop_mat16x16<f32, C>();
    var dv3 = coop_mat16x16<f32, C>();
    workgroupBarrier();
    let first_at0 = 0u + sub_row * 72u + 0u;
    let first0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[first_at0], 72u);
    let first_at1 = 0u + sub_row * 72u + 16u;
    let first1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[first_at1], 72u);
    let first_at2 = 0u + sub_row * 72u + 32u;
    let first2 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[first_at2], 72u);
    let first_at3 = 0u + sub_row * 72u + 48u;
    let first3 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[first_at3], 72u);
    workgroupBarrier();
    {
        let block_base = head * key_length;
        {
            var staged0 = vec4<f16>(0.0);
            if (row0 + (local + 0u) / 16u < key_length) {
                staged0 = value_data[(block_base + row0 + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            var staged1 = vec4<f16>(0.0);
            if (row0 + (local + 256u) / 16u < key_length) {
                staged1 = value_data[(block_base + row0 + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            var staged2 = vec4<f16>(0.0);
            if (row0 + (local + 512u) / 16u < key_length) {
                staged2 = value_data[(block_base + row0 + (local + 512u) / 16u) * 16u + (local + 512u) % 16u];
            }
            var staged3 = vec4<f16>(0.0);
            if (row0 + (local + 768u) / 16u < key_length) {
                staged3 = value_data[(block_base + row0 + (local + 768u) / 16u) * 16u + (local + 768u) % 16u];
            }
            var staged4 = vec4<f16>(0.0);
            if (row0 + (local + 1024u) / 16u < key_length) {
                staged4 = value_data[(block_base + row0 + (local + 1024u) / 16u) * 16u + (local + 1024u) % 16u];
            }
            var staged5 = vec4<f16>(0.0);
            if (row0 + (local + 1280u) / 16u < key_length) {
                staged5 = value_data[(block_base + row0 + (local + 1280u) / 16u) * 16u + (local + 1280u) % 16u];
            }
            var staged6 = vec4<f16>(0.0);
            if (row0 + (local + 1536u) / 16u < key_length) {
                staged6 = value_data[(block_base + row0 + (local + 1536u) / 16u) * 16u + (local + 1536u) % 16u];
            }
            var staged7 = vec4<f16>(0.0);
            if (row0 + (local + 1792u) / 16u < key_length) {
                staged7 = value_data[(block_base + row0 + (local + 1792u) / 16u) * 16u + (local + 1792u) % 16u];
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
                let at = 0u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
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
                let at = 0u + ((local + 512u) / 16u) * 72u + ((local + 512u) % 16u) * 4u;
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
                let at = 0u + ((local + 768u) / 16u) * 72u + ((local + 768u) % 16u) * 4u;
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
                let at = 0u + ((local + 1024u) / 16u) * 72u + ((local + 1024u) % 16u) * 4u;
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
                let at = 0u + ((local + 1280u) / 16u) * 72u + ((local + 1280u) % 16u) * 4u;
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
                let at = 0u + ((local + 1536u) / 16u) * 72u + ((local + 1536u) % 16u) * 4u;
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
                let at = 0u + ((local + 1792u) / 16u) * 72u + ((local + 1792u) % 16u) * 4u;
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
    workgroupBarrier();
    let second_at0 = 0u + sub_row * 72u + 0u;
    let second0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[second_at0], 72u);
    let second_at1 = 0u + sub_row * 72u + 16u;
    let second1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[second_at1], 72u);
    let second_at2 = 0u + sub_row * 72u + 32u;
    let second2 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[second_at2], 72u);
    let second_at3 = 0u + sub_row * 72u + 48u;
    let second3 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[second_at3], 72u);
    let tile_base = head * length;
    let end = length;
    let first_start = (row0 / 32u) * 32u;
    var staged0 = vec4<f16>(0.0);
    if (first_start + (local + 0u) / 16u < length) {
        staged0 = query_data[(tile_base + first_start + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    var staged1 = vec4<f16>(0.0);
    if (first_start + (local + 256u) / 16u < length) {
        staged1 = query_data[(tile_base + first_start + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
    }
    var staged2 = vec4<f16>(0.0);
    if (first_start + (local + 0u) / 16u < length) {
        staged2 = grad_data[(tile_base + first_start + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
    }
    var staged3 = vec4<f16>(0.0);
    if (first_start + (local + 256u) / 16u < length) {
        staged3 = grad_data[(tile_base + first_start + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
    }
    var next_statistics = vec2<f32>(0.0);
    if (local < 32u && first_start + local < length) {
        next_statistics = statistics_data[tile_base + first_start + local];
    }
    for (var start = first_start; start < end; start += 32u) {
        workgroupBarrier();
        if (local < 32u) {
            statistics_tile[local] = next_statistics;
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
            let at = 0u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
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
            let at = 2304u + ((local + 0u) / 16u) * 72u + ((local + 0u) % 16u) * 4u;
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
            let at = 2304u + ((local + 256u) / 16u) * 72u + ((local + 256u) % 16u) * 4u;
            let swapped = (local & 16u) != 0u;
            let flip = select(0u, 2u, swapped);
            let first = select(staged3.xy, staged3.zw, swapped);
            let second = select(staged3.zw, staged3.xy, swapped);
            tiles[at + flip] = first.x;
            tiles[at + flip + 1u] = first.y;
            tiles[at + 2u - flip] = second.x;
            tiles[at + 3u - flip] = second.y;
        }
        workgroupBarrier();
        {
            staged0 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 0u) / 16u < length) {
                staged0 = query_data[(tile_base + (start + 32u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            staged1 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 256u) / 16u < length) {
                staged1 = query_data[(tile_base + (start + 32u) + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            staged2 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 0u) / 16u < length) {
                staged2 = grad_data[(tile_base + (start + 32u) + (local + 0u) / 16u) * 16u + (local + 0u) % 16u];
            }
            staged3 = vec4<f16>(0.0);
            if ((start + 32u) + (local + 256u) / 16u < length) {
                staged3 = grad_data[(tile_base + (start + 32u) + (local + 256u) / 16u) * 16u + (local + 256u) % 16u];
            }
            next_statistics = vec2<f32>(0.0);
            if (local < 32u && start + 32u + local < length) {
                next_statistics = statistics_data[tile_base + start + 32u + local];
            }
            var s0 = coop_mat16x16<f32, C>();
            var s1 = coop_mat16x16<f32, C>();
            var g0 = coop_mat16x16<f32, C>();
            var g1 = coop_mat16x16<f32, C>();
            let first_tile_at0_0 = 0u;
            let first_tile0_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at0_0], 72u);
            s0 = coopMultiplyAdd(first0, first_tile0_0, s0);
            let first_tile_at0_1 = 1152u;
            let first_tile0_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at0_1], 72u);
            s1 = coopMultiplyAdd(first0, first_tile0_1, s1);
            let first_tile_at1_0 = 16u;
            let first_tile1_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at1_0], 72u);
            s0 = coopMultiplyAdd(first1, first_tile1_0, s0);
            let first_tile_at1_1 = 1168u;
            let first_tile1_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at1_1], 72u);
            s1 = coopMultiplyAdd(first1, first_tile1_1, s1);
            let first_tile_at2_0 = 32u;
            let first_tile2_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at2_0], 72u);
            s0 = coopMultiplyAdd(first2, first_tile2_0, s0);
            let first_tile_at2_1 = 1184u;
            let first_tile2_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at2_1], 72u);
            s1 = coopMultiplyAdd(first2, first_tile2_1, s1);
            let first_tile_at3_0 = 48u;
            let first_tile3_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at3_0], 72u);
            s0 = coopMultiplyAdd(first3, first_tile3_0, s0);
            let first_tile_at3_1 = 1200u;
            let first_tile3_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[first_tile_at3_1], 72u);
            s1 = coopMultiplyAdd(first3, first_tile3_1, s1);
            let second_tile_at0_0 = 2304u;
            let second_tile0_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at0_0], 72u);
            g0 = coopMultiplyAdd(second0, second_tile0_0, g0);
            let second_tile_at0_1 = 3456u;
            let second_tile0_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at0_1], 72u);
            g1 = coopMultiplyAdd(second0, second_tile0_1, g1);
            let second_tile_at1_0 = 2320u;
            let second_tile1_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at1_0], 72u);
            g0 = coopMultiplyAdd(second1, second_tile1_0, g0);
            let second_tile_at1_1 = 3472u;
            let second_tile1_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at1_1], 72u);
            g1 = coopMultiplyAdd(second1, second_tile1_1, g1);
            let second_tile_at2_0 = 2336u;
            let second_tile2_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at2_0], 72u);
            g0 = coopMultiplyAdd(second2, second_tile2_0, g0);
            let second_tile_at2_1 = 3488u;
            let second_tile2_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at2_1], 72u);
            g1 = coopMultiplyAdd(second2, second_tile2_1, g1);
            let second_tile_at3_0 = 2352u;
            let second_tile3_0 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at3_0], 72u);
            g0 = coopMultiplyAdd(second3, second_tile3_0, g0);
            let second_tile_at3_1 = 3504u;
            let second_tile3_1 = coopLoad<coop_mat16x16<f16, B>>(&tiles[second_tile_at3_1], 72u);
            g1 = coopMultiplyAdd(second3, second_tile3_1, g1);
            let s_at0 = scratch_at;
            coopStoreT(s0, &scratch[s_at0], 36u);
            let s_at1 = scratch_at + 16u;
            coopStoreT(s1, &scratch[s_at1], 36u);
            subgroupBarrier();
            let index0 = vec4<u32>(start) + vec4<u32>(k0, k1, k2, k3);
            let p0 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k0], scratch[lane_scratch + k1], scratch[lane_scratch + k2], scratch[lane_scratch + k3]) * params.scale - vec4<f32>(statistics_tile[k0].x, statistics_tile[k1].x, statistics_tile[k2].x, statistics_tile[k3].x)), (index0 < vec4<u32>(length)) & vec4<bool>(row_visible) & (vec4<u32>(row) <= index0));
            let p_at0 = 4608u + my_row * 40u;
            tiles[p_at0 + k0] = f16(p0.x);
            tiles[p_at0 + k1] = f16(p0.y);
            tiles[p_at0 + k2] = f16(p0.z);
            tiles[p_at0 + k3] = f16(p0.w);
            let index1 = vec4<u32>(start) + vec4<u32>(k4, k5, k6, k7);
            let p1 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k4], scratch[lane_scratch + k5], scratch[lane_scratch + k6], scratch[lane_scratch + k7]) * params.scale - vec4<f32>(statistics_tile[k4].x, statistics_tile[k5].x, statistics_tile[k6].x, statistics_tile[k7].x)), (index1 < vec4<u32>(length)) & vec4<bool>(row_visible) & (vec4<u32>(row) <= index1));
            let p_at1 = 4608u + my_row * 40u;
            tiles[p_at1 + k4] = f16(p1.x);
            tiles[p_at1 + k5] = f16(p1.y);
            tiles[p_at1 + k6] = f16(p1.z);
            tiles[p_at1 + k7] = f16(p1.w);
            let index2 = vec4<u32>(start) + vec4<u32>(k8, k9, k10, k11);
            let p2 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k8], scratch[lane_scratch + k9], scratch[lane_scratch + k10], scratch[lane_scratch + k11]) * params.scale - vec4<f32>(statistics_tile[k8].x, statistics_tile[k9].x, statistics_tile[k10].x, statistics_tile[k11].x)), (index2 < vec4<u32>(length)) & vec4<bool>(row_visible) & (vec4<u32>(row) <= index2));
            let p_at2 = 4608u + my_row * 40u;
            tiles[p_at2 + k8] = f16(p2.x);
            tiles[p_at2 + k9] = f16(p2.y);
            tiles[p_at2 + k10] = f16(p2.z);
            tiles[p_at2 + k11] = f16(p2.w);
            let index3 = vec4<u32>(start) + vec4<u32>(k12, k13, k14, k15);
            let p3 = select(vec4<f32>(0.0), exp(vec4<f32>(scratch[lane_scratch + k12], scratch[lane_scratch + k13], scratch[lane_scratch + k14], scratch[lane_scratch + k15]) * params.scale - vec4<f32>(statistics_tile[k12].x, statistics_tile[k13].x, statistics_tile[k14].x, statistics_tile[k15].x)), (index3 < vec4<u32>(length)) & vec4<bool>(row_visible) & (vec4<u32>(row) <= index3));
            let p_at3 = 4608u + my_row * 40u;
            tiles[p_at3 + k12] = f16(p3.x);
            tiles[p_at3 + k13] = f16(p3.y);
            tiles[p_at3 + k14] = f16(p3.z);
            tiles[p_at3 + k15] = f16(p3.w);
            subgroupBarrier();
            coopStoreT(g0, &scratch[s_at0], 36u);
            coopStoreT(g1, &scratch[s_at1], 36u);
            subgroupBarrier();
            let ds0 = p0 * (vec4<f32>(scratch[lane_scratch + k0], scratch[lane_scratch + k1], scratch[lane_scratch + k2], scratch[lane_scratch + k3]) - vec4<f32>(statistics_tile[k0].y, statistics_tile[k1].y, statistics_tile[k2].y, statistics_tile[k3].y));
            let ds_at0 = 9728u + my_row * 40u;
            tiles[ds_at0 + k0] = f16(ds0.x);
            tiles[ds_at0 + k1] = f16(ds0.y);
            tiles[ds_at0 + k2] = f16(ds0.z);
            tiles[ds_at0 + k3] = f16(ds0.w);
            let ds1 = p1 * (vec4<f32>(scratch[lane_scratch + k4], scratch[lane_scratch + k5], scratch[lane_scratch + k6], scratch[lane_scratch + k7]) - vec4<f32>(statistics_tile[k4].y, statistics_tile[k5].y, statistics_tile[k6].y, statistics_tile[k7].y));
            let ds_at1 = 9728u + my_row * 40u;
            tiles[ds_at1 + k4] = f16(ds1.x);
            tiles[ds_at1 + k5] = f16(ds1.y);
            tiles[ds_at1 + k6] = f16(ds1.z);
            tiles[ds_at1 + k7] = f16(ds1.w);
            let ds2 = p2 * (vec4<f32>(scratch[lane_scratch + k8], scratch[lane_scratch + k9], scratch[lane_scratch + k10], scratch[lane_scratch + k11]) - vec4<f32>(statistics_tile[k8].y, statistics_tile[k9].y, statistics_tile[k10].y, statistics_tile[k11].y));
            let ds_at2 = 9728u + my_row * 40u;
            tiles[ds_at2 + k8] = f16(ds2.x);
            tiles[ds_at2 + k9] = f16(ds2.y);
            tiles[ds_at2 + k10] = f16(ds2.z);
            tiles[ds_at2 + k11] = f16(ds2.w);
            let ds3 = p3 * (vec4<f32>(scratch[lane_scratch + k12], scratch[lane_scratch + k13], scratch[lane_scratch + k14], scratch[lane_scratch + k15]) - vec4<f32>(statistics_tile[k12].y, statistics_tile[k13].y, statistics_tile[k14].y, statistics_tile[k15].y));
            let ds_at3 = 9728u + my_row * 40u;
            tiles[ds_at3 + k12] = f16(ds3.x);
            tiles[ds_at3 + k13] = f16(ds3.y);
            tiles[ds_at3 + k14] = f16(ds3.z);
            tiles[ds_at3 + k15] = f16(ds3.w);
        }
        subgroupBarrier();
        {
            let pt_at0 = 4608u + sub_row * 40u + 0u;
            let pt0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[pt_at0], 40u);
            let pt_at1 = 4608u + sub_row * 40u + 16u;
            let pt1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[pt_at1], 40u);
            let t_at0_0 = 2304u;
            let t0_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_0], 72u);
            dv0 = coopMultiplyAdd(pt0, t0_0, dv0);
            let t_at1_0 = 3456u;
            let t1_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_0], 72u);
            dv0 = coopMultiplyAdd(pt1, t1_0, dv0);
            let t_at0_1 = 2320u;
            let t0_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_1], 72u);
            dv1 = coopMultiplyAdd(pt0, t0_1, dv1);
            let t_at1_1 = 3472u;
            let t1_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_1], 72u);
            dv1 = coopMultiplyAdd(pt1, t1_1, dv1);
            let t_at0_2 = 2336u;
            let t0_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_2], 72u);
            dv2 = coopMultiplyAdd(pt0, t0_2, dv2);
            let t_at1_2 = 3488u;
            let t1_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_2], 72u);
            dv2 = coopMultiplyAdd(pt1, t1_2, dv2);
            let t_at0_3 = 2352u;
            let t0_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_3], 72u);
            dv3 = coopMultiplyAdd(pt0, t0_3, dv3);
            let t_at1_3 = 3504u;
            let t1_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_3], 72u);
            dv3 = coopMultiplyAdd(pt1, t1_3, dv3);
        }
        {
            let ds_at0 = 9728u + sub_row * 40u + 0u;
            let ds0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[ds_at0], 40u);
            let ds_at1 = 9728u + sub_row * 40u + 16u;
            let ds1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[ds_at1], 40u);
            let t_at0_0 = 0u;
            let t0_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_0], 72u);
            dk0 = coopMultiplyAdd(ds0, t0_0, dk0);
            let t_at1_0 = 1152u;
            let t1_0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_0], 72u);
            dk0 = coopMultiplyAdd(ds1, t1_0, dk0);
            let t_at0_1 = 16u;
            let t0_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_1], 72u);
            dk1 = coopMultiplyAdd(ds0, t0_1, dk1);
            let t_at1_1 = 1168u;
            let t1_1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_1], 72u);
            dk1 = coopMultiplyAdd(ds1, t1_1, dk1);
            let t_at0_2 = 32u;
            let t0_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_2], 72u);
            dk2 = coopMultiplyAdd(ds0, t0_2, dk2);
            let t_at1_2 = 1184u;
            let t1_2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_2], 72u);
            dk2 = coopMultiplyAdd(ds1, t1_2, dk2);
            let t_at0_3 = 48u;
            let t0_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at0_3], 72u);
            dk3 = coopMultiplyAdd(ds0, t0_3, dk3);
            let t_at1_3 = 1200u;
            let t1_3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[t_at1_3], 72u);
            dk3 = coopMultiplyAdd(ds1, t1_3, dk3);
        }
    }
    let own = head * key_length + row;
    let value_start = params.batch_heads * key_length * 16u;
    workgroupBarrier();
    {
        let out_at0 = scratch_at + 0u;
        coopStoreT(dk0, &scratch[out_at0], 36u);
        let out_at1 = scratch_at + 16u;
        coopStoreT(dk1, &scratch[out_at1], 36u);
    }
    workgroupBarrier();
    if (row < key_length) {
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            let out = own * 16u + 0u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            let out = own * 16u + 4u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
    }
    workgroupBarrier();
    {
        let out_at0 = scratch_at + 0u;
        coopStoreT(dk2, &scratch[out_at0], 36u);
        let out_at1 = scratch_at + 16u;
        coopStoreT(dk3, &scratch[out_at1], 36u);
    }
    workgroupBarrier();
    if (row < key_length) {
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            let out = own * 16u + 8u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            let out = own * 16u + 12u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]) * params.scale);
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]) * params.scale);
        }
    }
    workgroupBarrier();
    {
        let out_at0 = scratch_at + 0u;
        coopStoreT(dv0, &scratch[out_at0], 36u);
        let out_at1 = scratch_at + 16u;
        coopStoreT(dv1, &scratch[out_at1], 36u);
    }
    workgroupBarrier();
    if (row < key_length) {
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            let out = value_start + own * 16u + 0u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]));
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]));
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            let out = value_start + own * 16u + 4u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]));
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]));
        }
    }
    workgroupBarrier();
    {
        let out_at0 = scratch_at + 0u;
        coopStoreT(dv2, &scratch[out_at0], 36u);
        let out_at1 = scratch_at + 16u;
        coopStoreT(dv3, &scratch[out_at1], 36u);
    }
    workgroupBarrier();
    if (row < key_length) {
        {
            let at = lane_scratch + 0u + lane_half * 8u;
            let out = value_start + own * 16u + 8u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]));
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]));
        }
        {
            let at = lane_scratch + 16u + lane_half * 8u;
            let out = value_start + own * 16u + 12u + lane_half * 2u;
            key_value_grad_data[out] = vec4<f16>(vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]));
            key_value_grad_data[out + 1u] = vec4<f16>(vec4<f32>(scratch[at + 4u], scratch[at + 5u], scratch[at + 6u], scratch[at + 7u]));
        }
    }
}
