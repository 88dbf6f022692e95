//! The IDX reader reads the header first and then exactly what it promises: a huge file with
//! a bad magic number or a wrong size costs no memory, a gzip bomb stops at the promised size,
//! absurd dimensions are refused, and trailing or missing bytes are format errors. Memory is
//! measured with the counting allocator of `anygrad-testing`.

use std::io::Write;
use std::path::Path;

use anygrad_core::Error;
use anygrad_data::{read_idx_images, read_idx_labels, IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC};
use anygrad_testing::memory::{peak_allocation, CountingAllocator};
use anygrad_testing::temp_dir;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Memory the reader may use for a file it refuses (buffers, error text): 1 MiB.
const SMALL: usize = 1 << 20;

fn header(magic: u32, dims: &[u32]) -> Vec<u8> {
    let mut bytes = magic.to_be_bytes().to_vec();
    for dim in dims {
        bytes.extend_from_slice(&dim.to_be_bytes());
    }
    bytes
}

/// A sparse file: `prefix`, then zeros up to `size` bytes (no disk space used).
fn sparse_file(path: &Path, prefix: &[u8], size: u64) {
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(prefix).unwrap();
    file.set_len(size).unwrap();
}

fn assert_format(result: anygrad_core::Result<impl std::fmt::Debug>, file: &Path, says: &str) {
    match result {
        Err(Error::Format { context, message }) => {
            assert!(context.contains(file.file_name().unwrap().to_str().unwrap()));
            assert!(message.contains(says), "{message}");
        }
        other => panic!("{}: expected a format error, got {other:?}", file.display()),
    }
}

#[test]
fn huge_files_with_a_wrong_header_cost_no_memory() {
    let dir = temp_dir("huge");
    let size = 20u64 << 30;
    // Bad magic number on a 20 GB (sparse) file.
    let bad_magic = dir.join("bad-magic-idx3-ubyte");
    sparse_file(&bad_magic, &[0x12, 0x34, 0x56, 0x78], size);
    let (result, peak) = peak_allocation(|| read_idx_images(&bad_magic));
    assert_format(result, &bad_magic, "magic");
    assert!(peak < SMALL, "bad magic: {peak} bytes allocated");
    // A good header promising 1,000 images, then 20 GB: trailing bytes, refused unread.
    let trailing = dir.join("trailing-idx3-ubyte");
    sparse_file(&trailing, &header(IDX_IMAGES_MAGIC, &[1000, 28, 28]), size);
    let (result, peak) = peak_allocation(|| read_idx_images(&trailing));
    assert_format(result, &trailing, "trailing");
    assert!(peak < SMALL, "trailing: {peak} bytes allocated");
    // A header promising 4 G × 4 G × 4 G bytes: absurd, refused.
    let absurd = dir.join("absurd-idx3-ubyte");
    sparse_file(
        &absurd,
        &header(IDX_IMAGES_MAGIC, &[u32::MAX, u32::MAX, 16]),
        64,
    );
    let (result, peak) = peak_allocation(|| read_idx_images(&absurd));
    assert_format(result, &absurd, "promise");
    assert!(peak < SMALL, "absurd: {peak} bytes allocated");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gzip_bombs_stop_at_the_promised_size() {
    let dir = temp_dir("bomb");
    // 100 labels promised, 64 MB of zeros delivered (a ~64 KB gzip file).
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(&header(IDX_LABELS_MAGIC, &[100]))
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        encoder.write_all(&zeros).unwrap();
    }
    let bomb = dir.join("bomb-labels-idx1-ubyte.gz");
    std::fs::write(&bomb, encoder.finish().unwrap()).unwrap();
    let (result, peak) = peak_allocation(|| read_idx_labels(&bomb));
    assert_format(result, &bomb, "trailing");
    assert!(peak < SMALL, "gzip bomb: {peak} bytes allocated");
    // A tiny gzip file whose header promises 4 GB: more than it can hold, refused at once.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(&header(IDX_IMAGES_MAGIC, &[1 << 16, 256, 256]))
        .unwrap();
    let liar = dir.join("liar-images-idx3-ubyte.gz");
    std::fs::write(&liar, encoder.finish().unwrap()).unwrap();
    let (result, peak) = peak_allocation(|| read_idx_images(&liar));
    assert_format(result, &liar, "gzip");
    assert!(peak < SMALL, "lying gzip header: {peak} bytes allocated");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn raw_files_are_read_once_without_a_second_copy() {
    let dir = temp_dir("raw");
    let count = 2000u32;
    let mut bytes = header(IDX_IMAGES_MAGIC, &[count, 28, 28]);
    bytes.extend((0..count as usize * 784).map(|i| (i % 251) as u8));
    let path = dir.join("images-idx3-ubyte");
    std::fs::write(&path, &bytes).unwrap();
    let data = bytes.len() - 16;
    let (images, peak) = peak_allocation(|| read_idx_images(&path).unwrap());
    assert_eq!(images.pixels, bytes[16..]);
    assert!(
        peak < data + SMALL,
        "reading {data} bytes peaked at {peak} bytes (a second copy?)"
    );
    // One byte missing, one byte extra.
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert_format(read_idx_images(&path), &path, "truncated");
    let mut longer = bytes.clone();
    longer.push(0);
    std::fs::write(&path, &longer).unwrap();
    assert_format(read_idx_images(&path), &path, "trailing");
    let _ = std::fs::remove_dir_all(&dir);
}
