//! Kernel generation. Every compute pipeline is named by a typed [`KernelKey`] (family, dtypes,
//! op, contiguity), never by a string. Its WGSL source is a generated *header* — element type
//! aliases (`S` stored, `T` computed, `O` output, ...), load/store conversions and the op's
//! expression taken from `op.rs` — followed by `common.wgsl` and the family's template in
//! `shaders/`. So a new op needs no new shader, only its expression.
//!
//! How dtypes live on the GPU (WGSL has no 8-bit or bool storage types):
//! F32 as `f32`; F16 as `f16` (needs `SHADER_F16`; computed in f32); I32 as `i32`; U32 as
//! `u32`; **U8 and Bool as one `u32` per element** (values 0..=255, resp. 0/1); F64 is refused.
//!
//! `kernel_catalog.rs` instantiates every key so that a unit test validates each with naga,
//! no GPU needed.

use super::vector::VectorFamily;
use crate::dtype::DType;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};

pub(crate) const COMMON: &str = include_str!("shaders/common.wgsl");
const FILL: &str = include_str!("shaders/fill.wgsl");
const UNARY: &str = include_str!("shaders/unary.wgsl");
const BINARY: &str = include_str!("shaders/binary.wgsl");
const BINARY_SCALAR: &str = include_str!("shaders/binary_scalar.wgsl");
const WHERE: &str = include_str!("shaders/where.wgsl");
const COPY: &str = include_str!("shaders/copy.wgsl");
const RANDOM: &str = include_str!("shaders/random.wgsl");
const REDUCE: &str = include_str!("shaders/reduce.wgsl");
const MATMUL: &str = include_str!("shaders/matmul.wgsl");
const GATHER: &str = include_str!("shaders/gather.wgsl");
const INDEX_ROWS: &str = include_str!("shaders/index_rows.wgsl");
const SCATTER_ADD: &str = include_str!("shaders/scatter_add.wgsl");

/// How an elementwise kernel addresses its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Any strides (and broadcasting, stride 0): positions from shape and strides.
    Strided,
    /// Every view dense: element i is at `offset + i`.
    Contiguous,
    /// Dense, offsets and length multiples of 4: vec4 loads and stores (`vector.rs`).
    Vector,
}

/// The identity of one compute pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Write a 32-bit pattern into every word.
    Fill,
    /// Counter-based uniform (`normal = false`) or normal draws.
    Random { dtype: DType, normal: bool },
    /// Elementwise unary op.
    Unary {
        dtype: DType,
        op: UnaryOp,
        access: Access,
    },
    /// Elementwise binary op on two views.
    Binary {
        dtype: DType,
        op: BinaryOp,
        access: Access,
    },
    /// Elementwise binary op with a scalar.
    BinaryScalar {
        dtype: DType,
        op: BinaryOp,
        scalar_on_left: bool,
        access: Access,
    },
    /// `where(condition, on_true, on_false)`.
    Where {
        condition: DType,
        dtype: DType,
        access: Access,
    },
    /// Strided copy with dtype conversion (`copy_strided`, `cast`, `copy_into`).
    Copy {
        from: DType,
        to: DType,
        access: Access,
    },
    /// Reduction over a set of dims.
    Reduce { dtype: DType, op: ReduceOp },
    /// Batched tiled matrix product (64 x 64 tiles, any dtype but Bool).
    Matmul { dtype: DType },
    /// Batched float matrix product with 128 x 128 tiles (`matmul_large.rs`); `aligned`: the
    /// vec4, double-buffered variant for shapes and layouts that pass `aligned_applies`.
    MatmulLarge { dtype: DType, aligned: bool },
    /// F16 batched matrix product on cooperative matrices (tensor cores), f32 accumulation
    /// (`matmul_coop.rs`); `emulated`: the same kernel with the cooperative-matrix operations
    /// written in plain WGSL (tests on devices without them).
    MatmulCoop {
        variant: super::matmul_coop::CoopVariant,
        emulated: bool,
    },
    /// Direct (implicit-GEMM) 2-D convolution, one group, F32 or F16 (`conv.rs`); `wide`: the
    /// 128 x 128 tile instead of 64 x 128 (`conv_gemm.rs`).
    Conv2d { dtype: DType, wide: bool },
    /// The convolution's input gradient (implicit-GEMM transposed convolution,
    /// `conv_backward.rs`); `unit_stride`: both strides are 1 (no divisibility test); `wide`:
    /// the 128 x 128 tile.
    Conv2dBackwardInput {
        dtype: DType,
        unit_stride: bool,
        wide: bool,
    },
    /// The convolution's weight gradient (split-K implicit GEMM, `conv_backward.rs`);
    /// `partial`: writes one block of f32 partial sums per split.
    Conv2dBackwardWeight { dtype: DType, partial: bool },
    /// F16 convolution (forward or a gradient) on cooperative matrices (`conv_coop.rs`).
    ConvCoop(super::conv_coop::ConvCoopKey),
    /// Sums the weight gradient's f32 partial sums into the storage type.
    Conv2dSplitSum { dtype: DType },
    /// `index_select` / `gather`.
    Gather { dtype: DType, index: DType },
    /// `index_select` along the last dim of a dense input (`index_rows.wgsl`).
    IndexRows { dtype: DType, index: DType },
    /// `scatter_add` (atomic adds into a copy of the base).
    ScatterAdd { dtype: DType, index: DType },
    /// A user's kernel (`custom_op::CustomOp::wgsl`): f32 inputs `input0..`, one f32 output,
    /// the user's `fn compute(i: u32) -> f32` per output element (`custom.rs`).
    Custom {
        inputs: u32,
        source: std::sync::Arc<str>,
    },
    /// A chain of float elementwise ops compiled into one kernel (`fusion.rs`).
    Fused {
        program: std::sync::Arc<super::fusion::FusedProgram>,
    },
}

