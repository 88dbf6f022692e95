//! Decoding a `TensorProto` into a `HostTensor`: the shape checked (no negative dims, no
//! overflowing or absurd element count), the values taken from `raw_data` (little-endian),
//! the typed fields or an external file, and their count checked against the shape.

use std::path::Path;

use half::f16;

use crate::error::{OnnxError, Result};
use crate::external_data::read_external_data;
use crate::host_tensor::{HostData, HostTensor};
use crate::proto::{DataLocation, DataType, TensorProto};
use crate::value::element_count;

/// The shape of `dims`, refusing negative dims and absurd element counts.
pub(crate) fn checked_shape(dims: &[i64]) -> std::result::Result<Vec<usize>, String> {
    let mut shape = Vec::with_capacity(dims.len());
    for &d in dims {
        shape.push(usize::try_from(d).map_err(|_| format!("negative dim {d} in {dims:?}"))?);
    }
    element_count(&shape)?;
    Ok(shape)
}

/// The values of `tensor` (external data read from below `folder`).
pub fn decode_tensor(tensor: &TensorProto, folder: Option<&Path>) -> Result<HostTensor> {
    let name = if tensor.name.is_empty() {
        "(unnamed)".to_string()
    } else {
        tensor.name.clone()
    };
    let fail = |message: String| OnnxError::Tensor {
        name: name.clone(),
        message,
    };
    let shape = checked_shape(&tensor.dims).map_err(&fail)?;
    let count: usize = shape.iter().product();
    if tensor.segment.is_some() {
        return Err(fail("segmented tensors are not supported".into()));
    }
    let data_type = DataType::try_from(tensor.data_type).map_err(|_| {
        fail(format!(
            "unknown element type {} (not in TensorProto.DataType)",
            tensor.data_type
        ))
    })?;
    let external;
    let raw: Option<&[u8]> = if tensor.data_location == DataLocation::External as i32 {
        external = read_external_data(tensor, folder).map_err(&fail)?;
        Some(&external)
    } else if !tensor.raw_data.is_empty() {
        Some(&tensor.raw_data)
    } else {
        None
    };
    let data = match raw {
        Some(bytes) => from_raw(data_type, bytes, count).map_err(&fail)?,
        None => from_typed(tensor, data_type, count).map_err(&fail)?,
    };
    if data.len() != count {
        return Err(fail(format!(
            "{} values for shape {shape:?} ({count} elements)",
            data.len()
        )));
    }
    Ok(HostTensor { shape, data })
}

/// Values packed little-endian in `bytes`.
pub(crate) fn from_raw(
    data_type: DataType,
    bytes: &[u8],
    count: usize,
) -> std::result::Result<HostData, String> {
    let width = match data_type {
        DataType::Float | DataType::Int32 | DataType::Uint32 => 4,
        DataType::Double | DataType::Int64 | DataType::Uint64 => 8,
        DataType::Float16 | DataType::Bfloat16 | DataType::Int16 | DataType::Uint16 => 2,
        DataType::Int8 | DataType::Uint8 | DataType::Bool => 1,
        other => return Err(format!("element type {other:?} is not supported")),
    };
    if bytes.len() != count.saturating_mul(width) {
        return Err(format!(
            "raw data of {} bytes for {count} elements of {width} bytes each",
            bytes.len()
        ));
    }
    fn chunks<const N: usize, T>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect()
    }
    Ok(match data_type {
        DataType::Float => HostData::F32(chunks(bytes, f32::from_le_bytes)),
        DataType::Int32 => HostData::I32(chunks(bytes, i32::from_le_bytes)),
        DataType::Uint32 => HostData::U32(chunks(bytes, u32::from_le_bytes)),
        DataType::Double => HostData::F64(chunks(bytes, f64::from_le_bytes)),
        DataType::Int64 => HostData::I64(chunks(bytes, i64::from_le_bytes)),
        DataType::Uint64 => HostData::U64(chunks(bytes, u64::from_le_bytes)),
        DataType::Float16 => {
            HostData::F16(chunks(bytes, |b| f16::from_bits(u16::from_le_bytes(b))))
        }
        DataType::Bfloat16 => HostData::F32(chunks(bytes, |b| {
            f32::from_bits((u16::from_le_bytes(b) as u32) << 16)
        })),
        DataType::Int16 => HostData::I16(chunks(bytes, i16::from_le_bytes)),
        DataType::Uint16 => HostData::U16(chunks(bytes, u16::from_le_bytes)),
        DataType::Int8 => HostData::I8(bytes.iter().map(|&b| b as i8).collect()),
        DataType::Uint8 => HostData::U8(bytes.to_vec()),
        _ => HostData::Bool(bytes.iter().map(|&b| b != 0).collect()),
    })
}

/// Values from the typed field `data_type` uses.
fn from_typed(
    tensor: &TensorProto,
    data_type: DataType,
    count: usize,
) -> std::result::Result<HostData, String> {
    let ints = &tensor.int32_data;
    let narrow = |what: &str| format!("int32_data value out of range for {what}");
    Ok(match data_type {
        DataType::Float => HostData::F32(tensor.float_data.clone()),
        DataType::Double => HostData::F64(tensor.double_data.clone()),
        DataType::Int64 => HostData::I64(tensor.int64_data.clone()),
        DataType::Int32 => HostData::I32(ints.clone()),
        DataType::Int16 => HostData::I16(
            ints.iter()
                .map(|&x| i16::try_from(x).map_err(|_| narrow("int16")))
                .collect::<std::result::Result<_, _>>()?,
        ),
        DataType::Int8 => HostData::I8(
            ints.iter()
                .map(|&x| i8::try_from(x).map_err(|_| narrow("int8")))
                .collect::<std::result::Result<_, _>>()?,
        ),
        DataType::Uint16 => HostData::U16(
            ints.iter()
                .map(|&x| u16::try_from(x).map_err(|_| narrow("uint16")))
                .collect::<std::result::Result<_, _>>()?,
        ),
        DataType::Uint8 => HostData::U8(
            ints.iter()
                .map(|&x| u8::try_from(x).map_err(|_| narrow("uint8")))
                .collect::<std::result::Result<_, _>>()?,
        ),
        DataType::Bool => HostData::Bool(ints.iter().map(|&x| x != 0).collect()),
        DataType::Float16 => {
            HostData::F16(ints.iter().map(|&x| f16::from_bits(x as u16)).collect())
        }
        DataType::Bfloat16 => HostData::F32(
            ints.iter()
                .map(|&x| f32::from_bits(((x as u32) & 0xffff) << 16))
                .collect(),
        ),
        DataType::Uint32 => HostData::U32(
            tensor
                .uint64_data
                .iter()
                .map(|&x| {
                    u32::try_from(x)
                        .map_err(|_| "uint64_data value out of range for uint32".to_string())
                })
                .collect::<std::result::Result<_, _>>()?,
        ),
        DataType::Uint64 => HostData::U64(tensor.uint64_data.clone()),
        DataType::String => HostData::String(tensor.string_data.clone()),
        DataType::Undefined => {
            if count == 0 {
                HostData::F32(Vec::new())
            } else {
                return Err("element type UNDEFINED".into());
            }
        }
        other => return Err(format!("element type {other:?} is not supported")),
    })
}
