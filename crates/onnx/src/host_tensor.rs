//! `HostTensor`: a tensor's values in host memory, in any ONNX element type the importer
//! reads (what `.pb` test data, `.npy` files and model outputs are exchanged as), and its
//! conversions to and from executor values.

use anygrad_core::{DType, Device, Tensor};
use half::f16;

use crate::proto::DataType;
use crate::value::{Int64Tensor, Value};

/// Values in host memory, one variant per element type.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    /// float32.
    F32(Vec<f32>),
    /// float16.
    F16(Vec<f16>),
    /// float64.
    F64(Vec<f64>),
    /// int8.
    I8(Vec<i8>),
    /// int16.
    I16(Vec<i16>),
    /// int32.
    I32(Vec<i32>),
    /// int64.
    I64(Vec<i64>),
    /// uint8.
    U8(Vec<u8>),
    /// uint16.
    U16(Vec<u16>),
    /// uint32.
    U32(Vec<u32>),
    /// uint64.
    U64(Vec<u64>),
    /// bool.
    Bool(Vec<bool>),
    /// UTF-8 strings (read, never run).
    String(Vec<Vec<u8>>),
}

/// A tensor in host memory: a shape and values in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// The shape.
    pub shape: Vec<usize>,
    /// The values (as many as the shape's product).
    pub data: HostData,
}

