#!/usr/bin/env bash
# The autotuner's effect on an NVIDIA H200: matmul and ResNet-18 with `ANYGRAD_AUTOTUNE=off`
# (the fixed heuristics) and `on` (candidates timed per shape, cache file in $OUT), and
# PyTorch's figures in the same call.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_tuning.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log doctor
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; tail -2 "$OUT/doctor.txt"
for mode in on off on; do
    log "autotune $mode"
    export ANYGRAD_AUTOTUNE=$mode
    bench matmul --device gpu:0 --sizes 1024,2048,4096 --seconds 1
    bench matmul --device gpu:0 --dtype f16 --sizes 4096 --seconds 1
    bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 3
    bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 3
    bench resnet18-train --device gpu:0 --batch 64 --seconds 3
    bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
done
cat "$OUT/cache/autotune.json" 2>/dev/null | head -80
log pytorch
export PYTHONUNBUFFERED=1
python3 bench/pytorch_reference.py matmul resnet18 resnet18-train \
    --batches 64 --true-f32 --amp --device cuda --seconds 1 \
    > "$OUT/pytorch.jsonl" 2>>"$OUT/log.txt"
cat "$OUT/pytorch.jsonl"
