//! The deterministic image operations against torchvision's output on the same images.
//!
//! `tests/golden/` holds a 9×12 RGB PNG, a 7×10 grey PNG, the RGB image as a JPEG, and
//! `transforms.json` with torchvision's results (written by
//! `scripts/golden/generate_transforms.py`; no Python is needed to run this test). Float
//! results must agree to 1e-5 (float rounding); 8-bit results exactly where torchvision
//! only moves values, within one level where it interpolates or blends in float and
//! truncates.

use std::path::PathBuf;

use anygrad_data::transforms::functional::{
    adjust_brightness, adjust_contrast, adjust_hue, adjust_saturation, center_crop, crop, hflip,
    normalize, pad, resize, resized_crop, resized_size, to_tensor, vflip, PaddingMode,
};
use anygrad_data::transforms::{Resize, Transform};
use anygrad_data::{Image, PixelImage, SplitMix64};
use serde_json::Value;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn cases() -> Value {
    let text = std::fs::read_to_string(golden_dir().join("transforms.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["cases"].clone()
}

fn case(name: &str) -> (Vec<usize>, Vec<f64>, Value) {
    let all = cases();
    let case = &all[name];
    assert!(case.is_object(), "golden case {name} is missing");
    let shape = case["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let data = case["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    (shape, data, case["params"].clone())
}

fn open(name: &str) -> PixelImage {
    let file = match name {
        "rgb" => "transforms_rgb.png",
        "gray" => "transforms_gray.png",
        "jpeg" => "transforms_rgb.jpg",
        other => panic!("unknown golden image {other}"),
    };
    PixelImage::open(golden_dir().join(file)).unwrap()
}

fn rgb() -> Image {
    Image::Pixels(open("rgb").into_rgb().unwrap())
}

fn rgb_float() -> Image {
    Image::Chw(to_tensor(&open("rgb")).unwrap())
}

/// The image's values in CHW order, as torchvision's tensors hold them, with its shape.
fn chw_values(image: &Image) -> (Vec<usize>, Vec<f64>) {
    match image {
        Image::Chw(chw) => (
            chw.shape().to_vec(),
            chw.data().iter().map(|&v| v as f64).collect(),
        ),
        Image::Pixels(pixels) => {
            let (c, h, w) = (pixels.channels(), pixels.height(), pixels.width());
            let mut out = Vec::with_capacity(c * h * w);
            for channel in 0..c {
                for row in 0..h {
                    for column in 0..w {
                        out.push(pixels.at(row, column, channel).unwrap() as f64);
                    }
                }
            }
            (vec![c, h, w], out)
        }
    }
}

/// Compare with golden `name`: shapes equal, every value within `tolerance`; returns the
/// largest difference seen.
fn check(name: &str, image: &Image, tolerance: f64) -> f64 {
    let (shape, expected, _) = case(name);
    let (actual_shape, actual) = chw_values(image);
    assert_eq!(actual_shape, shape, "{name}: shape");
    let mut worst = 0.0f64;
    for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
        let difference = (a - e).abs();
        assert!(
            difference <= tolerance,
            "{name}: element {i}: got {a}, torchvision {e} (tolerance {tolerance})"
        );
        worst = worst.max(difference);
    }
    println!("{name}: largest difference from torchvision {worst:e}");
    worst
}

fn param(params: &Value, key: &str) -> usize {
    params[key].as_u64().unwrap() as usize
}

#[test]
fn png_decoding_and_colour_conversion_match_pillow() {
    for (name, image) in [
        ("decode_png_rgb", open("rgb")),
        ("decode_png_gray", open("gray")),
        ("gray_to_rgb", open("gray").into_rgb().unwrap()),
        ("rgb_to_gray", open("rgb").into_gray().unwrap()),
    ] {
        let (shape, expected, _) = case(name);
        let hwc: Vec<usize> = if image.channels() == 1 {
            vec![image.height(), image.width()]
        } else {
            vec![image.height(), image.width(), image.channels()]
        };
        assert_eq!(hwc, shape, "{name}: shape");
        let actual: Vec<f64> = image.data().iter().map(|&v| v as f64).collect();
        assert_eq!(actual, expected, "{name}");
    }
}

#[test]
fn jpeg_decoding_is_close_to_pillow() {
    // Different IDCT implementations (jpeg-decoder vs libjpeg) may differ by a level or two.
    let image = open("jpeg");
    let (shape, expected, _) = case("decode_jpeg_rgb");
    assert_eq!(shape, vec![9, 12, 3]);
    let worst = image
        .data()
        .iter()
        .zip(&expected)
        .map(|(&a, &e)| (a as f64 - e).abs())
        .fold(0.0, f64::max);
    println!("JPEG: largest difference from Pillow {worst} levels");
    assert!(
        worst <= 3.0,
        "JPEG decode differs from Pillow by {worst} levels"
    );
}

#[test]
fn to_tensor_and_normalize_match() {
    check("to_tensor_rgb", &rgb_float(), 1e-7);
    check(
        "to_tensor_gray",
        &Image::Chw(to_tensor(&open("gray")).unwrap()),
        1e-7,
    );
    let (_, _, params) = case("normalize");
    let values = |key: &str| -> Vec<f32> {
        params[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect()
    };
    let normalized = normalize(
        to_tensor(&open("rgb")).unwrap(),
        &values("mean"),
        &values("std"),
    )
    .unwrap();
    check("normalize", &Image::Chw(normalized), 1e-6);
}

#[test]
fn resize_matches_torchvision_without_antialias() {
    let (_, _, params) = case("resize_shorter_5");
    let shorter = Resize::new(param(&params, "size")).unwrap();
    let resized = shorter.apply(rgb_float(), &mut SplitMix64::new(0)).unwrap();
    assert_eq!(resized_size(9, 12, 5), (5, 6), "int(5 * 12 / 9) truncates");
    check("resize_shorter_5", &resized, 1e-5);
    for name in ["resize_exact_4x7", "resize_up_13x17"] {
        let (_, _, params) = case(name);
        let out = resize(
            &rgb_float(),
            param(&params, "height"),
            param(&params, "width"),
        )
        .unwrap();
        check(name, &out, 1e-5);
    }
    let (_, _, params) = case("resize_gray_up_9x14");
    let gray = Image::Chw(to_tensor(&open("gray")).unwrap());
    let out = resize(&gray, param(&params, "height"), param(&params, "width")).unwrap();
    check("resize_gray_up_9x14", &out, 1e-5);
    // 8-bit: torchvision's uint8 kernel uses fixed-point weights; one level of difference.
    let (_, _, params) = case("resize_u8_4x7");
    let out = resize(&rgb(), param(&params, "height"), param(&params, "width")).unwrap();
    check("resize_u8_4x7", &out, 1.0);
}

#[test]
fn center_crop_matches_including_rounding_and_padding() {
    for name in ["center_crop_6", "center_crop_4x7", "center_crop_12x15"] {
        let (_, _, params) = case(name);
        let out = center_crop(&rgb(), param(&params, "height"), param(&params, "width")).unwrap();
        check(name, &out, 0.0);
        // The same crop on the float image gives the same values / 255.
        let float = center_crop(
            &rgb_float(),
            param(&params, "height"),
            param(&params, "width"),
        )
        .unwrap();
        let (_, expected, _) = case(name);
        let (_, actual) = chw_values(&float);
        for (a, e) in actual.iter().zip(&expected) {
            assert!(
                (a * 255.0 - e).abs() < 1e-4,
                "{name} on f32: {a} vs {e}/255"
            );
        }
    }
}

#[test]
fn flips_match() {
    check("hflip", &hflip(&rgb()).unwrap(), 0.0);
    check("vflip", &vflip(&rgb()).unwrap(), 0.0);
    assert_eq!(hflip(&hflip(&rgb()).unwrap()).unwrap(), rgb());
}

#[test]
fn padding_and_crops_at_fixed_offsets_match() {
    let (_, _, params) = case("pad4_crop_at_3_5");
    let padding = param(&params, "padding");
    let padded = pad(&rgb(), [padding; 4], PaddingMode::Constant(0.0)).unwrap();
    let out = crop(
        &padded,
        param(&params, "top") as isize,
        param(&params, "left") as isize,
        param(&params, "height"),
        param(&params, "width"),
    )
    .unwrap();
    check("pad4_crop_at_3_5", &out, 0.0);
    for (name, mode) in [
        ("pad_constant", PaddingMode::Constant(7.0)),
        ("pad_edge", PaddingMode::Edge),
        ("pad_reflect", PaddingMode::Reflect),
        ("pad_symmetric", PaddingMode::Symmetric),
    ] {
        check(name, &pad(&rgb(), [2, 1, 3, 2], mode).unwrap(), 0.0);
    }
    check("crop_outside", &crop(&rgb(), -2, 8, 5, 6).unwrap(), 0.0);
    let (_, _, params) = case("resized_crop");
    let out = resized_crop(
        &rgb_float(),
        param(&params, "top") as isize,
        param(&params, "left") as isize,
        param(&params, "height"),
        param(&params, "width"),
        5,
        5,
    )
    .unwrap();
    check("resized_crop", &out, 1e-5);
}

#[test]
fn colour_adjustments_match() {
    type Adjust = fn(&Image, f64) -> anygrad_core::Result<Image>;
    let adjustments: [(&str, Adjust); 4] = [
        ("brightness", adjust_brightness),
        ("contrast", adjust_contrast),
        ("saturation", adjust_saturation),
        ("hue", adjust_hue),
    ];
    for (name, adjust) in adjustments {
        let (_, _, params) = case(&format!("{name}_float"));
        let factor = params["factor"].as_f64().unwrap();
        let out = adjust(&rgb_float(), factor).unwrap();
        check(&format!("{name}_float"), &out, 1e-5);
        let out = adjust(&rgb(), factor).unwrap();
        check(&format!("{name}_u8"), &out, 1.0);
    }
    let gray = Image::Chw(to_tensor(&open("gray")).unwrap());
    check(
        "contrast_gray_float",
        &adjust_contrast(&gray, 1.5).unwrap(),
        1e-5,
    );
}
