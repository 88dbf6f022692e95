//! The optimizer core shared by every algorithm (`RuleOptimizer` over an `UpdateRule`):
//! the checkpoint keys each built-in optimizer writes (the format existing checkpoints use),
//! momentum access per group for rules without a momentum, and a rule written outside the
//! crate getting groups, partial steps and validated checkpoints from the core.

use std::collections::BTreeSet;

use anygrad_core::{DType, Device, Error, Result, Tensor};
use anygrad_nn::optim::{
    Adadelta, AdadeltaConfig, Adagrad, AdagradConfig, Adam, AdamConfig, AdamW, GroupConfig,
    OperationNames, ParamGroup, RMSprop, RMSpropConfig, RuleOptimizer, Sgd, SgdConfig, StateTensor,
    StateTensors, StateValues, UpdateRule,
};
use anygrad_nn::{Optimizer, OptimizerState, Parameter};

/// A parameter `[1, -2, 3]` with the gradient of `Σ p²` (`2 p`).
fn parameter_with_gradient() -> Parameter {
    let parameter = Parameter::new(
        Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3], &Device::Cpu).expect("tensor"),
    );
    parameter
        .tensor()
        .square()
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    parameter
}

/// Every key (scalars and tensors) of an optimizer's state after one step.
fn keys_after_one_step(optimizer: &mut dyn Optimizer) -> (String, BTreeSet<String>) {
    optimizer.step().expect("step");
    let state = optimizer.state_dict().expect("state_dict");
    let keys = state
        .scalars
        .keys()
        .chain(state.tensors.keys())
        .cloned()
        .collect();
    (state.kind, keys)
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|key| key.to_string()).collect()
}

#[test]
fn checkpoint_keys_are_the_established_format() {
    let slots = || vec![("w".to_string(), parameter_with_gradient())];
    let cases: Vec<(Box<dyn Optimizer>, &str, Vec<&str>)> = vec![
        (
            Box::new(Sgd::new(slots(), SgdConfig::new(0.1).momentum(0.9)).unwrap()),
            "sgd",
            vec![
                "param_groups",
                "lr",
                "momentum",
                "dampening",
                "weight_decay",
                "nesterov",
                "state.w.momentum_buffer",
            ],
        ),
        (
            Box::new(Sgd::new(slots(), SgdConfig::new(0.1)).unwrap()),
            "sgd",
            vec![
                "param_groups",
                "lr",
                "momentum",
                "dampening",
                "weight_decay",
                "nesterov",
            ],
        ),
        (
            Box::new(Adam::new(slots(), AdamConfig::new(0.1).amsgrad(true)).unwrap()),
            "adam",
            vec![
                "param_groups",
                "lr",
                "beta1",
                "beta2",
                "eps",
                "weight_decay",
                "amsgrad",
                "state.w.step",
                "state.w.exp_avg",
                "state.w.exp_avg_sq",
                "state.w.max_exp_avg_sq",
            ],
        ),
        (
            Box::new(AdamW::new(slots(), AdamConfig::new(0.1)).unwrap()),
            "adamw",
            vec![
                "param_groups",
                "lr",
                "beta1",
                "beta2",
                "eps",
                "weight_decay",
                "amsgrad",
                "state.w.step",
                "state.w.exp_avg",
                "state.w.exp_avg_sq",
            ],
        ),
        (
            Box::new(
                RMSprop::new(
                    slots(),
                    RMSpropConfig::new(0.1).momentum(0.5).centered(true),
                )
                .unwrap(),
            ),
            "rmsprop",
            vec![
                "param_groups",
                "lr",
                "alpha",
                "eps",
                "weight_decay",
                "momentum",
                "centered",
                "state.w.step",
                "state.w.square_avg",
                "state.w.momentum_buffer",
                "state.w.grad_avg",
            ],
        ),
        (
            Box::new(Adagrad::new(slots(), AdagradConfig::new(0.1)).unwrap()),
            "adagrad",
            vec![
                "param_groups",
                "lr",
                "lr_decay",
                "weight_decay",
                "initial_accumulator_value",
                "eps",
                "state.w.step",
                "state.w.sum",
            ],
        ),
        (
            Box::new(Adadelta::new(slots(), AdadeltaConfig::default()).unwrap()),
            "adadelta",
            vec![
                "param_groups",
                "lr",
                "rho",
                "eps",
                "weight_decay",
                "state.w.step",
                "state.w.square_avg",
                "state.w.acc_delta",
            ],
        ),
    ];
    for (mut optimizer, kind, expected) in cases {
        let (found_kind, keys) = keys_after_one_step(optimizer.as_mut());
        assert_eq!(found_kind, kind);
        assert_eq!(keys, set(&expected), "{kind}");
        // And the state loads back into the optimizer that wrote it.
        let state = optimizer.state_dict().unwrap();
        optimizer.load_state_dict(&state).expect(kind);
    }
}

/// Two groups of one parameter each, both with `config`.
fn two_groups<C: Copy>(config: C) -> Vec<ParamGroup<C>> {
    vec![
        ParamGroup::new(vec![("a".to_string(), parameter_with_gradient())], config),
        ParamGroup::new(vec![("b".to_string(), parameter_with_gradient())], config),
    ]
}

