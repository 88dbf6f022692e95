#!/usr/bin/env bash
# Data-parallel scaling experiments on the H200 pair (`nvidia-h200-x2`): `DataParallel`
# ResNet-18 training with the bucket plan and device-instance settings of this commit and
# the ones it replaced, plus the single-device profiles that show where a step's time goes.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200x2_scaling.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200x2}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log "warm the tuning cache"
bench resnet18-train --device gpu:0 --batch 64 --seconds 1 > /dev/null
for setting in "ANYGRAD_BUCKET_TAIL_MB=4" "ANYGRAD_BUCKET_TAIL_MB=0.25" \
    "ANYGRAD_SEPARATE_INSTANCES=1" "ANYGRAD_BUCKET_MB=2" "ANYGRAD_BUCKET_MB=8" \
    "ANYGRAD_BUCKET_TAIL_MB=0.25"; do
    log "data parallel with $setting"
    env "$setting" "$BIN" bench resnet18-train --devices all --batch 64 --json \
        2>>"$OUT/log.txt" | sed "s/^/$setting /" | tee -a "$OUT/anygrad.jsonl"
done
log "profiles"
"$BIN" profile resnet18-train --device gpu:0 --batch 64 > "$OUT/profile-train.txt" 2>&1
"$BIN" profile resnet18 --device gpu:0 --batch 64 > "$OUT/profile-infer.txt" 2>&1
tail -5 "$OUT/profile-train.txt"
