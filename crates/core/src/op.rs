//! The primitive ops. Each enum variant carries its own name, its CPU scalar function and its
//! WGSL expression, and every `match` over them is exhaustive: adding an op makes the compiler
//! list every place that must learn about it (CPU loop, WGSL template, derivative rule).

use num_traits::Float;

/// Elementwise functions of one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sign,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Recip,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    Gelu,
    Erf,
    Silu,
    Floor,
    Ceil,
    /// Round half to even (`torch.round`).
    Round,
    Trunc,
}

impl UnaryOp {
    /// True when the derivative is a function of the output alone (relu, exp, sigmoid, tanh),
    /// so autograd records the output instead of the input.
    pub fn derivative_from_output(self) -> bool {
        match self {
            UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Relu => true,
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Recip
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Gelu
            | UnaryOp::Erf
            | UnaryOp::Silu
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc => false,
        }
    }

    /// Every unary op (tests and `doctor` iterate over this).
    pub const ALL: [UnaryOp; 20] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sign,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Recip,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::Erf,
        UnaryOp::Silu,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Trunc,
    ];

    /// The op's user-facing name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Sign => "sign",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Recip => "reciprocal",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Erf => "erf",
            UnaryOp::Silu => "silu",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Trunc => "trunc",
        }
    }

    /// True when the op also makes sense on signed integers (the rest need floats).
    pub fn supports_integers(self) -> bool {
        match self {
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Relu
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc => true,
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
            | UnaryOp::Silu => false,
        }
    }

    /// The CPU reference for floats. Guarded like the WGSL: sigmoid and tanh never overflow.
    pub fn apply<T: Float>(self, x: T) -> T {
        let one = T::one();
        let half = T::from(0.5).unwrap_or(one);
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sign => {
                if x > T::zero() {
                    one
                } else if x < T::zero() {
                    -one
                } else {
                    x * T::zero()
                }
            }
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => one / x.sqrt(),
            UnaryOp::Recip => one / x,
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => stable_sigmoid(x),
            UnaryOp::Relu => {
                if x > T::zero() || x.is_nan() {
                    x
                } else {
                    T::zero()
                }
            }
            UnaryOp::Gelu => {
                half * x * (one + erf(x * T::from(std::f64::consts::FRAC_1_SQRT_2).unwrap_or(one)))
            }
            UnaryOp::Erf => erf(x),
            UnaryOp::Silu => x * stable_sigmoid(x),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => round_half_even(x),
            UnaryOp::Trunc => x.trunc(),
        }
    }

    /// The CPU reference for signed integers, or `None` when the op needs floats.
    pub fn apply_integer(self, x: i64) -> Option<i64> {
        match self {
            UnaryOp::Neg => Some(x.wrapping_neg()),
            UnaryOp::Abs => Some(x.wrapping_abs()),
            UnaryOp::Sign => Some(x.signum()),
            UnaryOp::Relu => Some(x.max(0)),
            // Integers are already whole.
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => Some(x),
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
            | UnaryOp::Silu => None,
        }
    }

    /// The WGSL expression of the op over a value `x` of the kernel's float type `T`
    /// (the template defines `T` and the helper functions `erf_approx` and `sigmoid_stable`).
    pub fn wgsl(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-x",
            UnaryOp::Abs => "abs(x)",
            UnaryOp::Sign => "sign(x)",
            UnaryOp::Exp => "exp(x)",
            UnaryOp::Log => "log(x)",
            UnaryOp::Sqrt => "sqrt(x)",
            UnaryOp::Rsqrt => "inverseSqrt(x)",
            UnaryOp::Recip => "T(1.0) / x",
            // Our own range reduction (`float_helpers.wgsl`): drivers' sin/cos differ near
            // multiples of pi.
            UnaryOp::Sin => "sin_accurate(x)",
            UnaryOp::Cos => "cos_accurate(x)",
            // tanh saturates to ±1 beyond |x| = 15 in every precision; clamping first keeps
            // the exp inside some drivers' tanh from overflowing to inf/inf = NaN.
            UnaryOp::Tanh => "tanh(clamp(x, T(-15.0), T(15.0)))",
            UnaryOp::Sigmoid => "sigmoid_stable(x)",
            UnaryOp::Relu => "max(x, T(0.0))",
            UnaryOp::Gelu => "T(0.5) * x * (T(1.0) + erf_approx(x * T(0.70710678118654752)))",
            UnaryOp::Erf => "erf_approx(x)",
            UnaryOp::Silu => "x * sigmoid_stable(x)",
            UnaryOp::Floor => "floor(x)",
            UnaryOp::Ceil => "ceil(x)",
            // WGSL's round() rounds half to even, as torch.round does.
            UnaryOp::Round => "round(x)",
            UnaryOp::Trunc => "trunc(x)",
        }
    }
}

