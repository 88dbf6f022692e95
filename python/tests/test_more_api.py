"""More of PyTorch's API that scripts use, against numpy written from PyTorch's definitions on
every device: activations (``SELU CELU GLU LogSigmoid Softsign Softmin Tanhshrink Threshold
Hardshrink Softshrink RReLU``, ``gumbel_softmax``), losses (``SoftMarginLoss
MultiLabelSoftMarginLoss MultiMarginLoss HingeEmbeddingLoss PoissonNLLLoss GaussianNLLLoss``),
``PairwiseDistance``/``CosineSimilarity``, ``EmbeddingBag``, ``Unfold``/``Fold``/
``ChannelShuffle``, the optimizers ``Adamax``, ``NAdam``, ``RAdam``, ``linalg`` (norms,
``solve``, ``inv``, ``det``, ``slogdet``, ``matrix_power``, ``cross``), torch functions
(``tril_indices``, ``cartesian_prod``, ``combinations``, ``tensordot``, ``kron``,
``block_diag``, ``rot90``, ``diag_embed``, ``quantile``, ``histc``, ``nanmean``, ``atan2``,
``asin``, ``acos``, ``logaddexp``, ``heaviside``, ``diagonal``, ``unique_consecutive``),
in-place elementwise methods, ``set_printoptions``, ``utils.checkpoint``,
``autograd.detect_anomaly`` and ``utils.tensorboard.SummaryWriter``'s event files."""

import itertools
import math
import struct

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close

RNG = np.random.default_rng(7)


def test_activations(device):
    values = RNG.standard_normal((3, 4)).astype(np.float32) * 2
    x = torch.tensor(values, device=device, requires_grad=True)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    sigmoid = 1 / (1 + np.exp(-values))
    cases = [
        (nn.SELU(), scale * np.where(values > 0, values, alpha * (np.exp(values) - 1))),
        (nn.CELU(0.5), np.where(values > 0, values, 0.5 * (np.exp(values / 0.5) - 1))),
        (nn.GLU(), values[:, :2] * sigmoid[:, 2:]),
        (nn.LogSigmoid(), np.log(sigmoid)),
        (nn.Softsign(), values / (1 + np.abs(values))),
        (nn.Tanhshrink(), values - np.tanh(values)),
        (nn.Threshold(0.1, 20.0), np.where(values > 0.1, values, 20.0)),
        (nn.Hardshrink(0.5), np.where(np.abs(values) > 0.5, values, 0.0)),
        (nn.Softshrink(0.5), np.where(values > 0.5, values - 0.5, np.where(values < -0.5, values + 0.5, 0.0))),
        (nn.Softmin(dim=1), np.exp(-values) / np.exp(-values).sum(1, keepdims=True)),
        (nn.RReLU().eval(), np.where(values >= 0, values, values * (1 / 8 + 1 / 3) / 2)),
    ]
    for layer, expected in cases:
        assert_close(layer(x), expected, rtol=1e-5, atol=1e-5)
    F.selu(x).sum().backward()
    assert_close(x.grad, scale * np.where(values > 0, 1.0, alpha * np.exp(values)), rtol=1e-5, atol=1e-6)
    trained = nn.RReLU(0.1, 0.3)(x).detach().cpu().numpy()
    ratio = trained[values < 0] / values[values < 0]
    assert np.all((ratio >= 0.1 - 1e-6) & (ratio <= 0.3 + 1e-6)) and np.all(trained[values >= 0] == values[values >= 0])
    soft = F.gumbel_softmax(x, tau=0.5)
    assert_close(soft.sum(-1), np.ones(3), rtol=1e-5)
    hard = F.gumbel_softmax(x, hard=True)
    assert sorted(np.unique(hard.detach().cpu().numpy()).tolist()) == [0.0, 1.0]
    assert_close(hard.sum(-1), np.ones(3))


