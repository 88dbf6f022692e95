#!/usr/bin/env bash
# Measurements and checks on a GPU machine, one workload per argument: the doctor, benchmark
# rounds with PyTorch's figures from the same call, profiles, A/B comparisons of two builds or
# settings, the hardware kernel tests, data-parallel scaling and MPI. `run.sh --help` lists
# the workloads and options; docs/BENCHMARKS.md says how the results are read.
set -u
cd "$(dirname "$0")/../.." || exit 2

usage() {
    cat <<'EOF'
usage: scripts/device/run.sh [OPTIONS] WORKLOAD...

Runs each WORKLOAD in turn on one GPU machine, from the repository root, with a release build
of the anygrad command ($BIN). Results go to $OUT: anygrad.jsonl and pytorch.jsonl (JSON lines
of `anygrad bench --json` and bench/pytorch_reference.py), comparison.md (bench/compare.py),
profile-*.txt, doctor.txt and log.txt; the autotuner's cache is $OUT/cache.

Workloads:
  doctor               the adapters (`anygrad devices`) and `anygrad doctor`: every kernel
                       against the CPU
  round                a measuring round: matmul, elementwise, overhead, MLP, ResNet-18
                       inference and training (f32 and autocast, batch 64 and 8, autocast
                       inference three more times in processes of their own), attention,
                       MiniLM, the profiles, PyTorch's same workloads, cuDNN's kernel times
                       and the comparison table; with --short about 5 minutes
  resnet               ResNet-18 inference and training (f32 and autocast), their profiles,
                       the autotuner's Winograd choices, PyTorch's ResNet-18
  attention            `bench attention` at 8x12x512x64, 8x12x1024x64 and 2x12x2048x64, f16
                       and f32, fused kernel and composite; PyTorch's scaled_dot_product_attention
  attention-occupancy  `profile attention` at 512 tokens for a growing number of heads: a
                       kernel whose time steps up every N workgroups runs N at once (--heads)
  minilm               all-MiniLM-L6-v2 inference and training steps (f32 and autocast), the
                       training profile, PyTorch's same workloads and the comparison
  minilm-host          where MiniLM training's host time goes: pipelines compiled, fusion on
                       and off, the throughput execution mode
  profiles             `anygrad profile` tables: ResNet-18 inference and training (f32 and
                       autocast), MiniLM inference (f32 and autocast) and training, attention
  tuning               the autotuner's effect: matmul and ResNet-18 with ANYGRAD_AUTOTUNE on,
                       off and on again, and PyTorch's figures
  large-batches        ResNet-18 at batches above one GPU buffer (inference up to 2048,
                       training at 1024, --batch auto), PyTorch at the same batches
  image-folder         the image-folder pipeline on 10,000 MNIST images written as PNG files:
                       the loader alone and ResNet-18 training with it, then PyTorch's
                       (needs --example and --mnist)
  ab                   A/B of two builds or settings on ResNet-18, in turn in one call:
                       autocast inference and training twice each, f32 once each, PyTorch
                       before and after, the autotuner's log and both builds' profiles
                       (--old-bin, --old-env, --new-env)
  prefetch-ab          `ab` with ANYGRAD_PREFETCH=off against on, one binary
  kernel-tests         the core crate's GPU kernel tests that need tensor cores, from a test
                       binary built beforehand (--tests, --test-filter)
  suite                the whole test suite from test binaries built and packed beforehand
                       (--suite; docs/TESTING.md says how), every capability required
                       (ANYGRAD_REQUIRE_COOP=1 and the rest), --jobs binaries at a time, each
                       in its crate's directory; the skips checked against .ci/skip-allowlist
  generate             `anygrad generate` on a GGUF model (--gguf): 128 greedy tokens and a
                       512-token prompt (--prompt-ids), the weights quantized and dequantized
                       to f32, three rounds each (the first compiles and tunes), JSON lines in
                       generate.jsonl; transformers' generate() and prefill on a Llama of
                       SmolLM2-135M's shapes (bench/transformers_generate.py). Where the model
                       cannot travel, carry its skeleton and fill it with random weights there
                       (scripts/llm/random_gguf.py skeleton, then fill)
  python               the Python package (--python-package): bench/pytorch_reference.py run
                       on it with --framework anygrad (the per-op overhead, the digits MLP
                       epoch, ResNet-18 inference and training, f32 and autocast) beside
                       `anygrad bench`'s same workloads and PyTorch's; two comparison tables
                       (Python against Rust, Python against PyTorch)
  scaling              data-parallel ResNet-18 training over every GPU (two or more): the
                       optimizer during and after the gradient exchange, autocast, one-device
                       figures and profiles, PyTorch and PyTorch DDP
  mpi                  two MPI ranks of `bench resnet18-train --distributed` (--mpi-bin,
                       --mpi-debs)

Options:
  --bin PATH           the anygrad binary (default: $BIN, else target/release/anygrad)
  --out DIR            where results go (default: $OUT, else /tmp/anygrad-device)
  --device DEV         the GPU the one-device workloads use (default gpu:0)
  --no-pytorch         leave out PyTorch's figures (otherwise left out only when python3
                       cannot import torch)
  --short              round: the short round
  --pack               at the end, pack everything under $OUT into $OUT/results.tgz
  --vulkan-loaders DIR before anything, unpack the Vulkan loader's .deb files in DIR over /
                       and point VK_DRIVER_FILES at the NVIDIA driver's manifest (machines
                       without libvulkan)
  --old-bin PATH       ab: the build to compare against (default: the --bin build)
  --old-env 'V=X ...'  ab: environment settings of the old side
  --new-env 'V=X ...'  ab: environment settings of the new side
  --tests PATH         kernel-tests: the test binary (default .devbin/core_tests)
  --test-filter 'A B'  kernel-tests: test name filters (default: conv_nhwc conv_coop
                       attention_coop matmul_coop conv_epilogue)
  --suite PATH         suite: the packed test binaries (default .devbin/tests.tar.xz)
  --jobs N             suite: test binaries run at once (default 4)
  --python-package DIR python: the `anygrad` package folder with its extension built in it
                       (_native.abi3.so; default .devbin/python/anygrad)
  --heads 'N ...'      attention-occupancy: head counts (default 11 22 33 ... 264)
  --example PATH       image-folder: the built image_folder example
  --mnist DIR          image-folder: a directory with MNIST's IDX files
  --images N           image-folder: images written (default 10000)
  --mpi-bin PATH       mpi: an anygrad built with --features mpi (default: the --bin build)
  --gguf PATH          generate: the GGUF model (default .devbin/model.gguf)
  --mpi-debs DIR       mpi: OpenMPI's .deb files, unpacked into /opt/anygrad-mpi when the
                       machine has no mpirun (default .mpi)
  -h, --help           this text

