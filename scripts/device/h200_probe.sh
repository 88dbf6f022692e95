#!/usr/bin/env bash
# Probes on one NVIDIA H200 for the next optimizations: autocast ResNet-18 training (profile,
# and with the tensor-core convolutions on), MiniLM with the fused attention forced on, and
# MiniLM's autocast profile. No PyTorch.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_probe.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
. "$(dirname "$0")/lib.sh"
for amp in "" --amp; do
    bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp
    ANYGRAD_FUSED_ATTENTION=on bench minilm --device gpu:0 --batch 64 --sequence-length 128 \
        --seconds 2 $amp | sed "s/^/fused-attention /"
done
ANYGRAD_COOP_CONV=on bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2 \
    | sed "s/^/coop-conv /"
"$BIN" profile resnet18-train --device gpu:0 --batch 64 --amp > "$OUT/profile-train-amp.txt" 2>&1
ANYGRAD_COOP_CONV=on "$BIN" profile resnet18-train --device gpu:0 --batch 64 --amp \
    > "$OUT/profile-train-amp-coop.txt" 2>&1
"$BIN" profile minilm --device gpu:0 --batch 64 --amp > "$OUT/profile-minilm-amp.txt" 2>&1
for f in profile-train-amp profile-train-amp-coop profile-minilm-amp; do
    echo "== $f"; head -22 "$OUT/$f.txt"; grep -A24 "by shape" "$OUT/$f.txt"
done
tar czf /tmp/probe.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/probe.tgz "$OUT/"
