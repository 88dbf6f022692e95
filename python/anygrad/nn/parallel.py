"""``nn.parallel`` (``torch.nn.parallel``): ``DataParallel``, which in Python runs the wrapped
module on the one device its parameters live on, as PyTorch's does with a single GPU.
Data parallelism over several GPUs (one replica a GPU, the batch split between them, the
gradients all-reduced) is the Rust library's ``DataParallel``."""

import warnings

from .modules.module import Module


def _move(value, device):
    """``value`` with every tensor inside it (tuples, lists, dicts) moved to ``device``."""
    import anygrad

    if isinstance(value, anygrad.Tensor):
        return value.to(device)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_move(item, device) for item in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_move(item, device) for item in value)
    if isinstance(value, dict):
        return type(value)((key, _move(item, device)) for key, item in value.items())
    return value


class DataParallel(Module):
    """``torch.nn.DataParallel(module, device_ids=None, output_device=None, dim=0)``: calls
    ``module`` on the device of its parameters (the inputs' tensors are moved there first) and
    moves the outputs to ``output_device`` when one is given. This is what PyTorch's does on a
    machine with one GPU; the batch is not split (``dim`` is kept for the signature). The
    wrapped module is ``.module``, so ``model.module.state_dict()`` gives its own keys and
    ``model.state_dict()`` the same keys under ``module.``, as in PyTorch.

    Multi-GPU data parallelism is the Rust library's ``DataParallel`` (replicas on every GPU,
    gradients all-reduced); from Python, more than one entry in ``device_ids`` warns and runs
    on the module's device."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else None
        self.output_device = output_device
        self.dim = dim
        if self.device_ids is not None and len(self.device_ids) > 1:
            warnings.warn(
                "nn.DataParallel in anygrad's Python package runs the module on one device; "
                "multi-GPU data parallelism is the Rust library's DataParallel",
                RuntimeWarning,
                stacklevel=2,
            )

    def _module_device(self):
        for tensor in self.module.parameters():
            return tensor.device
        for tensor in self.module.buffers():
            return tensor.device
        return None

    def forward(self, *inputs, **kwargs):
        """The wrapped module's output for ``inputs``, computed on its device."""
        device = self._module_device()
        if device is not None:
            inputs, kwargs = _move(inputs, device), _move(kwargs, device)
        output = self.module(*inputs, **kwargs)
        if self.output_device is not None:
            target = self.output_device
            if isinstance(target, int):
                target = f"gpu:{target}"
            output = _move(output, target)
        return output
