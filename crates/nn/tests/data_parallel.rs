//! `DataParallel`: replicas hold bit-identical gradients after every step and bit-identical
//! parameters after every optimizer step; N replicas with a global batch B give one device's
//! loss curve at batch B (an MLP; 2 replicas on each device kind, 4 and 8 on the CPU; uneven
//! splits; several buckets); a CNN with BatchNorm matches one device running the same splits
//! as micro-batches, with replica 0's running statistics; checkpoints move between a
//! data-parallel model and a single-device one; a failing replica fails the step, never hangs.
//! The exchange overlaps backward (buckets sent from a gradient-ready hook): a parameter that
//! gets no gradient still ends with zeros on every replica, and `all_reduce_gradients` (no
//! backward) still averages. Mixed precision: one `GradScaler` over every replica trains like
//! one device with autocast, and an overflow skips the step on every replica alike.

use anygrad_core::{manual_seed, DType, Device, Tensor};
use anygrad_nn::parallel::DEFAULT_BUCKET_BYTES;
use anygrad_nn::*;
use anygrad_testing::values;

fn mlp(device: &Device) -> anygrad_core::Result<Box<dyn Module>> {
    Ok(Box::new(
        Sequential::new()
            .add(Linear::new(5, 12, true, device)?)
            .add(ReLU)
            .add(Linear::new(12, 3, true, device)?),
    ))
}

fn cnn(device: &Device) -> anygrad_core::Result<Box<dyn Module>> {
    Ok(Box::new(
        Sequential::new()
            .add(Conv2d::square(
                1,
                4,
                3,
                Conv2dOptions::default().padding(1),
                device,
            )?)
            .add(BatchNorm2d::new_2d(4, device)?)
            .add(ReLU)
            .add(Flatten::default())
            .add(Linear::new(4 * 5 * 5, 3, true, device)?),
    ))
}

/// A fixed batch: `rows` samples of `shape`, labels cycling over 3 classes.
fn batch(rows: usize, shape: &[usize], seed: u64, device: &Device) -> (Tensor, Tensor) {
    manual_seed(seed);
    let mut full = vec![rows];
    full.extend_from_slice(shape);
    let x = Tensor::randn(&full, DType::F32, device).unwrap();
    let labels: Vec<i32> = (0..rows)
        .map(|i| ((i * 7 + seed as usize) % 3) as i32)
        .collect();
    (x, Tensor::from_vec(labels, &[rows], device).unwrap())
}

/// Builds one optimizer over a replica's parameters.
type OptimizerFactory =
    fn(Vec<(String, Parameter)>) -> anygrad_core::Result<Box<dyn Optimizer + Send>>;

fn sgd(parameters: Vec<(String, Parameter)>) -> anygrad_core::Result<Box<dyn Optimizer + Send>> {
    Ok(Box::new(Sgd::new(
        parameters,
        SgdConfig::new(0.1).momentum(0.9),
    )?))
}

fn adam(parameters: Vec<(String, Parameter)>) -> anygrad_core::Result<Box<dyn Optimizer + Send>> {
    Ok(Box::new(Adam::new(parameters, AdamConfig::new(0.01))?))
}

/// A single-device copy of replica 0 (same initial parameters and buffers).
fn single_copy(
    model: &DataParallel,
    build: fn(&Device) -> anygrad_core::Result<Box<dyn Module>>,
    device: &Device,
) -> Box<dyn Module> {
    let single = build(device).unwrap();
    let state = model.module().state_dict().into_iter().collect();
    load_state_into(single.as_ref(), &state, true, "replica 0").unwrap();
    single
}

