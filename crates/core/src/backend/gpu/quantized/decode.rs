//! The WGSL that reads a block-quantized matrix in place: for each `QuantFormat`, a function
//! `decode8(row_byte, g) -> array<f32, 8>` giving values `8g .. 8g + 7` of the row that starts
//! at byte `row_byte` of the binding `quants` (the matrix's bytes as `array<u32>`, GGML's block
//! layout untouched). Blocks of 18, 22, 34 or 210 bytes leave fields at any byte, so the
//! helpers read four bytes at any address (two words, shifted) and halves at even addresses
//! (every f16 field of every format is 2-byte aligned). Eight values are the common unit: two
//! words of 4-bit codes, or of 8-bit codes, share one scale in every format. The arithmetic is
//! the host's (`quantization/legacy_blocks.rs`, `quantization/k_blocks.rs`), in f32.

use crate::quantization::QuantFormat;

/// Helpers every format's `decode8` uses; `quants` is declared by the kernel.
const READERS: &str = r#"
// The byte at `at`.
fn q_byte(at: u32) -> u32 {
    return (quants[at >> 2u] >> ((at & 3u) * 8u)) & 0xFFu;
}
// The four bytes from `at` (any alignment), little-endian.
fn q_word(at: u32) -> u32 {
    let index = at >> 2u;
    let shift = (at & 3u) * 8u;
    if (shift == 0u) {
        return quants[index];
    }
    return (quants[index] >> shift) | (quants[index + 1u] << (32u - shift));
}
// The f16 at the even address `at`, as f32.
fn q_half(at: u32) -> f32 {
    return unpack2x16float(quants[at >> 2u] >> ((at & 2u) * 8u)).x;
}
// Byte `i` (0..8) of the eight bytes `low`, `high`.
fn byte_of(low: u32, high: u32, i: u32) -> u32 {
    return (select(high, low, i < 4u) >> ((i & 3u) * 8u)) & 0xFFu;
}
// The 4-bit code of byte `i` at bit `shift` (0: low nibble, 4: high).
fn nibble_of(low: u32, high: u32, i: u32, shift: u32) -> u32 {
    return (byte_of(low, high, i) >> shift) & 0xFu;
}
// Byte `i` of the eight bytes as a signed value.
fn signed_byte_of(low: u32, high: u32, i: u32) -> f32 {
    return f32(bitcast<i32>(byte_of(low, high, i) << 24u) >> 24u);
}
"#;

/// Q4_0 and Q4_1 (`minimum`: the `_1` form's f16 `m` after `d`).
fn four_bit(block_bytes: u32, minimum: bool) -> String {
    let (codes, offset, value) = if minimum {
        (4, "q_half(block + 2u)", "f32(code) * d + m")
    } else {
        (2, "-8.0 * d", "(f32(code) - 8.0) * d")
    };
    format!(
        r#"
fn decode8(row_byte: u32, g: u32) -> array<f32, 8> {{
    let block = row_byte + (g / 4u) * {block_bytes}u;
    let first = (g % 4u) * 8u;
    let d = q_half(block);
    let m = {offset};
    let at = block + {codes}u + first % 16u;
    let low = q_word(at);
    let high = q_word(at + 4u);
    let shift = (first / 16u) * 4u;
    var v: array<f32, 8>;
    for (var i = 0u; i < 8u; i += 1u) {{
        let code = nibble_of(low, high, i, shift);
        v[i] = {value};
    }}
    return v;
}}
"#
    )
}

/// Q5_0 and Q5_1: as the 4-bit forms with a word of fifth bits (bit `j` for value `j`).
fn five_bit(block_bytes: u32, minimum: bool) -> String {
    let (fifth_at, codes, offset, value) = if minimum {
        (4, 8, "q_half(block + 2u)", "f32(code) * d + m")
    } else {
        (2, 6, "-16.0 * d", "(f32(code) - 16.0) * d")
    };
    format!(
        r#"
fn decode8(row_byte: u32, g: u32) -> array<f32, 8> {{
    let block = row_byte + (g / 4u) * {block_bytes}u;
    let first = (g % 4u) * 8u;
    let d = q_half(block);
    let m = {offset};
    let fifth = q_word(block + {fifth_at}u);
    let at = block + {codes}u + first % 16u;
    let low = q_word(at);
    let high = q_word(at + 4u);
    let shift = (first / 16u) * 4u;
    var v: array<f32, 8>;
    for (var i = 0u; i < 8u; i += 1u) {{
        let code = nibble_of(low, high, i, shift) | (((fifth >> (first + i)) & 1u) << 4u);
        v[i] = {value};
    }}
    return v;
}}
"#
    )
}

/// Q8_0: an f16 `d` and 32 signed bytes.
const Q8_0: &str = r#"
fn decode8(row_byte: u32, g: u32) -> array<f32, 8> {
    let block = row_byte + (g / 4u) * 34u;
    let first = (g % 4u) * 8u;
    let d = q_half(block);
    let low = q_word(block + 2u + first);
    let high = q_word(block + 6u + first);
    var v: array<f32, 8>;
    for (var i = 0u; i < 8u; i += 1u) {
        v[i] = signed_byte_of(low, high, i) * d;
    }
    return v;
}
"#;

