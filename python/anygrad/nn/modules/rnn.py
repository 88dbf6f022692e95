"""Recurrent layers: ``RNN`` (tanh or relu), ``LSTM`` and ``GRU`` (``torch.nn``'s, with their
parameter names ``weight_ih_l0``, ``bias_hh_l1_reverse``, ..., gate orders and initialisation
``U(-1/sqrt(hidden), 1/sqrt(hidden))``), stacked, bidirectional, batch-first or unbatched,
or over a ``PackedSequence`` (``nn.utils.rnn``), and the cells ``RNNCell``, ``LSTMCell``,
``GRUCell``. The input projection of every time step is one matrix product per layer; the
recurrence runs step by step in tensor ops, so autograd differentiates through time."""

import math

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(mode, x_projected, h, weight_hh, bias_hh):
    """One step of the plain RNN: ``x_projected`` is ``x W_ihᵀ + b_ih``."""
    pre = x_projected + F.linear(h, weight_hh, bias_hh)
    return pre.tanh() if mode == "RNN_TANH" else pre.relu()


def _lstm_step(x_projected, state, weight_hh, bias_hh):
    """One LSTM step (gates i, f, g, o): the new ``(h, c)``."""
    h, c = state
    gates = x_projected + F.linear(h, weight_hh, bias_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_step(x_projected, h, weight_hh, bias_hh):
    """One GRU step (gates r, z, n; the reset gate scales the hidden part of n)."""
    hidden = F.linear(h, weight_hh, bias_hh)
    x_r, x_z, x_n = x_projected.chunk(3, -1)
    h_r, h_z, h_n = hidden.chunk(3, -1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: the parameters of every layer and direction,
    the stacking, the directions, the layouts."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        import anygrad

        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be a positive integer")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be a positive integer")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1]")
        if proj_size:
            raise NotImplementedError(f"{type(self).__name__}: proj_size is not supported")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        directions = 2 if bidirectional else 1
        gates = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gates, layer_input)), ("weight_hh", (gates, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(anygrad.empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's initialisation: every parameter ``U(-1/sqrt(hidden), 1/sqrt(hidden))``."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for parameter in self.parameters():
            init.uniform_(parameter, -bound, bound)

    def flatten_parameters(self):
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN; anygrad's
        recurrence reads the parameters as they are (scripts call this after loading)."""

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if self.bias else [])
        weights = [getattr(self, name + suffix) for name in names]
        return weights if self.bias else weights + [None, None]

    def _step(self, x_projected, state, weight_hh, bias_hh):
        if self.mode == "LSTM":
            return _lstm_step(x_projected, state, weight_hh, bias_hh)
        if self.mode == "GRU":
            return _gru_step(x_projected, state, weight_hh, bias_hh)
        return _rnn_step(self.mode, x_projected, state, weight_hh, bias_hh)

    def _initial_state(self, input, hx, batch):
        import anygrad

        directions = 2 if self.bidirectional else 1
        shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            zeros = anygrad.zeros(*shape, dtype=input.dtype, device=input.device)
            return (zeros, zeros) if self.mode == "LSTM" else zeros
        states = hx if self.mode == "LSTM" else (hx,)
        for state in states:
            if tuple(state.shape) != shape:
                raise RuntimeError(f"Expected hidden size {shape}, got {tuple(state.shape)}")
        return hx

    def forward(self, input, hx=None):
        """``(output, h_n)`` (LSTM: ``(output, (h_n, c_n))``); ``output`` holds the last layer's
        hidden state at every step, both directions side by side. ``input`` may be a
        ``PackedSequence`` (``nn.utils.rnn``): the output is then one too, and ``h_n`` holds each
        sequence's state after its own last step, in the batch's order."""
        from ..utils.rnn import PackedSequence

        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if not batched:
            input = input.unsqueeze(1)
            if hx is not None:
                hx = tuple(h.unsqueeze(1) for h in hx) if self.mode == "LSTM" else hx.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}")
        steps, batch = input.shape[0], input.shape[1]
        state = self._initial_state(input, hx, batch)
        output, final = self._layers(input, state, None, batch)
        if not batched:
            output = output.squeeze(1)
            final = tuple(f.squeeze(1) for f in final) if self.mode == "LSTM" else final.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, final

    def _forward_packed(self, packed, hx):
        """``forward`` of a ``PackedSequence``: the states are kept in the packed (decreasing
        length) order, each step advancing only the sequences still running."""
        from ..utils.rnn import PackedSequence

        data = packed.data
        if data.dim() != 2 or data.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{type(self).__name__}: expected packed data of shape [*, {self.input_size}], got {tuple(data.shape)}"
            )
        batch_sizes = [int(size) for size in packed.batch_sizes.tolist()]
        batch = batch_sizes[0]
        if hx is not None and packed.sorted_indices is not None:
            order = packed.sorted_indices.to(data.device)
            hx = tuple(h.index_select(1, order) for h in hx) if self.mode == "LSTM" else hx.index_select(1, order)
        state = self._initial_state(data, hx, batch)
        output, final = self._layers(data, state, batch_sizes, batch)
        if packed.unsorted_indices is not None:
            order = packed.unsorted_indices.to(data.device)
            final = tuple(f.index_select(1, order) for f in final) if self.mode == "LSTM" else final.index_select(1, order)
        return PackedSequence(output, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), final

    def _layers(self, layer_input, state, batch_sizes, batch):
        """Every layer and direction over ``layer_input``: ``[T, B, features]``, or the packed
        rows ``[sum of lengths, features]`` when ``batch_sizes`` gives the sequences running at
        each step. Returns the last layer's output (in the same layout) and the final states."""
        import anygrad

        directions = 2 if self.bidirectional else 1
        finals_h, finals_c = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                weight_ih, weight_hh, bias_ih, bias_hh = self._weights(layer, direction)
                index = layer * directions + direction
                carry = (state[0][index], state[1][index]) if self.mode == "LSTM" else state[index]
                projected = F.linear(layer_input, weight_ih, bias_ih)
                hidden, carry = self._recur(projected, carry, weight_hh, bias_hh, batch_sizes, bool(direction))
                if batch_sizes is None:
                    outputs.append(_stack(hidden, batch, self.hidden_size, layer_input))
                else:
                    outputs.append(anygrad.cat(hidden, 0))
                if self.mode == "LSTM":
                    finals_h.append(carry[0])
                    finals_c.append(carry[1])
                else:
                    finals_h.append(carry)
            layer_input = outputs[0] if directions == 1 else _cat(outputs)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        h_n = anygrad.stack(finals_h)
        final = (h_n, anygrad.stack(finals_c)) if self.mode == "LSTM" else h_n
        return layer_input, final

    def _recur(self, projected, carry, weight_hh, bias_hh, batch_sizes, reverse):
        """The recurrence of one layer and direction: the hidden state of every step (a list in
        time order) and the final carry. With ``batch_sizes`` (packed rows) step ``t`` reads
        its ``batch_sizes[t]`` rows and advances only the first that many states; the others
        keep theirs, so each sequence's final state is its own last step's (reversed, a
        sequence starts from the initial state at its own last step)."""
        import anygrad

        if batch_sizes is None:
            steps = projected.shape[0]
            rows = [projected[t] for t in range(steps)]
        else:
            steps, rows, offset = len(batch_sizes), [], 0
            for size in batch_sizes:
                rows.append(projected[offset : offset + size])
                offset += size
        hidden = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            active = rows[t].shape[0]
            full = batch_sizes is None or active == (carry[0] if self.mode == "LSTM" else carry).shape[0]
            if full:
                carry = self._step(rows[t], carry, weight_hh, bias_hh)
                hidden[t] = carry[0] if self.mode == "LSTM" else carry
                continue
            if self.mode == "LSTM":
                h, c = self._step(rows[t], (carry[0][:active], carry[1][:active]), weight_hh, bias_hh)
                carry = (anygrad.cat([h, carry[0][active:]], 0), anygrad.cat([c, carry[1][active:]], 0))
            else:
                h = self._step(rows[t], carry[:active], weight_hh, bias_hh)
                carry = anygrad.cat([h, carry[active:]], 0)
            hidden[t] = h
        return hidden, carry

    def extra_repr(self):
        """The settings shown in ``repr``."""
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


def _stack(hidden, batch, size, like):
    import anygrad

    if not hidden:
        return anygrad.zeros(0, batch, size, dtype=like.dtype, device=like.device)
    return anygrad.stack(hidden)


def _cat(outputs):
    import anygrad

    return anygrad.cat(outputs, dim=-1)


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (gates input, forget, cell, output)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit (gates reset, update, new)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)


class _CellBase(Module):
    def __init__(self, input_size, hidden_size, bias, gates, device, dtype):
        super().__init__()
        import anygrad

        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        options = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(anygrad.empty(gates * hidden_size, input_size, **options))
        self.weight_hh = Parameter(anygrad.empty(gates * hidden_size, hidden_size, **options))
        if bias:
            self.bias_ih = Parameter(anygrad.empty(gates * hidden_size, **options))
            self.bias_hh = Parameter(anygrad.empty(gates * hidden_size, **options))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
        for parameter in self.parameters():
            init.uniform_(parameter, -bound, bound)

    def _zeros(self, input):
        import anygrad

        shape = (input.shape[0], self.hidden_size) if input.dim() == 2 else (self.hidden_size,)
        return anygrad.zeros(*shape, dtype=input.dtype, device=input.device)


class RNNCell(_CellBase):
    """One step of ``RNN``."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """The next hidden state."""
        hx = self._zeros(input) if hx is None else hx
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return _rnn_step(mode, F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)


class LSTMCell(_CellBase):
    """One step of ``LSTM``: ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        """The next hidden and cell states."""
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        return _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)


class GRUCell(_CellBase):
    """One step of ``GRU``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        """The next hidden state."""
        hx = self._zeros(input) if hx is None else hx
        return _gru_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)
