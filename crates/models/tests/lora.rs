//! Fine-tuning a tiny random Llama (2 layers, hidden 16, 4 query heads over 2 key/value heads)
//! with LoRA on the CPU and the GPU: the causal-LM loss equals a hand computation (shifted
//! targets, padded positions left out); freshly added adapters leave the logits unchanged;
//! the base is frozen (no `requires_grad`, no gradient after backward); gradient
//! checkpointing gives the same gradients; the loss falls when the adapters are trained; the
//! adapters saved in PEFT's layout load back to the same logits.

mod gguf_support;

use anygrad_core::{DType, Device, Tensor};
use anygrad_models::llama::{causal_lm_loss, LlamaForCausalLM, LoraConfig};
use anygrad_nn::{AdamConfig, AdamW, Module, Optimizer};
use anygrad_testing::{
    assert_close, device_tests, f16_or_skip, global_rng_lock, pseudo_random, temp_dir, values,
};
use gguf_support::{model_from, random_weights, tiny_config};

const TOKENS: [i32; 8] = [3, 17, 5, 39, 0, 22, 8, 11];

fn ids(tokens: &[i32], device: &Device) -> Tensor {
    Tensor::from_vec(tokens.to_vec(), &[1, tokens.len()], device).expect("ids")
}

fn tiny_model(device: &Device) -> LlamaForCausalLM {
    let config = tiny_config();
    model_from(&config, &random_weights(&config, 7), device).expect("model")
}

/// Give every `B` random values, so that the adapters change the output.
fn randomize_b(model: &LlamaForCausalLM, seed: u64) {
    for (index, (name, slot)) in model.lora_parameters().into_iter().enumerate() {
        if name.ends_with("lora_B.weight") {
            let shape = slot.shape();
            let count = shape.iter().product();
            let tensor = Tensor::from_vec(
                pseudo_random(count, seed + index as u64),
                &shape,
                slot.tensor().device(),
            )
            .expect("B");
            slot.assign(&tensor).expect("assign");
        }
    }
}

fn loss_matches_hand_computation(device: &Device) {
    let (batch, tokens, vocab) = (2usize, 4usize, 5usize);
    let logits = pseudo_random(batch * tokens * vocab, 3);
    let input = [1i32, 4, 2, 0, 3, 3, 1, 2];
    let mask = [1i32, 1, 1, 0, 1, 1, 1, 1]; // the first row's last token is padding
    let logits_tensor = Tensor::from_vec(logits.clone(), &[batch, tokens, vocab], device)
        .expect("logits")
        .requires_grad_(true);
    let input_tensor = Tensor::from_vec(input.to_vec(), &[batch, tokens], device).expect("ids");
    let mask_tensor = Tensor::from_vec(mask.to_vec(), &[batch, tokens], device).expect("mask");
    // By hand: -log softmax(logits[b, t])[ids[b, t + 1]] over targets whose mask is 1.
    let hand = |use_mask: bool| -> f32 {
        let (mut total, mut count) = (0f64, 0usize);
        for b in 0..batch {
            for t in 0..tokens - 1 {
                if use_mask && mask[b * tokens + t + 1] == 0 {
                    continue;
                }
                let row = &logits[(b * tokens + t) * vocab..(b * tokens + t + 1) * vocab];
                let max = row.iter().cloned().fold(f32::MIN, f32::max) as f64;
                let sum: f64 = row.iter().map(|&v| (v as f64 - max).exp()).sum();
                let target = input[b * tokens + t + 1] as usize;
                total -= row[target] as f64 - max - sum.ln();
                count += 1;
            }
        }
        (total / count as f64) as f32
    };
    let masked = causal_lm_loss(&logits_tensor, &input_tensor, Some(&mask_tensor)).expect("loss");
    assert_close(&values(&masked), &[hand(true)], 1e-5, 1e-5, "masked loss");
    let unmasked = causal_lm_loss(&logits_tensor, &input_tensor, None).expect("loss");
    assert_close(&values(&unmasked), &[hand(false)], 1e-5, 1e-5, "loss");
    // The masked target and the last position's logits get no gradient.
    masked.backward().expect("backward");
    let grad = values(&logits_tensor.grad().expect("grad"));
    for t in [2usize, 3] {
        let row = &grad[t * vocab..(t + 1) * vocab];
        assert!(row.iter().all(|&g| g == 0.0), "position {t}: {row:?}");
    }
    assert!(grad[..vocab].iter().any(|&g| g != 0.0));
    // A mask of bools or floats works the same.
    let float_mask = mask_tensor.to_dtype(DType::F32).expect("f32 mask");
    let again = causal_lm_loss(&logits_tensor, &input_tensor, Some(&float_mask)).expect("loss");
    assert_close(&values(&again), &[hand(true)], 1e-5, 1e-5, "float mask");
    // Wrong shapes and a single token are errors naming the op.
    let short = Tensor::from_vec(vec![1i32; 3], &[1, 3], device).expect("ids");
    for error in [
        causal_lm_loss(&logits_tensor, &short, None).err(),
        causal_lm_loss(&logits_tensor, &input_tensor, Some(&short)).err(),
        causal_lm_loss(
            &logits_tensor.narrow(1, 0, 1).expect("narrow"),
            &input_tensor.narrow(1, 0, 1).expect("narrow"),
            None,
        )
        .err(),
    ] {
        let error = error.expect("accepted a bad input");
        assert!(error.to_string().contains("causal_lm_loss"), "{error}");
    }
}

