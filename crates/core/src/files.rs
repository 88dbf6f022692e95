//! Reading the files a user names: every file the library opens by name (images, model
//! configurations, tokenizers, weights, checkpoints, data sets) goes through here, so that a
//! FIFO, a device such as `/dev/zero`, a directory or a file larger than the caller's bound is
//! refused with an error naming the path, instead of blocking forever or being read until
//! memory runs out.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// The metadata of `path` after checking that it (or what a symbolic link points to) is a
/// regular file of at most `max_bytes` bytes. `what` says what the file is for ("image",
/// "model configuration") and appears in the error.
pub fn regular_file_metadata(path: &Path, max_bytes: u64, what: &str) -> Result<std::fs::Metadata> {
    let context = format!("{what} {}", path.display());
    // `metadata` follows symbolic links, so a link to `/dev/zero` is seen as the device it is.
    let metadata =
        std::fs::metadata(path).map_err(|error| Error::io(format!("reading {context}"), error))?;
    if !metadata.is_file() {
        let kind = if metadata.is_dir() {
            "a directory"
        } else {
            "a device, pipe or socket"
        };
        return Err(Error::format(
            context,
            format!("not a regular file ({kind}); give the path of a regular file"),
        ));
    }
    if metadata.len() > max_bytes {
        return Err(Error::format(
            context,
            format!(
                "{} bytes is larger than the {max_bytes} bytes allowed for a {what}",
                metadata.len()
            ),
        ));
    }
    Ok(metadata)
}

/// The whole content of the regular file `path`, refused (before anything is read) when it is
/// not a regular file or is larger than `max_bytes`. Reading stops at `max_bytes + 1` bytes
/// even if the file grows meanwhile.
pub fn read_regular_file(path: &Path, max_bytes: u64, what: &str) -> Result<Vec<u8>> {
    let metadata = regular_file_metadata(path, max_bytes, what)?;
    let context = format!("{what} {}", path.display());
    let file = std::fs::File::open(path)
        .map_err(|error| Error::io(format!("reading {context}"), error))?;
    // Check the opened file too: the path may have been replaced between the two calls.
    let opened = file
        .metadata()
        .map_err(|error| Error::io(format!("reading {context}"), error))?;
    if !opened.is_file() {
        return Err(Error::format(
            context,
            "not a regular file (it changed while being opened)",
        ));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| Error::io(format!("reading {context}"), error))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Error::format(
            context,
            format!("grew beyond the {max_bytes} bytes allowed for a {what} while being read"),
        ));
    }
    Ok(bytes)
}

/// [`read_regular_file`] as UTF-8 text.
pub fn read_regular_text(path: &Path, max_bytes: u64, what: &str) -> Result<String> {
    let bytes = read_regular_file(path, max_bytes, what)?;
    String::from_utf8(bytes)
        .map_err(|_| Error::format(format!("{what} {}", path.display()), "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("anygrad-files-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_a_regular_file_within_its_bound() {
        let dir = scratch("regular");
        let path = dir.join("a.txt");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(read_regular_file(&path, 5, "note").unwrap(), b"hello");
        assert_eq!(read_regular_text(&path, 5, "note").unwrap(), "hello");
        let error = read_regular_file(&path, 4, "note").unwrap_err().to_string();
        assert!(error.contains("larger than the 4 bytes"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn refuses_directories_and_devices() {
        let dir = scratch("special");
        let error = read_regular_file(&dir, 1 << 20, "image")
            .unwrap_err()
            .to_string();
        assert!(error.contains("a directory"), "{error}");
        #[cfg(unix)]
        {
            let link = dir.join("x.png");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            let error = read_regular_file(&link, 1 << 20, "image")
                .unwrap_err()
                .to_string();
            assert!(error.contains("not a regular file"), "{error}");
            assert!(error.contains("x.png"), "{error}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
