//! `#[derive(Module)]`, `ModuleList`/`ModuleDict`, `named_modules`, `apply` and hooks: names
//! match PyTorch's attribute paths, train/eval reaches every field, plain and skipped fields
//! are left out, and forward/backward hooks see and replace tensors.

use std::sync::{Arc, Mutex};

use anygrad_core::{DType, Device, Result, Tensor};
use anygrad_nn::module::downcast_module;
use anygrad_nn::*;
use anygrad_testing::{assert_close, tensor, values};

/// A block with a submodule, a norm, an optional layer, a list, a parameter, a buffer, a
/// renamed field, a mode flag and plain fields.
#[derive(Module)]
struct Block {
    fc: Linear,
    norm: BatchNorm,
    extra: Option<Linear>,
    missing: Option<Linear>,
    layers: Vec<Linear>,
    scale: Parameter,
    #[module(buffer)]
    steps: Parameter,
    #[module(name = "type")]
    kind: Linear,
    mode: TrainingFlag,
    width: usize,
    #[module(skip)]
    _notes: std::collections::HashMap<String, String>,
}

impl Block {
    fn new(device: &Device) -> Block {
        Block {
            fc: Linear::new(3, 4, true, device).unwrap(),
            norm: BatchNorm1d::new_1d(4, device).unwrap(),
            extra: Some(Linear::new(4, 4, false, device).unwrap()),
            missing: None,
            layers: vec![
                Linear::new(4, 4, false, device).unwrap(),
                Linear::new(4, 4, false, device).unwrap(),
            ],
            scale: Parameter::new(Tensor::ones(&[1], DType::F32, device).unwrap()),
            steps: Parameter::buffer(Tensor::zeros(&[1], DType::F32, device).unwrap()),
            kind: Linear::new(4, 2, true, device).unwrap(),
            mode: TrainingFlag::default(),
            width: 4,
            _notes: Default::default(),
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = self.norm.forward(&self.fc.forward(x)?)?.relu()?;
        if let Some(extra) = &self.extra {
            x = extra.forward(&x)?;
        }
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        if self.mode.get() {
            x = x.mul(&self.scale.tensor())?;
        }
        assert_eq!(x.shape()[1], self.width);
        self.kind.forward(&x)
    }
}

/// A tuple struct and a generic struct also derive.
#[derive(Module)]
struct Pair(Linear, ReLU);

impl Pair {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.1.forward(&self.0.forward(x)?)
    }
}

/// A generic struct puts the bounds its `forward` needs on the struct itself.
#[derive(Module)]
struct Wrapper<M: Module> {
    inner: M,
}

impl<M: Module> Wrapper<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.inner.forward(x)
    }
}

fn derived_names_follow_fields(device: &Device) {
    let block = Block::new(device);
    let slots: Vec<(String, Kind)> = block
        .named_slots()
        .into_iter()
        .map(|(name, _, kind)| (name, kind))
        .collect();
    let names: Vec<&str> = slots.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "fc.weight",
            "fc.bias",
            "norm.weight",
            "norm.bias",
            "norm.running_mean",
            "norm.running_var",
            "norm.num_batches_tracked",
            "extra.weight",
            "layers.0.weight",
            "layers.1.weight",
            "scale",
            "steps",
            "type.weight",
            "type.bias",
        ]
    );
    assert_eq!(slots[10].1, Kind::Parameter);
    assert_eq!(slots[11].1, Kind::Buffer);
    let x = Tensor::randn(&[5, 3], DType::F32, device).unwrap();
    assert_eq!(block.forward(&x).unwrap().shape(), &[5, 2]);
    // Module::forward (through a trait object) calls the inherent forward.
    let boxed: Box<dyn Module> = Box::new(Block::new(device));
    assert_eq!(boxed.forward(&x).unwrap().shape(), &[5, 2]);

    let pair = Pair(Linear::new(3, 2, true, device).unwrap(), ReLU);
    let names: Vec<String> = pair
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.weight", "0.bias"]);
    let out = Module::forward(&pair, &x).unwrap();
    assert!(values(&out).iter().all(|v| *v >= 0.0));

    let wrapped = Wrapper { inner: pair };
    let names: Vec<String> = wrapped
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["inner.0.weight", "inner.0.bias"]);
}

