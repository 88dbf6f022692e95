#!/usr/bin/env python3
"""Generate golden values for anygrad-data's image transforms from torchvision.

Writes, under crates/data/tests/golden/:
  transforms_rgb.png   a 9x12 RGB test image (smooth gradients plus noise, odd sizes so that
                       centre crops and resizes exercise rounding)
  transforms_gray.png  a 7x10 grey test image
  transforms_rgb.jpg   the RGB image as a JPEG (quality 90), to bound decoder differences
  transforms.json      for each case: the op, its parameters, the output shape and values
                       (float tensors as %.8g, uint8 as integers), computed by torchvision

Run once with a venv holding torch, torchvision and pillow:

    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch torchvision
    /tmp/tv/bin/python scripts/golden/generate_transforms.py

The Rust test crates/data/tests/transforms_golden.rs reads these files; `cargo test` never
needs Python.
"""
import json
import os

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "data", "tests", "golden")


def make_rgb():
    rows, cols = 9, 12
    rng = np.random.RandomState(7)
    y, x = np.mgrid[0:rows, 0:cols]
    r = 20 * x + 5 * y
    g = 255 - 25 * y - 3 * x
    b = 128 + 60 * np.sin(x * 0.9 + y * 0.4)
    img = np.stack([r, g, b], axis=-1) + rng.randint(-30, 31, size=(rows, cols, 3))
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def make_gray():
    rows, cols = 7, 10
    rng = np.random.RandomState(11)
    y, x = np.mgrid[0:rows, 0:cols]
    img = 30 + 18 * x + 9 * y + rng.randint(-20, 21, size=(rows, cols))
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "L")


def enc(t):
    t = torch.as_tensor(t)
    if t.dtype.is_floating_point:
        data = [float(f"{v:.8g}") for v in t.reshape(-1).tolist()]
        kind = "float"
    else:
        data = [int(v) for v in t.reshape(-1).tolist()]
        kind = "uint8"
    return {"shape": list(t.shape), "dtype": kind, "data": data}


def main():
    os.makedirs(OUT, exist_ok=True)
    rgb = make_rgb()
    gray = make_gray()
    rgb.save(os.path.join(OUT, "transforms_rgb.png"))
    gray.save(os.path.join(OUT, "transforms_gray.png"))
    rgb.save(os.path.join(OUT, "transforms_rgb.jpg"), quality=90)
    jpeg = Image.open(os.path.join(OUT, "transforms_rgb.jpg")).convert("RGB")

    rgb_u8 = F.pil_to_tensor(rgb)  # uint8 CHW
    rgb_f = T.ToTensor()(rgb)  # float CHW in [0, 1]
    gray_f = T.ToTensor()(gray)
    cases = {}

    def case(name, input_name, params, output):
        cases[name] = {"input": input_name, "params": params, **enc(output)}

    # Decoding and colour conversion (PIL's view of the same files).
    case("decode_png_rgb", "rgb", {}, torch.from_numpy(np.asarray(rgb).copy()))
    case("decode_png_gray", "gray", {}, torch.from_numpy(np.asarray(gray).copy()))
    case("decode_jpeg_rgb", "jpeg", {}, torch.from_numpy(np.asarray(jpeg).copy()))
    case("gray_to_rgb", "gray", {}, torch.from_numpy(np.asarray(gray.convert("RGB")).copy()))
    case("rgb_to_gray", "rgb", {}, torch.from_numpy(np.asarray(rgb.convert("L")).copy()))

    # ToTensor and Normalize.
    case("to_tensor_rgb", "rgb", {}, rgb_f)
    case("to_tensor_gray", "gray", {}, gray_f)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    case("normalize", "rgb", {"mean": mean, "std": std}, T.Normalize(mean, std)(rgb_f))

    # Resize, bilinear, antialias off, on float tensors (exact) and uint8 tensors (+-1).
    case("resize_shorter_5", "rgb", {"size": 5}, T.Resize(5, antialias=False)(rgb_f))
    case("resize_exact_4x7", "rgb", {"height": 4, "width": 7},
         T.Resize((4, 7), antialias=False)(rgb_f))
    case("resize_up_13x17", "rgb", {"height": 13, "width": 17},
         T.Resize((13, 17), antialias=False)(rgb_f))
    case("resize_u8_4x7", "rgb", {"height": 4, "width": 7},
         T.Resize((4, 7), antialias=False)(rgb_u8))
    case("resize_gray_up_9x14", "gray", {"height": 9, "width": 14},
         T.Resize((9, 14), antialias=False)(gray_f))

    # Centre crops: banker's rounding of the offset, and zero padding when larger.
    case("center_crop_6", "rgb", {"height": 6, "width": 6}, T.CenterCrop(6)(rgb_u8))
    case("center_crop_4x7", "rgb", {"height": 4, "width": 7}, T.CenterCrop((4, 7))(rgb_u8))
    case("center_crop_12x15", "rgb", {"height": 12, "width": 15}, T.CenterCrop((12, 15))(rgb_u8))

    # Flips.
    case("hflip", "rgb", {}, F.hflip(rgb_u8))
    case("vflip", "rgb", {}, F.vflip(rgb_u8))

    # RandomCrop(padding=4) at a fixed offset: pad with zeros, then crop.
    padded = F.pad(rgb_u8, [4, 4, 4, 4], fill=0, padding_mode="constant")
    case("pad4_crop_at_3_5", "rgb", {"padding": 4, "top": 3, "left": 5, "height": 9, "width": 12},
         F.crop(padded, 3, 5, 9, 12))
    for mode in ["constant", "edge", "reflect", "symmetric"]:
        fill = 7 if mode == "constant" else 0
        case(f"pad_{mode}", "rgb", {"ltrb": [2, 1, 3, 2], "fill": fill},
             F.pad(rgb_u8, [2, 1, 3, 2], fill=fill, padding_mode=mode))
    case("crop_outside", "rgb", {"top": -2, "left": 8, "height": 5, "width": 6},
         F.crop(rgb_u8, -2, 8, 5, 6))

    # resized_crop (what RandomResizedCrop does once the region is drawn).
    case("resized_crop", "rgb", {"top": 2, "left": 3, "height": 6, "width": 8, "size": [5, 5]},
         F.resized_crop(rgb_f, 2, 3, 6, 8, [5, 5], antialias=False))

    # Colour adjustments on float tensors (exact to float rounding) and uint8 tensors (+-1).
    for name, fn, factor in [
        ("brightness", F.adjust_brightness, 1.3),
        ("contrast", F.adjust_contrast, 0.6),
        ("saturation", F.adjust_saturation, 1.7),
        ("hue", F.adjust_hue, 0.2),
    ]:
        case(f"{name}_float", "rgb", {"factor": factor}, fn(rgb_f, factor))
        case(f"{name}_u8", "rgb", {"factor": factor}, fn(rgb_u8, factor))
    case("contrast_gray_float", "gray", {"factor": 1.5}, F.adjust_contrast(gray_f, 1.5))

    meta = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": Image.__version__,
        "images": {"rgb": "transforms_rgb.png", "gray": "transforms_gray.png", "jpeg": "transforms_rgb.jpg"},
    }
    with open(os.path.join(OUT, "transforms.json"), "w") as f:
        json.dump({"meta": meta, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
