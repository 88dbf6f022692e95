// sort_global.wgsl — `argsort` of rows longer than sort_rows.wgsl's LOCAL_LENGTH: the bitonic
// network over buffers of `rows * padded` keys and positions, one dispatch per network step.
// `params.stage` 0 loads the order keys (sort_common.wgsl) with padding, 1 runs the
// compare-exchange step (`block`, `distance`) of one invocation per pair, 2 writes the sorted
// positions of the real elements. Invocations are independent within a dispatch; dispatches
// on one queue run in order.
// params: SortParams (sort.rs)
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> keys: array<u32>;
@group(0) @binding(3) var<storage, read_write> positions: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    let length = params.length;
    let padded = params.padded;
    if (params.stage == 0u) {
        if (i >= params.rows * padded) {
            return;
        }
        let row = i / padded;
        let t = i % padded;
        if (t < length) {
            keys[i] = order_key(input[row * length + t], params.descending != 0u);
            positions[i] = t;
        } else {
            keys[i] = PAD;
            positions[i] = PAD;
        }
    } else if (params.stage == 1u) {
        let half = padded / 2u;
        if (i >= params.rows * half) {
            return;
        }
        let row = i / half;
        let t = i % half;
        let distance = params.distance;
        let within = 2u * distance * (t / distance) + t % distance;
        let a = row * padded + within;
        let b = a + distance;
        let up = (within & params.block) == 0u;
        let key_a = keys[a];
        let key_b = keys[b];
        let position_a = positions[a];
        let position_b = positions[b];
        let swap = select(comes_before(key_a, position_a, key_b, position_b),
                          comes_before(key_b, position_b, key_a, position_a), up);
        if (swap) {
            keys[a] = key_b;
            keys[b] = key_a;
            positions[a] = position_b;
            positions[b] = position_a;
        }
    } else {
        if (i >= params.rows * length) {
            return;
        }
        let row = i / length;
        let t = i % length;
        output[i] = i32(positions[row * padded + t]);
    }
}
