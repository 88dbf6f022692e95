//! [`KvCache`]: the keys and values of every layer for the tokens seen so far, kept on the
//! model's device (`[batch, key_value_heads, tokens, head_dim]` per layer), so that after the
//! prompt (prefill) each new token costs one token's forward pass.
//!
//! Each layer's keys and values live in buffers with room for more tokens than are cached
//! (`[batch, key_value_heads, capacity, head_dim]`): a new token's keys and values are copied
//! into position `len` in place, and attention reads a view of the first `len + new`
//! positions, so a token costs one copy of its own keys and values, not of the whole cache.
//! A buffer that fills up is replaced by one of twice the capacity (the cached tokens copied
//! once). [`KvCache::with_capacity`] sizes the buffers for a whole generation up front.
//!
//! Writing in place is outside autograd, so a call that will take gradients through the keys
//! or values (grad mode on and a projection that requires grad, as in LoRA training over a
//! cache) joins them by concatenation instead, as differentiable ops; the layer stays joined
//! until [`KvCache::clear`].

use anygrad_core::{is_grad_enabled, Error, Result, Tensor};

/// One layer's cached keys and values.
#[derive(Debug, Default)]
enum LayerCache {
    /// Nothing cached.
    #[default]
    Empty,
    /// Buffers `[batch, heads, capacity, head_dim]`; the first `KvCache::len` positions
    /// hold the cached tokens.
    Buffered { keys: Tensor, values: Tensor },
    /// Every cached token's keys and values, joined by (differentiable) concatenation.
    Joined { keys: Tensor, values: Tensor },
}

/// The attention keys and values of the tokens processed so far, per layer. Cloning copies
/// the cached keys and values (the clone and the original then grow independently).
#[derive(Debug, Default)]
pub struct KvCache {
    layers: Vec<LayerCache>,
    length: usize,
    /// The tokens each layer's first buffer has room for (at least the first call's).
    capacity: usize,
}

impl KvCache {
    /// An empty cache for `layers` decoder layers; its buffers grow as tokens arrive.
    pub fn new(layers: usize) -> KvCache {
        KvCache::with_capacity(layers, 0)
    }

