//! Loading a [`LlamaForCausalLM`] from a GGUF file (llama.cpp's names; block-quantized
//! weights kept quantized on the device, or dequantized to f32: [`WeightStorage`]) or from a
//! Hugging Face folder (`config.json`, `model.safetensors`).
//!
//! GGUF files written by llama.cpp's converter store the query and key projections with the
//! rows of each head permuted for llama.cpp's interleaved RoPE (pairs `(2i, 2i + 1)`); this
//! model uses Hugging Face's rotate-half layout (pairs `(i, i + d/2)`), so the permutation is
//! undone on load ([`unpermute_rows`]) and the model's parameters are exactly those of the
//! Hugging Face checkpoint the file was converted from.

use std::collections::BTreeMap;
use std::path::Path;

use anygrad_core::files::regular_file_metadata;
use anygrad_core::{DType, Device, Error, QuantizedMatrix, Result, Tensor};

use crate::gguf::GgufFile;

use super::config::LlamaConfig;
use super::model::LlamaForCausalLM;
use super::weights::Weight;

/// The largest `model.safetensors` read: 64 GiB.
const MAX_WEIGHTS_BYTES: u64 = 64 << 30;

/// The GGUF name of a Hugging Face parameter name of a Llama model, or `None` for a name
/// this model does not have.
pub fn gguf_name(name: &str) -> Option<String> {
    match name {
        "model.embed_tokens.weight" => return Some("token_embd.weight".into()),
        "model.norm.weight" => return Some("output_norm.weight".into()),
        "lm_head.weight" => return Some("output.weight".into()),
        _ => {}
    }
    let rest = name.strip_prefix("model.layers.")?;
    let (index, part) = rest.split_once('.')?;
    let part = match part {
        "self_attn.q_proj.weight" => "attn_q.weight",
        "self_attn.k_proj.weight" => "attn_k.weight",
        "self_attn.v_proj.weight" => "attn_v.weight",
        "self_attn.o_proj.weight" => "attn_output.weight",
        "mlp.gate_proj.weight" => "ffn_gate.weight",
        "mlp.up_proj.weight" => "ffn_up.weight",
        "mlp.down_proj.weight" => "ffn_down.weight",
        "input_layernorm.weight" => "attn_norm.weight",
        "post_attention_layernorm.weight" => "ffn_norm.weight",
        _ => return None,
    };
    Some(format!("blk.{index}.{part}"))
}

/// Undo llama.cpp's converter permutation of a `[heads · head_dim, columns]` query or key
/// weight (row-major `values`): within each head, stored row `2i + j` is Hugging Face's row
/// `j · head_dim/2 + i`. `values` must hold exactly `heads · head_dim · columns` values.
pub fn unpermute_rows(
    values: &[f32],
    heads: usize,
    head_dim: usize,
    columns: usize,
) -> Result<Vec<f32>> {
    check_rows("unpermute_rows", values.len(), heads, head_dim, columns)?;
    Ok(move_rows(
        values,
        heads,
        head_dim,
        columns,
        Direction::ToHuggingFace,
    ))
}

/// Apply llama.cpp's converter permutation (the inverse of [`unpermute_rows`]): what a GGUF
/// writer stores for a Hugging Face query or key weight.
pub fn permute_rows(
    values: &[f32],
    heads: usize,
    head_dim: usize,
    columns: usize,
) -> Result<Vec<f32>> {
    check_rows("permute_rows", values.len(), heads, head_dim, columns)?;
    Ok(move_rows(
        values,
        heads,
        head_dim,
        columns,
        Direction::ToGguf,
    ))
}

/// Which way [`move_rows`] moves a query or key weight's rows.
enum Direction {
    /// From llama.cpp's interleaved order to Hugging Face's halves.
    ToHuggingFace,
    /// From Hugging Face's halves to llama.cpp's interleaved order.
    ToGguf,
}

/// Within each head, row `2i + j` of llama.cpp's order is row `j · head_dim/2 + i` of
/// Hugging Face's: move every row (`columns` elements: values, or a quantized row's bytes)
/// from one order to the other (sizes checked by the caller).
fn move_rows<T: Copy + Default>(
    values: &[T],
    heads: usize,
    head_dim: usize,
    columns: usize,
    direction: Direction,
) -> Vec<T> {
    let mut out = vec![T::default(); values.len()];
    let half = head_dim / 2;
    for head in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                let gguf = (head * head_dim + 2 * i + j) * columns;
                let hugging_face = (head * head_dim + j * half + i) * columns;
                let (from, to) = match direction {
                    Direction::ToHuggingFace => (gguf, hugging_face),
                    Direction::ToGguf => (hugging_face, gguf),
                };
                out[to..to + columns].copy_from_slice(&values[from..from + columns]);
            }
        }
    }
    out
}

/// `len` values are `[heads · head_dim, columns]` with an even `head_dim`.
fn check_rows(
    op: &'static str,
    len: usize,
    heads: usize,
    head_dim: usize,
    columns: usize,
) -> Result<()> {
    let expected = heads
        .checked_mul(head_dim)
        .and_then(|rows| rows.checked_mul(columns));
    if expected != Some(len) || !head_dim.is_multiple_of(2) {
        return Err(Error::invalid(
            op,
            format!(
                "{len} values are not [{heads} heads x {head_dim} (even) rows, {columns} columns]"
            ),
        ));
    }
    Ok(())
}

fn shape_error(context: &str, name: &str, found: &[usize], expected: &[usize]) -> Error {
    Error::format(
        context,
        format!("tensor `{name}` has shape {found:?}, the configuration needs {expected:?}"),
    )
}

