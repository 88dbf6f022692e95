//! The WGSL generator of the tensor-core convolutions: one kernel text per `ConvCoopKey` (pass,
//! tile, K block, hardware or emulated), written line by line — the column setup, the tap or
//! pixel walk, the bounds-checked gathers into workgroup memory, and the epilogue through a
//! per-subgroup scratch tile. The design is described in the parent module's header.

use std::fmt::Write;

use super::{ConvCoopKey, ConvCoopParams, ConvPass};
use crate::backend::gpu::conv::epilogue::{self as conv_epilogue, ConvEpilogueKey};
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::cooperative::Coop;
use crate::backend::gpu::runtime::wgsl::value_header;
use crate::dtype::DType;

/// The lines of one generated kernel (`write!` into a String cannot fail: results ignored).
struct Writer {
    text: String,
}

impl Writer {
    fn line(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.text, "{:indent$}{line}", "", indent = indent * 4);
    }
}

/// The kernel's WGSL source.
pub(super) fn source(key: ConvCoopKey) -> String {
    let coop = Coop {
        emulated: key.emulated,
    };
    let kb = key.k_block.size();
    let (rows, columns) = (key.tile.rows(), key.tile.columns());
    let (a_row, b_row) = (key.a_row(), key.b_row());
    let (a_block, b_block) = key.blocks();
    // Subgroups per tile row (2 square, 4 wide); B columns per invocation; A values per
    // invocation per block and the rows between them.
    let subgroup_columns = columns / 64;
    let column_sets = columns / 128;
    let a_loads = rows * kb / 128;
    let a_row_step = 128 / kb;
    let output = match key.pass {
        ConvPass::BackwardWeight => "f32",
        ConvPass::Forward | ConvPass::BackwardInput => "f16",
    };
    let mut w = Writer {
        text: String::from("enable f16;\n"),
    };
    if !key.emulated {
        w.text.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    if key.epilogue.is_some() {
        // `S` and `is_nan_value` for the epilogue's function.
        w.text.push_str(&value_header(DType::F16));
    }
    w.text.push_str(<ConvCoopParams as KernelParams>::WGSL);
    let _ = write!(
        w.text,
        "@group(0) @binding(1) var<storage, read> source_a: array<f16>;
@group(0) @binding(2) var<storage, read> source_b: array<f16>;
@group(0) @binding(3) var<storage, read_write> result: array<{output}>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it to the output.
var<workgroup> scratch: array<f32, 1024>;
// Two copies (ping-pong) of A's block [{rows} rows][{a_row}] and B's [{kb} k][{b_row}].
var<workgroup> tile_a: array<f16, {}>;
var<workgroup> tile_b: array<f16, {}>;
{}",
        2 * a_block,
        2 * b_block,
        conv_epilogue::declarations(key.epilogue, 4)
    );
    if key.emulated {
        w.text.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    let _ = write!(
        w.text,
        "
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{}) {{
",
        coop.subgroup_builtins()
    );
    if key.emulated {
        w.line(1, "let subgroup = local / 32u;");
        w.line(1, "let lane = local % 32u;");
        w.line(1, "emulated_lane = lane;");
    }
    for field in [
        "m",
        "n",
        "k",
        "plane",
        "kernel_h",
        "kernel_w",
        "stride_h",
        "stride_w",
        "pad_h",
        "pad_w",
        "dilation_h",
        "dilation_w",
        "b_height",
        "b_width",
        "grid_h",
        "grid_w",
    ] {
        w.line(1, &format!("let {field} = params.{field};"));
    }
    w.line(1, "let taps = kernel_h * kernel_w;");
    w.line(1, &format!("let row0 = workgroup.y * {rows}u;"));
    w.line(
        1,
        &format!("let sub_row = (subgroup / {subgroup_columns}u) * 64u;"),
    );
    w.line(
        1,
        &format!("let sub_column = (subgroup % {subgroup_columns}u) * 64u;"),
    );
    w.line(1, &format!("let a_fragment = sub_row * {a_row}u;"));
    w.line(1, "let scratch_at = subgroup * 256u;");
    w.line(
        1,
        "// This invocation's scratch values in the epilogue: column lane % 16, rows (lane / 16) * 8 + 0..8.",
    );
    w.line(
        1,
        "let scratch_read = scratch_at + (lane / 16u) * 128u + lane % 16u;",
    );
    w.line(1, "let lane_row = row0 + sub_row + (lane / 16u) * 8u;");
    w.line(
        1,
        "// This workgroup's part of K (the weight gradient's split).",
    );
    w.line(1, "let k_first = workgroup.z * params.k_chunk;");
    w.line(1, "let k_end = min(k, k_first + params.k_chunk);");
    w.line(
        1,
        &format!("let steps = (k_end - k_first + {}u) / {kb}u;", kb - 1),
    );
    w.line(1, "let split_base = workgroup.z * params.split_stride;");
    w.line(
        1,
        &format!("// A's loader: k `local % {kb}`, rows `local / {kb} + {a_row_step} p` (p = 0..{a_loads})."),
    );
    w.line(1, &format!("let a_column = local % {kb}u;"));
    w.line(1, &format!("let a_row_first = row0 + local / {kb}u;"));
    w.line(1, "let a_rows_left = m - min(m, a_row_first);");
    w.line(1, "let a_rows_base = a_row_first * params.a_stride_c;");
    w.line(
        1,
        &format!("let a_row_step = {a_row_step}u * params.a_stride_c;"),
    );
    w.line(
        1,
        &format!("let a_store = (local / {kb}u) * {a_row}u + a_column;"),
    );
    // Pass-wide constants of the walks.
    match key.pass {
        ConvPass::Forward => {
            w.line(1, "let dilation_shift_h = dilation_h * params.b_stride_h;");
            w.line(1, "let dilation_shift_w = dilation_w * params.b_stride_w;");
            w.line(1, "// Shift corrections when kj resp. ki wraps around.");
            w.line(
                1,
                "let wrap_j = dilation_shift_h - kernel_w * dilation_shift_w;",
            );
            w.line(
                1,
                "let wrap_i = params.b_stride_c - kernel_h * dilation_shift_h;",
            );
        }
        ConvPass::BackwardInput => {
            w.line(
                1,
                "// One tap step (dilation) as quotient and remainder by the stride.",
            );
            w.line(1, "let dilation_q_h = dilation_h / stride_h;");
            w.line(1, "let dilation_r_h = dilation_h % stride_h;");
            w.line(1, "let dilation_q_w = dilation_w / stride_w;");
            w.line(1, "let dilation_r_w = dilation_w % stride_w;");
        }
        ConvPass::BackwardWeight => {
            w.line(1, "let grid_plane = grid_h * grid_w;");
            w.line(1, "let walk_step_w = stride_w * params.b_stride_w;");
            w.line(
                1,
                "let wrap_w = stride_h * params.b_stride_h - grid_w * walk_step_w;",
            );
            w.line(
                1,
                "let wrap_h = params.b_stride_n - grid_h * stride_h * params.b_stride_h;",
            );
        }
    }
    // Accumulators and prefetch registers.
    let accumulators: Vec<String> = (0..16).map(|t| format!("c{}{}", t / 4, t % 4)).collect();
    for c in &accumulators {
        w.line(1, &format!("var {c}: {};", coop.ty('C')));
    }
    for p in 0..a_loads {
        w.line(1, &format!("var ra{p}: f16;"));
    }
    for q in 0..column_sets {
        for kk in 0..kb {
            w.line(1, &format!("var rb{q}_{kk}: f16;"));
        }
    }
    w.line(
        1,
        "// Column tiles in a grid-stride loop (any N fits the grid).",
    );
    w.line(
        1,
        "for (var tile = workgroup.x; tile < params.column_tiles; tile = tile + workgroups.x) {",
    );
    w.line(2, &format!("let column0 = tile * {columns}u;"));
    for q in 0..column_sets {
        column_setup(&mut w, key.pass, q);
    }
    walk_start(&mut w, key.pass);
    for c in &accumulators {
        w.line(2, &format!("{c} = {}();", coop.ty('C')));
    }
    w.line(2, "// k-block 0 into copy 0.");
    load_block(&mut w, key, 2, "k_first");
    store_block(&mut w, key, 2, "0u", "0u");
    w.line(2, "workgroupBarrier();");
    w.line(2, "for (var step = 0u; step < steps; step = step + 1u) {");
    w.line(
        3,
        "// Multiply out copy `step % 2` while the next block's gathers are in flight, then",
    );
    w.line(
        3,
        "// store them into the other copy (read by nobody since the last barrier).",
    );
    w.line(3, "let current = step % 2u;");
    w.line(3, &format!("let a_current = current * {a_block}u;"));
    w.line(3, &format!("let b_current = current * {b_block}u;"));
    w.line(3, "let more = step + 1u < steps;");
    w.line(3, "if (more) {");
    load_block(&mut w, key, 4, &format!("k_first + (step + 1u) * {kb}u"));
    w.line(3, "}");
    for kk in 0..kb / 16 {
        w.line(3, "{");
        for j in 0..4 {
            let start = format!("b_current + sub_column + {}u", kk * 16 * b_row + j * 16);
            let load = coop.load('B', "tile_b", &start, &format!("{b_row}u"));
            w.line(4, &format!("let fb{j} = {load};"));
        }
        for i in 0..4 {
            let start = format!("a_current + a_fragment + {}u", i * 16 * a_row + kk * 16);
            let load = coop.load('A', "tile_a", &start, &format!("{a_row}u"));
            w.line(4, &format!("let fa{i} = {load};"));
            for j in 0..4 {
                let product =
                    coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"));
                w.line(4, &format!("c{i}{j} = {product};"));
            }
        }
        w.line(3, "}");
    }
    w.line(3, "if (more) {");
    w.line(4, &format!("let a_other = {a_block}u - a_current;"));
    w.line(4, &format!("let b_other = {b_block}u - b_current;"));
    store_block(&mut w, key, 4, "a_other", "b_other");
    w.line(3, "}");
    w.line(3, "workgroupBarrier();");
    w.line(2, "}");
    epilogue(&mut w, coop, output, key.epilogue);
    w.line(1, "}");
    w.line(0, "}");
    w.text
}

/// Per column tile: the state of this invocation's B column `q` (`column0 + local + 128 q`).
fn column_setup(w: &mut Writer, pass: ConvPass, q: usize) {
    w.line(2, &format!("let col{q} = column0 + local + {}u;", 128 * q));
    w.line(2, &format!("let col_ok{q} = col{q} < n;"));
    match pass {
        ConvPass::Forward => {
            w.line(
                2,
                "// Where the window starts (h may be negative in the padding; a column past N gets h = height, which no tap brings back inside) and its storage position (wrapping).",
            );
            w.line(2, &format!("let image{q} = col{q} / plane;"));
            w.line(2, &format!("let pixel{q} = col{q} - image{q} * plane;"));
            w.line(2, &format!("let oi{q} = pixel{q} / grid_w;"));
            w.line(2, &format!("let oj{q} = pixel{q} - oi{q} * grid_w;"));
            w.line(2, &format!("let h{q} = select(i32(b_height), i32(oi{q} * stride_h) - i32(pad_h), col_ok{q});"));
            w.line(
                2,
                &format!("let w{q} = i32(oj{q} * stride_w) - i32(pad_w);"),
            );
            w.line(2, &format!("let base{q} = params.b_offset + image{q} * params.b_stride_n + bitcast<u32>(h{q}) * params.b_stride_h + bitcast<u32>(w{q}) * params.b_stride_w;"));
        }
        ConvPass::BackwardInput => {
            w.line(
                2,
                "// y + pad and x + pad as quotient and remainder by the stride (a column past N gets quotient -1: never inside).",
            );
            w.line(2, &format!("let image{q} = col{q} / plane;"));
            w.line(2, &format!("let pixel{q} = col{q} - image{q} * plane;"));
            w.line(2, &format!("let y{q} = pixel{q} / grid_w + pad_h;"));
            w.line(
                2,
                &format!("let x{q} = pixel{q} - (pixel{q} / grid_w) * grid_w + pad_w;"),
            );
            w.line(
                2,
                &format!("let qy{q} = select(-1, i32(y{q} / stride_h), col_ok{q});"),
            );
            w.line(2, &format!("let ry{q} = y{q} % stride_h;"));
            w.line(2, &format!("let qx{q} = i32(x{q} / stride_w);"));
            w.line(2, &format!("let rx{q} = x{q} % stride_w;"));
            w.line(2, &format!("let base{q} = params.b_offset + image{q} * params.b_stride_n + bitcast<u32>(qy{q}) * params.b_stride_h + bitcast<u32>(qx{q}) * params.b_stride_w;"));
        }
        ConvPass::BackwardWeight => {
            w.line(
                2,
                "// The tap (channel, ki, kj) of this column: its reach and storage shift (a column past N reaches beyond the image).",
            );
            w.line(2, &format!("let channel{q} = col{q} / taps;"));
            w.line(2, &format!("let tap{q} = col{q} - channel{q} * taps;"));
            w.line(2, &format!("let ki{q} = tap{q} / kernel_w;"));
            w.line(2, &format!("let kj{q} = tap{q} - ki{q} * kernel_w;"));
            w.line(
                2,
                &format!("let dy{q} = select(i32(b_height + pad_h), i32(ki{q} * dilation_h), col_ok{q});"),
            );
            w.line(2, &format!("let dx{q} = i32(kj{q} * dilation_w);"));
            w.line(2, &format!("let shift{q} = channel{q} * params.b_stride_c + ki{q} * dilation_h * params.b_stride_h + kj{q} * dilation_w * params.b_stride_w;"));
        }
    }
}

/// Per column tile: the uniform walk over B's rows, at `k_first`.
fn walk_start(w: &mut Writer, pass: ConvPass) {
    w.line(2, "var walk_r = k_first;");
    match pass {
        ConvPass::Forward => {
            w.line(
                2,
                "// The tap walk (channel, ki, kj) from r = 0: reach and storage shift.",
            );
            w.line(2, "var walk_ki = 0u;");
            w.line(2, "var walk_kj = 0u;");
            w.line(2, "var walk_dy = 0;");
            w.line(2, "var walk_dx = 0;");
            w.line(2, "var walk_shift = 0u;");
        }
        ConvPass::BackwardInput => {
            w.line(
                2,
                "// The tap walk (o, ki, kj) from r = 0: ki * dil and kj * dil by the stride, o's shift.",
            );
            w.line(2, "var walk_ki = 0u;");
            w.line(2, "var walk_kj = 0u;");
            w.line(2, "var walk_qy = 0;");
            w.line(2, "var walk_ry = 0u;");
            w.line(2, "var walk_qx = 0;");
            w.line(2, "var walk_rx = 0u;");
            w.line(2, "var walk_channel = 0u;");
        }
        ConvPass::BackwardWeight => {
            w.line(
                2,
                "// The pixel walk (image, oi, oj) from k_first: window origin and storage position.",
            );
            w.line(2, "let first_image = k_first / grid_plane;");
            w.line(2, "let first_pixel = k_first - first_image * grid_plane;");
            w.line(2, "var walk_oi = first_pixel / grid_w;");
            w.line(2, "var walk_oj = first_pixel - walk_oi * grid_w;");
            w.line(2, "var walk_h = i32(walk_oi * stride_h) - i32(pad_h);");
            w.line(2, "var walk_w = i32(walk_oj * stride_w) - i32(pad_w);");
            w.line(2, "var walk_base = params.b_offset + first_image * params.b_stride_n + bitcast<u32>(walk_h) * params.b_stride_h + bitcast<u32>(walk_w) * params.b_stride_w;");
        }
    }
}

/// The gathers of the k-block starting at `k0` into the registers (B through the walk, which
/// advances by the block; blocks are loaded in order).
fn load_block(w: &mut Writer, key: ConvCoopKey, indent: usize, k0: &str) {
    let kb = key.k_block.size();
    let column_sets = key.tile.columns() / 128;
    let a_loads = key.tile.rows() * kb / 128;
    let a_row_step = 128 / kb;
    w.line(indent, "{");
    let i = indent + 1;
    w.line(i, &format!("let a_k = {k0} + a_column;"));
    w.line(i, "let a_k_ok = a_k < k_end;");
    match key.pass {
        ConvPass::Forward | ConvPass::BackwardInput => {
            w.line(i, "let a_at = params.a_offset + a_rows_base + a_k;");
        }
        ConvPass::BackwardWeight => {
            w.line(i, "let g_image = a_k / grid_plane;");
            w.line(i, "let g_pixel = a_k - g_image * grid_plane;");
            w.line(i, "let g_oi = g_pixel / grid_w;");
            w.line(i, "let g_oj = g_pixel - g_oi * grid_w;");
            w.line(i, "let a_at = params.a_offset + g_image * params.a_stride_n + g_oi * params.a_stride_h + g_oj * params.a_stride_w + a_rows_base;");
        }
    }
    for p in 0..a_loads {
        w.line(
            i,
            &format!("let a_ok{p} = a_k_ok && {}u < a_rows_left;", p * a_row_step),
        );
        w.line(
            i,
            &format!("ra{p} = select(0.0h, source_a[select(0u, a_at + {p}u * a_row_step, a_ok{p})], a_ok{p});"),
        );
    }
    for kk in 0..kb {
        w.line(i, "{");
        let j = i + 1;
        w.line(j, "let walk_ok = walk_r < k_end;");
        for q in 0..column_sets {
            let (inside, at) = match key.pass {
                ConvPass::Forward => (
                    format!("walk_ok && bitcast<u32>(h{q} + walk_dy) < b_height && bitcast<u32>(w{q} + walk_dx) < b_width"),
                    format!("base{q} + walk_shift"),
                ),
                ConvPass::BackwardInput => (
                    format!("walk_ok && ry{q} == walk_ry && rx{q} == walk_rx && bitcast<u32>(qy{q} - walk_qy) < b_height && bitcast<u32>(qx{q} - walk_qx) < b_width"),
                    format!("base{q} + walk_shift"),
                ),
                ConvPass::BackwardWeight => (
                    format!("walk_ok && bitcast<u32>(walk_h + dy{q}) < b_height && bitcast<u32>(walk_w + dx{q}) < b_width"),
                    format!("walk_base + shift{q}"),
                ),
            };
            if key.pass == ConvPass::BackwardInput && q == 0 {
                w.line(j, "let walk_shift = walk_channel - bitcast<u32>(walk_qy) * params.b_stride_h - bitcast<u32>(walk_qx) * params.b_stride_w;");
            }
            w.line(j, &format!("let inside{q} = {inside};"));
            w.line(
                j,
                &format!(
                    "rb{q}_{kk} = select(0.0h, source_b[select(0u, {at}, inside{q})], inside{q});"
                ),
            );
        }
        walk_advance(w, key.pass, j);
        w.line(i, "}");
    }
    w.line(indent, "}");
}

/// Advance the uniform walk by one row of B.
fn walk_advance(w: &mut Writer, pass: ConvPass, i: usize) {
    w.line(i, "walk_r = walk_r + 1u;");
    match pass {
        ConvPass::Forward => {
            w.line(i, "walk_kj = walk_kj + 1u;");
            w.line(i, "walk_dx = walk_dx + i32(dilation_w);");
            w.line(i, "walk_shift = walk_shift + dilation_shift_w;");
            w.line(i, "if (walk_kj == kernel_w) {");
            w.line(i + 1, "walk_kj = 0u;");
            w.line(i + 1, "walk_dx = 0;");
            w.line(i + 1, "walk_ki = walk_ki + 1u;");
            w.line(i + 1, "walk_dy = walk_dy + i32(dilation_h);");
            w.line(i + 1, "walk_shift = walk_shift + wrap_j;");
            w.line(i, "}");
            w.line(i, "if (walk_ki == kernel_h) {");
            w.line(i + 1, "walk_ki = 0u;");
            w.line(i + 1, "walk_dy = 0;");
            w.line(i + 1, "walk_shift = walk_shift + wrap_i;");
            w.line(i, "}");
        }
        ConvPass::BackwardInput => {
            w.line(i, "walk_kj = walk_kj + 1u;");
            w.line(i, "walk_qx = walk_qx + i32(dilation_q_w);");
            w.line(i, "walk_rx = walk_rx + dilation_r_w;");
            w.line(i, "if (walk_rx >= stride_w) {");
            w.line(i + 1, "walk_rx = walk_rx - stride_w;");
            w.line(i + 1, "walk_qx = walk_qx + 1;");
            w.line(i, "}");
            w.line(i, "if (walk_kj == kernel_w) {");
            w.line(i + 1, "walk_kj = 0u;");
            w.line(i + 1, "walk_qx = 0;");
            w.line(i + 1, "walk_rx = 0u;");
            w.line(i + 1, "walk_ki = walk_ki + 1u;");
            w.line(i + 1, "walk_qy = walk_qy + i32(dilation_q_h);");
            w.line(i + 1, "walk_ry = walk_ry + dilation_r_h;");
            w.line(i + 1, "if (walk_ry >= stride_h) {");
            w.line(i + 2, "walk_ry = walk_ry - stride_h;");
            w.line(i + 2, "walk_qy = walk_qy + 1;");
            w.line(i + 1, "}");
            w.line(i, "}");
            w.line(i, "if (walk_ki == kernel_h) {");
            w.line(i + 1, "walk_ki = 0u;");
            w.line(i + 1, "walk_qy = 0;");
            w.line(i + 1, "walk_ry = 0u;");
            w.line(i + 1, "walk_channel = walk_channel + params.b_stride_c;");
            w.line(i, "}");
        }
        ConvPass::BackwardWeight => {
            w.line(i, "walk_oj = walk_oj + 1u;");
            w.line(i, "walk_w = walk_w + i32(stride_w);");
            w.line(i, "walk_base = walk_base + walk_step_w;");
            w.line(i, "if (walk_oj == grid_w) {");
            w.line(i + 1, "walk_oj = 0u;");
            w.line(i + 1, "walk_w = -i32(pad_w);");
            w.line(i + 1, "walk_oi = walk_oi + 1u;");
            w.line(i + 1, "walk_h = walk_h + i32(stride_h);");
            w.line(i + 1, "walk_base = walk_base + wrap_w;");
            w.line(i, "}");
            w.line(i, "if (walk_oi == grid_h) {");
            w.line(i + 1, "walk_oi = 0u;");
            w.line(i + 1, "walk_h = -i32(pad_h);");
            w.line(i + 1, "walk_base = walk_base + wrap_h;");
            w.line(i, "}");
        }
    }
}

/// The registers into the block copies at `a_at`, `b_at`.
fn store_block(w: &mut Writer, key: ConvCoopKey, indent: usize, a_at: &str, b_at: &str) {
    let kb = key.k_block.size();
    let a_loads = key.tile.rows() * kb / 128;
    let a_row_step = 128 / kb;
    for p in 0..a_loads {
        w.line(
            indent,
            &format!(
                "tile_a[{a_at} + a_store + {}u] = ra{p};",
                p * a_row_step * key.a_row()
            ),
        );
    }
    for q in 0..key.tile.columns() / 128 {
        for kk in 0..kb {
            w.line(
                indent,
                &format!(
                    "tile_b[{b_at} + local + {}u] = rb{q}_{kk};",
                    kk * key.b_row() + 128 * q
                ),
            );
        }
    }
}

/// Each accumulator through the scratch tile into the output (through the forward's
/// `fused` epilogue, the row its channel); closes nothing.
fn epilogue(w: &mut Writer, coop: Coop, output: &str, fused: Option<ConvEpilogueKey>) {
    w.line(
        2,
        "// Output positions of this invocation's four columns (one per accumulator column).",
    );
    for j in 0..4 {
        w.line(
            2,
            &format!(
                "let out_col{j} = column0 + sub_column + {}u + lane % 16u;",
                16 * j
            ),
        );
        w.line(2, &format!("let out_ok{j} = out_col{j} < n;"));
        w.line(2, &format!("let out_image{j} = out_col{j} / plane;"));
        w.line(2, &format!("let out_at{j} = split_base + out_image{j} * params.image_stride + out_col{j} - out_image{j} * plane;"));
    }
    for i in 0..4 {
        for j in 0..4 {
            w.line(2, &coop.store_scratch(&format!("c{i}{j}"), "scratch_at"));
            w.line(2, "workgroupBarrier();");
            w.line(2, &format!("if (out_ok{j}) {{"));
            for e in 0..8 {
                let value = conv_epilogue::finish(
                    fused,
                    &format!("scratch[scratch_read + {}u]", 16 * e),
                    "row",
                    "at",
                );
                w.line(3, &format!("{{\n                let row = lane_row + {}u;\n                let at = out_at{j} + row * params.row_stride;\n                if (row < m) {{ result[at] = {output}({value}); }}\n            }}", 16 * i + e));
            }
            w.line(2, "}");
            w.line(2, "workgroupBarrier();");
        }
    }
}
