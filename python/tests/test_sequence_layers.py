"""The sequence and upsampling layers against numpy written from PyTorch's definitions:
``ConvTranspose2d``, ``MultiheadAttention`` (masks, weights, batch-first, unbatched), the
transformer layers and stacks, and ``RNN``/``LSTM``/``GRU`` (stacked, bidirectional) and their
cells; parameter names follow PyTorch's, so state dicts carry over."""

import copy

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close


def _np(t):
    return t.detach().cpu().numpy().astype(np.float64)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_conv_transpose2d_matches_its_definition(device):
    torch.manual_seed(0)
    layer = nn.ConvTranspose2d(3, 4, kernel_size=3, stride=2, padding=1, output_padding=1).to(device)
    x = torch.randn(2, 3, 4, 5, device=device)
    out = layer(x)
    xs, w, b = _np(x), _np(layer.weight), _np(layer.bias)
    s, p = 2, 1
    full = np.zeros((2, 4, (4 - 1) * s + 3 + 1, (5 - 1) * s + 3 + 1))
    for i in range(4):
        for j in range(5):
            full[:, :, i * s : i * s + 3, j * s : j * s + 3] += np.einsum("nc,cokl->nokl", xs[:, :, i, j], w)
    expected = full[:, :, p : p + 8, p : p + 10] + b.reshape(1, 4, 1, 1)
    assert tuple(out.shape) == (2, 4, 8, 10)
    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert tuple(layer(x, output_size=(7, 9)).shape) == (2, 4, 7, 9)
    with pytest.raises(ValueError, match="output size"):
        layer(x, output_size=(12, 12))
    out.sum().backward()
    assert layer.weight.grad is not None and tuple(layer.weight.grad.shape) == (3, 4, 3, 3)


