#!/usr/bin/env bash
# One measuring session on an NVIDIA H200 machine (one or two GPUs): the doctor, anygrad's
# benches and PyTorch's in the same call, so every ratio compares runs on the same card.
# Usage (from the repo root, with a release binary at $BIN and results written to $OUT):
#   BIN=.devbin/final/anygrad OUT=/tmp/out scripts/device/h200_session.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
"$BIN" devices 2>&1 | tee -a "$OUT/log.txt"
log doctor
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; tail -3 "$OUT/doctor.txt"
log anygrad benches
bench matmul --device gpu:0 --sizes 1024,4096 --seconds 1
bench matmul --device gpu:0 --dtype f16 --sizes 4096 --seconds 1
bench elementwise --device gpu:0 --seconds 1
bench overhead --device gpu:0 --seconds 1
bench mlp --device gpu:0 --seconds 1
bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2
bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2
ANYGRAD_COOP_CONV=on bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2
bench resnet18-train --device gpu:0 --batch 64 --seconds 2
bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
bench resnet18-train --device gpu:0 --batch 8 --seconds 1
bench resnet18-train --device gpu:0 --batch 8 --amp --seconds 1
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    log data parallel
    bench resnet18-train --devices all --batch 64 --seconds 3
    ANYGRAD_BUCKET_MB=4 bench resnet18-train --devices all --batch 64 --seconds 3
    bench resnet18-train --devices all --batch 64 --amp --seconds 3
fi
log profile
"$BIN" profile resnet18-train --device gpu:0 --batch 64 --steps 2 > "$OUT/profile-train.txt" 2>&1
tail -30 "$OUT/profile-train.txt"
log pytorch
export PYTHONUNBUFFERED=1
python3 bench/pytorch_reference.py matmul elementwise overhead mlp resnet18 resnet18-train \
    --batches 64 --true-f32 --amp --device cuda --seconds 1 \
    > "$OUT/pytorch.jsonl" 2>>"$OUT/log.txt"
cat "$OUT/pytorch.jsonl"
python3 bench/pytorch_reference.py resnet18-train --train-batch 8 --true-f32 --amp --device cuda \
    --seconds 1 > "$OUT/pytorch-b8.jsonl" 2>>"$OUT/log.txt"
cat "$OUT/pytorch-b8.jsonl"
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    python3 bench/pytorch_ddp.py --batch 64 --seconds 3 --variants float32 float32-tf32 \
        > "$OUT/pytorch-ddp.jsonl" 2>>"$OUT/log.txt"
    cat "$OUT/pytorch-ddp.jsonl"
fi