fn adapters_start_as_identity_and_base_is_frozen(device: &Device) {
    let _rng = global_rng_lock();
    anygrad_core::manual_seed(5);
    let mut model = tiny_model(device);
    let before = values(&model.forward(&ids(&TOKENS, device)).expect("forward"));
    let every = [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ];
    model
        .add_lora(&LoraConfig::new(4, 8.0, &every))
        .expect("add_lora");
    let after = values(&model.forward(&ids(&TOKENS, device)).expect("forward"));
    // B is zero: the same logits up to the rounding of a differently ordered sum.
    assert_close(&after, &before, 1e-5, 1e-5, "logits with fresh adapters");
    // Adding twice and unknown targets are refused.
    assert!(model
        .add_lora(&LoraConfig::new(4, 8.0, &["q_proj"]))
        .is_err());
    let mut other = tiny_model(device);
    let error = other
        .add_lora(&LoraConfig::new(4, 8.0, &["qkv"]))
        .expect_err("unknown target accepted");
    assert!(error.to_string().contains("qkv"), "{error}");
    // Two tensors per projection, seven projections, two layers; A is U(-1/√in, 1/√in).
    let adapters = model.lora_parameters();
    assert_eq!(adapters.len(), 2 * 7 * 2);
    assert_eq!(
        adapters[0].0,
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
    );
    assert_eq!(adapters[0].1.shape(), [4, 16]);
    assert_eq!(adapters[1].1.shape(), [16, 4]);
    let a = values(&adapters[0].1.tensor());
    assert!(a.iter().all(|v| v.abs() <= 0.25) && a.iter().any(|&v| v != 0.0));
    assert!(values(&adapters[1].1.tensor()).iter().all(|&v| v == 0.0));
    // Only the adapters learn.
    let mut trainable = 0;
    for (name, slot) in model.named_parameter_slots() {
        let is_adapter = name.contains(".lora_");
        assert_eq!(slot.tensor().requires_grad(), is_adapter, "{name}");
        trainable += usize::from(is_adapter);
    }
    assert_eq!(trainable, adapters.len());
    let input = ids(&TOKENS, device);
    let loss =
        causal_lm_loss(&model.forward(&input).expect("forward"), &input, None).expect("loss");
    loss.backward().expect("backward");
    for (name, slot) in model.named_parameter_slots() {
        if name.contains(".lora_B") {
            let grad = values(&slot.grad().expect("B has a gradient"));
            assert!(grad.iter().any(|&g| g != 0.0), "{name}");
        } else if !name.contains(".lora_") {
            assert!(slot.grad().is_none(), "{name} got a gradient");
        }
    }
}

