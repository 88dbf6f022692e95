"""``anygrad.save`` / ``anygrad.load``: Python objects holding tensors (state dicts,
checkpoints) through pickle, with tensors stored as numpy arrays; and state dicts exchanged
with PyTorch through safetensors files (``save_safetensors`` / ``load_safetensors``)."""

import pickle


def save(obj, f):
    """Write ``obj`` (tensors inside dicts, lists, ...) to a path or a binary file."""
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        with open(f, "wb") as handle:
            pickle.dump(obj, handle, protocol=4)
    else:
        pickle.dump(obj, f, protocol=4)


def load(f, map_location=None, weights_only=None):
    """Read what ``save`` wrote; ``map_location`` moves every tensor to that device."""
    from .files import read_regular_bytes
    import io

    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        obj = pickle.load(io.BytesIO(read_regular_bytes(f)))
    else:
        obj = pickle.load(f)
    if map_location is not None:
        obj = _move(obj, map_location)
    return obj


def _move(obj, device):
    """``obj`` with every tensor moved to ``device``."""
    from . import Tensor

    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return type(obj)((key, _move(value, device)) for key, value in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_move(value, device) for value in obj)
    return obj