Settings of the anygrad command apply to every run through the environment, e.g.
ANYGRAD_FUSED_ATTENTION=on or ANYGRAD_COOP_CONV=on (docs/ENVIRONMENT.md).

Building what the machine runs, here:
  cargo build --release -p anygrad-cli                 # target/release/anygrad
  cargo test --release -p anygrad-core --lib --no-run  # prints target/release/deps/anygrad_core-HASH
  cp target/release/deps/anygrad_core-HASH .devbin/core_tests && strip .devbin/core_tests

Examples:
  scripts/device/run.sh --bin .devbin/anygrad doctor round
  scripts/device/run.sh --bin .devbin/anygrad --short --pack round
  scripts/device/run.sh --bin .devbin/anygrad --old-bin .devbin/anygrad-old ab kernel-tests
  scripts/device/run.sh --test-filter 'pool split_sums conv_nhwc conv_backward weight_cache' \
      kernel-tests
  ANYGRAD_COOP_CONV=on scripts/device/run.sh --no-pytorch resnet
EOF
}

WORKLOADS=(doctor round resnet attention attention-occupancy minilm minilm-host profiles tuning
    large-batches image-folder ab prefetch-ab kernel-tests suite generate python scaling mpi)

BIN=${BIN:-target/release/anygrad}
OUT=${OUT:-/tmp/anygrad-device}
DEVICE=gpu:0
PYTORCH=1
SHORT=0
PACK=0
LOADERS=
OLD_BIN=
OLD_ENV=
NEW_ENV=
TESTS=.devbin/core_tests
TEST_FILTER="conv_nhwc conv_coop attention_coop matmul_coop conv_epilogue"
SUITE=.devbin/tests.tar.xz
JOBS=4
PYTHON_PACKAGE=.devbin/python/anygrad
HEADS="11 22 33 44 55 66 77 88 99 110 132 165 198 264"
EXAMPLE=
MNIST=
IMAGES=10000
MPI_BIN=
MPI_DEBS=.mpi
GGUF=.devbin/model.gguf
selected=()

# Reads the value of option $1 ($2, which must be present).
value_of() {
    [ "$#" -ge 2 ] || {
        echo "error: option $1 needs a value (see --help)" >&2
        exit 2
    }
    printf '%s' "$2"
}

while [ "$#" -gt 0 ]; do
    case $1 in
        -h | --help)
            usage
            exit 0
            ;;
        --bin) BIN=$(value_of "$@") || exit 2; shift ;;
        --out) OUT=$(value_of "$@") || exit 2; shift ;;
        --device) DEVICE=$(value_of "$@") || exit 2; shift ;;
        --no-pytorch) PYTORCH=0 ;;
        --short) SHORT=1 ;;
        --pack) PACK=1 ;;
        --vulkan-loaders) LOADERS=$(value_of "$@") || exit 2; shift ;;
        --old-bin) OLD_BIN=$(value_of "$@") || exit 2; shift ;;
        --old-env) OLD_ENV=$(value_of "$@") || exit 2; shift ;;
        --new-env) NEW_ENV=$(value_of "$@") || exit 2; shift ;;
        --tests) TESTS=$(value_of "$@") || exit 2; shift ;;
        --test-filter) TEST_FILTER=$(value_of "$@") || exit 2; shift ;;
        --suite) SUITE=$(value_of "$@") || exit 2; shift ;;
        --jobs) JOBS=$(value_of "$@") || exit 2; shift ;;
        --python-package) PYTHON_PACKAGE=$(value_of "$@") || exit 2; shift ;;
        --heads) HEADS=$(value_of "$@") || exit 2; shift ;;
        --example) EXAMPLE=$(value_of "$@") || exit 2; shift ;;
        --mnist) MNIST=$(value_of "$@") || exit 2; shift ;;
        --images) IMAGES=$(value_of "$@") || exit 2; shift ;;
        --mpi-bin) MPI_BIN=$(value_of "$@") || exit 2; shift ;;
        --mpi-debs) MPI_DEBS=$(value_of "$@") || exit 2; shift ;;
        --gguf) GGUF=$(value_of "$@") || exit 2; shift ;;
        -*)
            echo "error: unknown option $1 (see --help)" >&2
            exit 2
            ;;
        *)
            if ! printf '%s\n' "${WORKLOADS[@]}" | grep -qx -- "$1"; then
                echo "error: unknown workload $1; workloads: ${WORKLOADS[*]}" >&2
                exit 2
            fi
            selected+=("$1")
            ;;
    esac
    shift