/// How a dtype is computed on: floats in f32, I32 in i32, unsigned kinds in u32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Float,
    Signed,
    Unsigned,
}

fn class(dtype: DType) -> Class {
    match dtype {
        DType::F32 | DType::F16 | DType::F64 => Class::Float,
        DType::I32 => Class::Signed,
        DType::U32 | DType::U8 | DType::Bool => Class::Unsigned,
    }
}

/// The WGSL type that stores one element of `dtype`.
pub(crate) fn storage_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::F64 => "f32",
        DType::F16 => "f16",
        DType::I32 => "i32",
        DType::U32 | DType::U8 | DType::Bool => "u32",
    }
}

/// Bytes per element in a GPU buffer.
pub(crate) fn gpu_element_size(dtype: DType) -> u64 {
    match dtype {
        DType::F16 => 2,
        DType::F32 | DType::F64 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => 4,
    }
}

fn compute_type(dtype: DType) -> &'static str {
    match class(dtype) {
        Class::Float => "f32",
        Class::Signed => "i32",
        Class::Unsigned => "u32",
    }
}

/// `narrow(v)` keeps a computed u32 inside the dtype's range (U8 wraps like `as u8`, Bool
/// becomes 0/1), as the CPU's `as` conversion does.
fn narrow_expression(dtype: DType, value: &str) -> String {
    match dtype {
        DType::U8 => format!("({value} & 0xFFu)"),
        DType::Bool => format!("select(0u, 1u, {value} != 0u)"),
        DType::F32 | DType::F16 | DType::F64 | DType::I32 | DType::U32 => value.to_string(),
    }
}

/// Type aliases, conversions and helpers for a kernel whose main dtype is `dtype`.
pub(super) fn value_header(dtype: DType) -> String {
    let stored = storage_type(dtype);
    let compute = compute_type(dtype);
    let mut text = format!(
        "alias S = {stored};\nalias T = {compute};\n\
         fn load_value(v: S) -> T {{ return T(v); }}\n\
         fn store_value(v: T) -> S {{ return S({}); }}\n",
        narrow_expression(dtype, "v")
    );
    text.push_str(match class(dtype) {
        Class::Float => FLOAT_HELPERS,
        Class::Signed | Class::Unsigned => INTEGER_HELPERS,
    });
    text
}

