"""Tests of ``anygrad.profiler.record_function``: as a context manager and as a decorator its
ranges appear as rows of ``profile().key_averages()`` with their count and wall time, and
outside a profile it does nothing visible, on each device."""

import time

import anygrad
from anygrad.profiler import profile, record_function


def test_record_function_context_manager_adds_a_row(device):
    x = anygrad.randn(8, 8, device=device)
    with profile() as prof:
        for _ in range(2):
            with record_function("my_block"):
                time.sleep(0.01)
                (x @ x).sum().item()
    rows = {row.key: row for row in prof.key_averages()}
    assert "my_block" in rows
    row = rows["my_block"]
    assert row.count == 2
    assert row.cpu_time_total >= 2 * 10_000 * 0.9
    assert row.device_time_total == 0
    assert "my_block" in prof.key_averages().table(sort_by="cpu_time_total")
    # The ops inside the range are still recorded as ops of their own.
    assert len(rows) > 1


def test_record_function_decorator_and_nesting(device):
    @record_function("decorated")
    def work(x):
        with record_function("inner"):
            return (x * 2).sum()

    x = anygrad.ones(4, device=device)
    assert float(work(x)) == 8.0  # outside a profile it only runs the function
    with profile() as prof:
        work(x)
        work(x)
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["decorated"].count == 2
    assert rows["inner"].count == 2
    assert rows["decorated"].cpu_time_total >= rows["inner"].cpu_time_total
    assert work.__name__ == "work"


def test_record_function_outside_profile_is_not_kept():
    with record_function("before"):
        pass
    with profile() as prof:
        anygrad.ones(2).sum()
    with record_function("after"):
        pass
    keys = [row.key for row in prof.key_averages()]
    assert "before" not in keys and "after" not in keys