fn gradient_checkpointing_gives_the_same_gradients(device: &Device) {
    let _rng = global_rng_lock();
    let input = ids(&TOKENS, device);
    let mut runs = Vec::new();
    for checkpointing in [false, true] {
        anygrad_core::manual_seed(9);
        let mut model = tiny_model(device);
        model
            .add_lora(&LoraConfig::new(2, 4.0, &["q_proj", "v_proj", "down_proj"]))
            .expect("add_lora");
        randomize_b(&model, 40);
        let logits = model.forward_train(&input, checkpointing).expect("forward");
        let loss = causal_lm_loss(&logits, &input, None).expect("loss");
        loss.backward().expect("backward");
        let mut grads = values(&loss);
        for (name, slot) in model.lora_parameters() {
            grads.extend(values(
                &slot
                    .grad()
                    .unwrap_or_else(|| panic!("{name} has no gradient")),
            ));
        }
        for (name, slot) in model.named_parameter_slots() {
            if !name.contains(".lora_") {
                assert!(slot.grad().is_none(), "{name} got a gradient");
            }
        }
        runs.push(grads);
    }
    assert_close(&runs[1], &runs[0], 1e-5, 1e-4, "checkpointed vs plain");
}

fn loss_falls_when_adapters_train(device: &Device) {
    let _rng = global_rng_lock();
    anygrad_core::manual_seed(11);
    let mut model = tiny_model(device);
    model
        .add_lora(&LoraConfig::new(4, 8.0, &["q_proj", "v_proj"]))
        .expect("add_lora");
    let mut optimizer =
        AdamW::new(model.lora_parameters(), AdamConfig::new(2e-2)).expect("optimizer");
    let input = ids(&TOKENS, device);
    let mut losses = Vec::new();
    for _ in 0..20 {
        let logits = model.forward_train(&input, true).expect("forward");
        let loss = causal_lm_loss(&logits, &input, None).expect("loss");
        optimizer.zero_grad();
        loss.backward().expect("backward");
        optimizer.step().expect("step");
        losses.push(loss.item::<f32>().expect("loss value"));
    }
    let (first, last) = (losses[0], losses[losses.len() - 1]);
    assert!(last < 0.7 * first, "the loss did not fall: {losses:?}");
}

