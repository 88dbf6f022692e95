# Shared by the H200 scripts that print a one-line summary per bench: sourced after BIN and
# OUT are set. Sets the autotuner's cache under $OUT and defines `bench ARGS...`, which runs
# `anygrad bench ARGS --json`, appends the JSON line to $OUT/anygrad.jsonl and prints
# `bench dtype size value peak-bytes`.
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
bench() { "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/anygrad.jsonl" | python3 -c "
import sys, json
for line in sys.stdin:
    d = json.loads(line)
    print(d['bench'], d['dtype'], d['size'], round(d['value'], 1), d.get('peak_memory_bytes'))"; }
