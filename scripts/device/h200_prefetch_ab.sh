#!/usr/bin/env bash
# ResNet-18 autocast inference with and without the weight prefetch (`ANYGRAD_PREFETCH`), one
# process each in turn (each tunes its own cache), PyTorch's same bench before and after, and
# the profiles of both: the comparison in docs/PERFORMANCE.md.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_prefetch_ab.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
run() { # name, prefetch on or off
    ANYGRAD_CACHE_DIR=/tmp/cache-$1 ANYGRAD_PREFETCH=$2 "$BIN" bench resnet18 --device gpu:0 \
        --batch 64 --amp --no-cpu-baseline --seconds 3 --json 2>>"$OUT/log.txt" \
        | tee -a "$OUT/anygrad.jsonl" | grep -o '"median_ms":[0-9.]*' | sed "s/^/$1 /"
}
reference() {
    python3 bench/pytorch_reference.py resnet18 --batches 64 --amp --device cuda --seconds 3 \
        2>>"$OUT/log.txt" | grep -v environment | tee -a "$OUT/pytorch.jsonl" \
        | grep -o '"dtype": "[^"]*", "size": "64", "median_ms": [0-9.]*'
}
reference
for round in 1 2; do
    run "off$round" off
    run "on$round" on
done
reference
for mode in on off; do
    ANYGRAD_CACHE_DIR=/tmp/cache-${mode}1 ANYGRAD_PREFETCH=$mode "$BIN" profile resnet18 \
        --device gpu:0 --batch 64 --amp --kernel-width 100 > "$OUT/profile-$mode.txt" 2>&1
done