done
if [ "${#selected[@]}" -eq 0 ]; then
    echo "error: no workload given; workloads: ${WORKLOADS[*]} (see --help)" >&2
    exit 2
fi
for setting in $OLD_ENV $NEW_ENV; do
    case $setting in
        [A-Za-z_]*=*) ;;
        *)
            echo "error: --old-env/--new-env take VAR=VALUE settings, not '$setting'" >&2
            exit 2
            ;;
    esac
done
case $IMAGES in
    '' | *[!0-9]* | 0)
        echo "error: --images takes a positive number of images, not '$IMAGES'" >&2
        exit 2
        ;;
esac

# shellcheck source=scripts/device/lib.sh
. scripts/device/lib.sh

mkdir -p "$OUT" || fail "cannot create --out $OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
export PYTHONUNBUFFERED=1
[ -z "$LOADERS" ] || unpack_vulkan_loaders "$LOADERS"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L | tee -a "$OUT/log.txt"

workload_doctor() {
    need_executable "$BIN" --bin
    "$BIN" devices 2>&1 | tee -a "$OUT/log.txt"
    run_doctor
}

workload_round() {
    need_executable "$BIN" --bin
    local full=$((1 - SHORT))
    log "round: matmul and small benches"
    bench matmul --device "$DEVICE" --sizes 1024,4096 --seconds 1
    bench matmul --device "$DEVICE" --dtype f16 --sizes 4096 --seconds 1
    [ "$full" = 0 ] || bench elementwise --device "$DEVICE" --seconds 1
    bench overhead --device "$DEVICE" --seconds 1
    bench mlp --device "$DEVICE" --seconds 1
    log "round: resnet18"
    # Tunes the training shapes first, so no timed case pays for it.
    bench_to warm-up.jsonl warm-up resnet18-train --device "$DEVICE" --batch 64 --seconds 1
    bench resnet18 --device "$DEVICE" --batch 64 --no-cpu-baseline --seconds 2
    bench resnet18 --device "$DEVICE" --batch 64 --amp --no-cpu-baseline --seconds 2
    # Autocast inference again in processes of its own, kept out of anygrad.jsonl: one process
    # in several has run 2-4x slower (docs/PERFORMANCE.md), so the round records the spread.
    for repeat in 1 2 3; do
        bench_to repeats.jsonl "repeat$repeat" resnet18 --device "$DEVICE" --batch 64 --amp \
            --no-cpu-baseline --seconds 2
    done
    if [ "$full" = 1 ]; then
        # Kept out of anygrad.jsonl, so the comparison shows the default choices.
        ANYGRAD_AUTOTUNE_FORCE=conv2d:winograd4 bench_to forced.jsonl winograd4 resnet18 \
            --device "$DEVICE" --batch 64 --no-cpu-baseline --seconds 2
    fi
    bench resnet18-train --device "$DEVICE" --batch 64 --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 64 --amp --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 8 --seconds 1
    bench resnet18-train --device "$DEVICE" --batch 8 --amp --seconds 1
    log "round: attention and minilm"
    bench attention --device "$DEVICE" --attention-shape 8,12,512,64 --dtype f16 --seconds 1
    if [ "$full" = 1 ]; then
        # Kept out of anygrad.jsonl (the comparison would take these rows for the default's).
        ANYGRAD_COOP_ATTENTION=off bench_to coop-off.jsonl coop-attention-off attention \
            --device "$DEVICE" --attention-shape 8,12,512,64 --dtype f16 --seconds 1
        bench attention --device "$DEVICE" --attention-shape 8,12,1024,64 --dtype f16 --seconds 1
        ANYGRAD_COOP_ATTENTION=off bench_to coop-off.jsonl coop-attention-off minilm-train \
            --device "$DEVICE" --batch 64 --sequence-length 128 --seconds 2 --amp
    fi
    for amp in "" --amp; do
        bench minilm --device "$DEVICE" --batch 64 --sequence-length 128 --seconds 2 $amp
        [ "$full" = 0 ] ||
            bench minilm-train --device "$DEVICE" --batch 64 --sequence-length 128 --seconds 2 $amp
    done
    log "round: profiles"
    profile_to infer-amp resnet18 --device "$DEVICE" --batch 64 --amp --kernel-width 100
    if [ "$full" = 1 ]; then
        profile_to infer resnet18 --device "$DEVICE" --batch 64
        profile_to train resnet18-train --device "$DEVICE" --batch 64
        profile_to train-amp resnet18-train --device "$DEVICE" --batch 64 --amp
        profile_to minilm minilm --device "$DEVICE" --batch 64
        profile_to minilm-train minilm-train --device "$DEVICE" --batch 64
        profile_to attention attention --device "$DEVICE" --batch 8 --tokens 512
        head -25 "$OUT/profile-train.txt"
        grep -o '"conv2d[^"]*x\[64, 64, 56, 56\][^"]*"[^}]*}' "$OUT/cache/autotune.json" | head -8
    fi
    show_profile infer-amp
    pytorch_on || return 0
    log "round: pytorch"
    local small=(matmul overhead mlp)
    [ "$full" = 0 ] || small=(matmul elementwise overhead mlp)
    reference_to pytorch.jsonl "${small[@]}" resnet18 resnet18-train --batches 64 --true-f32 --amp \
        --device cuda --seconds 1
    reference_to pytorch-b8.jsonl resnet18-train --train-batch 8 --true-f32 --amp --device cuda \
        --seconds 1
    reference_to pytorch.jsonl attention --attention-shape 8 12 512 64 --attention-dtype f16 \
        --device cuda --seconds 1
    if [ "$full" = 1 ]; then
        reference_to pytorch.jsonl attention --attention-shape 8 12 1024 64 \
            --attention-dtype f16 --device cuda --seconds 1
        reference_to pytorch.jsonl minilm minilm-train --amp --device cuda --minilm-batch 64 \
            --minilm-length 128 --seconds 2
        # cuDNN's own kernels for the same ResNet-18 steps, to read the profiles against.
        python3 bench/pytorch_kernel_profile.py > "$OUT/pytorch-kernels.txt" 2>&1
    else
        reference_to pytorch.jsonl minilm --amp --device cuda --minilm-batch 64 \
            --minilm-length 128 --seconds 2
        # PyTorch's autocast inference once more, in a process of its own (its spread).
        reference_to repeats.jsonl resnet18 --batches 64 --amp --device cuda --seconds 2
    fi
    compare
}

