//! CPU out of memory is an `Error::OutOfMemory`, not an abort of the process: tensors and op
//! outputs far larger than the machine are refused when their storage is reserved, before
//! any memory is touched.

use anygrad_core::{DType, Device, Error, Tensor};

fn assert_out_of_memory<T: std::fmt::Debug>(result: anygrad_core::Result<T>, what: &str) {
    match result {
        Err(Error::OutOfMemory { requested, .. }) => {
            assert!(requested >= 1 << 40, "{what}: requested {requested}")
        }
        other => panic!("{what}: expected OutOfMemory, got {other:?}"),
    }
}

#[test]
fn absurd_cpu_allocations_are_out_of_memory() {
    let cpu = Device::Cpu;
    // 4 TiB of f32 and 2^62 bytes: beyond any machine, refused before touching memory.
    assert_out_of_memory(Tensor::zeros(&[1 << 40], DType::F32, &cpu), "zeros 2^40");
    assert_out_of_memory(Tensor::ones(&[1 << 30, 1 << 30], DType::F32, &cpu), "ones");
    assert_out_of_memory(
        Tensor::randn(&[1 << 21, 1 << 21], DType::F32, &cpu),
        "randn",
    );
    // Small operands, an absurd product: the output reservation fails.
    let column = Tensor::zeros(&[1 << 21, 1], DType::F32, &cpu).unwrap();
    let row = Tensor::zeros(&[1, 1 << 21], DType::F32, &cpu).unwrap();
    assert_out_of_memory(column.matmul(&row), "matmul output");
    // Elementwise outputs too: a broadcast sum, a comparison, a cast and a strided copy of
    // a 2^42-element view.
    assert_out_of_memory(column.add(&row), "broadcast add");
    assert_out_of_memory(column.lt(&row), "broadcast comparison");
    let wide = column.broadcast_to(&[1 << 21, 1 << 21]).unwrap();
    assert_out_of_memory(wide.to_dtype(DType::F16), "cast of a broadcast view");
    assert_out_of_memory(wide.contiguous(), "contiguous copy of a broadcast view");
    assert_out_of_memory(wide.relu(), "unary op on a broadcast view");
    // The process is still healthy afterwards.
    let small = Tensor::ones(&[4], DType::F32, &cpu).unwrap();
    assert_eq!(small.sum_all().unwrap().item_f64().unwrap(), 4.0);
}
