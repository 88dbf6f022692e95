#!/usr/bin/env bash
# A/B of two builds on ResNet-18 training (autocast twice in turn, then f32; autocast inference
# once each), PyTorch's autocast training in the same call, the new build's training profile,
# and the core crate's pooling, split-sum, convolution-gradient and kept-copy tests on the H200.
# Carry .devbin/anygrad-old, .devbin/anygrad and .devbin/core_tests (see h200_kernel_tests.sh).
# Usage (repo root): OUT=/tmp/out bash scripts/device/h200_train_ab.sh
set -u
mkdir -p $OUT
run() { # name binary args
  n=$1; b=$2; shift 2
  env ANYGRAD_CACHE_DIR=/tmp/cache-$(basename $b) $b bench "$@" --json 2>>$OUT/log.txt >> $OUT/anygrad-$(basename $b).jsonl
  echo "$n $(basename $b) $(tail -1 $OUT/anygrad-$(basename $b).jsonl | grep -o '"median_ms":[0-9.]*\|"peak_memory_bytes":[0-9]*' | tr '\n' ' ')" | tee -a $OUT/summary.txt
}
ANYGRAD_CACHE_DIR=/tmp/cache-tests ANYGRAD_REQUIRE_GPU=1 timeout 240 .devbin/core_tests pool split_sums conv_nhwc conv_backward weight_cache 2>&1 | grep -E "^test |test result|panicked|assert" | head -40 | tee $OUT/kernel-tests.txt
for i in 1 2; do for b in .devbin/anygrad-old .devbin/anygrad; do run amp$i $b resnet18-train --device gpu:0 --batch 64 --amp --seconds 3; done; done
for b in .devbin/anygrad-old .devbin/anygrad; do run f32 $b resnet18-train --device gpu:0 --batch 64 --seconds 2; done
for b in .devbin/anygrad-old .devbin/anygrad; do run infer-amp $b resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2; done
python3 bench/pytorch_reference.py resnet18-train --batches 64 --amp --device cuda --seconds 2 2>/dev/null | grep -o '"dtype": "[^"]*", "size": "64", "median_ms": [0-9.]*' | tee -a $OUT/summary.txt
ANYGRAD_CACHE_DIR=/tmp/cache-anygrad .devbin/anygrad profile resnet18-train --device gpu:0 --batch 64 --amp --steps 3 --kernels 120 --kernel-width 150 > $OUT/profile-train-new.txt 2>&1
