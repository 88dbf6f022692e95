// index_add_keys.wgsl — first pass of `index_add` (index_add.rs): for each sorted position k,
// the index the stable argsort put there, `keys[k] = indices[order[k]]`, checked once here so
// that the summing passes read one contiguous u32 per position. A negative or out-of-range
// index becomes INVALID (never written anywhere) and raises this dispatch's word of `flag`
// (slot params.flag_slot), which the host turns into an error at the next readback.
// params: IndexAddParams (index_add.rs)
@group(0) @binding(1) var<storage, read> indices: array<IX>;
@group(0) @binding(2) var<storage, read> order: array<i32>;
@group(0) @binding(3) var<storage, read_write> keys: array<u32>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>>;

const INVALID: u32 = 0xFFFFFFFFu;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let k = linear_id(workgroup, workgroups, local);
    if (k >= params.count) {
        return;
    }
    let position = u32(order[k]);
    var key = INVALID;
    if (position < params.count) {
        let index = i32(indices[params.index_offset + position * params.index_stride]);
        if (index >= 0 && u32(index) < params.limit) {
            key = u32(index);
        }
    }
    if (key == INVALID) {
        atomicMax(&flag[params.flag_slot], 1u);
    }
    keys[k] = key;
}
