//! The GGUF reader against files written by the tests themselves (`gguf_support`): metadata
//! of every value type read back, every supported tensor type dequantized to values computed
//! here from the specification's formulas, and bad files (truncated at every byte, bad magic
//! or version, absurd counts, shapes and offsets) refused with errors, never a panic.

mod gguf_support;

use anygrad_core::{DType, Device};
use anygrad_models::gguf::{dequantize, GgmlType, GgufFile, MetadataValue};
use gguf_support::{f32_tensor, write_gguf, write_string, StoredTensor, Value};

fn stored(name: &str, dims: &[u64], type_id: u32, bytes: Vec<u8>) -> StoredTensor {
    StoredTensor {
        name: name.into(),
        dims: dims.to_vec(),
        type_id,
        bytes,
    }
}

/// The 4-bit codes of the legacy block tests: `j` for the first 16 values, `15 - j` after.
fn nibble_bytes() -> Vec<u8> {
    (0..16u8).map(|j| j | ((15 - j) << 4)).collect()
}
fn nibble_code(i: usize) -> u32 {
    if i < 16 {
        i as u32
    } else {
        15 - (i as u32 - 16)
    }
}

const HALF_ONE: [u8; 2] = 0x3C00u16.to_le_bytes();
const HALF_HALF: [u8; 2] = 0x3800u16.to_le_bytes();
const HALF_QUARTER: [u8; 2] = 0x3400u16.to_le_bytes();
const HALF_EIGHTH: [u8; 2] = 0x3000u16.to_le_bytes();
const HALF_MINUS_ONE: [u8; 2] = 0xBC00u16.to_le_bytes();

struct Case {
    name: &'static str,
    ggml_type: GgmlType,
    bytes: Vec<u8>,
    expected: Vec<f32>,
}

fn legacy_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // Q4_0: d = 0.5, x = (q - 8) d.
    let mut bytes = HALF_HALF.to_vec();
    bytes.extend(nibble_bytes());
    cases.push(Case {
        name: "q4_0",
        ggml_type: GgmlType::Q4_0,
        bytes,
        expected: (0..32)
            .map(|i| (nibble_code(i) as f32 - 8.0) * 0.5)
            .collect(),
    });
    // Q4_1: d = 0.25, m = -1, x = q d + m.
    let mut bytes = HALF_QUARTER.to_vec();
    bytes.extend(HALF_MINUS_ONE);
    bytes.extend(nibble_bytes());
    cases.push(Case {
        name: "q4_1",
        ggml_type: GgmlType::Q4_1,
        bytes,
        expected: (0..32)
            .map(|i| nibble_code(i) as f32 * 0.25 - 1.0)
            .collect(),
    });
    // Q5_0 / Q5_1: fifth bits 0xA5A50F0F.
    let high: u32 = 0xA5A5_0F0F;
    let code5 = |i: usize| nibble_code(i) | (((high >> i) & 1) << 4);
    let mut bytes = HALF_HALF.to_vec();
    bytes.extend(high.to_le_bytes());
    bytes.extend(nibble_bytes());
    cases.push(Case {
        name: "q5_0",
        ggml_type: GgmlType::Q5_0,
        bytes,
        expected: (0..32).map(|i| (code5(i) as f32 - 16.0) * 0.5).collect(),
    });
    let mut bytes = HALF_QUARTER.to_vec();
    bytes.extend(HALF_HALF);
    bytes.extend(high.to_le_bytes());
    bytes.extend(nibble_bytes());
    cases.push(Case {
        name: "q5_1",
        ggml_type: GgmlType::Q5_1,
        bytes,
        expected: (0..32).map(|i| code5(i) as f32 * 0.25 + 0.5).collect(),
    });
    // Q8_0: d = 1/8, q = i - 16.
    let mut bytes = HALF_EIGHTH.to_vec();
    bytes.extend((0..32).map(|i| (i as i8 - 16) as u8));
    cases.push(Case {
        name: "q8_0",
        ggml_type: GgmlType::Q8_0,
        bytes,
        expected: (0..32).map(|i| (i as f32 - 16.0) * 0.125).collect(),
    });
    cases
}

