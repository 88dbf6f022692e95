use anygrad_core::{Device, Tensor};
use anygrad_data::*;
#[test]
fn timing() {
    let m = Mnist::load("/work/shared/data/mnist", true).unwrap();
    let f = m.features(PixelScaling::Normalized);
    let order = permutation(60000, 1);
    let t = std::time::Instant::now();
    for chunk in order.chunks(64) {
        let x = gather_rows(&f, 784, chunk).unwrap();
        let t = Tensor::from_vec(x, &[chunk.len(), 1, 28, 28], &Device::Cpu).unwrap();
        std::hint::black_box(t);
    }
    println!("host gather epoch: {:.0} ms", t.elapsed().as_secs_f64()*1000.0);
    let ds = m.to_dataset(PixelScaling::Normalized, &Device::Cpu).unwrap();
    let x = ds.features().flatten(1, -1).unwrap();
    let t = std::time::Instant::now();
    for chunk in order.chunks(64).take(100) {
        let idx: Vec<i32> = chunk.iter().map(|&i| i as i32).collect();
        let idx = Tensor::from_vec(idx, &[chunk.len()], &Device::Cpu).unwrap();
        std::hint::black_box(x.index_select(0, &idx).unwrap());
    }
    println!("index_select rank2: {:.3} ms/batch", t.elapsed().as_secs_f64()*1000.0/100.0);
}
