//! RMSprop, Adagrad, parameter groups and the learning-rate schedulers against PyTorch, from
//! `tests/golden/optim_schedulers.json` (written by
//! `scripts/golden/generate_optim_schedulers.py`): optimizer trajectories over 10 steps on a
//! quadratic (one parameter per group), and every group's learning rate (and momentum for
//! OneCycleLR) over 30 scheduler steps. Also: resuming from a checkpoint mid-trajectory
//! matches the uninterrupted run, and bad groups or states are refused.

use anygrad_core::{Device, Tensor};
use anygrad_nn::optim::{split_no_decay, OneCycleOptions};
use anygrad_nn::*;
use anygrad_testing::{assert_close, temp_dir, values};
use serde_json::Value;

fn golden() -> Value {
    serde_json::from_str(include_str!("golden/optim_schedulers.json")).expect("golden json")
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn f32s(v: &Value) -> Vec<f32> {
    f64s(v).into_iter().map(|x| x as f32).collect()
}

fn num(options: &Value, key: &str, default: f64) -> f64 {
    options.get(key).and_then(Value::as_f64).unwrap_or(default)
}

fn flag(options: &Value, key: &str) -> bool {
    options.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The optimizer of a golden case (one group per option object).
fn build_optimizer(
    name: &str,
    groups: &[Value],
    slots: &[(String, Parameter)],
) -> Box<dyn Optimizer> {
    let param = |i: usize| vec![slots[i].clone()];
    if name.starts_with("rmsprop") {
        let groups = groups
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let config = RMSpropConfig::new(num(o, "lr", 1e-2))
                    .alpha(num(o, "alpha", 0.99))
                    .eps(num(o, "eps", 1e-8))
                    .weight_decay(num(o, "weight_decay", 0.0))
                    .momentum(num(o, "momentum", 0.0))
                    .centered(flag(o, "centered"));
                ParamGroup::new(param(i), config)
            })
            .collect();
        Box::new(RMSprop::with_groups(groups).expect("rmsprop"))
    } else if name.starts_with("adagrad") {
        let groups = groups
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let config = AdagradConfig::new(num(o, "lr", 1e-2))
                    .lr_decay(num(o, "lr_decay", 0.0))
                    .weight_decay(num(o, "weight_decay", 0.0))
                    .initial_accumulator_value(num(o, "initial_accumulator_value", 0.0))
                    .eps(num(o, "eps", 1e-10));
                ParamGroup::new(param(i), config)
            })
            .collect();
        Box::new(Adagrad::with_groups(groups).expect("adagrad"))
    } else if name.starts_with("sgd") {
        let groups = groups
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let config = SgdConfig::new(num(o, "lr", 0.0))
                    .momentum(num(o, "momentum", 0.0))
                    .weight_decay(num(o, "weight_decay", 0.0));
                ParamGroup::new(param(i), config)
            })
            .collect();
        Box::new(Sgd::with_groups(groups).expect("sgd"))
    } else {
        let decoupled = name.starts_with("adamw");
        let groups = groups
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let betas = o.get("betas").map(f64s).unwrap_or(vec![0.9, 0.999]);
                let default_decay = if decoupled { 1e-2 } else { 0.0 };
                let config = AdamConfig::new(num(o, "lr", 1e-3))
                    .betas(betas[0], betas[1])
                    .weight_decay(num(o, "weight_decay", default_decay))
                    .amsgrad(flag(o, "amsgrad"));
                ParamGroup::new(param(i), config)
            })
            .collect();
        if decoupled {
            Box::new(AdamW::with_groups(groups).expect("adamw"))
        } else {
            Box::new(Adam::with_groups(groups).expect("adam"))
        }
    }
}

/// `0.5 · Σ a (p − c)²` over every parameter, backward.
fn quadratic_backward(slots: &[(String, Parameter)], a: &[Tensor], c: &[Tensor]) {
    let mut loss: Option<Tensor> = None;
    for (((_, p), a), c) in slots.iter().zip(a).zip(c) {
        let term = p
            .tensor()
            .sub(c)
            .unwrap()
            .square()
            .unwrap()
            .mul(a)
            .unwrap()
            .mul_scalar(0.5)
            .unwrap()
            .sum_all()
            .unwrap();
        loss = Some(match loss {
            None => term,
            Some(previous) => previous.add(&term).unwrap(),
        });
    }
    loss.expect("at least one parameter").backward().unwrap();
}

