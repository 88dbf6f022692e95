"""``anygrad.models``: ready-made models beyond torchvision's (those are
``anygrad.vision.models``). ``SentenceTransformer`` encodes sentences with a BERT encoder
directory in the sentence-transformers layout (``all-MiniLM-L6-v2`` and its kin: tokenizer,
encoder, pooling and normalization as the directory's ``modules.json`` says), with
``sentence_transformers.SentenceTransformer.encode``'s arguments. Nothing is downloaded: pass
the model's directory."""

import os

from . import _native


class SentenceTransformer:
    """A sentence encoder loaded from ``model_name_or_path`` (a directory) onto ``device``."""

    def __init__(self, model_name_or_path, device=None):
        path = os.fspath(model_name_or_path)
        if not os.path.isdir(path):
            raise ValueError(
                f"SentenceTransformer: {path!r} is not a directory; anygrad downloads nothing, so pass "
                "the directory of a sentence-transformers model (config.json, model.safetensors, "
                "tokenizer.json, modules.json)"
            )
        self._encoder = _native.SentenceEncoder(path, device)
        self.model_path = path

    @property
    def device(self):
        """The device the encoder runs on."""
        return self._encoder.device

    @property
    def max_seq_length(self):
        """The longest input in tokens (longer sentences are truncated)."""
        return self._encoder.max_seq_length

    def get_sentence_embedding_dimension(self):
        """The length of one embedding."""
        return self._encoder.encode(["a"], 1).shape[1]

    def encode(self, sentences, batch_size=32, show_progress_bar=None, output_value="sentence_embedding", convert_to_numpy=True, convert_to_tensor=False, device=None, normalize_embeddings=False):
        """The embeddings of ``sentences`` (a string gives one vector): a numpy array by
        default, a tensor with ``convert_to_tensor=True``, a list of tensors with
        ``convert_to_numpy=False``."""
        if output_value != "sentence_embedding":
            raise ValueError(f"SentenceTransformer.encode: output_value={output_value!r} is not supported (sentence_embedding only)")
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        if not all(isinstance(text, str) for text in texts):
            raise TypeError("SentenceTransformer.encode: sentences must be a string or a list of strings")
        embeddings = self._encoder.encode(texts, batch_size)
        if normalize_embeddings:
            from .nn import functional as F

            embeddings = F.normalize(embeddings, p=2.0, dim=1)
        if convert_to_tensor:
            return embeddings[0] if single else embeddings
        if convert_to_numpy:
            array = embeddings.cpu().numpy()
            return array[0] if single else array
        rows = list(embeddings.unbind(0))
        return rows[0] if single else rows
