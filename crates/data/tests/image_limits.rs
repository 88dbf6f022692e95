//! Image sizes are bounded: a tiny file that promises an enormous image, a resize of a very
//! thin image to a fixed shorter side, and absurd crop, pad and resize targets are errors
//! naming the operation and the sizes, never an abort of the process (which is what an
//! allocation of tens of gigabytes does) nor an arithmetic overflow.

use std::path::Path;

use anygrad_core::Error;
use anygrad_data::transforms::functional::{self, PaddingMode};
use anygrad_data::transforms::{
    CenterCrop, Compose, Pad, RandomCrop, RandomResizedCrop, Resize, ToTensor, Transform,
};
use anygrad_data::{
    Image, ImageFolder, PixelImage, SampleDataset, SplitMix64, MAX_IMAGE_FILE_BYTES,
    MAX_IMAGE_PIXELS,
};
use anygrad_testing::temp_dir;

/// Write a one-bit grey PNG of `width × height` pixels, all black, at `path`: a few kilobytes
/// on disk whatever the size it promises.
fn one_bit_png(path: &Path, width: u32, height: u32) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    let mut writer = encoder.write_header().unwrap();
    let row_bytes = (width as usize).div_ceil(8);
    writer
        .write_image_data(&vec![0u8; row_bytes * height as usize])
        .unwrap();
    writer.finish().unwrap();
}

fn small_image() -> Image {
    Image::Pixels(PixelImage::new(4, 6, 3, (0..72).map(|v| v as u8).collect()).unwrap())
}

/// The message of an `InvalidArgument` error, after checking that it names `op`.
fn invalid_argument_of(error: Error, op: &str) -> String {
    match &error {
        Error::InvalidArgument { op: named, message } => {
            assert_eq!(*named, op, "{error}");
            message.clone()
        }
        other => panic!("expected InvalidArgument from {op}, got {other:?}"),
    }
}

#[test]
fn a_thin_image_resized_to_a_shorter_side_is_an_error_naming_resize() {
    // 1 × 100,000,000 pixels (12 KB as a one-bit PNG): within the decoder's bounds, but a
    // shorter side of 32 makes it 32 × 3,200,000,000.
    let dir = temp_dir("image-limits-thin");
    let path = dir.join("thin.png");
    one_bit_png(&path, 100_000_000, 1);
    assert!(std::fs::metadata(&path).unwrap().len() < 1 << 20);
    let image = PixelImage::open(&path).unwrap();
    assert_eq!((image.height(), image.width()), (1, 100_000_000));
    let resize = Resize::new(32).unwrap();
    let error = resize
        .apply(Image::Pixels(image), &mut SplitMix64::new(0))
        .unwrap_err();
    let message = invalid_argument_of(error, "Resize");
    assert!(message.contains("32x3200000000"), "{message}");
    assert!(message.contains("1x100000000"), "{message}");
    // The same through an image folder and a pipeline, as the training loader runs it.
    let root = dir.join("folder");
    for class in ["a", "b"] {
        std::fs::create_dir_all(root.join(class)).unwrap();
    }
    std::fs::rename(&path, root.join("a").join("thin.png")).unwrap();
    PixelImage::new(2, 2, 1, vec![0, 64, 128, 255])
        .unwrap()
        .save_png(root.join("b").join("ok.png"))
        .unwrap();
    let folder = ImageFolder::new(&root)
        .unwrap()
        .gray(true)
        .transform(Compose::new().then(Resize::new(28).unwrap()).then(ToTensor));
    let message = invalid_argument_of(folder.get(0).unwrap_err(), "Resize");
    assert!(message.contains("thin.png"), "names the file: {message}");
    assert!(folder.get(1).is_ok());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn decoding_refuses_more_pixels_than_the_bound() {
    // 1 × 400,000,000 pixels: 50 KB as a one-bit PNG, 400 MB once decoded to 8 bits (under
    // the decoder's own 512 MiB limit), more than MAX_IMAGE_PIXELS.
    const { assert!(400_000_000 > MAX_IMAGE_PIXELS) };
    let dir = temp_dir("image-limits-decode");
    let path = dir.join("huge.png");
    one_bit_png(&path, 400_000_000, 1);
    let error = PixelImage::open(&path).unwrap_err();
    assert!(matches!(error, Error::Format { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("huge.png"), "{message}");
    assert!(message.contains("400000000x1"), "{message}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn oversized_image_files_are_refused_before_reading() {
    let dir = temp_dir("image-limits-file");
    let path = dir.join("big.png");
    let file = std::fs::File::create(&path).unwrap();
    // A sparse file: no disk space, but its length is over the bound.
    file.set_len(MAX_IMAGE_FILE_BYTES + 1).unwrap();
    let error = PixelImage::open(&path).unwrap_err().to_string();
    assert!(error.contains("big.png"), "{error}");
    assert!(error.contains("larger than"), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn transform_targets_beyond_the_bound_are_refused_when_built() {
    let side = 1 << 20; // 2^40 pixels
    invalid_argument_of(Resize::new(side).unwrap_err(), "Resize");
    invalid_argument_of(Resize::exact(side, side).unwrap_err(), "Resize");
    invalid_argument_of(CenterCrop::new(100_000).unwrap_err(), "CenterCrop");
    invalid_argument_of(RandomCrop::new(side, 0).unwrap_err(), "RandomCrop");
    invalid_argument_of(
        RandomResizedCrop::new(side).unwrap_err(),
        "RandomResizedCrop",
    );
    // Sizes within the bound still work.
    let out = CenterCrop::new(3)
        .unwrap()
        .apply(small_image(), &mut SplitMix64::new(0))
        .unwrap();
    assert_eq!((out.height(), out.width()), (3, 3));
}

#[test]
fn paddings_beyond_the_bound_are_errors_naming_the_transform() {
    let mut rng = SplitMix64::new(0);
    // Padding that overflows a side, and padding that is merely enormous.
    for padding in [usize::MAX / 2, 1 << 20] {
        let pad = Pad::new(padding, PaddingMode::Constant(0.0));
        let message = invalid_argument_of(pad.apply(small_image(), &mut rng).unwrap_err(), "Pad");
        assert!(message.contains("4x6"), "{message}");
        let crop = RandomCrop::new(4, padding).unwrap();
        invalid_argument_of(
            crop.apply(small_image(), &mut rng).unwrap_err(),
            "RandomCrop",
        );
    }
    // pad_if_needed with a crop within the bound pads up as before.
    let crop = RandomCrop::rect(10, 10, [0; 4])
        .unwrap()
        .pad_if_needed(true);
    let out = crop.apply(small_image(), &mut rng).unwrap();
    assert_eq!((out.height(), out.width()), (10, 10));
}

#[test]
fn functional_operations_refuse_absurd_sizes() {
    let image = small_image();
    let huge = 1 << 20;
    assert!(matches!(
        functional::resize(&image, huge, huge),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        functional::crop(&image, 0, 0, huge, huge),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        functional::center_crop(&image, huge, huge),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        functional::pad(&image, [usize::MAX; 4], PaddingMode::Edge),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        functional::resized_crop(&image, 0, 0, 2, 2, huge, huge),
        Err(Error::InvalidArgument { .. })
    ));
    // The bound is on pixels, not on a side: a long thin result within it is fine.
    let thin = functional::resize(&image, 1, 100_000).unwrap();
    assert_eq!((thin.height(), thin.width()), (1, 100_000));
}
