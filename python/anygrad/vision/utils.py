"""``torchvision.utils``: ``make_grid``, the images of a batch tiled into one image with
torchvision's layout (rows of ``nrow`` images, ``padding`` pixels of ``pad_value`` between
and around them, optional rescaling to [0, 1]), and ``save_image``, that grid written as a
PNG file (values in [0, 1] mapped to 0..255 as torchvision rounds them)."""

import math
import os


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0, **kwargs):
    """One ``C×H'×W'`` image of the ``B×C×H×W`` batch (or list of ``C×H×W`` images):
    one-channel images become three, a single image comes back as it is (after the same
    conversions), ``normalize=True`` maps ``value_range`` (default: the batch's, or each
    image's with ``scale_each``) to [0, 1]."""
    import anygrad

    if "range" in kwargs:
        value_range = kwargs.pop("range")
    if kwargs:
        raise TypeError(f"make_grid got unexpected arguments {sorted(kwargs)}")
    if not isinstance(nrow, int) or nrow < 1 or not isinstance(padding, int) or padding < 0:
        raise ValueError(f"make_grid: nrow must be a positive int and padding a non-negative int, got {nrow!r} and {padding!r}")
    if isinstance(tensor, (list, tuple)):
        tensor = anygrad.stack(list(tensor), dim=0)
    if not isinstance(tensor, anygrad.Tensor):
        raise TypeError(f"make_grid: expected a tensor or a list of tensors, got {type(tensor).__name__}")
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.shape[0] == 1:
            tensor = anygrad.cat([tensor, tensor, tensor], 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() != 4:
        raise ValueError(f"make_grid: expected 2-D, 3-D or 4-D images, got {tensor.dim()}-D")
    if tensor.numel() == 0:
        raise ValueError(f"make_grid: no pixels to tile (shape {tuple(tensor.shape)})")
    if tensor.shape[1] == 1:
        tensor = anygrad.cat([tensor, tensor, tensor], 1)
    if normalize:
        tensor = tensor.clone()
        if value_range is not None and not (isinstance(value_range, (tuple, list)) and len(value_range) == 2):
            raise ValueError("make_grid: value_range must be a (low, high) pair")

        def rescaled(image):
            low, high = value_range if value_range is not None else (float(image.min()), float(image.max()))
            return (image.clamp(min=low, max=high) - low) / max(high - low, 1e-5)

        if scale_each:
            tensor = anygrad.stack([rescaled(image) for image in tensor], dim=0)
        else:
            tensor = rescaled(tensor)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    count, channels, height, width = tensor.shape
    columns = min(nrow, count)
    rows = int(math.ceil(count / columns))
    cell_height, cell_width = height + padding, width + padding
    grid = anygrad.full((channels, cell_height * rows + padding, cell_width * columns + padding), float(pad_value),
                        dtype=tensor.dtype, device=tensor.device)
    for index in range(count):
        row, column = divmod(index, columns)
        top, left = row * cell_height + padding, column * cell_width + padding
        grid[:, top:top + height, left:left + width] = tensor[index]
    return grid


def save_image(tensor, fp, format=None, **kwargs):
    """Write ``tensor`` (a batch, a list of images or one image; ``make_grid``'s arguments
    apply) to the PNG file ``fp`` (a path)."""
    import numpy as np

    if format is not None and str(format).lower() != "png":
        raise ValueError(f"save_image: anygrad writes PNG files only, not {format!r}")
    if not isinstance(fp, (str, os.PathLike)):
        raise TypeError(f"save_image: fp must be a path, got {type(fp).__name__}")
    from .. import _native

    grid = make_grid(tensor.detach(), **kwargs)
    pixels = (grid.float().cpu().numpy() * 255.0 + 0.5).clip(0, 255).astype(np.uint8)
    channels, height, width = pixels.shape
    if channels not in (1, 3):
        raise ValueError(f"save_image: PNG takes 1 or 3 channels, the grid has {channels}")
    _native.save_png(os.fspath(fp), np.ascontiguousarray(pixels.transpose(1, 2, 0)).tobytes(), height, width, channels)
