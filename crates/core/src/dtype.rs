//! Element types. `DType` is the run-time tag carried by every tensor; `Element` links a Rust
//! scalar type to its tag so that typed constructors (`Tensor::from_vec`) and readers
//! (`to_vec`) are checked at compile time and at run time.

use half::{bf16, f16};

/// The element type of a tensor.
///
/// `F64` exists for the CPU backend (finite-difference gradient checks, reference maths);
/// the GPU backend refuses it with `Error::Unsupported`. `Bool` holds 0 or 1. `BF16`
/// (bfloat16: f32's 8 exponent bits with 7 mantissa bits) is stored as 16 bits on every
/// device and computed in f32, each result rounded to nearest even as PyTorch rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    BF16,
    F64,
    I32,
    U32,
    U8,
    Bool,
}

impl DType {
    /// Every dtype, in a fixed order (for tests and `doctor`).
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I32,
        DType::U32,
        DType::U8,
        DType::Bool,
    ];

    /// The lower-case name PyTorch users know (`float32`, `int32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F64 => "float64",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::U8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// Bytes per element on the CPU.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 => 8,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// True for floating-point dtypes (the ones autograd and float maths accept).
    pub fn is_float(self) -> bool {
        match self {
            DType::F32 | DType::F16 | DType::BF16 | DType::F64 => true,
            DType::I32 | DType::U32 | DType::U8 | DType::Bool => false,
        }
    }

    /// True for dtypes usable as indices (`index_select`, `gather`, labels).
    pub fn is_index(self) -> bool {
        match self {
            DType::I32 | DType::U32 | DType::U8 => true,
            DType::F32 | DType::F16 | DType::BF16 | DType::F64 | DType::Bool => false,
        }
    }

    /// Parse a dtype name as written on the command line (`f32`, `float16`, ...).
    pub fn parse(name: &str) -> Option<DType> {
        match name {
            "f32" | "float32" | "float" => Some(DType::F32),
            "f16" | "float16" | "half" => Some(DType::F16),
            "bf16" | "bfloat16" => Some(DType::BF16),
            "f64" | "float64" | "double" => Some(DType::F64),
            "i32" | "int32" | "int" => Some(DType::I32),
            "u32" | "uint32" => Some(DType::U32),
            "u8" | "uint8" => Some(DType::U8),
            "bool" => Some(DType::Bool),
            _ => None,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust scalar type that can be the element of a tensor.
pub trait Element: Copy + Send + Sync + 'static + std::fmt::Debug {
    /// The tensor dtype for this Rust type.
    const DTYPE: DType;
    /// Convert to f64 (exact for every supported type).
    fn to_f64(self) -> f64;
    /// Convert from f64 with the usual `as` semantics (saturating for integers).
    fn from_f64(value: f64) -> Self;
}

macro_rules! element_impl {
    ($rust:ty, $dtype:expr) => {
        impl Element for $rust {
            const DTYPE: DType = $dtype;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(value: f64) -> Self {
                value as $rust
            }
        }
    };
}
element_impl!(f32, DType::F32);
element_impl!(f64, DType::F64);
element_impl!(i32, DType::I32);
element_impl!(u32, DType::U32);
element_impl!(u8, DType::U8);

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(value: f64) -> Self {
        f16::from_f64(value)
    }
}

/// bfloat16 elements. `from_f64` rounds through f32 (to nearest even each time), as PyTorch
/// converts a double to bfloat16.
impl Element for bf16 {
    const DTYPE: DType = DType::BF16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(value: f64) -> Self {
        bf16_from_f32(value as f32)
    }
}

/// `value` rounded to the nearest bfloat16, ties to even, as PyTorch rounds (`c10::BFloat16`):
/// infinities stay infinite, a value past the largest finite bfloat16 becomes infinite, and
/// every NaN becomes the canonical quiet NaN `0x7FC0`. Both backends convert with these rules.
pub fn bf16_from_f32(value: f32) -> bf16 {
    if value.is_nan() {
        bf16::from_bits(0x7FC0)
    } else {
        bf16::from_f32(value)
    }
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    fn from_f64(value: f64) -> Self {
        value != 0.0
    }
}