    /// An empty cache for `layers` decoder layers whose buffers are allocated with room for
    /// `tokens` tokens (a prompt and the tokens to be generated after it), so that they never
    /// grow while that many are cached.
    pub fn with_capacity(layers: usize, tokens: usize) -> KvCache {
        KvCache {
            layers: (0..layers).map(|_| LayerCache::Empty).collect(),
            length: 0,
            capacity: tokens,
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

    /// Forget every token (the buffers are released).
    pub fn clear(&mut self) {
        self.layers
            .iter_mut()
            .for_each(|layer| *layer = LayerCache::Empty);
        self.length = 0;
    }

    /// Append layer `layer`'s new `keys` and `values` (`[batch, heads, new, head_dim]`) and
    /// return the layer's whole keys and values (`[batch, heads, len + new, head_dim]`; views
    /// of the layer's buffers, valid until the cache is next written).
    pub(crate) fn append(
        &mut self,
        layer: usize,
        keys: Tensor,
        values: Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let layers = self.layers.len();
        let past = self.length;
        let capacity = self.capacity;
        let slot = self.layers.get_mut(layer).ok_or_else(|| {
            Error::invalid(
                "KvCache",
                format!("layer {layer} is past the cache's {layers} layers"),
            )
        })?;
        check_new(&keys, &values)?;
        let total = past + keys.shape()[2];
        let old = std::mem::take(slot);
        let old_tracked = match &old {
            LayerCache::Joined { keys, values } => keys.requires_grad() || values.requires_grad(),
            _ => false,
        };
        let tracked =
            is_grad_enabled() && (old_tracked || keys.requires_grad() || values.requires_grad());
        let (layer_cache, whole) = match old {
            LayerCache::Empty if tracked || capacity == 0 => {
                // Nothing to copy into: the first tokens are kept as they are (a later
                // untracked token moves them into a buffer).
                let whole = (keys.clone(), values.clone());
                (LayerCache::Joined { keys, values }, whole)
            }
            LayerCache::Joined {
                keys: old_keys,
                values: old_values,
            } if tracked => {
                let keys = Tensor::cat(&[&old_keys, &keys], 2)?;
                let values = Tensor::cat(&[&old_values, &values], 2)?;
                let whole = (keys.clone(), values.clone());
                (LayerCache::Joined { keys, values }, whole)
            }
            LayerCache::Buffered {
                keys: old_keys,
                values: old_values,
            } if tracked => {
                let keys = Tensor::cat(&[&old_keys.narrow(2, 0, past)?, &keys], 2)?;
                let values = Tensor::cat(&[&old_values.narrow(2, 0, past)?, &values], 2)?;
                let whole = (keys.clone(), values.clone());
                (LayerCache::Joined { keys, values }, whole)
            }
            old => {
                let (old_keys, old_values) = match old {
                    LayerCache::Empty => (None, None),
                    LayerCache::Buffered { keys, values } | LayerCache::Joined { keys, values } => {
                        (Some(keys), Some(values))
                    }
                };
                let buffered_keys = fitted(old_keys, &keys, past, total, capacity)?;
                let buffered_values = fitted(old_values, &values, past, total, capacity)?;
                write(&buffered_keys, &keys, past)?;
                write(&buffered_values, &values, past)?;
                let whole = (
                    buffered_keys.narrow(2, 0, total)?,
                    buffered_values.narrow(2, 0, total)?,
                );
                (
                    LayerCache::Buffered {
                        keys: buffered_keys,
                        values: buffered_values,
                    },
                    whole,
                )
            }
        };
        *slot = layer_cache;
        Ok(whole)
    }

    /// Record that `count` more tokens were processed (after every layer appended them).
    pub(crate) fn advance(&mut self, count: usize) {
        self.length += count;
    }

    /// The number of layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// The tokens each layer's buffers have room for before they grow: the smallest over the
    /// layers that hold buffers (the capacity asked for while none does).
    pub fn capacity(&self) -> usize {
        self.layers
            .iter()
            .filter_map(|layer| match layer {
                LayerCache::Buffered { keys, .. } => Some(keys.shape()[2]),
                _ => None,
            })
            .min()
            .unwrap_or(self.capacity)
    }
}

impl Clone for KvCache {
    fn clone(&self) -> KvCache {
        // Buffers are written in place, but only past the cached tokens: the clone keeps views
        // of the cached tokens (which later writes of the original never touch) and moves them
        // into buffers of its own when it next grows.
        let layers = self
            .layers
            .iter()
            .map(|layer| match layer {
                LayerCache::Empty => LayerCache::Empty,
                LayerCache::Buffered { keys, values } => {
                    match (
                        keys.narrow(2, 0, self.length),
                        values.narrow(2, 0, self.length),
                    ) {
                        (Ok(keys), Ok(values)) => LayerCache::Joined { keys, values },
                        // A buffer always holds the cached tokens; were it shorter, the clone
                        // would start that layer empty and its next call would fail visibly.
                        _ => LayerCache::Empty,
                    }
                }
                LayerCache::Joined { keys, values } => LayerCache::Joined {
                    keys: keys.clone(),
                    values: values.clone(),
                },
            })
            .collect();
        KvCache {
            layers,
            length: self.length,
            capacity: self.capacity,
        }
    }
}

/// New keys and values are `[batch, heads, new, head_dim]` of one shape, dtype and device.
fn check_new(keys: &Tensor, values: &Tensor) -> Result<()> {
    if keys.rank() != 4 || values.rank() != 4 || keys.shape()[..3] != values.shape()[..3] {
        return Err(Error::invalid(
            "KvCache",
            format!(
                "keys {:?} and values {:?} must be [batch, heads, new, head_dim] with the same \
                 batch, heads and new tokens",
                keys.shape(),
                values.shape()
            ),
        ));
    }
    Ok(())
}

/// A zeroed buffer for `new`'s rows with room for `room` tokens.
fn buffer(new: &Tensor, room: usize) -> Result<Tensor> {
    let shape = new.shape();
    Tensor::zeros(
        &[shape[0], shape[1], room, shape[3]],
        new.dtype(),
        new.device(),
    )
}

/// A buffer for the layer's keys or values with room for `total` tokens of rows shaped like
/// `new`, holding the `past` tokens cached: `old` itself when it is a buffer with the room,
/// else a new one of twice the old room (at least `total` and `capacity`) with the cached
/// tokens copied in.
fn fitted(
    old: Option<Tensor>,
    new: &Tensor,
    past: usize,
    total: usize,
    capacity: usize,
) -> Result<Tensor> {
    let want = new.shape();
    let Some(old) = old else {
        return buffer(new, capacity.max(total));
    };
    let have = old.shape();
    if have[0] != want[0] || have[1] != want[1] || have[3] != want[3] || have[2] < past {
        return Err(Error::invalid(
            "KvCache",
            format!(
                "new keys or values {want:?} do not match the cached {:?}",
                [have[0], have[1], past, have[3]]
            ),
        ));
    }
    if total <= have[2] && old.is_contiguous() {
        return Ok(old);
    }
    let grown = buffer(new, (2 * have[2]).max(total).max(capacity))?;
    write(&grown, &old.narrow(2, 0, past)?, 0)?;
    Ok(grown)
}

/// Copy `rows` (`[batch, heads, new, head_dim]`) into `buffer` at token `position`, in place.
fn write(buffer: &Tensor, rows: &Tensor, position: usize) -> Result<()> {
    let rows = if rows.dtype() == buffer.dtype() {
        rows.detach()
    } else {
        return Err(Error::invalid(
            "KvCache",
            format!(
                "new keys or values of {:?} for a cache of {:?}",
                rows.dtype(),
                buffer.dtype()
            ),
        ));
    };
    buffer.narrow(2, position, rows.shape()[2])?.assign(&rows)
}