def test_losses(device):
    logits = RNG.standard_normal((4, 3)).astype(np.float32)
    signs = np.array([[1, -1, 1], [-1, -1, 1], [1, 1, 1], [-1, 1, -1]], dtype=np.float32)
    labels = np.array([0, 2, 1, 2])
    x = torch.tensor(logits, device=device, requires_grad=True)
    y = torch.tensor(signs, device=device)
    assert_close(nn.SoftMarginLoss()(x, y), np.log1p(np.exp(-signs * logits)).mean(), rtol=1e-5)
    targets = (signs > 0).astype(np.float32)
    log_sig = -np.log1p(np.exp(-logits))
    log_one_minus = -np.log1p(np.exp(logits))
    expected = -(targets * log_sig + (1 - targets) * log_one_minus).mean(1)
    assert_close(nn.MultiLabelSoftMarginLoss(reduction="none")(x, torch.tensor(targets, device=device)), expected, rtol=1e-5)
    margins = np.maximum(0, 1 - logits[np.arange(4), labels][:, None] + logits)
    margins[np.arange(4), labels] = 0
    assert_close(nn.MultiMarginLoss()(x, torch.tensor(labels, device=device)), (margins.sum(1) / 3).mean(), rtol=1e-5)
    weight = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    squared = np.maximum(0, 0.5 - logits[np.arange(4), labels][:, None] + logits) ** 2 * weight[labels][:, None]
    squared[np.arange(4), labels] = 0
    assert_close(nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.tensor(weight, device=device), reduction="sum")(x, torch.tensor(labels, device=device)), (squared.sum(1) / 3).sum(), rtol=1e-5)
    assert_close(nn.HingeEmbeddingLoss(margin=0.5)(x, y), np.where(signs == 1, logits, np.maximum(0, 0.5 - logits)).mean(), rtol=1e-5)
    counts = RNG.poisson(2.0, (4, 3)).astype(np.float32)
    assert_close(nn.PoissonNLLLoss()(x, torch.tensor(counts, device=device)), (np.exp(logits) - counts * logits).mean(), rtol=1e-5)
    rates = np.exp(logits)
    full = nn.PoissonNLLLoss(log_input=False, full=True, reduction="none")(torch.tensor(rates, device=device), torch.tensor(counts, device=device))
    stirling = np.where(counts > 1, counts * np.log(np.maximum(counts, 1)) - counts + 0.5 * np.log(2 * np.pi * np.maximum(counts, 1)), 0)
    assert_close(full, rates - counts * np.log(rates + 1e-8) + stirling, rtol=1e-4, atol=1e-5)
    var = np.abs(RNG.standard_normal((4, 3))).astype(np.float32) + 0.1
    target = RNG.standard_normal((4, 3)).astype(np.float32)
    expected = 0.5 * (np.log(var) + (logits - target) ** 2 / var) + 0.5 * np.log(2 * np.pi)
    assert_close(nn.GaussianNLLLoss(full=True)(x, torch.tensor(target, device=device), torch.tensor(var, device=device)), expected.mean(), rtol=1e-5)
    one_var = nn.GaussianNLLLoss(reduction="none")(x, torch.tensor(target, device=device), torch.tensor(var[:, 0], device=device))
    assert_close(one_var, 0.5 * (np.log(var[:, :1]) + (logits - target) ** 2 / var[:, :1]), rtol=1e-5)
    nn.SoftMarginLoss()(x, y).backward()
    assert_close(x.grad, -signs / (1 + np.exp(signs * logits)) / 12, rtol=1e-4, atol=1e-6)
    a, b = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    assert_close(nn.PairwiseDistance()(torch.tensor(a, device=device), torch.tensor(b, device=device)), np.linalg.norm(a - b + 1e-6, axis=1), rtol=1e-5)
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert_close(nn.CosineSimilarity(dim=1)(torch.tensor(a, device=device), torch.tensor(b, device=device)), cosine, rtol=1e-5)


