#!/usr/bin/env bash
# Batches above one GPU buffer on an NVIDIA H200 (issue: tensors above the 2 GiB storage
# binding are stored in pieces and processed in slices): ResNet-18 inference and training at
# batches whose activations exceed one buffer, `--batch auto`, and PyTorch at the same
# batches in the same call. Also the data-parallel figure when two GPUs are present.
# Usage (repo root): BIN=.devbin/final/anygrad OUT=/tmp/out scripts/device/h200_large_batches.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log inference above one buffer
bench resnet18 --device gpu:0 --batch 64,512,1024,2048 --no-cpu-baseline --seconds 2
bench resnet18 --device gpu:0 --batch 1024 --amp --no-cpu-baseline --seconds 2
bench resnet18 --device gpu:0 --batch auto --no-cpu-baseline --seconds 1
log training above one buffer
bench resnet18-train --device gpu:0 --batch 1024 --seconds 3
bench resnet18-train --device gpu:0 --batch 1024 --amp --seconds 3
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    log data parallel
    bench resnet18-train --devices all --batch 64 --seconds 3
fi
log pytorch
export PYTHONUNBUFFERED=1
python3 bench/pytorch_reference.py resnet18 --batches 64 512 1024 2048 --true-f32 --amp \
    --device cuda --seconds 1 > "$OUT/pytorch.jsonl" 2>>"$OUT/log.txt"
python3 bench/pytorch_reference.py resnet18-train --train-batch 1024 --true-f32 --amp \
    --device cuda --seconds 2 >> "$OUT/pytorch.jsonl" 2>>"$OUT/log.txt"
cat "$OUT/pytorch.jsonl"
