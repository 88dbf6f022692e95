"""``PixelShuffle`` and ``PixelUnshuffle``: channels traded for spatial resolution
(``[*, C·r², H, W]`` ↔ ``[*, C, H·r, W·r]``), as sub-pixel convolution upsamplers use;
``ChannelShuffle``, and ``Unfold``/``Fold`` (sliding blocks to columns and back)."""

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


class ChannelShuffle(Module):
    """The channels regrouped across ``groups`` (ShuffleNet)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """The shuffled channels."""
        return F.channel_shuffle(input, self.groups)


class Unfold(Module):
    """Sliding blocks as columns: ``[N, C, H, W]`` to ``[N, C * kh * kw, L]``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        """The columns."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Module):
    """Columns ``[N, C * kh * kw, L]`` summed back into ``[N, C, *output_size]``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        """The folded image."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
