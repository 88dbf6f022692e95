"""``anygrad.profiler`` (``torch.profiler``'s common use): ``with profile() as prof:`` records
every op the block runs (name, calls, host time, device time from GPU timestamps where the
adapter has them, bytes allocated, CPU fallbacks); ``prof.key_averages().table(sort_by=...,
row_limit=...)`` prints them and ``prof.export_chrome_trace(path)`` writes a trace for Perfetto.
While profiling, each GPU op is followed by a synchronize (the profile shows where time goes,
not how fast an unprofiled run is). ``activities`` and the recording options are accepted;
``schedule`` is not supported. ``record_function(name)`` marks a range of user code (a context
manager or a decorator): the native profiler has no user ranges, so each range's wall time is
measured in Python and shows in ``key_averages()`` as a row named ``name`` (its ``count`` and
``cpu_time_total``; no device time), beside the ops it ran."""

import contextlib
import functools
import time

from . import _native

_recording_profiles = []


class record_function(contextlib.ContextDecorator):
    """Label a range of code for the profiler: ``with record_function("forward"): ...`` or
    ``@record_function("forward")`` on a function. While a ``profile`` records, each range's
    wall time (µs, from entering to leaving; the ops inside are also recorded as ops) is added
    to the row ``name`` of ``key_averages()``: ``count`` ranges, ``cpu_time_total`` their total
    time, ``device_time_total`` 0. Outside a profile it costs a clock read. ``args`` is accepted
    and ignored."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._starts = []

    def __enter__(self):
        self._starts.append(time.perf_counter_ns())
        return self

    def __exit__(self, *exc):
        start = self._starts.pop()
        elapsed_us = (time.perf_counter_ns() - start) / 1000.0
        for prof in _recording_profiles:
            prof._ranges.append((self.name, elapsed_us))
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return function(*args, **kwargs)

        return wrapped


class ProfilerActivity:
    """The activities ``profile`` accepts (every op is recorded whichever are named)."""

    CPU = "CPU"
    CUDA = "CUDA"


class EventAverage:
    """One op's totals: ``key``, ``count``, ``cpu_time_total`` and ``device_time_total`` (µs;
    ``cuda_time_total`` is the same), ``bytes_allocated``, ``cpu_fallbacks``."""

    def __init__(self, row):
        self.key = row["name"]
        self.count = row["count"]
        self.cpu_time_total = row["cpu_time_total"]
        self.device_time_total = row["device_time_total"]
        self.cuda_time_total = row["device_time_total"]
        self.self_cpu_time_total = row["cpu_time_total"]
        self.self_cuda_time_total = row["device_time_total"]
        self.bytes_allocated = row["bytes_allocated"]
        self.cpu_fallbacks = row["cpu_fallbacks"]

    def __repr__(self):
        return f"<EventAverage {self.key} count={self.count} device_time_total={self.device_time_total:.1f}us>"


class EventList(list):
    """The per-op averages, with ``table``."""

    def table(self, sort_by=None, row_limit=100, max_name_column_width=40, **kwargs):
        """A text table, sorted by ``sort_by`` (an attribute such as ``"cuda_time_total"``,
        ``"cpu_time_total"`` or ``"count"``; descending), at most ``row_limit`` rows."""
        rows = list(self)
        if sort_by is not None:
            key = sort_by.replace("self_", "")
            if not rows or not hasattr(rows[0], key):
                if rows:
                    raise ValueError(f"table: unknown sort_by {sort_by!r}")
            rows.sort(key=lambda row: getattr(row, key), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows])
        total = sum(r.device_time_total for r in self) or 1e-9
        header = f"{'Name':<{width}}  {'Calls':>7}  {'CPU total':>12}  {'Device total':>12}  {'Device %':>8}  {'Allocated':>11}"
        lines = [header, "-" * len(header)]
        for r in rows:
            flag = f"  CPU FALLBACK x{r.cpu_fallbacks}" if r.cpu_fallbacks else ""
            lines.append(
                f"{r.key[:width]:<{width}}  {r.count:>7}  {r.cpu_time_total:>9.1f} us  {r.device_time_total:>9.1f} us  "
                f"{100 * r.device_time_total / total:>7.1f}%  {r.bytes_allocated / 1e6:>8.2f} MB{flag}"
            )
        return "\n".join(lines)


class profile:
    """Record the ops of a ``with`` block (or between ``start()`` and ``stop()``)."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False, profile_memory=False, with_stack=False, with_flops=False, with_modules=False, **kwargs):
        if schedule is not None:
            raise NotImplementedError("anygrad.profiler.profile: schedule is not supported; profile the steps you want in the with block")
        self.activities = activities
        self.on_trace_ready = on_trace_ready
        self._recording = None
        self._ranges = []

    def start(self):
        """Start recording."""
        self._recording = _native.ProfileRecording.start()
        self._ranges = []
        _recording_profiles.append(self)

    def stop(self):
        """Stop recording (and call ``on_trace_ready``)."""
        if self in _recording_profiles:
            _recording_profiles.remove(self)
        if self._recording is not None:
            self._recording.stop()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def step(self):
        """Mark a step (without a schedule there is nothing to advance)."""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _finished(self):
        if self._recording is None:
            raise RuntimeError("anygrad.profiler.profile: nothing was recorded (use it as a context manager)")
        return self._recording

    def key_averages(self):
        """The per-op averages (``EventList``), then one row per ``record_function`` name."""
        events = EventList(EventAverage(row) for row in self._finished().key_averages())
        ranges = {}
        for name, elapsed_us in self._ranges:
            row = ranges.setdefault(name, {"name": name, "count": 0, "cpu_time_total": 0.0, "device_time_total": 0.0, "bytes_allocated": 0, "cpu_fallbacks": 0})
            row["count"] += 1
            row["cpu_time_total"] += elapsed_us
        events.extend(EventAverage(row) for row in ranges.values())
        return events

    def export_chrome_trace(self, path):
        """Write the recording as a Chrome trace."""
        self._finished().export_chrome_trace(str(path))

    @property
    def total_us(self):
        """Wall time of the recording, µs."""
        return self._finished().total_us()

    @property
    def event_count(self):
        """The number of ops recorded."""
        return self._finished().event_count()
