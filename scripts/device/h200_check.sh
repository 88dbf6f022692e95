#!/usr/bin/env bash
# One-GPU check on the H200: ResNet-18 and MiniLM benches, ResNet-18 profiles (inference and
# training) and the autotuner's Winograd choices. Usage: OUT=/tmp/out scripts/device/h200_check.sh
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export ANYGRAD_CACHE_DIR=$OUT/cache
B=.devbin/anygrad
b() { $B bench "$@" --json 2>>$OUT/log.txt | tee -a $OUT/anygrad.jsonl | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(d['bench'],d['dtype'],d['size'],round(d['value'],1),d.get('peak_memory_bytes'))"; }
b resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2
b resnet18-train --device gpu:0 --batch 64 --seconds 2
b minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2
b minilm --device gpu:0 --batch 64 --sequence-length 128 --seconds 2 --amp
$B profile resnet18 --device gpu:0 --batch 64 > $OUT/profile-infer.txt 2>&1
$B profile resnet18-train --device gpu:0 --batch 64 > $OUT/profile-train.txt 2>&1
grep -A16 "by shape" $OUT/profile-infer.txt
head -12 $OUT/profile-infer.txt
grep -E "conv2d_backward_input " $OUT/profile-train.txt | head -12
grep winograd $OUT/cache/autotune.json | head -30
