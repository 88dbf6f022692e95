// sort_rows.wgsl — `argsort` of rows up to LOCAL_LENGTH long: one workgroup per row loads
// the row's order keys (sort_common.wgsl) and positions into workgroup memory, padded to the
// power of two `params.padded`, runs the whole bitonic network there (a barrier between
// steps) and writes the sorted positions. Rows are contiguous (the host moves the sorted dim
// last and casts to a 32-bit key dtype first).
// params: SortParams (sort.rs)
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<i32>;

const LOCAL_LENGTH: u32 = 1024u;
var<workgroup> keys: array<u32, LOCAL_LENGTH>;
var<workgroup> positions: array<u32, LOCAL_LENGTH>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let row = workgroup.y * workgroups.x + workgroup.x;
    if (row >= params.rows) {
        return;
    }
    let length = params.length;
    let padded = params.padded;
    let descending = params.descending != 0u;
    let base = row * length;
    for (var t = local; t < padded; t = t + 256u) {
        if (t < length) {
            keys[t] = order_key(input[base + t], descending);
            positions[t] = t;
        } else {
            keys[t] = PAD;
            positions[t] = PAD;
        }
    }
    workgroupBarrier();
    let half = padded / 2u;
    for (var block = 2u; block <= padded; block = block << 1u) {
        for (var distance = block >> 1u; distance > 0u; distance = distance >> 1u) {
            for (var t = local; t < half; t = t + 256u) {
                let i = 2u * distance * (t / distance) + t % distance;
                let partner = i + distance;
                let up = (i & block) == 0u;
                let key_a = keys[i];
                let key_b = keys[partner];
                let position_a = positions[i];
                let position_b = positions[partner];
                let swap = select(comes_before(key_a, position_a, key_b, position_b),
                                  comes_before(key_b, position_b, key_a, position_a), up);
                if (swap) {
                    keys[i] = key_b;
                    keys[partner] = key_a;
                    positions[i] = position_b;
                    positions[partner] = position_a;
                }
            }
            workgroupBarrier();
        }
    }
    for (var t = local; t < length; t = t + 256u) {
        output[base + t] = i32(positions[t]);
    }
}
