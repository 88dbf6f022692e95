//! Tensor data stored in a file beside the model (`data_location = EXTERNAL`): the path is
//! resolved inside the model's folder only (absolute paths, `..` and links leading out are
//! refused) and `offset`/`length` are checked against the file's size before reading.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

use crate::proto::TensorProto;

/// The bytes of `tensor`'s external data, read from below `folder` (`None`: the model came
/// from bytes, without a folder, and external data cannot be resolved).
pub(crate) fn read_external_data(
    tensor: &TensorProto,
    folder: Option<&Path>,
) -> Result<Vec<u8>, String> {
    let mut location = None;
    let mut offset: u64 = 0;
    let mut length: Option<u64> = None;
    for entry in &tensor.external_data {
        match entry.key.as_str() {
            "location" => location = Some(entry.value.as_str()),
            "offset" => {
                offset = entry.value.parse().map_err(|_| {
                    format!("external data offset `{}` is not a number", entry.value)
                })?
            }
            "length" => {
                length = Some(entry.value.parse().map_err(|_| {
                    format!("external data length `{}` is not a number", entry.value)
                })?)
            }
            _ => {}
        }
    }
    let location = location.ok_or("external data without a `location`")?;
    let folder = folder.ok_or(
        "the tensor's data is in an external file, but the model was given as bytes without \
         its folder; load it from its path",
    )?;
    let relative = Path::new(location);
    if location.is_empty()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "external data location `{location}` must be a relative path inside the model's \
             folder (no absolute path, no `..`)"
        ));
    }
    let base = folder
        .canonicalize()
        .map_err(|e| format!("model folder {}: {e}", folder.display()))?;
    let path = base.join(relative);
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("external data file {}: {e}", path.display()))?;
    if !resolved.starts_with(&base) {
        return Err(format!(
            "external data location `{location}` leads outside the model's folder"
        ));
    }
    let metadata = std::fs::metadata(&resolved)
        .map_err(|e| format!("external data file {}: {e}", resolved.display()))?;
    if !metadata.is_file() {
        return Err(format!(
            "external data location `{location}` is not a regular file"
        ));
    }
    let size = metadata.len();
    if offset > size {
        return Err(format!(
            "external data offset {offset} is past the end of `{location}` ({size} bytes)"
        ));
    }
    let length = length.unwrap_or(size - offset);
    if offset.checked_add(length).is_none_or(|end| end > size) {
        return Err(format!(
            "external data range {offset}..+{length} is past the end of `{location}` ({size} \
             bytes)"
        ));
    }
    let mut file = std::fs::File::open(&resolved)
        .map_err(|e| format!("external data file {}: {e}", resolved.display()))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("seeking in `{location}`: {e}"))?;
    let mut bytes = Vec::new();
    file.take(length)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading `{location}`: {e}"))?;
    if bytes.len() as u64 != length {
        return Err(format!(
            "`{location}` ended after {} of {length} bytes",
            bytes.len()
        ));
    }
    Ok(bytes)
}
