"""``anygrad.jit.script``/``jit.trace`` (the module or function itself, as ``compile``) and
``nn.DataParallel`` (the module run on its own device, ``.module`` and its state dict), on
every device."""

import warnings

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
from conftest import assert_close


def test_jit_returns_the_same_object(device):
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).to(device)
    assert torch.jit.script(model) is model
    assert torch.jit.trace(model, torch.zeros(1, 3, device=device)) is model

    def double(x):
        return x * 2

    assert torch.jit.script(double) is double
    assert torch.jit.trace(double, (torch.ones(2),)) is double
    assert not torch.jit.is_scripting() and not torch.jit.is_tracing()

    @torch.jit.ignore
    def helper(x):
        return x + 1

    assert helper(1) == 2
    x = torch.randn(4, 3, device=device)
    assert_close(torch.jit.script(model)(x), model(x).detach().cpu().numpy())


def test_jit_save_and_load(tmp_path):
    model = nn.Linear(3, 2)
    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(model), path)
    loaded = torch.jit.load(path)
    x = torch.randn(2, 3)
    assert_close(loaded(x), model(x).detach().numpy())


def test_data_parallel(device):
    torch.manual_seed(0)
    inner = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).to(device)
    model = nn.DataParallel(inner)
    assert model.module is inner
    assert list(model.state_dict()) == ["module." + key for key in inner.state_dict()]
    assert list(model.module.state_dict()) == list(inner.state_dict())
    # The inputs move to the module's device; the output comes from the module.
    x = torch.randn(5, 4)
    out = model(x)
    assert out.device == torch.device(device)
    assert_close(out, inner(x.to(device)).detach().cpu().numpy())
    out.sum().backward()
    assert inner[0].weight.grad is not None
    assert [p is q for p, q in zip(model.parameters(), inner.parameters())] == [True] * 4
    to_cpu = nn.DataParallel(inner, device_ids=[0], output_device="cpu")
    assert to_cpu(x).device == torch.device("cpu")
    fresh = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    fresh.load_state_dict(model.module.state_dict())
    assert_close(fresh(x), out.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.DataParallel(inner, device_ids=[0, 1])
    assert any("Rust library's DataParallel" in str(w.message) for w in caught)
    assert nn.parallel.DataParallel is nn.DataParallel


def test_data_parallel_keyword_and_nested_inputs(device):
    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1))

        def forward(self, pair, *, offset):
            return pair[0] * self.scale + pair[1] + offset["bias"]

    model = nn.DataParallel(Pair().to(device))
    out = model((torch.ones(2), torch.full((2,), 2.0)), offset={"bias": torch.full((2,), 0.5)})
    assert out.device == torch.device(device)
    assert out.tolist() == [3.5, 3.5]
    assert np.isclose(out.sum().item(), 7.0)
    with pytest.raises(TypeError):
        model(torch.ones(2))
