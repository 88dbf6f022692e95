#!/usr/bin/env bash
# Fetch llama.cpp's Llama 2 SentencePiece vocabulary and its tokenizer test cases
# (models/ggml-vocab-llama-spm.gguf, .inp, .out) from the llama-cpp-python source
# distribution on PyPI, for crates/models/tests/llama_sentencepiece.rs:
#
#   scripts/llm/fetch_llama_cpp_vocab.sh [DIR]
#   ANYGRAD_LLAMA_SPM_VOCAB=DIR/ggml-vocab-llama-spm.gguf \
#       cargo test -p anygrad-models --test llama_sentencepiece
#
# pip prepares the package's metadata before saving it, which needs scikit-build-core and
# CMake (both from PyPI); nothing is built.
set -euo pipefail
dir="${1:-$HOME/.cache/anygrad-ci/llama-cpp-vocab}"
version=0.3.36
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip install --quiet scikit-build-core cmake
python3 -m pip download --quiet "llama-cpp-python==$version" --no-binary :all: --no-deps \
    --no-build-isolation -d "$work"
mkdir -p "$dir"
models="llama_cpp_python-$version/vendor/llama.cpp/models"
tar xzf "$work/llama_cpp_python-$version.tar.gz" -C "$dir" --strip-components=4 \
    "$models/ggml-vocab-llama-spm.gguf" "$models/ggml-vocab-llama-spm.gguf.inp" \
    "$models/ggml-vocab-llama-spm.gguf.out"
echo "$dir/ggml-vocab-llama-spm.gguf"
