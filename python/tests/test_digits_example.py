"""The digits example (``python/examples/digits.py``) learns: a few epochs of the MLP reach high
test accuracy on the CPU, and the GPU run learns too."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))


def test_digits_example_learns(device, capsys):
    import digits

    epochs = 5 if device == "cpu" else 2
    accuracy = digits.main(["--device", device, "--epochs", str(epochs)])
    output = capsys.readouterr().out
    assert f"device: {device}" in output
    assert accuracy > (90.0 if device == "cpu" else 80.0), output
