//! `DataParallel` with batch norm in training mode never gives a replica a one-row slice: a
//! batch too short for 2 rows on every replica goes to fewer replicas (3 rows on 2 replicas:
//! 3 + 0; 5 on 4: 3 + 2 + 0 + 0) and the gradients and the optimizer step stay those of the
//! mean loss over the global batch (checked against one device running the same slices); a
//! one-row batch is an error that says why; models without batch norm and eval-mode forwards
//! keep the even split.

use anygrad_core::{manual_seed, DType, Device, Tensor};
use anygrad_nn::parallel::{has_batch_norm, min_rows_per_replica, split_rows};
use anygrad_nn::*;
use anygrad_testing::assert_close;

fn with_batch_norm(device: &Device) -> anygrad_core::Result<Box<dyn Module>> {
    Ok(Box::new(
        Sequential::new()
            .add(Linear::new(4, 6, true, device)?)
            .add(BatchNorm1d::new_1d(6, device)?)
            .add(ReLU)
            .add(Linear::new(6, 3, true, device)?),
    ))
}

fn without_batch_norm(device: &Device) -> anygrad_core::Result<Box<dyn Module>> {
    Ok(Box::new(
        Sequential::new()
            .add(Linear::new(4, 6, true, device)?)
            .add(ReLU)
            .add(Linear::new(6, 3, true, device)?),
    ))
}

fn batch(rows: usize, seed: u64) -> (Tensor, Tensor) {
    manual_seed(seed);
    let x = Tensor::randn(&[rows, 4], DType::F32, &Device::Cpu).unwrap();
    let labels: Vec<i32> = (0..rows).map(|i| (i % 3) as i32).collect();
    (x, Tensor::from_vec(labels, &[rows], &Device::Cpu).unwrap())
}

fn sgd(parameters: Vec<(String, Parameter)>) -> anygrad_core::Result<Box<dyn Optimizer + Send>> {
    Ok(Box::new(Sgd::new(parameters, SgdConfig::new(0.1))?))
}

/// A single-device copy of replica 0.
fn single_copy(model: &DataParallel) -> Box<dyn Module> {
    let single = with_batch_norm(&Device::Cpu).unwrap();
    let state = model.module().state_dict().into_iter().collect();
    load_state_into(single.as_ref(), &state, true, "replica 0").unwrap();
    single
}

/// The gradients of the global batch's mean loss with batch norm over each of `sizes`'
/// slices (what the replicas compute), on one device.
fn reference_gradients(
    single: &dyn Module,
    x: &Tensor,
    y: &Tensor,
    sizes: &[usize],
) -> Vec<Vec<f32>> {
    single.zero_grad();
    let total: usize = sizes.iter().sum();
    let mut start = 0;
    for &rows in sizes.iter().filter(|&&rows| rows > 0) {
        let logits = single.forward(&x.narrow(0, start, rows).unwrap()).unwrap();
        let loss = cross_entropy(&logits, &y.narrow(0, start, rows).unwrap()).unwrap();
        loss.mul_scalar(rows as f64 / total as f64)
            .unwrap()
            .backward()
            .unwrap();
        start += rows;
    }
    single
        .parameters()
        .iter()
        .map(|p| p.grad().unwrap().to_vec::<f32>().unwrap())
        .collect()
}

#[test]
fn split_rows_never_gives_a_one_row_slice() {
    for batch in 0..20 {
        for parts in 1..6 {
            let sizes = split_rows(batch, parts, 2);
            assert_eq!(sizes.len(), parts);
            assert_eq!(sizes.iter().sum::<usize>(), batch, "{batch} over {parts}");
            if batch >= 2 {
                assert!(
                    sizes.iter().all(|&rows| rows == 0 || rows >= 2),
                    "{batch} over {parts}: {sizes:?}"
                );
            }
            let used = sizes.iter().filter(|&&rows| rows > 0).count();
            if batch >= 2 * parts {
                assert_eq!(used, parts, "{batch} over {parts}: {sizes:?}");
            }
            assert_eq!(
                split_rows(batch, parts, 1),
                DataParallel::split_sizes(batch, parts)
            );
        }
    }
}