/// How a GGUF file's block-quantized weights (Q4_0 ... Q6_K) are kept on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightStorage {
    /// In their block format: the projections, the output projection and the embeddings are
    /// `QuantizedMatrix`es read in place by the quantized kernels (a 4-bit model takes about
    /// a seventh of its f32 memory); they are frozen (LoRA adapters still train). Float
    /// tensors (F32, F16, BF16) are f32.
    #[default]
    Quantized,
    /// Every weight dequantized to f32 (trainable).
    F32,
}

impl LlamaForCausalLM {
    /// The model of a GGUF file (`general.architecture` `llama`) on `device`, its
    /// block-quantized weights kept quantized ([`WeightStorage::Quantized`]), the query and
    /// key rows put back in Hugging Face's layout.
    pub fn from_gguf(file: &GgufFile, device: &Device) -> Result<LlamaForCausalLM> {
        LlamaForCausalLM::from_gguf_as(file, device, WeightStorage::Quantized)
    }

    /// The model of a GGUF file with its weights kept as `storage` says.
    pub fn from_gguf_as(
        file: &GgufFile,
        device: &Device,
        storage: WeightStorage,
    ) -> Result<LlamaForCausalLM> {
        let config = LlamaConfig::from_gguf(file)?;
        let context = file.context().to_string();
        let mut fetch = |name: &str, shape: &[usize]| -> Result<Weight> {
            let stored = gguf_name(name).ok_or_else(|| {
                Error::format(&context, format!("no GGUF name for parameter `{name}`"))
            })?;
            let info = file.tensor_info(&stored).ok_or_else(|| {
                Error::format(
                    &context,
                    format!("the file has no tensor `{stored}` (for `{name}`)"),
                )
            })?;
            let found = info.shape();
            if found != shape {
                return Err(shape_error(&context, &stored, &found, shape));
            }
            // Query and key rows go back to Hugging Face's order (whole rows move, so a
            // quantized row's bytes move as they are).
            let heads = if name.ends_with("q_proj.weight") {
                Some(config.num_attention_heads)
            } else if name.ends_with("k_proj.weight") {
                Some(config.num_key_value_heads)
            } else {
                None
            };
            let format = info.ggml_type.quant_format();
            if let (WeightStorage::Quantized, Some(format), &[rows, columns]) =
                (storage, format, shape)
            {
                let bytes = file.tensor_bytes(&stored)?;
                let row_bytes = format.row_bytes(columns, "LlamaForCausalLM::from_gguf")?;
                let bytes = match heads {
                    Some(heads) => {
                        check_rows("from_gguf", bytes.len(), heads, config.head_dim, row_bytes)?;
                        move_rows(
                            bytes,
                            heads,
                            config.head_dim,
                            row_bytes,
                            Direction::ToHuggingFace,
                        )
                    }
                    None => bytes.to_vec(),
                };
                return Ok(Weight::Quantized(QuantizedMatrix::from_bytes(
                    format,
                    [rows, columns],
                    &bytes,
                    device,
                )?));
            }
            let (values, _) = file.tensor_f32(&stored)?;
            let values = match heads {
                Some(heads) => unpermute_rows(&values, heads, config.head_dim, shape[1])?,
                None => values,
            };
            Ok(Weight::Dense(Tensor::from_vec(values, shape, device)?))
        };
        LlamaForCausalLM::from_weights(&config, &mut fetch)
    }

    /// The model of a GGUF file at `path` (see [`LlamaForCausalLM::from_gguf`]).
    pub fn from_gguf_file(path: impl AsRef<Path>, device: &Device) -> Result<LlamaForCausalLM> {
        LlamaForCausalLM::from_gguf(&GgufFile::open(path)?, device)
    }

    /// The model of a Hugging Face folder: `config.json` and `model.safetensors` (every
    /// parameter by its Hugging Face name and shape; f16/bf16 converted to f32; the
    /// `rotary_emb.inv_freq` buffers some checkpoints carry are skipped; any other extra
    /// tensor is an error).
    pub fn from_pretrained(dir: impl AsRef<Path>, device: &Device) -> Result<LlamaForCausalLM> {
        let dir = dir.as_ref();
        let config = LlamaConfig::from_json_file(dir.join("config.json"))?;
        let weights_path = dir.join("model.safetensors");
        regular_file_metadata(&weights_path, MAX_WEIGHTS_BYTES, "model weights")?;
        let context = weights_path.display().to_string();
        let (mut tensors, _) = anygrad_nn::load_tensors(&weights_path, &Device::Cpu)?;
        tensors.retain(|name, _| !name.ends_with("rotary_emb.inv_freq"));
        if config.tie_word_embeddings {
            tensors.remove("lm_head.weight");
        }
        let mut fetch = |name: &str, shape: &[usize]| -> Result<Weight> {
            let tensor = tensors.remove(name).ok_or_else(|| {
                Error::format(&context, format!("the file has no tensor `{name}`"))
            })?;
            if tensor.shape() != shape {
                return Err(shape_error(&context, name, tensor.shape(), shape));
            }
            Ok(Weight::Dense(
                tensor.to_dtype(DType::F32)?.to_device(device)?,
            ))
        };
        let model = LlamaForCausalLM::from_weights(&config, &mut fetch)?;
        unexpected_tensors(&tensors, &context)?;
        Ok(model)
    }
}

fn unexpected_tensors(left: &BTreeMap<String, Tensor>, context: &str) -> Result<()> {
    if left.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = left.keys().map(String::as_str).take(10).collect();
    Err(Error::format(
        context,
        format!(
            "{} tensors the model does not have: {}",
            left.len(),
            names.join(", ")
        ),
    ))
}
