"""Module backward hooks: grad_output and grad_input of one call (as PyTorch's
``register_full_backward_hook`` gives them), replacements, pre-hooks and removal."""

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn


def test_full_backward_hook_sees_the_call_gradients(device):
    torch.manual_seed(0)
    layer = nn.Linear(4, 3).to(device)
    seen = []
    handle = layer.register_full_backward_hook(lambda module, grad_input, grad_output: seen.append((module, grad_input, grad_output)))
    x = torch.randn(5, 4, device=device, requires_grad=True)
    # x is used twice: the hook's grad_input is this call's share only.
    loss = (layer(x) ** 2).sum() + x.sum()
    loss.backward()
    assert len(seen) == 1
    module, grad_input, grad_output = seen[0]
    assert module is layer and len(grad_input) == 1 and len(grad_output) == 1
    output = layer(x).detach()
    np.testing.assert_allclose(grad_output[0].cpu().numpy(), 2 * output.cpu().numpy(), rtol=1e-5, atol=1e-5)
    expected_input = grad_output[0] @ layer.weight.detach()
    np.testing.assert_allclose(grad_input[0].cpu().numpy(), expected_input.cpu().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected_input.cpu().numpy() + 1.0, rtol=1e-5, atol=1e-5)

    handle.remove()
    layer(x).sum().backward()
    assert len(seen) == 1


def test_backward_hook_without_tracked_inputs_still_runs(device):
    # The first layer of a network: its input needs no gradient (Grad-CAM's case).
    layer = nn.Conv2d(1, 2, 3).to(device)
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    image = torch.randn(1, 1, 5, 5, device=device)
    layer(image).mean().backward()
    assert len(seen) == 1
    grad_input, grad_output = seen[0]
    assert grad_input == (None,)
    np.testing.assert_allclose(grad_output[0].cpu().numpy(), np.full((1, 2, 3, 3), 1.0 / 18), rtol=1e-6)


def test_hooks_replace_gradients(device):
    layer = nn.Tanh()
    x = torch.tensor([0.5, -1.0, 2.0], device=device, requires_grad=True)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0 + 7.0,))
    layer(x).sum().backward()
    assert x.grad.cpu().tolist() == [7.0, 7.0, 7.0]

    doubled = nn.Identity()
    doubled.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
    y = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    (doubled(y) * torch.tensor([3.0, 4.0], device=device)).sum().backward()
    assert y.grad.cpu().tolist() == [6.0, 8.0]


def test_replacing_with_several_tracked_inputs_is_an_error():
    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    module = Add()
    module.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[1]))
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="one input that requires grad"):
        module(a, b).sum().backward()
