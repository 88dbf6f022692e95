"""``anygrad.profiler.profile`` records the ops of its block with their counts, on the CPU and
the GPU: the table names them, sorting works, the Chrome trace is JSON, and misuse is an
error."""

import json

import pytest

import anygrad as torch
from anygrad.profiler import ProfilerActivity, profile


def test_profile_records_the_block(device, tmp_path):
    x = torch.randn(16, 16, device=device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(3):
            y = (x @ x).relu()
        y.sum().item()
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["matmul"].count == 3 and rows["relu"].count == 3
    assert rows["matmul"].device_time_total > 0
    table = prof.key_averages().table(sort_by="count", row_limit=2)
    assert "matmul" in table and len(table.splitlines()) == 4
    assert prof.event_count >= 7 and prof.total_us > 0
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    assert json.loads(path.read_text())
    # Nothing is recorded after the block.
    (x + x).sum()
    assert prof.key_averages()[0].count <= 3


def test_profiles_do_not_nest():
    with profile():
        with pytest.raises(ValueError, match="already being recorded"):
            with profile():
                pass
    with pytest.raises(NotImplementedError, match="schedule"):
        profile(schedule=lambda step: None)
    with pytest.raises(RuntimeError, match="nothing was recorded"):
        profile().key_averages()
