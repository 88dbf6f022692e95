//! [`MetadataValue`]: the values of GGUF's metadata key/value pairs, of every GGUF value type
//! (the integers, floats, bool, string, and arrays of any of them, arrays of arrays included),
//! with typed accessors that name the key in their errors.

use anygrad_core::{Error, Result};

use super::cursor::ByteCursor;

/// How deep arrays of arrays may nest before the file is refused.
const MAX_ARRAY_DEPTH: usize = 8;

/// The type tag of a GGUF metadata value (`gguf_type` in the GGUF specification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataValueType {
    /// 0: `u8`.
    U8,
    /// 1: `i8`.
    I8,
    /// 2: `u16`.
    U16,
    /// 3: `i16`.
    I16,
    /// 4: `u32`.
    U32,
    /// 5: `i32`.
    I32,
    /// 6: `f32`.
    F32,
    /// 7: a bool stored as one byte (0 or 1).
    Bool,
    /// 8: a `u64` length and UTF-8 bytes.
    String,
    /// 9: an element type, a `u64` count and the elements.
    Array,
    /// 10: `u64`.
    U64,
    /// 11: `i64`.
    I64,
    /// 12: `f64`.
    F64,
}

impl MetadataValueType {
    /// The type of a tag, or `None` for an unknown tag.
    pub fn from_tag(tag: u32) -> Option<MetadataValueType> {
        use MetadataValueType::*;
        Some(match tag {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The fewest bytes one value of this type takes in a file (to bound array counts).
    fn min_bytes(self) -> usize {
        use MetadataValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

/// One metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataValue {
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
    /// bool.
    Bool(bool),
    /// UTF-8 string.
    String(String),
    /// An array (all elements of one type).
    Array(Vec<MetadataValue>),
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f64`.
    F64(f64),
}

impl MetadataValue {
    /// Read a value of type `tag` at the cursor; `key` names it in errors.
    pub fn read(cursor: &mut ByteCursor<'_>, tag: u32, key: &str) -> Result<MetadataValue> {
        read_value(cursor, tag, key, 0)
    }

    /// The value as an unsigned integer, when it is a non-negative integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetadataValue::U8(v) => Some(v as u64),
            MetadataValue::U16(v) => Some(v as u64),
            MetadataValue::U32(v) => Some(v as u64),
            MetadataValue::U64(v) => Some(v),
            MetadataValue::I8(v) => u64::try_from(v).ok(),
            MetadataValue::I16(v) => u64::try_from(v).ok(),
            MetadataValue::I32(v) => u64::try_from(v).ok(),
            MetadataValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a signed integer, when it is an integer that fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            MetadataValue::I8(v) => Some(v as i64),
            MetadataValue::I16(v) => Some(v as i64),
            MetadataValue::I32(v) => Some(v as i64),
            MetadataValue::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// The value as a float, when it is a float or an integer.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetadataValue::F32(v) => Some(v as f64),
            MetadataValue::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value as a string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetadataValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a bool, when it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetadataValue::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The elements, when the value is an array.
    pub fn as_array(&self) -> Option<&[MetadataValue]> {
        match self {
            MetadataValue::Array(values) => Some(values),
            _ => None,
        }
    }

    /// A short name of the value's type, for errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            MetadataValue::U8(_) => "u8",
            MetadataValue::I8(_) => "i8",
            MetadataValue::U16(_) => "u16",
            MetadataValue::I16(_) => "i16",
            MetadataValue::U32(_) => "u32",
            MetadataValue::I32(_) => "i32",
            MetadataValue::F32(_) => "f32",
            MetadataValue::Bool(_) => "bool",
            MetadataValue::String(_) => "string",
            MetadataValue::Array(_) => "array",
            MetadataValue::U64(_) => "u64",
            MetadataValue::I64(_) => "i64",
            MetadataValue::F64(_) => "f64",
        }
    }
}

fn read_value(
    cursor: &mut ByteCursor<'_>,
    tag: u32,
    key: &str,
    depth: usize,
) -> Result<MetadataValue> {
    let Some(kind) = MetadataValueType::from_tag(tag) else {
        return Err(cursor.error(format!(
            "metadata `{key}` has the unknown value type {tag} (GGUF knows 0..=12)"
        )));
    };
    let what = format!("metadata `{key}`");
    Ok(match kind {
        MetadataValueType::U8 => MetadataValue::U8(cursor.u8(&what)?),
        MetadataValueType::I8 => MetadataValue::I8(cursor.u8(&what)? as i8),
        MetadataValueType::U16 => MetadataValue::U16(cursor.u16(&what)?),
        MetadataValueType::I16 => MetadataValue::I16(cursor.u16(&what)? as i16),
        MetadataValueType::U32 => MetadataValue::U32(cursor.u32(&what)?),
        MetadataValueType::I32 => MetadataValue::I32(cursor.u32(&what)? as i32),
        MetadataValueType::F32 => MetadataValue::F32(cursor.f32(&what)?),
        MetadataValueType::Bool => match cursor.u8(&what)? {
            0 => MetadataValue::Bool(false),
            1 => MetadataValue::Bool(true),
            other => {
                return Err(cursor.error(format!("{what}: bool byte {other} is neither 0 nor 1")))
            }
        },
        MetadataValueType::String => MetadataValue::String(cursor.string(&what)?),
        MetadataValueType::U64 => MetadataValue::U64(cursor.u64(&what)?),
        MetadataValueType::I64 => MetadataValue::I64(cursor.u64(&what)? as i64),
        MetadataValueType::F64 => MetadataValue::F64(cursor.f64(&what)?),
        MetadataValueType::Array => {
            if depth >= MAX_ARRAY_DEPTH {
                return Err(cursor.error(format!(
                    "{what}: arrays nested deeper than {MAX_ARRAY_DEPTH}"
                )));
            }
            let element_tag = cursor.u32(&format!("{what} (array element type)"))?;
            let Some(element) = MetadataValueType::from_tag(element_tag) else {
                return Err(
                    cursor.error(format!("{what}: unknown array element type {element_tag}"))
                );
            };
            let count = cursor.count(element.min_bytes(), &format!("{what} (array length)"))?;
            let mut values = Vec::with_capacity(count.min(super::file::RESERVE_LIMIT));
            for _ in 0..count {
                values.push(read_value(cursor, element_tag, key, depth + 1)?);
            }
            MetadataValue::Array(values)
        }
    })
}

/// An error for a metadata key that is missing or of the wrong type.
pub(crate) fn metadata_error(context: &str, key: &str, expected: &str) -> Error {
    Error::format(
        context,
        format!("metadata `{key}` is missing or is not {expected}"),
    )
}