/// Helpers named by op.rs's float expressions (computed in f32).
const FLOAT_HELPERS: &str = r#"
fn is_nan_value(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nan_value() -> f32 { return bitcast<f32>(0x7fc00000u); }
// Abramowitz & Stegun 7.1.26, the formula of op.rs's CPU erf (|error| < 1.5e-7).
fn erf_approx(x: f32) -> f32 {
    let sign = select(1.0, -1.0, x < 0.0);
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
    return sign * (1.0 - poly * exp(-a * a));
}
// Never evaluates exp of a large positive number (which would overflow to inf).
fn sigmoid_stable(x: f32) -> f32 {
    if (x >= 0.0) {
        return 1.0 / (1.0 + exp(-x));
    }
    let e = exp(x);
    return e / (1.0 + e);
}
// GPU max/min may drop a NaN; PyTorch (and the CPU reference) propagate it.
fn maximum_nan(a: f32, b: f32) -> f32 {
    if (is_nan_value(a) || is_nan_value(b)) { return nan_value(); }
    return max(a, b);
}
fn minimum_nan(a: f32, b: f32) -> f32 {
    if (is_nan_value(a) || is_nan_value(b)) { return nan_value(); }
    return min(a, b);
}
// WGSL's pow is exp2(b * log2(a)): undefined for a < 0 and unreliable at 0 and inf. This
// follows C's pow (which the CPU reference uses), including the sign of odd integer powers.
fn pow_signed(a: f32, b: f32) -> f32 {
    let infinity = bitcast<f32>(0x7f800000u);
    let magnitude_a = abs(a);
    if (b == 0.0 || a == 1.0 || (magnitude_a == 1.0 && abs(b) == infinity)) { return 1.0; }
    if (is_nan_value(a) || is_nan_value(b)) { return nan_value(); }
    var magnitude: f32;
    if (magnitude_a == 0.0) {
        magnitude = select(0.0, infinity, b < 0.0);
    } else if (magnitude_a == infinity) {
        magnitude = select(infinity, 0.0, b < 0.0);
    } else {
        magnitude = pow(magnitude_a, b);
    }
    if ((bitcast<u32>(a) & 0x80000000u) == 0u) { return magnitude; }
    let integer = floor(b) == b;
    if (!integer && magnitude_a != 0.0 && magnitude_a != infinity) { return nan_value(); }
    let half = b * 0.5;
    return select(magnitude, -magnitude, integer && floor(half) != half);
}
"#;

/// Integer versions of the helper names (no NaN; pow by squaring, wrapping like the CPU).
const INTEGER_HELPERS: &str = r#"
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
"#;

/// The WGSL expression of a unary op over `x: T` for `dtype`.
pub(super) fn unary_expression(dtype: DType, op: UnaryOp) -> &'static str {
    match class(dtype) {
        // WGSL's sign() and max() may turn NaN into 0; the CPU reference keeps NaN.
        Class::Float => match op {
            UnaryOp::Sign => "select(sign(x), x, is_nan_value(x))",
            UnaryOp::Relu => "select(max(x, T(0.0)), x, is_nan_value(x))",
            UnaryOp::Tanh => "select(tanh(clamp(x, T(-15.0), T(15.0))), x, is_nan_value(x))",
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Recip
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Sigmoid
            | UnaryOp::Gelu
            | UnaryOp::Erf
            | UnaryOp::Silu => op.wgsl(),
        },
        Class::Signed => op.wgsl(),
        // Unsigned values: the CPU computes in i64 and wraps back (`-x as u32`).
        Class::Unsigned => match op {
            UnaryOp::Neg => "0u - x",
            UnaryOp::Abs | UnaryOp::Relu => "x",
            UnaryOp::Sign => "select(0u, 1u, x > 0u)",
            UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Recip
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Gelu
            | UnaryOp::Erf
            | UnaryOp::Silu => "x",
        },
    }
}

/// The WGSL expression of a binary op over `a, b: T` for `dtype`.
pub(super) fn binary_expression(dtype: DType, op: BinaryOp) -> &'static str {
    match (class(dtype), op) {
        // WGSL integer division by zero yields `a`; the CPU reference gives 0.
        (Class::Signed | Class::Unsigned, BinaryOp::Div) => "select(a / b, T(0), b == T(0))",
        // naga lowers `!=` on floats to an *ordered* compare (false when either is NaN); IEEE
        // and the CPU say NaN != x is true.
        (Class::Float, BinaryOp::Ne) => "!(a == b)",
        (Class::Float | Class::Signed | Class::Unsigned, _) => op.wgsl(),
    }
}

