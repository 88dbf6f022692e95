//! Every primitive of both backends refuses a view that reaches outside its storage (and
//! matmul a rank other than 3) with an `Error`, where the CPU used to panic or, in `gemm`,
//! read out of bounds.

use super::support::gpu;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::storage::Storage;
use crate::tensor::Conv2dParams;
use crate::{DType, Device, Layout, MemoryFormat};

/// A view of `shape` whose offset pushes its last element one past a storage of `numel`.
fn past_the_end(shape: &[usize]) -> Layout {
    Layout {
        offset: 1,
        ..Layout::contiguous(shape)
    }
}

/// A view with more sizes than strides.
fn ragged(shape: &[usize]) -> Layout {
    let mut layout = Layout::contiguous(shape);
    layout.strides.pop();
    layout
}

fn full(device: &Device, shape: &[usize], dtype: DType) -> Storage {
    let numel = shape.iter().product();
    Storage::full(device, numel, dtype, 1.0).expect("full")
}

/// Feed each primitive bad views on `device`; every call must return `Err`.
fn every_primitive_refuses_bad_views(device: &Device) {
    let shape = [4, 6];
    let good = Layout::contiguous(&shape);
    let x = full(device, &shape, DType::F32);
    let mut failures = Vec::new();
    let mut expect_err = |what: &str, result: crate::Result<()>| {
        if result.is_ok() {
            failures.push(format!("{device}: {what} accepted a bad view"));
        }
    };
    for bad in [past_the_end(&shape), ragged(&shape)] {
        let b = &bad;
        expect_err("unary", x.unary(b, UnaryOp::Neg).map(drop));
        expect_err(
            "binary lhs",
            x.binary(b, &x, &good, BinaryOp::Add).map(drop),
        );
        expect_err(
            "binary rhs",
            x.binary(&good, &x, b, BinaryOp::Add).map(drop),
        );
        expect_err(
            "binary_scalar",
            x.binary_scalar(b, BinaryOp::Mul, 2.0, false).map(drop),
        );
        expect_err(
            "where condition",
            x.where_select(b, &x, &good, &x, &good).map(drop),
        );
        expect_err(
            "where on_true",
            x.where_select(&good, &x, b, &x, &good).map(drop),
        );
        expect_err(
            "where on_false",
            x.where_select(&good, &x, &good, &x, b).map(drop),
        );
        expect_err("reduce", x.reduce(b, ReduceOp::Sum, &[1]).map(drop));
        expect_err("rms_norm", x.rms_norm_last(b, None, 1e-6).map(drop));
        expect_err("cumsum", x.cumsum(b, 1).map(drop));
        let row = full(device, &[6], DType::F32);
        expect_err(
            "rms_norm weight",
            x.rms_norm_last(&good, Some((&row, &past_the_end(&[6]))), 1e-6)
                .map(drop),
        );
        let table = full(device, &[4, 6], DType::F32);
        let table_view = Layout::contiguous(&[4, 6]);
        expect_err(
            "rotary_embedding",
            x.rotary_last(b, (&table, &table_view), (&table, &table_view))
                .map(drop),
        );
        expect_err(
            "rotary_embedding cos",
            x.rotary_last(&good, (&table, b), (&table, &table_view))
                .map(drop),
        );
        expect_err(
            "rotary_embedding sin",
            x.rotary_last(&good, (&table, &table_view), (&table, b))
                .map(drop),
        );
        expect_err("copy_strided", x.copy_strided(b).map(drop));
        expect_err("cast", x.cast(b, DType::I32).map(drop));
        let mut destination = full(device, &shape, DType::F32);
        expect_err("copy_into source", x.copy_into(b, &mut destination, &good));
        expect_err(
            "copy_into destination",
            x.copy_into(&good, &mut destination, b),
        );
    }
    // Matmul: views past the end, and ranks other than 3.
    let matrix = [1, 4, 6];
    let m = full(device, &matrix, DType::F32);
    let transposed = Layout::contiguous(&[1, 6, 4]);
    let good_m = Layout::contiguous(&matrix);
    expect_err(
        "matmul lhs",
        m.matmul(&past_the_end(&matrix), &m, &transposed).map(drop),
    );
    expect_err(
        "matmul rhs",
        m.matmul(&good_m, &m, &past_the_end(&[1, 6, 4])).map(drop),
    );
    expect_err(
        "matmul rank 2",
        x.matmul(&good, &x, &good.permute(&[1, 0])).map(drop),
    );
    expect_err(
        "matmul rank mismatch",
        m.matmul(&good_m, &x, &good.permute(&[1, 0])).map(drop),
    );
    let huge = Layout {
        shape: vec![1, 4, 6],
        strides: vec![0, usize::MAX / 4, 1],
        offset: 0,
    };
    expect_err(
        "matmul huge stride",
        m.matmul(&huge, &m, &transposed).map(drop),
    );
    // Convolution and its gradients: input [1, 2, 4, 4], weight [3, 2, 3, 3], output [1, 3, 2, 2].
    let (input, weight, output) = ([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2]);
    let xs = full(device, &input, DType::F32);
    let ws = full(device, &weight, DType::F32);
    let gs = full(device, &output, DType::F32);
    let (xl, wl, gl) = (
        Layout::contiguous(&input),
        Layout::contiguous(&weight),
        Layout::contiguous(&output),
    );
    let params = Conv2dParams::default();
    expect_err(
        "conv2d input",
        xs.conv2d(&past_the_end(&input), &ws, &wl, &params)
            .map(drop),
    );
    expect_err(
        "conv2d weight",
        xs.conv2d(&xl, &ws, &past_the_end(&weight), &params)
            .map(drop),
    );
    expect_err(
        "conv2d_backward_input grad",
        gs.conv2d_backward_input(&past_the_end(&output), &ws, &wl, &params, &input)
            .map(drop),
    );
    expect_err(
        "conv2d_backward_input weight",
        gs.conv2d_backward_input(&gl, &ws, &past_the_end(&weight), &params, &input)
            .map(drop),
    );
    expect_err(
        "conv2d_backward_weight input",
        xs.conv2d_backward_weight(&past_the_end(&input), &gs, &gl, &params, &weight)
            .map(drop),
    );
    expect_err(
        "conv2d_backward_weight grad",
        xs.conv2d_backward_weight(&xl, &gs, &past_the_end(&output), &params, &weight)
            .map(drop),
    );
    // The depthwise convolution and its gradients: input [1, 2, 4, 4], weight [4, 1, 3, 3]
    // (multiplier 2), output [1, 4, 2, 2].
    let (depthwise_weight, depthwise_output) = ([4, 1, 3, 3], [1, 4, 2, 2]);
    let dws = full(device, &depthwise_weight, DType::F32);
    let dgs = full(device, &depthwise_output, DType::F32);
    let (dwl, dgl) = (
        Layout::contiguous(&depthwise_weight),
        Layout::contiguous(&depthwise_output),
    );
    let depthwise = Conv2dParams {
        groups: 2,
        ..Conv2dParams::default()
    };
    expect_err(
        "depthwise_conv2d input",
        xs.depthwise_conv2d(&past_the_end(&input), &dws, &dwl, &depthwise)
            .map(drop),
    );
    expect_err(
        "depthwise_conv2d weight",
        xs.depthwise_conv2d(&xl, &dws, &past_the_end(&depthwise_weight), &depthwise)
            .map(drop),
    );
    expect_err(
        "depthwise_conv2d ragged input",
        xs.depthwise_conv2d(&ragged(&input), &dws, &dwl, &depthwise)
            .map(drop),
    );
    expect_err(
        "depthwise_conv2d_backward_input grad",
        dgs.depthwise_conv2d_backward_input(
            &past_the_end(&depthwise_output),
            &dws,
            &dwl,
            &depthwise,
            &input,
        )
        .map(drop),
    );
    expect_err(
        "depthwise_conv2d_backward_input weight",
        dgs.depthwise_conv2d_backward_input(
            &dgl,
            &dws,
            &past_the_end(&depthwise_weight),
            &depthwise,
            &input,
        )
        .map(drop),
    );
    expect_err(
        "depthwise_conv2d_backward_weight input",
        xs.depthwise_conv2d_backward_weight(
            &past_the_end(&input),
            &dgs,
            &dgl,
            &depthwise,
            &depthwise_weight,
        )
        .map(drop),
    );
    expect_err(
        "depthwise_conv2d_backward_weight grad",
        xs.depthwise_conv2d_backward_weight(
            &xl,
            &dgs,
            &past_the_end(&depthwise_output),
            &depthwise,
            &depthwise_weight,
        )
        .map(drop),
    );
    // Geometry the primitive refuses: one group, a weight with two channels per group.
    expect_err(
        "depthwise_conv2d one group",
        xs.depthwise_conv2d(&xl, &dws, &dwl, &params).map(drop),
    );
    expect_err(
        "depthwise_conv2d weight channels",
        xs.depthwise_conv2d(&xl, &ws, &wl, &depthwise).map(drop),
    );
    // Max pooling and its gradient: input [1, 2, 4, 4], 3x3 window, output [1, 2, 2, 2].
    let window = crate::geometry::Window {
        kernel: (3, 3),
        stride: (1, 1),
        padding: (0, 0),
        dilation: (1, 1),
    };
    let pooled_shape = [1, 2, 2, 2];
    let (ps, pl) = (
        full(device, &pooled_shape, DType::F32),
        Layout::contiguous(&pooled_shape),
    );
    expect_err(
        "max_pool2d input",
        xs.max_pool2d(&past_the_end(&input), &window, MemoryFormat::Contiguous)
            .map(drop),
    );
    expect_err(
        "max_pool2d_backward input",
        xs.max_pool2d_backward(&past_the_end(&input), &ps, &pl, &ps, &pl, &window)
            .map(drop),
    );
    expect_err(
        "max_pool2d_backward output",
        xs.max_pool2d_backward(&xl, &ps, &past_the_end(&pooled_shape), &ps, &pl, &window)
            .map(drop),
    );
    expect_err(
        "max_pool2d_backward grad",
        xs.max_pool2d_backward(&xl, &ps, &pl, &ps, &ragged(&pooled_shape), &window)
            .map(drop),
    );
    // Indexing: bad source, index and src views, and a dim out of range.
    let indices = Storage::full(device, 4, DType::I32, 1.0).expect("indices");
    let index_vector = Layout::contiguous(&[4]);
    let index_grid = Layout::contiguous(&shape);
    let index_storage = full(device, &shape, DType::I32);
    expect_err(
        "index_select source",
        x.index_select(&past_the_end(&shape), &indices, &index_vector, 0)
            .map(drop),
    );
    expect_err(
        "index_select indices",
        x.index_select(&good, &indices, &past_the_end(&[4]), 0)
            .map(drop),
    );
    expect_err(
        "index_select dim",
        x.index_select(&good, &indices, &index_vector, 2).map(drop),
    );
    expect_err(
        "gather source",
        x.gather(&past_the_end(&shape), &index_storage, &index_grid, 1)
            .map(drop),
    );
    expect_err(
        "gather indices",
        x.gather(&good, &index_storage, &past_the_end(&shape), 1)
            .map(drop),
    );
    expect_err(
        "gather dim",
        x.gather(&good, &index_storage, &index_grid, 2).map(drop),
    );
    expect_err(
        "scatter_add base",
        x.scatter_add(
            &past_the_end(&shape),
            &index_storage,
            &index_grid,
            &x,
            &good,
            1,
        )
        .map(drop),
    );
    expect_err(
        "scatter_add indices",
        x.scatter_add(&good, &index_storage, &past_the_end(&shape), &x, &good, 1)
            .map(drop),
    );
    expect_err(
        "scatter_add src",
        x.scatter_add(
            &good,
            &index_storage,
            &index_grid,
            &x,
            &past_the_end(&shape),
            1,
        )
        .map(drop),
    );
    expect_err(
        "scatter_add dim",
        x.scatter_add(&good, &index_storage, &index_grid, &x, &good, 2)
            .map(drop),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The good views still work (the checks refuse only what is out of range).
    assert!(x.unary(&good, UnaryOp::Neg).is_ok());
    assert!(m.matmul(&good_m, &m, &transposed).is_ok());
    assert!(xs.conv2d(&xl, &ws, &wl, &params).is_ok());
    assert!(xs.depthwise_conv2d(&xl, &dws, &dwl, &depthwise).is_ok());
    assert!(xs
        .max_pool2d_backward(&xl, &ps, &pl, &ps, &pl, &window)
        .is_ok());
}

#[test]
fn cpu_primitives_refuse_bad_views() {
    every_primitive_refuses_bad_views(&Device::Cpu);
}

#[test]
fn gpu_primitives_refuse_bad_views() {
    if let Some(device) = gpu() {
        every_primitive_refuses_bad_views(&device);
    }
}
