"""Safetensors files: a round trip keeps names, dtypes, shapes and values; a file written by
the reference layout (bytes built here by hand, as ``safetensors.torch`` writes them) loads;
a damaged file is a ValueError naming the file."""

import json
import struct

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
from anygrad.safetensors import load_file, load_metadata, save_file


def test_state_dict_round_trip(tmp_path, device):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).to(device)
    path = tmp_path / "model.safetensors"
    save_file(model.state_dict(), path, metadata={"format": "pt"})
    loaded = load_file(path, device=device)
    assert set(loaded) == set(model.state_dict())
    assert loaded["1.num_batches_tracked"].dtype == torch.int64
    other = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).to(device)
    other.load_state_dict(loaded)
    assert other[0].weight.tolist() == model[0].weight.tolist()
    assert load_metadata(path) == {"format": "pt"}


def reference_file(path, tensors):
    """A safetensors file laid out as the reference implementation writes it."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (kind, array) in tensors.items():
        data = array.tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def test_reads_pytorch_layout_including_int64_and_bf16(tmp_path):
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    bf16 = (np.array([1.5, -2.0], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    path = tmp_path / "torch.safetensors"
    reference_file(path, {"w": ("F32", weight), "n": ("I64", np.array(7, dtype=np.int64)), "b": ("BF16", bf16)})
    loaded = load_file(path)
    assert loaded["w"].tolist() == weight.tolist()
    assert loaded["n"].item() == 7 and loaded["n"].dtype == torch.int64 and tuple(loaded["n"].shape) == ()
    assert loaded["b"].tolist() == [1.5, -2.0]
    assert loaded["b"].dtype == torch.bfloat16


def test_damaged_files_are_value_errors_naming_the_file(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x01")
    with pytest.raises(ValueError, match="bad.safetensors: too short"):
        load_file(path)
    reference_file(path, {"w": ("F32", np.zeros(4, dtype=np.float32))})
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[:-4]))
    with pytest.raises(ValueError, match="data offsets"):
        load_file(path)
    with pytest.raises(OSError, match="not a regular file"):
        load_file(tmp_path)
