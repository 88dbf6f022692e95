"""Transforms in torchvision's style for arrays and tensors (no PIL): ``Compose``,
``ToTensor`` (HWC or HW uint8 → CHW float in [0, 1]), ``Normalize``, ``Lambda``,
``RandomHorizontalFlip``."""

import random


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
        mean = anygrad.tensor(self.mean if len(self.mean) == channels else self.mean * channels, device=tensor.device).reshape(-1, 1, 1)
        std = anygrad.tensor(self.std if len(self.std) == channels else self.std * channels, device=tensor.device).reshape(-1, 1, 1)
        return (tensor - mean) / std


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
        if random.random() >= self.p:
            return image
        import anygrad

        if isinstance(image, anygrad.Tensor):
            return image.flip(-1)
        return image[..., ::-1] if getattr(image, "ndim", 2) == 2 else image[:, ::-1]
