//! The WGSL pieces every kernel family shares, by dtype and op: the stored and computed WGSL
//! types of a dtype, the value header (`S`, `T`, `load_value`, `store_value` and the float or
//! integer helpers of `shaders/float_helpers.wgsl` / `integer_helpers.wgsl`), the op
//! expressions taken from `op.rs`, and the snippets `common.wgsl` (included by every kernel)
//! and `strided.wgsl` (kernels whose params end in a `tail` of shapes and strides); the
//! spelling of cooperative-matrix operations is in `wgsl/cooperative.rs`.
//! A leaf module: families build on it, it knows no family.
//!
//! How dtypes live on the GPU (WGSL has no 8-bit or bool storage types):
//! F32 as `f32`; F16 as `f16` (needs `SHADER_F16`; computed in f32); I32 as `i32`; U32 as
//! `u32`; **U8 and Bool as one `u32` per element** (values 0..=255, resp. 0/1); **BF16 as two
//! elements per `u32` word** (element `2k` in the low half of word `k`; WGSL has no bf16 type:
//! only the conversions of `elementwise/bfloat16.rs` read it, every other op runs in f32 through
//! `storage.rs`); F64 is refused.

pub(crate) mod cooperative;

use crate::dtype::DType;
use crate::op::{BinaryOp, UnaryOp};

/// `linear_id`: included by every kernel (but the matmuls, which tile their own grid).
pub(crate) const COMMON: &str = include_str!("shaders/common.wgsl");
/// `strided_position` over `params.tail` (for families whose params declare a `tail`).
pub(crate) const STRIDED: &str = include_str!("shaders/strided.wgsl");

/// How a dtype is computed on: floats in f32, I32 in i32, unsigned kinds in u32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// F32, F16 (and the refused F64): computed in f32.
    Float,
    /// I32.
    Signed,
    /// U32, U8 and Bool.
    Unsigned,
}

pub(crate) fn class(dtype: DType) -> Class {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 | DType::F64 => Class::Float,
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
        DType::U32 | DType::U8 | DType::Bool | DType::BF16 => "u32",
    }
}

/// Bytes per element in a GPU buffer.
pub(crate) fn gpu_element_size(dtype: DType) -> u64 {
    match dtype {
        DType::F16 | DType::BF16 => 2,
        DType::F32 | DType::F64 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => 4,
    }
}

/// Elements of `dtype` in one 16-byte vector, for the kernels that move F16 and F32 data
/// as `vec4<u32>`-sized vectors (8 and 4); `None` for the other dtypes.
pub(crate) fn vector_lanes(dtype: DType) -> Option<usize> {
    match dtype {
        DType::F16 => Some(8),
        DType::F32 => Some(4),
        DType::BF16 | DType::F64 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => None,
    }
}

pub(crate) fn compute_type(dtype: DType) -> &'static str {
    match class(dtype) {
        Class::Float => "f32",
        Class::Signed => "i32",
        Class::Unsigned => "u32",
    }
}

/// `narrow(v)` keeps a computed u32 inside the dtype's range (U8 wraps like `as u8`, Bool
/// becomes 0/1), as the CPU's `as` conversion does.
pub(crate) fn narrow_expression(dtype: DType, value: &str) -> String {
    match dtype {
        DType::U8 => format!("({value} & 0xFFu)"),
        DType::Bool => format!("select(0u, 1u, {value} != 0u)"),
        DType::F32 | DType::F16 | DType::BF16 | DType::F64 | DType::I32 | DType::U32 => {
            value.to_string()
        }
    }
}

/// Type aliases, conversions and helpers for a kernel whose main dtype is `dtype`.
pub(crate) fn value_header(dtype: DType) -> String {
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
const FLOAT_HELPERS: &str = include_str!("shaders/float_helpers.wgsl");

/// Integer versions of the helper names (no NaN; pow by squaring, wrapping like the CPU).
const INTEGER_HELPERS: &str = include_str!("shaders/integer_helpers.wgsl");

/// The WGSL expression of a unary op over `x: T` for `dtype`.
pub(crate) fn unary_expression(dtype: DType, op: UnaryOp) -> &'static str {
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
            | UnaryOp::Silu
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc => op.wgsl(),
        },
        // Integers are already whole: the rounding ops are the identity.
        Class::Signed => match op {
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => "x",
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Recip
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Relu
            | UnaryOp::Gelu
            | UnaryOp::Erf
            | UnaryOp::Silu => op.wgsl(),
        },
        // Unsigned values: the CPU computes in i64 and wraps back (`-x as u32`).
        Class::Unsigned => match op {
            UnaryOp::Neg => "0u - x",
            UnaryOp::Abs
            | UnaryOp::Relu
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc => "x",
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
pub(crate) fn binary_expression(dtype: DType, op: BinaryOp) -> &'static str {
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
        DType::BF16 | DType::F64 | DType::Bool => false,
    }
}

/// The dtypes the GPU's kernel families are built for. BF16 is stored too, but only its
/// conversions are kernels (`elementwise/bfloat16.rs`): every other op runs on it in f32.
pub const GPU_DTYPES: [DType; 6] = [
    DType::F32,
    DType::F16,
    DType::I32,
    DType::U32,
    DType::U8,
    DType::Bool,
];
/// Dtypes an index tensor may have.
pub const INDEX_DTYPES: [DType; 3] = [DType::I32, DType::U32, DType::U8];
