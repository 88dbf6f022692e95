#!/usr/bin/env bash
# A quick look on one NVIDIA H200 between measuring rounds: the doctor's tensor-core checks,
# MiniLM and autocast ResNet-18 training, composite and fused f16 attention, and the profiles
# that show where their time goes. No PyTorch: ratios come from scripts/device/h200_round.sh.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_quick.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
. "$(dirname "$0")/lib.sh"
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks|tensor cores" "$OUT/doctor.txt"
bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
for amp in "" --amp; do
    bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp
done
bench minilm-train --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 --amp
bench attention --device gpu:0 --attention-shape 8,12,512,64 --dtype f16 --seconds 1
bench attention --device gpu:0 --attention-shape 8,12,512,64 --dtype f16 --seconds 1 \
    --composite-attention
"$BIN" profile resnet18-train --device gpu:0 --batch 64 --amp > "$OUT/profile-train-amp.txt" 2>&1
"$BIN" profile minilm --device gpu:0 --batch 64 > "$OUT/profile-minilm.txt" 2>&1
"$BIN" profile minilm --device gpu:0 --batch 64 --amp > "$OUT/profile-minilm-amp.txt" 2>&1
for f in profile-train-amp profile-minilm profile-minilm-amp; do
    echo "== $f"; head -16 "$OUT/$f.txt"; grep -A12 "by shape" "$OUT/$f.txt"
done
tar czf /tmp/quick.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/quick.tgz "$OUT/"
