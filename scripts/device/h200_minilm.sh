#!/usr/bin/env bash
# MiniLM (all-MiniLM-L6-v2's BERT encoder, random weights) on an NVIDIA H200: `anygrad bench
# minilm` (sentence embeddings, batch 64 x 128 tokens) in f32 and under f16 autocast, and
# `anygrad bench minilm-train` (AdamW steps without and with gradient checkpointing of the
# encoder layers), then PyTorch's same workloads from bench/pytorch_reference.py in the same
# call, and the comparison table.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_minilm.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log anygrad minilm
for amp in "" --amp; do
    bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp
    bench minilm-train --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp
done
log pytorch minilm
export PYTHONUNBUFFERED=1
python3 bench/pytorch_reference.py minilm minilm-train --amp --device cuda:0 \
    --minilm-batch 64 --minilm-length 128 --seconds 2 2>>"$OUT/log.txt" \
    | grep -v environment | tee -a "$OUT/pytorch.jsonl"
python3 bench/compare.py "$OUT/anygrad.jsonl" "$OUT/pytorch.jsonl" | tee "$OUT/comparison.md"
