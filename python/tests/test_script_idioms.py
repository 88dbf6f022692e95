"""Idioms of real PyTorch scripts that the scripts in ``tests/scripts`` met, each against
numpy on every device: in-place ``scatter_``/``scatter_add_``/``index_add_``/``index_copy_``/
``fill_diagonal_``/``masked_scatter_``, ``scatter`` and ``index_put`` with repeated positions,
``repeat_interleave`` with per-element counts, ``bincount``, ``f"{tensor}"`` formatting, the
legacy types (``torch.LongTensor``, ``x.type(torch.FloatTensor)``), ``nn.init.orthogonal_`` and
``trunc_normal_``, ``LSTM.flatten_parameters``, ``torch.utils.data``'s submodules,
``get_worker_info`` and the length of a loader over an ``IterableDataset``."""

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
from conftest import assert_close


def test_in_place_scatter_family(device):
    rng = np.random.default_rng(0)
    index = np.array([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    src = np.arange(1, 11, dtype=np.float32).reshape(2, 5)
    t_index, t_src = torch.tensor(index, device=device), torch.tensor(src, device=device)
    expected = np.zeros((3, 5), np.float32)
    np.add.at(expected, (index, np.tile(np.arange(5), (2, 1))), src)
    out = torch.zeros(3, 5, device=device)
    assert out.scatter_add_(0, t_index, t_src) is out
    assert_close(out, expected)
    one_hot = torch.zeros(4, 6, device=device).scatter_(1, torch.tensor([[1], [0], [5], [1]], device=device), 1.0)
    assert_close(one_hot, np.eye(6)[[1, 0, 5, 1]])
    # A position named twice along a row: PyTorch keeps one of the (here equal) values.
    repeated = torch.zeros(2, 5, device=device).scatter(1, t_index[:, :3], 7.0)
    assert_close(repeated, [[7, 7, 7, 0, 0], [7, 0, 7, 0, 0]])
    assert torch.zeros(2, 3, dtype=torch.int64, device=device).scatter_(1, torch.tensor([[0, 0], [2, 2]], device=device), 4).tolist() == [[4, 0, 0], [0, 0, 4]]
    assert_close(torch.zeros(3, 5, device=device).scatter(0, t_index, t_src, reduce="add"), expected)
    # gradients of scatter flow to the source values that land and to the untouched elements
    base = torch.tensor(rng.standard_normal((3, 5)).astype(np.float32), device=device, requires_grad=True)
    values = torch.tensor(src[:1], device=device, requires_grad=True)
    torch.scatter(base, 0, torch.tensor([[2, 0, 1, 1, 2]], device=device), values).sum().backward()
    grad_base = np.ones((3, 5))
    grad_base[[2, 0, 1, 1, 2], range(5)] = 0
    assert_close(base.grad, grad_base)
    assert_close(values.grad, np.ones((1, 5)))
    target = torch.zeros(4, 3, device=device)
    target.index_add_(0, torch.tensor([0, 0, 3], device=device), torch.ones(3, 3, device=device), alpha=2)
    assert_close(target, [[4] * 3, [0] * 3, [0] * 3, [2] * 3])
    copied = torch.zeros(2, 4, device=device).index_copy_(1, torch.tensor([3, 0], device=device), torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device))
    assert_close(copied, [[2, 0, 0, 1], [4, 0, 0, 3]])
    square = torch.zeros(3, 4, device=device)
    square.fill_diagonal_(5.0)
    assert_close(square, [[5, 0, 0, 0], [0, 5, 0, 0], [0, 0, 5, 0]])
    tall = torch.zeros(7, 3, device=device).fill_diagonal_(1.0, wrap=True)
    expected_tall = np.zeros((7, 3))
    expected_tall[[0, 1, 2, 4, 5, 6], [0, 1, 2, 0, 1, 2]] = 1
    assert_close(tall, expected_tall)
    mask = torch.tensor([[True, False, True], [False, True, False]], device=device)
    scattered = torch.zeros(2, 3, device=device).masked_scatter_(mask, torch.arange(1, 7, device=device).float())
    assert_close(scattered, [[1, 0, 2], [0, 3, 0]])


def test_index_put_repeated_positions_of_integers_and_bools(device):
    ints = torch.tensor([1, 2, 3], device=device)
    assert ints.index_put((torch.tensor([0, 0], device=device),), torch.tensor([7, 7], device=device)).tolist() == [7, 2, 3]
    assert ints.index_put((torch.tensor([0, 0], device=device),), torch.tensor([7, 7], device=device), accumulate=True).tolist() == [15, 2, 3]
    flags = torch.tensor([True, False, False], device=device)
    assert flags.index_put((torch.tensor([1, 1], device=device),), torch.tensor([True, True], device=device)).tolist() == [True, True, False]
    assert flags.index_put((torch.tensor([0], device=device),), torch.tensor([False], device=device)).tolist() == [False, False, False]


def test_repeat_interleave_and_bincount(device):
    x = torch.tensor([[1, 2], [3, 4], [5, 6]], device=device)
    counts = torch.tensor([2, 0, 1], device=device)
    assert torch.repeat_interleave(x, counts, dim=0).tolist() == np.repeat([[1, 2], [3, 4], [5, 6]], [2, 0, 1], axis=0).tolist()
    assert x.repeat_interleave(torch.tensor(2, device=device)).tolist() == np.repeat([1, 2, 3, 4, 5, 6], 2).tolist()
    assert torch.repeat_interleave(torch.tensor([1, 0, 3], device=device)).tolist() == [0, 2, 2, 2]
    assert x.repeat_interleave([1, 2], dim=1).tolist() == np.repeat([[1, 2], [3, 4], [5, 6]], [1, 2], axis=1).tolist()
    with pytest.raises(RuntimeError, match="same size"):
        x.repeat_interleave(torch.tensor([1, 2], device=device), dim=0)
    values = np.array([0, 3, 1, 3, 3, 0], dtype=np.int64)
    labels = torch.tensor(values, device=device)
    assert torch.bincount(labels).tolist() == np.bincount(values).tolist()
    assert labels.bincount(minlength=6).tolist() == np.bincount(values, minlength=6).tolist()
    assert torch.bincount(labels).dtype == torch.int64
    weights = np.array([0.5, 1.0, 2.0, 0.25, 0.25, 1.5], dtype=np.float32)
    assert_close(torch.bincount(labels, torch.tensor(weights, device=device)), np.bincount(values, weights))
    assert torch.bincount(torch.tensor([], dtype=torch.int64, device=device), minlength=2).tolist() == [0, 0]
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([1, -1], device=device))


