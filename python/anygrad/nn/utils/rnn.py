"""``nn.utils.rnn``: sequences of different lengths for the recurrent layers.

- ``pad_sequence`` stacks sequences into one tensor padded to the longest; ``unpad_sequence``
  splits it again.
- ``PackedSequence`` holds a batch of sequences without their padding, time-major as
  PyTorch's: ``data`` ``[sum of lengths, *]`` holds time step 0 of every sequence, then step 1
  of those still running, ...; ``batch_sizes`` (an int64 CPU tensor) how many run at each step,
  the sequences ordered by decreasing length (``sorted_indices`` / ``unsorted_indices`` map
  that order to the batch's and back, or are None when the batch came sorted).
- ``pack_padded_sequence`` / ``pad_packed_sequence`` convert between a padded batch and a
  ``PackedSequence``; ``pack_sequence`` / ``unpack_sequence`` between a list of sequences and
  one. ``RNN``, ``LSTM`` and ``GRU`` take a ``PackedSequence`` and return one (their states
  then hold each sequence's last real step).

Gradients flow through packing and padding (one ``index_select`` or ``index_put`` each)."""

from collections import namedtuple


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors ``[L_i, *]`` into ``[L_max, B, *]`` (``[B, L_max, *]`` with
    ``batch_first``), each filled up to the longest with ``padding_value`` after its elements
    (``padding_side="right"``) or before them ("left"). Gradients flow to the sequences."""
    import anygrad

    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for sequence in sequences:
        if tuple(sequence.shape[1:]) != trailing:
            raise RuntimeError(
                f"pad_sequence: every sequence must have the trailing shape {trailing}, got {tuple(sequence.shape[1:])}"
            )
    longest = max(sequence.shape[0] for sequence in sequences)
    padded = []
    for sequence in sequences:
        missing = longest - sequence.shape[0]
        if missing:
            filler = anygrad.full((missing,) + trailing, padding_value, dtype=sequence.dtype, device=sequence.device)
            parts = [sequence, filler] if padding_side == "right" else [filler, sequence]
            sequence = anygrad.cat(parts, 0)
        padded.append(sequence)
    return anygrad.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a right-padded batch (``[L_max, B, *]``, or ``[B, L_max, *]`` with
    ``batch_first``) as a list of ``[L_i, *]`` tensors."""
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [padded[index, :length] for index, length in enumerate(_length_list(lengths, "unpad_sequence"))]


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A batch of sequences without padding (see the module's description): ``data``,
    ``batch_sizes``, ``sorted_indices``, ``unsorted_indices``. Made by
    ``pack_padded_sequence`` and ``pack_sequence``; ``to``, ``cuda``, ``cpu`` and the dtype
    conversions apply to ``data`` (the indices stay as they are)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequences with ``data`` moved or converted (``Tensor.to``'s arguments);
        the index tensors follow it to its device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = self.sorted_indices, self.unsorted_indices
        if sorted_indices is not None:
            sorted_indices = sorted_indices.to(data.device)
            unsorted_indices = unsorted_indices.to(data.device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, device=None):
        """``to("cuda")``."""
        return self.to("cuda" if device is None else device)

    def cpu(self):
        """``to("cpu")``."""
        return self.to("cpu")

    def float(self):
        """``data`` as float32."""
        return self._with_data(self.data.float())

    def double(self):
        """``data`` as float64."""
        return self._with_data(self.data.double())

    def half(self):
        """``data`` as float16."""
        return self._with_data(self.data.half())

    def long(self):
        """``data`` as int64."""
        return self._with_data(self.data.long())

    def detach(self):
        """``data`` detached from the graph."""
        return self._with_data(self.data.detach())

    @property
    def is_cuda(self):
        """Whether ``data`` is on a GPU."""
        return self.data.device.type != "cpu"

    def is_pinned(self):
        """Pinned memory does not apply: False."""
        return False


def _length_list(lengths, op):
    """``lengths`` (a tensor, list or tuple) as a list of ints."""
    if hasattr(lengths, "tolist"):
        if lengths.dim() != 1:
            raise ValueError(f"{op}: expected a 1-D lengths tensor, got {lengths.dim()}-D")
        lengths = lengths.tolist()
    return [int(length) for length in lengths]


def _invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (an int64 tensor)."""
    import anygrad

    if permutation is None:
        return None
    inverse = anygrad.zeros(permutation.numel(), dtype=anygrad.int64, device=permutation.device)
    return inverse.scatter_add(0, permutation.long(), anygrad.arange(permutation.numel(), device=permutation.device))


def _packed_positions(batch_sizes, batch):
    """The rows of a ``[T * B, *]`` view of a time-major padded batch that a
    ``PackedSequence`` with ``batch_sizes`` holds, in its order: ``t * B + b`` for every step
    ``t`` and each of its first ``batch_sizes[t]`` sequences."""
    return [step * batch + row for step, size in enumerate(batch_sizes) for row in range(size)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """A ``PackedSequence`` of the padded batch ``input`` (``[T, B, *]``, or ``[B, T, *]`` with
    ``batch_first``) whose sequences have ``lengths`` (a list or a 1-D tensor; PyTorch wants it
    on the CPU, any device is read here). With ``enforce_sorted`` the lengths must be
    decreasing; without it the sequences are sorted here and ``sorted_indices`` records how."""
    import anygrad

    lengths = _length_list(lengths, "pack_padded_sequence")
    time_major = input.transpose(0, 1) if batch_first else input
    steps, batch = time_major.shape[0], time_major.shape[1]
    if len(lengths) != batch:
        raise ValueError(f"pack_padded_sequence: expected {batch} lengths (the batch size), got {len(lengths)}")
    if any(length <= 0 for length in lengths):
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    if max(lengths) > steps:
        raise RuntimeError(f"pack_padded_sequence: a length ({max(lengths)}) exceeds the sequence dimension ({steps})")
    sorted_indices = None
    if enforce_sorted:
        if any(lengths[i] < lengths[i + 1] for i in range(len(lengths) - 1)):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
    else:
        order = sorted(range(batch), key=lambda index: -lengths[index])
        lengths = [lengths[index] for index in order]
        sorted_indices = anygrad.tensor(order, dtype=anygrad.int64, device=input.device)
        time_major = time_major.index_select(1, sorted_indices)
    batch_sizes = [sum(1 for length in lengths if length > step) for step in range(lengths[0])]
    rows = time_major.reshape(steps * batch, *time_major.shape[2:])
    positions = anygrad.tensor(_packed_positions(batch_sizes, batch), dtype=anygrad.int64, device=input.device)
    data = rows.index_select(0, positions)
    return PackedSequence(data, anygrad.tensor(batch_sizes, dtype=anygrad.int64), sorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The padded batch of a ``PackedSequence`` and the lengths: ``(padded, lengths)``, with
    ``padded`` ``[T, B, *]`` (``[B, T, *]`` with ``batch_first``; ``T`` the longest length or
    ``total_length``) filled with ``padding_value`` after each sequence, in the batch's original
    order, and ``lengths`` an int64 CPU tensor."""
    import anygrad

    data, batch_sizes = sequence.data, [int(size) for size in sequence.batch_sizes.tolist()]
    batch, steps = batch_sizes[0], len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    trailing = tuple(data.shape[1:])
    positions = anygrad.tensor(_packed_positions(batch_sizes, batch), dtype=anygrad.int64, device=data.device)
    rows = anygrad.full((steps * batch,) + trailing, padding_value, dtype=data.dtype, device=data.device)
    padded = rows.index_put((positions,), data).reshape(steps, batch, *trailing)
    lengths = [sum(1 for size in batch_sizes if size > row) for row in range(batch)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices.to(data.device))
        lengths = [lengths[index] for index in sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, anygrad.tensor(lengths, dtype=anygrad.int64)


def pack_sequence(sequences, enforce_sorted=True):
    """A ``PackedSequence`` of a list of ``[L_i, *]`` tensors (decreasing lengths unless
    ``enforce_sorted=False``)."""
    lengths = [sequence.shape[0] for sequence in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of ``[L_i, *]`` tensors a ``PackedSequence`` holds, in the batch's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