/// Pack eight 6-bit scales and minimums as `block_q4_K.scales` (GGML's quantizer's packing).
fn pack_scales(scales: [u8; 8], mins: [u8; 8]) -> [u8; 12] {
    let mut out = [0u8; 12];
    for j in 0..4 {
        out[j] = scales[j] | ((scales[j + 4] >> 4) << 6);
        out[j + 4] = mins[j] | ((mins[j + 4] >> 4) << 6);
        out[j + 8] = (scales[j + 4] & 15) | ((mins[j + 4] & 15) << 4);
    }
    out
}

fn k_cases() -> Vec<Case> {
    let scales = [1u8, 2, 3, 4, 5, 6, 7, 63];
    let mins = [0u8, 1, 2, 3, 60, 61, 62, 63];
    let quants: Vec<u8> = (0..128).map(|k| (k * 7 % 256) as u8).collect();
    let high: Vec<u8> = (0..32).map(|l| (l * 37 % 256) as u8).collect();
    // Value e of a Q4_K/Q5_K block: its sub-block, 4-bit code and fifth bit.
    let code = |e: usize| -> (usize, u32, u32) {
        let (chunk, within) = (e / 64, e % 64);
        let (l, upper) = (within % 32, within >= 32);
        let sub = 2 * chunk + upper as usize;
        let byte = quants[chunk * 32 + l];
        let q = if upper { byte >> 4 } else { byte & 15 } as u32;
        (sub, q, ((high[l] >> sub) & 1) as u32)
    };
    let mut cases = Vec::new();
    let mut bytes = HALF_ONE.to_vec();
    bytes.extend(HALF_HALF);
    bytes.extend(pack_scales(scales, mins));
    bytes.extend(&quants);
    cases.push(Case {
        name: "q4_k",
        ggml_type: GgmlType::Q4K,
        bytes,
        expected: (0..256)
            .map(|e| {
                let (sub, q, _) = code(e);
                scales[sub] as f32 * q as f32 - 0.5 * mins[sub] as f32
            })
            .collect(),
    });
    let mut bytes = HALF_ONE.to_vec();
    bytes.extend(HALF_HALF);
    bytes.extend(pack_scales(scales, mins));
    bytes.extend(&high);
    bytes.extend(&quants);
    cases.push(Case {
        name: "q5_k",
        ggml_type: GgmlType::Q5K,
        bytes,
        expected: (0..256)
            .map(|e| {
                let (sub, q, fifth) = code(e);
                scales[sub] as f32 * (q + 16 * fifth) as f32 - 0.5 * mins[sub] as f32
            })
            .collect(),
    });
    // Q6_K: ql[128], qh[64], 16 signed scales, d = 0.5.
    let low: Vec<u8> = (0..128).map(|k| (k * 11 % 256) as u8).collect();
    let top: Vec<u8> = (0..64).map(|k| (k * 29 % 256) as u8).collect();
    let six_scales: Vec<i8> = (0..16).map(|k| k as i8 - 8).collect();
    let mut bytes = low.clone();
    bytes.extend(&top);
    bytes.extend(six_scales.iter().map(|&s| s as u8));
    bytes.extend(HALF_HALF);
    cases.push(Case {
        name: "q6_k",
        ggml_type: GgmlType::Q6K,
        bytes,
        expected: (0..256)
            .map(|e| {
                let (half, r) = (e / 128, e % 128);
                let (quarter, l) = (r / 32, r % 32);
                let byte = low[half * 64 + l + if quarter % 2 == 1 { 32 } else { 0 }];
                let low4 = if quarter >= 2 { byte >> 4 } else { byte & 15 } as i32;
                let two = ((top[half * 32 + l] >> (2 * quarter)) & 3) as i32;
                let q = (low4 | (two << 4)) - 32;
                let scale = six_scales[half * 8 + quarter * 2 + l / 16] as f32;
                0.5 * scale * q as f32
            })
            .collect(),
    });
    cases
}