fn assert_replicas_identical(model: &DataParallel, gradients: bool) {
    let first = model.replicas()[0].named_parameters();
    for (index, replica) in model.replicas().iter().enumerate().skip(1) {
        for ((name, a), (_, b)) in first.iter().zip(replica.named_parameters()) {
            let (a, b) = if gradients {
                (a.grad().expect("gradient"), b.grad().expect("gradient"))
            } else {
                (a.clone(), b)
            };
            let (a, b) = (values(&a), values(&b));
            assert!(
                a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
                "replica {index} differs from replica 0 in {} of `{name}`",
                if gradients {
                    "the gradient"
                } else {
                    "the value"
                }
            );
        }
    }
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= 1e-5 + 1e-4 * expected.abs(),
        "{what}: data parallel {actual}, one device {expected}"
    );
}

/// Train `steps` steps with `replicas` copies of `device` and on one device; compare.
fn compare_with_one_device(
    device: &Device,
    replicas: usize,
    rows: usize,
    bucket_bytes: usize,
    optimizer: OptimizerFactory,
) {
    manual_seed(3);
    let devices = vec![device.clone(); replicas];
    let model = DataParallel::new(&devices, mlp)
        .unwrap()
        .with_bucket_bytes(bucket_bytes);
    let single = single_copy(&model, mlp, device);
    let mut parallel_optimizer = model.optimizer(optimizer).unwrap();
    let mut single_optimizer = optimizer(single.named_parameter_slots()).unwrap();
    for step in 0..4u64 {
        let (x, y) = batch(rows, &[5], 10 + step, device);
        parallel_optimizer.zero_grad();
        let result = model.forward_backward(&x, &y, cross_entropy).unwrap();
        assert_replicas_identical(&model, true);
        parallel_optimizer.step().unwrap();
        assert_replicas_identical(&model, false);

        single_optimizer.zero_grad();
        let loss = cross_entropy(&single.forward(&x).unwrap(), &y).unwrap();
        loss.backward().unwrap();
        single_optimizer.step().unwrap();
        assert_close(
            result.loss().unwrap(),
            loss.item_f64().unwrap(),
            &format!("loss of step {step}"),
        );
    }
    for ((name, a), (_, b)) in model
        .module()
        .named_parameters()
        .iter()
        .zip(single.named_parameters())
    {
        for (x, y) in values(a).iter().zip(values(&b)) {
            assert_close(*x as f64, y as f64, &format!("parameter `{name}`"));
        }
    }
}

fn two_replicas_match_one_device_sgd(device: &Device) {
    // 13 rows: an uneven 7/6 split; 64-byte buckets: every parameter in its own bucket.
    compare_with_one_device(device, 2, 13, 64, sgd);
}

fn two_replicas_match_one_device_adam(device: &Device) {
    compare_with_one_device(device, 2, 12, DEFAULT_BUCKET_BYTES, adam);
}

#[test]
fn four_replicas_on_the_cpu_match_one_device() {
    compare_with_one_device(&Device::Cpu, 4, 30, 200, sgd);
}

#[test]
fn eight_replicas_on_the_cpu_match_one_device() {
    compare_with_one_device(&Device::Cpu, 8, 30, DEFAULT_BUCKET_BYTES, adam);
}

fn buffers(module: &dyn Module) -> Vec<Vec<f32>> {
    module
        .named_buffers()
        .iter()
        .map(|(_, t)| t.to_vec_f32().unwrap())
        .collect()
}

