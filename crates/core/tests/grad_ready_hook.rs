//! `Tensor::backward_with_hook`: the hook fires once per leaf that gets a gradient, after its
//! `.grad` holds every contribution (a weight used twice is reported once, with both terms),
//! last layer first, as soon as the gradient is final (before backward runs the rules of the
//! layers below), and an error from the hook stops backward.

use std::sync::{Arc, Mutex};

use anygrad_core::custom_op::{apply, CustomOp};
use anygrad_core::{Device, Error, Result, Tensor, TensorId};
use anygrad_testing::values;

fn leaf(values: Vec<f32>, shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_vec(values, shape, device)
        .unwrap()
        .requires_grad_(true)
}

fn hook_fires_once_per_leaf_after_its_gradient_is_complete(device: &Device) {
    // Three layers: x -> (w1, b1) -> relu -> (w2, b2) -> relu -> w3 -> sum, plus w1 used a
    // second time at the end (so its gradient has two contributions).
    let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 1.5], &[2, 2], device).unwrap();
    let w1 = leaf(vec![0.3, -0.2, 0.1, 0.4], &[2, 2], device);
    let b1 = leaf(vec![0.05, -0.05], &[2], device);
    let w2 = leaf(vec![-0.5, 0.25, 0.75, 0.1], &[2, 2], device);
    let b2 = leaf(vec![0.1, 0.2], &[2], device);
    let w3 = leaf(vec![1.0, -2.0], &[2, 1], device);
    let unused = leaf(vec![1.0], &[1], device);
    let layer1 = x.matmul(&w1).unwrap().add(&b1).unwrap().relu().unwrap();
    let layer2 = layer1
        .matmul(&w2)
        .unwrap()
        .add(&b2)
        .unwrap()
        .relu()
        .unwrap();
    let out = layer2.matmul(&w3).unwrap().sum_all().unwrap();
    let loss = out.add(&w1.mul(&w1).unwrap().sum_all().unwrap()).unwrap();

    let mut seen: Vec<(TensorId, Vec<f32>)> = Vec::new();
    loss.backward_with_hook(|leaf| {
        let grad = leaf.grad().expect("the gradient is set before the hook");
        seen.push((leaf.id(), values(&grad)));
        Ok(())
    })
    .unwrap();

    let leaves = [&w1, &b1, &w2, &b2, &w3];
    assert_eq!(
        seen.len(),
        leaves.len(),
        "one call per leaf that got a gradient"
    );
    for leaf in leaves {
        let calls: Vec<&Vec<f32>> = seen
            .iter()
            .filter(|(id, _)| *id == leaf.id())
            .map(|(_, g)| g)
            .collect();
        assert_eq!(calls.len(), 1, "exactly one call per leaf");
        // What the hook saw is the final gradient.
        assert_eq!(calls[0], &values(&leaf.grad().unwrap()));
    }
    assert!(seen.iter().all(|(id, _)| *id != unused.id()));
    assert!(unused.grad().is_none());

    // w1's gradient includes both uses: the same loss without the second use differs by 2·w1.
    let w1_alone = leaf(values(&w1), &[2, 2], device);
    let relu1 = x.matmul(&w1_alone).unwrap().add(&b1.detach()).unwrap();
    let relu2 = relu1
        .relu()
        .unwrap()
        .matmul(&w2.detach())
        .unwrap()
        .add(&b2.detach())
        .unwrap()
        .relu()
        .unwrap();
    relu2
        .matmul(&w3.detach())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let without = values(&w1_alone.grad().unwrap());
    for ((with, without), w) in values(&w1.grad().unwrap())
        .iter()
        .zip(&without)
        .zip(values(&w1))
    {
        assert!(
            (with - without - 2.0 * w).abs() < 1e-5,
            "{with} vs {without} + 2·{w}"
        );
    }

    // Reverse layer order: every layer-3 and layer-2 leaf before any layer-1 leaf.
    let position = |t: &Tensor| seen.iter().position(|(id, _)| *id == t.id()).unwrap();
    assert!(position(&w3) < position(&w2) && position(&w3) < position(&b2));
    for late in [&w2, &b2] {
        for early in [&w1, &b1] {
            assert!(position(late) < position(early), "layer 2 before layer 1");
        }
    }
}

/// The identity, whose backward writes "marker" into a shared log when it runs.
struct Marker(Arc<Mutex<Vec<String>>>);

impl CustomOp for Marker {
    fn name(&self) -> &str {
        "marker"
    }
    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        Ok(shapes[0].to_vec())
    }
    fn cpu_forward(&self, inputs: &[&[f32]], _shapes: &[&[usize]]) -> Result<Vec<f32>> {
        Ok(inputs[0].to_vec())
    }
    fn backward(&self, _inputs: &[Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        self.0.lock().unwrap().push("marker".into());
        Ok(vec![Some(grad.clone())])
    }
    fn wgsl(&self) -> Option<String> {
        Some("fn compute(i: u32) -> f32 { return input0[i]; }".into())
    }
}

/// A leaf of the last layer, used twice there, is reported once both uses are summed and
/// before backward goes on to the layer below (the marker's backward), not when the walk
/// reaches the leaf itself at the end.
fn hook_fires_before_the_layers_below_run(device: &Device) {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 1.5], &[2, 2], device).unwrap();
    let w1 = leaf(vec![0.3, -0.2, 0.1, 0.4], &[2, 2], device);
    let w2 = leaf(vec![-0.5, 0.25, 0.75, 0.1], &[2, 2], device);
    let hidden = apply(Arc::new(Marker(log.clone())), &[&x.matmul(&w1).unwrap()]).unwrap();
    let loss = hidden
        .matmul(&w2)
        .unwrap()
        .sum_all()
        .unwrap()
        .add(&w2.mul(&w2).unwrap().sum_all().unwrap())
        .unwrap();
    let name = |leaf: &Tensor| {
        if leaf.id() == w1.id() {
            "w1"
        } else if leaf.id() == w2.id() {
            "w2"
        } else {
            "another leaf"
        }
    };
    loss.backward_with_hook(|leaf| {
        log.lock().unwrap().push(name(leaf).into());
        Ok(())
    })
    .unwrap();
    assert_eq!(*log.lock().unwrap(), ["w2", "marker", "w1"]);
}

fn hook_error_stops_backward(device: &Device) {
    let w1 = leaf(vec![1.0, 2.0], &[2], device);
    let w2 = leaf(vec![3.0, 4.0], &[2], device);
    let loss = w1.mul(&w2).unwrap().sum_all().unwrap();
    let mut calls = 0;
    let error = loss
        .backward_with_hook(|_| {
            calls += 1;
            Err(Error::invalid("test hook", "refuses"))
        })
        .unwrap_err();
    assert!(error.to_string().contains("refuses"), "{error}");
    assert_eq!(calls, 1);
    // Non-scalar roots are refused as by `backward`.
    let vector = w1.mul_scalar(2.0).unwrap();
    assert!(vector.backward_with_hook(|_| Ok(())).is_err());
}

anygrad_testing::device_tests!(
    hook_fires_once_per_leaf_after_its_gradient_is_complete,
    hook_fires_before_the_layers_below_run,
    hook_error_stops_backward,
);