fn float_cases() -> Vec<Case> {
    vec![
        Case {
            name: "f16",
            ggml_type: GgmlType::F16,
            bytes: [0x3C00u16, 0xC000, 0x3800, 0x7BFF]
                .iter()
                .flat_map(|b| b.to_le_bytes())
                .collect(),
            expected: vec![1.0, -2.0, 0.5, 65504.0],
        },
        Case {
            name: "bf16",
            ggml_type: GgmlType::BF16,
            bytes: [0x3F80u16, 0xC020, 0x4049]
                .iter()
                .flat_map(|b| b.to_le_bytes())
                .collect(),
            expected: vec![1.0, -2.5, 3.140625],
        },
    ]
}

fn all_cases() -> Vec<Case> {
    let mut cases = float_cases();
    cases.extend(legacy_cases());
    cases.extend(k_cases());
    cases
}

fn metadata() -> Vec<(&'static str, Value)> {
    vec![
        ("general.architecture", Value::Str("llama".into())),
        ("test.u8", Value::U8(200)),
        ("test.i8", Value::I8(-100)),
        ("test.u16", Value::U16(60000)),
        ("test.i16", Value::I16(-30000)),
        ("test.u32", Value::U32(4_000_000_000)),
        ("test.i32", Value::I32(-2_000_000_000)),
        ("test.f32", Value::F32(1.5)),
        ("test.bool", Value::Bool(true)),
        ("test.u64", Value::U64(1 << 40)),
        ("test.i64", Value::I64(-(1 << 40))),
        ("test.f64", Value::F64(-2.25)),
        (
            "test.strings",
            Value::Array(8, vec![Value::Str("a".into()), Value::Str("héllo".into())]),
        ),
        (
            "test.nested",
            Value::Array(
                9,
                vec![
                    Value::Array(4, vec![Value::U32(1), Value::U32(2)]),
                    Value::Array(4, vec![]),
                ],
            ),
        ),
    ]
}

fn sample_file() -> Vec<u8> {
    let tensors: Vec<StoredTensor> = all_cases()
        .into_iter()
        .map(|case| {
            stored(
                case.name,
                &[case.expected.len() as u64],
                case.ggml_type.id(),
                case.bytes,
            )
        })
        .chain(std::iter::once(f32_tensor(
            "matrix",
            &[2, 3],
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        )))
        .collect();
    write_gguf(&metadata(), &tensors, 32)
}

#[test]
fn every_type_dequantizes_to_the_specified_values() {
    for case in all_cases() {
        let values = dequantize(case.ggml_type, &case.bytes, case.expected.len(), case.name)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(values, case.expected, "{}", case.name);
    }
}