/// Whether the GPU has a kernel for a unary op on `dtype` (mirrors the CPU's support).
pub(crate) fn unary_supported(dtype: DType, op: UnaryOp) -> bool {
    match dtype {
        DType::F32 | DType::F16 => true,
        DType::I32 | DType::U32 | DType::U8 => op.supports_integers(),
        DType::F64 | DType::Bool => false,
    }
}

/// `is_true(c)`: non-zero test of a condition element (NaN counts as true, -0 as false).
fn condition_header(condition: DType) -> String {
    let stored = storage_type(condition);
    let test = match class(condition) {
        Class::Float => "(bitcast<u32>(f32(c)) & 0x7fffffffu) != 0u",
        Class::Signed => "c != 0i",
        Class::Unsigned => "c != 0u",
    };
    format!("alias C = {stored};\nfn is_true(c: C) -> bool {{ return {test}; }}\n")
}

/// `convert(v: SI) -> SO` with the CPU's `as` semantics (saturating float to integer, NaN to 0).
fn convert_header(from: DType, to: DType) -> String {
    let source = storage_type(from);
    let destination = storage_type(to);
    let body = if from == to {
        "return v;".to_string()
    } else {
        match (class(from), to) {
            (Class::Float, DType::F32) => "return f32(v);".into(),
            (Class::Float, DType::F16) => "return f16(f32(v));".into(),
            (Class::Float, DType::I32) => "let x = f32(v);\n    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0i; }\n    if (x >= 2147483648.0) { return 2147483647i; }\n    if (x <= -2147483648.0) { return -2147483647i - 1i; }\n    return i32(x);".into(),
            (Class::Float, DType::U32) => "let x = f32(v);\n    if (!(x > 0.0)) { return 0u; }\n    if (x >= 4294967296.0) { return 4294967295u; }\n    return u32(x);".into(),
            (Class::Float, DType::U8) => "let x = f32(v);\n    if (!(x > 0.0)) { return 0u; }\n    return u32(min(x, 255.0));".into(),
            (Class::Float, DType::Bool) => "return select(0u, 1u, (bitcast<u32>(f32(v)) & 0x7fffffffu) != 0u);".into(),
            (Class::Signed, DType::F32) => "return f32(v);".into(),
            (Class::Signed, DType::F16) => "return f16(f32(v));".into(),
            (Class::Signed, DType::U32) => "return u32(max(v, 0i));".into(),
            (Class::Signed, DType::U8) => "return u32(clamp(v, 0i, 255i));".into(),
            (Class::Signed, DType::Bool) | (Class::Unsigned, DType::Bool) => "return select(0u, 1u, v != SI(0));".into(),
            (Class::Unsigned, DType::F32) => "return f32(v);".into(),
            (Class::Unsigned, DType::F16) => "return f16(f32(v));".into(),
            (Class::Unsigned, DType::I32) => "return i32(min(v, 2147483647u));".into(),
            (Class::Unsigned, DType::U8) => "return min(v, 255u);".into(),
            (Class::Unsigned, DType::U32) => "return v;".into(),
            (Class::Signed, DType::I32) => "return v;".into(),
            // F64 never reaches a kernel (refused earlier); keep the text valid anyway.
            (Class::Float | Class::Signed | Class::Unsigned, DType::F64) => "return f32(v);".into(),
        }
    };
    format!("alias SI = {source};\nalias SO = {destination};\nfn convert(v: SI) -> SO {{\n    {body}\n}}\n")
}

