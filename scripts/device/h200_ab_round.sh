#!/usr/bin/env bash
# A/B of two builds on ResNet-18 (autocast inference twice in turn, f32 inference, autocast
# training), PyTorch's autocast inference before and after, the new build's tuner log and both
# profiles, then the core crate's conv_nhwc kernel tests on tensor cores.
# Carry .devbin/anygrad-old, .devbin/anygrad and .devbin/core_tests (see h200_kernel_tests.sh).
# Usage (repo root): OUT=/tmp/out bash scripts/device/h200_ab_round.sh
set -u
mkdir -p $OUT
run() { # name binary args
  n=$1; b=$2; shift 2
  env ANYGRAD_CACHE_DIR=/tmp/cache-$(basename $b) $b bench "$@" --json 2>>$OUT/log.txt >> $OUT/anygrad-$(basename $b).jsonl
  echo "$n $(basename $b) $(tail -1 $OUT/anygrad-$(basename $b).jsonl | grep -o '"median_ms":[0-9.]*\|"note":"[^"]*"' | tr '\n' ' ')" | tee -a $OUT/summary.txt
}
# tuner picks of the new binary (debug log of its first run)
ANYGRAD_CACHE_DIR=/tmp/cache-anygrad ANYGRAD_LOG=anygrad_core=debug .devbin/anygrad bench resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 1 --json 2>&1 >/dev/null | grep autotune | sed "s/.*autotune //" | cut -c1-900 > $OUT/tune-log.txt
run warm .devbin/anygrad-old resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 1
python3 bench/pytorch_reference.py resnet18 --batches 64 --amp --device cuda --seconds 2 2>/dev/null | grep -o '"dtype": "[^"]*", "size": "64", "median_ms": [0-9.]*' | tee -a $OUT/summary.txt
for i in 1 2; do for b in .devbin/anygrad-old .devbin/anygrad; do run r$i $b resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2; done; done
for b in .devbin/anygrad-old .devbin/anygrad; do run f32 $b resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2; run train $b resnet18-train --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 3; done
python3 bench/pytorch_reference.py resnet18 --batches 64 --amp --device cuda --seconds 2 2>/dev/null | grep -o '"dtype": "[^"]*", "size": "64", "median_ms": [0-9.]*' | tee -a $OUT/summary.txt
ANYGRAD_CACHE_DIR=/tmp/cache-anygrad .devbin/anygrad profile resnet18 --device gpu:0 --batch 64 --amp --kernel-width 100 > $OUT/profile-new.txt 2>&1
ANYGRAD_CACHE_DIR=/tmp/cache-anygrad-old .devbin/anygrad-old profile resnet18 --device gpu:0 --batch 64 --amp --kernel-width 100 > $OUT/profile-old.txt 2>&1
ANYGRAD_CACHE_DIR=/tmp/cache-tests ANYGRAD_REQUIRE_GPU=1 timeout 200 .devbin/core_tests conv_nhwc 2>&1 | grep -E "^test |test result|panicked|assert" | head -30 | tee $OUT/kernel-tests.txt