/// `x` rounded to the nearest whole number, halves to the even one (`torch.round`, WGSL's
/// `round`; `Float::round` would take halves away from zero).
pub fn round_half_even<T: Float>(x: T) -> T {
    let rounded = x.round();
    let two = T::one() + T::one();
    if (rounded - x).abs() == T::one() / two {
        two * (x / two).round()
    } else {
        rounded
    }
}

/// Sigmoid that never evaluates `exp` of a large positive number.
pub fn stable_sigmoid<T: Float>(x: T) -> T {
    let one = T::one();
    if x >= T::zero() {
        one / (one + (-x).exp())
    } else {
        let e = x.exp();
        e / (one + e)
    }
}

/// The error function, by Abramowitz & Stegun formula 7.1.26 (|error| < 1.5e-7), the same
/// formula the WGSL kernels use, so CPU and GPU agree.
pub fn erf<T: Float>(x: T) -> T {
    let c = |v: f64| T::from(v).unwrap_or(T::zero());
    let sign = if x < T::zero() { -T::one() } else { T::one() };
    let a = x.abs();
    let t = T::one() / (T::one() + c(0.327_591_1) * a);
    let poly = ((((c(1.061_405_429) * t + c(-1.453_152_027)) * t + c(1.421_413_741)) * t
        + c(-0.284_496_736))
        * t
        + c(0.254_829_592))
        * t;
    sign * (T::one() - poly * (-a * a).exp())
}