workload_resnet() {
    need_executable "$BIN" --bin
    log "resnet18"
    bench_to warm-up.jsonl warm-up resnet18-train --device "$DEVICE" --batch 64 --seconds 1
    bench resnet18 --device "$DEVICE" --batch 64 --no-cpu-baseline --seconds 2
    bench resnet18 --device "$DEVICE" --batch 64 --amp --no-cpu-baseline --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 64 --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 64 --amp --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 8 --amp --seconds 1
    profile_to infer resnet18 --device "$DEVICE" --batch 64
    profile_to infer-amp resnet18 --device "$DEVICE" --batch 64 --amp
    profile_to train resnet18-train --device "$DEVICE" --batch 64
    profile_to train-b8-amp resnet18-train --device "$DEVICE" --batch 8 --amp
    for name in infer infer-amp train-b8-amp; do show_profile "$name" 14; done
    echo "== the training step's sums and input gradients"
    grep -E '^(sum|conv2d_backward_input) ' "$OUT/profile-train.txt"
    grep -E 'conv2d_backward_input' "$OUT/profile-train.txt" | head -20
    echo "== the autotuner's Winograd choices"
    grep winograd "$OUT/cache/autotune.json" | head -30
    pytorch_on || return 0
    reference_to pytorch.jsonl resnet18 resnet18-train --batches 64 --true-f32 --amp \
        --device cuda --seconds 1
    compare
}

workload_attention() {
    need_executable "$BIN" --bin
    log "attention"
    local shape dtype
    for shape in 8,12,512,64 8,12,1024,64 2,12,2048,64; do
        for dtype in f16 f32; do
            bench attention --device "$DEVICE" --attention-shape $shape --dtype $dtype --seconds 1
            bench_to composite.jsonl composite attention --device "$DEVICE" \
                --attention-shape $shape --dtype $dtype --seconds 1 --composite-attention
        done
    done
    pytorch_on || return 0
    for shape in "8 12 512 64" "8 12 1024 64" "2 12 2048 64"; do
        for dtype in f16 f32; do
            # shellcheck disable=SC2086 # $shape is four numbers, four arguments
            reference_to pytorch.jsonl attention --attention-shape $shape \
                --attention-dtype $dtype --device cuda --seconds 1
        done
    done
    compare
}

workload_attention_occupancy() {
    need_executable "$BIN" --bin
    log "attention occupancy"
    local heads
    for heads in $HEADS; do
        echo "== heads $heads" | tee -a "$OUT/occupancy.txt"
        "$BIN" profile attention --device "$DEVICE" --batch 1 --heads "$heads" --tokens 512 \
            --steps 20 --kernels 6 --kernel-width 70 2>&1 | grep -E "Attention" \
            | tee -a "$OUT/occupancy.txt"
    done
}

workload_minilm() {
    need_executable "$BIN" --bin
    log "minilm"
    local amp
    for amp in "" --amp; do
        bench minilm --device "$DEVICE" --batch 64 --sequence-length 128 --seconds 2 $amp
        bench minilm-train --device "$DEVICE" --batch 64 --sequence-length 128 --seconds 2 $amp
    done
    profile_to minilm-train minilm-train --device "$DEVICE" --batch 64
    grep -A14 "by shape" "$OUT/profile-minilm-train.txt"
    pytorch_on || return 0
    reference_to pytorch.jsonl minilm minilm-train --amp --device cuda --minilm-batch 64 \
        --minilm-length 128 --seconds 2
    compare
}

