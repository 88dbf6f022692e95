"""GPU queries (``torch.cuda``'s functions): anygrad's GPUs are any vendor's adapters that
wgpu opens (Vulkan, DX12, Metal). ``anygrad.cuda`` is this module under PyTorch's name, and
the device strings ``"cuda"``/``"cuda:N"`` mean ``"gpu"``/``"gpu:N"``."""

from . import _native

_available = None


def is_available():
    """Whether at least one GPU can be used."""
    global _available
    if _available is None:
        _available = device_count() > 0
    return _available


def device_count():
    """The number of GPUs."""
    return _native.gpu_device_count()


def get_device_name(device=None):
    """The adapter's name (GPU ``device``, 0 by default)."""
    return _native.gpu_device_name(_index(device))


def current_device():
    """The GPU used by default: 0."""
    return 0


def set_device(device):
    """Only GPU 0 is the default here; choose others with device strings (``"gpu:1"``)."""
    if _index(device) != 0:
        raise ValueError("set_device: use a device string such as 'gpu:1' to choose another GPU")


def memory_allocated(device=None):
    """Bytes allocated to tensors on the GPU (0 before it is first used)."""
    return _native.gpu_memory_stats(_index(device))[0]


def memory_reserved(device=None):
    """Bytes held by the GPU's memory pool."""
    return _native.gpu_memory_stats(_index(device))[1]


def max_memory_allocated(device=None):
    """The peak of ``memory_allocated``."""
    return _native.gpu_memory_stats(_index(device))[2]


def reset_peak_memory_stats(device=None):
    """Start ``max_memory_allocated`` again from the current allocation."""
    _native.gpu_reset_peak_memory(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


class DeviceProperties:
    """What the driver says of one GPU (``torch.cuda.get_device_properties``): ``name``,
    ``vendor`` (PCI id), ``device_type``, ``backend`` (Vulkan, DX12, Metal), ``driver``,
    ``driver_info``, ``max_buffer_size``, ``max_storage_binding_size``, ``shader_f16``,
    ``subgroups``. wgpu reports no total memory, compute capability or multiprocessor count,
    so ``total_memory``, ``major``, ``minor`` and ``multi_processor_count`` are None."""

    total_memory = None
    major = None
    minor = None
    multi_processor_count = None

    def __init__(self, properties):
        self.__dict__.update(properties)

    def __repr__(self):
        return (f"_AnygradDeviceProperties(name='{self.name}', backend='{self.backend}', "
                f"device_type='{self.device_type}', driver='{self.driver}')")


def get_device_properties(device=None):
    """The adapter's properties (see ``DeviceProperties``)."""
    return DeviceProperties(_native.gpu_device_properties(_index(device)))


def empty_cache():
    """Return cached, unused GPU memory to the driver."""
    for index in range(device_count()):
        _native.gpu_empty_cache(index)


def synchronize(device=None):
    """Wait until the GPU has finished its queued work."""
    _native.gpu_synchronize(_index(device))


def manual_seed(seed):
    """Seed the generator (one generator serves every device)."""
    _native.manual_seed(seed)


def manual_seed_all(seed):
    """Seed the generator (one generator serves every device)."""
    _native.manual_seed(seed)


def is_bf16_supported(including_emulation=True):
    """True: every device runs bfloat16 (stored as 16 bits, computed in float32)."""
    return True


def _index(device):
    """The GPU number of ``device`` (an int, a string, a device or None)."""
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    index = _native.device(device).index
    return 0 if index is None else index


from . import amp  # noqa: E402  (torch.cuda.amp: autocast and GradScaler)
from ._tensor_types import gpu_types as _gpu_types  # noqa: E402

globals().update(_gpu_types)  # torch.cuda.FloatTensor, torch.cuda.LongTensor, ... on the GPU
