//! [`Sampler`]: choosing the next token from a row of logits on the host, as Hugging Face's
//! `generate` does: the repetition penalty first (each earlier token's logit divided by the
//! penalty when positive, multiplied when negative), then greedy argmax at temperature 0, or
//! temperature scaling, top-k, top-p (nucleus) and a draw from the remaining probabilities
//! with a seeded generator (the same seed gives the same text).

use anygrad_core::{Error, Result};

/// How tokens are chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingOptions {
    /// 0 is greedy (argmax); otherwise logits are divided by it before the draw.
    pub temperature: f64,
    /// Keep only the `k` most likely tokens (`None`: all).
    pub top_k: Option<usize>,
    /// Keep the most likely tokens whose probabilities sum to at least `p` (`None` or 1: all).
    pub top_p: Option<f64>,
    /// Hugging Face's `repetition_penalty` (1: none).
    pub repetition_penalty: f64,
    /// The generator's seed.
    pub seed: u64,
}

impl Default for SamplingOptions {
    fn default() -> Self {
        SamplingOptions {
            temperature: 0.0,
            top_k: None,
            top_p: None,
            repetition_penalty: 1.0,
            seed: 0,
        }
    }
}

impl SamplingOptions {
    /// Check the options: a finite non-negative temperature, `top_k` ≥ 1, `top_p` in
    /// `(0, 1]`, a positive finite penalty.
    pub fn validate(&self) -> Result<()> {
        let invalid = |message: String| Err(Error::invalid("SamplingOptions", message));
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return invalid(format!("temperature {} must be >= 0", self.temperature));
        }
        if self.top_k == Some(0) {
            return invalid("top_k must be at least 1".into());
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return invalid(format!("top_p {p} must be in (0, 1]"));
            }
        }
        if !(self.repetition_penalty.is_finite() && self.repetition_penalty > 0.0) {
            return invalid(format!(
                "repetition_penalty {} must be positive",
                self.repetition_penalty
            ));
        }
        Ok(())
    }
}

/// Chooses tokens from logits (see the module documentation).
#[derive(Clone, Debug)]
pub struct Sampler {
    options: SamplingOptions,
    state: u64,
}

impl Sampler {
    /// A sampler with checked `options`.
    pub fn new(options: SamplingOptions) -> Result<Sampler> {
        options.validate()?;
        let state = options.seed ^ 0x9E37_79B9_7F4A_7C15;
        Ok(Sampler { options, state })
    }

    /// A uniform draw in `[0, 1)` (splitmix64).
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next token of `logits` (one row over the vocabulary) after the tokens `previous`
    /// (prompt and generated so far, for the repetition penalty). Empty logits are an error.
    pub fn sample(&mut self, logits: &[f32], previous: &[u32]) -> Result<u32> {
        if logits.is_empty() {
            return Err(Error::invalid("Sampler::sample", "no logits"));
        }
        let mut scores: Vec<f64> = logits.iter().map(|&v| v as f64).collect();
        let penalty = self.options.repetition_penalty;
        if penalty != 1.0 {
            let mut seen = vec![false; scores.len()];
            for &token in previous {
                let index = token as usize;
                if index < scores.len() && !seen[index] {
                    seen[index] = true;
                    let s = &mut scores[index];
                    *s = if *s < 0.0 { *s * penalty } else { *s / penalty };
                }
            }
        }
        if self.options.temperature == 0.0 {
            return Ok(argmax(&scores));
        }
        let temperature = self.options.temperature;
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        if let Some(k) = self.options.top_k {
            order.truncate(k.max(1));
        }
        let top = scores[order[0]];
        let mut weights: Vec<f64> = order
            .iter()
            .map(|&i| ((scores[i] - top) / temperature).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        weights.iter_mut().for_each(|w| *w /= total);
        if let Some(p) = self.options.top_p.filter(|&p| p < 1.0) {
            let mut sum = 0.0;
            let mut keep = weights.len();
            for (index, w) in weights.iter().enumerate() {
                sum += w;
                if sum >= p {
                    keep = index + 1;
                    break;
                }
            }
            weights.truncate(keep);
            order.truncate(keep);
            let total: f64 = weights.iter().sum();
            weights.iter_mut().for_each(|w| *w /= total);
        }
        let mut draw = self.uniform();
        for (index, w) in weights.iter().enumerate() {
            if draw < *w {
                return Ok(order[index] as u32);
            }
            draw -= w;
        }
        Ok(order[weights.len() - 1] as u32)
    }
}

/// The index of the largest score (the first of equal ones, as `torch.argmax`).
fn argmax(scores: &[f64]) -> u32 {
    let mut best = 0;
    for (index, &score) in scores.iter().enumerate() {
        if score > scores[best] {
            best = index;
        }
    }
    best as u32
}