workload_minilm_host() {
    need_executable "$BIN" --bin
    log "minilm host time"
    ANYGRAD_LOG=anygrad_core=debug "$BIN" bench minilm-train --device "$DEVICE" --seconds 2 \
        > /dev/null 2> "$OUT/minilm-debug.txt"
    echo "pipelines compiled: $(grep -c 'compiled a pipeline' "$OUT/minilm-debug.txt")"
    sed 's/\x1b\[[0-9;]*m//g' "$OUT/minilm-debug.txt" | grep -o 'kernel=[A-Za-z]*' | sort \
        | uniq -c | sort -rn | head
    bench_to minilm-host.jsonl default minilm-train --device "$DEVICE" --seconds 2
    ANYGRAD_FUSION=off bench_to minilm-host.jsonl fusion-off minilm-train --device "$DEVICE" \
        --seconds 2
    ANYGRAD_EXECUTION_MODE=throughput bench_to minilm-host.jsonl throughput minilm-train \
        --device "$DEVICE" --seconds 2
}

workload_profiles() {
    need_executable "$BIN" --bin
    log "profiles"
    profile_to resnet18 resnet18 --device "$DEVICE" --batch 64
    profile_to resnet18-amp resnet18 --device "$DEVICE" --batch 64 --amp
    profile_to resnet18-train resnet18-train --device "$DEVICE" --batch 64
    profile_to resnet18-train-amp resnet18-train --device "$DEVICE" --batch 64 --amp
    profile_to minilm minilm --device "$DEVICE" --batch 64 --tokens 128
    profile_to minilm-amp minilm --device "$DEVICE" --batch 64 --tokens 128 --amp
    profile_to minilm-train minilm-train --device "$DEVICE" --batch 64 --tokens 128
    profile_to attention attention --device "$DEVICE" --batch 8 --tokens 512
    local name
    for name in resnet18 resnet18-amp resnet18-train resnet18-train-amp minilm minilm-amp \
        minilm-train attention; do
        show_profile "$name"
    done
}

workload_tuning() {
    need_executable "$BIN" --bin
    local mode
    for mode in on off on; do
        log "autotune $mode"
        ANYGRAD_AUTOTUNE=$mode bench_to tuning.jsonl "autotune-$mode" matmul --device "$DEVICE" \
            --sizes 1024,2048,4096 --seconds 1
        ANYGRAD_AUTOTUNE=$mode bench_to tuning.jsonl "autotune-$mode" matmul --device "$DEVICE" \
            --dtype f16 --sizes 4096 --seconds 1
        ANYGRAD_AUTOTUNE=$mode bench_to tuning.jsonl "autotune-$mode" resnet18 \
            --device "$DEVICE" --batch 64 --no-cpu-baseline --seconds 3
        ANYGRAD_AUTOTUNE=$mode bench_to tuning.jsonl "autotune-$mode" resnet18 \
            --device "$DEVICE" --batch 64 --amp --no-cpu-baseline --seconds 3
        ANYGRAD_AUTOTUNE=$mode bench_to tuning.jsonl "autotune-$mode" resnet18-train \
            --device "$DEVICE" --batch 64 --seconds 3
        ANYGRAD_AUTOTUNE=$mode bench_to tuning.jsonl "autotune-$mode" resnet18-train \
            --device "$DEVICE" --batch 64 --amp --seconds 2
    done
    head -80 "$OUT/cache/autotune.json" 2>/dev/null
    pytorch_on || return 0
    reference_to pytorch.jsonl matmul resnet18 resnet18-train --batches 64 --true-f32 --amp \
        --device cuda --seconds 1
}

workload_large_batches() {
    need_executable "$BIN" --bin
    log "inference above one buffer"
    bench resnet18 --device "$DEVICE" --batch 64,512,1024,2048 --no-cpu-baseline --seconds 2
    bench resnet18 --device "$DEVICE" --batch 1024 --amp --no-cpu-baseline --seconds 2
    bench resnet18 --device "$DEVICE" --batch auto --no-cpu-baseline --seconds 1
    log "training above one buffer"
    bench resnet18-train --device "$DEVICE" --batch 1024 --seconds 3
    bench resnet18-train --device "$DEVICE" --batch 1024 --amp --seconds 3
    pytorch_on || return 0
    reference_to pytorch.jsonl resnet18 --batches 64 512 1024 2048 --true-f32 --amp \
        --device cuda --seconds 1
    reference_to pytorch.jsonl resnet18-train --train-batch 1024 --true-f32 --amp \
        --device cuda --seconds 2
    compare
}