fn peft_layout_round_trip(device: &Device) {
    let _rng = global_rng_lock();
    anygrad_core::manual_seed(13);
    let mut model = tiny_model(device);
    let config = LoraConfig::new(3, 6.0, &["q_proj", "v_proj", "gate_proj"]);
    model.add_lora(&config).expect("add_lora");
    randomize_b(&model, 70);
    let input = ids(&TOKENS, device);
    let adapted = values(&model.forward(&input).expect("forward"));
    let side = if matches!(device, Device::Cpu) {
        "cpu"
    } else {
        "gpu"
    };
    let dir = temp_dir(&format!("lora-round-trip-{side}"));
    model.save_lora(&dir).expect("save");

    // PEFT's names and shapes: A [r, in], B [out, r].
    let (tensors, _) =
        anygrad_nn::load_tensors(dir.join("adapter_model.safetensors"), &Device::Cpu)
            .expect("read");
    assert_eq!(tensors.len(), 2 * 3 * 2);
    let prefix = "base_model.model.model.layers.1";
    assert_eq!(
        tensors[&format!("{prefix}.self_attn.q_proj.lora_A.weight")].shape(),
        [3, 16]
    );
    assert_eq!(
        tensors[&format!("{prefix}.self_attn.v_proj.lora_B.weight")].shape(),
        [8, 3]
    );
    assert_eq!(
        tensors[&format!("{prefix}.mlp.gate_proj.lora_B.weight")].shape(),
        [24, 3]
    );
    let text = std::fs::read_to_string(dir.join("adapter_config.json")).expect("config");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["peft_type"], "LORA");
    assert_eq!(json["task_type"], "CAUSAL_LM");
    assert_eq!(json["r"], 3);
    assert_eq!(json["lora_alpha"], 6.0);
    assert_eq!(json["lora_dropout"], 0.0);
    assert_eq!(json["bias"], "none");
    assert_eq!(
        json["target_modules"],
        serde_json::json!(["q_proj", "v_proj", "gate_proj"])
    );

    // Loaded onto a fresh base model: the same logits, different from the base's.
    let mut loaded = tiny_model(device);
    let base = values(&loaded.forward(&input).expect("forward"));
    assert_eq!(loaded.load_lora(&dir).expect("load"), config);
    let reloaded = values(&loaded.forward(&input).expect("forward"));
    assert_close(&reloaded, &adapted, 1e-6, 1e-6, "reloaded adapters");
    assert!(base.iter().zip(&adapted).any(|(a, b)| (a - b).abs() > 1e-3));

    // A config whose rank disagrees with the tensors is an error naming the file.
    let wrong = text.replace("\"r\": 3", "\"r\": 2");
    assert_ne!(wrong, text);
    std::fs::write(dir.join("adapter_config.json"), wrong).expect("write");
    let error = tiny_model(device)
        .load_lora(&dir)
        .expect_err("wrong rank accepted");
    assert!(
        error.to_string().contains("adapter_model.safetensors"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn f16_frozen_base_trains_the_adapters(device: &Device) {
    if !f16_or_skip(device, "f16_frozen_base_trains_the_adapters") {
        return;
    }
    let _rng = global_rng_lock();
    anygrad_core::manual_seed(17);
    let mut model = tiny_model(device);
    // Still trainable: refused.
    assert!(model.store_frozen_projections_as(DType::F16).is_err());
    model
        .add_lora(&LoraConfig::new(4, 8.0, &["q_proj", "v_proj", "up_proj"]))
        .expect("add_lora");
    randomize_b(&model, 90);
    let input = ids(&TOKENS, device);
    let full = values(&model.forward(&input).expect("forward"));
    model
        .store_frozen_projections_as(DType::F16)
        .expect("to f16");
    assert_eq!(
        model.model.layers[0]
            .self_attn
            .q_proj
            .base
            .dense_weight()
            .expect("dense")
            .dtype(),
        DType::F16
    );
    let half = values(&model.forward(&input).expect("forward"));
    assert_close(&half, &full, 2e-2, 2e-2, "f16 base vs f32 base");
    let mut optimizer =
        AdamW::new(model.lora_parameters(), AdamConfig::new(2e-2)).expect("optimizer");
    let mut losses = Vec::new();
    for _ in 0..8 {
        let logits = model.forward_train(&input, true).expect("forward");
        let loss = causal_lm_loss(&logits, &input, None).expect("loss");
        optimizer.zero_grad();
        loss.backward().expect("backward");
        optimizer.step().expect("step");
        losses.push(loss.item::<f32>().expect("loss value"));
    }
    assert!(losses[7] < losses[0], "the loss did not fall: {losses:?}");
    for (name, slot) in model.named_parameter_slots() {
        if !name.contains(".lora_") {
            assert!(slot.grad().is_none(), "{name} got a gradient");
            assert!(!slot.tensor().requires_grad(), "{name}");
        }
    }
}

device_tests!(
    loss_matches_hand_computation,
    adapters_start_as_identity_and_base_is_frozen,
    gradient_checkpointing_gives_the_same_gradients,
    loss_falls_when_adapters_train,
    peft_layout_round_trip,
    f16_frozen_base_trains_the_adapters,
);
