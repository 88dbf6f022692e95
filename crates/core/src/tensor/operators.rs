//! Rust operator overloading for tensors: `&a + &b`, `&a - &b`, `&a * &b`, `&a / &b`, the same
//! with an `f64` on the right (`&a * 2.0`), and `-&a`.
//!
//! Tensor ops can fail (mismatched shapes, devices or dtypes), so every operator returns
//! `Result<Tensor>` and needs a `?`: `let y = (&(&a * 2.0)? + &b)?;`. They are the same calls
//! as the named methods (`add`, `mul_scalar`, ...), with broadcasting and autograd.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::Tensor;
use crate::error::Result;

macro_rules! tensor_operator {
    ($($trait:ident, $method:ident => $tensor_op:ident, $scalar_op:ident;)*) => {
        $(
            impl $trait<&Tensor> for &Tensor {
                type Output = Result<Tensor>;

                #[doc = concat!("`Tensor::", stringify!($tensor_op), "` as an operator.")]
                fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                    self.$tensor_op(rhs)
                }
            }

            impl $trait<f64> for &Tensor {
                type Output = Result<Tensor>;

                #[doc = concat!("`Tensor::", stringify!($scalar_op), "` as an operator.")]
                fn $method(self, rhs: f64) -> Result<Tensor> {
                    self.$scalar_op(rhs)
                }
            }
        )*
    };
}

tensor_operator! {
    Add, add => add, add_scalar;
    Sub, sub => sub, sub_scalar;
    Mul, mul => mul, mul_scalar;
    Div, div => div, div_scalar;
}

impl Neg for &Tensor {
    type Output = Result<Tensor>;

    /// `Tensor::neg` as an operator.
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}