def test_embedding_bag(device):
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(10, 3, mode="mean").to(device)
    weight = bag.weight.detach().cpu().numpy()
    indices = torch.tensor([1, 2, 4, 5, 4, 7], device=device)
    offsets = torch.tensor([0, 2, 2], device=device)
    out = bag(indices, offsets)
    assert_close(out, [weight[[1, 2]].mean(0), np.zeros(3), weight[[4, 5, 4, 7]].mean(0)], rtol=1e-5)
    out.sum().backward()
    grad = np.zeros_like(weight)
    for i in (1, 2):
        grad[i] += 0.5
    for i in (4, 5, 4, 7):
        grad[i] += 0.25
    assert_close(bag.weight.grad, grad, rtol=1e-5)
    summed = nn.EmbeddingBag.from_pretrained(bag.weight.detach(), mode="sum")(torch.tensor([[1, 2], [3, 3]], device=device), per_sample_weights=torch.tensor([[1.0, 2.0], [0.5, 0.5]], device=device))
    assert_close(summed, [weight[1] + 2 * weight[2], weight[3]], rtol=1e-5)
    bag_max = nn.EmbeddingBag.from_pretrained(bag.weight.detach(), mode="max", padding_idx=4).to(device)
    maxed = bag_max(torch.tensor([1, 2, 4, 4, 5], device=device), torch.tensor([0, 2, 4, 5], device=device))
    assert_close(maxed, [np.maximum(weight[1], weight[2]), np.zeros(3), weight[5], np.zeros(3)])
    last = nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True, _weight=bag.weight.detach()).to(device)
    assert_close(last(torch.tensor([1, 2, 3], device=device), torch.tensor([0, 1, 3], device=device)), [weight[1], weight[2] + weight[3]], rtol=1e-5)
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        bag(indices, offsets, per_sample_weights=torch.ones(6, device=device))


