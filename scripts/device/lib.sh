# Helpers of scripts/device/run.sh, sourced by it after its options are read: every workload
# writes into $OUT, runs the anygrad binary $BIN on $DEVICE and, unless $PYTORCH is 0, runs
# PyTorch's side of the same workload (bench/pytorch_reference.py) in the same call.
# Variables read: BIN, OUT, DEVICE, PYTORCH.

# Prints a section heading and keeps it in $OUT/log.txt.
log() { echo "== $*" | tee -a "$OUT/log.txt"; }

# Prints an error line and stops the script.
fail() {
    echo "error: $*" >&2
    exit 2
}

# Stops with an error unless $1 is an executable file; $2 names the option that sets it.
need_executable() {
    [ -f "$1" ] && [ -x "$1" ] || fail "$2 $1 is not an executable file (build it first, see --help)"
}

# How many NVIDIA GPUs the machine has (0 without nvidia-smi).
gpu_count() {
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L 2>/dev/null | grep -c '^GPU'
    else
        echo 0
    fi
}

# Reads JSON lines of `anygrad bench --json` (or PyTorch's) on standard input and prints one
# short line each: label, bench, dtype, size, value and unit, median ms and peak memory.
summarize() {
    python3 -c '
import json, sys
label = sys.argv[1]
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        d = json.loads(line)
    except ValueError:
        print(label, line[:200])
        continue
    if "error" in d:
        print(label, d.get("bench"), d.get("dtype"), d.get("size"), "error:", d["error"])
        continue
    value = d.get("value")
    if isinstance(value, float):
        value = round(value, 2)
    fields = [label, d.get("bench"), d.get("dtype"), d.get("size"), value, d.get("unit")]
    if "median_ms" in d:
        fields += ["median_ms", round(d["median_ms"], 4)]
    if d.get("peak_memory_bytes") is not None:
        fields += ["peak", d["peak_memory_bytes"]]
    print(" ".join(str(f) for f in fields if f not in (None, "")))
' "$1"
}

# bench_to FILE LABEL ARGS...: `$BIN bench ARGS --json`, its JSON lines appended to $OUT/FILE
# and summarized under LABEL; its log goes to $OUT/log.txt.
bench_to() {
    local file=$1 label=$2
    shift 2
    "$BIN" bench "$@" --json 2>>"$OUT/log.txt" | tee -a "$OUT/$file" | summarize "$label"
}

# bench ARGS...: one anygrad bench into $OUT/anygrad.jsonl, the file bench/compare.py reads.
bench() { bench_to anygrad.jsonl anygrad "$@"; }

# profile_to NAME ARGS...: `$BIN profile ARGS` into $OUT/profile-NAME.txt.
profile_to() {
    local name=$1
    shift
    "$BIN" profile "$@" > "$OUT/profile-$name.txt" 2>&1
}

# show_profile NAME [ROWS]: the head of a profile and its table of matmuls and convolutions by
# shape.
show_profile() {
    local file="$OUT/profile-$1.txt" rows=${2:-16}
    echo "== profile $1"
    head -"$rows" "$file"
    grep -A"$rows" "by shape" "$file"
}

# Whether PyTorch's side runs: --no-pytorch turns it off, and so does a python3 without torch
# (said once).
pytorch_on() {
    [ "$PYTORCH" = 1 ] || return 1
    if ! python3 -c 'import torch' >/dev/null 2>&1; then
        log "PyTorch is not importable by python3: its figures are left out"
        PYTORCH=0
        return 1
    fi
}

# reference_to FILE ARGS...: bench/pytorch_reference.py ARGS, JSON lines appended to $OUT/FILE
# and summarized (all but the environment line, which bench/compare.py reads for its notes).
reference_to() {
    local file=$1
    shift
    python3 bench/pytorch_reference.py "$@" 2>>"$OUT/log.txt" | tee -a "$OUT/$file" \
        | grep -v '"environment"' | summarize pytorch
}

# The comparison table of anygrad's and PyTorch's lines, into $OUT/comparison.md.
compare() {
    [ -s "$OUT/anygrad.jsonl" ] && [ -s "$OUT/pytorch.jsonl" ] || return 0
    python3 bench/compare.py "$OUT/anygrad.jsonl" "$OUT/pytorch.jsonl" > "$OUT/comparison.md" 2>&1
    cat "$OUT/comparison.md"
}

# The doctor's summary and failures, kept whole in $OUT/doctor.txt.
run_doctor() {
    "$BIN" doctor > "$OUT/doctor.txt" 2>&1
    grep -E "FAIL|fix:" "$OUT/doctor.txt" | head -20
    tail -3 "$OUT/doctor.txt"
}

# Unpacks the Vulkan loader's Debian packages in $1 over / (a machine without libvulkan) and
# points the loader at the NVIDIA driver's manifest where one is installed.
unpack_vulkan_loaders() {
    local deb found=0
    for deb in "$1"/*.deb; do
        [ -f "$deb" ] || continue
        dpkg -x "$deb" / && found=1
    done
    [ "$found" = 1 ] || fail "--vulkan-loaders $1 holds no .deb files"
    ldconfig
    local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then
        export VK_DRIVER_FILES=$icd
    fi
}

# Packs everything under $OUT into $OUT/results.tgz (for a transfer that returns few files).
pack_results() {
    local archive
    archive=$(mktemp /tmp/anygrad-results.XXXXXX.tgz)
    tar czf "$archive" -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv "$archive" "$OUT/results.tgz"
}
