#!/usr/bin/env bash
# One-GPU ResNet-18 check on the H200: inference and training, f32 and autocast, and the
# training profile's reduction and input-gradient lines. Usage: OUT=/tmp/out scripts/device/quick_resnet.sh
set -u
BIN=.devbin/anygrad
export ANYGRAD_CACHE_DIR=$OUT/cache
b() { $BIN bench "$@" --json 2>>$OUT/log.txt | tee -a $OUT/anygrad.jsonl | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(d['bench'],d['dtype'],d['size'],round(d['value'],1),d.get('peak_memory_bytes'))"; }
b resnet18-train --device gpu:0 --batch 64 --seconds 1 > /dev/null
b resnet18 --device gpu:0 --batch 64 --no-cpu-baseline --seconds 2
b resnet18 --device gpu:0 --batch 64 --amp --no-cpu-baseline --seconds 2
b resnet18-train --device gpu:0 --batch 64 --seconds 2
b resnet18-train --device gpu:0 --batch 64 --amp --seconds 2
$BIN profile resnet18-train --device gpu:0 --batch 64 > $OUT/profile-train.txt 2>&1
grep -E '^(sum|conv2d_backward_input) ' $OUT/profile-train.txt
grep -E 'conv2d_backward_input' $OUT/profile-train.txt | head -20
