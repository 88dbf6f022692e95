"""Mixed precision (``torch.amp``): ``autocast`` runs matmuls and convolutions in float16 (or
``dtype=anygrad.bfloat16``: bfloat16) on a GPU (the library's autocast: other ops keep float32,
weights are cast once per step), and ``GradScaler`` scales the loss so float16 gradients do not
underflow, skipping steps whose gradients overflowed (bfloat16 keeps float32's range and needs
no scaler). On the CPU (``device_type="cpu"``) autocast runs in bfloat16 when asked for it with
``dtype=anygrad.bfloat16`` and otherwise leaves everything in float32.
"""

import functools

from . import _native


class autocast:
    """``with autocast("cuda"):`` (or ``device_type="gpu"``); a decorator too. ``dtype`` is
    float16 (the default on GPUs) or bfloat16 (the only one the CPU runs); ``enabled=False`` is a
    no-op scope."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        name = "float16" if dtype is None else getattr(dtype, "name", dtype)
        if name not in ("float16", "bfloat16"):
            raise ValueError(f"autocast: only float16 and bfloat16 are supported, got {dtype}")
        self.device_type = str(device_type)
        self.dtype_name = name
        on_cpu = self.device_type.startswith("cpu")
        self.enabled = bool(enabled) and (not on_cpu or (dtype is not None and name == "bfloat16"))
        self._entered = []

    def __enter__(self):
        if self.enabled:
            device = self.device_type if ":" in self.device_type else self.device_type + ":0"
            _native.push_autocast(device, self.dtype_name)
        self._entered.append(self.enabled)
        return self

    def __exit__(self, *exc):
        if self._entered.pop():
            _native.pop_autocast()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            dtype = getattr(_native, self.dtype_name)
            with autocast(self.device_type, dtype=dtype, enabled=self.enabled):
                return function(*args, **kwargs)

        return wrapper


def is_autocast_enabled(device_type=None):
    """Whether an autocast scope is active on this thread."""
    return _native.is_autocast_enabled()


class GradScaler:
    """Dynamic loss scaling: ``scaler.scale(loss).backward(); scaler.step(optimizer);
    scaler.update()``. A step whose gradients hold inf or NaN is skipped and the scale backs
    off; ``growth_interval`` clean steps in a row grow it."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        if growth_factor <= 1.0:
            raise ValueError("GradScaler: growth_factor should be > 1")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError("GradScaler: backoff_factor should be in (0, 1)")
        self._enabled = enabled
        self._scale = float(init_scale)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._unscaled = {}
        self._found_inf = {}

    def is_enabled(self):
        """Whether scaling is on."""
        return self._enabled

    def get_scale(self):
        """The current scale."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` times the scale (a tensor, or tensors in lists/tuples)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (once per step) and note whether any
        is inf or NaN."""
        if not self._enabled or id(optimizer) in self._unscaled:
            if self._enabled and self._unscaled.get(id(optimizer)):
                raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
            return
        # Each gradient divided in place by one kernel, every inf/NaN check gathered in one
        # flag per device and read back once (one wait for the GPU a step, as PyTorch's).
        owners = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        found = False
        if owners:
            found, replaced = _native.unscale_gradients([p.grad for p in owners], self._scale)
            for index, copy in replaced:
                owners[index].grad = copy
        self._unscaled[id(optimizer)] = True
        self._found_inf[id(optimizer)] = found

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done) and step, unless a gradient overflowed."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._found_inf.get(id(optimizer)):
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off after an overflow, grow after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker >= self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._unscaled.clear()
        self._found_inf.clear()

    def state_dict(self):
        """The scale and counters."""
        return {
            "scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state):
        """Restore ``state_dict()``."""
        self._scale = float(state["scale"])
        self._growth_factor = state["growth_factor"]
        self._backoff_factor = state["backoff_factor"]
        self._growth_interval = state["growth_interval"]
        self._growth_tracker = state["_growth_tracker"]
