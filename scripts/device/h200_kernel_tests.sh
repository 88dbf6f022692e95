#!/usr/bin/env bash
# The core crate's GPU kernel tests on a machine with tensor cores: the hardware kernels
# (cooperative-matrix convolutions of every tile, the deep 128 x 128 one included, attention,
# f16 matmul) run there, which lavapipe in CI can only validate with naga or emulate.
# Build here and carry the stripped binary (see the device notes for the Vulkan loader):
#   cargo test --release -p anygrad-core --lib --no-run   # prints target/release/deps/anygrad_core-HASH
#   cp target/release/deps/anygrad_core-HASH .devbin/core_tests && strip .devbin/core_tests
# Usage there (repo root): OUT=/tmp/out scripts/device/h200_kernel_tests.sh
set -u
OUT=${OUT:-/tmp/anygrad-kernel-tests}
TESTS=${TESTS:-.devbin/core_tests}
mkdir -p "$OUT"
export ANYGRAD_CACHE_DIR="$OUT/cache"
ANYGRAD_REQUIRE_GPU=1 "$TESTS" conv_nhwc conv_coop attention_coop matmul_coop conv_epilogue \
    2>&1 | tee "$OUT/kernel-tests.txt" | grep -E "^test |test result"