workload_image_folder() {
    [ -n "$EXAMPLE" ] || fail "image-folder needs --example (the built image_folder example)"
    need_executable "$EXAMPLE" --example
    [ -d "$MNIST" ] || fail "image-folder needs --mnist, a directory with MNIST's IDX files"
    local images=/tmp/anygrad-mnist-png workers
    log "image folder: $IMAGES MNIST images as PNG files in $images"
    "$EXAMPLE" "$images" --from-mnist "$MNIST" --count "$IMAGES" --epochs 0 | tail -1
    for workers in 0 4 8; do
        "$EXAMPLE" "$images" --loader-only --workers $workers 2>&1 | tail -1 \
            | tee -a "$OUT/image_folder.txt"
    done
    "$EXAMPLE" "$images" --epochs 2 --workers 8 2>&1 | tail -2 | tee -a "$OUT/image_folder.txt"
    pytorch_on || return 0
    for workers in 0 8; do
        python3 bench/pytorch_image_folder.py "$images" --workers $workers --batch 64 \
            --epochs 0 2>>"$OUT/log.txt" | tee -a "$OUT/image_folder.txt"
    done
    python3 bench/pytorch_image_folder.py "$images" --workers 8 --batch 64 --epochs 2 \
        2>>"$OUT/log.txt" | tee -a "$OUT/image_folder.txt"
}

# ab_bench LABEL SIDE ARGS...: one bench of side `old` or `new`, each side with its binary,
# its settings and its own autotuner cache; JSON lines into $OUT/ab-SIDE.jsonl.
ab_bench() {
    local label=$1 side=$2 binary=$BIN settings=$NEW_ENV
    shift 2
    if [ "$side" = old ]; then
        binary=$OLD_BIN
        settings=$OLD_ENV
    fi
    # shellcheck disable=SC2086 # $settings is split into its VAR=VALUE words
    env ANYGRAD_CACHE_DIR="$OUT/cache-$side" $settings "$binary" bench "$@" --json \
        2>>"$OUT/log.txt" | tee -a "$OUT/ab-$side.jsonl" | summarize "$label $side" \
        | tee -a "$OUT/ab-summary.txt"
}

# ab_profile NAME SIDE ARGS...: a profile of one side into $OUT/profile-SIDE-NAME.txt.
ab_profile() {
    local name=$1 side=$2 binary=$BIN settings=$NEW_ENV
    shift 2
    if [ "$side" = old ]; then
        binary=$OLD_BIN
        settings=$OLD_ENV
    fi
    # shellcheck disable=SC2086 # $settings is split into its VAR=VALUE words
    env ANYGRAD_CACHE_DIR="$OUT/cache-$side" $settings "$binary" profile "$@" \
        > "$OUT/profile-$side-$name.txt" 2>&1
}

# PyTorch's autocast ResNet-18 inference and training at batch 64, for the A/B's spread.
ab_reference() {
    pytorch_on || return 0
    reference_to pytorch-ab.jsonl resnet18 resnet18-train --batches 64 --amp --device cuda \
        --seconds 2 | tee -a "$OUT/ab-summary.txt"
}

workload_ab() {
    need_executable "$BIN" --bin
    OLD_BIN=${OLD_BIN:-$BIN}
    need_executable "$OLD_BIN" --old-bin
    log "ab: old $OLD_BIN ${OLD_ENV:-(no settings)}; new $BIN ${NEW_ENV:-(no settings)}"
    # The new side's tuner choices, from the debug log of its first run (fresh cache).
    # shellcheck disable=SC2086 # $NEW_ENV is split into its VAR=VALUE words
    env ANYGRAD_CACHE_DIR="$OUT/cache-new" ANYGRAD_LOG=anygrad_core=debug $NEW_ENV "$BIN" bench \
        resnet18 --device "$DEVICE" --batch 64 --amp --no-cpu-baseline --seconds 1 --json \
        2>&1 >/dev/null | grep autotune | sed "s/.*autotune //" | cut -c1-900 \
        > "$OUT/tune-log-new.txt"
    ab_reference
    local round side
    for round in 1 2; do
        for side in old new; do
            ab_bench "infer-amp$round" $side resnet18 --device "$DEVICE" --batch 64 --amp \
                --no-cpu-baseline --seconds 2
        done
    done
    for round in 1 2; do
        for side in old new; do
            ab_bench "train-amp$round" $side resnet18-train --device "$DEVICE" --batch 64 --amp \
                --seconds 3
        done
    done
    for side in old new; do
        ab_bench infer-f32 $side resnet18 --device "$DEVICE" --batch 64 --no-cpu-baseline \
            --seconds 2
        ab_bench train-f32 $side resnet18-train --device "$DEVICE" --batch 64 --seconds 2
    done
    ab_reference
    for side in old new; do
        ab_profile infer-amp $side resnet18 --device "$DEVICE" --batch 64 --amp --kernel-width 100
        ab_profile train-amp $side resnet18-train --device "$DEVICE" --batch 64 --amp --steps 3 \
            --kernels 120 --kernel-width 150
    done
}

workload_prefetch_ab() {
    local old_bin=$OLD_BIN old_env=$OLD_ENV new_env=$NEW_ENV
    OLD_BIN=$BIN
    OLD_ENV="$old_env ANYGRAD_PREFETCH=off"
    NEW_ENV="$new_env ANYGRAD_PREFETCH=on"
    workload_ab
    OLD_BIN=$old_bin
    OLD_ENV=$old_env
    NEW_ENV=$new_env
}