/// Elementwise functions of two operands of the same shape (after broadcasting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Maximum,
    Minimum,
    Pow,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `a & b` (integer and Bool dtypes only).
    BitwiseAnd,
    /// `a | b` (integer and Bool dtypes only).
    BitwiseOr,
    /// `a ^ b` (integer and Bool dtypes only).
    BitwiseXor,
    /// `a << b` (integer dtypes only): 0 when `b` is negative or at least 64, and the bits
    /// shifted past the dtype's width are lost, as in PyTorch.
    ShiftLeft,
    /// `a >> b` (integer dtypes only), arithmetic for signed dtypes: `b` negative or at least
    /// 64 shifts every bit out (0, or -1 for a negative signed `a`).
    ShiftRight,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 18] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Pow,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::BitwiseAnd,
        BinaryOp::BitwiseOr,
        BinaryOp::BitwiseXor,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRight,
    ];

    /// The op's user-facing name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "pow",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::BitwiseAnd => "bitwise_and",
            BinaryOp::BitwiseOr => "bitwise_or",
            BinaryOp::BitwiseXor => "bitwise_xor",
            BinaryOp::ShiftLeft => "bitwise_left_shift",
            BinaryOp::ShiftRight => "bitwise_right_shift",
        }
    }

    /// True for the bit operators, defined on integer and Bool dtypes only (no float kernel,
    /// no gradient).
    pub fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryOp::BitwiseAnd
                | BinaryOp::BitwiseOr
                | BinaryOp::BitwiseXor
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRight
        )
    }

    /// True for comparisons, whose result dtype is `Bool`.
    pub fn is_comparison(self) -> bool {
        match self {
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => true,
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Maximum
            | BinaryOp::Minimum
            | BinaryOp::Pow
            | BinaryOp::BitwiseAnd
            | BinaryOp::BitwiseOr
            | BinaryOp::BitwiseXor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRight => false,
        }
    }

    /// The CPU reference for floats (comparisons give 1 or 0). The bit operators have no float
    /// meaning: the dispatcher refuses float operands before this runs, and they give NaN here.
    pub fn apply<T: Float>(self, a: T, b: T) -> T {
        let truth = |v: bool| if v { T::one() } else { T::zero() };
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            // NaN propagates through maximum/minimum, as in PyTorch.
            BinaryOp::Maximum => {
                if a.is_nan() || b.is_nan() {
                    T::nan()
                } else {
                    a.max(b)
                }
            }
            BinaryOp::Minimum => {
                if a.is_nan() || b.is_nan() {
                    T::nan()
                } else {
                    a.min(b)
                }
            }
            BinaryOp::Pow => a.powf(b),
            BinaryOp::Eq => truth(a == b),
            BinaryOp::Ne => truth(a != b),
            BinaryOp::Lt => truth(a < b),
            BinaryOp::Le => truth(a <= b),
            BinaryOp::Gt => truth(a > b),
            BinaryOp::Ge => truth(a >= b),
            BinaryOp::BitwiseAnd
            | BinaryOp::BitwiseOr
            | BinaryOp::BitwiseXor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRight => T::nan(),
        }
    }

    /// The CPU reference for integers (division truncates; division by zero gives 0).
    pub fn apply_integer(self, a: i64, b: i64) -> i64 {
        let truth = |v: bool| v as i64;
        match self {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            BinaryOp::Mul => a.wrapping_mul(b),
            BinaryOp::Div => a.checked_div(b).unwrap_or(0),
            BinaryOp::Maximum => a.max(b),
            BinaryOp::Minimum => a.min(b),
            BinaryOp::Pow => {
                if b < 0 {
                    0
                } else {
                    a.wrapping_pow(b.min(u32::MAX as i64) as u32)
                }
            }
            BinaryOp::Eq => truth(a == b),
            BinaryOp::Ne => truth(a != b),
            BinaryOp::Lt => truth(a < b),
            BinaryOp::Le => truth(a <= b),
            BinaryOp::Gt => truth(a > b),
            BinaryOp::Ge => truth(a >= b),
            BinaryOp::BitwiseAnd => a & b,
            BinaryOp::BitwiseOr => a | b,
            BinaryOp::BitwiseXor => a ^ b,
            // Operands come from at most 32-bit dtypes, so shifts below 64 are exact in i64
            // and the caller's narrowing drops the bits past the dtype's width.
            BinaryOp::ShiftLeft => match u32::try_from(b) {
                Ok(shift) if shift < 64 => a.wrapping_shl(shift),
                _ => 0,
            },
            BinaryOp::ShiftRight => match u32::try_from(b) {
                Ok(shift) if shift < 64 => a >> shift,
                _ => a >> 63,
            },
        }
    }

    /// The WGSL expression over `a` and `b` of the kernel's type `T`; comparisons yield a
    /// WGSL `bool` that the template converts to the stored 0/1.
    pub fn wgsl(self) -> &'static str {
        match self {
            BinaryOp::Add => "a + b",
            BinaryOp::Sub => "a - b",
            BinaryOp::Mul => "a * b",
            BinaryOp::Div => "a / b",
            BinaryOp::Maximum => "maximum_nan(a, b)",
            BinaryOp::Minimum => "minimum_nan(a, b)",
            BinaryOp::Pow => "pow_signed(a, b)",
            BinaryOp::Eq => "a == b",
            BinaryOp::Ne => "a != b",
            BinaryOp::Lt => "a < b",
            BinaryOp::Le => "a <= b",
            BinaryOp::Gt => "a > b",
            BinaryOp::Ge => "a >= b",
            BinaryOp::BitwiseAnd => "a & b",
            BinaryOp::BitwiseOr => "a | b",
            BinaryOp::BitwiseXor => "a ^ b",
            BinaryOp::ShiftLeft => "shift_left(a, b)",
            BinaryOp::ShiftRight => "shift_right(a, b)",
        }
    }
}

/// Reductions over a set of dims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    /// The sum divided by the number of reduced elements, in one pass (float dtypes; the
    /// accumulation in f32 or wider, one rounding to the stored type).
    Mean,
    Max,
    Min,
    ArgMax,
    ArgMin,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 6] = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
    ];

    /// The op's user-facing name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
        }
    }

    /// True for argmax/argmin, whose result holds `I32` indices along a single dim.
    pub fn is_arg(self) -> bool {
        match self {
            ReduceOp::ArgMax | ReduceOp::ArgMin => true,
            ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min => false,
        }
    }
}

/// The activation a fused convolution applies last, in its store
/// (`Tensor::conv2d_fused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EpilogueActivation {
    /// No activation.
    Identity,
    /// `max(x, 0)`.
    Relu,
}

impl EpilogueActivation {
    /// Both activations.
    pub const ALL: [EpilogueActivation; 2] =
        [EpilogueActivation::Identity, EpilogueActivation::Relu];

    /// The activation's name (`"identity"`, `"relu"`).
    pub fn name(self) -> &'static str {
        match self {
            EpilogueActivation::Identity => "identity",
            EpilogueActivation::Relu => "relu",
        }
    }

    /// The activation of one value (the CPU's reference).
    pub fn apply<T: Float>(self, value: T) -> T {
        match self {
            EpilogueActivation::Identity => value,
            // As `UnaryOp::Relu`: NaN passes through.
            EpilogueActivation::Relu => {
                if value > T::zero() || value.is_nan() {
                    value
                } else {
                    T::zero()
                }
            }
        }
    }
}
