"""Shared fixtures: the devices each test runs on (the CPU, and the GPU when one exists or
``ANYGRAD_REQUIRE_GPU=1`` demands it), numpy comparison helpers."""

import os

import numpy as np
import pytest

import anygrad


def _devices():
    devices = ["cpu"]
    required = os.environ.get("ANYGRAD_REQUIRE_GPU") == "1"
    if required or anygrad.gpu.is_available():
        devices.append("gpu:0")
    return devices


@pytest.fixture(params=_devices())
def device(request):
    """Each device the suite covers; a required GPU that is missing fails here."""
    if request.param != "cpu" and not anygrad.gpu.is_available():
        pytest.fail("ANYGRAD_REQUIRE_GPU=1 but no GPU adapter is available")
    return request.param


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    """Compare a tensor (or number) with a numpy array."""
    if isinstance(actual, anygrad.Tensor):
        actual = actual.detach().cpu().numpy()
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol)
