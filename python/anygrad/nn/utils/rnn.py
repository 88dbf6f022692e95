"""``nn.utils.rnn``: ``pad_sequence``, which stacks sequences of different lengths into one
tensor padded to the longest (``PackedSequence`` and packing are not supported yet)."""


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
