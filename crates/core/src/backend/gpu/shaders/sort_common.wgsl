// sort_common.wgsl — shared by sort_rows.wgsl and sort_global.wgsl (after the generated header
// that sets KEY_KIND and declares `params`). Every value becomes a u32 whose unsigned order is
// the sort order, so both kernels compare plain words: floats (KEY_KIND 0) flip their sign
// bit, or all bits when negative; every NaN becomes the largest word and -0.0 becomes +0.0
// (PyTorch's order: NaN after every number, -0.0 equal to 0.0); i32 (KEY_KIND 1) flips the
// sign bit; u32 (KEY_KIND 2) is already ordered. Descending sorts invert the word. A tie on the
// word is broken by the original position, so the bitonic network (not stable by itself)
// gives the stable order; padding slots carry the largest word and position and sort last.

const PAD: u32 = 0xffffffffu;

fn order_key(raw: u32, descending: bool) -> u32 {
    var key = raw;
    if (KEY_KIND == 0u) {
        if ((raw & 0x7fffffffu) > 0x7f800000u) {
            key = PAD;
        } else if (raw == 0x80000000u) {
            key = 0x80000000u;
        } else if ((raw & 0x80000000u) != 0u) {
            key = ~raw;
        } else {
            key = raw | 0x80000000u;
        }
    } else if (KEY_KIND == 1u) {
        key = raw ^ 0x80000000u;
    }
    if (descending) {
        key = ~key;
        // A NaN (largest word) sorts first when descending, like the largest number.
    }
    return key;
}

// Whether (key_a, position_a) comes strictly before (key_b, position_b).
fn comes_before(key_a: u32, position_a: u32, key_b: u32, position_b: u32) -> bool {
    return key_a < key_b || (key_a == key_b && position_a < position_b);
}