/// Accumulator type and combine functions for a reduction.
fn reduce_header(dtype: DType, op: ReduceOp) -> String {
    let float = class(dtype) == Class::Float;
    let (identity, merge) = match (op, class(dtype)) {
        (ReduceOp::Sum, _) => ("T(0)", "a + b"),
        (ReduceOp::Max | ReduceOp::ArgMax, Class::Float) => {
            ("bitcast<f32>(0xff800000u)", "maximum_nan(a, b)")
        }
        (ReduceOp::Min | ReduceOp::ArgMin, Class::Float) => {
            ("bitcast<f32>(0x7f800000u)", "minimum_nan(a, b)")
        }
        (ReduceOp::Max | ReduceOp::ArgMax, Class::Signed) => ("-2147483647i - 1i", "max(a, b)"),
        (ReduceOp::Min | ReduceOp::ArgMin, Class::Signed) => ("2147483647i", "min(a, b)"),
        (ReduceOp::Max | ReduceOp::ArgMax, Class::Unsigned) => ("0u", "max(a, b)"),
        (ReduceOp::Min | ReduceOp::ArgMin, Class::Unsigned) => ("4294967295u", "min(a, b)"),
    };
    let better = match op {
        ReduceOp::ArgMax => "value > best",
        ReduceOp::ArgMin => "value < best",
        ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min => "false",
    };
    let (output, finish) = if op.is_arg() {
        ("i32", "return i32(index);")
    } else {
        (storage_type(dtype), "return store_value(value);")
    };
    let _ = float;
    format!(
        "alias A = T;\nalias O = {output};\nconst IS_ARG: bool = {is_arg};\n\
         fn identity() -> A {{ return {identity}; }}\n\
         fn merge(a: A, b: A) -> A {{ return {merge}; }}\n\
         fn replaces(best: A, best_index: u32, value: A, index: u32) -> bool {{\n\
         \x20   if (index == 0xFFFFFFFFu) {{ return false; }}\n\
         \x20   if (best_index == 0xFFFFFFFFu) {{ return true; }}\n\
         \x20   if (is_nan_value(best)) {{ return is_nan_value(value) && index < best_index; }}\n\
         \x20   if (is_nan_value(value)) {{ return true; }}\n\
         \x20   if ({better}) {{ return true; }}\n\
         \x20   return value == best && index < best_index;\n}}\n\
         fn finish(value: A, index: u32) -> O {{ {finish} }}\n",
        is_arg = op.is_arg(),
    )
}

/// `atomic_add_element(position, value)` for scatter_add (`output` is `array<atomic<u32>>`).
fn atomic_add_header(dtype: DType) -> String {
    let cas = |word: &str, update: &str| {
        format!(
            "    var old = atomicLoad(&output[{word}]);\n    loop {{\n        let updated = {update};\n\
             \x20       let result = atomicCompareExchangeWeak(&output[{word}], old, updated);\n\
             \x20       if (result.exchanged) {{ break; }}\n        old = result.old_value;\n    }}\n"
        )
    };
    let body = match dtype {
        DType::F32 | DType::F64 => cas("position", "bitcast<u32>(bitcast<f32>(old) + value)"),
        DType::F16 => format!(
            "    let word = position / 2u;\n    let lane = position % 2u;\n{}",
            cas(
                "word",
                "pack2x16float(unpack2x16float(old) + select(vec2<f32>(f32(value), 0.0), vec2<f32>(0.0, f32(value)), lane == 1u))"
            )
        ),
        DType::I32 => "    atomicAdd(&output[position], bitcast<u32>(value));\n".into(),
        DType::U32 => "    atomicAdd(&output[position], value);\n".into(),
        DType::U8 | DType::Bool => cas("position", &narrow_expression(dtype, "(old + value)")),
    };
    format!("fn atomic_add_element(position: u32, value: S) {{\n{body}}}\n")
}

impl KernelKey {
    /// A readable name (labels, error messages).
    pub fn name(&self) -> String {
        match self {
            KernelKey::Custom { inputs, .. } => format!("Custom {{ inputs: {inputs} }}"),
            KernelKey::Fused { program } => format!(
                "Fused {{ {:?}, {} instructions, vector: {} }}",
                program.dtype,
                program.instructions.len(),
                program.vector
            ),
            other => format!("{other:?}"),
        }
    }

