//! Integer bit operators computed exactly on the host: BitShift, BitwiseAnd, BitwiseOr,
//! BitwiseXor, BitwiseNot. Results keep their operand's integer type.

use anygrad_core::DType;

use super::elementwise::integer_result;
use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::host_int64;
use crate::proto::DataType;
use crate::value::{Int64Tensor, Value};

/// The bit operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("BitShift", bit_shift),
    any_opset("BitwiseAnd", |c| bitwise(c, |a, b| a & b)),
    any_opset("BitwiseOr", |c| bitwise(c, |a, b| a | b)),
    any_opset("BitwiseXor", |c| bitwise(c, |a, b| a ^ b)),
    any_opset("BitwiseNot", bitwise_not),
];

/// The width in bits and the signedness of input 0's integer type: the graph's declaration
/// where it has one (int8 and int16 compute as int32 tensors), else the value's own type.
fn kind(ctx: &NodeContext, like: &Value) -> (u32, bool) {
    match ctx.declared_input_type(0) {
        Some(DataType::Int8) => (8, false),
        Some(DataType::Uint8) => (8, true),
        Some(DataType::Int16) => (16, false),
        Some(DataType::Uint16) => (16, true),
        Some(DataType::Int32) => (32, false),
        Some(DataType::Uint32) => (32, true),
        Some(DataType::Int64) => (64, false),
        Some(DataType::Uint64) => (64, true),
        _ => match like {
            Value::Int64(_) => (64, false),
            Value::Tensor(t) => (
                (t.dtype().size_in_bytes() * 8) as u32,
                matches!(t.dtype(), DType::U8 | DType::U32),
            ),
        },
    }
}

/// `v` wrapped into a signed integer of `bits` bits.
fn wrap_signed(v: i64, bits: u32) -> i64 {
    if bits >= 64 {
        v
    } else {
        let shift = 64 - bits;
        (v << shift) >> shift
    }
}

fn binary(ctx: &NodeContext, f: impl Fn(i64, i64) -> i64) -> Result<Vec<Value>> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if !a.is_integer() || !b.is_integer() {
        return Err(ctx.error("needs integer operands"));
    }
    let (x, y) = (ctx.int64(0)?, ctx.int64(1)?);
    let out =
        host_int64::elementwise(&[&x, &y], |v| Ok(f(v[0], v[1]))).map_err(|e| ctx.error(e))?;
    single(integer_result(ctx, out, a, ctx.device)?)
}

fn bitwise(ctx: &NodeContext, f: fn(i64, i64) -> i64) -> Result<Vec<Value>> {
    binary(ctx, f)
}

fn bit_shift(ctx: &NodeContext) -> Result<Vec<Value>> {
    let left = match ctx.attr_string("direction", "")?.as_str() {
        "LEFT" => true,
        "RIGHT" => false,
        other => return Err(ctx.error(format!("direction `{other}` is not LEFT or RIGHT"))),
    };
    let first = ctx.input(0)?;
    // Unsigned types shift as unsigned; signed ones arithmetically (a shift by the width or
    // more, or a negative one, leaves 0, or -1 for a negative value shifted right).
    let (bits, unsigned) = kind(ctx, first);
    let mask: u64 = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    binary(ctx, move |a, b| {
        let out_of_range = b < 0 || b >= bits as i64;
        if unsigned {
            let a = a as u64 & mask;
            return if out_of_range {
                0
            } else if left {
                ((a << b) & mask) as i64
            } else {
                (a >> b) as i64
            };
        }
        if left {
            if out_of_range {
                0
            } else {
                wrap_signed(a.wrapping_shl(b as u32), bits)
            }
        } else if out_of_range {
            if a < 0 {
                -1
            } else {
                0
            }
        } else {
            a >> b
        }
    })
}

fn bitwise_not(ctx: &NodeContext) -> Result<Vec<Value>> {
    let a = ctx.input(0)?;
    if !a.is_integer() {
        return Err(ctx.error("needs an integer operand"));
    }
    let x = ctx.int64(0)?;
    let (bits, unsigned) = kind(ctx, a);
    let data = x
        .data
        .iter()
        .map(|&v| {
            if unsigned && bits < 64 {
                (!(v as u64) & ((1u64 << bits) - 1)) as i64
            } else {
                !v
            }
        })
        .collect();
    let out = Int64Tensor {
        shape: x.shape,
        data,
    };
    single(integer_result(ctx, out, a, ctx.device)?)
}