/// A CNN with BatchNorm normalizes each replica's slice with that slice's statistics (as in
/// PyTorch), so its reference is one device running the same slices as micro-batches, with
/// the running statistics of the first micro-batch kept (replica 0's).
fn batch_norm_cnn_matches_micro_batches(device: &Device) {
    manual_seed(5);
    let devices = vec![device.clone(); 2];
    let model = DataParallel::new(&devices, cnn).unwrap();
    let single = single_copy(&model, cnn, device);
    let mut parallel_optimizer = model.optimizer(sgd).unwrap();
    let mut single_optimizer = sgd(single.named_parameter_slots()).unwrap();
    let rows = 9;
    for step in 0..3u64 {
        let (x, y) = batch(rows, &[1, 5, 5], 20 + step, device);
        parallel_optimizer.zero_grad();
        let result = model.forward_backward(&x, &y, cross_entropy).unwrap();
        parallel_optimizer.step().unwrap();
        assert_replicas_identical(&model, false);

        single_optimizer.zero_grad();
        let mut loss_total = 0.0;
        let mut kept = None;
        let mut start = 0;
        for part in DataParallel::split_sizes(rows, 2) {
            let loss = cross_entropy(
                &single.forward(&x.narrow(0, start, part).unwrap()).unwrap(),
                &y.narrow(0, start, part).unwrap(),
            )
            .unwrap()
            .mul_scalar(part as f64 / rows as f64)
            .unwrap();
            loss.backward().unwrap();
            loss_total += loss.item_f64().unwrap();
            if kept.is_none() {
                kept = Some(
                    single
                        .named_buffers()
                        .iter()
                        .map(|(_, t)| t.copy().unwrap())
                        .collect::<Vec<_>>(),
                );
            }
            start += part;
        }
        for ((_, buffer), value) in single.named_buffers().iter().zip(kept.unwrap()) {
            buffer.assign(&value).unwrap();
        }
        single_optimizer.step().unwrap();
        assert_close(
            result.loss().unwrap(),
            loss_total,
            &format!("loss of step {step}"),
        );
    }
    let expected = buffers(single.as_ref());
    for (a, b) in buffers(model.module()).iter().zip(&expected) {
        for (x, y) in a.iter().zip(b) {
            assert_close(*x as f64, *y as f64, "running statistics of replica 0");
        }
    }
    // Replica 1 saw other rows: its statistics differ until synchronized.
    assert_ne!(
        buffers(model.replicas()[1].as_ref()),
        buffers(model.module())
    );
    model.sync_buffers().unwrap();
    assert_eq!(
        buffers(model.replicas()[1].as_ref()),
        buffers(model.module())
    );
    // Evaluation through the wrapper (split, gathered) equals replica 0 alone.
    model.eval();
    let (x, _) = batch(6, &[1, 5, 5], 99, device);
    let _guard = anygrad_core::no_grad();
    let gathered = values(&model.forward(&x).unwrap());
    let alone = values(&model.module().forward(&x).unwrap());
    for (a, b) in gathered.iter().zip(&alone) {
        assert_close(*a as f64, *b as f64, "eval output");
    }
}

