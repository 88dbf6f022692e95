//! `TensorProto` (a constant tensor: dims, element type, data inline or in an external
//! file), its `DataType` and `DataLocation` enums, `Segment`, and `SparseTensorProto`.

use super::StringStringEntryProto;

/// A tensor value: shape, element type and data (in `raw_data`, a typed field, or an
/// external file named by `external_data`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// The shape.
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// The element type (`DataType`).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// A segment of a larger tensor (unsupported when present).
    #[prost(message, optional, tag = "3")]
    pub segment: Option<Segment>,
    /// FLOAT (and COMPLEX64) values.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// INT32 values, and INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 (bit pattern), BFLOAT16.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// STRING values.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// INT64 values.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// The tensor's name (initializers: the value name).
    #[prost(string, tag = "8")]
    pub name: String,
    /// Little-endian packed values of any fixed-size type.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// DOUBLE (and COMPLEX128) values.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// UINT32 and UINT64 values.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    /// Documentation.
    #[prost(string, tag = "12")]
    pub doc_string: String,
    /// Where the data is when `data_location` is EXTERNAL: `location`, `offset`, `length`.
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// DEFAULT (inline) or EXTERNAL.
    #[prost(enumeration = "DataLocation", tag = "14")]
    pub data_location: i32,
}

/// Part of a tensor split over several messages.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Segment {
    /// First element.
    #[prost(int64, tag = "1")]
    pub begin: i64,
    /// One past the last element.
    #[prost(int64, tag = "2")]
    pub end: i64,
}

/// Where a tensor's data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DataLocation {
    /// In the message.
    Default = 0,
    /// In a file beside the model.
    External = 1,
}

/// ONNX element types (`TensorProto.DataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DataType {
    /// Not set.
    Undefined = 0,
    /// f32.
    Float = 1,
    /// u8.
    Uint8 = 2,
    /// i8.
    Int8 = 3,
    /// u16.
    Uint16 = 4,
    /// i16.
    Int16 = 5,
    /// i32.
    Int32 = 6,
    /// i64.
    Int64 = 7,
    /// UTF-8 strings.
    String = 8,
    /// bool.
    Bool = 9,
    /// IEEE half.
    Float16 = 10,
    /// f64.
    Double = 11,
    /// u32.
    Uint32 = 12,
    /// u64.
    Uint64 = 13,
    /// Two f32.
    Complex64 = 14,
    /// Two f64.
    Complex128 = 15,
    /// bfloat16.
    Bfloat16 = 16,
    /// 8-bit float E4M3FN.
    Float8e4m3fn = 17,
    /// 8-bit float E4M3FNUZ.
    Float8e4m3fnuz = 18,
    /// 8-bit float E5M2.
    Float8e5m2 = 19,
    /// 8-bit float E5M2FNUZ.
    Float8e5m2fnuz = 20,
    /// 4-bit unsigned.
    Uint4 = 21,
    /// 4-bit signed.
    Int4 = 22,
    /// 4-bit float E2M1.
    Float4e2m1 = 23,
    /// 8-bit float E8M0.
    Float8e8m0 = 24,
    /// 2-bit unsigned.
    Uint2 = 25,
    /// 2-bit signed.
    Int2 = 26,
    /// 6-bit float E2M3.
    Float6e2m3 = 27,
    /// 6-bit float E3M2.
    Float6e3m2 = 28,
}

impl DataType {
    /// The ONNX name (`float`, `int64`, ...), or `type N` for numbers outside the enum.
    pub fn name_of(code: i32) -> String {
        match DataType::try_from(code) {
            Ok(known) => format!("{known:?}").to_ascii_lowercase(),
            Err(_) => format!("type {code}"),
        }
    }
}

/// A sparse tensor: the non-zero `values` at `indices` within `dims`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SparseTensorProto {
    /// The non-zero values (1-D, with a name).
    #[prost(message, optional, tag = "1")]
    pub values: Option<TensorProto>,
    /// INT64 indices: `[nnz]` linearized or `[nnz, rank]`.
    #[prost(message, optional, tag = "2")]
    pub indices: Option<TensorProto>,
    /// The dense shape.
    #[prost(int64, repeated, packed = "false", tag = "3")]
    pub dims: Vec<i64>,
}