#[test]
fn rules_without_momentum_answer_for_every_group() {
    let mut adagrad = Adagrad::with_groups(two_groups(AdagradConfig::new(0.1))).unwrap();
    let mut adadelta = Adadelta::with_groups(two_groups(AdadeltaConfig::default())).unwrap();
    let optimizers: [&mut dyn Optimizer; 2] = [&mut adagrad, &mut adadelta];
    for optimizer in optimizers {
        assert_eq!(optimizer.group_momentum(1).unwrap(), None);
        let missing = optimizer.group_momentum(2).unwrap_err().to_string();
        assert!(missing.contains("2 parameter groups"), "{missing}");
        let refused = optimizer
            .set_group_momentum(1, 0.9)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("no momentum"), "{refused}");
    }
}

/// Sign descent, `p = p - lr · sign(g)`, with a running count of nonzero gradients per
/// element (`>= 0`): a rule written against the public trait only.
struct SignRule;

#[derive(Debug, Clone, Copy)]
struct SignConfig {
    lr: f64,
}

impl GroupConfig for SignConfig {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        None
    }
    fn set_momentum(&mut self, _momentum: f64) {}
    fn check(&self) -> std::result::Result<(), (&'static str, String)> {
        if self.lr.is_finite() && self.lr >= 0.0 {
            Ok(())
        } else {
            Err(("lr", format!("is {}", self.lr)))
        }
    }
    fn to_scalars(&self) -> Vec<(&'static str, f64)> {
        vec![("lr", self.lr)]
    }
    fn from_scalars(read: &dyn Fn(&str) -> Result<f64>) -> Result<Self> {
        Ok(SignConfig { lr: read("lr")? })
    }
}

impl UpdateRule for SignRule {
    type Config = SignConfig;
    type State = Tensor;
    const KIND: &'static str = "sign";
    const OPERATIONS: OperationNames = OperationNames {
        new: "Sign::new",
        add_param_group: "Sign::add_param_group",
        step: "Sign::step",
    };
    const COUNTS_STEPS: bool = true;
    const STATE_TENSORS: &'static [StateTensor] = &[StateTensor {
        name: "nonzero",
        values: StateValues::NonNegative,
        required: true,
    }];

    fn update(
        parameter: &Tensor,
        gradient: Tensor,
        config: &SignConfig,
        _step: u64,
        state: Option<Tensor>,
    ) -> Result<Option<Tensor>> {
        let count = match state {
            Some(count) => count,
            None => parameter.zeros_like()?,
        };
        let sign = gradient.sign()?;
        parameter.assign(&parameter.sub(&sign.mul_scalar(config.lr)?)?)?;
        Ok(Some(count.add(&sign.abs()?)?))
    }

    fn save(count: &Tensor) -> Result<Vec<(&'static str, Tensor)>> {
        Ok(vec![("nonzero", count.clone())])
    }

    fn restore(tensors: &mut StateTensors) -> Result<Tensor> {
        tensors.required("nonzero")
    }
}

#[test]
fn a_rule_written_outside_gets_the_whole_core() {
    let parameter = parameter_with_gradient();
    let mut optimizer: RuleOptimizer<SignRule> = RuleOptimizer::new(
        vec![("w".to_string(), parameter.clone())],
        SignConfig { lr: 0.5 },
    )
    .unwrap();
    optimizer.step().unwrap();
    optimizer.step_parameters(&[0]).unwrap();
    assert_eq!(
        parameter.tensor().to_vec::<f32>().unwrap(),
        vec![0.0, -1.0, 2.0]
    );
    assert_eq!(optimizer.step_count("w"), 2);
    let state = optimizer.state_dict().unwrap();
    assert_eq!(state.kind, "sign");
    assert_eq!(state.scalar("state.w.step").unwrap(), 2.0);

    // Validation the rule did not write: bad hyper-parameters, unknown keys, negative values,
    // another kind, an index out of range.
    let refused = RuleOptimizer::<SignRule>::new(Vec::new(), SignConfig { lr: f64::NAN });
    assert!(matches!(
        refused,
        Err(Error::InvalidArgument {
            op: "Sign::new",
            ..
        })
    ));
    let mut extra = state.clone();
    extra.scalars.insert("state.w.extra".into(), 1.0);
    let error = optimizer.load_state_dict(&extra).unwrap_err().to_string();
    assert!(error.contains("`state.w.extra`"), "{error}");
    let mut negative = state.clone();
    negative.tensors.insert(
        "state.w.nonzero".into(),
        Tensor::from_vec(vec![1.0f32, -1.0, 0.0], &[3], &Device::Cpu).unwrap(),
    );
    let error = optimizer
        .load_state_dict(&negative)
        .unwrap_err()
        .to_string();
    assert!(error.contains("not finite and >= 0"), "{error}");
    let other = OptimizerState {
        kind: "sgd".into(),
        ..state.clone()
    };
    assert!(optimizer.load_state_dict(&other).is_err());
    assert!(matches!(
        optimizer.step_parameters(&[1]),
        Err(Error::InvalidArgument {
            op: "Sign::step",
            ..
        })
    ));

    // A refused state changed nothing; the saved one resumes.
    optimizer.load_state_dict(&state).unwrap();
    assert_eq!(optimizer.step_count("w"), 2);
    let count = optimizer.state_dict().unwrap().tensors["state.w.nonzero"]
        .to_dtype(DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(count, vec![2.0, 2.0, 2.0]);
}
