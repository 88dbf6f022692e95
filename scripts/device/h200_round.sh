#!/usr/bin/env bash
# One measuring round on one NVIDIA H200 for the ResNet-18 and transformer targets: the doctor,
# anygrad's benches (matmul, ResNet-18 inference and
# training in f32 and autocast at batch 64 and 8, fused attention with and without the
# cooperative forward, MiniLM), the ResNet-18 profiles, then PyTorch's same workloads in the
# same call, cuDNN's kernel times (`bench/pytorch_kernel_profile.py`) and the comparison table.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_round.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log doctor
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks|cooperative" "$OUT/doctor.txt" | head -20
log matmul
bench matmul --device gpu:0 --sizes 1024,4096 --seconds 1
bench matmul --device gpu:0 --dtype f16 --sizes 4096 --seconds 1
log small benches
bench elementwise --device gpu:0 --seconds 1
bench overhead --device gpu:0 --seconds 1
bench mlp --device gpu:0 --seconds 1
log resnet18
bench resnet18-train --device gpu:0 --batch 64 --seconds 1 > /dev/null
bench resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2
bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2
# Repeat calls of the autocast inference (separate processes), kept out of anygrad.jsonl: one
# process in several has run 2-4x slower (PERFORMANCE.md), so the round records the spread.
for repeat in 1 2 3; do
    "$BIN" bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2 --json \
        2>>"$OUT/log.txt" | tee -a "$OUT/repeats.jsonl"
done
# Kept out of anygrad.jsonl, so the comparison shows the default choices.
ANYGRAD_AUTOTUNE_FORCE=conv2d:winograd4 "$BIN" bench resnet18 --device gpu:0 --batch 64 \
    --no-cpu-baseline --seconds 2 --json 2>>"$OUT/log.txt" | tee -a "$OUT/forced.jsonl"
bench resnet18-train --device gpu:0 --batch 64 --seconds 2
bench resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
bench resnet18-train --device gpu:0 --batch 8 --seconds 1
bench resnet18-train --device gpu:0 --batch 8 --amp --seconds 1
log attention and minilm
bench attention --device gpu:0 --attention-shape 8,12,512,64 --dtype f16 --seconds 1
# Kept out of anygrad.jsonl (the comparison would take this row for the default's).
ANYGRAD_COOP_ATTENTION=off "$BIN" bench attention --device gpu:0 --attention-shape 8,12,512,64 \
    --dtype f16 --seconds 1 --json 2>>"$OUT/log.txt" | tee -a "$OUT/coop-off.jsonl"
bench attention --device gpu:0 --attention-shape 8,12,1024,64 --dtype f16 --seconds 1
ANYGRAD_COOP_ATTENTION=off "$BIN" bench minilm-train --device gpu:0 --batch 64 \
    --sequence-length 128 --seconds 2 --amp --json 2>>"$OUT/log.txt" | tee -a "$OUT/coop-off.jsonl"
for amp in "" --amp; do
    bench minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp
    bench minilm-train --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 $amp
done
log profiles
"$BIN" profile resnet18 --device gpu:0 --batch 64 > "$OUT/profile-infer.txt" 2>&1
"$BIN" profile resnet18-train --device gpu:0 --batch 64 > "$OUT/profile-train.txt" 2>&1
"$BIN" profile minilm-train --device gpu:0 --batch 64 > "$OUT/profile-minilm-train.txt" 2>&1
"$BIN" profile minilm --device gpu:0 --batch 64 > "$OUT/profile-minilm.txt" 2>&1
"$BIN" profile resnet18 --device gpu:0 --batch 64 --amp > "$OUT/profile-infer-amp.txt" 2>&1
"$BIN" profile resnet18-train --device gpu:0 --batch 64 --amp > "$OUT/profile-train-amp.txt" 2>&1
"$BIN" profile attention --device gpu:0 --batch 8 --tokens 512 > "$OUT/profile-attention.txt" 2>&1
head -25 "$OUT/profile-train.txt"
grep -A16 "by shape" "$OUT/profile-infer-amp.txt"
grep -o '"conv2d[^"]*x\[64, 64, 56, 56\][^"]*"[^}]*}' "$OUT/cache/autotune.json" | head -8
log pytorch
export PYTHONUNBUFFERED=1
python3 bench/pytorch_reference.py matmul elementwise overhead mlp resnet18 resnet18-train \
    --batches 64 --true-f32 --amp --device cuda --seconds 1 2>>"$OUT/log.txt" \
    | grep -v environment | tee -a "$OUT/pytorch.jsonl"
python3 bench/pytorch_reference.py resnet18-train --train-batch 8 --true-f32 --amp --device cuda \
    --seconds 1 2>>"$OUT/log.txt" | grep -v environment | tee -a "$OUT/pytorch-b8.jsonl"
python3 bench/pytorch_reference.py attention --attention-shape 8 12 512 64 --attention-dtype f16 \
    --device cuda --seconds 1 2>>"$OUT/log.txt" | grep -v environment | tee -a "$OUT/pytorch.jsonl"
python3 bench/pytorch_reference.py attention --attention-shape 8 12 1024 64 --attention-dtype f16 \
    --device cuda --seconds 1 2>>"$OUT/log.txt" | grep -v environment | tee -a "$OUT/pytorch.jsonl"
python3 bench/pytorch_reference.py minilm minilm-train --amp --device cuda:0 --minilm-batch 64 \
    --minilm-length 128 --seconds 2 2>>"$OUT/log.txt" | grep -v environment \
    | tee -a "$OUT/pytorch.jsonl"
# cuDNN's own kernels for the same ResNet-18 steps (torch.profiler), to read the profiles against.
python3 bench/pytorch_kernel_profile.py > "$OUT/pytorch-kernels.txt" 2>&1
python3 bench/compare.py "$OUT/anygrad.jsonl" "$OUT/pytorch.jsonl" > "$OUT/comparison.md" 2>&1
cat "$OUT/comparison.md"
# The device tool returns a few files only: pack them into one.
tar czf /tmp/round.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/round.tgz "$OUT/"