    /// Whether the kernel is compiled without wgpu's runtime bounds checks (see
    /// `GpuContext::pipeline` for why that is sound for these).
    pub fn is_trusted(&self) -> bool {
        match self {
            // Conv2d bounds-checks every access in the kernel (`conv.rs`), like the matmuls;
            // so do its backward kernels (`conv_backward.rs`).
            KernelKey::Matmul { .. }
            | KernelKey::MatmulLarge { .. }
            | KernelKey::MatmulCoop { .. }
            | KernelKey::ConvCoop(_)
            | KernelKey::Conv2d { .. }
            | KernelKey::Conv2dBackwardInput { .. }
            | KernelKey::Conv2dBackwardWeight { .. }
            | KernelKey::Conv2dSplitSum { .. } => true,
            KernelKey::Unary { access, .. }
            | KernelKey::Binary { access, .. }
            | KernelKey::BinaryScalar { access, .. }
            | KernelKey::Copy { access, .. } => *access == Access::Vector,
            KernelKey::Fused { program } => program.vector,
            KernelKey::Fill
            | KernelKey::Random { .. }
            | KernelKey::Where { .. }
            | KernelKey::Reduce { .. }
            | KernelKey::Gather { .. }
            | KernelKey::IndexRows { .. }
            | KernelKey::ScatterAdd { .. }
            | KernelKey::Custom { .. } => false,
        }
    }

    /// Whether the kernel touches f16 data (needs `enable f16;` and `SHADER_F16`).
    pub fn uses_f16(&self) -> bool {
        match self {
            KernelKey::Fill | KernelKey::Custom { .. } => false,
            KernelKey::MatmulCoop { .. } | KernelKey::ConvCoop(_) => true,
            KernelKey::Fused { program } => program.dtype == DType::F16,
            KernelKey::Random { dtype, .. }
            | KernelKey::Unary { dtype, .. }
            | KernelKey::Binary { dtype, .. }
            | KernelKey::BinaryScalar { dtype, .. }
            | KernelKey::Reduce { dtype, .. }
            | KernelKey::Matmul { dtype }
            | KernelKey::MatmulLarge { dtype, .. }
            | KernelKey::Conv2d { dtype, .. }
            | KernelKey::Conv2dBackwardInput { dtype, .. }
            | KernelKey::Conv2dBackwardWeight { dtype, .. }
            | KernelKey::Conv2dSplitSum { dtype }
            | KernelKey::Gather { dtype, .. }
            | KernelKey::IndexRows { dtype, .. }
            | KernelKey::ScatterAdd { dtype, .. } => *dtype == DType::F16,
            KernelKey::Where {
                condition, dtype, ..
            } => *condition == DType::F16 || *dtype == DType::F16,
            KernelKey::Copy { from, to, .. } => *from == DType::F16 || *to == DType::F16,
        }
    }