struct Case {
    name: String,
    slots: Vec<(String, Parameter)>,
    a: Vec<Tensor>,
    c: Vec<Tensor>,
    groups: Vec<Value>,
    trajectory: Vec<Value>,
}

fn load_case(case: &Value, device: &Device) -> Case {
    let tensors = |key: &str| -> Vec<Tensor> {
        case[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|v| {
                let data = f32s(v);
                let n = data.len();
                Tensor::from_vec(data, &[n], device).expect("tensor")
            })
            .collect()
    };
    let slots = tensors("initial")
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("p{i}"), Parameter::new(t)))
        .collect();
    Case {
        name: case["name"].as_str().expect("name").to_string(),
        slots,
        a: tensors("a"),
        c: tensors("center"),
        groups: case["groups"].as_array().expect("groups").clone(),
        trajectory: case["trajectory"].as_array().expect("trajectory").clone(),
    }
}

fn check_step(case: &Case, step: usize) {
    for (i, (_, p)) in case.slots.iter().enumerate() {
        assert_close(
            &values(&p.tensor()),
            &f32s(&case.trajectory[step][i]),
            1e-5,
            1e-4,
            &format!("{}: parameter {i} after step {}", case.name, step + 1),
        );
    }
}

fn golden_optimizer_trajectories(device: &Device) {
    let g = golden();
    for case in g["optimizers"].as_array().expect("optimizers") {
        let case = load_case(case, device);
        let mut optimizer = build_optimizer(&case.name, &case.groups, &case.slots);
        assert_eq!(optimizer.group_count(), case.groups.len(), "{}", case.name);
        for step in 0..case.trajectory.len() {
            optimizer.zero_grad();
            quadratic_backward(&case.slots, &case.a, &case.c);
            optimizer.step().expect("step");
            check_step(&case, step);
        }
    }
}

