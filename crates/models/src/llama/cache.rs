//! [`KvCache`]: the keys and values of every layer for the tokens seen so far, kept on the
//! model's device (`[batch, key_value_heads, tokens, head_dim]` per layer), so that after the
//! prompt (prefill) each new token costs one token's forward pass.

use anygrad_core::{Error, Result, Tensor};

/// The attention keys and values of the tokens processed so far, per layer.
#[derive(Clone, Debug, Default)]
pub struct KvCache {
    layers: Vec<Option<(Tensor, Tensor)>>,
    length: usize,
}

impl KvCache {
    /// An empty cache for `layers` decoder layers.
    pub fn new(layers: usize) -> KvCache {
        KvCache {
            layers: vec![None; layers],
            length: 0,
        }
    }

    /// Tokens cached (the position of the next token).
    pub fn len(&self) -> usize {
        self.length
    }

    /// Whether no token is cached.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Forget every token.
    pub fn clear(&mut self) {
        self.layers.iter_mut().for_each(|layer| *layer = None);
        self.length = 0;
    }

    /// Append layer `layer`'s new `keys` and `values` (`[batch, heads, new, head_dim]`) and
    /// return the layer's whole keys and values.
    pub(crate) fn append(
        &mut self,
        layer: usize,
        keys: Tensor,
        values: Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let layers = self.layers.len();
        let slot = self.layers.get_mut(layer).ok_or_else(|| {
            Error::invalid(
                "KvCache",
                format!("layer {layer} is past the cache's {layers} layers"),
            )
        })?;
        let joined = match slot.take() {
            None => (keys, values),
            Some((old_keys, old_values)) => (
                Tensor::cat(&[&old_keys, &keys], 2)?,
                Tensor::cat(&[&old_values, &values], 2)?,
            ),
        };
        *slot = Some(joined.clone());
        Ok(joined)
    }

    /// Record that `count` more tokens were processed (after every layer appended them).
    pub(crate) fn advance(&mut self, count: usize) {
        self.length += count;
    }

    /// The number of layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }
}