def test_format_of_tensors(device):
    loss = torch.tensor(0.123456, device=device)
    assert f"{loss:.4f}" == "0.1235" and f"{loss}" == f"{loss.item()}"
    correct = (torch.tensor([1, 2, 3], device=device) > 1).sum()
    assert f"{correct}/{3} {correct:>4d} {100. * correct / 3:.0f}%" == "2/3    2 67%"
    assert "{:.2e}".format(torch.tensor(12345.0, device=device)) == "1.23e+04"
    vector = torch.tensor([1, 2], device=device)
    assert f"{vector}" == str(vector)
    with pytest.raises(TypeError, match="format"):
        f"{vector:.2f}"


def test_legacy_tensor_types(device):
    longs = torch.LongTensor(np.array([[1, 2], [3, 4]], dtype=np.int32))
    assert longs.dtype == torch.int64 and longs.tolist() == [[1, 2], [3, 4]]
    assert tuple(torch.FloatTensor(2, 3).shape) == (2, 3) and torch.FloatTensor(2, 3).dtype == torch.float32
    assert torch.FloatTensor([1, 2]).tolist() == [1.0, 2.0] and torch.ByteTensor([1]).dtype == torch.uint8
    assert torch.FloatTensor().numel() == 0 and tuple(torch.DoubleTensor(torch.Size([2])).shape) == (2,)
    x = torch.tensor([1.5, 2.5], device=device)
    assert isinstance(x, torch.FloatTensor) == (device == "cpu")
    assert isinstance(x, torch.cuda.FloatTensor) == (device != "cpu")
    assert not isinstance(x, torch.LongTensor)
    assert x.type(torch.LongTensor).dtype == torch.int64 and x.type(torch.LongTensor).device.type == "cpu"
    assert x.type("torch.IntTensor").tolist() == [1, 2]
    assert x.type(torch.float16).dtype == torch.float16
    assert x.type(torch.FloatTensor if device == "cpu" else torch.cuda.FloatTensor) is x
    assert x.type() in ("anygrad.FloatTensor", "anygrad.cuda.FloatTensor")
    if device != "cpu":
        on_gpu = torch.cuda.LongTensor([1, 2])
        assert on_gpu.device.type != "cpu" and on_gpu.dtype == torch.int64
        assert torch.tensor([1.0]).type("torch.cuda.FloatTensor").device.type != "cpu"


def test_orthogonal_and_truncated_normal_init(device):
    torch.manual_seed(0)
    weight = torch.empty(6, 4, 3, device=device)
    nn.init.orthogonal_(weight, gain=2.0)
    matrix = weight.reshape(6, -1).cpu().numpy().astype(np.float64)
    assert np.allclose(matrix @ matrix.T, 4 * np.eye(6), atol=1e-4)
    wide = nn.init.orthogonal_(torch.empty(3, 8, device=device))
    assert np.allclose(wide.cpu().numpy() @ wide.cpu().numpy().T, np.eye(3), atol=1e-5)
    first = nn.init.orthogonal_(torch.empty(4, 4), generator=torch.Generator().manual_seed(3))
    second = nn.init.orthogonal_(torch.empty(4, 4), generator=torch.Generator().manual_seed(3))
    assert first.tolist() == second.tolist()
    samples = torch.empty(200000, device=device)
    nn.init.trunc_normal_(samples, mean=0.0, std=1.0, a=-1.0, b=1.5)
    values = samples.cpu().numpy()
    assert values.min() >= -1.0 and values.max() <= 1.5
    # The mean of N(0, 1) truncated to [-1, 1.5]: (phi(-1) - phi(1.5)) / (Phi(1.5) - Phi(-1)).
    assert abs(values.mean() - 0.14519) < 0.01
    assert abs(values.std() - 0.6436) < 0.01


def test_recurrent_flatten_parameters_and_data_submodules():
    lstm = nn.LSTM(2, 3)
    assert lstm.flatten_parameters() is None
    from anygrad.utils.data.dataset import Dataset
    from anygrad.utils.data.dataloader import DataLoader
    from anygrad.utils.data import sampler, get_worker_info

    assert Dataset is torch.utils.data.Dataset and DataLoader is torch.utils.data.DataLoader
    assert sampler.RandomSampler is torch.utils.data.RandomSampler
    assert get_worker_info() is None

    class Counting(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    assert len(DataLoader(Counting(), batch_size=4)) == 3
    assert len(DataLoader(Counting(), batch_size=4, drop_last=True)) == 2
    assert [batch.tolist() for batch in DataLoader(Counting(), batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
