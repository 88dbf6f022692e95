#!/usr/bin/env bash
# Op profiles on an NVIDIA H200: MiniLM inference (f32, autocast) and training, ResNet-18
# inference and training under autocast, each `anygrad profile` table into $OUT.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_profiles.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
p() { name=$1; shift; "$BIN" profile "$@" --device gpu:0 > "$OUT/profile-$name.txt" 2>&1; head -16 "$OUT/profile-$name.txt"; }
p minilm minilm --batch 64 --tokens 128
p minilm-amp minilm --batch 64 --tokens 128 --amp
p minilm-train minilm-train --batch 64 --tokens 128
p resnet18-amp resnet18 --batch 64 --amp
p resnet18-train-amp resnet18-train --batch 64 --amp
