#!/usr/bin/env python3
"""Compare `anygrad generate` with Hugging Face transformers on the same GGUF file (CPU, f32).

For each prompt: the token ids of both tokenizers, the greedy continuation of both models from
the same prompt ids (anygrad gets transformers' ids through --prompt-ids, so the models are
compared independently of the tokenizers), and the last-position logits (anygrad's 50 largest,
from --json) against transformers' within a tolerance relative to the largest logit.

Needs torch, transformers and gguf (not part of CI):

    pip install torch transformers gguf
    cargo build --release -p anygrad-cli
    python scripts/llm/compare_transformers.py --gguf PATH/SmolLM2-135M-Instruct.Q4_1.gguf

Exits non-zero when a continuation or a logit differs.
"""

import argparse
import json
import os
import subprocess
import sys

DEFAULT_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village,",
    "<|im_start|>user\nWhat is 12 times 7?<|im_end|>\n<|im_start|>assistant\n",
]


def anygrad(binary, gguf, args):
    command = [binary, "generate", "--model", gguf, "--device", "cpu", "--json"] + args
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"anygrad failed: {' '.join(command)}\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--anygrad", default="target/release/anygrad")
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest logit difference, relative to the largest |logit|")
    parser.add_argument("--prompt", action="append", help="prompts (default: a fixed set)")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    directory, name = os.path.split(os.path.abspath(args.gguf))
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    eos = tokenizer.eos_token_id

    failures = 0
    report = []
    for prompt in args.prompt or DEFAULT_PROMPTS:
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        ours_text = anygrad(args.anygrad, args.gguf, ["--prompt", prompt, "--max-tokens", "1"])
        ours = anygrad(args.anygrad, args.gguf,
                       ["--prompt-ids", ",".join(map(str, ids)), "--max-tokens", str(args.max_tokens)])
        with torch.no_grad():
            input_ids = torch.tensor([ids])
            logits = model(input_ids).logits[0, -1].double()
            generated = model.generate(input_ids, max_new_tokens=args.max_tokens, do_sample=False,
                                       eos_token_id=eos, pad_token_id=eos)[0, len(ids):].tolist()
        scale = logits.abs().max().item()
        difference = max(abs(logits[i].item() - value) for i, value in ours["top_logits"])
        their_top = torch.topk(logits, 50).indices.tolist()
        our_top = [i for i, _ in ours["top_logits"]]
        same_tokens = ours["generated_ids"] == generated
        same_tokenizer = ours_text["prompt_ids"] == ids
        close = difference <= args.tolerance * scale
        failures += (not same_tokens) + (not close)
        entry = {
            "prompt": prompt,
            "prompt_ids": ids,
            "tokenizer_ids_equal": same_tokenizer,
            "transformers_generated_ids": generated,
            "anygrad_generated_ids": ours["generated_ids"],
            "greedy_equal": same_tokens,
            "max_logit_difference": difference,
            "largest_abs_logit": scale,
            "relative_difference": difference / scale,
            "top50_order_equal": our_top == their_top,
            "anygrad_text": ours["text"],
            "transformers_text": tokenizer.decode(generated, skip_special_tokens=True),
            "anygrad_prompt_tokens_per_second": ours["prompt_tokens_per_second"],
            "anygrad_generated_tokens_per_second": ours["generated_tokens_per_second"],
        }
        report.append(entry)
        print(json.dumps(entry, ensure_ascii=False))
    print(f"{len(report)} prompts, {failures} failures", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
