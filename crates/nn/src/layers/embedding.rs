//! `Embedding`: a lookup table of vectors indexed by integer ids (`weight [num, dim]`,
//! initialized `N(0, 1)` like PyTorch). The lookup is core's `index_select`, whose backward
//! scatter-adds into the rows that were used.

use anygrad_core::{DType, Device, Error, Result, Tensor};

use crate::init;
use crate::module::{join_name, Kind, Module, Parameter};

/// A table of `num_embeddings` vectors of size `embedding_dim`, like `torch.nn.Embedding`.
#[derive(Debug, Clone)]
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Parameter,
}

impl Embedding {
    /// A table initialized from `N(0, 1)`, f32 on `device`.
    pub fn new(num_embeddings: usize, embedding_dim: usize, device: &Device) -> Result<Embedding> {
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], DType::F32, device)?;
        init::normal_(&weight, 0.0, 1.0)?;
        Ok(Embedding {
            weight: Parameter::new(weight),
        })
    }

    /// A table from a given `[num, dim]` tensor.
    pub fn from_tensor(weight: Tensor) -> Embedding {
        Embedding {
            weight: Parameter::new(weight),
        }
    }
}

impl Module for Embedding {
    /// `ids` of any shape and an integer dtype → `ids.shape + [embedding_dim]`.
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        if !ids.dtype().is_index() {
            return Err(Error::invalid(
                "Embedding",
                format!(
                    "ids must have an integer dtype (int32, uint32, uint8), got {}",
                    ids.dtype()
                ),
            ));
        }
        let weight = self.weight.tensor();
        let flat = ids.reshape([ids.numel()])?;
        let rows = weight.index_select(0, &flat)?;
        let mut shape = ids.shape().to_vec();
        shape.push(weight.shape()[1]);
        rows.reshape(shape)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&join_name(prefix, "weight"), &self.weight, Kind::Parameter);
    }
}
