"""Gradient recording switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``inference_mode``, each a context manager and a decorator, as in PyTorch."""

import functools

from . import _native


class _GradMode:
    """A context manager and decorator that sets gradient recording on this thread."""

    _enabled = False

    def __enter__(self):
        _native.push_grad_mode(self._enabled)
        return self

    def __exit__(self, *exc):
        _native.pop_grad_mode()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with self.__class__.__new__(self.__class__) as _:
                return function(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Ops record no graph inside (evaluation, optimizer updates)."""

    _enabled = False


class enable_grad(_GradMode):
    """Ops record the graph inside, even within ``no_grad``."""

    _enabled = True


class inference_mode(_GradMode):
    """``no_grad`` under PyTorch's other name (``inference_mode(False)`` records)."""

    def __init__(self, mode=True):
        self._enabled = not mode

    def __call__(self, function):
        if not callable(function) or isinstance(function, bool):
            return inference_mode(function)
        mode = not self._enabled

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return function(*args, **kwargs)

        return wrapper


class set_grad_enabled(_GradMode):
    """Recording on (``True``) or off (``False``) inside; as a plain call it sets the mode
    until the matching exit, so use it as a context manager."""

    def __init__(self, mode):
        self._enabled = bool(mode)

    def __call__(self, function):
        enabled = self._enabled

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(enabled):
                return function(*args, **kwargs)

        return wrapper
