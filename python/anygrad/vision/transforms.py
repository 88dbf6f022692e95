"""Transforms in torchvision's style for arrays and tensors (no PIL): ``Compose``,
``ToTensor`` (HWC or HW uint8 → CHW float in [0, 1]), ``Normalize``, ``Lambda``,
``RandomHorizontalFlip``, ``Pad``, ``CenterCrop``, ``RandomCrop`` and ``Resize`` (numpy images are
H×W or H×W×C, tensors C×H×W; crops, pads and resizes work on the last two dims of a tensor)."""



def _uniform():
    """A uniform number in [0, 1) from anygrad's generator (so ``manual_seed`` repeats the
    augmentations, as torchvision's draw from torch's)."""
    import anygrad

    return anygrad.rand(1).item()


def _integer(low, high):
    """A uniform integer in [low, high] from anygrad's generator."""
    import anygrad

    return int(anygrad.randint(low, high + 1, (1,)).item())


class Compose:
    """Transforms applied in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class ToTensor:
    """A uint8 array (H×W or H×W×C) as a float tensor C×H×W in [0, 1]."""

    def __call__(self, image):
        import numpy as np
        import anygrad

        array = np.asarray(image)
        if array.ndim == 2:
            array = array[None, :, :]
        elif array.ndim == 3:
            array = array.transpose(2, 0, 1)
        scale = 255.0 if array.dtype == np.uint8 else 1.0
        return anygrad.from_numpy(np.ascontiguousarray(array, dtype=np.float32) / scale)


class Normalize:
    """``(x - mean) / std`` per channel."""

    def __init__(self, mean, std, inplace=False):
        self.mean = list(mean)
        self.std = list(std)
        if any(s == 0 for s in self.std):
            raise ValueError(f"Normalize: std evaluated to zero ({self.std})")

    def __call__(self, tensor):
        import anygrad

        channels = tensor.shape[0]
        key = (channels, str(tensor.device), tensor.dtype)
        cached = self.__dict__.setdefault("_cache", {})
        if key not in cached:
            mean = self.mean if len(self.mean) == channels else self.mean * channels
            std = self.std if len(self.std) == channels else self.std * channels
            cached[key] = (
                anygrad.tensor(mean, dtype=tensor.dtype, device=tensor.device).reshape(-1, 1, 1),
                anygrad.tensor([1.0 / s for s in std], dtype=tensor.dtype, device=tensor.device).reshape(-1, 1, 1),
            )
        mean, inverse_std = cached[key]
        return (tensor - mean) * inverse_std


class Lambda:
    """A function as a transform."""

    def __init__(self, function):
        self.function = function

    def __call__(self, image):
        return self.function(image)


class RandomHorizontalFlip:
    """Flip left-right with probability ``p``."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, image):
        if _uniform() >= self.p:
            return image
        import anygrad

        if isinstance(image, anygrad.Tensor):
            return image.flip(-1)
        return image[..., ::-1] if getattr(image, "ndim", 2) == 2 else image[:, ::-1]


def _size_pair(size):
    return (size, size) if isinstance(size, int) else tuple(size)


def _height_width(image):
    """``(height, width)`` of a numpy image (H×W[×C]) or a tensor (…×H×W)."""
    import anygrad

    if isinstance(image, anygrad.Tensor):
        return image.shape[-2], image.shape[-1]
    return image.shape[0], image.shape[1]


def _crop(image, top, left, height, width):
    import anygrad

    if isinstance(image, anygrad.Tensor):
        return image[..., top:top + height, left:left + width]
    return image[top:top + height, left:left + width]


