"""``autograd.Function`` (custom forward and backward, ``ctx.save_for_backward``,
``needs_input_grad``, several outputs, unused outputs, non-tensor arguments,
``mark_non_differentiable``, ``set_materialize_grads``, the ``setup_context`` form) and the
legacy ``Variable``, on every device, against gradients written out with numpy."""

import math

import numpy as np
import pytest

import anygrad as torch
from anygrad.autograd import Function, Variable
from anygrad.autograd.function import once_differentiable
from conftest import assert_close


class LegendrePolynomial3(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class ScaledProductAndSum(Function):
    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.scale = scale
        ctx.save_for_backward(a, b)
        return a * b * scale, a + b

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_product, grad_sum):
        a, b = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, True, False)
        return grad_product * b * ctx.scale + grad_sum, grad_product * a * ctx.scale + grad_sum, None


def test_custom_function_gradient(device):
    values = np.array([-1.0, 0.25, 2.0], dtype=np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    y = LegendrePolynomial3.apply(x)
    assert y.requires_grad
    assert_close(y, 0.5 * (5 * values ** 3 - 3 * values), rtol=1e-5)
    weights = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    (y * torch.tensor(weights, device=device)).sum().backward()
    assert_close(x.grad, weights * 1.5 * (5 * values ** 2 - 1), rtol=1e-5)
    # Inside a larger expression, as the tutorial uses it.
    a = torch.tensor(0.5, device=device, requires_grad=True)
    c = torch.tensor(0.1, device=device, requires_grad=True)
    out = a * LegendrePolynomial3.apply(c + x.detach() * 0.3)
    out.sum().backward()
    inner = 0.1 + values * 0.3
    assert math.isclose(a.grad.item(), float((0.5 * (5 * inner ** 3 - 3 * inner)).sum()), rel_tol=1e-5)
    assert math.isclose(c.grad.item(), float((0.5 * 1.5 * (5 * inner ** 2 - 1)).sum()), rel_tol=1e-5)


def test_several_outputs_and_unused_ones(device):
    a = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = torch.tensor([3.0, 4.0], device=device, requires_grad=True)
    product, total = ScaledProductAndSum.apply(a, b, 2.0)
    (product.sum() + 3 * total.sum()).backward()
    assert_close(a.grad, [9.0, 11.0])
    assert_close(b.grad, [5.0, 7.0])
    a.grad = b.grad = None
    product, _ = ScaledProductAndSum.apply(a, b, 2.0)
    product.sum().backward()  # the sum gets zeros
    assert_close(a.grad, [6.0, 8.0])
    assert_close(b.grad, [2.0, 4.0])
    # A second backward through a retained graph computes afresh.
    a.grad = b.grad = None
    product, total = ScaledProductAndSum.apply(a, b, 1.0)
    loss = product.sum() + total.sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert_close(a.grad, [8.0, 10.0])


def test_inputs_without_gradients_and_no_grad(device):
    x = torch.tensor([1.0, 2.0], device=device)
    y = LegendrePolynomial3.apply(x)
    assert not y.requires_grad
    w = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    with torch.no_grad():
        assert not LegendrePolynomial3.apply(w).requires_grad
    # An infinite input stays infinite (the join to the graph adds an exact zero).
    assert Cube.apply(torch.tensor([float("inf")], device=device, requires_grad=True), 3).tolist() == [float("inf")]


class ArgmaxWithValue(Function):
    @staticmethod
    def forward(ctx, x):
        index = x.argmax()
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(x, index)
        return x.max(), index

    @staticmethod
    def backward(ctx, grad_value, grad_index):
        x, index = ctx.saved_tensors
        assert grad_index is None or float(grad_index.abs().sum()) == 0
        return torch.zeros_like(x).index_put((index.reshape(1),), grad_value.reshape(1))


class Cube(Function):
    """The newer form: ``forward`` without ``ctx`` and a ``setup_context``."""

    @staticmethod
    def forward(x, power):
        return x ** power

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, power = inputs
        ctx.save_for_backward(x)
        ctx.power = power
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * ctx.power * x ** (ctx.power - 1), None


def test_non_differentiable_outputs_and_setup_context(device):
    x = torch.tensor([0.5, 3.0, 1.0], device=device, requires_grad=True)
    value, index = ArgmaxWithValue.apply(x)
    assert index.item() == 1 and not index.requires_grad
    (value * 2).backward()
    assert_close(x.grad, [0.0, 2.0, 0.0])
    x.grad = None
    Cube.apply(x, 3).sum().backward()
    assert_close(x.grad, 3 * np.array([0.5, 3.0, 1.0]) ** 2, rtol=1e-5)
    with pytest.raises(NotImplementedError):
        Function.apply(x)


def test_wrong_number_of_gradients(device):
    class Broken(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad):
            return grad

    a = torch.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Broken.apply(a, torch.ones(2, device=device, requires_grad=True)).sum().backward()


def test_variable():
    x = torch.ones(2)
    v = Variable(x, requires_grad=True)
    assert v is x and v.requires_grad
    assert isinstance(torch.zeros(1), Variable)
    from anygrad.autograd import variable

    assert variable.Variable is Variable
