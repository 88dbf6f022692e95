#!/usr/bin/env bash
# A last check of a release binary on one NVIDIA H200: the doctor's summary and a few benches
# (ResNet-18 f32 inference and training, MiniLM autocast inference and training).
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_final.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks|\^T" "$OUT/doctor.txt"
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl" | python3 -c "
import sys, json
for line in sys.stdin:
    d = json.loads(line)
    print(d['bench'], d['dtype'], d['size'], round(d['value'], 1), d.get('peak_memory_bytes'))"; }
bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 1
bench resnet18-train --device gpu:0 --batch 64 --seconds 1
bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 1 --amp
bench minilm-train --device gpu:0 --batch 64 --sequence-length 128 --seconds 1 --amp
rm -rf "$OUT/cache"
