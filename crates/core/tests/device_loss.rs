//! A GPU lost in the middle of training (driver reset, external GPU unplugged, Windows TDR):
//! every later call on that device, and a readback started before the loss, returns
//! `Error::DeviceLost` promptly — no hang, no panic — while other devices keep working. The
//! loss is simulated with `anygrad_core::gpu::simulate_device_loss`, which destroys the wgpu
//! device. Each test opens a context of its own so that the other tests' `gpu:0` survives.

use std::time::{Duration, Instant};

use anygrad_core::gpu::{simulate_device_loss, GpuDevice};
use anygrad_core::{DType, Device, Error, Result, SgdStep, Tensor};
use anygrad_testing::gpu_or_skip;

/// What a call on the lost device may take at most (it should not wait for anything).
const PROMPT: Duration = Duration::from_secs(5);

/// A context of its own on the adapter behind `gpu:0`.
fn own_device(test: &str) -> Option<(GpuDevice, Device)> {
    gpu_or_skip(test)?;
    let gpu = GpuDevice::open_new_instance(0).expect("a second context on gpu:0");
    Some((gpu.clone(), Device::Gpu(gpu)))
}

/// One step of a linear regression trained by SGD; returns the loss read back.
fn step(weight: &Tensor, inputs: &Tensor, targets: &Tensor) -> Result<f32> {
    let loss = inputs.matmul(weight)?.sub(targets)?.square()?.mean_all()?;
    weight.zero_grad();
    loss.backward()?;
    let grad = weight
        .grad()
        .ok_or_else(|| Error::invalid("step", "no gradient"))?;
    let update = SgdStep {
        lr: 0.1,
        momentum: 0.0,
        dampening: 0.0,
        weight_decay: 0.0,
        nesterov: false,
        first: true,
    };
    weight.sgd_step_(&grad, None, &update)?;
    loss.item::<f32>()
}

/// `result` is `Error::DeviceLost` and came within [`PROMPT`] of `started`.
fn assert_lost<T: std::fmt::Debug>(what: &str, started: Instant, result: Result<T>) {
    let took = started.elapsed();
    match result {
        Err(Error::DeviceLost { message }) => {
            assert!(
                took < PROMPT,
                "{what}: the error took {took:?} (a wait on the lost device)"
            );
            assert!(message.contains("lost"), "{what}: {message}");
        }
        other => panic!("{what}: expected Error::DeviceLost, got {other:?}"),
    }
}

#[test]
fn every_call_after_a_loss_mid_training_is_device_lost() {
    let Some((gpu, device)) = own_device("every_call_after_a_loss_mid_training_is_device_lost")
    else {
        return;
    };
    let inputs = Tensor::randn(&[64, 8], DType::F32, &device).unwrap();
    let truth = Tensor::randn(&[8, 1], DType::F32, &device).unwrap();
    let targets = inputs.matmul(&truth).unwrap();
    let weight = Tensor::zeros(&[8, 1], DType::F32, &device)
        .unwrap()
        .requires_grad_(true);
    let mut losses = Vec::new();
    for _ in 0..3 {
        losses.push(step(&weight, &inputs, &targets).unwrap());
    }
    assert!(
        losses[2] < losses[0],
        "training works before the loss: {losses:?}"
    );

    // Work recorded, and a readback started, just before the loss.
    let recorded = inputs.matmul(&weight.detach()).unwrap().relu().unwrap();
    let pending = weight.detach().read_later().unwrap();
    simulate_device_loss(&gpu);

    let started = Instant::now();
    assert_lost("a pending read", started, pending.wait());
    let started = Instant::now();
    assert_lost("reading recorded work", started, recorded.to_vec_f32());
    let started = Instant::now();
    assert_lost("a training step", started, step(&weight, &inputs, &targets));
    let started = Instant::now();
    assert_lost(
        "a new tensor",
        started,
        Tensor::from_vec(vec![1.0f32, 2.0], &[2], &device).and_then(|t| t.to_vec_f32()),
    );
    let started = Instant::now();
    assert_lost(
        "an elementwise op",
        started,
        inputs.add(&inputs).and_then(|t| t.sum_all()?.item::<f32>()),
    );
    let started = Instant::now();
    assert_lost(
        "a copy to the CPU",
        started,
        targets.to_device(&Device::Cpu),
    );
    let started = Instant::now();
    assert_lost("synchronize", started, gpu.synchronize());
    // Asked again, the answer is the same.
    let started = Instant::now();
    assert_lost("a second synchronize", started, gpu.synchronize());

    // The CPU, and a fresh context on the same adapter, are unaffected.
    let cpu = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &Device::Cpu).unwrap();
    assert_eq!(cpu.add(&cpu).unwrap().to_vec_f32().unwrap(), [2.0, 4.0]);
    let fresh = Device::Gpu(GpuDevice::open_new_instance(0).unwrap());
    let again = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &fresh).unwrap();
    assert_eq!(again.add(&again).unwrap().to_vec_f32().unwrap(), [2.0, 4.0]);
}

#[test]
fn a_loss_while_another_thread_waits_ends_its_wait() {
    let Some((gpu, device)) = own_device("a_loss_while_another_thread_waits_ends_its_wait") else {
        return;
    };
    // A loop of readbacks on one thread; the device is lost under it from another.
    let worker = {
        let device = device.clone();
        std::thread::spawn(move || -> Result<()> {
            let x = Tensor::randn(&[128, 128], DType::F32, &device)?;
            loop {
                x.matmul(&x)?.sum_all()?.item::<f32>()?;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    simulate_device_loss(&gpu);
    let lost_at = Instant::now();
    let result = worker.join().expect("the worker does not panic");
    assert_lost("the worker's next call", lost_at, result);
}
