// copy.wgsl — copy a strided view into a strided (or contiguous) destination, converting the
// element type on the way: `copy_strided` (same type, contiguous output), `cast`, and
// `copy_into` (write into an existing tensor's view). SI/SO are the source and destination
// stored types; `convert` mirrors the CPU's `as` semantics (saturating, NaN -> 0).
// params: ElementwiseParams (elementwise.rs); tail: shape[rank], source offset,
// source strides[rank], destination offset, destination strides[rank]
@group(0) @binding(1) var<storage, read> source: array<SI>;
@group(0) @binding(2) var<storage, read_write> destination: array<SO>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let rank = params.rank;
    let source_at = rank;
    let destination_at = source_at + 1u + rank;
    var source_position = params.tail[source_at] + i;
    var destination_position = params.tail[destination_at] + i;
    if (!CONTIGUOUS) {
        source_position = params.tail[source_at] + strided_position(i, rank, 0u, source_at + 1u);
        destination_position = params.tail[destination_at] + strided_position(i, rank, 0u, destination_at + 1u);
    }
    destination[destination_position] = convert(source[source_position]);
}
