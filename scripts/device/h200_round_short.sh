#!/usr/bin/env bash
# The short measuring round on one NVIDIA H200 (about 5 minutes; `h200_round.sh` is the full
# one): the doctor, anygrad's benches (matmul, overhead, MLP, ResNet-18 inference and training
# at batch 64 and 8 in f32 and autocast, autocast inference three times more in separate
# processes, attention, MiniLM autocast inference), the autocast inference profile, then
# PyTorch's same workloads in the same call (its autocast inference once more at the end, in a
# process of its own) and the comparison table.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_round_short.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl" | cut -c1-200; }
reference() { python3 bench/pytorch_reference.py "$@" 2>>"$OUT/log.txt" | grep -v environment; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log doctor
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks" "$OUT/doctor.txt" | head -20
log anygrad
bench matmul --device gpu:0 --sizes 1024,4096 --seconds 1
bench matmul --device gpu:0 --dtype f16 --sizes 4096 --seconds 1
bench overhead --device gpu:0 --seconds 1
bench mlp --device gpu:0 --seconds 1
bench resnet18-train --device gpu:0 --batch 64 --seconds 1 > /dev/null
bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2
bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2
for repeat in 1 2 3; do
    "$BIN" bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2 --json \
        2>>"$OUT/log.txt" | tee -a "$OUT/repeats.jsonl" | grep -o '"median_ms":[0-9.]*'
done
bench resnet18-train --device gpu:0 --batch 64 --seconds 2
bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
bench resnet18-train --device gpu:0 --batch 8 --seconds 1
bench resnet18-train --device gpu:0 --batch 8 --amp --seconds 1
bench attention --device gpu:0 --attention-shape 8,12,512,64 --dtype f16 --seconds 1
bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 --amp
bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2
"$BIN" profile resnet18 --device gpu:0 --batch 64 --amp --kernel-width 100 \
    > "$OUT/profile-infer-amp.txt" 2>&1
log pytorch
export PYTHONUNBUFFERED=1
reference matmul overhead mlp resnet18 resnet18-train --batches 64 --true-f32 --amp \
    --device cuda --seconds 1 | tee -a "$OUT/pytorch.jsonl" | cut -c1-200
reference resnet18-train --train-batch 8 --true-f32 --amp --device cuda --seconds 1 \
    | tee -a "$OUT/pytorch-b8.jsonl" | cut -c1-200
reference attention --attention-shape 8 12 512 64 --attention-dtype f16 --device cuda \
    --seconds 1 | tee -a "$OUT/pytorch.jsonl" | cut -c1-200
reference minilm --amp --device cuda:0 --minilm-batch 64 --minilm-length 128 --seconds 2 \
    | tee -a "$OUT/pytorch.jsonl" | cut -c1-200
reference resnet18 --batches 64 --amp --device cuda --seconds 2 \
    | tee -a "$OUT/repeats.jsonl" | grep -o '"dtype": "[^"]*", "size": "64", "median_ms": [0-9.]*'
python3 bench/compare.py "$OUT/anygrad.jsonl" "$OUT/pytorch.jsonl" > "$OUT/comparison.md" 2>&1
cat "$OUT/comparison.md" | head -60
