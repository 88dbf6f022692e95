"""``PixelShuffle`` and ``PixelUnshuffle``: channels traded for spatial resolution
(``[*, C·r², H, W]`` ↔ ``[*, C, H·r, W·r]``), as sub-pixel convolution upsamplers use."""

from .module import Module
from .. import functional as F


class PixelShuffle(Module):
    """``[*, C·r², H, W]`` to ``[*, C, H·r, W·r]`` (r = ``upscale_factor``)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """The rearranged input."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``[*, C, H·r, W·r]`` to ``[*, C·r², H, W]`` (r = ``downscale_factor``)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """The rearranged input."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"downscale_factor={self.downscale_factor}"
