#!/usr/bin/env bash
# Where MiniLM training's host time goes on one NVIDIA H200: the training step with fusion on
# and off and per execution mode, and the pipelines compiled during the bench (debug log).
# Usage (from the repo root): BIN=.devbin/anygrad OUT=/tmp/out scripts/device/h200_minilm_host.sh
set -u
BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-h200}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | python3 -c "
import sys, json
for line in sys.stdin:
    d = json.loads(line)
    print(d['bench'], d['dtype'], d['size'], round(d['value'], 1))"; }
which perf || echo "no perf"
ANYGRAD_LOG=anygrad_core=debug "$BIN" bench minilm-train --device gpu:0 --seconds 2 \
    > /dev/null 2> "$OUT/debug.txt"
echo "pipelines compiled: $(grep -c 'compiled a pipeline' "$OUT/debug.txt")"
sed 's/\x1b\[[0-9;]*m//g' "$OUT/debug.txt" | grep -o 'kernel=[A-Za-z]*' | sort | uniq -c | sort -rn | head
bench minilm-train --device gpu:0 --seconds 2
ANYGRAD_FUSION=off bench minilm-train --device gpu:0 --seconds 2 | sed 's/^/fusion-off /'
ANYGRAD_EXECUTION_MODE=throughput bench minilm-train --device gpu:0 --seconds 2 | sed 's/^/throughput /'
