//! `Embedding`: a lookup table of vectors indexed by integer ids (`weight [num, dim]`,
//! initialized `N(0, 1)` like PyTorch). The lookup is core's `index_select`, whose backward
//! scatter-adds into the rows that were used. With `padding_idx` (as PyTorch) that row starts
//! at zero and the lookups of it are detached, so it never gets a gradient.

use anygrad_core::{DType, Device, Error, Result, Tensor};

use crate::init;
use crate::module::{join_name, Kind, Module, Parameter};

/// A table of `num_embeddings` vectors of size `embedding_dim`, like `torch.nn.Embedding`.
#[derive(Debug, Clone)]
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Parameter,
    /// The row that gets no gradient (`torch.nn.Embedding`'s `padding_idx`), if any.
    pub padding_idx: Option<usize>,
}

impl Embedding {
    /// A table initialized from `N(0, 1)`, f32 on `device`.
    pub fn new(num_embeddings: usize, embedding_dim: usize, device: &Device) -> Result<Embedding> {
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], DType::F32, device)?;
        init::normal_(&weight, 0.0, 1.0)?;
        Ok(Embedding {
            weight: Parameter::new(weight),
            padding_idx: None,
        })
    }

    /// Like [`Embedding::new`] with `padding_idx` (PyTorch's): that row starts at zero and
    /// never gets a gradient. An index past the table is an error.
    pub fn with_padding_idx(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: usize,
        device: &Device,
    ) -> Result<Embedding> {
        if padding_idx >= num_embeddings {
            return Err(Error::invalid(
                "Embedding",
                format!("padding_idx {padding_idx} is past the table of {num_embeddings} rows"),
            ));
        }
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], DType::F32, device)?;
        init::normal_(&weight, 0.0, 1.0)?;
        let rows = Tensor::arange(0.0, num_embeddings as f64, 1.0, DType::I32, device)?
            .reshape([num_embeddings, 1])?;
        let keep = rows.ne_scalar(padding_idx as f64)?.to_dtype(DType::F32)?;
        Ok(Embedding {
            weight: Parameter::new(weight.mul(&keep)?.detach()),
            padding_idx: Some(padding_idx),
        })
    }

    /// A table from a given `[num, dim]` tensor.
    pub fn from_tensor(weight: Tensor) -> Embedding {
        Embedding {
            weight: Parameter::new(weight),
            padding_idx: None,
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
        let mut rows = weight.index_select(0, &flat)?;
        if let Some(padding_idx) = self.padding_idx {
            // Lookups of the padding row are detached: it gets no gradient, like PyTorch.
            let is_padding = flat
                .to_dtype(DType::I32)?
                .eq_scalar(padding_idx as f64)?
                .reshape([flat.numel(), 1])?;
            rows = Tensor::where_(&is_padding, &rows.detach(), &rows)?;
        }
        let mut shape = ids.shape().to_vec();
        shape.push(weight.shape()[1]);
        rows.reshape(shape)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        visitor(&join_name(prefix, "weight"), &self.weight, Kind::Parameter);
    }
}