#[test]
fn a_short_batch_goes_to_fewer_replicas_with_the_global_mean_gradient() {
    for (rows, replicas, expected) in [
        (3usize, 2usize, vec![3usize, 0]),
        (5, 4, vec![3, 2, 0, 0]),
        (7, 2, vec![4, 3]),
    ] {
        let devices = vec![Device::Cpu; replicas];
        let model = DataParallel::new(&devices, with_batch_norm).unwrap();
        assert!(model.has_batch_norm());
        model.train();
        assert_eq!(model.min_rows_per_replica(), 2);
        assert_eq!(model.split_for(rows), expected);
        let single = single_copy(&model);
        single.train();
        let (x, y) = batch(rows, rows as u64);
        let expected_gradients = reference_gradients(single.as_ref(), &x, &y, &expected);
        model.zero_grad();
        let step = model
            .forward_backward(&x, &y, cross_entropy)
            .unwrap_or_else(|e| panic!("{rows} rows on {replicas} replicas: {e}"));
        assert_eq!(step.split_sizes, expected);
        for replica in model.replicas() {
            for (parameter, reference) in replica.parameters().iter().zip(&expected_gradients) {
                assert_close(
                    &parameter.grad().unwrap().to_vec::<f32>().unwrap(),
                    reference,
                    1e-5,
                    1e-4,
                    &format!("gradient, {rows} rows on {replicas} replicas"),
                );
            }
        }
    }
}

#[test]
fn the_overlapped_optimizer_step_takes_the_same_split() {
    let model = DataParallel::new(&[Device::Cpu, Device::Cpu], with_batch_norm).unwrap();
    model.train();
    let single = single_copy(&model);
    single.train();
    let (x, y) = batch(3, 11);
    reference_gradients(single.as_ref(), &x, &y, &[3, 0]);
    let mut reference = Sgd::new(single.named_parameter_slots(), SgdConfig::new(0.1)).unwrap();
    reference.step().unwrap();
    let mut optimizer = model.optimizer(sgd).unwrap();
    optimizer.zero_grad();
    let step = model
        .forward_backward_step(&x, &y, cross_entropy, &mut optimizer)
        .unwrap();
    assert_eq!(step.split_sizes, vec![3, 0]);
    assert!(step.loss().unwrap().is_finite());
    for replica in model.replicas() {
        for (trained, expected) in replica.parameters().iter().zip(single.parameters()) {
            assert_close(
                &trained.to_vec::<f32>().unwrap(),
                &expected.to_vec::<f32>().unwrap(),
                1e-5,
                1e-4,
                "parameters after the step",
            );
        }
    }
}

#[test]
fn a_one_row_batch_is_refused_with_the_reason_and_eval_runs_it() {
    let model = DataParallel::new(&[Device::Cpu, Device::Cpu], with_batch_norm).unwrap();
    model.train();
    let (x, y) = batch(1, 3);
    let error = model
        .forward_backward(&x, &y, cross_entropy)
        .expect_err("one row cannot be normalized")
        .to_string();
    assert!(
        error.contains("batch norm") && error.contains("1 row"),
        "{error}"
    );
    model.eval();
    assert_eq!(model.min_rows_per_replica(), 1);
    assert_eq!(model.split_for(3), vec![2, 1]);
    let _guard = anygrad_core::no_grad();
    assert_eq!(model.forward(&x).unwrap().shape(), &[1, 3]);
}

#[test]
fn models_without_batch_norm_keep_the_even_split() {
    let model = DataParallel::new(&[Device::Cpu, Device::Cpu], without_batch_norm).unwrap();
    model.train();
    assert!(!model.has_batch_norm());
    assert_eq!(min_rows_per_replica(model.module()), 1);
    assert!(has_batch_norm(
        with_batch_norm(&Device::Cpu).unwrap().as_ref()
    ));
    let (x, y) = batch(3, 5);
    let step = model.forward_backward(&x, &y, cross_entropy).unwrap();
    assert_eq!(step.split_sizes, vec![2, 1]);
}
