//! `.npy` inputs and `.npz` outputs of `anygrad onnx run`, as the importer's host tensors.

use std::path::Path;

use anygrad_onnx::{HostData, HostTensor};
use std::io::Write;

use npyz::{TypeChar, WriterBuilder};

/// The largest `.npy` file read (4 GiB).
const MAX_NPY_BYTES: u64 = 1 << 32;

/// Read one `.npy` file.
pub fn read_npy(path: &Path) -> Result<HostTensor, String> {
    let bytes = anygrad::files::read_regular_file(path, MAX_NPY_BYTES, ".npy input")
        .map_err(|e| e.to_string())?;
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let npy = npyz::NpyFile::new(bytes.as_slice()).map_err(fail)?;
    if npy.order() != npyz::Order::C {
        return Err(format!(
            "{}: Fortran-order arrays are not supported; save with np.ascontiguousarray",
            path.display()
        ));
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let npyz::DType::Plain(type_str) = npy.dtype() else {
        return Err(format!(
            "{}: structured arrays are not supported",
            path.display()
        ));
    };
    let data = match (type_str.type_char(), type_str.size_field()) {
        (TypeChar::Float, 4) => HostData::F32(npy.into_vec().map_err(fail)?),
        (TypeChar::Float, 8) => HostData::F64(npy.into_vec().map_err(fail)?),
        (TypeChar::Int, 1) => HostData::I8(npy.into_vec().map_err(fail)?),
        (TypeChar::Int, 2) => HostData::I16(npy.into_vec().map_err(fail)?),
        (TypeChar::Int, 4) => HostData::I32(npy.into_vec().map_err(fail)?),
        (TypeChar::Int, 8) => HostData::I64(npy.into_vec().map_err(fail)?),
        (TypeChar::Uint, 1) => HostData::U8(npy.into_vec().map_err(fail)?),
        (TypeChar::Uint, 2) => HostData::U16(npy.into_vec().map_err(fail)?),
        (TypeChar::Uint, 4) => HostData::U32(npy.into_vec().map_err(fail)?),
        (TypeChar::Uint, 8) => HostData::U64(npy.into_vec().map_err(fail)?),
        (TypeChar::Bool, 1) => HostData::Bool(npy.into_vec().map_err(fail)?),
        _ => {
            return Err(format!(
                "{}: element type {type_str} is not supported (use float32, float64, an \
                 integer type or bool)",
                path.display()
            ))
        }
    };
    if data.len() != shape.iter().product::<usize>() {
        return Err(format!(
            "{}: data does not fill shape {shape:?}",
            path.display()
        ));
    }
    Ok(HostTensor { shape, data })
}

/// One array as `name.npy` in the archive (stored, as numpy's `savez` writes them).
fn write_array<T: npyz::AutoSerialize + Copy>(
    npz: &mut zip::ZipWriter<std::io::BufWriter<std::fs::File>>,
    name: &str,
    shape: &[usize],
    values: &[T],
) -> std::io::Result<()> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut bytes = Vec::new();
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(&mut bytes)
        .begin_nd()?;
    writer.extend(values.iter().copied())?;
    writer.finish()?;
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(bytes.len() as u64 >= u32::MAX as u64);
    npz.start_file(format!("{name}.npy"), options)
        .map_err(std::io::Error::other)?;
    npz.write_all(&bytes)
}

/// Write outputs to an `.npz` archive, one array per output name (float16 as float32).
pub fn write_npz(path: &Path, outputs: &[(String, HostTensor)]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut npz = zip::ZipWriter::new(std::io::BufWriter::new(file));
    for (name, t) in outputs {
        let s = &t.shape;
        match &t.data {
            HostData::F32(v) => write_array(&mut npz, name, s, v),
            HostData::F16(v) => {
                let wide: Vec<f32> = v.iter().map(|x| x.to_f32()).collect();
                write_array(&mut npz, name, s, &wide)
            }
            HostData::F64(v) => write_array(&mut npz, name, s, v),
            HostData::I8(v) => write_array(&mut npz, name, s, v),
            HostData::I16(v) => write_array(&mut npz, name, s, v),
            HostData::I32(v) => write_array(&mut npz, name, s, v),
            HostData::I64(v) => write_array(&mut npz, name, s, v),
            HostData::U8(v) => write_array(&mut npz, name, s, v),
            HostData::U16(v) => write_array(&mut npz, name, s, v),
            HostData::U32(v) => write_array(&mut npz, name, s, v),
            HostData::U64(v) => write_array(&mut npz, name, s, v),
            HostData::Bool(v) => write_array(&mut npz, name, s, v),
            HostData::String(_) => {
                return Err(format!(
                    "output `{name}` holds strings, which .npz output does not support"
                ))
            }
        }
        .map_err(fail)?;
    }
    npz.finish()
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_inputs_and_npz_outputs_round_trip() {
        let dir = std::env::temp_dir().join(format!("anygrad-onnx-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        let input = dir.join("x.npy");
        npyz::to_file_1d(&input, [1.5f32, -2.0, 3.25, 0.0].iter().copied()).expect("npy written");
        let read = read_npy(&input).expect("npy read");
        assert_eq!(read.shape, vec![4]);
        assert_eq!(read.data, HostData::F32(vec![1.5, -2.0, 3.25, 0.0]));

        let outputs = vec![
            (
                "y".to_string(),
                HostTensor {
                    shape: vec![2, 2],
                    data: HostData::F32(vec![1.0, 2.0, 3.0, 4.0]),
                },
            ),
            (
                "shape".to_string(),
                HostTensor {
                    shape: vec![2],
                    data: HostData::I64(vec![2, -1]),
                },
            ),
        ];
        let archive = dir.join("out.npz");
        write_npz(&archive, &outputs).expect("npz written");
        // numpy's layout: one stored `NAME.npy` member per output.
        let mut npz = zip::ZipArchive::new(std::fs::File::open(&archive).expect("npz opens"))
            .expect("a zip archive");
        let mut member = |name: &str| {
            let mut bytes = Vec::new();
            let mut file = npz.by_name(name).expect("member present");
            assert_eq!(file.compression(), zip::CompressionMethod::Stored);
            std::io::Read::read_to_end(&mut file, &mut bytes).expect("readable");
            npyz::NpyFile::new(std::io::Cursor::new(bytes)).expect("an npy file")
        };
        let y = member("y.npy");
        assert_eq!(y.shape(), &[2, 2]);
        assert_eq!(y.into_vec::<f32>().expect("f32"), vec![1.0, 2.0, 3.0, 4.0]);
        let shape = member("shape.npy");
        assert_eq!(shape.into_vec::<i64>().expect("i64"), vec![2, -1]);

        std::fs::write(dir.join("bad.npy"), b"not an npy file").expect("written");
        assert!(read_npy(&dir.join("bad.npy")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
