"""``nn.utils.rnn``'s ``PackedSequence``, ``pack_padded_sequence``, ``pad_packed_sequence``,
``pack_sequence``, ``unpack_sequence`` and ``unpad_sequence`` against numpy (PyTorch's packed
layout: time-major, sequences by decreasing length), and ``RNN``/``LSTM``/``GRU`` over packed
input: each sequence's outputs and final states equal those of the layer run on that sequence
alone, on every device, gradients included."""

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
from anygrad.nn.utils.rnn import (
    PackedSequence, pack_padded_sequence, pack_sequence, pad_packed_sequence, pad_sequence,
    unpack_sequence, unpad_sequence,
)
from conftest import assert_close

LENGTHS = [3, 5, 1, 4]


def _padded(rng, features=2):
    values = np.zeros((len(LENGTHS), max(LENGTHS), features), dtype=np.float32)
    for row, length in enumerate(LENGTHS):
        values[row, :length] = rng.standard_normal((length, features))
    return values


def _packed_reference(values, lengths):
    """PyTorch's packed data and batch sizes of a batch-first padded array."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    rows, sizes = [], []
    for step in range(max(lengths)):
        running = [i for i in order if lengths[i] > step]
        sizes.append(len(running))
        rows.extend(values[i, step] for i in running)
    return np.stack(rows), sizes, order


def test_pack_and_pad_round_trip(device):
    rng = np.random.default_rng(0)
    values = _padded(rng)
    x = torch.tensor(values, device=device, requires_grad=True)
    packed = pack_padded_sequence(x, torch.tensor(LENGTHS), batch_first=True, enforce_sorted=False)
    data, sizes, order = _packed_reference(values, LENGTHS)
    assert isinstance(packed, PackedSequence)
    assert_close(packed.data, data)
    assert packed.batch_sizes.tolist() == sizes and packed.batch_sizes.device.type == "cpu"
    assert packed.sorted_indices.tolist() == order
    assert packed.unsorted_indices.tolist() == np.argsort(order).tolist()
    padded, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)
    expected = values.copy()
    for row, length in enumerate(LENGTHS):
        expected[row, length:] = -1.0
    assert_close(padded, expected)
    assert lengths.tolist() == LENGTHS and lengths.dtype == torch.int64
    time_major, _ = pad_packed_sequence(packed, total_length=7)
    assert tuple(time_major.shape) == (7, 4, 2)
    assert_close(time_major[:5].transpose(0, 1), np.where(expected == -1.0, 0.0, expected))
    (padded * torch.tensor(rng.standard_normal(values.shape).astype(np.float32), device=device)).sum().backward()
    mask = np.arange(max(LENGTHS))[None, :, None] < np.array(LENGTHS)[:, None, None]
    assert np.all((x.grad.cpu().numpy() == 0) | mask)
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(packed, total_length=3)


def test_pack_checks_and_helpers(device):
    sequences = [torch.arange(n, dtype=torch.float32, device=device) + 10 * n for n in (4, 2, 3)]
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_sequence(sequences)
    packed = pack_sequence(sequences, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1]
    assert packed.data.tolist() == [40, 30, 20, 41, 31, 21, 42, 32, 43]
    assert [s.tolist() for s in unpack_sequence(packed)] == [s.tolist() for s in sequences]
    sorted_pack = pack_sequence([sequences[0], sequences[2], sequences[1]])
    assert sorted_pack.sorted_indices is None and sorted_pack.unsorted_indices is None
    padded = pad_sequence(sequences, batch_first=True)
    assert [s.tolist() for s in unpad_sequence(padded, [4, 2, 3], batch_first=True)] == [s.tolist() for s in sequences]
    with pytest.raises(RuntimeError, match="greater than 0"):
        pack_padded_sequence(padded, [4, 0, 3], batch_first=True, enforce_sorted=False)
    moved = packed.to("cpu")
    assert moved.data.device.type == "cpu" and moved.batch_sizes.tolist() == [3, 3, 2, 1]
    assert packed.double().data.dtype == torch.float64 if device == "cpu" else packed.float().data.dtype == torch.float32


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional, num_layers, batch_first", [(False, 1, True), (True, 2, False)])
def test_recurrent_layers_over_packed_sequences(device, kind, bidirectional, num_layers, batch_first):
    torch.manual_seed(0)
    layer = getattr(nn, kind)(2, 3, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first).to(device)
    rng = np.random.default_rng(1)
    values = _padded(rng)
    directions = 2 if bidirectional else 1
    initial = rng.standard_normal((num_layers * directions, len(LENGTHS), 3)).astype(np.float32)
    x = torch.tensor(values if batch_first else values.transpose(1, 0, 2), device=device)
    h0 = torch.tensor(initial, device=device)
    hx = (h0, h0 * 0.5) if kind == "LSTM" else h0
    packed = pack_padded_sequence(x, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    output, final = layer(packed, hx)
    assert isinstance(output, PackedSequence)
    padded, lengths = pad_packed_sequence(output, batch_first=True)
    assert lengths.tolist() == LENGTHS
    weights = [torch.tensor(rng.standard_normal((length, 3 * directions)).astype(np.float32), device=device) for length in LENGTHS]
    loss = sum((padded[row, :length] * weights[row]).sum() for row, length in enumerate(LENGTHS))
    (loss + (final[0] if kind == "LSTM" else final).sum()).backward()
    packed_grads = [p.grad.cpu().numpy() for p in layer.parameters()]
    layer.zero_grad()
    total = 0
    for row, length in enumerate(LENGTHS):
        alone = torch.tensor(values[row:row + 1, :length] if batch_first else values[row:row + 1, :length].transpose(1, 0, 2), device=device)
        state = torch.tensor(initial[:, row:row + 1], device=device)
        out, last = layer(alone, (state, state * 0.5) if kind == "LSTM" else state)
        out = out[0] if batch_first else out[:, 0]
        assert_close(padded[row, :length], out.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
        assert_close(padded[row, length:], np.zeros((max(LENGTHS) - length, 3 * directions)))
        if kind == "LSTM":
            assert_close(final[0][:, row], last[0][:, 0].detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
            assert_close(final[1][:, row], last[1][:, 0].detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
            last = last[0]
        else:
            assert_close(final[:, row], last[:, 0].detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
        total = total + (out * weights[row]).sum() + last.sum()
    total.backward()
    for packed_grad, parameter in zip(packed_grads, layer.parameters()):
        assert_close(packed_grad, parameter.grad.cpu().numpy(), rtol=1e-4, atol=1e-5)


def test_classifier_idiom_with_embedding(device):
    """The usual text-classifier forward: embedding, packing with the lengths on the CPU, a GRU,
    the final states of both directions concatenated."""
    torch.manual_seed(0)
    embedding = nn.Embedding(10, 4, padding_idx=0).to(device)
    gru = nn.GRU(4, 5, batch_first=True, bidirectional=True).to(device)
    tokens = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]], device=device)
    lengths = torch.tensor([3, 2, 4])
    packed = pack_padded_sequence(embedding(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
    _, hidden = gru(packed)
    features = torch.cat((hidden[-2], hidden[-1]), dim=1)
    assert tuple(features.shape) == (3, 10)
    _, alone = gru(embedding(tokens[1:2, :2]))
    assert_close(features[1], torch.cat((alone[-2, 0], alone[-1, 0])).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    gru.flatten_parameters()
