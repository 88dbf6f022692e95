// reduce.wgsl — a group of `lanes` invocations per output element (a power of two; the
// workgroup of 256 holds 256 / lanes groups). Each lane folds a strided share of the reduced
// elements (consecutive lanes, consecutive elements), then the group combines its partial
// results in workgroup (shared) memory by a tree: lanes / 2 pairs, then lanes / 4, ... with a
// barrier between steps so every invocation sees the others' writes. The header defines A (accumulator), IS_ARG, identity(), merge()
// (sum/max/min, NaN-propagating) and replaces() (argmax/argmin: first index wins, NaN wins).
// When there are few outputs but many elements each (a full sum), one workgroup per output
// would leave most of the GPU idle: the host then splits each output's elements into `chunks`
// ranges, one workgroup each, writes `outputs x chunks` partial results, and reduces those in
// a second dispatch.
// params: ReduceParams (reduce.rs); tail: kept shape, kept strides, reduced shape,
// reduced strides
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read_write> output: array<O>;

const NONE: u32 = 0xFFFFFFFFu;
var<workgroup> partial_values: array<A, 256>;
var<workgroup> partial_indices: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let lanes = params.lanes;
    let lane = local % lanes;
    let slot = (workgroup.y * workgroups.x + workgroup.x) * (256u / lanes) + local / lanes;
    let chunks = params.chunks;
    let out = slot / chunks;
    let chunk = slot % chunks;
    let outputs = params.outputs;
    let count = params.count;
    let first = chunk * params.chunk_length;
    let end = min(count, first + params.chunk_length);
    let kept_rank = params.kept_rank;
    let reduced_rank = params.reduced_rank;
    let kept_shape_at = 0u;
    let kept_strides_at = kept_shape_at + kept_rank;
    let reduced_shape_at = kept_strides_at + kept_rank;
    let reduced_strides_at = reduced_shape_at + reduced_rank;
    // Groups past the last output take part in the barriers only and must not write.
    let in_range = out < outputs;
    var base = 0u;
    if (in_range) {
        base = params.offset + strided_position(out, kept_rank, kept_shape_at, kept_strides_at);
    }
    var accumulator = identity();
    var best_index = NONE;
    if (in_range) {
        for (var r = first + lane; r < end; r = r + lanes) {
            let value = load_value(input[base + strided_position(r, reduced_rank, reduced_shape_at, reduced_strides_at)]);
            if (IS_ARG) {
                if (replaces(accumulator, best_index, value, r)) {
                    accumulator = value;
                    best_index = r;
                }
            } else {
                accumulator = merge(accumulator, value);
            }
        }
    }
    partial_values[local] = accumulator;
    partial_indices[local] = best_index;
    workgroupBarrier();
    for (var step = lanes >> 1u; step > 0u; step = step >> 1u) {
        if (lane < step) {
            let other_value = partial_values[local + step];
            let other_index = partial_indices[local + step];
            if (IS_ARG) {
                if (replaces(partial_values[local], partial_indices[local], other_value, other_index)) {
                    partial_values[local] = other_value;
                    partial_indices[local] = other_index;
                }
            } else {
                partial_values[local] = merge(partial_values[local], other_value);
            }
        }
        workgroupBarrier();
    }
    if (in_range && lane == 0u) {
        output[slot] = finish(partial_values[local], partial_indices[local]);
    }
}
