//! The weights of a Llama model's projections and token embeddings, held either dense (a
//! trainable `Linear` / `Embedding`) or block-quantized on the device (a frozen
//! `QuantizedMatrix`, as a GGUF file stores it, read in place by the quantized kernels):
//! [`Weight`] is what a weight source hands the model, [`ProjectionWeight`] and
//! [`TokenEmbedding`] what the model keeps.

use anygrad_core::{Device, QuantizedMatrix, Result, Tensor};
use anygrad_nn::{Embedding, Kind, Linear, Module, Parameter};

/// One weight as a source provides it.
#[derive(Clone, Debug)]
pub enum Weight {
    /// A tensor (becomes a parameter).
    Dense(Tensor),
    /// A block-quantized matrix (kept quantized, frozen).
    Quantized(QuantizedMatrix),
}

impl Weight {
    /// The weight as a tensor: a quantized matrix dequantized to f32 (for weights that have
    /// no quantized use, such as norms).
    pub fn into_dense(self) -> Result<Tensor> {
        match self {
            Weight::Dense(tensor) => Ok(tensor),
            Weight::Quantized(matrix) => matrix.dequantize(),
        }
    }
}

/// The weight `[out, in]` of a bias-free projection.
#[derive(Clone, Debug)]
pub enum ProjectionWeight {
    /// A trainable linear layer.
    Dense(Linear),
    /// A frozen block-quantized matrix.
    Quantized(QuantizedMatrix),
}

impl ProjectionWeight {
    /// The projection of a source's weight.
    pub fn new(weight: Weight) -> ProjectionWeight {
        match weight {
            Weight::Dense(tensor) => ProjectionWeight::Dense(Linear::from_tensors(tensor, None)),
            Weight::Quantized(matrix) => ProjectionWeight::Quantized(matrix),
        }
    }

    /// `x Wᵀ (+ b)`. A dense weight stored in another dtype than `x` (f16 after
    /// `store_frozen_projections_as`) multiplies `x` converted to its dtype and returns `x`'s
    /// dtype; a quantized one returns `x`'s dtype.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            ProjectionWeight::Dense(linear) => {
                let weight = linear.weight.tensor();
                if weight.dtype() == x.dtype() {
                    return linear.forward(x);
                }
                let bias = linear.bias.as_ref().map(Parameter::tensor);
                x.to_dtype(weight.dtype())?
                    .linear(&weight, bias.as_ref())?
                    .to_dtype(x.dtype())
            }
            ProjectionWeight::Quantized(matrix) => x.linear_quantized(matrix),
        }
    }

    /// The dense weight tensor (`None` for a quantized matrix).
    pub fn dense_weight(&self) -> Option<Tensor> {
        match self {
            ProjectionWeight::Dense(linear) => Some(linear.weight.tensor()),
            ProjectionWeight::Quantized(_) => None,
        }
    }

    /// `[out, in]`.
    pub fn shape(&self) -> [usize; 2] {
        match self {
            ProjectionWeight::Dense(linear) => {
                let shape = linear.weight.shape();
                [shape[0], shape.get(1).copied().unwrap_or(1)]
            }
            ProjectionWeight::Quantized(matrix) => matrix.shape(),
        }
    }

    /// The device holding the weight.
    pub fn device(&self) -> Device {
        match self {
            ProjectionWeight::Dense(linear) => linear.weight.tensor().device().clone(),
            ProjectionWeight::Quantized(matrix) => matrix.device().clone(),
        }
    }

    /// Bytes the weight takes on its device.
    pub fn storage_bytes(&self) -> usize {
        match self {
            ProjectionWeight::Dense(linear) => {
                let weight = linear.weight.tensor();
                weight.numel() * weight.dtype().size_in_bytes()
            }
            ProjectionWeight::Quantized(matrix) => matrix.storage_bytes(),
        }
    }

    /// Visit the dense weight's parameters (a quantized matrix has none).
    pub fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        if let ProjectionWeight::Dense(linear) = self {
            linear.visit(prefix, visitor);
        }
    }
}

impl Module for ProjectionWeight {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ProjectionWeight::forward(self, x)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        ProjectionWeight::visit(self, prefix, visitor)
    }
}

/// The token embeddings `[vocab, hidden]` (and, when tied, the output projection).
#[derive(Clone, Debug)]
pub enum TokenEmbedding {
    /// A trainable embedding table.
    Dense(Embedding),
    /// A frozen block-quantized table, rows decoded as they are looked up.
    Quantized(QuantizedMatrix),
}

impl TokenEmbedding {
    /// The embedding of a source's weight.
    pub fn new(weight: Weight) -> TokenEmbedding {
        match weight {
            Weight::Dense(tensor) => TokenEmbedding::Dense(Embedding::from_tensor(tensor)),
            Weight::Quantized(matrix) => TokenEmbedding::Quantized(matrix),
        }
    }

    /// The rows of `ids` (any shape): `[..ids.shape, hidden]`, f32 for a quantized table.
    pub fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        match self {
            TokenEmbedding::Dense(embedding) => embedding.forward(ids),
            TokenEmbedding::Quantized(matrix) => matrix.select_rows(ids),
        }
    }

    /// `hidden · Eᵀ`: the output projection of tied embeddings.
    pub fn project(&self, hidden: &Tensor) -> Result<Tensor> {
        match self {
            TokenEmbedding::Dense(embedding) => hidden.linear(&embedding.weight.tensor(), None),
            TokenEmbedding::Quantized(matrix) => hidden.linear_quantized(matrix),
        }
    }

    /// The device holding the table.
    pub fn device(&self) -> Device {
        match self {
            TokenEmbedding::Dense(embedding) => embedding.weight.tensor().device().clone(),
            TokenEmbedding::Quantized(matrix) => matrix.device().clone(),
        }
    }

    /// Bytes the table takes on its device.
    pub fn storage_bytes(&self) -> usize {
        match self {
            TokenEmbedding::Dense(embedding) => {
                let weight = embedding.weight.tensor();
                weight.numel() * weight.dtype().size_in_bytes()
            }
            TokenEmbedding::Quantized(matrix) => matrix.storage_bytes(),
        }
    }
}

impl Module for TokenEmbedding {
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        TokenEmbedding::forward(self, ids)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        if let TokenEmbedding::Dense(embedding) = self {
            embedding.visit(prefix, visitor);
        }
    }
}
