#!/usr/bin/env bash
# Data-parallel scaling on the H200 pair (`nvidia-h200-x2`): `DataParallel` ResNet-18
# training with the optimizer applied bucket by bucket during the exchange (the default) and
# after it (`ANYGRAD_OVERLAP_OPTIMIZER=0`), f32 and autocast, then single-device inference and
# training figures and profiles from the same binary, and PyTorch (DDP too) in the same call.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200x2_scaling.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200x2}
PYTORCH=${PYTORCH:-1}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log "warm the tuning cache"
bench resnet18-train --device gpu:0 --batch 64 --seconds 1 > /dev/null
for setting in "ANYGRAD_OVERLAP_OPTIMIZER=1" "ANYGRAD_OVERLAP_OPTIMIZER=0" \
    "ANYGRAD_OVERLAP_OPTIMIZER=1" "ANYGRAD_OVERLAP_OPTIMIZER=0"; do
    log "data parallel with $setting"
    env "$setting" "$BIN" bench resnet18-train --devices all --batch 64 --json \
        2>>"$OUT/log.txt" | sed "s/^/$setting /" | tee -a "$OUT/anygrad.jsonl"
done
log "data parallel, autocast"
bench resnet18-train --devices all --batch 64 --amp
log "one device"
bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 3
bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 3
bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
log "profiles"
"$BIN" profile resnet18-train --device gpu:0 --batch 64 > "$OUT/profile-train.txt" 2>&1
"$BIN" profile resnet18 --device gpu:0 --batch 64 > "$OUT/profile-infer.txt" 2>&1
if [ "$PYTORCH" = 1 ]; then
    log pytorch
    export PYTHONUNBUFFERED=1
    python3 bench/pytorch_reference.py resnet18 resnet18-train --batches 64 --true-f32 --amp \
        --device cuda --seconds 1 > "$OUT/pytorch.jsonl" 2>>"$OUT/log.txt"
    cat "$OUT/pytorch.jsonl"
    python3 bench/pytorch_ddp.py --batch 64 --seconds 2 --variants float32 float16-amp \
        > "$OUT/pytorch-ddp.jsonl" 2>>"$OUT/log.txt"
    cat "$OUT/pytorch-ddp.jsonl"
fi