fn derived_train_eval_reaches_every_field(device: &Device) {
    let block = Block::new(device);
    assert!(block.is_training());
    block.eval();
    assert!(!block.norm.is_training());
    assert!(!block.mode.get());
    assert!(!block.is_training());
    block.train();
    assert!(block.norm.is_training() && block.mode.get() && block.is_training());
    // Only the flag in eval mode: the whole block reports eval.
    block.mode.set(false);
    assert!(!block.is_training());
}

fn named_modules_and_apply(device: &Device) {
    let block = Block::new(device);
    let names: Vec<String> = block.named_modules().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["", "fc", "norm", "extra", "layers.0", "layers.1", "type"]
    );
    let children: Vec<String> = block.named_children().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        children,
        ["fc", "norm", "extra", "layers.0", "layers.1", "type"]
    );

    let model = Sequential::new()
        .add(Linear::new(3, 4, true, device).unwrap())
        .add(
            Sequential::new()
                .add(ReLU)
                .add(Linear::new(4, 2, true, device).unwrap()),
        );
    let names: Vec<String> = model.named_modules().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["", "0", "1", "1.0", "1.1"]);

    // apply: children before parents; initialize every Linear's bias to 0.5.
    let mut order = Vec::new();
    model
        .apply(&mut |name, module| {
            order.push(name.to_string());
            if let Some(linear) = downcast_module::<Linear>(module) {
                for (_, slot) in linear.named_parameter_slots() {
                    if slot.shape().len() == 1 {
                        slot.assign(&slot.tensor().ones_like()?.mul_scalar(0.5)?)?;
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(order, ["0", "1.0", "1.1", "1", ""]);
    for (name, value) in model.named_parameters() {
        if name.ends_with("bias") {
            assert!(values(&value).iter().all(|v| *v == 0.5), "{name}");
        }
    }
    // An error from the callback stops the walk.
    let mut calls = 0;
    let result = model.apply(&mut |_, _| {
        calls += 1;
        Err(anygrad_core::Error::invalid("test", "stop"))
    });
    assert!(result.is_err());
    assert_eq!(calls, 1);
}

fn module_list_and_dict(device: &Device) {
    #[derive(Module)]
    struct Heads {
        blocks: ModuleList,
        heads: ModuleDict,
    }
    impl Heads {
        fn forward(&self, x: &Tensor) -> Result<Tensor> {
            let mut x = x.clone();
            for block in self.blocks.iter() {
                x = block.forward(&x)?.relu()?;
            }
            self.heads
                .get("class")
                .ok_or_else(|| anygrad_core::Error::invalid("Heads", "no class head"))?
                .forward(&x)
        }
    }
    let mut blocks = ModuleList::new();
    blocks.push(Linear::new(3, 3, true, device).unwrap());
    blocks.push(BatchNorm1d::new_1d(3, device).unwrap());
    let heads = ModuleDict::new()
        .with("class", Linear::new(3, 5, true, device).unwrap())
        .unwrap()
        .with("box", Linear::new(3, 4, false, device).unwrap())
        .unwrap();
    let model = Heads { blocks, heads };
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        [
            "blocks.0.weight",
            "blocks.0.bias",
            "blocks.1.weight",
            "blocks.1.bias",
            "heads.class.weight",
            "heads.class.bias",
            "heads.box.weight"
        ]
    );
    let modules: Vec<String> = model.named_modules().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        modules,
        [
            "",
            "blocks",
            "blocks.0",
            "blocks.1",
            "heads",
            "heads.class",
            "heads.box"
        ]
    );
    model.eval();
    assert!(!model.blocks.get(1).unwrap().is_training());
    let x = Tensor::randn(&[2, 3], DType::F32, device).unwrap();
    assert_eq!(model.forward(&x).unwrap().shape(), &[2, 5]);
    assert!(Module::forward(&model.blocks, &x).is_err());
    assert!(Module::forward(&model.heads, &x).is_err());
    let mut dict = ModuleDict::new();
    assert!(dict.insert("a.b", ReLU).is_err());
    assert!(dict.insert("", ReLU).is_err());
    dict.insert("a", ReLU).unwrap();
    dict.insert("a", Identity).unwrap();
    assert_eq!(dict.len(), 1);
    assert!(downcast_module::<Identity>(dict.get("a").unwrap()).is_some());
}

fn forward_hooks_see_and_replace(device: &Device) {
    let layer = Hooked::new(Linear::new(2, 2, false, device).unwrap());
    layer
        .inner()
        .weight
        .assign(&tensor(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device))
        .unwrap();
    let x = tensor(&[1.0, 1.0], &[1, 2], device);
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let record = inputs.clone();
    let pre = layer.register_forward_pre_hook(move |_, input| {
        record.lock().unwrap().push(values(input));
        Ok(Some(input.mul_scalar(2.0)?))
    });
    let post = layer.register_forward_hook(|_, _, output| Ok(Some(output.add_scalar(1.0)?)));
    // y = 2x · Wᵀ + 1 = [2·3 + 1, 2·7 + 1]
    assert_eq!(values(&layer.forward(&x).unwrap()), [7.0, 15.0]);
    assert_eq!(*inputs.lock().unwrap(), vec![vec![1.0, 1.0]]);
    assert!(layer.remove_hook(pre));
    assert!(!layer.remove_hook(pre));
    assert_eq!(values(&layer.forward(&x).unwrap()), [4.0, 8.0]);
    assert!(layer.remove_hook(post));
    assert_eq!(values(&layer.forward(&x).unwrap()), [3.0, 7.0]);
    assert_eq!(layer.named_parameters()[0].0, "weight");
}

fn backward_hook_sees_and_replaces_output_gradient(device: &Device) {
    let layer = Hooked::new(Linear::new(2, 2, false, device).unwrap());
    layer
        .inner()
        .weight
        .assign(&tensor(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device))
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    layer.register_backward_hook(move |grad| {
        record.lock().unwrap().push(values(grad));
        Ok(Some(grad.mul_scalar(10.0)?))
    });
    let x = tensor(&[1.0, -1.0], &[1, 2], device).requires_grad_(true);
    let y = layer.forward(&x).unwrap();
    assert_eq!(values(&y), [-1.0, -1.0]);
    // loss = sum(y * [1, 2]) → dL/dy = [1, 2], scaled to [10, 20] by the hook.
    y.mul(&tensor(&[1.0, 2.0], &[1, 2], device))
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![vec![1.0, 2.0]]);
    // dL/dW = g^T x = [[10, -10], [20, -20]]; dL/dx = g W = [10 + 60, 20 + 80]
    let weight_grad = layer.inner().weight.grad().unwrap();
    assert_close(
        &values(&weight_grad),
        &[10.0, -10.0, 20.0, -20.0],
        1e-5,
        1e-5,
        "dW",
    );
    assert_close(
        &values(&x.grad().unwrap()),
        &[70.0, 100.0],
        1e-5,
        1e-5,
        "dx",
    );
    // Without a graph the hook is not put in place.
    let _guard = anygrad_core::no_grad();
    let plain = layer
        .forward(&tensor(&[1.0, 1.0], &[1, 2], device))
        .unwrap();
    assert_eq!(values(&plain), [3.0, 7.0]);
}

anygrad_testing::device_tests!(
    derived_names_follow_fields,
    derived_train_eval_reaches_every_field,
    named_modules_and_apply,
    module_list_and_dict,
    forward_hooks_see_and_replace,
    backward_hook_sees_and_replaces_output_gradient
);
