"""Mixed precision: autocast runs matmuls in float16 on a GPU and nothing changes on the CPU;
GradScaler scales the loss, unscales the gradients, skips a step that overflowed and adjusts
its scale."""

import pytest

import anygrad as torch
import anygrad.nn as nn


def test_autocast_makes_matmuls_float16_on_a_gpu(device):
    a = torch.randn(4, 8, device=device)
    b = torch.randn(8, 2, device=device)
    kind = "cpu" if device == "cpu" else "cuda"
    with torch.autocast(kind):
        assert torch.amp.is_autocast_enabled() == (device != "cpu")
        product = a @ b
    assert not torch.amp.is_autocast_enabled()
    assert product.dtype == (torch.float32 if device == "cpu" else torch.float16)
    with torch.cuda.amp.autocast(enabled=False):
        assert (a @ b).dtype == torch.float32
    with pytest.raises(ValueError, match="float16"):
        torch.autocast("cuda", dtype=torch.float64)


def test_grad_scaler_scales_unscales_and_skips_overflow(device):
    p = nn.Parameter(torch.tensor([1.0, 2.0], device=device))
    other = nn.Parameter(torch.tensor([3.0], device=device))  # a finite gradient beside the overflow
    opt = torch.optim.SGD([p, other], lr=0.1)
    scaler = torch.amp.GradScaler(init_scale=8.0, growth_interval=2)
    loss = (p * 2).sum() + other.sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == pytest.approx(loss.item() * 8)
    scaled.backward()
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == pytest.approx([0.8, 1.8])
    opt.zero_grad()
    p.grad = torch.tensor([float("inf"), 1.0], device=device)
    other.grad = torch.tensor([1.0], device=device)
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == pytest.approx([0.8, 1.8]) and scaler.get_scale() == 4.0
    assert other.tolist() == pytest.approx([2.9])  # the whole step was skipped
    for _ in range(2):
        p.grad = torch.tensor([0.0, 0.0], device=device)
        other.grad = torch.tensor([0.0], device=device)
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 8.0
