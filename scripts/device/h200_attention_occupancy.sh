#!/usr/bin/env bash
# How many attention workgroups an H200 runs at once: `anygrad profile attention` at one
# sequence of 512 tokens and a growing number of 64-wide heads, each kernel's device time.
# A kernel whose time steps up every N workgroups runs N at once (132 multiprocessors).
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_attention_occupancy.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
for heads in ${HEADS:-11 22 33 44 55 66 77 88 99 110 132 165 198 264}; do
    echo "== heads $heads" | tee -a "$OUT/occupancy.txt"
    "$BIN" profile attention --device gpu:0 --batch 1 --heads "$heads" --tokens 512 \
        --steps 20 --kernels 6 --kernel-width 70 2>&1 | grep -E "Attention" | tee -a "$OUT/occupancy.txt"
done
