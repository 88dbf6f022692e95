"""Safetensors files, the format PyTorch users exchange state dicts in: ``save_file`` and
``load_file`` with the names and behaviour of ``safetensors.torch``, so a state dict saved by
``safetensors.torch.save_file(model.state_dict(), path)`` loads into the same anygrad model
(``model.load_state_dict(load_file(path))``) and back.

Written without the ``safetensors`` package: an 8-byte little-endian header length, a JSON
header (dtype, shape and byte range per tensor, optional ``__metadata__``), then the data.
int64 tensors are written as I64 (what PyTorch reads for ``num_batches_tracked``); bfloat16
tensors as BF16 and read back as bfloat16 (numpy has no bfloat16: the bits travel as uint16);
I64 values outside anygrad's 32-bit storage and dtypes anygrad lacks are handled where they
are read."""

import json
import os
import struct

from .files import read_regular_bytes

_TO_NUMPY = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
    "I8": "i1", "U8": "u1", "BOOL": "?", "U32": "<u4", "U16": "<u2",
}
_FROM_NAME = {
    "float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32",
    "uint8": "U8", "bool": "BOOL", "uint32": "U32", "bfloat16": "BF16",
}


def save_file(tensors, filename, metadata=None):
    """Write a dict of tensors (names to tensors) to ``filename``, atomically (a temporary
    file renamed over it)."""
    import numpy as np

    header = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("save_file: metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    chunks = []
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name]
        if not hasattr(tensor, "dtype") or not hasattr(tensor, "shape"):
            raise TypeError(f"save_file: {name!r} is not a tensor")
        kind = _FROM_NAME.get(tensor.dtype.name)
        if kind is None:
            raise TypeError(f"save_file: {name!r} has dtype {tensor.dtype}, which safetensors does not hold")
        if kind == "BF16":
            # The float32 widening is exact: its upper 16 bits are the bfloat16 bits.
            wide = tensor.detach().cpu().float().numpy().astype("<f4", copy=False)
            array = (np.ascontiguousarray(wide).view(np.uint32) >> 16).astype("<u2")
        else:
            array = tensor.detach().cpu().numpy().astype(_TO_NUMPY[kind], copy=False)
        data = array.tobytes(order="C")
        header[name] = {"dtype": kind, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    filename = os.fspath(filename)
    temporary = f"{filename}.tmp-{os.getpid()}"
    with open(temporary, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)))
        handle.write(encoded)
        for chunk in chunks:
            handle.write(chunk)
    os.replace(temporary, filename)


def _parse(data, filename):
    """``(header, body offset)`` of a safetensors file's bytes, checked."""
    if len(data) < 8:
        raise ValueError(f"{filename}: too short for a safetensors file")
    (length,) = struct.unpack("<Q", data[:8])
    if length > len(data) - 8:
        raise ValueError(f"{filename}: header length {length} runs past the end of the file")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{filename}: the header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{filename}: the header is not a JSON object")
    return header, 8 + length


def load_file(filename, device="cpu"):
    """The tensors of ``filename`` as a dict, on ``device``."""
    import numpy as np
    import anygrad

    filename = os.fspath(filename)
    data = read_regular_bytes(filename)
    header, body = _parse(data, filename)
    size = len(data) - body
    result = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            kind, shape, (begin, end) = entry["dtype"], list(entry["shape"]), entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{filename}: tensor {name!r} has a malformed header entry") from None
        if kind == "BF16":
            numpy_kind = "<u2"
        elif kind in _TO_NUMPY:
            numpy_kind = _TO_NUMPY[kind]
        else:
            raise ValueError(f"{filename}: tensor {name!r} has dtype {kind}, which anygrad cannot read")
        count = 1
        for dim in shape:
            if not isinstance(dim, int) or dim < 0:
                raise ValueError(f"{filename}: tensor {name!r} has an invalid shape {shape}")
            count *= dim
        width = np.dtype(numpy_kind).itemsize
        if not (0 <= begin <= end <= size) or end - begin != count * width:
            raise ValueError(
                f"{filename}: tensor {name!r} ({kind} {shape}) has data offsets [{begin}, {end}] that do not fit its "
                f"{count * width} bytes within the {size} bytes of data"
            )
        array = np.frombuffer(data, dtype=numpy_kind, count=count, offset=body + begin).reshape(shape)
        if kind == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        elif kind in ("I16", "I8", "U16"):
            array = array.astype(np.int32)
        if kind == "I64" and array.size and (array.min() < -(2**31) or array.max() >= 2**31):
            raise ValueError(f"{filename}: tensor {name!r} holds int64 values outside anygrad's 32-bit integers")
        tensor = anygrad.from_numpy(array)
        if kind == "BF16":
            tensor = tensor.to(anygrad.bfloat16)
        result[name] = tensor if str(device) == "cpu" else tensor.to(device)
    return result


def load_metadata(filename):
    """The ``__metadata__`` of ``filename`` (an empty dict when absent)."""
    filename = os.fspath(filename)
    header, _ = _parse(read_regular_bytes(filename), filename)
    return dict(header.get("__metadata__", {}))


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding ``tensors``."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tensors.safetensors")
        save_file(tensors, path, metadata)
        with open(path, "rb") as handle:
            return handle.read()