def test_unfold_fold_and_channel_shuffle(device):
    values = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    columns = nn.Unfold((2, 3), padding=1, stride=2)(x)
    padded = np.pad(values, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((2, 18, 9), np.float32)
    for c, i, j, a, b in itertools.product(range(3), range(2), range(3), range(3), range(3)):
        expected[:, c * 6 + i * 3 + j, a * 3 + b] = padded[:, c, a * 2 + i, b * 2 + j]
    assert_close(columns, expected)
    columns.sum().backward()
    counts = np.zeros_like(padded)
    for i, j, a, b in itertools.product(range(2), range(3), range(3), range(3)):
        counts[:, :, a * 2 + i, b * 2 + j] += 1
    assert_close(x.grad, counts[:, :, 1:-1, 1:-1])
    folded = nn.Fold((5, 6), (2, 3), padding=1, stride=2)(columns)
    assert_close(folded, values * counts[:, :, 1:-1, 1:-1], rtol=1e-5)
    assert tuple(F.unfold(x[0], 2).shape) == (12, 20)
    shuffled = nn.ChannelShuffle(2)(torch.arange(6, device=device).float().reshape(1, 6, 1, 1))
    assert shuffled.reshape(-1).tolist() == [0, 3, 1, 4, 2, 5]


def _reference_optimizer(kind, parameter, gradients, lr, **options):
    """PyTorch's updates of Adamax, NAdam and RAdam, in numpy."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    m = np.zeros_like(parameter)
    v = np.zeros_like(parameter)
    mu_product = 1.0
    for step, grad in enumerate(gradients, 1):
        grad = grad + options.get("weight_decay", 0.0) * parameter
        m = beta1 * m + (1 - beta1) * grad
        if kind == "Adamax":
            v = np.maximum(beta2 * v, np.abs(grad) + eps)
            parameter = parameter - lr / (1 - beta1 ** step) * m / v
            continue
        v = beta2 * v + (1 - beta2) * grad * grad
        if kind == "NAdam":
            mu = beta1 * (1 - 0.5 * 0.96 ** (step * 4e-3))
            mu_next = beta1 * (1 - 0.5 * 0.96 ** ((step + 1) * 4e-3))
            mu_product *= mu
            denominator = np.sqrt(v / (1 - beta2 ** step)) + eps
            parameter = parameter - lr * (1 - mu) / (1 - mu_product) * grad / denominator
            parameter = parameter - lr * mu_next / (1 - mu_product * mu_next) * m / denominator
            continue
        corrected = m / (1 - beta1 ** step)
        rho_inf = 2 / (1 - beta2) - 1
        rho = rho_inf - 2 * step * beta2 ** step / (1 - beta2 ** step)
        if rho > 5:
            rect = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
            parameter = parameter - lr * corrected * rect * math.sqrt(1 - beta2 ** step) / (np.sqrt(v) + eps)
        else:
            parameter = parameter - lr * corrected
    return parameter


@pytest.mark.parametrize("kind", ["Adamax", "NAdam", "RAdam"])
def test_adam_variants(device, kind):
    start = RNG.standard_normal(5).astype(np.float32)
    gradients = [RNG.standard_normal(5).astype(np.float32) for _ in range(8)]
    parameter = nn.Parameter(torch.tensor(start, device=device))
    optimizer = getattr(torch.optim, kind)([parameter], lr=0.01, weight_decay=0.1)
    for grad in gradients:
        parameter.grad = torch.tensor(grad, device=device)
        optimizer.step()
    expected = _reference_optimizer(kind, start.astype(np.float64), gradients, 0.01, weight_decay=0.1)
    assert_close(parameter, expected, rtol=1e-4, atol=1e-6)
    assert optimizer.state_dict()["state"][0]["step"] == 8


def test_linalg(device):
    matrices = RNG.standard_normal((3, 4, 4)).astype(np.float32) + 3 * np.eye(4, dtype=np.float32)
    rhs = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    A = torch.tensor(matrices, device=device, requires_grad=True)
    assert_close(torch.linalg.solve(A, torch.tensor(rhs, device=device)), np.linalg.solve(matrices, rhs), rtol=1e-4, atol=1e-5)
    assert_close(torch.linalg.solve(A, torch.tensor(rhs[..., 0], device=device)), np.linalg.solve(matrices, rhs[..., :1])[..., 0], rtol=1e-4, atol=1e-5)
    assert_close(torch.linalg.inv(A), np.linalg.inv(matrices), rtol=1e-4, atol=1e-5)
    assert_close(torch.inverse(A[0]), np.linalg.inv(matrices[0]), rtol=1e-4, atol=1e-5)
    assert_close(torch.det(A), np.linalg.det(matrices), rtol=1e-4)
    sign, logabsdet = torch.linalg.slogdet(-A)
    expected_sign, expected_log = np.linalg.slogdet(-matrices)
    assert_close(sign, expected_sign)
    assert_close(logabsdet, expected_log, rtol=1e-4)
    torch.linalg.det(A).sum().backward()
    adjugate = np.linalg.det(matrices)[:, None, None] * np.linalg.inv(matrices).transpose(0, 2, 1)
    assert_close(A.grad, adjugate, rtol=1e-3, atol=1e-4)
    # a permutation needing pivots, and a singular matrix
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]], device=device)
    assert torch.det(swap).item() == -1.0 and torch.linalg.inv(swap).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]], device=device)
    assert torch.det(singular).item() == 0.0
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.inv(singular)
    assert torch.linalg.slogdet(singular).logabsdet.item() == float("-inf")
    values = RNG.standard_normal((3, 5)).astype(np.float32)
    v = torch.tensor(values, device=device)
    assert_close(torch.linalg.norm(v), np.linalg.norm(values), rtol=1e-5)
    assert_close(torch.linalg.vector_norm(v, ord=3, dim=1), (np.abs(values) ** 3).sum(1) ** (1 / 3), rtol=1e-5)
    assert_close(torch.linalg.vector_norm(v, ord=float("inf")), np.abs(values).max())
    for order in ("fro", 1, -1, float("inf"), float("-inf")):
        assert_close(torch.linalg.matrix_norm(v, ord=order), np.linalg.norm(values, ord=order), rtol=1e-5)
    assert_close(torch.linalg.matrix_power(A[0].detach(), 3), np.linalg.matrix_power(matrices[0], 3), rtol=1e-4, atol=1e-4)
    assert_close(torch.linalg.matrix_power(A[0].detach(), -2), np.linalg.matrix_power(matrices[0].astype(np.float64), -2), rtol=1e-3, atol=1e-4)
    a, b = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    assert_close(torch.linalg.cross(torch.tensor(a, device=device), torch.tensor(b, device=device)), np.cross(a, b), rtol=1e-5, atol=1e-6)


def test_torch_functions(device):
    assert torch.tril_indices(3, 3).tolist() == list(map(list, np.tril_indices(3)))
    assert torch.triu_indices(3, 4, 1).tolist() == list(map(list, np.triu_indices(3, 1, 4)))
    assert torch.cartesian_prod(torch.tensor([1, 2], device=device), torch.tensor([3, 4, 5], device=device)).tolist() == [list(p) for p in itertools.product([1, 2], [3, 4, 5])]
    assert torch.combinations(torch.tensor([1, 2, 3], device=device), r=2).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert torch.combinations(torch.tensor([1, 2], device=device), with_replacement=True).tolist() == [[1, 1], [1, 2], [2, 2]]
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    ta, tb = torch.tensor(a, device=device), torch.tensor(b, device=device)
    assert_close(torch.tensordot(ta, tb, dims=([1, 2], [1, 0])), np.tensordot(a, b, axes=([1, 2], [1, 0])), rtol=1e-4, atol=1e-5)
    assert_close(torch.tensordot(ta, tb[:, :, :2].permute(0, 1, 2), dims=1), np.tensordot(a, b[:, :, :2], axes=1), rtol=1e-4, atol=1e-5)
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    tm = torch.tensor(m, device=device)
    assert_close(torch.kron(tm, torch.eye(2, device=device)), np.kron(m, np.eye(2)))
    assert_close(torch.block_diag(tm, torch.tensor([[7.0]], device=device)), [[0, 1, 2, 0], [3, 4, 5, 0], [0, 0, 0, 7]])
    for k in range(4):
        assert_close(torch.rot90(tm, k), np.rot90(m, k))
    assert_close(torch.diag_embed(tm), np.stack([np.diag(row) for row in m]))
    assert_close(torch.diag_embed(tm, offset=1)[0], np.diag(m[0], 1))
    assert_close(tm.diagonal(), np.diagonal(m))
    assert_close(torch.diag(tm, 1), np.diag(m, 1))
    assert_close(torch.diag(tm, -1), np.diag(m, -1))
    assert_close(torch.diag(tm[0], -1), np.diag(m[0], -1))
    assert torch.trace(tm).item() == np.trace(m)
    assert_close(torch.diagonal(torch.tensor(a, device=device), offset=1, dim1=1, dim2=2), np.diagonal(a, 1, 1, 2))
    data = RNG.standard_normal((4, 7)).astype(np.float32)
    td = torch.tensor(data, device=device)
    assert_close(torch.quantile(td, 0.3), np.quantile(data, 0.3), rtol=1e-5)
    assert_close(td.quantile(torch.tensor([0.25, 0.5], device=device), dim=1, keepdim=True), np.quantile(data, [0.25, 0.5], axis=1, keepdims=True), rtol=1e-5)
    for method in ("lower", "higher", "nearest", "midpoint"):
        assert_close(td.quantile(0.4, dim=0, interpolation=method), np.quantile(data, 0.4, axis=0, method=method), rtol=1e-5)
    assert_close(torch.histc(td, bins=5, min=-1, max=1), np.histogram(data[(data >= -1) & (data <= 1)], bins=5, range=(-1, 1))[0])
    with_nan = torch.tensor([1.0, float("nan"), 3.0], device=device)
    assert with_nan.nanmean().item() == 2.0 and torch.nansum(with_nan).item() == 4.0
    points = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 5.0], dtype=np.float32)
    tp = torch.tensor(points, device=device)
    assert_close(torch.atan2(tp, tp.flip(0)), np.arctan2(points, points[::-1]), rtol=1e-5, atol=1e-6)
    assert_close(torch.arctan(tp), np.arctan(points), rtol=1e-6, atol=1e-7)
    unit = np.array([-1.0, -0.7, 0.0, 0.2, 0.99, 1.0], dtype=np.float32)
    assert_close(torch.asin(torch.tensor(unit, device=device)), np.arcsin(unit), rtol=1e-5, atol=1e-6)
    assert_close(torch.tensor(unit, device=device).acos(), np.arccos(unit), rtol=1e-5, atol=1e-6)
    assert_close(torch.logaddexp(tp, torch.tensor(1.0, device=device)), np.logaddexp(points, 1.0), rtol=1e-5)
    assert_close(torch.heaviside(tp, torch.tensor(0.5, device=device)), np.heaviside(points, 0.5))
    assert_close(torch.rad2deg(tp), np.rad2deg(points), rtol=1e-5)
    grad_x = torch.tensor(points, device=device, requires_grad=True)
    torch.atan(grad_x).sum().backward()
    assert_close(grad_x.grad, 1 / (1 + points ** 2), rtol=1e-4, atol=1e-6)
    runs = torch.tensor([1, 1, 2, 2, 3, 1, 1, 2], device=device)
    output, inverse, counts = runs.unique_consecutive(return_inverse=True, return_counts=True)
    assert output.tolist() == [1, 2, 3, 1, 2] and counts.tolist() == [2, 2, 1, 2, 1]
    assert inverse.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    torch.manual_seed(0)
    picks = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 5.0]], device=device).multinomial(2, replacement=True)
    assert picks.tolist() == [[1, 1], [2, 2]]


def test_in_place_elementwise_methods(device):
    values = np.array([-1.5, -0.2, 0.4, 2.6], dtype=np.float32)
    x = torch.tensor(values, device=device)
    assert x.clone().floor_().tolist() == np.floor(values).tolist()
    assert x.clone().ceil_().tolist() == np.ceil(values).tolist()
    assert x.clone().trunc_().tolist() == np.trunc(values).tolist()
    assert x.clone().round_().tolist() == np.round(values).tolist()
    y = x.clone().abs_()
    assert y.log_() is not None
    assert_close(y, np.log(np.abs(values)), rtol=1e-5)
    assert_close(x.clone().clamp_min_(0.0), np.maximum(values, 0))
    assert_close(x.clone().sin_(), np.sin(values), rtol=1e-5, atol=1e-6)


def test_settings_checkpoint_and_anomaly(device):
    try:
        torch.set_printoptions(precision=2)
        assert repr(torch.tensor([1.23456, 2.0])) == "tensor([1.23, 2.00])"
        torch.set_printoptions(sci_mode=True)
        assert "e+00" in repr(torch.tensor([1.5, 2.0]))
    finally:
        torch.set_printoptions(profile="default")
    assert repr(torch.tensor([1.23456, 2.0])) == "tensor([1.2346, 2.0000])"
    layer = nn.Linear(3, 2).to(device)
    x = torch.randn(4, 3, device=device, requires_grad=True)
    from anygrad.utils.checkpoint import checkpoint, checkpoint_sequential

    out = checkpoint(layer, x, use_reentrant=False)
    assert_close(out, layer(x).detach().cpu().numpy())
    out.sum().backward()
    assert x.grad is not None
    stack = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1)).to(device)
    assert_close(checkpoint_sequential(stack, 2, x), stack(x).detach().cpu().numpy())
    with torch.autograd.detect_anomaly():
        layer(x).sum().backward()
    torch.autograd.set_detect_anomaly(True)


def _read_records(path):
    """The payloads of a TensorBoard record file, checking the framing and checksums."""
    from anygrad.utils.tensorboard import _masked_crc32c

    data = open(path, "rb").read()
    records, position = [], 0
    while position < len(data):
        header = data[position:position + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[position + 8:position + 12])[0] == _masked_crc32c(header)
        payload = data[position + 12:position + 12 + length]
        assert struct.unpack("<I", data[position + 12 + length:position + 16 + length])[0] == _masked_crc32c(payload)
        records.append(payload)
        position += 16 + length
    return records


def _decode(message):
    """A protobuf message as ``{field: [values]}`` (varints, fixed 32/64 and bytes)."""
    fields, position = {}, 0
    while position < len(message):
        key, shift = 0, 0
        while True:
            byte = message[position]
            position += 1
            key |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, shift = 0, 0
            while True:
                byte = message[position]
                position += 1
                value |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
        elif wire == 1:
            value, position = message[position:position + 8], position + 8
        elif wire == 5:
            value, position = message[position:position + 4], position + 4
        else:
            length, shift = 0, 0
            while True:
                byte = message[position]
                position += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            value, position = message[position:position + length], position + length
        fields.setdefault(number, []).append(value)
    return fields


def test_summary_writer_event_file(tmp_path):
    from anygrad.utils.tensorboard import SummaryWriter, _CRC_TABLE

    crc = 0xFFFFFFFF
    for byte in b"123456789":
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    assert crc ^ 0xFFFFFFFF == 0xE3069283  # CRC-32C's check value
    with SummaryWriter(str(tmp_path / "run")) as writer:
        writer.add_scalar("loss", torch.tensor(0.5), 3)
        writer.add_scalars("accuracy", {"train": 0.75, "val": 0.5}, 4)
        writer.add_histogram("weights", torch.randn(3), 0)
    files = list((tmp_path / "run").iterdir())
    assert len(files) == 1 and files[0].name.startswith("events.out.tfevents.")
    records = [_decode(record) for record in _read_records(files[0])]
    assert records[0][3] == [b"brain.Event:2"]
    scalars = []
    for event in records[1:]:
        value = _decode(_decode(event[5][0])[1][0])
        scalars.append((value[1][0].decode(), struct.unpack("<f", value[2][0])[0], event[2][0]))
    assert scalars == [("loss", 0.5, 3), ("accuracy/train", 0.75, 4), ("accuracy/val", 0.5, 4)]
