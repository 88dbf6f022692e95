#!/usr/bin/env python3
"""Generate the tiny-BERT golden directory and file for crates/models/tests/bert_golden.rs.

A randomly initialised `transformers.BertModel` of all-MiniLM-L6-v2's architecture but tiny
(2 layers, hidden 32, 4 heads, intermediate 64, 16 positions, vocabulary of 100 WordPiece
tokens) is wrapped in a sentence-transformers model (Transformer, mean Pooling, Normalize,
max_seq_length 10) and saved as a complete sentence-transformers directory:

    crates/models/tests/golden/tiny-bert/   config.json, model.safetensors, tokenizer.json,
                                            modules.json, 1_Pooling/config.json,
                                            sentence_bert_config.json, ...

`model.safetensors` is then rewritten the way Hugging Face files come: the word embeddings
stored as bfloat16 (the model's copy is rounded to bfloat16 first, so the references use the
same values), the int64 `embeddings.position_ids` buffer and the `pooler.dense` layer
included. LayerNorm weights and biases are perturbed from 1 and 0 so that they matter.

crates/models/tests/golden/bert_tiny.json holds, for three fixed id sequences with padding
masks and token types, the last hidden states ([3, 8, 32]), and for a few sentences the token
ids of the Hugging Face tokenizer and sentence-transformers' embeddings ([n, 32]).

    /tmp/torch-venv/bin/python scripts/golden/generate_bert.py
"""
import json
import os
import shutil
import tempfile

import torch
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer, models
from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer
from tokenizers.processors import TemplateProcessing
from transformers import BertConfig, BertModel, BertTokenizerFast

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "models", "tests", "golden")
DIR = os.path.join(ROOT, "tiny-bert")

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "is", "good", "bad", "movie", "film",
         "very", "not", "i", "like", "it", "and", "was", "fun", "play", "##s", "##ed", "##ing",
         "run", "fast", "slow", "big", "small", "red", "blue", ".", ",", "!", "?", "'"]


def main():
    torch.manual_seed(16)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + letters
    vocab += [f"##{c}" for c in letters]
    vocab = list(dict.fromkeys(vocab))[:100]
    while len(vocab) < 100:
        vocab.append(f"[unused{len(vocab)}]")
    work = tempfile.mkdtemp()
    with open(os.path.join(work, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    core = Tokenizer(WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    core.normalizer = BertNormalizer(lowercase=True)
    core.pre_tokenizer = BertPreTokenizer()
    core.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer = BertTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=16, type_vocab_size=2, hidden_act="gelu",
                        layer_norm_eps=1e-12, pad_token_id=0)
    model = BertModel(config, add_pooling_layer=True).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.add_(0.2 * torch.randn_like(p))
            elif "LayerNorm.bias" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
        w = model.embeddings.word_embeddings.weight
        w.copy_(w.to(torch.bfloat16).to(torch.float32))
    model.save_pretrained(work, safe_serialization=True)
    tokenizer.save_pretrained(work)

    transformer = models.Transformer(work, max_seq_length=10)
    transformer.auto_model = model
    pooling = models.Pooling(32, pooling_mode="mean")
    st = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu")
    st.eval()
    if os.path.exists(DIR):
        shutil.rmtree(DIR)
    st.save(DIR)
    for extra in ["README.md", "vocab.txt", "config_sentence_transformers.json"]:
        path = os.path.join(DIR, extra)
        if os.path.exists(path):
            os.remove(path)

    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    state["embeddings.word_embeddings.weight"] = state["embeddings.word_embeddings.weight"].to(
        torch.bfloat16)
    state["embeddings.position_ids"] = torch.arange(16, dtype=torch.int64).unsqueeze(0)
    save_file(state, os.path.join(DIR, "model.safetensors"), metadata={"format": "pt"})

    ids = [[2, 7, 8, 9, 10, 11, 3, 0],
           [2, 12, 13, 14, 3, 0, 0, 0],
           [2, 15, 16, 3, 17, 18, 19, 3]]
    mask = [[1, 1, 1, 1, 1, 1, 1, 0],
            [1, 1, 1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 1, 1, 1, 1]]
    types = [[0] * 8, [0] * 8, [0, 0, 0, 0, 1, 1, 1, 1]]
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                       token_type_ids=torch.tensor(types)).last_hidden_state
    sentences = ["The cat sat on the mat.", "I like it!",
                 "a very very very big red dog runs fast and plays",
                 "Zebras? Not fun."]
    with torch.no_grad():
        embeddings = st.encode(sentences, convert_to_tensor=True, batch_size=8).cpu()
    encoded = st.tokenize(sentences)
    golden = {
        "ids": ids, "mask": mask, "types": types,
        "hidden_shape": list(hidden.shape),
        "hidden": [round(float(v), 7) for v in hidden.flatten()],
        "sentences": sentences,
        "sentence_ids": encoded["input_ids"].tolist(),
        "sentence_mask": encoded["attention_mask"].tolist(),
        "embeddings": [[round(float(v), 7) for v in row] for row in embeddings],
        "versions": {"torch": torch.__version__,
                     "transformers": __import__("transformers").__version__,
                     "sentence_transformers": __import__("sentence_transformers").__version__},
    }
    with open(os.path.join(ROOT, "bert_tiny.json"), "w") as f:
        json.dump(golden, f)
        f.write("\n")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
