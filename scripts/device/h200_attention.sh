#!/usr/bin/env bash
# Attention on an NVIDIA H200: the doctor (every kernel against the CPU, the sort kernels
# included), `anygrad bench attention` (the fused kernel and the composite) at the issue's
# shape and longer sequences, and
# PyTorch's `F.scaled_dot_product_attention` in the same call.
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_attention.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl"; }
nvidia-smi -L | tee -a "$OUT/log.txt"
log doctor
"$BIN" doctor > "$OUT/doctor.txt" 2>&1; grep -E "FAIL|checks" "$OUT/doctor.txt"
log attention
for shape in 8,12,512,64 8,12,1024,64 2,12,2048,64; do
    for dtype in f16 f32; do
        bench attention --device gpu:0 --attention-shape $shape --dtype $dtype --seconds 1
        bench attention --device gpu:0 --attention-shape $shape --dtype $dtype --seconds 1 \
            --composite-attention
    done
done
log pytorch
export PYTHONUNBUFFERED=1
for shape in "8 12 512 64" "8 12 1024 64" "2 12 2048 64"; do
    for dtype in f16 f32; do
        python3 bench/pytorch_reference.py attention --attention-shape $shape \
            --attention-dtype $dtype --device cuda --seconds 1 2>>"$OUT/log.txt" \
            | grep -v environment | tee -a "$OUT/pytorch.jsonl"
    done
done
# The image-folder pipeline (issue: data loading keeps the GPU busy): 10,000 MNIST test images
# as PNG folders, the loader alone and ResNet-18 training with it, then PyTorch's same script.
if [ -x "${EXAMPLE:-}" ] && [ -d "${MNIST:-}" ]; then
    log image folder
    "$EXAMPLE" /tmp/mnist-png --from-mnist "$MNIST" --count 10000 --epochs 0 | tail -1
    for workers in 0 4 8; do
        "$EXAMPLE" /tmp/mnist-png --loader-only --workers $workers 2>&1 | tail -1 | tee -a "$OUT/image_folder.txt"
    done
    "$EXAMPLE" /tmp/mnist-png --epochs 2 --workers 8 2>&1 | tail -2 | tee -a "$OUT/image_folder.txt"
    for workers in 0 8; do
        python3 bench/pytorch_image_folder.py /tmp/mnist-png --workers $workers --batch 64 --epochs 0 \
            2>>"$OUT/log.txt" | tee -a "$OUT/image_folder.txt"
    done
    python3 bench/pytorch_image_folder.py /tmp/mnist-png --workers 8 --batch 64 --epochs 2 \
        2>>"$OUT/log.txt" | tee -a "$OUT/image_folder.txt"
fi
