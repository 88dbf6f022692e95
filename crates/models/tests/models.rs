//! Model tests: torchvision's exact ResNet parameter names, counts and initialization;
//! forward shapes (the forwards' values against torchvision: `resnet_golden.rs`); train/eval
//! propagation into nested blocks; MLP and CNN structure and a training step.

use anygrad_core::{DType, Device, Tensor};
use anygrad_models::{Mlp, ResNet, SmallCnn};
use anygrad_nn::{cross_entropy, Adam, AdamConfig, Kind, Module, Optimizer};

fn resnet18_names_counts_forward(device: &Device) {
    let model = ResNet::resnet18(1000, device).unwrap();
    assert_eq!(model.parameter_count(), 11_689_512, "torchvision resnet18");
    let slots = model.named_slots();
    assert_eq!(slots.len(), 122, "resnet18 state_dict entries");
    let names: Vec<&str> = slots.iter().map(|(n, _, _)| n.as_str()).collect();
    let expected_prefix = [
        "conv1.weight",
        "bn1.weight",
        "bn1.bias",
        "bn1.running_mean",
        "bn1.running_var",
        "bn1.num_batches_tracked",
        "layer1.0.conv1.weight",
        "layer1.0.bn1.weight",
        "layer1.0.bn1.bias",
        "layer1.0.bn1.running_mean",
        "layer1.0.bn1.running_var",
        "layer1.0.bn1.num_batches_tracked",
        "layer1.0.conv2.weight",
    ];
    assert_eq!(&names[..expected_prefix.len()], expected_prefix);
    for name in [
        "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.running_var",
        "layer3.1.bn2.bias",
        "layer4.0.downsample.1.num_batches_tracked",
        "layer4.1.conv2.weight",
    ] {
        assert!(names.contains(&name), "{name}");
    }
    assert!(
        !names.contains(&"layer1.0.downsample.0.weight"),
        "layer1 has no shortcut projection"
    );
    assert_eq!(&names[names.len() - 2..], ["fc.weight", "fc.bias"]);
    let shape_of = |name: &str| slots.iter().find(|(n, _, _)| n == name).unwrap().1.shape();
    assert_eq!(shape_of("conv1.weight"), [64, 3, 7, 7]);
    assert_eq!(shape_of("layer2.0.downsample.0.weight"), [128, 64, 1, 1]);
    assert_eq!(shape_of("fc.weight"), [1000, 512]);
    // torchvision init: kaiming_normal_(fan_out, relu) convs, BN weight 1 bias 0.
    let w = shape_of("layer3.0.conv2.weight");
    assert_eq!(w, [256, 256, 3, 3]);
    let v = slots
        .iter()
        .find(|(n, _, _)| n == "layer3.0.conv2.weight")
        .unwrap()
        .1
        .tensor()
        .to_vec_f32()
        .unwrap();
    let std = (v.iter().map(|x| x * x).sum::<f32>() / v.len() as f32).sqrt();
    let expected = (2.0f32 / (256.0 * 9.0)).sqrt();
    assert!(
        (std - expected).abs() / expected < 0.03,
        "conv std {std} vs {expected}"
    );
    let bn_w = slots
        .iter()
        .find(|(n, _, _)| n == "layer3.0.bn1.weight")
        .unwrap()
        .1
        .tensor()
        .to_vec_f32()
        .unwrap();
    assert!(bn_w.iter().all(|&x| x == 1.0));

    let small = ResNet::resnet18(10, device).unwrap();
    let x = Tensor::randn(&[2, 3, 32, 32], DType::F32, device).unwrap();
    let logits = small.forward(&x).unwrap();
    assert_eq!(logits.shape(), [2, 10]);
    assert!(logits.to_vec_f32().unwrap().iter().all(|v| v.is_finite()));
    let tracked = |m: &ResNet| {
        m.named_buffers()
            .into_iter()
            .find(|(n, _)| n == "layer4.1.bn2.num_batches_tracked")
            .unwrap()
            .1
            .item_f64()
            .unwrap()
    };
    assert_eq!(
        tracked(&small),
        1.0,
        "training forward updates nested BatchNorms"
    );
    small.eval();
    let a = small.forward(&x).unwrap().to_vec_f32().unwrap();
    let b = small.forward(&x).unwrap().to_vec_f32().unwrap();
    assert_eq!(a, b);
    assert_eq!(tracked(&small), 1.0, "eval propagates into blocks");
    assert!(small
        .forward(&Tensor::zeros(&[1, 1, 32, 32], DType::F32, device).unwrap())
        .is_err());
}

