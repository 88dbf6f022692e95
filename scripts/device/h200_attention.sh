#!/usr/bin/env bash
# Attention on an NVIDIA H200: the doctor (every kernel against the CPU, the sort kernels
# included), `anygrad bench attention` at the issue's shape and longer sequences, and
# PyTorch's `F.scaled_dot_product_attention` in the same call.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_attention.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log doctor
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks" "$OUT/doctor.txt"
log attention
for shape in 8,12,512,64 8,12,1024,64 2,12,2048,64; do
    bench attention --device gpu:0 --attention-shape $shape --dtype f16 --seconds 1
    bench attention --device gpu:0 --attention-shape $shape --dtype f32 --seconds 1
done
log pytorch
export PYTHONUNBUFFERED=1
for shape in "8 12 512 64" "8 12 1024 64" "2 12 2048 64"; do
    for dtype in f16 f32; do
        python3 bench/pytorch_reference.py attention --attention-shape $shape \
            --attention-dtype $dtype --device cuda --seconds 1 2>>"$OUT/log.txt" \
            | grep -v environment | tee -a "$OUT/pytorch.jsonl"
    done
done
