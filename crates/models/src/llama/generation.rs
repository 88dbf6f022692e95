//! [`generate`]: the decoding loop. The prompt runs through the model once (prefill, filling
//! the [`KvCache`](super::KvCache), whose buffers are sized for the prompt and every token
//! to be generated); then each chosen token runs alone, its logits read back
//! to the host and the [`Sampler`] choosing the next, until `max_new_tokens` or a stop token.
//! Every token is handed to a callback as soon as it is chosen (for streaming), and the
//! prompt's last-position logits and the timings come back with the tokens.

use std::time::Instant;

use anygrad_core::{no_grad, DType, Error, Result, Tensor};

use super::model::LlamaForCausalLM;
use super::sampling::{Sampler, SamplingOptions};

/// What [`generate`] does.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationOptions {
    /// The most tokens generated.
    pub max_new_tokens: usize,
    /// How tokens are chosen.
    pub sampling: SamplingOptions,
    /// Tokens that end generation (included in the output when met).
    pub stop_tokens: Vec<u32>,
}

/// What [`generate`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationOutput {
    /// The generated tokens (a stop token, when met, is the last).
    pub generated_ids: Vec<u32>,
    /// The logits of the prompt's last position (the distribution of the first token).
    pub prompt_logits: Vec<f32>,
    /// Seconds of the prompt's forward pass (prefill, logits read back).
    pub prompt_seconds: f64,
    /// Seconds of the one-token steps after it.
    pub generation_seconds: f64,
}

/// Generate from `prompt_ids` (batch of one) with `model`, calling `on_token` with each token
/// as soon as it is chosen. An empty prompt, or one longer than the model's context, is an
/// error.
pub fn generate(
    model: &LlamaForCausalLM,
    prompt_ids: &[u32],
    options: &GenerationOptions,
    on_token: &mut dyn FnMut(u32) -> Result<()>,
) -> Result<GenerationOutput> {
    if prompt_ids.is_empty() {
        return Err(Error::invalid("generate", "the prompt has no tokens"));
    }
    let _no_grad = no_grad();
    let mut sampler = Sampler::new(options.sampling.clone())?;
    let device = model.model.embed_tokens.device();
    let vocab = model.config().vocab_size;
    let context = model.config().context_length();
    if prompt_ids.len() > context {
        return Err(Error::invalid(
            "generate",
            format!(
                "the prompt has {} tokens, more than the model's context of {context}",
                prompt_ids.len()
            ),
        ));
    }
    let ids_tensor = |ids: &[u32]| -> Result<Tensor> {
        let values: Vec<i32> = ids
            .iter()
            .map(|&id| id.min(i32::MAX as u32) as i32)
            .collect();
        Tensor::from_vec(values, &[1, ids.len()], &device)
    };
    let mut cache = model.new_cache_with_capacity(prompt_ids.len() + options.max_new_tokens);
    let mut history: Vec<u32> = prompt_ids.to_vec();

    let started = Instant::now();
    let logits = model.next_token_logits(&ids_tensor(prompt_ids)?, &mut cache)?;
    let prompt_logits = logits.to_dtype(DType::F32)?.to_vec_f32()?;
    let prompt_seconds = started.elapsed().as_secs_f64();
    if prompt_logits.len() != vocab {
        return Err(Error::invalid(
            "generate",
            format!("{} logits for a vocabulary of {vocab}", prompt_logits.len()),
        ));
    }

    let started = Instant::now();
    let mut generated = Vec::new();
    let mut logits = prompt_logits.clone();
    while generated.len() < options.max_new_tokens {
        let token = sampler.sample(&logits, &history)?;
        generated.push(token);
        history.push(token);
        on_token(token)?;
        if options.stop_tokens.contains(&token)
            || generated.len() == options.max_new_tokens
            || cache.len() >= context
        {
            break;
        }
        logits = model
            .next_token_logits(&ids_tensor(&[token])?, &mut cache)?
            .to_dtype(DType::F32)?
            .to_vec_f32()?;
    }
    Ok(GenerationOutput {
        generated_ids: generated,
        prompt_logits,
        prompt_seconds,
        generation_seconds: started.elapsed().as_secs_f64(),
    })
}
