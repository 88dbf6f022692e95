// bfloat16.wgsl — conversions to and from BF16, which buffers store two to a u32 word (element
// 2k in the low half of word k; WGSL has no bf16 type). The generated header defines SI (the
// source's stored type), `load_bits(position) -> u32` (the BF16 bits of source element
// `position`: a half of a BF16 word, or an f32 rounded by `round_to_bfloat16`) and CONTIGUOUS;
// the blocks of one destination kind are kept. Only integer operations touch the values
// (f32 data is bound as u32 words), so no float path can flush subnormals or change NaNs.
//   write_f32:    F32 destination, one invocation per element (widening is exact).
//   write_words:  dense BF16 destination from element 0, one invocation per u32 word: it
//                 writes both halves, so no two invocations touch one word (an odd count's
//                 last upper half is written 0).
//   write_halves: BF16 destination of any view, one invocation per element: its half of the
//                 word is cleared and set with atomicAnd / atomicOr, which commute with the
//                 other half's, so neighbours in one word never race.
// params: ElementwiseParams (elementwise.rs); tail: shape[rank], source offset,
// source strides[rank], destination offset, destination strides[rank]
@group(0) @binding(1) var<storage, read> source: array<SI>;
#ifdef_write_f32
@group(0) @binding(2) var<storage, read_write> destination: array<u32>;
#endif
#ifdef_write_words
@group(0) @binding(2) var<storage, read_write> destination: array<u32>;
#endif
#ifdef_write_halves
@group(0) @binding(2) var<storage, read_write> destination: array<atomic<u32>>;
#endif

// f32 to the nearest bfloat16, ties to even (integer arithmetic, as PyTorch's
// `round_to_nearest_even`): every NaN becomes the quiet NaN 0x7FC0; values past the largest
// finite bfloat16 round to infinity.
fn round_to_bfloat16(bits: u32) -> u32 {
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return 0x7fc0u;
    }
    return (bits + 0x7fffu + ((bits >> 16u) & 1u)) >> 16u;
}

// The storage position of logical element `i` of the source view.
fn source_position(i: u32) -> u32 {
    let at = params.rank;
    if (CONTIGUOUS) {
        return params.tail[at] + i;
    }
    return params.tail[at] + strided_position(i, params.rank, 0u, at + 1u);
}

// The storage position of logical element `i` of the destination view.
fn destination_position(i: u32) -> u32 {
    let at = 2u * params.rank + 1u;
    if (CONTIGUOUS) {
        return params.tail[at] + i;
    }
    return params.tail[at] + strided_position(i, params.rank, 0u, at + 1u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let id = linear_id(workgroup, workgroups, local);
#ifdef_write_f32
    if (id >= params.numel) {
        return;
    }
    destination[destination_position(id)] = load_bits(source_position(id)) << 16u;
#endif
#ifdef_write_words
    let first = 2u * id;
    if (first >= params.numel) {
        return;
    }
    var high = 0u;
    if (first + 1u < params.numel) {
        high = load_bits(source_position(first + 1u));
    }
    destination[id] = load_bits(source_position(first)) | (high << 16u);
#endif
#ifdef_write_halves
    if (id >= params.numel) {
        return;
    }
    let position = destination_position(id);
    let shift = (position & 1u) * 16u;
    atomicAnd(&destination[position >> 1u], ~(0xffffu << shift));
    atomicOr(&destination[position >> 1u], load_bits(source_position(id)) << shift);
#endif
}
