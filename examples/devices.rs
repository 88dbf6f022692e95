//! Device enumeration and selection, like torch-directml's `device_count()` / `device(i)`:
//! list the adapters, pick the best, and move a tensor between devices.
//!
//! Run: `cargo run --release -p anygrad --example devices`.

use anygrad::prelude::*;

fn main() -> Result<()> {
    let count = anygrad::device_count();
    println!("{count} GPU adapter(s)");
    for i in 0..count {
        println!("  gpu:{i}: {}", anygrad::device_name(i).unwrap_or_default());
    }
    let (device, reason) = Device::best_available();
    println!("best device: {}", device.description());
    if let Some(reason) = reason {
        println!("  ({reason})");
    }
    let x = Tensor::arange(0.0, 6.0, 1.0, DType::F32, &Device::Cpu)?.reshape([2, 3])?;
    let on_device = x.to_device(&device)?;
    let y = on_device.matmul(&on_device.t()?)?;
    println!("{y}");
    Ok(())
}
