//! Fuzz targets for the IDX readers, run by a plain `cargo test`: a few thousand seeded
//! mutations (bit flips, truncations, insertions, length fields set to extreme values) of
//! valid raw and gzip IDX files. Every outcome must be `Ok` or a clean `Err` (a panic fails
//! with the seed and mutation), and no read may allocate more than a small bound.

use anygrad_data::{
    encode_idx_images, encode_idx_labels, parse_idx_images, read_idx_images, read_idx_labels,
    IdxImages,
};
use anygrad_testing::fuzz::fuzz;
use anygrad_testing::gzip;
use anygrad_testing::memory::{peak_allocation, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The most any read of these small files may allocate at once.
const BOUND: usize = 4 << 20;

fn images() -> IdxImages {
    IdxImages {
        count: 6,
        rows: 5,
        cols: 4,
        pixels: (0..120).map(|i| (i * 37 % 256) as u8).collect(),
    }
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("anygrad-fuzz-idx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn fuzz_raw_idx() {
    let valid = encode_idx_images(&images());
    fuzz("raw IDX images", &valid, 11, 3000, |bytes| {
        let (result, peak) = peak_allocation(|| parse_idx_images(bytes, "fuzz"));
        assert!(peak < BOUND, "allocated {peak} bytes");
        if let Ok(parsed) = result {
            assert_eq!(
                parsed.pixels.len(),
                parsed.count * parsed.rows * parsed.cols
            );
        }
    });
    let path = temp_file("labels-idx1-ubyte");
    let valid = encode_idx_labels(&[3, 1, 4, 1, 5, 9, 2, 6]);
    fuzz("raw IDX label files", &valid, 12, 1000, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        let (result, peak) = peak_allocation(|| read_idx_labels(&path));
        assert!(peak < BOUND, "allocated {peak} bytes");
        if let Ok(labels) = result {
            assert_eq!(labels.len() + 8, bytes.len());
        }
    });
    let _ = std::fs::remove_file(&path);
}

#[test]
fn fuzz_gzip_idx() {
    let path = temp_file("images-idx3-ubyte.gz");
    let valid = gzip(&encode_idx_images(&images()));
    fuzz("gzip IDX images", &valid, 13, 2000, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        let (result, peak) = peak_allocation(|| read_idx_images(&path));
        assert!(peak < BOUND, "allocated {peak} bytes");
        if let Ok(parsed) = result {
            assert_eq!(
                parsed.pixels.len(),
                parsed.count * parsed.rows * parsed.cols
            );
        }
    });
    let _ = std::fs::remove_file(&path);
}