    /// The complete WGSL source of this kernel.
    pub fn source(&self) -> String {
        let mut text = String::new();
        if self.uses_f16() {
            text.push_str("enable f16;\n");
        }
        let contiguous_const =
            |access: Access| format!("const CONTIGUOUS: bool = {};\n", access != Access::Strided);
        // Vectorized kernels: the family's header, `common.wgsl`, then the generated body.
        let vector = |text: &mut String, family: VectorFamily| {
            text.push_str(COMMON);
            text.push_str(&super::vector::source_body(family));
        };
        if let KernelKey::Custom { inputs, source } = self {
            return super::custom::custom_source(*inputs, source);
        }
        if let KernelKey::Fused { program } = self {
            return program.source();
        }
        if let KernelKey::ConvCoop(key) = self {
            return key.source();
        }
        let template = match self {
            KernelKey::Custom { .. }
            | KernelKey::Fused { .. }
            | KernelKey::ConvCoop(_)
            | KernelKey::Fill => FILL,
            KernelKey::Random { dtype, normal } => {
                text.push_str(&format!(
                    "alias S = {};\nconst NORMAL: bool = {normal};\n",
                    storage_type(*dtype)
                ));
                RANDOM
            }
            KernelKey::Unary { dtype, op, access } => {
                text.push_str(&value_header(*dtype));
                text.push_str(&contiguous_const(*access));
                text.push_str(&format!(
                    "fn compute(x: T) -> T {{ return {}; }}\n",
                    unary_expression(*dtype, *op)
                ));
                if *access == Access::Vector {
                    vector(&mut text, VectorFamily::Unary);
                    return text;
                }
                UNARY
            }
            KernelKey::Binary { dtype, op, access } => {
                text.push_str(&value_header(*dtype));
                text.push_str(&contiguous_const(*access));
                text.push_str(&binary_functions(*dtype, *op));
                if *access == Access::Vector {
                    vector(&mut text, VectorFamily::Binary);
                    return text;
                }
                BINARY
            }
            KernelKey::BinaryScalar {
                dtype,
                op,
                scalar_on_left,
                access,
            } => {
                text.push_str(&value_header(*dtype));
                text.push_str(&contiguous_const(*access));
                text.push_str(&format!("const SCALAR_ON_LEFT: bool = {scalar_on_left};\n"));
                text.push_str(&binary_functions(*dtype, *op));
                let scalar = match class(*dtype) {
                    Class::Float => "bitcast<f32>(bits)",
                    Class::Signed => "bitcast<i32>(bits)",
                    Class::Unsigned => "bits",
                };
                text.push_str(&format!(
                    "fn scalar_value(bits: u32) -> T {{ return {scalar}; }}\n"
                ));
                if *access == Access::Vector {
                    vector(&mut text, VectorFamily::BinaryScalar);
                    return text;
                }
                BINARY_SCALAR
            }
            KernelKey::Where {
                condition,
                dtype,
                access,
            } => {
                text.push_str(&format!("alias S = {};\n", storage_type(*dtype)));
                text.push_str(&condition_header(*condition));
                text.push_str(&contiguous_const(*access));
                WHERE
            }
            KernelKey::Copy { from, to, access } => {
                text.push_str(&convert_header(*from, *to));
                text.push_str(&contiguous_const(*access));
                if *access == Access::Vector {
                    vector(&mut text, VectorFamily::Copy);
                    return text;
                }
                COPY
            }
            KernelKey::Reduce { dtype, op } => {
                text.push_str(&value_header(*dtype));
                text.push_str(&reduce_header(*dtype, *op));
                REDUCE
            }
            KernelKey::Matmul { dtype } => {
                text.push_str(&value_header(*dtype));
                MATMUL
            }
            KernelKey::MatmulLarge { dtype, aligned } => {
                text.push_str(&value_header(*dtype));
                text.push_str(COMMON);
                text.push_str(&super::matmul_large::source_body(*aligned));
                return text;
            }
            KernelKey::MatmulCoop { variant, emulated } => {
                text.push_str(&super::matmul_coop::source_body(*variant, *emulated));
                return text;
            }
            KernelKey::Conv2d { dtype, .. }
            | KernelKey::Conv2dBackwardInput { dtype, .. }
            | KernelKey::Conv2dBackwardWeight { dtype, .. }
            | KernelKey::Conv2dSplitSum { dtype } => {
                text.push_str(&value_header(*dtype));
                text.push_str(COMMON);
                text.push_str(&super::conv_gemm::source_body(self));
                return text;
            }
            KernelKey::Gather { dtype, index } | KernelKey::IndexRows { dtype, index } => {
                text.push_str(&format!(
                    "alias S = {stored};\nalias IX = {};\nconst ZERO: S = {stored}();\n",
                    storage_type(*index),
                    stored = storage_type(*dtype)
                ));
                match self {
                    KernelKey::IndexRows { .. } => INDEX_ROWS,
                    _ => GATHER,
                }
            }
            KernelKey::ScatterAdd { dtype, index } => {
                text.push_str(&format!(
                    "alias S = {};\nalias IX = {};\n",
                    storage_type(*dtype),
                    storage_type(*index)
                ));
                text.push_str(&atomic_add_header(*dtype));
                SCATTER_ADD
            }
        };
        text.push_str(COMMON);
        text.push_str(template);
        text
    }
}

/// `compute(a, b)` and `store_result` for a binary op (comparisons store Bool as 0/1).
fn binary_functions(dtype: DType, op: BinaryOp) -> String {
    if op.is_comparison() {
        format!(
            "alias O = u32;\nfn compute(a: T, b: T) -> bool {{ return {}; }}\n\
             fn store_result(r: bool) -> O {{ return select(0u, 1u, r); }}\n",
            binary_expression(dtype, op)
        )
    } else {
        format!(
            "alias O = S;\nfn compute(a: T, b: T) -> T {{ return {}; }}\n\
             fn store_result(r: T) -> O {{ return store_value(r); }}\n",
            binary_expression(dtype, op)
        )
    }
}
