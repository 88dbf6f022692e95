"""Random number generators (``torch.Generator``, ``torch.get_rng_state`` and friends).

anygrad draws every random tensor from a counter-based stream: a tensor's values are a
function of the stream's seed and of the counter of its first element, and a draw advances
the counter by its size. The global stream belongs to the library (``manual_seed``); a
``Generator`` keeps a ``(seed, counter)`` pair of its own, and a function given
``generator=g`` draws from g's pair and advances it instead of the global one, so that two
generators seeded alike give the same numbers whatever else the program draws.

The switch to a generator's pair is made under a lock, but the library's stream is one per
process: another Python thread that draws without a generator while a generator's draw runs
may draw from that generator's stream. Give each thread its own generator to keep them
apart."""

import contextlib
import os
import threading

from . import _native

#: PyTorch's default seed, so that an unseeded generator's ``initial_seed`` is the familiar one.
DEFAULT_SEED = 67280421310721

_MASK = (1 << 64) - 1
_SWITCH = threading.RLock()


class Generator:
    """A random stream of its own: ``manual_seed``, ``seed``, ``initial_seed``,
    ``get_state``/``set_state``. Pass it as ``generator=`` to ``rand``, ``randn``,
    ``randint``, ``randperm``, ``normal``, ``bernoulli``, ``multinomial``, ``random_split`` and
    the samplers. Its numbers are the same on every device."""

    def __init__(self, device="cpu"):
        self.device = _native.device(device) if isinstance(device, str) else device
        self._seed = DEFAULT_SEED
        self._counter = 0

    def manual_seed(self, seed):
        """Restart the stream from ``seed`` (an int; negative values wrap as in PyTorch)."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        self._seed = seed & _MASK
        self._counter = 0
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the seed."""
        seed = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed the stream started from."""
        return self._seed

    def get_state(self):
        """The stream's position as a ``uint8`` tensor (16 bytes: seed, counter)."""
        return _state_tensor(self._seed, self._counter)

    def set_state(self, new_state):
        """Continue from a state returned by ``get_state``."""
        self._seed, self._counter = _state_values(new_state, "Generator.set_state")
        return self

    def __repr__(self):
        return f"<anygrad.Generator seed={self._seed} counter={self._counter}>"


@contextlib.contextmanager
def drawing_from(generator):
    """Run the body's draws from ``generator``'s stream (the global one when None)."""
    if generator is None:
        yield
        return
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an anygrad.Generator, got {type(generator).__name__}")
    with _SWITCH:
        saved = _native.generator_state()
        _native.set_generator_state(generator._seed, generator._counter)
        try:
            yield
        finally:
            generator._seed, generator._counter = _native.generator_state()
            _native.set_generator_state(*saved)


def get_rng_state():
    """The global stream's position (a 16-byte ``uint8`` tensor)."""
    return _state_tensor(*_native.generator_state())


def set_rng_state(new_state):
    """Continue the global stream from ``get_rng_state``'s tensor."""
    _native.set_generator_state(*_state_values(new_state, "set_rng_state"))


def initial_seed():
    """The seed the global stream started from."""
    return _native.generator_state()[0]


def seed():
    """Seed the global stream from the operating system's entropy; returns the seed."""
    value = int.from_bytes(os.urandom(8), "little") >> 1
    _native.manual_seed(value)
    return value


def _state_tensor(seed_value, counter):
    import anygrad

    data = list(seed_value.to_bytes(8, "little") + counter.to_bytes(8, "little"))
    return anygrad.tensor(data, dtype=anygrad.uint8)


def _state_values(state, op):
    values = state.tolist() if hasattr(state, "tolist") else list(state)
    if len(values) != 16 or not all(isinstance(v, int) and 0 <= v < 256 for v in values):
        raise ValueError(f"{op}: expected the 16-byte state from get_state/get_rng_state")
    raw = bytes(values)
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
