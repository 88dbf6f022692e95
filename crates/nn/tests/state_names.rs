//! Loading weights saved under other names: `Sequential` children are named by index like
//! PyTorch's (`features.0.weight`), named children nest (`add_named`), and a key-mapping
//! function loads a file whose names differ (a `module.` prefix, extra entries).

use std::collections::BTreeMap;

use anygrad_core::{Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::temp_dir;

/// The shape of a PyTorch model with two `nn.Sequential` blocks:
/// `features = Sequential(Linear(4, 8), ReLU(), Linear(8, 6))`,
/// `classifier = Sequential(Dropout(), Linear(6, 3))`.
fn nested(device: &Device) -> Sequential {
    Sequential::new()
        .add_named(
            "features",
            Sequential::new()
                .add(Linear::new(4, 8, true, device).unwrap())
                .add(ReLU)
                .add(Linear::new(8, 6, true, device).unwrap()),
        )
        .add_named(
            "classifier",
            Sequential::new()
                .add(Dropout::new(0.5).unwrap())
                .add(Linear::new(6, 3, true, device).unwrap()),
        )
}

fn names(module: &dyn Module) -> Vec<String> {
    module.state_dict().into_iter().map(|(n, _)| n).collect()
}

fn values(module: &dyn Module) -> Vec<Vec<f64>> {
    module
        .state_dict()
        .into_iter()
        .map(|(_, t)| t.to_vec_f64().unwrap())
        .collect()
}

fn nested_sequential_uses_pytorch_names(device: &Device) {
    let model = nested(device);
    assert_eq!(
        names(&model),
        [
            "features.0.weight",
            "features.0.bias",
            "features.2.weight",
            "features.2.bias",
            "classifier.1.weight",
            "classifier.1.bias",
        ]
    );
    let output = model
        .forward(&Tensor::ones(&[2, 4], anygrad_core::DType::F32, device).unwrap())
        .unwrap();
    assert_eq!(output.shape(), &[2, 3]);
}

fn mapped_names_load(device: &Device) {
    let dir = temp_dir(&format!("state-names-{}", device.is_gpu()));
    let source = nested(device);
    // Saved the way `nn.DataParallel` would: every name under `module.`, plus a counter
    // PyTorch keeps that this model does not have.
    let mut renamed: Vec<(String, Tensor)> = source
        .state_dict()
        .into_iter()
        .map(|(name, tensor)| (format!("module.{name}"), tensor))
        .collect();
    renamed.push((
        "module.num_batches_tracked".to_string(),
        Tensor::from_vec(vec![7i32], &[1], &Device::Cpu).unwrap(),
    ));
    let path = dir.join("pytorch.safetensors");
    save_tensors(&renamed, &BTreeMap::new(), &path).unwrap();
    let target = nested(device);
    // Unmapped, nothing matches.
    assert!(load_safetensors(&target, &path).is_err());
    let report = load_safetensors_mapped(&target, &path, true, |name| {
        let name = name.strip_prefix("module.")?;
        (name != "num_batches_tracked").then(|| name.to_string())
    })
    .unwrap();
    assert_eq!(report, LoadReport::default());
    assert_eq!(values(&target), values(&source));
    // Two file tensors mapped onto one name are refused.
    let error = load_safetensors_mapped(&target, &path, false, |_| Some("x".to_string()))
        .unwrap_err()
        .to_string();
    assert!(error.contains("`x`"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

anygrad_testing::device_tests!(nested_sequential_uses_pytorch_names, mapped_names_load);
