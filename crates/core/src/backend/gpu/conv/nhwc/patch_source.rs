//! The WGSL of the patch kernels (`patch.rs`): the input patch and one tap row's weights
//! staged per stage, every tap's fragments read out of them, the output written through the
//! convolution epilogue.

use super::patch::{ConvPatchKey, ConvPatchParams, COLUMNS_PER_BLOCK, PIXEL_STRIDE};
use super::store::{planes_store, preload_row_residuals, preloaded_residual};
use super::{channels_last_store, OutputStore, Writer, INVOCATIONS};
use crate::backend::gpu::conv::epilogue as conv_epilogue;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::cooperative::{store_register, Coop};
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;

/// The kernel's WGSL source.
pub(super) fn source(key: ConvPatchKey) -> String {
    let coop = Coop {
        emulated: key.emulated,
    };
    let (side, stride) = (key.side, key.stride);
    let (rows, columns, weight_row) = (key.tile.rows(), key.tile.columns(), key.tile.weight_row());
    let (patch_rows, patch_columns) = key.tile.patch(side, stride);
    // A flat block numbers its outputs over the padded grid (`patch.rs`' header).
    let flat = key.tile.flat_width().is_some();
    let block_pixels = rows * 16;
    // Stride 2 stages the patch's even columns first, then its odd ones: input column `x` of
    // the patch at staged column `(x % 2) * even_columns + x / 2`.
    let even_columns = patch_columns.div_ceil(2);
    let sub_rows = rows / 8; // output rows per subgroup
    let fragments = columns / 16; // accumulators per output row
    let patch_loads_total = patch_rows * patch_columns * 2; // 16-byte loads (8 channels)
    let patch_loads = patch_loads_total.div_ceil(INVOCATIONS);
    let weight_per_row = columns / 8; // 16-byte loads per weight row
    let weight_loads_total = side * 16 * weight_per_row;
    let weight_loads = weight_loads_total.div_ceil(INVOCATIONS);
    let mut w = Writer {
        text: String::from("enable f16;\n"),
    };
    if !key.emulated {
        w.text.push_str(&coop.prelude("input_patch", "taps"));
    }
    w.text.push_str(<ConvPatchParams as KernelParams>::WGSL);
    w.text.push_str(&value_header(DType::F16));
    w.text.push_str(COMMON);
    let _ = std::fmt::Write::write_fmt(
        &mut w.text,
        format_args!(
            "@group(0) @binding(1) var<storage, read> nhwc_input: array<mat2x4<f16>>;
@group(0) @binding(2) var<storage, read> nhwc_weight: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read_write> result: array<{}>;
{}
// One 16 x 16 f32 tile per subgroup: accumulators pass through it to the output.
var<workgroup> scratch: array<f32, 2048>;
// The input patch [{patch_rows}][{patch_columns}] pixels of 16 channels (stride {PIXEL_STRIDE})
// and one tap row's weights [{side} taps][16 channels][{weight_row}].
var<workgroup> input_patch: array<f16, {}>;
var<workgroup> taps: array<f16, {}>;
",
            key.store.result_type(),
            key.store.epilogue_declarations(key.epilogue),
            patch_rows * patch_columns * PIXEL_STRIDE,
            side * 16 * weight_row
        ),
    );
    if key.emulated {
        w.text.push_str(&coop.prelude("input_patch", "taps"));
    }
    let _ = std::fmt::Write::write_fmt(
        &mut w.text,
        format_args!(
            "
@compute @workgroup_size({INVOCATIONS})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>,
        @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{}) {{
",
            coop.subgroup_builtins()
        ),
    );
    if key.emulated {
        w.line(1, "let subgroup = local / 32u;");
        w.line(1, "let lane = local % 32u;");
        w.line(1, "emulated_lane = lane;");
    }
    w.line(1, "let block = workgroup.z * workgroups.y + workgroup.y;");
    w.line(1, "if (block >= params.total_blocks) { return; }");
    let origin = if flat {
        vec![
            format!("let v0 = block * {block_pixels}u;"),
            "let padded_width = params.width + 2u * params.pad_w;".to_string(),
            "let padded_plane = (params.height + 2u * params.pad_h) * padded_width;".into(),
            format!(
                "let patch_count = {block_pixels}u + {}u * (padded_width + 1u);",
                side - 1
            ),
        ]
    } else {
        vec![
            "let image = block / params.blocks;".to_string(),
            "let within = block % params.blocks;".into(),
            format!("let oy0 = (within / params.blocks_x) * {rows}u;"),
            format!("let ox0 = (within % params.blocks_x) * {COLUMNS_PER_BLOCK}u;"),
        ]
    };
    for line in origin {
        w.line(1, &line);
    }
    for line in [
        format!("let column0 = workgroup.x * {columns}u;"),
        format!("let sub_row = subgroup * {sub_rows}u;"),
        "let scratch_at = subgroup * 256u;".into(),
        "let out_channels = params.out_channels;".into(),
        "let c8 = params.channels / 8u;".into(),
        "let input_last = arrayLength(&nhwc_input) - 1u;".into(),
        "let weight_last = arrayLength(&nhwc_weight) - 1u;".into(),
    ] {
        w.line(1, &line);
    }
    // Each patch loader's pixel and half (8 channels) of it, fixed for the whole kernel.
    for p in 0..patch_loads {
        w.line(
            1,
            &format!("let patch_index{p} = local + {}u;", p * INVOCATIONS),
        );
        w.line(
            1,
            &format!(
                "let patch_pixel{p} = min(patch_index{p}, {}u) / 2u;",
                patch_loads_total - 1
            ),
        );
        w.line(
            1,
            &format!("let patch_store{p} = patch_pixel{p} * {PIXEL_STRIDE}u + (patch_index{p} % 2u) * 8u;"),
        );
        if flat {
            // Padded pixel `v0 + patch_pixel` of the grid: its image, row and column.
            for line in [
                format!("let padded{p} = v0 + patch_pixel{p};"),
                format!("let image{p} = padded{p} / padded_plane;"),
                format!("let iy{p} = i32((padded{p} % padded_plane) / padded_width) - i32(params.pad_h);"),
                format!("let ix{p} = i32(padded{p} % padded_width) - i32(params.pad_w);"),
                format!("let patch_inside{p} = patch_index{p} < {patch_loads_total}u && patch_pixel{p} < patch_count && image{p} < params.batch && iy{p} >= 0 && iy{p} < i32(params.height) && ix{p} >= 0 && ix{p} < i32(params.width);"),
                format!("let patch_at{p} = ((image{p} * params.height + u32(max(iy{p}, 0))) * params.width + u32(max(ix{p}, 0))) * c8 + patch_index{p} % 2u;"),
                format!("var pa{p}: mat2x4<f16>;"),
            ] {
                w.line(1, &line);
            }
            continue;
        }
        w.line(
            1,
            &format!(
                "let iy{p} = i32(oy0 * {stride}u + patch_pixel{p} / {patch_columns}u) - i32(params.pad_h);"
            ),
        );
        // The staged column's input column (even ones first for stride 2).
        let column = match stride {
            2 => format!(
                "select(2u * (patch_pixel{p} % {patch_columns}u - {even_columns}u) + 1u, 2u * (patch_pixel{p} % {patch_columns}u), patch_pixel{p} % {patch_columns}u < {even_columns}u)"
            ),
            _ => format!("patch_pixel{p} % {patch_columns}u"),
        };
        w.line(
            1,
            &format!("let ix{p} = i32(ox0 * {stride}u + {column}) - i32(params.pad_w);"),
        );
        w.line(
            1,
            &format!(
                "let patch_inside{p} = patch_index{p} < {patch_loads_total}u && iy{p} >= 0 && iy{p} < i32(params.height) && ix{p} >= 0 && ix{p} < i32(params.width);"
            ),
        );
        w.line(
            1,
            &format!(
                "let patch_at{p} = ((image * params.height + u32(max(iy{p}, 0))) * params.width + u32(max(ix{p}, 0))) * c8 + patch_index{p} % 2u;"
            ),
        );
        w.line(1, &format!("var pa{p}: mat2x4<f16>;"));
    }
    // Each weight loader's (tap, channel) row and 8 output channels.
    for p in 0..weight_loads {
        w.line(
            1,
            &format!("let weight_index{p} = local + {}u;", p * INVOCATIONS),
        );
        w.line(
            1,
            &format!(
                "let weight_row{p} = min(weight_index{p}, {}u) / {weight_per_row}u;",
                weight_loads_total - 1
            ),
        );
        w.line(
            1,
            &format!(
                "let weight_store{p} = weight_row{p} * {weight_row}u + (weight_index{p} % {weight_per_row}u) * 8u;"
            ),
        );
        w.line(1, &format!("var wb{p}: mat2x4<f16>;"));
    }
    let accumulators: Vec<String> = (0..sub_rows * fragments)
        .map(|t| format!("c{}_{}", t / fragments, t % fragments))
        .collect();
    for c in &accumulators {
        w.line(1, &format!("var {c} = {}();", coop.ty('C')));
    }
    // The loads of stage `stage` into the registers: the patch at a channel block's first
    // tap row, the row's weights always.
    let load = |w: &mut Writer, indent: usize| {
        w.line(indent, &format!("let channel_block = stage / {side}u;"));
        w.line(indent, &format!("let tap_row = stage % {side}u;"));
        w.line(indent, "if (tap_row == 0u) {");
        for p in 0..patch_loads {
            w.line(
                indent + 1,
                &format!(
                    "if (patch_inside{p}) {{ pa{p} = nhwc_input[min(patch_at{p} + channel_block * 2u, input_last)]; }} else {{ pa{p} = mat2x4<f16>(); }}"
                ),
            );
        }
        w.line(indent, "}");
        for p in 0..weight_loads {
            // Row r of the staged weights: tap (tap_row, r / 16), channel block * 16 + r % 16
            // (the tap mirrored where flipped).
            w.line(
                indent,
                &format!(
                    "let weight_tap{p} = select(tap_row * {side}u + weight_row{p} / 16u, ({side}u - 1u - tap_row) * {side}u + {side}u - 1u - weight_row{p} / 16u, params.flip != 0u);"
                ),
            );
            w.line(
                indent,
                &format!(
                    "let weight_at{p} = ((weight_tap{p} * params.channels + channel_block * 16u + weight_row{p} % 16u) * out_channels + column0) / 8u + weight_index{p} % {weight_per_row}u;"
                ),
            );
            w.line(
                indent,
                &format!(
                    "if (weight_index{p} < {weight_loads_total}u) {{ wb{p} = nhwc_weight[min(weight_at{p}, weight_last)]; }}"
                ),
            );
        }
    };
    w.line(1, "{");
    w.line(2, "let stage = 0u;");
    load(&mut w, 2);
    w.line(1, "}");
    w.line(
        1,
        "for (var stage = 0u; stage < params.stages; stage = stage + 1u) {",
    );
    w.line(2, "// Everyone is done reading the previous stage.");
    w.line(2, "workgroupBarrier();");
    w.line(2, &format!("let tap_row = stage % {side}u;"));
    w.line(2, "if (tap_row == 0u) {");
    for p in 0..patch_loads {
        let target = ("input_patch", &*format!("patch_store{p}"), 0);
        if (p + 1) * INVOCATIONS > patch_loads_total {
            w.line(3, &format!("if (patch_index{p} < {patch_loads_total}u) {{"));
            store_register(&mut w.text, "                ", target, &format!("pa{p}"));
            w.line(3, "}");
        } else {
            store_register(&mut w.text, "            ", target, &format!("pa{p}"));
        }
    }
    w.line(2, "}");
    for p in 0..weight_loads {
        let target = ("taps", &*format!("weight_store{p}"), 0);
        if (p + 1) * INVOCATIONS > weight_loads_total {
            w.line(
                2,
                &format!("if (weight_index{p} < {weight_loads_total}u) {{"),
            );
            store_register(&mut w.text, "            ", target, &format!("wb{p}"));
            w.line(2, "}");
        } else {
            store_register(&mut w.text, "        ", target, &format!("wb{p}"));
        }
    }
    w.line(2, "workgroupBarrier();");
    w.line(
        2,
        "// The next stage's loads fly while this one is multiplied out.",
    );
    w.line(2, "if (stage + 1u < params.stages) {");
    w.line(3, "let stage = stage + 1u;");
    load(&mut w, 3);
    w.line(2, "}");
    // The taps of the row: unrolled on hardware; a loop when emulated (lavapipe compiles
    // every inlined emulated product, which grows slow quickly).
    let taps: Vec<String> = if key.emulated {
        w.line(2, &format!("for (var b = 0u; b < {side}u; b = b + 1u) {{"));
        vec!["b".into()]
    } else {
        (0..side).map(|b| format!("{b}u")).collect()
    };
    for b in &taps {
        w.line(2, "{");
        // Output column 0's input column at tap `b` is `b`: its staged column.
        let column = match stride {
            2 => format!("({b} % 2u) * {even_columns}u + {b} / 2u"),
            _ => b.clone(),
        };
        for r in 0..sub_rows {
            let start = if flat {
                format!("((sub_row + {r}u) * 16u + tap_row * padded_width + {b}) * {PIXEL_STRIDE}u")
            } else {
                format!(
                    "(((sub_row + {r}u) * {stride}u + tap_row) * {patch_columns}u + {column}) * {PIXEL_STRIDE}u"
                )
            };
            let fragment = coop.load('A', "input_patch", &start, &format!("{PIXEL_STRIDE}u"));
            w.line(3, &format!("let fa{r} = {fragment};"));
        }
        for j in 0..fragments {
            let start = format!("{b} * {}u + {}u", 16 * weight_row, j * 16);
            let fragment = coop.load('B', "taps", &start, &format!("{weight_row}u"));
            w.line(3, &format!("let fb{j} = {fragment};"));
            for r in 0..sub_rows {
                let c = format!("c{r}_{j}");
                let product = coop.multiply_add(&format!("fa{r}"), &format!("fb{j}"), &c);
                w.line(3, &format!("{c} = {product};"));
            }
        }
        w.line(2, "}");
    }
    if key.emulated {
        w.line(2, "}");
    }
    w.line(1, "}");
    if flat {
        flat_store(&mut w, key, &coop, &accumulators);
        w.line(0, "}");
        return w.text;
    }
    // Epilogue: row-major, lane writes channel `lane % 16` of the 8 output columns
    // `(lane / 16) * 8 ..` of each accumulator's output row segment; channels-last, channels
    // `(lane % 2) * 8 ..+ 8` of output column `lane / 2`.
    w.line(1, "let lane_column = lane % 16u;");
    w.line(1, "let first_x = ox0 + (lane / 16u) * 8u;");
    w.line(1, "let lane_pixel = lane / 2u;");
    w.line(1, "let lane_channel = (lane % 2u) * 8u;");
    for (t, c) in accumulators.iter().enumerate() {
        let (r, j) = (t / fragments, t % fragments);
        if key.store == OutputStore::ChannelsLast && j == 0 {
            // The row's residuals at once (pixels outside are not stored).
            let pixel = format!(
                "((image * params.out_height + oy0 + sub_row + {r}u) * params.out_width + ox0 + lane_pixel)"
            );
            preload_row_residuals(&mut w, key.epilogue, (r, fragments), &pixel, "column0");
        }
        w.line(1, &coop.store_scratch(c, "scratch_at"));
        w.line(1, "workgroupBarrier();");
        w.line(1, "{");
        if key.store == OutputStore::ChannelsLast {
            w.line(
                2,
                &format!("let channel = column0 + {}u + lane_channel;", j * 16),
            );
            w.line(2, &format!("let oy = oy0 + sub_row + {r}u;"));
            w.line(2, "let ox = ox0 + lane_pixel;");
            w.line(2, "if (oy < params.out_height && ox < params.out_width) {");
            w.line(
                3,
                "let position = ((image * params.out_height + oy) * params.out_width + ox) * out_channels + channel;",
            );
            let value_at = "scratch_at + lane_pixel * 16u + lane_channel";
            let preloaded = preloaded_residual(r, j);
            channels_last_store(&mut w, 3, key.epilogue, value_at, Some(&preloaded));
            w.line(2, "}");
            w.line(1, "}");
            w.line(1, "workgroupBarrier();");
            continue;
        }
        w.line(
            2,
            &format!("let channel = column0 + {}u + lane_column;", j * 16),
        );
        w.line(2, &format!("let oy = oy0 + sub_row + {r}u;"));
        w.line(
            2,
            "let row_start = ((image * out_channels + channel) * params.out_height + oy) * params.out_width;",
        );
        w.line(
            2,
            "let value_at = scratch_at + (lane / 16u) * 128u + lane_column;",
        );
        if key.store == OutputStore::PlanesPacked {
            // The 8 columns are all inside the width or all outside (it is a multiple of 8).
            w.line(
                2,
                "if (oy < params.out_height && first_x < params.out_width) {",
            );
            w.line(3, "let position = row_start + first_x;");
            w.line(3, "var packed: mat2x4<f16>;");
            if let Some(load) = conv_epilogue::packed_residual(key.epilogue, "position") {
                w.line(3, &load);
            }
            for x in 0..8 {
                let value = format!("scratch[value_at + {}u]", x * 16);
                w.line(
                    3,
                    &format!(
                        "packed[{}][{}] = f16({});",
                        x / 4,
                        x % 4,
                        conv_epilogue::finish_packed(key.epilogue, &value, "channel", x)
                    ),
                );
            }
            w.line(
                3,
                "result[min(position / 8u, arrayLength(&result) - 1u)] = packed;",
            );
            w.line(2, "}");
        } else {
            w.line(2, "for (var x = 0u; x < 8u; x = x + 1u) {");
            w.line(
                3,
                "if (oy < params.out_height && first_x + x < params.out_width) {",
            );
            w.line(4, "let position = row_start + first_x + x;");
            w.line(4, "let value = scratch[value_at + x * 16u];");
            planes_store(&mut w, 4, key.epilogue);
            w.line(3, "}");
            w.line(2, "}");
        }
        w.line(1, "}");
        w.line(1, "workgroupBarrier();");
    }
    w.line(0, "}");
    w.text
}

/// A flat block's epilogue (`patch.rs`' header): each accumulator through the subgroup's
/// scratch tile; channels-last, lane `l` writes channels `(l % 2) * 8 ..+ 8` of the
/// fragment's pixel `l / 2`; row-major, channel `l % 16` of its pixels `(l / 16) * 8 ..+ 8`,
/// one store each (they may span two rows). Pixels of the padded grid outside the output
/// (`ox >= ow`, `oy >= oh`, past the last image) are not stored.
fn flat_store(w: &mut Writer, key: ConvPatchKey, coop: &Coop, accumulators: &[String]) {
    let fragments = key.tile.columns() / 16;
    w.line(1, "let lane_column = lane % 16u;");
    w.line(1, "let lane_pixel = lane / 2u;");
    w.line(1, "let lane_channel = (lane % 2u) * 8u;");
    // The output pixel of the grid's pixel `pixel`, and whether it is one.
    let locate = |w: &mut Writer, indent: usize, pixel: &str| {
        w.line(indent, &format!("let image = {pixel} / padded_plane;"));
        w.line(
            indent,
            &format!("let oy = ({pixel} % padded_plane) / padded_width;"),
        );
        w.line(indent, &format!("let ox = {pixel} % padded_width;"));
        w.line(
            indent,
            "if (image < params.batch && oy < params.out_height && ox < params.out_width) {",
        );
    };
    for (t, c) in accumulators.iter().enumerate() {
        let (r, j) = (t / fragments, t % fragments);
        if key.store == OutputStore::ChannelsLast && j == 0 {
            // The row's residuals at once (pixels outside are not stored).
            let grid = format!("(v0 + (sub_row + {r}u) * 16u + lane_pixel)");
            let pixel = format!(
                "((({grid} / padded_plane) * params.out_height + ({grid} % padded_plane) / padded_width) * params.out_width + {grid} % padded_width)"
            );
            preload_row_residuals(w, key.epilogue, (r, fragments), &pixel, "column0");
        }
        w.line(1, &coop.store_scratch(c, "scratch_at"));
        w.line(1, "workgroupBarrier();");
        w.line(1, "{");
        w.line(
            2,
            &format!("let fragment_pixel = v0 + (sub_row + {r}u) * 16u;"),
        );
        if key.store == OutputStore::ChannelsLast {
            w.line(
                2,
                &format!("let channel = column0 + {}u + lane_channel;", j * 16),
            );
            locate(w, 2, "(fragment_pixel + lane_pixel)");
            w.line(
                3,
                "let position = ((image * params.out_height + oy) * params.out_width + ox) * out_channels + channel;",
            );
            let value_at = "scratch_at + lane_pixel * 16u + lane_channel";
            let preloaded = preloaded_residual(r, j);
            channels_last_store(w, 3, key.epilogue, value_at, Some(&preloaded));
            w.line(2, "}");
        } else {
            w.line(
                2,
                &format!("let channel = column0 + {}u + lane_column;", j * 16),
            );
            w.line(2, "for (var x = 0u; x < 8u; x = x + 1u) {");
            locate(w, 3, "(fragment_pixel + (lane / 16u) * 8u + x)");
            w.line(
                4,
                "let position = ((image * out_channels + channel) * params.out_height + oy) * params.out_width + ox;",
            );
            w.line(
                4,
                "let value = scratch[scratch_at + (lane / 16u) * 128u + x * 16u + lane_column];",
            );
            planes_store(w, 4, key.epilogue);
            w.line(3, "}");
            w.line(2, "}");
        }
        w.line(1, "}");
        w.line(1, "workgroupBarrier();");
    }
}