class Pad:
    """Pad the borders with ``fill`` (``padding``: all sides, (left/right, top/bottom) or
    (left, top, right, bottom))."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        if padding_mode != "constant":
            raise NotImplementedError(f"Pad: padding_mode={padding_mode!r} is not supported (constant only)")
        if isinstance(padding, int):
            padding = (padding,) * 4
        elif len(padding) == 2:
            padding = (padding[0], padding[1], padding[0], padding[1])
        self.left, self.top, self.right, self.bottom = padding
        self.fill = fill

    def __call__(self, image):
        import numpy as np
        import anygrad

        if isinstance(image, anygrad.Tensor):
            return anygrad.nn.functional.pad(image, (self.left, self.right, self.top, self.bottom), value=float(self.fill))
        widths = [(self.top, self.bottom), (self.left, self.right)] + [(0, 0)] * (image.ndim - 2)
        return np.pad(image, widths, constant_values=self.fill)


class CenterCrop:
    """The central ``size`` region (torchvision rounds the offsets as here)."""

    def __init__(self, size):
        self.size = _size_pair(size)

    def __call__(self, image):
        height, width = _height_width(image)
        crop_h, crop_w = self.size
        if crop_h > height or crop_w > width:
            raise ValueError(f"CenterCrop: size {self.size} is larger than the image ({height}, {width})")
        top = int(round((height - crop_h) / 2.0))
        left = int(round((width - crop_w) / 2.0))
        return _crop(image, top, left, crop_h, crop_w)


class RandomCrop:
    """A random ``size`` region, after optional ``padding`` (``RandomCrop(32, padding=4)``)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _size_pair(size)
        self.pad = Pad(padding, fill, padding_mode) if padding else None
        self.pad_if_needed = pad_if_needed
        self.fill = fill

    def __call__(self, image):
        if self.pad is not None:
            image = self.pad(image)
        height, width = _height_width(image)
        crop_h, crop_w = self.size
        if self.pad_if_needed and (height < crop_h or width < crop_w):
            image = Pad((max(crop_w - width, 0), max(crop_h - height, 0)), self.fill)(image)
            height, width = _height_width(image)
        if crop_h > height or crop_w > width:
            raise ValueError(f"RandomCrop: size {self.size} is larger than the image ({height}, {width})")
        top = _integer(0, height - crop_h)
        left = _integer(0, width - crop_w)
        return _crop(image, top, left, crop_h, crop_w)


class InterpolationMode:
    """The resampling filters ``Resize`` takes."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"


def _resized_size(height, width, size, max_size):
    """torchvision's output size: an int matches the shorter edge (the longer one keeps the
    aspect ratio, capped by ``max_size``); a pair is ``(height, width)``."""
    if isinstance(size, (tuple, list)):
        if len(size) == 1:
            size = size[0]
        else:
            return int(size[0]), int(size[1])
    short, long = (height, width) if height <= width else (width, height)
    new_short, new_long = size, int(size * long / short)
    if max_size is not None:
        if max_size <= size:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_short, new_long) if height <= width else (new_long, new_short)


class Resize:
    """Resize the last two dims to ``size`` (an int: the shorter edge, keeping the aspect ratio),
    bilinear with antialiasing by default as torchvision's, or nearest. A uint8 numpy image
    stays uint8 (rounded)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        mode = getattr(interpolation, "value", interpolation)
        if isinstance(mode, str):
            mode = mode.lower()
        if mode not in ("nearest", "bilinear"):
            raise ValueError(f"Resize: interpolation {interpolation!r} is not supported (NEAREST, BILINEAR)")
        self.size, self.interpolation, self.max_size, self.antialias = size, mode, max_size, antialias

    def __call__(self, image):
        import numpy as np
        import anygrad
        import anygrad.nn.functional as F

        is_tensor = isinstance(image, anygrad.Tensor)
        if is_tensor:
            x = image
            height, width = x.shape[-2], x.shape[-1]
        else:
            array = np.asarray(image)
            height, width = array.shape[0], array.shape[1]
            chw = array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
            x = anygrad.from_numpy(np.ascontiguousarray(chw, dtype=np.float32))
        size = _resized_size(height, width, self.size, self.max_size)
        squeeze = x.dim() == 3
        batch = x.unsqueeze(0) if squeeze else x
        source_dtype = batch.dtype
        if not batch.is_floating_point():
            batch = batch.float()
        if self.interpolation == "nearest":
            out = F.interpolate(batch, size=size, mode="nearest")
        else:
            out = F.interpolate(batch, size=size, mode="bilinear", align_corners=False, antialias=self.antialias)
        out = out.squeeze(0) if squeeze else out
        if is_tensor:
            return out if source_dtype == out.dtype else out.round().clamp(0, 255).to(source_dtype)
        result = out.numpy()
        if array.dtype == np.uint8:
            result = np.clip(np.round(result), 0, 255).astype(np.uint8)
        result = result[0] if array.ndim == 2 else result.transpose(1, 2, 0)
        return result