/// The 6-bit scale and minimum of sub-block `s` of a Q4_K/Q5_K block from its 12 packed
/// bytes at `at`.
const K_SCALE_AND_MIN: &str = r#"
fn k_scale_and_min(at: u32, s: u32) -> vec2<u32> {
    if (s < 4u) {
        return vec2<u32>(q_byte(at + s) & 63u, q_byte(at + s + 4u) & 63u);
    }
    let packed = q_byte(at + s + 4u);
    return vec2<u32>((packed & 15u) | ((q_byte(at + s - 4u) >> 6u) << 4u),
                     (packed >> 4u) | ((q_byte(at + s) >> 6u) << 4u));
}
"#;

/// Q4_K and Q5_K (`fifth`: Q5_K's 32 bytes of fifth bits before the codes).
fn k_four_or_five(fifth: bool) -> String {
    let (block_bytes, codes) = if fifth { (176, 48) } else { (144, 16) };
    let fifth_bits = if fifth {
        "let fifth_low = q_word(block + 16u + l);
    let fifth_high = q_word(block + 20u + l);"
    } else {
        ""
    };
    let code = if fifth {
        "nibble_of(low, high, i, shift) | (((byte_of(fifth_low, fifth_high, i) >> s) & 1u) << 4u)"
    } else {
        "nibble_of(low, high, i, shift)"
    };
    format!(
        r#"{K_SCALE_AND_MIN}
fn decode8(row_byte: u32, g: u32) -> array<f32, 8> {{
    let block = row_byte + (g / 32u) * {block_bytes}u;
    let first = (g % 32u) * 8u;
    // 64 values share 32 bytes: sub-block 2j in the low nibbles, 2j + 1 in the high.
    let j = first / 64u;
    let upper = (first % 64u) / 32u;
    let l = first % 32u;
    let s = 2u * j + upper;
    let scale_and_min = k_scale_and_min(block + 4u, s);
    let d = q_half(block) * f32(scale_and_min.x);
    let m = q_half(block + 2u) * f32(scale_and_min.y);
    let at = block + {codes}u + 32u * j + l;
    let low = q_word(at);
    let high = q_word(at + 4u);
    let shift = upper * 4u;
    {fifth_bits}
    var v: array<f32, 8>;
    for (var i = 0u; i < 8u; i += 1u) {{
        let code = {code};
        v[i] = d * f32(code) - m;
    }}
    return v;
}}
"#
    )
}

/// Q6_K: 128 bytes of low 4 bits, 64 of high 2 bits, 16 signed scales, f16 `d` last.
const Q6_K: &str = r#"
fn decode8(row_byte: u32, g: u32) -> array<f32, 8> {
    let block = row_byte + (g / 32u) * 210u;
    let first = (g % 32u) * 8u;
    // Each half of 128 values: four quarters of 32 from 64 low and 32 high bytes.
    let half_index = first / 128u;
    let quarter = (first % 128u) / 32u;
    let l = first % 32u;
    let d = q_half(block + 208u);
    let low_at = block + 64u * half_index + l + select(0u, 32u, quarter == 1u || quarter == 3u);
    let low = q_word(low_at);
    let high = q_word(low_at + 4u);
    let shift = select(0u, 4u, quarter >= 2u);
    let top_at = block + 128u + 32u * half_index + l;
    let top_low = q_word(top_at);
    let top_high = q_word(top_at + 4u);
    let scale_byte = q_byte(block + 192u + 8u * half_index + l / 16u + 2u * quarter);
    let scale = d * f32(bitcast<i32>(scale_byte << 24u) >> 24u);
    var v: array<f32, 8>;
    for (var i = 0u; i < 8u; i += 1u) {
        let top = (byte_of(top_low, top_high, i) >> (2u * quarter)) & 3u;
        let code = nibble_of(low, high, i, shift) | (top << 4u);
        v[i] = scale * (f32(code) - 32.0);
    }
    return v;
}
"#;

/// The WGSL readers and `decode8` of `format` (after the kernel's `quants` binding).
pub(crate) fn decode_source(format: QuantFormat) -> String {
    let decode = match format {
        QuantFormat::Q4_0 => four_bit(18, false),
        QuantFormat::Q4_1 => four_bit(20, true),
        QuantFormat::Q5_0 => five_bit(22, false),
        QuantFormat::Q5_1 => five_bit(24, true),
        QuantFormat::Q8_0 => Q8_0.to_string(),
        QuantFormat::Q4K => k_four_or_five(false),
        QuantFormat::Q5K => k_four_or_five(true),
        QuantFormat::Q6K => Q6_K.to_string(),
    };
    format!(
        "// quantized/decode.rs: {}\n{READERS}{decode}",
        format.name()
    )
}