/// Save after 4 steps, load into a fresh optimizer over the same slots (through a file),
/// continue: the rest of the trajectory matches PyTorch's uninterrupted one.
fn resumed_trajectories_match(device: &Device) {
    let g = golden();
    let dir = temp_dir("optim-golden-resume");
    for case in g["optimizers"].as_array().expect("optimizers") {
        let case = load_case(case, device);
        let mut optimizer = build_optimizer(&case.name, &case.groups, &case.slots);
        for _ in 0..4 {
            optimizer.zero_grad();
            quadratic_backward(&case.slots, &case.a, &case.c);
            optimizer.step().expect("step");
        }
        let path = dir.join(format!("{}.safetensors", case.name));
        save_optimizer(optimizer.as_ref(), &path).expect("save");
        drop(optimizer);
        let mut resumed = build_optimizer(&case.name, &case.groups, &case.slots);
        load_optimizer(resumed.as_mut(), &path).expect("load");
        for step in 4..case.trajectory.len() {
            resumed.zero_grad();
            quadratic_backward(&case.slots, &case.a, &case.c);
            resumed.step().expect("step");
            check_step(&case, step);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_parameter(device: &Device) -> Vec<(String, Parameter)> {
    vec![(
        "w".to_string(),
        Parameter::new(Tensor::zeros(&[1], anygrad_core::DType::F32, device).unwrap()),
    )]
}

fn scheduler_optimizer(case: &Value, device: &Device) -> Box<dyn Optimizer> {
    let base_lrs = f64s(&case["base_lrs"]);
    let groups = || {
        base_lrs
            .iter()
            .enumerate()
            .map(|(i, &lr)| {
                let mut slots = one_parameter(device);
                slots[0].0 = format!("w{i}");
                (slots, lr)
            })
            .collect::<Vec<_>>()
    };
    match case["optimizer"].as_str().expect("optimizer") {
        "sgd" => Box::new(
            Sgd::with_groups(
                groups()
                    .into_iter()
                    .map(|(s, lr)| ParamGroup::new(s, SgdConfig::new(lr).momentum(0.9)))
                    .collect(),
            )
            .unwrap(),
        ),
        "adam" => Box::new(
            Adam::with_groups(
                groups()
                    .into_iter()
                    .map(|(s, lr)| ParamGroup::new(s, AdamConfig::new(lr)))
                    .collect(),
            )
            .unwrap(),
        ),
        _ => Box::new(
            Adagrad::with_groups(
                groups()
                    .into_iter()
                    .map(|(s, lr)| ParamGroup::new(s, AdagradConfig::new(lr)))
                    .collect(),
            )
            .unwrap(),
        ),
    }
}

/// What a golden scheduler case steps: a plain scheduler or the metric-driven plateau one.
enum Driver {
    Plain(Box<dyn LrScheduler>),
    Plateau(ReduceLROnPlateau, Vec<f64>),
}

fn build_scheduler(case: &Value, optimizer: &mut dyn Optimizer) -> Driver {
    let o = &case["options"];
    let usize_of = |key: &str| o[key].as_u64().expect(key) as usize;
    let milestones = |key: &str| -> Vec<usize> {
        o[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|m| m.as_u64().expect("milestone") as usize)
            .collect()
    };
    let plain: Box<dyn LrScheduler> = match o["type"].as_str().expect("type") {
        "multistep" => Box::new(
            MultiStepLR::new(optimizer, &milestones("milestones"), num(o, "gamma", 0.1)).unwrap(),
        ),
        "linear" => Box::new(
            LinearLR::new(
                optimizer,
                num(o, "start_factor", 1.0 / 3.0),
                num(o, "end_factor", 1.0),
                usize_of("total_iters"),
            )
            .unwrap(),
        ),
        "lambda_exp" => {
            let gamma = num(o, "gamma", 1.0);
            Box::new(LambdaLR::new(optimizer, move |e| gamma.powi(e as i32)).unwrap())
        }
        "step" => Box::new(StepLR::new(
            optimizer,
            usize_of("step_size"),
            num(o, "gamma", 0.1),
        )),
        "sequential" => {
            let w = &o["warmup"];
            let c = &o["cosine"];
            let warmup = LinearLR::new(
                optimizer,
                num(w, "start_factor", 1.0 / 3.0),
                num(w, "end_factor", 1.0),
                w["total_iters"].as_u64().expect("iters") as usize,
            )
            .unwrap();
            let cosine = CosineAnnealingLR::new(
                optimizer,
                c["t_max"].as_u64().expect("t_max") as usize,
                num(c, "eta_min", 0.0),
            );
            Box::new(
                SequentialLR::new(
                    optimizer,
                    vec![Box::new(warmup), Box::new(cosine)],
                    &milestones("milestones"),
                )
                .unwrap(),
            )
        }
        "sequential3" => {
            let first = LinearLR::new(optimizer, 0.5, 1.0, 3).unwrap();
            let second = StepLR::new(optimizer, 2, 0.8);
            let third = MultiStepLR::new(optimizer, &[5, 9], 0.1).unwrap();
            Box::new(
                SequentialLR::new(
                    optimizer,
                    vec![Box::new(first), Box::new(second), Box::new(third)],
                    &milestones("milestones"),
                )
                .unwrap(),
            )
        }
        "onecycle" => {
            let strategy = if flag(o, "linear") {
                AnnealStrategy::Linear
            } else {
                AnnealStrategy::Cos
            };
            let options = OneCycleOptions::new(0.0, usize_of("total_steps"))
                .max_lrs(&f64s(&o["max_lr"]))
                .pct_start(num(o, "pct_start", 0.3))
                .anneal_strategy(strategy)
                .div_factors(num(o, "div_factor", 25.0), num(o, "final_div_factor", 1e4))
                .three_phase(flag(o, "three_phase"))
                .cycle_momentum(
                    o.get("cycle_momentum")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                );
            Box::new(OneCycleLR::new(optimizer, options).unwrap())
        }
        _ => {
            let mode = match o.get("mode").and_then(Value::as_str) {
                Some("max") => PlateauMode::Max,
                _ => PlateauMode::Min,
            };
            let threshold_mode = match o.get("threshold_mode").and_then(Value::as_str) {
                Some("abs") => ThresholdMode::Abs,
                _ => ThresholdMode::Rel,
            };
            let plateau = ReduceLROnPlateau::new(optimizer)
                .mode(mode)
                .factor(num(o, "factor", 0.1))
                .patience(usize_of("patience"))
                .threshold(num(o, "threshold", 1e-4), threshold_mode)
                .cooldown(o.get("cooldown").and_then(Value::as_u64).unwrap_or(0) as usize)
                .min_lr(num(o, "min_lr", 0.0));
            return Driver::Plateau(plateau, f64s(&case["metrics"]));
        }
    };
    Driver::Plain(plain)
}

fn check_rates(name: &str, step: usize, optimizer: &dyn Optimizer, case: &Value) {
    let expected = f64s(&case["lrs"][step]);
    for (group, expected) in expected.iter().enumerate() {
        let actual = optimizer.group_learning_rate(group).unwrap();
        assert!(
            (actual - expected).abs() <= 1e-10 + 1e-9 * expected.abs(),
            "{name}: step {step}, group {group}: lr {actual}, expected {expected}"
        );
    }
    if let Some(momentums) = case.get("momentums") {
        for (group, expected) in f64s(&momentums[step]).iter().enumerate() {
            let actual = optimizer.group_momentum(group).unwrap().expect("momentum");
            assert!(
                (actual - expected).abs() <= 1e-10,
                "{name}: step {step}, group {group}: momentum {actual}, expected {expected}"
            );
        }
    }
}

#[test]
fn golden_scheduler_rates() {
    let device = Device::Cpu;
    let g = golden();
    for case in g["schedulers"].as_array().expect("schedulers") {
        let name = case["name"].as_str().expect("name");
        let mut optimizer = scheduler_optimizer(case, &device);
        let mut driver = build_scheduler(case, optimizer.as_mut());
        let steps = case["lrs"].as_array().expect("lrs").len();
        check_rates(name, 0, optimizer.as_ref(), case);
        for step in 1..steps {
            match &mut driver {
                Driver::Plain(scheduler) => {
                    scheduler.step(optimizer.as_mut()).expect("step");
                    assert_eq!(scheduler.last_epoch(), step);
                    let last = scheduler.last_lrs();
                    assert_eq!(last.len(), optimizer.group_count());
                    assert!(
                        (last[0] - optimizer.learning_rate()).abs() < 1e-12,
                        "{name}"
                    );
                }
                Driver::Plateau(scheduler, metrics) => scheduler
                    .step(optimizer.as_mut(), metrics[step - 1])
                    .expect("step"),
            }
            check_rates(name, step, optimizer.as_ref(), case);
        }
    }
}

/// A plateau scheduler rebuilt from its saved counters (and the optimizer's rates) continues
/// PyTorch's sequence.
#[test]
fn plateau_resumes_from_its_state() {
    let device = Device::Cpu;
    let g = golden();
    for case in g["schedulers"].as_array().expect("schedulers") {
        if case["options"]["type"] != "plateau" {
            continue;
        }
        let name = case["name"].as_str().expect("name");
        let mut optimizer = scheduler_optimizer(case, &device);
        let Driver::Plateau(mut first, metrics) = build_scheduler(case, optimizer.as_mut()) else {
            panic!("{name}: not a plateau case");
        };
        for metric in &metrics[..15] {
            first.step(optimizer.as_mut(), *metric).unwrap();
        }
        let saved = first.state();
        assert_eq!(saved.last_epoch, 15);
        let Driver::Plateau(mut resumed, _) = build_scheduler(case, optimizer.as_mut()) else {
            panic!("{name}: not a plateau case");
        };
        resumed.load_state(saved);
        for (step, metric) in metrics.iter().enumerate().skip(15) {
            resumed.step(optimizer.as_mut(), *metric).unwrap();
            check_rates(name, step + 1, optimizer.as_ref(), case);
        }
    }
}

#[test]
fn one_cycle_refuses_bad_settings_and_overrun() {
    let device = Device::Cpu;
    let mut adagrad = Adagrad::new(one_parameter(&device), AdagradConfig::default()).unwrap();
    let error = OneCycleLR::new(&mut adagrad, OneCycleOptions::new(0.1, 10))
        .unwrap_err()
        .to_string();
    assert!(error.contains("cycle_momentum"), "{error}");
    let mut sgd = Sgd::new(one_parameter(&device), SgdConfig::new(0.1)).unwrap();
    assert!(OneCycleLR::new(&mut sgd, OneCycleOptions::new(0.1, 0)).is_err());
    assert!(OneCycleLR::new(&mut sgd, OneCycleOptions::new(0.1, 10).pct_start(1.5)).is_err());
    assert!(OneCycleLR::new(&mut sgd, OneCycleOptions::new(0.1, 10).max_lrs(&[0.1, 0.2])).is_err());
    let mut scheduler = OneCycleLR::new(&mut sgd, OneCycleOptions::with_epochs(0.1, 2, 3)).unwrap();
    for _ in 0..6 {
        scheduler.step(&mut sgd).unwrap();
    }
    let error = scheduler.step(&mut sgd).unwrap_err().to_string();
    assert!(
        error.contains("7 times") && error.contains("6 steps"),
        "{error}"
    );
    // PyTorch turns momentum on for plain SGD: the cycle starts at max_momentum.
    assert_eq!(
        sgd.group_momentum(0).unwrap(),
        Some(scheduler.last_momentums()[0])
    );
}

#[test]
fn schedulers_refuse_bad_settings() {
    let device = Device::Cpu;
    let mut sgd = Sgd::new(one_parameter(&device), SgdConfig::new(0.1)).unwrap();
    assert!(LinearLR::new(&mut sgd, 0.0, 1.0, 5).is_err());
    assert!(LinearLR::new(&mut sgd, 0.5, 1.5, 5).is_err());
    assert!(MultiStepLR::new(&mut sgd, &[2], f64::NAN).is_err());
    let a = LinearLR::new(&mut sgd, 0.5, 1.0, 2).unwrap();
    let b = StepLR::new(&sgd, 2, 0.5);
    assert!(SequentialLR::new(
        &mut sgd,
        vec![Box::new(a.clone()), Box::new(b.clone())],
        &[]
    )
    .is_err());
    assert!(SequentialLR::new(&mut sgd, vec![], &[]).is_err());
    assert!(SequentialLR::new(
        &mut sgd,
        vec![Box::new(a.clone()), Box::new(b.clone()), Box::new(a)],
        &[4, 4]
    )
    .is_err());
    let mut plateau = ReduceLROnPlateau::new(&sgd).factor(1.0);
    assert!(plateau.step(&mut sgd, 1.0).is_err());
    let mut plateau = ReduceLROnPlateau::new(&sgd).min_lrs(&[0.0, 0.0]);
    assert!(plateau.step(&mut sgd, 1.0).is_err());
    // A scheduler built for one group refuses an optimizer with two.
    let mut scheduler = StepLR::new(&sgd, 1, 0.5);
    let mut two = Sgd::with_groups(vec![
        ParamGroup::new(one_parameter(&device), SgdConfig::new(0.1)),
        ParamGroup::new(
            vec![("v".into(), one_parameter(&device)[0].1.clone())],
            SgdConfig::new(0.2),
        ),
    ])
    .unwrap();
    assert!(scheduler.step(&mut two).is_err());
    assert!(two.set_group_learning_rate(2, 0.1).is_err());
    assert!(two.group_learning_rate(2).is_err());
    let w = one_parameter(&device)[0].1.tensor();
    assert!(clip_grad_value_(std::slice::from_ref(&w), -1.0).is_err());
    assert!(clip_grad_value_(&[w], f64::NAN).is_err());
}

#[test]
fn groups_are_validated_and_checkpointed() {
    let device = Device::Cpu;
    let shared = one_parameter(&device);
    // The same slot in two groups, or the same name twice, is refused.
    let error = Sgd::with_groups(vec![
        ParamGroup::new(shared.clone(), SgdConfig::new(0.1)),
        ParamGroup::new(
            vec![("other".into(), shared[0].1.clone())],
            SgdConfig::new(0.1),
        ),
    ])
    .err()
    .expect("duplicate slot")
    .to_string();
    assert!(error.contains("twice"), "{error}");
    assert!(Adam::with_groups(vec![
        ParamGroup::new(one_parameter(&device), AdamConfig::new(0.1)),
        ParamGroup::new(one_parameter(&device), AdamConfig::new(0.1)),
    ])
    .is_err());
    assert!(RMSprop::with_groups(vec![]).is_err());
    let error = RMSprop::with_groups(vec![ParamGroup::new(
        one_parameter(&device),
        RMSpropConfig::new(0.1).momentum(-1.0),
    )])
    .err()
    .expect("bad momentum")
    .to_string();
    assert!(error.contains("momentum"), "{error}");
    assert!(Adagrad::new(
        one_parameter(&device),
        AdagradConfig::new(0.1).lr_decay(f64::NAN)
    )
    .is_err());

    // Two groups save under `lr` and `group.1.lr`; a one-group optimizer refuses the state.
    let two = || {
        Sgd::with_groups(vec![
            ParamGroup::new(one_parameter(&device), SgdConfig::new(0.1)),
            ParamGroup::new(
                vec![("v".into(), one_parameter(&device)[0].1.clone())],
                SgdConfig::new(0.02).weight_decay(0.5),
            ),
        ])
        .unwrap()
    };
    let state = two().state_dict().unwrap();
    assert_eq!(state.scalars["param_groups"], 2.0);
    assert_eq!(state.scalars["lr"], 0.1);
    assert_eq!(state.scalars["group.1.lr"], 0.02);
    assert_eq!(state.scalars["group.1.weight_decay"], 0.5);
    let mut one = Sgd::new(one_parameter(&device), SgdConfig::new(0.1)).unwrap();
    let error = one.load_state_dict(&state).unwrap_err().to_string();
    assert!(error.contains("param_groups"), "{error}");
    let mut restored = Sgd::with_groups(vec![
        ParamGroup::new(one_parameter(&device), SgdConfig::new(1.0)),
        ParamGroup::new(
            vec![("v".into(), one_parameter(&device)[0].1.clone())],
            SgdConfig::new(1.0),
        ),
    ])
    .unwrap();
    restored.load_state_dict(&state).unwrap();
    assert_eq!(
        restored.configs()[1],
        SgdConfig::new(0.02).weight_decay(0.5)
    );
    // A state written before groups existed (no `param_groups`) still loads into one group.
    let mut old = one.state_dict().unwrap();
    old.scalars.remove("param_groups");
    one.load_state_dict(&old).unwrap();
    // add_param_group: a later group takes part in steps with its own rate; a parameter
    // already present is refused and leaves the optimizer as it was.
    let first = one_parameter(&device);
    let second = one_parameter(&device);
    let mut growing = Sgd::new(first.clone(), SgdConfig::new(0.1)).unwrap();
    let duplicate = ParamGroup::new(first.clone(), SgdConfig::new(0.5));
    assert!(growing.add_param_group(duplicate).is_err());
    assert_eq!(growing.group_count(), 1);
    let renamed = vec![("v".to_string(), second[0].1.clone())];
    growing
        .add_param_group(ParamGroup::new(renamed, SgdConfig::new(0.5)))
        .unwrap();
    assert_eq!(growing.group_count(), 2);
    for (_, slot) in first.iter().chain(&second) {
        slot.set_grad(Some(slot.tensor().ones_like().unwrap()));
    }
    growing.step().unwrap();
    assert_eq!(values(&first[0].1.tensor()), [-0.1]);
    assert_eq!(values(&second[0].1.tensor()), [-0.5]);
    let mut adamw = AdamW::new(one_parameter(&device), AdamConfig::new(0.1)).unwrap();
    adamw
        .add_param_group(ParamGroup::new(
            vec![("v".into(), one_parameter(&device)[0].1.clone())],
            AdamConfig::new(0.2),
        ))
        .unwrap();
    assert_eq!(adamw.group_learning_rate(1).unwrap(), 0.2);
    // A bad value of group 1 is refused naming its key.
    let mut bad = state.clone();
    bad.scalars.insert("group.1.momentum".into(), -1.0);
    let error = restored.load_state_dict(&bad).unwrap_err().to_string();
    assert!(error.contains("group.1.momentum"), "{error}");
}

fn split_no_decay_groups(device: &Device) {
    let model = Sequential::new()
        .add(Linear::new(3, 4, true, device).unwrap())
        .add(LayerNorm::new(&[4], device).unwrap())
        .add(Linear::new(4, 2, true, device).unwrap());
    let (decay, no_decay) = split_no_decay(model.named_parameter_slots());
    let names = |v: &[(String, Parameter)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&decay), ["0.weight", "2.weight"]);
    assert_eq!(names(&no_decay), ["0.bias", "1.weight", "1.bias", "2.bias"]);
    // With zero learning rate, a decayed parameter shrinks only through AdamW's decay: none
    // does here, and the no-decay group is untouched by decay while the other shrinks.
    let config = AdamConfig::new(0.1).weight_decay(0.5);
    let mut optimizer = AdamW::with_groups(vec![
        ParamGroup::new(decay.clone(), config),
        ParamGroup::new(no_decay.clone(), config.weight_decay(0.0)),
    ])
    .unwrap();
    let before: Vec<Vec<f32>> = model.parameters().iter().map(values).collect();
    for (_, slot) in model.named_parameter_slots() {
        slot.set_grad(Some(slot.tensor().zeros_like().unwrap()));
    }
    optimizer.step().unwrap();
    for ((name, after), before) in model.named_parameters().iter().zip(&before) {
        let after = values(after);
        if name.ends_with("weight") && !name.starts_with('1') {
            let shrunk: Vec<f32> = before.iter().map(|v| v * (1.0 - 0.1 * 0.5)).collect();
            assert_close(&after, &shrunk, 1e-6, 1e-5, name);
        } else {
            assert_eq!(&after, before, "{name}");
        }
    }
}

anygrad_testing::device_tests!(
    golden_optimizer_trajectories,
    resumed_trajectories_match,
    split_no_decay_groups
);
