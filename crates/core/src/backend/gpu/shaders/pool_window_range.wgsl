// pool_window_range.wgsl — shared by max pooling's gathering gradients
// (max_pool2d_backward.wgsl, pool/channels_last_backward.rs).
// The first and last window along one axis whose taps can read padded position `shifted`
// (position + padding): o * stride <= shifted <= o * stride + (kernel - 1) * dilation, within
// the output. An empty range has first > last.
fn window_range(shifted: u32, stride: u32, dilation: u32, kernel: u32, outputs: u32) -> vec2<u32> {
    let span = (kernel - 1u) * dilation;
    var first = 0u;
    if (shifted > span) {
        first = (shifted - span + stride - 1u) / stride;
    }
    let last = shifted / stride;
    if (outputs == 0u || first >= outputs || first > last) {
        return vec2<u32>(1u, 0u);
    }
    return vec2<u32>(first, min(last, outputs - 1u));
}