workload_kernel_tests() {
    need_executable "$TESTS" --tests
    log "kernel tests: $TEST_FILTER"
    # shellcheck disable=SC2086 # $TEST_FILTER is split into its names
    ANYGRAD_REQUIRE_GPU=1 timeout 300 "$TESTS" $TEST_FILTER 2>&1 | tee "$OUT/kernel-tests.txt" \
        | grep -E "^test |test result|panicked"
    if ! grep -q "^test " "$OUT/kernel-tests.txt"; then
        echo "warning: no test of $TESTS matched --test-filter '$TEST_FILTER'"
    fi
}

# Runs one packed test binary ($2) in its crate's directory ($1), with a deadline; prints its
# exit status and result line. Called by workload_suite through xargs.
run_packed_test() {
    local dir=$1 binary=$2 status
    (cd "$dir" && timeout 300 "$SUITE_DIR/$binary" >"$OUT/test-$binary.log" 2>&1)
    status=$?
    echo "$binary rc=$status $(grep -E '^test result' "$OUT/test-$binary.log" | tail -1)"
}

workload_suite() {
    [ -f "$SUITE" ] || fail "--suite $SUITE is not a file (docs/TESTING.md says how to pack one)"
    case $JOBS in '' | *[!0-9]* | 0) fail "--jobs takes a positive number, not '$JOBS'" ;; esac
    log "suite: $SUITE"
    SUITE_DIR=$(mktemp -d)
    tar -xJf "$SUITE" -C "$SUITE_DIR" || fail "cannot unpack --suite $SUITE"
    [ -f "$SUITE_DIR/manifest" ] || fail "--suite $SUITE has no manifest"
    # Tests name their files by the build's checkout (CARGO_MANIFEST_DIR) and the CLI tests
    # run the anygrad binary at the path it was built at: both are recreated here.
    if [ -f "$SUITE_DIR/build_root" ]; then
        local root
        root=$(cat "$SUITE_DIR/build_root")
        [ -e "$root" ] || { mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"; }
    fi
    if [ -f "$SUITE_DIR/cli_path" ] && [ -f "$SUITE_DIR/anygrad" ]; then
        mkdir -p "$(dirname "$(cat "$SUITE_DIR/cli_path")")"
        cp "$SUITE_DIR/anygrad" "$(cat "$SUITE_DIR/cli_path")"
    fi
    export SUITE_DIR OUT
    export ANYGRAD_REQUIRE_GPU=1 ANYGRAD_REQUIRE_F16=1 ANYGRAD_REQUIRE_COOP=1 \
        ANYGRAD_REQUIRE_FLOAT_ATOMICS=1 ANYGRAD_REQUIRE_TIMESTAMPS=1 \
        ANYGRAD_SKIP_LOG="$OUT/skips.log"
    export -f run_packed_test
    local started=$SECONDS
    xargs -P "$JOBS" -L 1 bash -c 'run_packed_test "$0" "$1"' <"$SUITE_DIR/manifest" \
        | tee "$OUT/suite.txt" | grep -v " rc=0 "
    echo "binaries: $(wc -l <"$OUT/suite.txt"), failed: $(grep -vc ' rc=0 ' "$OUT/suite.txt")," \
        "$((SECONDS - started)) s" | tee -a "$OUT/log.txt"
    grep -h -A3 "panicked" "$OUT"/test-*.log | cut -c1-300 | head -40
    touch "$OUT/skips.log"
    .ci/check-skips gpu "$OUT/skips.log"
}

workload_generate() {
    need_executable "$BIN" --bin
    [ -f "$GGUF" ] || fail "--gguf $GGUF is not a GGUF file"
    local long weights round
    long=$(python3 -c 'print(",".join(str(100 + i % 40000) for i in range(512)))')
    for round in 1 2 3; do
        for weights in quantized f32; do
            log "generate: $weights weights, round $round"
            "$BIN" generate --model "$GGUF" --prompt-ids 504,3575,282,4649,314 --max-tokens 128 \
                --device "$DEVICE" --weights "$weights" --json 2>>"$OUT/log.txt" \
                | python3 -c 'import json,sys; r=json.loads(sys.stdin.read().splitlines()[-1]); r.pop("top_logits"); r.pop("text"); r["generated"]=len(r.pop("generated_ids")); r.pop("prompt_ids"); r["workload"]="generate"; print(json.dumps(r))' \
                | tee -a "$OUT/generate.jsonl"
            "$BIN" generate --model "$GGUF" --prompt-ids "$long" --max-tokens 1 \
                --device "$DEVICE" --weights "$weights" --json 2>>"$OUT/log.txt" \
                | python3 -c 'import json,sys; r=json.loads(sys.stdin.read().splitlines()[-1]); print(json.dumps({"workload": "prefill", "weights": r["weights"], "prompt_tokens": len(r["prompt_ids"]), "prompt_tokens_per_second": r["prompt_tokens_per_second"], "peak_device_bytes": r["peak_device_bytes"]}))' \
                | tee -a "$OUT/generate.jsonl"
        done
    done
    pytorch_on || return 0
    python3 bench/transformers_generate.py --tokens 128 --prefill 512 2>>"$OUT/log.txt" \
        | tee -a "$OUT/generate.jsonl"
}

