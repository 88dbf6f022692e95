#!/usr/bin/env python3
"""Hugging Face transformers' figures for `anygrad generate`'s workload (the `generate`
workload of scripts/device/run.sh): a LlamaForCausalLM of SmolLM2-135M's configuration (30
layers, hidden 576, 9 query heads over 3 key/value heads, vocabulary 49152, tied embeddings)
with random weights on CUDA: `generate()` of --tokens greedy tokens after a 5-token prompt
(batch 1, the KV cache on), and the forward pass of a --prefill-token prompt, in f32 and f16.
Speed depends on the shapes, not the values, so no weights file is needed. One JSON line per
measurement.

    python3 bench/transformers_generate.py --tokens 128 --prefill 512
"""

import argparse
import json
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def smollm2_config():
    return LlamaConfig(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=8192,
        rms_norm_eps=1e-5,
        rope_theta=100000.0,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    device = "cuda"
    prompt = torch.tensor([[504, 3575, 282, 4649, 314]], device=device)
    long_prompt = torch.arange(args.prefill, device=device).remainder(40000).unsqueeze(0) + 100
    for dtype in (torch.float32, torch.float16):
        torch.manual_seed(0)
        model = LlamaForCausalLM(smollm2_config()).to(device=device, dtype=dtype).eval()
        for round_index in range(args.rounds):
            torch.cuda.synchronize()
            start = time.perf_counter()
            with torch.no_grad():
                out = model.generate(prompt, max_new_tokens=args.tokens, min_new_tokens=args.tokens,
                                     do_sample=False, use_cache=True, pad_token_id=2)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            generated = out.shape[1] - prompt.shape[1]
            print(json.dumps({"framework": "transformers", "workload": "generate",
                              "dtype": str(dtype), "round": round_index,
                              "generated_tokens": generated,
                              "tokens_per_second": generated / seconds}), flush=True)
            torch.cuda.synchronize()
            start = time.perf_counter()
            with torch.no_grad():
                model(long_prompt, use_cache=True)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            print(json.dumps({"framework": "transformers", "workload": "prefill",
                              "dtype": str(dtype), "round": round_index,
                              "prompt_tokens": args.prefill,
                              "tokens_per_second": args.prefill / seconds}), flush=True)
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
