#!/usr/bin/env python3
"""Write a synthetic image of printed text as a normalized `[1, 3, H, W]` float32 `.npy`, the
input PaddleOCR's detector, recognizer and classifier expect (RGB, `(pixel / 255 - 0.5) / 0.5`),
for `scripts/onnx/compare_with_onnxruntime.py --input x=FILE.npy`.

Random noise makes the detector's output tiny everywhere (no text: sigmoid of logits below -7),
where onnxruntime's own Sigmoid is off by 1e-4 of the largest output; an image with text gives
the detector something to find, as in use.

    python3 scripts/onnx/write_text_image.py /tmp/text_640.npy --height 640 --width 640
    python3 scripts/onnx/write_text_image.py /tmp/line_48x320.npy --height 48 --width 320 --lines 1

Lines of dark words on a light background, with Pillow's default font when Pillow is installed
(sizes scaled to the line height), else with blocks of glyph-sized strokes drawn by numpy. The
text, positions and shades come from `--seed`; `--png FILE` also saves the picture.
"""

import argparse
import sys

WORDS = (
    "anygrad onnx runtime detector recognizer tensor graph kernel invoice total amount "
    "date 2026 receipt number 4182 paid thank you model layer weight batch"
).split()


def draw_with_pillow(height, width, lines, rng):
    """The picture as an `[H, W, 3]` uint8 array drawn by Pillow, or None without Pillow."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        return None
    import numpy as np

    image = Image.new("RGB", (width, height), (245, 245, 240))
    draw = ImageDraw.Draw(image)
    line_height = height / lines
    size = max(8, int(line_height * 0.6))
    try:
        font = ImageFont.load_default(size=size)
    except TypeError:  # Pillow before 10.1: a fixed bitmap font
        font = ImageFont.load_default()
    for line in range(lines):
        top = int(line * line_height + line_height * 0.15)
        left = int(rng.integers(0, max(1, width // 10)))
        text = " ".join(rng.choice(WORDS, size=12))
        shade = int(rng.integers(0, 60))
        draw.text((left, top), text, fill=(shade, shade, shade), font=font)
    return np.asarray(image)


def draw_with_numpy(height, width, lines, rng):
    """The picture as an `[H, W, 3]` uint8 array: words as runs of glyph-sized strokes."""
    import numpy as np

    image = np.full((height, width, 3), 245, dtype=np.uint8)
    line_height = height / lines
    glyph_height = max(3, int(line_height * 0.5))
    glyph_width = max(2, glyph_height // 2)
    for line in range(lines):
        top = int(line * line_height + line_height * 0.25)
        left = int(rng.integers(0, max(1, width // 10)))
        while left + glyph_width < width:
            for _ in range(int(rng.integers(2, 9))):
                if left + glyph_width >= width:
                    break
                stroke = max(1, glyph_width // 3)
                image[top : top + glyph_height, left : left + stroke] = 20
                bar = top + int(rng.integers(0, glyph_height))
                image[bar : bar + stroke, left : left + glyph_width] = 20
                left += glyph_width + stroke
            left += 2 * glyph_width
    return image


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="the .npy file to write ([1, 3, H, W] float32)")
    parser.add_argument("--height", type=int, default=640, help="image height (640)")
    parser.add_argument("--width", type=int, default=640, help="image width (640)")
    parser.add_argument("--lines", type=int, help="text lines (default: one per 40 pixels)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument("--png", help="also save the picture here")
    args = parser.parse_args()
    if args.height < 8 or args.width < 8:
        print("error: --height and --width must be at least 8", file=sys.stderr)
        return 2
    try:
        import numpy as np
    except ImportError:
        print("error: needs numpy: pip install numpy", file=sys.stderr)
        return 2
    lines = args.lines or max(1, args.height // 40)
    rng = np.random.default_rng(args.seed)
    picture = draw_with_pillow(args.height, args.width, lines, rng)
    how = "Pillow's default font"
    if picture is None:
        picture = draw_with_numpy(args.height, args.width, lines, rng)
        how = "numpy strokes (Pillow is not installed)"
    if args.png:
        try:
            from PIL import Image

            Image.fromarray(picture).save(args.png)
        except ImportError:
            print("warning: --png needs Pillow; not saved", file=sys.stderr)
    normalized = (picture.astype(np.float32) / 255.0 - 0.5) / 0.5
    batch = np.ascontiguousarray(normalized.transpose(2, 0, 1)[None])
    np.save(args.output, batch)
    print(f"wrote {args.output}: {list(batch.shape)} float32, {lines} lines of text ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