impl HostData {
    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            HostData::F32(v) => v.len(),
            HostData::F16(v) => v.len(),
            HostData::F64(v) => v.len(),
            HostData::I8(v) => v.len(),
            HostData::I16(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::I64(v) => v.len(),
            HostData::U8(v) => v.len(),
            HostData::U16(v) => v.len(),
            HostData::U32(v) => v.len(),
            HostData::U64(v) => v.len(),
            HostData::Bool(v) => v.len(),
            HostData::String(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ONNX element type.
    pub fn data_type(&self) -> DataType {
        match self {
            HostData::F32(_) => DataType::Float,
            HostData::F16(_) => DataType::Float16,
            HostData::F64(_) => DataType::Double,
            HostData::I8(_) => DataType::Int8,
            HostData::I16(_) => DataType::Int16,
            HostData::I32(_) => DataType::Int32,
            HostData::I64(_) => DataType::Int64,
            HostData::U8(_) => DataType::Uint8,
            HostData::U16(_) => DataType::Uint16,
            HostData::U32(_) => DataType::Uint32,
            HostData::U64(_) => DataType::Uint64,
            HostData::Bool(_) => DataType::Bool,
            HostData::String(_) => DataType::String,
        }
    }

    /// True for the float types.
    pub fn is_float(&self) -> bool {
        matches!(self, HostData::F32(_) | HostData::F16(_) | HostData::F64(_))
    }

    /// Every value as f64 (integers exactly up to 2^53; strings: none).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            HostData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
            HostData::F64(v) => v.clone(),
            HostData::I8(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::I16(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::I32(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::U8(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::U16(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::U32(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::U64(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::Bool(v) => v.iter().map(|&x| if x { 1.0 } else { 0.0 }).collect(),
            HostData::String(_) => Vec::new(),
        }
    }

    /// The values packed little-endian (ONNX's `raw_data` layout); strings have none.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        fn pack<T, const N: usize>(values: &[T], f: impl Fn(&T) -> [u8; N]) -> Vec<u8> {
            values.iter().flat_map(f).collect()
        }
        match self {
            HostData::F32(v) => pack(v, |x| x.to_le_bytes()),
            HostData::F16(v) => pack(v, |x| x.to_le_bytes()),
            HostData::F64(v) => pack(v, |x| x.to_le_bytes()),
            HostData::I8(v) => pack(v, |x| x.to_le_bytes()),
            HostData::I16(v) => pack(v, |x| x.to_le_bytes()),
            HostData::I32(v) => pack(v, |x| x.to_le_bytes()),
            HostData::I64(v) => pack(v, |x| x.to_le_bytes()),
            HostData::U8(v) => v.clone(),
            HostData::U16(v) => pack(v, |x| x.to_le_bytes()),
            HostData::U32(v) => pack(v, |x| x.to_le_bytes()),
            HostData::U64(v) => pack(v, |x| x.to_le_bytes()),
            HostData::Bool(v) => v.iter().map(|&b| b as u8).collect(),
            HostData::String(_) => Vec::new(),
        }
    }

    /// Every integer or bool value as i128 (exact for every integer type), `None` for floats
    /// and strings.
    pub fn to_i128(&self) -> Option<Vec<i128>> {
        Some(match self {
            HostData::I8(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::I16(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::I32(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::I64(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::U8(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::U16(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::U32(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::U64(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::Bool(v) => v.iter().map(|&x| x as i128).collect(),
            HostData::F32(_) | HostData::F16(_) | HostData::F64(_) | HostData::String(_) => {
                return None
            }
        })
    }
}

impl HostTensor {
    /// The ONNX element type.
    pub fn data_type(&self) -> DataType {
        self.data.data_type()
    }

    /// The executor value for these values on `device`: floats, int32, uint32, uint8 and bool
    /// as device tensors of the same type; int8, int16 and uint16 as int32 tensors (exact);
    /// int64 as host int64 values; uint64 as int64 when every value fits; float64 on the CPU
    /// only (the GPU has no f64). Strings are refused.
    pub fn to_value(&self, device: &Device) -> std::result::Result<Value, String> {
        let shape = &self.shape;
        let tensor = |result: anygrad_core::Result<Tensor>| {
            result.map(Value::Tensor).map_err(|e| e.to_string())
        };
        match &self.data {
            HostData::F32(v) => tensor(Tensor::from_slice(v, shape, device)),
            HostData::F16(v) => tensor(Tensor::from_slice(v, shape, device)),
            HostData::F64(v) => {
                if device.is_gpu() {
                    return Err("float64 values need the CPU device (the GPU computes in \
                                float32 and float16 only)"
                        .into());
                }
                tensor(Tensor::from_slice(v, shape, device))
            }
            HostData::I8(v) => {
                let wide: Vec<i32> = v.iter().map(|&x| x as i32).collect();
                tensor(Tensor::from_vec(wide, shape, device))
            }
            HostData::I16(v) => {
                let wide: Vec<i32> = v.iter().map(|&x| x as i32).collect();
                tensor(Tensor::from_vec(wide, shape, device))
            }
            HostData::U16(v) => {
                let wide: Vec<i32> = v.iter().map(|&x| x as i32).collect();
                tensor(Tensor::from_vec(wide, shape, device))
            }
            HostData::I32(v) => tensor(Tensor::from_slice(v, shape, device)),
            HostData::U32(v) => tensor(Tensor::from_slice(v, shape, device)),
            HostData::U8(v) => tensor(Tensor::from_slice(v, shape, device)),
            HostData::Bool(v) => tensor(Tensor::from_slice(v, shape, device)),
            HostData::I64(v) => Ok(Value::Int64(Int64Tensor::new(shape.clone(), v.clone())?)),
            HostData::U64(v) => {
                let mut data = Vec::with_capacity(v.len());
                for &x in v {
                    data.push(i64::try_from(x).map_err(|_| {
                        format!("uint64 value {x} does not fit the importer's int64 values")
                    })?);
                }
                Ok(Value::Int64(Int64Tensor::new(shape.clone(), data)?))
            }
            HostData::String(_) => Err("string tensors are not supported".into()),
        }
    }

    /// The host values of an executor value (reads a device tensor back).
    pub fn from_value(value: &Value) -> std::result::Result<HostTensor, String> {
        match value {
            Value::Int64(v) => Ok(HostTensor {
                shape: v.shape.clone(),
                data: HostData::I64(v.data.clone()),
            }),
            Value::Tensor(t) => {
                let read = |e: anygrad_core::Error| e.to_string();
                let data = match t.dtype() {
                    DType::F32 => HostData::F32(t.to_vec().map_err(read)?),
                    DType::F16 => HostData::F16(t.to_vec().map_err(read)?),
                    // ONNX values keep bfloat16 as f32 (exact).
                    DType::BF16 => HostData::F32(t.to_vec_f32().map_err(read)?),
                    DType::F64 => HostData::F64(t.to_vec().map_err(read)?),
                    DType::I32 => HostData::I32(t.to_vec().map_err(read)?),
                    DType::U32 => HostData::U32(t.to_vec().map_err(read)?),
                    DType::U8 => HostData::U8(t.to_vec().map_err(read)?),
                    DType::Bool => HostData::Bool(t.to_vec().map_err(read)?),
                };
                Ok(HostTensor {
                    shape: t.shape().to_vec(),
                    data,
                })
            }
        }
    }

    /// These values converted to the integer element type `target` (a graph output declared
    /// int64 computed in int32, say); floats, and values that do not fit, are left as they
    /// are.
    pub fn into_integer_type(self, target: DataType) -> HostTensor {
        let Some(values) = self.data.to_i128() else {
            return self;
        };
        if self.data.data_type() == target {
            return self;
        }
        fn all<T: TryFrom<i128>>(values: &[i128]) -> Option<Vec<T>> {
            values.iter().map(|&x| T::try_from(x).ok()).collect()
        }
        let data = match target {
            DataType::Int8 => all(&values).map(HostData::I8),
            DataType::Int16 => all(&values).map(HostData::I16),
            DataType::Int32 => all(&values).map(HostData::I32),
            DataType::Int64 => all(&values).map(HostData::I64),
            DataType::Uint8 => all(&values).map(HostData::U8),
            DataType::Uint16 => all(&values).map(HostData::U16),
            DataType::Uint32 => all(&values).map(HostData::U32),
            DataType::Uint64 => all(&values).map(HostData::U64),
            DataType::Bool => Some(HostData::Bool(values.iter().map(|&x| x != 0).collect())),
            _ => None,
        };
        match data {
            Some(data) => HostTensor {
                shape: self.shape,
                data,
            },
            None => self,
        }
    }
}
