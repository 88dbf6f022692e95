//! `anygrad.models`' native part: sentence embeddings from a BERT encoder directory in the
//! sentence-transformers layout (the library's `SentenceEncoder`: tokenizer, encoder, pooling
//! and normalization as `modules.json` says), for `anygrad.models.SentenceTransformer`.

use std::path::PathBuf;

use anygrad::models::bert::SentenceEncoder;
use pyo3::prelude::*;

use crate::device::{device_or_cpu, PyDevice};
use crate::errors::{run, value_error};
use crate::tensor::PyTensor;

/// A loaded sentence encoder.
#[pyclass(name = "SentenceEncoder", module = "anygrad._native")]
pub struct PySentenceEncoder {
    encoder: SentenceEncoder,
}

#[pymethods]
impl PySentenceEncoder {
    /// Load the model directory `path` (`config.json`, `model.safetensors`, `tokenizer.json`,
    /// and sentence-transformers' `modules.json` / pooling configuration) onto `device`.
    #[new]
    #[pyo3(signature = (path, device=None))]
    fn new(py: Python<'_>, path: PathBuf, device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let device = device_or_cpu(device)?;
        let encoder = py.allow_threads(|| {
            run("SentenceTransformer", || {
                SentenceEncoder::from_dir(&path, &device)
            })
        })?;
        Ok(PySentenceEncoder { encoder })
    }

    /// The embeddings of `sentences` (`[len(sentences), dim]`, float32), `batch_size` at a
    /// time.
    #[pyo3(signature = (sentences, batch_size=32))]
    fn encode(
        &self,
        py: Python<'_>,
        sentences: Vec<String>,
        batch_size: usize,
    ) -> PyResult<PyTensor> {
        const OP: &str = "SentenceTransformer.encode";
        if batch_size == 0 {
            return Err(value_error(OP, "batch_size must be at least 1"));
        }
        let encoder = &self.encoder;
        let result = py.allow_threads(|| {
            run(OP, || {
                let mut parts = Vec::new();
                for chunk in sentences.chunks(batch_size) {
                    let texts: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    parts.push(encoder.encode(&texts)?);
                }
                let refs: Vec<&anygrad::Tensor> = parts.iter().collect();
                match refs.len() {
                    0 => anygrad::Tensor::zeros(&[0, 0], anygrad::DType::F32, encoder.device()),
                    1 => Ok(parts.remove(0)),
                    _ => anygrad::Tensor::cat(&refs, 0),
                }
            })
        })?;
        Ok(PyTensor::wrap(result))
    }

    /// The longest input in tokens; longer sentences are truncated.
    #[getter]
    fn max_seq_length(&self) -> usize {
        self.encoder.max_seq_length()
    }

    /// Whether the embeddings are scaled to unit length (a `Normalize` module).
    #[getter]
    fn normalizes(&self) -> bool {
        self.encoder.normalizes()
    }

    /// The device the encoder runs on.
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice::of(self.encoder.device())
    }
}

/// Add the sentence encoder to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PySentenceEncoder>()
}
