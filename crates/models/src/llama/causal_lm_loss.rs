//! [`causal_lm_loss`]: the next-token cross-entropy of a causal language model, as Hugging
//! Face's `LlamaForCausalLM(labels=...)` computes it: the logits of position `t` are scored
//! against the token at `t + 1`, targets at padded positions (attention mask 0) are ignored,
//! and the mean runs over the targets kept.

use anygrad_core::{DType, Error, Result, Tensor};
use anygrad_nn::CrossEntropyLoss;

/// The target value that marks an ignored position (PyTorch's `ignore_index`).
const IGNORED: i64 = -100;

/// The mean next-token cross-entropy of `logits` `[batch, tokens, vocab]` for `input_ids`
/// `[batch, tokens]` (integers): position `t` predicts token `t + 1`, so `tokens - 1`
/// targets per row. With `attention_mask` `[batch, tokens]` (any dtype, 0 for padding), a
/// target whose token is padding is left out, and the mean is over the targets kept (Hugging
/// Face masks its labels the same way). Pad on the right: the model's causal attention then
/// never lets a real token see a pad. When every target is masked the result is NaN (0 / 0),
/// as in PyTorch.
pub fn causal_lm_loss(
    logits: &Tensor,
    input_ids: &Tensor,
    attention_mask: Option<&Tensor>,
) -> Result<Tensor> {
    let &[batch, tokens, vocab] = logits.shape() else {
        return Err(Error::invalid(
            "causal_lm_loss",
            format!(
                "logits must be [batch, tokens, vocab], got {:?}",
                logits.shape()
            ),
        ));
    };
    if input_ids.shape() != [batch, tokens] {
        return Err(Error::invalid(
            "causal_lm_loss",
            format!(
                "input_ids must be [batch, tokens] = {:?} like the logits, got {:?}",
                [batch, tokens],
                input_ids.shape()
            ),
        ));
    }
    if !input_ids.dtype().is_index() {
        return Err(Error::invalid(
            "causal_lm_loss",
            format!("input_ids must be integers, got {}", input_ids.dtype()),
        ));
    }
    if tokens < 2 {
        return Err(Error::invalid(
            "causal_lm_loss",
            format!("at least 2 tokens are needed for a next-token target, got {tokens}"),
        ));
    }
    let predicted = tokens - 1;
    let scores = logits
        .narrow(1, 0, predicted)?
        .reshape([batch * predicted, vocab])?;
    let mut targets = input_ids
        .narrow(1, 1, predicted)?
        .to_dtype(DType::I32)?
        .contiguous()?;
    if let Some(mask) = attention_mask {
        if mask.shape() != [batch, tokens] {
            return Err(Error::invalid(
                "causal_lm_loss",
                format!(
                    "attention_mask must be [batch, tokens] = {:?} like input_ids, got {:?}",
                    [batch, tokens],
                    mask.shape()
                ),
            ));
        }
        let padded = mask.narrow(1, 1, predicted)?.eq_scalar(0.0)?;
        targets = targets.masked_fill(&padded, IGNORED as f64)?;
    }
    CrossEntropyLoss::new()
        .ignore_index(IGNORED)
        .forward(&scores, &targets.reshape([batch * predicted])?)
}
