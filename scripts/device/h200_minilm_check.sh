#!/usr/bin/env bash
# MiniLM on one NVIDIA H200 after a matmul change: the doctor's summary, inference and
# training steps in f32 and autocast, ResNet-18 training f32 (no regression), the training
# profile's matmuls by shape, and PyTorch's MiniLM figures in the same call.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_minilm_check.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks" "$OUT/doctor.txt"
for amp in "" --amp; do
    bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp > /dev/null
    bench minilm-train --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp > /dev/null
done
bench resnet18-train --device gpu:0 --batch 64 --seconds 2 > /dev/null
"$BIN" profile minilm-train --device gpu:0 --batch 64 > "$OUT/profile-minilm-train.txt" 2>&1
grep -A14 "by shape" "$OUT/profile-minilm-train.txt"
python3 bench/pytorch_reference.py minilm minilm-train --amp --device cuda:0 --minilm-batch 64 \
    --minilm-length 128 --seconds 2 2>>"$OUT/log.txt" | grep -v environment > "$OUT/pytorch.jsonl"
python3 bench/compare.py "$OUT/anygrad.jsonl" "$OUT/pytorch.jsonl" | grep -E '^\|'
tar czf /tmp/check.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/check.tgz "$OUT/"