workload_python() {
    need_executable "$BIN" --bin
    [ -f "$PYTHON_PACKAGE/__init__.py" ] ||
        fail "--python-package $PYTHON_PACKAGE is not the anygrad package folder"
    local site
    site=$(mktemp -d)
    cp -r "$PYTHON_PACKAGE" "$site/anygrad" || fail "cannot copy $PYTHON_PACKAGE"
    log "python: the same workloads from Rust"
    bench_to warm-up.jsonl warm-up resnet18-train --device "$DEVICE" --batch 64 --seconds 1
    bench overhead --device "$DEVICE" --seconds 1
    bench mlp --device "$DEVICE" --seconds 1
    bench resnet18 --device "$DEVICE" --batch 64 --no-cpu-baseline --seconds 2
    bench resnet18 --device "$DEVICE" --batch 64 --amp --no-cpu-baseline --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 64 --seconds 2
    bench resnet18-train --device "$DEVICE" --batch 64 --amp --seconds 2
    log "python: bench/pytorch_reference.py on the package (--framework anygrad)"
    PYTHONPATH=$site python3 bench/pytorch_reference.py --framework anygrad overhead mlp \
        resnet18 resnet18-train --batches 64 --amp --device cuda --seconds 2 \
        2>>"$OUT/log.txt" | tee -a "$OUT/python.jsonl" | grep -v '"environment"' \
        | summarize anygrad-python
    python3 bench/compare.py "$OUT/python.jsonl" "$OUT/anygrad.jsonl" --candidate anygrad-python \
        --baseline anygrad > "$OUT/comparison-python-rust.md" 2>&1
    cat "$OUT/comparison-python-rust.md"
    pytorch_on || return 0
    reference_to pytorch.jsonl overhead mlp resnet18 resnet18-train --batches 64 --amp \
        --device cuda --seconds 2
    python3 bench/compare.py "$OUT/python.jsonl" "$OUT/pytorch.jsonl" --candidate anygrad-python \
        > "$OUT/comparison-python-pytorch.md" 2>&1
    cat "$OUT/comparison-python-pytorch.md"
}

workload_scaling() {
    need_executable "$BIN" --bin
    local gpus
    gpus=$(gpu_count)
    [ "$gpus" -ge 2 ] || fail "scaling needs two or more GPUs; nvidia-smi lists $gpus"
    log "scaling: warm the tuning cache"
    bench_to warm-up.jsonl warm-up resnet18-train --device "$DEVICE" --batch 64 --seconds 1
    local setting
    for setting in 1 0 1 0; do
        log "data parallel with ANYGRAD_OVERLAP_OPTIMIZER=$setting"
        ANYGRAD_OVERLAP_OPTIMIZER=$setting bench_to "data-parallel-overlap-$setting.jsonl" \
            "overlap-optimizer-$setting" resnet18-train --devices all --batch 64
    done
    log "data parallel, autocast"
    bench resnet18-train --devices all --batch 64 --amp
    log "one device"
    bench resnet18 --device "$DEVICE" --batch 64 --no-cpu-baseline --seconds 3
    bench resnet18 --device "$DEVICE" --batch 64 --amp --no-cpu-baseline --seconds 3
    bench resnet18-train --device "$DEVICE" --batch 64 --amp --seconds 2
    profile_to train resnet18-train --device "$DEVICE" --batch 64
    profile_to infer resnet18 --device "$DEVICE" --batch 64
    pytorch_on || return 0
    reference_to pytorch.jsonl resnet18 resnet18-train --batches 64 --true-f32 --amp \
        --device cuda --seconds 1
    python3 bench/pytorch_ddp.py --batch 64 --seconds 2 2>>"$OUT/log.txt" \
        | tee "$OUT/pytorch-ddp.jsonl"
    compare
}

workload_mpi() {
    local binary=${MPI_BIN:-$BIN}
    need_executable "$binary" --mpi-bin
    if ! command -v mpirun >/dev/null 2>&1; then
        # No OpenMPI on the machine: its Debian packages are unpacked into a private prefix
        # (never over the system) and found through OPAL_PREFIX, PATH and LD_LIBRARY_PATH.
        local prefix=/opt/anygrad-mpi deb found=0
        mkdir -p "$prefix"
        for deb in "$MPI_DEBS"/*.deb; do
            [ -f "$deb" ] || continue
            dpkg -x "$deb" "$prefix" && found=1
        done
        [ "$found" = 1 ] || fail "mpi: no mpirun on this machine and no .deb files in --mpi-debs $MPI_DEBS"
        export OPAL_PREFIX=$prefix/usr
        export PATH=$prefix/usr/bin:$PATH
        export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # Shared memory and loopback only: no fabric probing on a machine without one.
    export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2 \
        OMPI_MCA_btl_vader_single_copy_mechanism=none
    log "mpi: two ranks"
    ldd "$binary" | grep -i mpi | tee -a "$OUT/mpi-log.txt"
    mpirun --version 2>&1 | head -2 | tee -a "$OUT/mpi-log.txt"
    timeout 300 mpirun -n 2 --bind-to none "$binary" bench resnet18-train --distributed --json \
        2>>"$OUT/mpi-log.txt" | tee -a "$OUT/anygrad-mpi.jsonl" | summarize mpi
    tail -20 "$OUT/mpi-log.txt"
}

for workload in "${selected[@]}"; do
    "workload_${workload//-/_}"
done
[ "$PACK" = 0 ] || pack_results
