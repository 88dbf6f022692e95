//! Fuzz targets for the safetensors loaders, run by a plain `cargo test`: seeded mutations
//! (bit flips, truncations, insertions, length fields set to extreme values) of a valid model
//! checkpoint and of a valid optimizer-state file. Every load must be `Ok` or a clean `Err`
//! (a panic fails with the seed and mutation) and allocate no more than a small bound.

use std::collections::BTreeMap;

use anygrad_core::Device;
use anygrad_nn::*;
use anygrad_testing::fuzz::fuzz;
use anygrad_testing::memory::{peak_allocation, CountingAllocator};
use anygrad_testing::temp_dir;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The most one load of these small files may allocate at once.
const BOUND: usize = 8 << 20;

fn model() -> Sequential {
    Sequential::new()
        .add(Linear::new(3, 4, true, &Device::Cpu).unwrap())
        .add(BatchNorm1d::new_1d(4, &Device::Cpu).unwrap())
}

fn trained_adam(model: &Sequential) -> Adam {
    let mut adam = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    for (_, parameter) in model.named_parameter_slots() {
        parameter.set_grad(Some(parameter.tensor().ones_like().unwrap()));
    }
    adam.step().unwrap();
    adam
}

#[test]
fn fuzz_model_checkpoint() {
    let dir = temp_dir("fuzz-checkpoint");
    let source = model();
    let adam = trained_adam(&source);
    let valid_path = dir.join("valid.safetensors");
    let metadata = BTreeMap::from([("epoch".to_string(), "3".to_string())]);
    save_checkpoint(&source, Some(&adam), &metadata, &valid_path).unwrap();
    let valid = std::fs::read(&valid_path).unwrap();
    let path = dir.join("mutant.safetensors");
    let target = model();
    let mut optimizer = Adam::new(target.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    fuzz("checkpoint", &valid, 21, 2500, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        let (_, peak) = peak_allocation(|| {
            let _ = load_checkpoint(&target, Some(&mut optimizer), &path);
            let _ = load_safetensors_with(&target, &path, false);
            let _ = load_tensors(&path, &Device::Cpu);
        });
        assert!(peak < BOUND, "allocated {peak} bytes");
        // Whatever was loaded, the optimizer can still step.
        for (_, parameter) in target.named_parameter_slots() {
            parameter.set_grad(Some(parameter.tensor().ones_like().unwrap()));
        }
        let _ = optimizer.step();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fuzz_optimizer_state() {
    let dir = temp_dir("fuzz-optimizer");
    let source = model();
    let valid_path = dir.join("valid.safetensors");
    save_optimizer(&trained_adam(&source), &valid_path).unwrap();
    let valid = std::fs::read(&valid_path).unwrap();
    let path = dir.join("mutant.safetensors");
    let target = model();
    let mut adam = Adam::new(target.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    let mut sgd = Sgd::new(target.named_parameter_slots(), SgdConfig::new(0.1)).unwrap();
    fuzz("optimizer state", &valid, 22, 2500, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        let (result, peak) = peak_allocation(|| load_optimizer(&mut adam, &path));
        assert!(peak < BOUND, "allocated {peak} bytes");
        if result.is_ok() {
            // A state that loads has valid settings: stepping works (tensor values are the
            // file's own business, as in PyTorch).
            for (_, parameter) in target.named_parameter_slots() {
                parameter.set_grad(Some(parameter.tensor().ones_like().unwrap()));
            }
            adam.step().unwrap();
            let config = adam.config();
            assert!(config.lr.is_finite() && (0.0..1.0).contains(&config.beta1));
        }
        assert!(load_optimizer(&mut sgd, &path).is_err());
    });
    let _ = std::fs::remove_dir_all(&dir);
}
