#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad-nn's transformer pieces.

What: writes `crates/nn/tests/golden/transformer.json`: tanh GELU (output and gradient),
RMSNorm (output, input and weight gradients), Embedding with padding_idx (weight gradient),
MultiheadAttention (sequence-first, key padding + float attention mask, output and
head-averaged weights), TransformerEncoderLayer (post-norm ReLU batch-first with padding;
pre-norm GELU sequence-first with a causal mask) and TransformerDecoderLayer (post-norm and
pre-norm, causal target mask, memory padding). Modules run in eval mode with their state dicts
stored under PyTorch's names, values rounded to f32. The Rust test
`crates/nn/tests/transformer_golden.rs` loads the same weights and compares.

How to run: with a Python that has torch, `python scripts/golden/generate_transformer.py`.
"""

import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_PATH = os.path.join(REPO, "crates", "nn", "tests", "golden", "transformer.json")


def record(t):
    t = t.detach()
    if t.dtype == torch.bool:
        return {"shape": list(t.shape), "dtype": "bool", "data": t.flatten().tolist()}
    if t.dtype in (torch.int64, torch.int32):
        return {"shape": list(t.shape), "dtype": "int32", "data": t.flatten().tolist()}
    data = [None if x == float("-inf") else x for x in t.float().flatten().tolist()]
    return {"shape": list(t.shape), "dtype": "float32", "data": data}


def state(module):
    return {name: record(t) for name, t in module.state_dict().items()}


def randomize(module, gen):
    # Non-trivial norms and biases so every parameter matters.
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3 + (1.0 if p.dim() == 1 and
                                                                 p.shape[0] <= 8 else 0.0))


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(16)
    out = {"generator": "scripts/golden/generate_transformer.py", "torch": torch.__version__}

    x = (torch.randn(3, 5, generator=gen) * 2).requires_grad_(True)
    y = F.gelu(x, approximate="tanh")
    w = torch.randn(y.shape, generator=gen)
    (y * w).sum().backward()
    out["gelu_tanh"] = {"x": record(x), "w": record(w), "y": record(y), "grad_x": record(x.grad)}

    norm = nn.RMSNorm([4])
    randomize(norm, gen)
    x = torch.randn(2, 3, 4, generator=gen).requires_grad_(True)
    y = norm(x)
    w = torch.randn(y.shape, generator=gen)
    (y * w).sum().backward()
    out["rms_norm"] = {"state": state(norm), "x": record(x), "w": record(w), "y": record(y),
                       "grad_x": record(x.grad), "grad_weight": record(norm.weight.grad)}

    emb = nn.Embedding(6, 3, padding_idx=2)
    ids = torch.tensor([[0, 2, 5], [2, 2, 1]])
    y = emb(ids)
    w = torch.randn(y.shape, generator=gen)
    (y * w).sum().backward()
    out["embedding_padding"] = {"state": state(emb), "ids": record(ids), "w": record(w),
                                "y": record(y), "grad_weight": record(emb.weight.grad)}

    mha = nn.MultiheadAttention(8, 2).eval()
    randomize(mha, gen)
    q = torch.randn(5, 2, 8, generator=gen)
    kv = torch.randn(6, 2, 8, generator=gen)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, 4:] = True
    attn_mask = torch.randn(5, 6, generator=gen)
    y, weights = mha(q, kv, kv, key_padding_mask=padding, attn_mask=attn_mask,
                     need_weights=True)
    out["multihead_attention"] = {"state": state(mha), "query": record(q), "key": record(kv),
                                  "key_padding_mask": record(padding),
                                  "attn_mask": record(attn_mask), "y": record(y),
                                  "weights": record(weights)}

    layers = []
    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()
    randomize(enc, gen)
    src = torch.randn(2, 5, 8, generator=gen)
    src_padding = torch.zeros(2, 5, dtype=torch.bool)
    src_padding[0, 3:] = True
    y = enc(src, src_key_padding_mask=src_padding)
    layers.append({"name": "encoder_post_relu_batch_first", "kind": "encoder",
                   "norm_first": False, "gelu": False, "batch_first": True,
                   "state": state(enc), "src": record(src), "src_mask": None,
                   "src_key_padding_mask": record(src_padding), "y": record(y)})

    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu",
                                     norm_first=True).eval()
    randomize(enc, gen)
    src = torch.randn(4, 3, 8, generator=gen)
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    y = enc(src, src_mask=causal)
    layers.append({"name": "encoder_pre_gelu_causal", "kind": "encoder", "norm_first": True,
                   "gelu": True, "batch_first": False, "state": state(enc),
                   "src": record(src), "src_mask": record(causal),
                   "src_key_padding_mask": None, "y": record(y)})

    for norm_first in (False, True):
        dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, norm_first=norm_first,
                                         batch_first=True).eval()
        randomize(dec, gen)
        tgt = torch.randn(2, 4, 8, generator=gen)
        memory = torch.randn(2, 6, 8, generator=gen)
        causal = nn.Transformer.generate_square_subsequent_mask(4)
        memory_padding = torch.zeros(2, 6, dtype=torch.bool)
        memory_padding[1, 5:] = True
        y = dec(tgt, memory, tgt_mask=causal, memory_key_padding_mask=memory_padding)
        layers.append({"name": f"decoder_norm_first_{norm_first}", "kind": "decoder",
                       "norm_first": norm_first, "gelu": False, "batch_first": True,
                       "state": state(dec), "tgt": record(tgt), "memory": record(memory),
                       "tgt_mask": record(causal),
                       "memory_key_padding_mask": record(memory_padding), "y": record(y)})
    out["layers"] = layers

    with open(OUT_PATH, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {OUT_PATH}")


if __name__ == "__main__":
    main()