fn checkpoints_move_between_parallel_and_single(device: &Device) {
    let dir = std::env::temp_dir().join(format!(
        "anygrad-dp-checkpoint-{}-{}",
        device,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("parallel.safetensors");
    manual_seed(8);
    let devices = vec![device.clone(); 2];
    let model = DataParallel::new(&devices, mlp).unwrap();
    let mut optimizer = model.optimizer(adam).unwrap();
    let (x, y) = batch(8, &[5], 1, device);
    optimizer.zero_grad();
    model.forward_backward(&x, &y, cross_entropy).unwrap();
    optimizer.step().unwrap();
    let metadata = std::collections::BTreeMap::new();
    save_checkpoint(model.module(), Some(&optimizer), &metadata, &path).unwrap();

    // Into one device: the same parameters and optimizer state.
    let single = mlp(device).unwrap();
    let mut single_optimizer = adam(single.named_parameter_slots()).unwrap();
    load_checkpoint(single.as_ref(), Some(single_optimizer.as_mut()), &path).unwrap();
    for ((_, a), (_, b)) in single
        .named_parameters()
        .iter()
        .zip(model.module().named_parameters())
    {
        assert_eq!(values(a), values(&b));
    }
    // Both continue identically for one more step.
    single_optimizer.zero_grad();
    cross_entropy(&single.forward(&x).unwrap(), &y)
        .unwrap()
        .backward()
        .unwrap();
    single_optimizer.step().unwrap();
    let single_path = dir.join("single.safetensors");
    save_checkpoint(
        single.as_ref(),
        Some(single_optimizer.as_ref()),
        &metadata,
        &single_path,
    )
    .unwrap();

    // And back: a fresh data-parallel model loads the single-device checkpoint into replica 0
    // and broadcasts it.
    manual_seed(9);
    let restored = DataParallel::new(&devices, mlp).unwrap();
    let mut restored_optimizer = restored.optimizer(adam).unwrap();
    load_checkpoint(
        restored.module(),
        Some(&mut restored_optimizer),
        &single_path,
    )
    .unwrap();
    restored.broadcast_state().unwrap();
    for replica in restored.replicas() {
        for ((_, a), (_, b)) in replica
            .named_parameters()
            .iter()
            .zip(single.named_parameters())
        {
            assert_eq!(values(a), values(&b));
        }
    }
    // Every replica's optimizer got the state (Adam's step count and moments).
    let expected = single_optimizer.state_dict().unwrap();
    for index in 0..2 {
        let state = restored_optimizer
            .replica(index)
            .unwrap()
            .state_dict()
            .unwrap();
        assert_eq!(state.scalar("state.0.weight.step").unwrap(), 2.0);
        assert_eq!(
            values(&state.tensors["state.0.weight.exp_avg"]),
            values(&expected.tensors["state.0.weight.exp_avg"])
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn a_failing_replica_fails_the_step(device: &Device) {
    let devices = vec![device.clone(); 2];
    let model = DataParallel::new(&devices, mlp).unwrap();
    let (x, y) = batch(7, &[5], 4, device);
    // 7 rows split 4/3: the replica with 3 rows fails; the other must not wait forever.
    let error = model
        .forward_backward(&x, &y, |out, target| {
            if target.shape()[0] == 3 {
                Err(anygrad_core::Error::invalid(
                    "test loss",
                    "replica with 3 rows fails",
                ))
            } else {
                cross_entropy(out, target)
            }
        })
        .unwrap_err();
    assert!(
        error.to_string().contains("replica with 3 rows fails"),
        "{error}"
    );
    // The model still works afterwards.
    model.forward_backward(&x, &y, cross_entropy).unwrap();
}

/// An MLP plus a parameter the forward never uses (it gets no gradient in backward).
struct WithUnused {
    layers: Box<dyn Module>,
    spare: Parameter,
}

impl Module for WithUnused {
    fn forward(&self, x: &Tensor) -> anygrad_core::Result<Tensor> {
        self.layers.forward(x)
    }

    /// The spare parameter comes first, so it lands in the last bucket (the one exchanged
    /// last, once backward has finished).
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&format!("{prefix}spare"), &self.spare, Kind::Parameter);
        self.layers.visit(&format!("{prefix}layers."), visitor);
    }
}

fn with_unused(device: &Device) -> anygrad_core::Result<Box<dyn Module>> {
    Ok(Box::new(WithUnused {
        layers: mlp(device)?,
        spare: Parameter::new(Tensor::ones(&[3, 2], DType::F32, device)?),
    }))
}

/// Overlapped exchange with several buckets and a parameter without gradient: every replica
/// ends with the one-device gradients (zeros for the unused parameter), bit-identical.
fn overlapped_exchange_matches_one_device(device: &Device) {
    manual_seed(12);
    let devices = vec![device.clone(); 2];
    // 64-byte buckets: several buckets, each launched from the hook as its gradients finish.
    let model = DataParallel::new(&devices, with_unused)
        .unwrap()
        .with_bucket_bytes(64);
    assert!(model.bucket_count() > 2);
    let single = single_copy(&model, with_unused, device);
    let (x, y) = batch(11, &[5], 31, device);
    model.zero_grad();
    model.forward_backward(&x, &y, cross_entropy).unwrap();
    assert_replicas_identical(&model, true);
    cross_entropy(&single.forward(&x).unwrap(), &y)
        .unwrap()
        .backward()
        .unwrap();
    for ((name, parallel), (_, alone)) in model
        .module()
        .named_parameters()
        .iter()
        .zip(single.named_parameters())
    {
        let parallel = values(&parallel.grad().expect("every replica gets a gradient"));
        match alone.grad() {
            Some(grad) => {
                for (a, b) in parallel.iter().zip(values(&grad)) {
                    assert_close(*a as f64, b as f64, &format!("gradient of `{name}`"));
                }
            }
            None => assert!(parallel.iter().all(|v| *v == 0.0), "`{name}` gets zeros"),
        }
    }
    let stats = model.exchange_stats();
    assert_eq!(stats.steps, 1);
    assert_eq!(stats.bytes_per_step, 4 * (5 * 12 + 12 + 12 * 3 + 3 + 6));

    // Custom loop: backward on each replica by hand, then all_reduce_gradients averages.
    model.zero_grad();
    let slices = model.scatter(&x).unwrap();
    let targets = model.scatter(&y).unwrap();
    for ((replica, input), target) in model.replicas().iter().zip(&slices).zip(&targets) {
        let share = input.shape()[0] as f64 * 2.0 / 11.0;
        cross_entropy(&replica.forward(input).unwrap(), target)
            .unwrap()
            .mul_scalar(share)
            .unwrap()
            .backward()
            .unwrap();
    }
    model.all_reduce_gradients().unwrap();
    assert_replicas_identical(&model, true);
    let weight = |m: &dyn Module| values(&m.named_parameters()[1].1.grad().unwrap());
    for (a, b) in weight(model.module()).iter().zip(weight(single.as_ref())) {
        assert_close(
            *a as f64,
            b as f64,
            "hand-made backward, then all_reduce_gradients",
        );
    }
}

/// `--amp` with several devices: f16 autocast on every replica, one scaler for all.
fn mixed_precision_with_one_scaler(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "mixed_precision_with_one_scaler") {
        return;
    }
    manual_seed(21);
    let devices = vec![device.clone(); 2];
    let model = DataParallel::new(&devices, mlp).unwrap();
    let single = single_copy(&model, mlp, device);
    let mut parallel_optimizer = model.optimizer(sgd).unwrap();
    let mut single_optimizer = sgd(single.named_parameter_slots()).unwrap();
    // The first step's scale overflows f16 (the step is skipped everywhere), the next ones
    // train.
    let mut parallel_scaler = GradScaler::new(1e30, 2.0, 1e-26, 1000);
    let mut single_scaler = parallel_scaler.clone();
    for step in 0..3u64 {
        let (x, y) = batch(10, &[5], 40 + step, device);
        let before = values(&model.module().named_parameters()[0].1);
        parallel_optimizer.zero_grad();
        let scale = parallel_scaler.scale_value();
        {
            let _autocast = anygrad_core::autocast(DType::F16, device).unwrap();
            model
                .forward_backward(&x, &y, |out, target| {
                    cross_entropy(out, target)?.mul_scalar(scale)
                })
                .unwrap();
        }
        assert_replicas_identical(&model, true);
        let skipped_before = parallel_scaler.skipped_steps();
        parallel_scaler.step(&mut parallel_optimizer).unwrap();
        parallel_scaler.update();
        let stepped = parallel_scaler.skipped_steps() == skipped_before;
        assert_replicas_identical(&model, false);

        single_optimizer.zero_grad();
        let loss = {
            let _autocast = anygrad_core::autocast(DType::F16, device).unwrap();
            cross_entropy(&single.forward(&x).unwrap(), &y).unwrap()
        };
        single_scaler.scale(&loss).unwrap().backward().unwrap();
        let single_skipped_before = single_scaler.skipped_steps();
        single_scaler.step(single_optimizer.as_mut()).unwrap();
        single_scaler.update();
        let single_stepped = single_scaler.skipped_steps() == single_skipped_before;
        assert_eq!(
            stepped, single_stepped,
            "step {step}: the same skip decision"
        );
        assert_eq!(
            stepped,
            step > 0,
            "step {step}: only the overflowing step is skipped"
        );
        if !stepped {
            assert_eq!(values(&model.module().named_parameters()[0].1), before);
            assert_eq!(parallel_scaler.skipped_steps(), 1);
        }
    }
    for ((name, a), (_, b)) in model
        .module()
        .named_parameters()
        .iter()
        .zip(single.named_parameters())
    {
        for (x, y) in values(a).iter().zip(values(&b)) {
            assert!(
                (x - y).abs() <= 2e-3 * (1.0 + y.abs()),
                "`{name}`: data parallel {x}, one device {y}"
            );
        }
    }
}

/// A [`Collective`] between threads of one process (ranks sum in rank order, so every rank
/// gets the same bits), to test the distributed reducer without MPI.
struct ThreadCollective {
    rank: usize,
    shared: std::sync::Arc<(std::sync::Barrier, std::sync::Mutex<Vec<Vec<f32>>>)>,
}

impl Collective for ThreadCollective {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.shared.1.lock().unwrap().len()
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> anygrad_core::Result<()> {
        let (barrier, slots) = &*self.shared;
        slots.lock().unwrap()[self.rank] = values.to_vec();
        barrier.wait();
        {
            let slots = slots.lock().unwrap();
            values.copy_from_slice(&slots[0]);
            for slot in &slots[1..] {
                for (sum, value) in values.iter_mut().zip(slot) {
                    *sum += *value;
                }
            }
        }
        barrier.wait();
        Ok(())
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> anygrad_core::Result<()> {
        let (barrier, slots) = &*self.shared;
        if self.rank == root {
            slots.lock().unwrap()[root] = values.to_vec();
        }
        barrier.wait();
        values.copy_from_slice(&slots.lock().unwrap()[root]);
        barrier.wait();
        Ok(())
    }
}

/// Two ranks (threads) with `GradientReducer::backward` (bucket copies started from the
/// gradient-ready hook, one rank without rows in the second step): both end with the
/// gradients of one device on the whole batch, bit-identical.
fn gradient_reducer_matches_one_device(device: &Device) {
    manual_seed(17);
    let reference = mlp(device).unwrap();
    let state: std::collections::BTreeMap<String, Tensor> =
        reference.state_dict().into_iter().collect();
    let shared = std::sync::Arc::new((
        std::sync::Barrier::new(2),
        std::sync::Mutex::new(vec![Vec::new(); 2]),
    ));
    for (step, rows) in [(0u64, 9usize), (1, 1)] {
        let (x, y) = batch(rows, &[5], 50 + step, device);
        reference.zero_grad();
        cross_entropy(&reference.forward(&x).unwrap(), &y)
            .unwrap()
            .backward()
            .unwrap();
        let expected: Vec<Vec<f32>> = reference
            .named_parameters()
            .iter()
            .map(|(_, p)| values(&p.grad().unwrap()))
            .collect();
        let gradients: Vec<Vec<Vec<f32>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|rank| {
                    let (shared, state, x, y) = (shared.clone(), &state, &x, &y);
                    scope.spawn(move || {
                        let collective = ThreadCollective { rank, shared };
                        // Rank 1 starts from other values: the broadcast makes them rank 0's.
                        manual_seed(100 + rank as u64);
                        let model = mlp(device).unwrap();
                        if rank == 0 {
                            load_state_into(model.as_ref(), state, true, "rank 0").unwrap();
                        }
                        broadcast_module(model.as_ref(), &collective, 0).unwrap();
                        let reducer = GradientReducer::new(model.as_ref(), 64);
                        let sizes = DataParallel::split_sizes(rows, 2);
                        let start: usize = sizes[..rank].iter().sum();
                        if sizes[rank] > 0 {
                            let loss = cross_entropy(
                                &model
                                    .forward(&x.narrow(0, start, sizes[rank]).unwrap())
                                    .unwrap(),
                                &y.narrow(0, start, sizes[rank]).unwrap(),
                            )
                            .unwrap()
                            .mul_scalar(GradientReducer::loss_weight(sizes[rank], rows, 2))
                            .unwrap();
                            reducer.backward(&loss, &collective, device).unwrap();
                        } else {
                            reducer.all_reduce(&collective, device).unwrap();
                        }
                        assert_eq!(reducer.exchange_stats().steps, 1);
                        model
                            .named_parameters()
                            .iter()
                            .map(|(_, p)| values(&p.grad().unwrap()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(gradients[0], gradients[1], "ranks hold the same gradients");
        for (got, want) in gradients[0].iter().zip(&expected) {
            for (a, b) in got.iter().zip(want) {
                assert_close(*a as f64, *b as f64, &format!("gradient at step {step}"));
            }
        }
    }
}

/// `forward_backward_step` (the update applied bucket by bucket during the exchange) leaves
/// exactly the parameters of `forward_backward` followed by `step`, for SGD with momentum and
/// Adam, over several buckets and an uneven split.
fn optimizer_step_during_exchange_matches_step_after(device: &Device) {
    for (name, factory) in [("sgd", sgd as OptimizerFactory), ("adam", adam)] {
        let devices = vec![device.clone(); 2];
        let after = DataParallel::new(&devices, cnn)
            .unwrap()
            .with_bucket_bytes(64);
        let during = DataParallel::new(&devices, cnn)
            .unwrap()
            .with_bucket_bytes(64);
        // The same start (tests share the global generator across threads: copy, not seed).
        let state = after.module().state_dict().into_iter().collect();
        load_state_into(during.module(), &state, true, "the other model").unwrap();
        during.broadcast_state().unwrap();
        assert!(during.bucket_count() > 2, "several buckets");
        let mut after_optimizer = after.optimizer(factory).unwrap();
        let mut during_optimizer = during.optimizer(factory).unwrap();
        assert!(during_optimizer.supports_partial_step());
        for step in 0..3u64 {
            let (x, y) = batch(7, &[1, 5, 5], 40 + step, device);
            after_optimizer.zero_grad();
            after.forward_backward(&x, &y, cross_entropy).unwrap();
            after_optimizer.step().unwrap();
            during_optimizer.zero_grad();
            during
                .forward_backward_step(&x, &y, cross_entropy, &mut during_optimizer)
                .unwrap();
            assert_replicas_identical(&during, false);
        }
        for ((parameter, a), (_, b)) in after
            .module()
            .named_parameters()
            .iter()
            .zip(during.module().named_parameters())
        {
            let (a, b) = (values(a), values(&b));
            assert!(
                a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{name}: `{parameter}` differs between the step after and during the exchange"
            );
        }
        assert!(during.exchange_stats().optimizer_seconds > 0.0);
        assert_eq!(after.exchange_stats().optimizer_seconds, 0.0);
    }
}

#[test]
fn forward_backward_step_refuses_an_optimizer_of_another_model() {
    let two = DataParallel::new(&[Device::Cpu, Device::Cpu], mlp).unwrap();
    let three = DataParallel::new(&[Device::Cpu, Device::Cpu, Device::Cpu], mlp).unwrap();
    let mut optimizer = three.optimizer(sgd).unwrap();
    let (x, y) = batch(6, &[5], 1, &Device::Cpu);
    let error = two
        .forward_backward_step(&x, &y, cross_entropy, &mut optimizer)
        .unwrap_err();
    assert!(error.to_string().contains("3 replicas"), "{error}");
}

anygrad_testing::device_tests!(
    optimizer_step_during_exchange_matches_step_after,
    gradient_reducer_matches_one_device,
    overlapped_exchange_matches_one_device,
    mixed_precision_with_one_scaler,
    two_replicas_match_one_device_sgd,
    two_replicas_match_one_device_adam,
    batch_norm_cnn_matches_micro_batches,
    checkpoints_move_between_parallel_and_single,
    a_failing_replica_fails_the_step,
);
