"""``torch.accelerator``: the device-neutral API that PyTorch's recent tutorials use to pick a
device (``torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
else "cpu"``). anygrad's accelerator is its GPU of any vendor: ``current_accelerator()`` is
``device("gpu")``, so such a script moves its model and data to the first GPU."""

from . import gpu as _gpu
from . import _native


def is_available():
    """Whether a GPU can be used."""
    return _gpu.is_available()


def current_accelerator(check_available=False):
    """``device("gpu")``; None when ``check_available`` is set and no GPU can be used."""
    if check_available and not is_available():
        return None
    return _native.device("gpu")


def device_count():
    """The number of GPUs."""
    return _gpu.device_count()


def current_device_index():
    """The GPU used by default: 0."""
    return _gpu.current_device()


current_device_idx = current_device_index


def set_device_index(device):
    """Only GPU 0 is the default; choose others with device strings (``"gpu:1"``)."""
    _gpu.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None):
    """Wait until the GPU has finished its queued work."""
    _gpu.synchronize(device)
