// integer_helpers.wgsl — integer versions of float_helpers.wgsl's names (no NaN; pow by
// squaring, wrapping like the CPU) and the shifts, added after the value header of integer
// kernels.
fn is_nan_value(x: T) -> bool { return false; }
fn maximum_nan(a: T, b: T) -> T { return max(a, b); }
fn minimum_nan(a: T, b: T) -> T { return min(a, b); }
fn pow_signed(a: T, b: T) -> T {
    if (b < T(0)) { return T(0); }
    var result = T(1);
    var base = a;
    var exponent = u32(b);
    while (exponent > 0u) {
        if ((exponent & 1u) == 1u) { result = result * base; }
        base = base * base;
        exponent = exponent >> 1u;
    }
    return result;
}
// Shifts as the CPU's i64 reference: an amount that is negative or past the width shifts every
// bit out (WGSL itself would take the amount modulo 32). `(a >> 31u) >> 1u` is the sign for i32
// (arithmetic shifts) and 0 for u32.
fn shift_left(a: T, b: T) -> T {
    if (b < T(0) || b >= T(32)) { return T(0); }
    return a << u32(b);
}
fn shift_right(a: T, b: T) -> T {
    if (b < T(0) || b >= T(32)) { return (a >> 31u) >> 1u; }
    return a >> u32(b);
}
