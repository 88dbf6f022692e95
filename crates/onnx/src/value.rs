//! `Value`: what flows along the graph's edges while a model runs. Device tensors for
//! everything the device computes on, and `Int64Tensor`, exact int64 values kept in host
//! memory for shape arithmetic (ONNX's shapes, indices and `Slice` bounds are int64; anygrad's
//! devices have 32-bit integers).

use anygrad_core::{DType, Device, Tensor};

/// The limit on one tensor's element count the importer accepts (2^31): larger shapes in a
/// file or computed by shape arithmetic are refused as absurd before anything is allocated.
pub const MAX_ELEMENTS: u64 = 1 << 31;

/// Exact int64 values in host memory with their shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Int64Tensor {
    /// The shape.
    pub shape: Vec<usize>,
    /// The values, row-major.
    pub data: Vec<i64>,
}

impl Int64Tensor {
    /// Values with a shape; the count must be the shape's product.
    pub fn new(shape: Vec<usize>, data: Vec<i64>) -> Result<Int64Tensor, String> {
        let count = element_count(&shape)?;
        if count as usize != data.len() {
            return Err(format!(
                "{} int64 values cannot fill shape {shape:?}",
                data.len()
            ));
        }
        Ok(Int64Tensor { shape, data })
    }

    /// A 1-D tensor of `data`.
    pub fn vector(data: Vec<i64>) -> Int64Tensor {
        Int64Tensor {
            shape: vec![data.len()],
            data,
        }
    }

    /// The device tensor of these values as int32, or an error naming the first value that
    /// does not fit.
    pub fn to_i32_tensor(&self, device: &Device) -> Result<Tensor, String> {
        let mut narrow = Vec::with_capacity(self.data.len());
        for &x in &self.data {
            narrow.push(i32::try_from(x).map_err(|_| {
                format!("int64 value {x} does not fit the device's 32-bit integers")
            })?);
        }
        Tensor::from_vec(narrow, &self.shape, device).map_err(|e| e.to_string())
    }
}

/// The element count of `shape`, refused when it overflows or exceeds [`MAX_ELEMENTS`].
pub fn element_count(shape: &[usize]) -> Result<u64, String> {
    let mut count: u64 = 1;
    for &d in shape {
        count = count
            .checked_mul(d as u64)
            .filter(|&c| c <= MAX_ELEMENTS)
            .ok_or_else(|| {
                format!("shape {shape:?} has more than {MAX_ELEMENTS} elements (absurd shape)")
            })?;
    }
    Ok(count)
}

/// A value on a graph edge.
#[derive(Clone, Debug)]
pub enum Value {
    /// A tensor on the model's device (any anygrad dtype).
    Tensor(Tensor),
    /// Exact int64 values on the host (shapes, indices; ONNX int64 tensors).
    Int64(Int64Tensor),
}

impl Value {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Value::Tensor(t) => t.shape(),
            Value::Int64(v) => &v.shape,
        }
    }

    /// The element type's name (`float32`, `int64`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Tensor(t) => t.dtype().name(),
            Value::Int64(_) => "int64",
        }
    }

    /// `float32[2, 3]`: the type and shape, for messages.
    pub fn describe(&self) -> String {
        format!("{}{:?}", self.type_name(), self.shape())
    }

    /// True for int64 host values and integer tensors.
    pub fn is_integer(&self) -> bool {
        match self {
            Value::Tensor(t) => matches!(t.dtype(), DType::I32 | DType::U32 | DType::U8),
            Value::Int64(_) => true,
        }
    }

    /// The device tensor: a tensor as it is (moved to `device` when it lives elsewhere), int64
    /// values as int32 when every one fits.
    pub fn to_tensor(&self, device: &Device) -> Result<Tensor, String> {
        match self {
            Value::Tensor(t) => {
                if t.device() == device {
                    Ok(t.clone())
                } else {
                    t.to_device(device).map_err(|e| e.to_string())
                }
            }
            Value::Int64(v) => v.to_i32_tensor(device),
        }
    }

    /// The values as exact int64 (int64 values as they are, a tensor read back; float values
    /// truncated toward zero).
    pub fn to_int64(&self) -> Result<Int64Tensor, String> {
        match self {
            Value::Int64(v) => Ok(v.clone()),
            Value::Tensor(t) => {
                let data: Vec<i64> = match t.dtype() {
                    DType::I32 => t
                        .to_vec::<i32>()
                        .map_err(|e| e.to_string())?
                        .into_iter()
                        .map(i64::from)
                        .collect(),
                    _ => t
                        .to_vec_f64()
                        .map_err(|e| e.to_string())?
                        .into_iter()
                        .map(|x| x as i64)
                        .collect(),
                };
                Ok(Int64Tensor {
                    shape: t.shape().to_vec(),
                    data,
                })
            }
        }
    }
}

impl From<Tensor> for Value {
    fn from(tensor: Tensor) -> Value {
        Value::Tensor(tensor)
    }
}

impl From<Int64Tensor> for Value {
    fn from(values: Int64Tensor) -> Value {
        Value::Int64(values)
    }
}