def _mha_reference(layer, q, k, v, attn_mask=None, key_padding_mask=None):
    """[L, N, E] inputs; PyTorch's masks (True = not attended)."""
    e, h = layer.embed_dim, layer.num_heads
    w, b = _np(layer.in_proj_weight), _np(layer.in_proj_bias)
    proj = [x @ w[i * e : (i + 1) * e].T + b[i * e : (i + 1) * e] for i, x in enumerate((q, k, v))]
    length, batch = q.shape[0], q.shape[1]
    split = [x.reshape(x.shape[0], batch, h, e // h).transpose(1, 2, 0, 3) for x in proj]
    scores = split[0] @ split[1].transpose(0, 1, 3, 2) / np.sqrt(e // h)
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    if key_padding_mask is not None:
        scores = np.where(key_padding_mask[:, None, None, :], -np.inf, scores)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out = (weights @ split[2]).transpose(2, 0, 1, 3).reshape(length, batch, e)
    out = out @ _np(layer.out_proj.weight).T + _np(layer.out_proj.bias)
    return out, weights.mean(1)


def test_multihead_attention_matches_its_definition(device):
    torch.manual_seed(1)
    layer = nn.MultiheadAttention(8, 2).to(device)
    with torch.no_grad():
        layer.in_proj_bias.uniform_(-0.5, 0.5)
        layer.out_proj.bias.uniform_(-0.5, 0.5)
    q, k = torch.randn(5, 3, 8, device=device), torch.randn(6, 3, 8, device=device)
    v = torch.randn(6, 3, 8, device=device)
    causal = np.triu(np.ones((5, 6), dtype=bool), k=1)
    padding = np.zeros((3, 6), dtype=bool)
    padding[1, 4:] = True
    expected, weights = _mha_reference(layer, _np(q), _np(k), _np(v), causal, padding)
    out, got_weights = layer(q, k, v, attn_mask=torch.tensor(causal, device=device), key_padding_mask=torch.tensor(padding, device=device))
    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert_close(got_weights, weights, rtol=1e-4, atol=1e-6)
    # Without weights: the fused path gives the same output; a float mask is added.
    additive = torch.tensor(np.where(causal, -np.inf, 0.0).astype(np.float32), device=device)
    out, none = layer(q, k, v, attn_mask=additive, key_padding_mask=torch.tensor(padding, device=device), need_weights=False)
    assert none is None
    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    # Batch-first and unbatched layouts.
    first = nn.MultiheadAttention(8, 2, batch_first=True).to(device)
    first.load_state_dict(layer.state_dict())
    out, _ = first(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
    plain, _ = _mha_reference(layer, _np(q), _np(k), _np(v))
    assert_close(out, plain.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    single, w1 = layer(q[:, 0], k[:, 0], v[:, 0])
    assert tuple(single.shape) == (5, 8) and tuple(w1.shape) == (5, 6)
    assert_close(single, plain[:, 0], rtol=1e-4, atol=1e-5)
    assert sorted(layer.state_dict()) == ["in_proj_bias", "in_proj_weight", "out_proj.bias", "out_proj.weight"]
    with pytest.raises(RuntimeError, match="is_causal"):
        layer(q, k, v, is_causal=True)
    with pytest.raises(AssertionError):
        nn.MultiheadAttention(8, 3)


def test_transformer_layers_compose_and_train(device):
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0).to(device)
    x = torch.randn(4, 2, 8, device=device)
    attended, _ = _mha_reference(layer.self_attn, _np(x), _np(x), _np(x))

    def norm(y, module):
        mean, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
        return (y - mean) / np.sqrt(var + 1e-5) * _np(module.weight) + _np(module.bias)

    h = norm(_np(x) + attended, layer.norm1)
    ff = np.maximum(h @ _np(layer.linear1.weight).T + _np(layer.linear1.bias), 0) @ _np(layer.linear2.weight).T + _np(layer.linear2.bias)
    assert_close(layer(x), norm(h + ff, layer.norm2), rtol=1e-4, atol=1e-4)
    names = sorted(layer.state_dict())
    assert names == sorted([
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
    ])
    stack = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8)).to(device)
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight
    assert "layers.1.self_attn.in_proj_weight" in stack.state_dict()
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True).to(device)
    mask = nn.Transformer.generate_square_subsequent_mask(3, device=device)
    assert mask.tolist()[0] == [0.0, float("-inf"), float("-inf")]
    src, tgt = torch.randn(2, 5, 8, device=device), torch.randn(2, 3, 8, device=device)
    out = model(src, tgt, tgt_mask=mask, tgt_is_causal=True)
    assert tuple(out.shape) == (2, 3, 8)
    # The causal mask: the first target position ignores the later ones.
    changed = tgt.clone()
    changed[:, 2] = 5.0
    assert_close(model(src, changed, tgt_mask=mask)[:, 0], out[:, 0], rtol=1e-4, atol=1e-5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = (model(src, tgt, tgt_mask=mask) - tgt).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def _rnn_reference(module, x, mode):
    """[L, N, H_in] input, zero initial state: the output and final states."""
    directions = 2 if module.bidirectional else 1
    finals_h, finals_c = [], []
    layer_input = x
    for layer in range(module.num_layers):
        outputs = []
        for direction in range(directions):
            sfx = f"_l{layer}" + ("_reverse" if direction else "")
            w_ih, w_hh = _np(getattr(module, "weight_ih" + sfx)), _np(getattr(module, "weight_hh" + sfx))
            b_ih, b_hh = _np(getattr(module, "bias_ih" + sfx)), _np(getattr(module, "bias_hh" + sfx))
            h = np.zeros((x.shape[1], module.hidden_size))
            c = np.zeros_like(h)
            out = [None] * x.shape[0]
            steps = range(x.shape[0] - 1, -1, -1) if direction else range(x.shape[0])
            for t in steps:
                gi, gh = layer_input[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
                if mode == "LSTM":
                    i, f, g, o = np.split(gi + gh, 4, axis=-1)
                    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                    h = _sigmoid(o) * np.tanh(c)
                elif mode == "GRU":
                    r = _sigmoid(gi[:, :module.hidden_size] + gh[:, :module.hidden_size])
                    z = _sigmoid(gi[:, module.hidden_size:2 * module.hidden_size] + gh[:, module.hidden_size:2 * module.hidden_size])
                    n = np.tanh(gi[:, 2 * module.hidden_size:] + r * gh[:, 2 * module.hidden_size:])
                    h = (1 - z) * n + z * h
                else:
                    h = np.maximum(gi + gh, 0) if mode == "RNN_RELU" else np.tanh(gi + gh)
                out[t] = h
            outputs.append(np.stack(out))
            finals_h.append(h)
            finals_c.append(c)
        layer_input = np.concatenate(outputs, -1)
    return layer_input, np.stack(finals_h), np.stack(finals_c)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_match_their_definitions(device, kind):
    torch.manual_seed(3)
    if kind == "RNN":
        module = nn.RNN(3, 5, num_layers=2, nonlinearity="relu", bidirectional=True).to(device)
        mode = "RNN_RELU"
    else:
        module = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True).to(device)
        mode = kind
    x = torch.randn(4, 2, 3, device=device)
    output, state = module(x)
    expected, h_n, c_n = _rnn_reference(module, _np(x), mode)
    assert tuple(output.shape) == (4, 2, 10)
    assert_close(output, expected, rtol=1e-4, atol=1e-5)
    if kind == "LSTM":
        assert_close(state[0], h_n, rtol=1e-4, atol=1e-5)
        assert_close(state[1], c_n, rtol=1e-4, atol=1e-5)
    else:
        assert_close(state, h_n, rtol=1e-4, atol=1e-5)
    assert "weight_hh_l1_reverse" in module.state_dict() and "bias_ih_l0" in module.state_dict()
    # Batch-first and unbatched inputs give the same numbers.
    first = copy.deepcopy(module)
    first.batch_first = True
    out_first, _ = first(x.transpose(0, 1))
    assert_close(out_first, expected.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    single, _ = module(x[:, 1])
    assert_close(single, expected[:, 1], rtol=1e-4, atol=1e-5)
    output.sum().backward()
    assert module.weight_ih_l0.grad is not None and module.weight_hh_l1_reverse.grad is not None


def test_cells_are_one_step(device):
    torch.manual_seed(4)
    x = torch.randn(2, 3, device=device)
    lstm = nn.LSTMCell(3, 4).to(device)
    h, c = lstm(x)
    gates = _np(x) @ _np(lstm.weight_ih).T + _np(lstm.bias_ih) + _np(lstm.bias_hh)
    i, f, g, o = np.split(gates, 4, axis=-1)
    cell = _sigmoid(i) * np.tanh(g)
    assert_close(c, cell, rtol=1e-4, atol=1e-6)
    assert_close(h, _sigmoid(o) * np.tanh(cell), rtol=1e-4, atol=1e-6)
    gru = nn.GRUCell(3, 4).to(device)
    assert tuple(gru(x, torch.zeros(2, 4, device=device)).shape) == (2, 4)
    rnn = nn.RNNCell(3, 4, nonlinearity="tanh").to(device)
    assert_close(rnn(x), np.tanh(_np(x) @ _np(rnn.weight_ih).T + _np(rnn.bias_ih) + _np(rnn.bias_hh)), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
