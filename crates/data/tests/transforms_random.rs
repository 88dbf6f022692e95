//! The random transforms: parameters stay in torchvision's ranges, the same generator state
//! gives the same result, argument errors are errors, and the pipeline-level rules (ToTensor
//! before Normalize, once) are enforced.

use anygrad_data::transforms::functional::{center_crop, hflip, PaddingMode};
use anygrad_data::transforms::{
    CenterCrop, ColorJitter, Compose, ConvertChannels, Normalize, Pad, RandomCrop,
    RandomHorizontalFlip, RandomResizedCrop, RandomVerticalFlip, Resize, ToTensor, Transform,
};
use anygrad_data::{Image, PixelImage, SplitMix64};

/// A 10×16 RGB image whose every pixel is distinct.
fn image() -> Image {
    let data = (0..10 * 16 * 3).map(|i| (i % 251) as u8).collect();
    Image::Pixels(PixelImage::new(10, 16, 3, data).unwrap())
}

#[test]
fn random_resized_crop_regions_follow_torchvision_rules() {
    let crop = RandomResizedCrop::new(8)
        .unwrap()
        .scale(0.25, 0.5)
        .unwrap()
        .ratio(0.5, 2.0)
        .unwrap();
    let mut rng = SplitMix64::new(1);
    for _ in 0..500 {
        let (top, left, h, w) = crop.region(10, 16, &mut rng);
        assert!(h >= 1 && w >= 1 && top + h <= 10 && left + w <= 16);
        let area = (h * w) as f64 / 160.0;
        // Rounding of the sides widens the area range a little on a small image.
        assert!((0.15..=0.65).contains(&area), "area fraction {area}");
    }
    // An image far outside the ratio range falls back to the centred, ratio-clamped crop.
    let strict = RandomResizedCrop::new(4)
        .unwrap()
        .scale(0.99, 1.0)
        .unwrap()
        .ratio(1.0, 1.0)
        .unwrap();
    assert_eq!(strict.region(4, 40, &mut rng), (0, 18, 4, 4));
    assert_eq!(strict.region(0, 5, &mut rng), (0, 0, 0, 0));
    let out = crop.apply(image(), &mut SplitMix64::new(3)).unwrap();
    assert_eq!((out.height(), out.width(), out.channels()), (8, 8, 3));
    assert!(RandomResizedCrop::new(0).is_err());
    assert!(RandomResizedCrop::new(4).unwrap().scale(0.5, 0.1).is_err());
    assert!(RandomResizedCrop::new(4).unwrap().ratio(0.0, 1.0).is_err());
}

#[test]
fn random_crop_windows_lie_in_the_padded_image() {
    let crop = RandomCrop::new(10, 2).unwrap();
    let padded =
        anygrad_data::transforms::functional::pad(&image(), [2; 4], PaddingMode::Constant(0.0))
            .unwrap();
    let mut offsets = std::collections::HashSet::new();
    for seed in 0..200 {
        let out = crop.apply(image(), &mut SplitMix64::new(seed)).unwrap();
        assert_eq!((out.height(), out.width()), (10, 10));
        // Find the window's offset in the padded image: it must be one of the valid ones.
        let found = (0..=4)
            .flat_map(|t| (0..=10).map(move |l| (t, l)))
            .find(|&(t, l)| {
                anygrad_data::transforms::functional::crop(&padded, t as isize, l as isize, 10, 10)
                    .unwrap()
                    == out
            });
        offsets.insert(found.expect("the crop is a window of the padded image"));
    }
    assert!(offsets.len() > 20, "offsets vary: {}", offsets.len());
    // Too small without pad_if_needed: an error; with it: padded up.
    let big = RandomCrop::rect(12, 20, [0; 4]).unwrap();
    assert!(big.apply(image(), &mut SplitMix64::new(0)).is_err());
    let out = big
        .pad_if_needed(true)
        .padding_mode(PaddingMode::Edge)
        .apply(image(), &mut SplitMix64::new(0))
        .unwrap();
    assert_eq!((out.height(), out.width()), (12, 20));
    // Reflect padding wider than the image is refused.
    let reflect = RandomCrop::new(10, 20)
        .unwrap()
        .padding_mode(PaddingMode::Reflect);
    assert!(reflect.apply(image(), &mut SplitMix64::new(0)).is_err());
}

#[test]
fn flips_and_jitter_are_seeded_and_in_range() {
    let flip = RandomHorizontalFlip::new(0.5).unwrap();
    let flipped = (0..200)
        .filter(|&seed| {
            flip.apply(image(), &mut SplitMix64::new(seed)).unwrap() == hflip(&image()).unwrap()
        })
        .count();
    assert!((70..130).contains(&flipped), "{flipped} of 200 flipped");
    assert_eq!(
        RandomHorizontalFlip::new(1.0)
            .unwrap()
            .apply(image(), &mut SplitMix64::new(0))
            .unwrap(),
        hflip(&image()).unwrap()
    );
    assert!(RandomVerticalFlip::new(1.5).is_err());
    let jitter = ColorJitter::new(0.5, 0.5, 0.5, 0.1).unwrap();
    let a = jitter.apply(image(), &mut SplitMix64::new(9)).unwrap();
    let b = jitter.apply(image(), &mut SplitMix64::new(9)).unwrap();
    let c = jitter.apply(image(), &mut SplitMix64::new(10)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let float = Compose::new().then(ToTensor).then(jitter);
    let Image::Chw(chw) = float.apply(image(), &mut SplitMix64::new(4)).unwrap() else {
        panic!("ToTensor gives CHW")
    };
    assert!(chw.data().iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(ColorJitter::new(-0.1, 0.0, 0.0, 0.0).is_err());
    assert!(ColorJitter::new(0.0, 0.0, 0.0, 0.6).is_err());
    assert!(ColorJitter::new(0.0, f64::NAN, 0.0, 0.0).is_err());
}

#[test]
fn pipeline_rules_are_errors_not_panics() {
    let mut rng = SplitMix64::new(0);
    let normalize = Normalize::new(&[0.5, 0.5, 0.5], &[0.2, 0.2, 0.2]).unwrap();
    let error = normalize.apply(image(), &mut rng).unwrap_err();
    assert!(error.to_string().contains("ToTensor"), "{error}");
    let twice = Compose::new().then(ToTensor).then(ToTensor);
    assert!(twice.apply(image(), &mut rng).is_err());
    let wrong_channels = Compose::new()
        .then(ConvertChannels::gray())
        .then(ToTensor)
        .then(normalize);
    assert!(wrong_channels.apply(image(), &mut rng).is_err());
    assert!(Normalize::new(&[0.5], &[0.0]).is_err());
    assert!(Normalize::new(&[0.5, 0.5], &[0.2]).is_err());
    assert!(Resize::new(0).is_err() && Resize::exact(3, 0).is_err());
    assert!(CenterCrop::new(0).is_err());
    // A full eval pipeline on the grey conversion: shapes and layout.
    let eval = Compose::new()
        .then(ConvertChannels::gray())
        .then(Resize::new(5).unwrap())
        .then(CenterCrop::new(5).unwrap())
        .then(Pad::new(1, PaddingMode::Symmetric))
        .then(ToTensor)
        .then(Normalize::new(&[0.5], &[0.5]).unwrap());
    let Image::Chw(out) = eval.apply(image(), &mut rng).unwrap() else {
        panic!("ends in CHW")
    };
    assert_eq!(out.shape(), [1, 7, 7]);
    assert!(out.data().iter().all(|v| (-1.0..=1.0).contains(v)));
    assert_eq!(center_crop(&image(), 10, 16).unwrap(), image());
}
