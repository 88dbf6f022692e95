"""The MNIST example (``python/examples/mnist.py``) runs as a PyTorch user would run it and
learns: a short run on a few hundred images per device beats chance by far. MNIST lies at
``../shared/data/mnist`` beside the repository (``ANYGRAD_MNIST_DIR`` overrides); without it
the test skips, unless ``ANYGRAD_REQUIRE_DATA=1`` makes that a failure."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))


def mnist_dir():
    """The MNIST folder, or a skip (a failure where data is required)."""
    path = os.environ.get("ANYGRAD_MNIST_DIR", os.path.join(REPOSITORY, "..", "shared", "data", "mnist"))
    if not os.path.isfile(os.path.join(path, "t10k-labels-idx1-ubyte.gz")) and not os.path.isfile(
        os.path.join(path, "t10k-labels-idx1-ubyte")
    ):
        if os.environ.get("ANYGRAD_REQUIRE_DATA") == "1":
            pytest.fail(f"ANYGRAD_REQUIRE_DATA=1 but MNIST is not at {path}")
        pytest.skip(f"MNIST not found at {path}")
    return path


def test_mnist_example_learns(device, capsys):
    import mnist

    small = device != "cpu"  # lavapipe, a software GPU, is slow: fewer steps there
    args = [
        "--data", mnist_dir(), "--device", device, "--epochs", "1",
        "--limit-train", "160" if small else "960", "--limit-test", "100" if small else "300",
        "--batch-size", "32", "--test-batch-size", "100", "--log-interval", "1000",
    ]
    accuracy = mnist.main(args)
    output = capsys.readouterr().out
    assert f"device: {device}" in output
    assert "Test set: Average loss" in output
    assert accuracy > (25.0 if small else 60.0), output
