"""bfloat16 from Python: the dtype object and its casts (rounded to nearest even, as torch),
values read back through tolist, `.numpy()` refused with torch's TypeError, autocast in
bfloat16 (on the CPU too), gradients in bfloat16, and safetensors files keeping BF16."""

import numpy as np
import pytest

import anygrad as torch
from anygrad.safetensors import load_file, save_file


def test_the_dtype_and_its_rounding(device):
    x = torch.tensor([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 0.1, -2.5], device=device)
    y = x.to(torch.bfloat16)
    assert y.dtype == torch.bfloat16
    assert repr(y.dtype) == "anygrad.bfloat16"
    assert y.dtype.is_floating_point and y.dtype.itemsize == 2
    assert y.tolist() == [1.0, 1.015625, 0.10009765625, -2.5]
    assert x.bfloat16().dtype == torch.bfloat16
    assert y.float().dtype == torch.float32
    assert torch.cuda.is_bf16_supported()


def test_numpy_is_refused_like_torch(device):
    y = torch.ones(3, device=device).to(torch.bfloat16)
    with pytest.raises(TypeError, match="BFloat16"):
        y.numpy() if device == "cpu" else y.cpu().numpy()


def test_autocast_bfloat16_and_gradients(device):
    a = torch.randn(4, 8, device=device, requires_grad=True)
    b = torch.randn(8, 2, device=device)
    kind = "cpu" if device == "cpu" else "cuda"
    with torch.autocast(kind, dtype=torch.bfloat16):
        product = a @ b
    assert product.dtype == torch.bfloat16
    product.float().sum().backward()
    assert a.grad.dtype == torch.float32
    w = torch.randn(3, 3, device=device).to(torch.bfloat16).requires_grad_(True)
    (w * w).sum().backward()
    assert w.grad.dtype == torch.bfloat16


def test_safetensors_keep_bf16(tmp_path):
    t = torch.tensor([1.5, -0.25, 3.0]).to(torch.bfloat16)
    path = tmp_path / "bf16.safetensors"
    save_file({"t": t}, path)
    loaded = load_file(path)
    assert loaded["t"].dtype == torch.bfloat16
    assert loaded["t"].tolist() == [1.5, -0.25, 3.0]
    raw = path.read_bytes()
    assert b'"BF16"' in raw
    bits = np.frombuffer(raw[-6:], dtype="<u2").tolist()
    assert bits == [0x3FC0, 0xBE80, 0x4040]
