#!/usr/bin/env bash
# A ResNet-18 check on one NVIDIA H200 between measuring rounds: the doctor, inference and
# training benches (f32 and autocast, batch 64; autocast training at batch 8), the inference
# profiles, and PyTorch's inference in the same call.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_resnet_check.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
. "$(dirname "$0")/lib.sh"
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks|fused with" "$OUT/doctor.txt"
bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2
bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2
bench resnet18-train --device gpu:0 --batch 64 --seconds 2
bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
bench resnet18-train --device gpu:0 --batch 8 --amp --seconds 1
"$BIN" profile resnet18 --device gpu:0 --batch 64 > "$OUT/profile-infer.txt" 2>&1
"$BIN" profile resnet18 --device gpu:0 --batch 64 --amp > "$OUT/profile-infer-amp.txt" 2>&1
"$BIN" profile resnet18-train --device gpu:0 --batch 8 --amp > "$OUT/profile-train-b8-amp.txt" 2>&1
for f in profile-infer profile-infer-amp profile-train-b8-amp; do
    echo "== $f"; head -14 "$OUT/$f.txt"; grep -A14 "by shape" "$OUT/$f.txt"
done
python3 bench/pytorch_reference.py resnet18 --batches 64 --true-f32 --amp --device cuda \
    --seconds 1 2>>"$OUT/log.txt" | grep -v environment | tee -a "$OUT/pytorch.jsonl"
tar czf /tmp/check.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/check.tgz "$OUT/"