#[test]
fn metadata_and_tensors_round_trip() {
    let file = GgufFile::parse(sample_file(), "sample.gguf").expect("parse");
    assert_eq!(file.version, 3);
    assert_eq!(file.alignment, 32);
    assert_eq!(file.data_offset % 32, 0);
    let value = |key: &str| file.metadata_value(key).cloned().expect(key);
    assert_eq!(value("test.u8"), MetadataValue::U8(200));
    assert_eq!(value("test.i8"), MetadataValue::I8(-100));
    assert_eq!(value("test.u16"), MetadataValue::U16(60000));
    assert_eq!(value("test.i16"), MetadataValue::I16(-30000));
    assert_eq!(value("test.u32"), MetadataValue::U32(4_000_000_000));
    assert_eq!(value("test.i32"), MetadataValue::I32(-2_000_000_000));
    assert_eq!(value("test.f32"), MetadataValue::F32(1.5));
    assert_eq!(value("test.bool"), MetadataValue::Bool(true));
    assert_eq!(value("test.u64"), MetadataValue::U64(1 << 40));
    assert_eq!(value("test.i64"), MetadataValue::I64(-(1 << 40)));
    assert_eq!(value("test.f64"), MetadataValue::F64(-2.25));
    assert_eq!(
        file.metadata_str("general.architecture").expect("arch"),
        "llama"
    );
    assert_eq!(file.metadata_u64("test.u32").expect("u32"), 4_000_000_000);
    assert!(
        file.metadata_u64("test.i8").is_err(),
        "a negative value is no u64"
    );
    assert!(file.metadata_str("test.missing").is_err());
    let strings = value("test.strings");
    let strings: Vec<&str> = strings
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(strings, ["a", "héllo"]);
    let nested = value("test.nested");
    let nested = nested.as_array().expect("nested");
    assert_eq!(nested[0].as_array().map(|a| a.len()), Some(2));
    assert_eq!(nested[1].as_array().map(|a| a.len()), Some(0));

    for case in all_cases() {
        let (values, shape) = file.tensor_f32(case.name).expect(case.name);
        assert_eq!(shape, [case.expected.len()]);
        assert_eq!(values, case.expected, "{}", case.name);
    }
    let info = file.tensor_info("matrix").expect("matrix");
    assert_eq!(info.dims, [3, 2], "GGML dims are innermost first");
    assert_eq!(info.shape(), [2, 3]);
    let matrix = file.tensor("matrix", &Device::Cpu).expect("tensor");
    assert_eq!(matrix.shape(), &[2, 3]);
    assert_eq!(
        matrix.to_vec_f32().expect("values"),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert!(file.tensor_f32("absent").is_err());
}

#[test]
fn half_precision_tensors_read_in_their_own_dtype() {
    let file = GgufFile::parse(sample_file(), "sample.gguf").expect("parse");
    let bfloat = file.tensor_stored("bf16", &Device::Cpu).expect("bf16");
    assert_eq!(bfloat.dtype(), DType::BF16);
    let bits: Vec<u16> = bfloat
        .to_vec::<half::bf16>()
        .expect("bf16 values")
        .into_iter()
        .map(half::bf16::to_bits)
        .collect();
    assert_eq!(bits, [0x3F80, 0xC020, 0x4049]);
    assert_eq!(bfloat.to_vec_f32().expect("f32"), [1.0, -2.5, 3.140625]);
    let half = file.tensor_stored("f16", &Device::Cpu).expect("f16");
    assert_eq!(half.dtype(), DType::F16);
    assert_eq!(half.to_vec_f32().expect("f32"), [1.0, -2.0, 0.5, 65504.0]);
    let matrix = file.tensor_stored("matrix", &Device::Cpu).expect("matrix");
    assert_eq!(matrix.dtype(), DType::F32);
    assert_eq!(matrix.shape(), &[2, 3]);
    assert!(file.tensor_stored("absent", &Device::Cpu).is_err());
}

/// `bytes` with 64 zero bytes appended, so that its counts are not refused merely for lack of
/// bytes.
fn padded(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.extend([0u8; 64]);
    bytes
}

/// `bytes` must be refused with an error naming `needle` and the file.
fn refused(bytes: Vec<u8>, needle: &str) {
    match GgufFile::parse(bytes, "bad.gguf") {
        Ok(_) => panic!("a bad file ({needle}) was accepted"),
        Err(error) => {
            let message = error.to_string();
            assert!(
                message.contains(needle) && message.contains("bad.gguf"),
                "expected an error about `{needle}`, got: {message}"
            );
        }
    }
}

/// A header: magic, version, tensor and metadata counts.
fn header(version: u32, tensors: u64, metadata: u64) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(version.to_le_bytes());
    out.extend(tensors.to_le_bytes());
    out.extend(metadata.to_le_bytes());
    out
}

/// A file of one tensor entry written by hand: name, dims, type, offset, then `data` bytes.
fn one_tensor(dims: &[u64], type_id: u32, offset: u64, data: usize) -> Vec<u8> {
    let mut out = header(3, 1, 0);
    write_string(&mut out, "t");
    out.extend((dims.len() as u32).to_le_bytes());
    for d in dims {
        out.extend(d.to_le_bytes());
    }
    out.extend(type_id.to_le_bytes());
    out.extend(offset.to_le_bytes());
    out.resize(out.len().div_ceil(32) * 32 + data, 0);
    out
}