fn resnet34_and_50_structure(device: &Device) {
    let r34 = ResNet::resnet34(1000, device).unwrap();
    assert_eq!(r34.parameter_count(), 21_797_672, "torchvision resnet34");
    assert_eq!(r34.named_slots().len(), 218);
    let r50 = ResNet::resnet50(1000, device).unwrap();
    assert_eq!(r50.parameter_count(), 25_557_032, "torchvision resnet50");
    let slots = r50.named_slots();
    assert_eq!(slots.len(), 320, "resnet50 state_dict entries");
    let find = |name: &str| {
        slots
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, p, k)| (p.shape(), *k))
    };
    assert_eq!(
        find("layer1.0.conv3.weight"),
        Some((vec![256, 64, 1, 1], Kind::Parameter))
    );
    assert_eq!(
        find("layer1.0.downsample.0.weight"),
        Some((vec![256, 64, 1, 1], Kind::Parameter))
    );
    // v1.5: the stride sits on conv2 (3x3) of the first block of a stage.
    assert_eq!(
        find("layer2.0.conv2.weight"),
        Some((vec![128, 128, 3, 3], Kind::Parameter))
    );
    assert_eq!(
        find("layer4.2.bn3.running_mean"),
        Some((vec![2048], Kind::Buffer))
    );
    assert_eq!(find("fc.weight"), Some((vec![1000, 2048], Kind::Parameter)));
    let block = &r50.layer2;
    assert_eq!(block.len(), 4);
}

fn mlp_structure_and_training(device: &Device) {
    let mlp = Mlp::new(device).unwrap();
    let names: Vec<String> = mlp.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    );
    assert_eq!(
        mlp.parameter_count(),
        64 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10
    );
    assert!(Mlp::with_sizes(&[3], device).is_err());
    let custom = Mlp::with_sizes(&[4, 8, 3], device).unwrap();
    assert_eq!(custom.sizes(), [4, 8, 3]);
    anygrad_core::manual_seed(5);
    let x = Tensor::randn(&[32, 64], DType::F32, device).unwrap();
    let y = Tensor::randint(0, 10, &[32], device).unwrap();
    let mut optimizer = Adam::new(mlp.named_parameter_slots(), AdamConfig::new(1e-2)).unwrap();
    let mut losses = Vec::new();
    for _ in 0..30 {
        optimizer.zero_grad();
        let loss = cross_entropy(&mlp.forward(&x).unwrap(), &y).unwrap();
        loss.backward().unwrap();
        optimizer.step().unwrap();
        losses.push(loss.item_f64().unwrap());
    }
    assert!(
        losses[29] < 0.3 * losses[0],
        "memorizing 32 samples: {} -> {}",
        losses[0],
        losses[29]
    );
}

fn small_cnn_structure_and_step(device: &Device) {
    let cnn = SmallCnn::new(device).unwrap();
    let names: Vec<String> = cnn.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "conv1.weight",
            "conv1.bias",
            "conv2.weight",
            "conv2.bias",
            "fc1.weight",
            "fc1.bias",
            "fc2.weight",
            "fc2.bias"
        ]
    );
    assert_eq!(cnn.parameter_count(), 320 + 18_496 + 401_536 + 1_290);
    let x = Tensor::randn(&[2, 1, 28, 28], DType::F32, device).unwrap();
    let logits = cnn.forward(&x).unwrap();
    assert_eq!(logits.shape(), [2, 10]);
    assert_eq!(
        cnn.forward(&x.reshape([2, 784]).unwrap()).unwrap().shape(),
        [2, 10]
    );
    assert!(cnn
        .forward(&Tensor::zeros(&[2, 3, 28, 28], DType::F32, device).unwrap())
        .is_err());
    let y = Tensor::from_vec(vec![3i32, 7], &[2], device).unwrap();
    cross_entropy(&logits, &y).unwrap().backward().unwrap();
    for (name, p) in cnn.named_parameters() {
        let g = p.grad().unwrap_or_else(|| panic!("{name} has a gradient"));
        assert_eq!(g.shape(), p.shape(), "{name}");
    }
}

/// The derived `Module` of ResNet lists torchvision's module tree (`named_modules`) and
/// `eval()` reaches every BatchNorm, the shortcut ones included.
#[test]
fn resnet_module_tree_and_eval() {
    use anygrad_nn::module::downcast_module;
    use anygrad_nn::BatchNorm2d;
    let model = ResNet::resnet18(10, &Device::Cpu).unwrap();
    let modules: Vec<String> = model.named_modules().into_iter().map(|(n, _)| n).collect();
    // torchvision's 68 minus its 9 `relu` modules (applied as functions here): the root, 5
    // top-level layers, 4 stages, 8 blocks with 4 layers each, 3 shortcuts with 2 each.
    assert_eq!(modules.len(), 1 + 5 + 4 + 8 * 5 + 3 * 3, "{modules:?}");
    assert_eq!(&modules[..4], ["", "conv1", "bn1", "maxpool"]);
    assert!(modules.contains(&"layer2.0.downsample.1".to_string()));
    assert_eq!(modules.last().map(String::as_str), Some("fc"));
    let norms = |training: bool| {
        model
            .named_modules()
            .into_iter()
            .filter_map(|(_, m)| downcast_module::<BatchNorm2d>(m))
            .filter(|bn| bn.is_training() == training)
            .count()
    };
    assert_eq!(norms(true), 20);
    model.eval();
    assert_eq!((norms(true), norms(false)), (0, 20));
    assert!(!model.is_training());
    model.train();
    assert_eq!(norms(true), 20);
}

anygrad_testing::device_tests!(
    resnet18_names_counts_forward,
    resnet34_and_50_structure,
    mlp_structure_and_training,
    small_cnn_structure_and_step,
);
