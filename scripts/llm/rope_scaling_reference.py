#!/usr/bin/env python3
"""Reference inverse frequencies and attention factors of the RoPE scaling types, computed in
float64 with numpy from the formulas of transformers' modeling_rope_utils.py, for the small
cases that crates/models/tests/llama_rope_scaling.rs checks (head size 16, base 10000).

Prints Rust constants to paste into that test:

    python3 scripts/llm/rope_scaling_reference.py
"""

import math

import numpy as np

DIM = 16
THETA = 10000.0


def plain(dim=DIM, theta=THETA):
    return 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


def linear(factor):
    return plain() / factor


def dynamic(factor, original, length):
    length = max(length, original)
    base = THETA * ((factor * length / original) - (factor - 1)) ** (DIM / (DIM - 2))
    return plain(theta=base)


def llama3(factor, low, high, original):
    freqs = plain()
    wavelength = 2 * math.pi / freqs
    out = np.where(wavelength > original / low, freqs / factor, freqs)
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * out / factor + smooth * out
    medium = (wavelength >= original / high) & (wavelength <= original / low)
    return np.where(medium, blended, out)


def magnitude(scale, mscale=1.0):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn(factor, original, beta_fast=32.0, beta_slow=1.0, truncate=True,
         mscale=None, mscale_all_dim=None, attention_factor=None):
    def correction(rotations):
        return DIM * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(THETA))

    low, high = correction(beta_fast), correction(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, DIM - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(DIM // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    keep = 1 - ramp
    position = THETA ** (np.arange(0, DIM, 2, dtype=np.float64) / DIM)
    freqs = (1 / (factor * position)) * (1 - keep) + (1 / position) * keep
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = magnitude(factor, mscale) / magnitude(factor, mscale_all_dim)
        else:
            attention_factor = magnitude(factor)
    return freqs, attention_factor


def rust(name, values):
    body = ", ".join(f"{v:.9e}" for v in values)
    print(f"const {name}: [f64; {len(values)}] = [{body}];")


def main():
    rust("LINEAR_4", linear(4.0))
    rust("DYNAMIC_2_32_AT_48", dynamic(2.0, 32, 48))
    rust("LLAMA3_8_1_4_64", llama3(8.0, 1.0, 4.0, 64))
    freqs, attention = yarn(4.0, 64)
    rust("YARN_4_64", freqs)
    print(f"const YARN_4_64_ATTENTION: f64 = {attention!r};")
    freqs, attention = yarn(4.0, 64, truncate=False, mscale=1.0, mscale_all_dim=0.5)
    rust("YARN_4_64_UNTRUNCATED", freqs)
    print(f"const YARN_4_64_MSCALE_ATTENTION: f64 = {attention!r};")


if __name__ == "__main__":
    main()