#[test]
fn bad_headers_are_refused() {
    refused(Vec::new(), "truncated");
    refused(b"GGUX\x03\0\0\0".to_vec(), "not a GGUF file");
    refused(header(1, 0, 0), "version 1");
    refused(header(3u32.swap_bytes(), 0, 0), "version");
    refused(header(3, u64::MAX, 0), "tensor count");
    refused(header(3, 0, u64::MAX), "metadata count");
    // A metadata key whose length is absurd.
    let mut bytes = header(3, 0, 1);
    bytes.extend(u64::MAX.to_le_bytes());
    refused(padded(bytes), "string length");
    // An unknown value type.
    let mut bytes = header(3, 0, 1);
    write_string(&mut bytes, "k");
    bytes.extend(13u32.to_le_bytes());
    bytes.push(0);
    refused(padded(bytes), "unknown value type 13");
    // An array claiming more elements than the file holds.
    let mut bytes = header(3, 0, 1);
    write_string(&mut bytes, "k");
    bytes.extend(9u32.to_le_bytes());
    bytes.extend(4u32.to_le_bytes());
    bytes.extend((1u64 << 60).to_le_bytes());
    refused(padded(bytes), "array length");
    // A bool that is neither 0 nor 1, a string that is not UTF-8.
    let mut bytes = header(3, 0, 1);
    write_string(&mut bytes, "b");
    bytes.extend(7u32.to_le_bytes());
    bytes.push(2);
    refused(padded(bytes), "bool");
    let mut bytes = header(3, 0, 1);
    write_string(&mut bytes, "k");
    bytes.extend(8u32.to_le_bytes());
    bytes.extend(2u64.to_le_bytes());
    bytes.extend([0xFF, 0xFE]);
    refused(padded(bytes), "UTF-8");
    // A duplicate key, a bad alignment.
    refused(
        write_gguf(&[("a", Value::U8(1)), ("a", Value::U8(2))], &[], 32),
        "appears twice",
    );
    refused(
        write_gguf(&[("general.alignment", Value::U32(3))], &[], 32),
        "general.alignment",
    );
}

#[test]
fn bad_tensor_tables_are_refused() {
    refused(one_tensor(&[], 0, 0, 0), "rank 0");
    refused(one_tensor(&[1, 1, 1, 1, 1], 0, 0, 4), "rank 5");
    refused(one_tensor(&[1 << 40, 1 << 40], 0, 0, 0), "dim larger");
    refused(one_tensor(&[500, 500, 500, 500], 0, 0, 64), "past the end");
    refused(one_tensor(&[8], 0, 0, 16), "past the end");
    refused(one_tensor(&[8], 0, 1 << 40, 64), "past the end");
    refused(
        one_tensor(&[8], 0, 4, 64),
        "not a multiple of the alignment",
    );
    refused(one_tensor(&[33], 2, 0, 64), "whole 32-element blocks");
    // Two tensors of one name.
    let tensor = || f32_tensor("same", &[2], &[1.0, 2.0]);
    refused(write_gguf(&[], &[tensor(), tensor()], 32), "appears twice");
    // An unknown type parses (its size is unknown) but cannot be read.
    let file = GgufFile::parse(one_tensor(&[4], 99, 0, 64), "odd.gguf").expect("parse");
    let error = file.tensor_f32("t").expect_err("unknown type read");
    assert!(error.to_string().contains("type 99"), "{error}");
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_file();
    let file = GgufFile::parse(bytes.clone(), "whole.gguf").expect("whole file");
    let last_end = file
        .tensors
        .iter()
        .map(|t| {
            let (block, size) = t.ggml_type.block_layout().expect("known");
            file.data_offset + t.offset as usize + t.element_count() / block * size
        })
        .max()
        .expect("tensors");
    for length in 0..last_end {
        assert!(
            GgufFile::parse(bytes[..length].to_vec(), "cut.gguf").is_err(),
            "a file cut at {length} of {last_end} bytes was accepted"
        );
    }
}

#[test]
fn a_directory_is_not_a_gguf_file() {
    let error = GgufFile::open(std::env::temp_dir()).expect_err("directory");
    assert!(error.to_string().contains("directory"), "{error}");
}
