"""Upsampling layers: ``Upsample`` (``F.interpolate`` as a module), ``UpsamplingNearest2d``
and ``UpsamplingBilinear2d``."""

from .module import Module
from .. import functional as F


class Upsample(Module):
    """Resampling by ``F.interpolate`` (``size`` or ``scale_factor``; nearest, linear,
    bilinear)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):
        """The resampled input."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of ``[N, C, H, W]``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with ``align_corners=True``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
