"""The PyTorch-style scripts in ``tests/scripts``, each run whole on the CPU in a fresh
interpreter and a temporary directory: each is a common kind of program (an MNIST CNN, word
language models with an LSTM and a transformer, a VAE, a DCGAN, LSTMCells under LBFGS in
float64, polynomial regression, a siamese network, fast neural style, super-resolution,
REINFORCE, a packed-sequence GRU classifier, a seq2seq with attention, a character RNN,
transfer learning on a ResNet, a 3-D U-Net, a 1-D signal CNN, a custom data pipeline, tensor
idioms, the "learning with examples" tutorial) written with PyTorch's API, its ``torch``
imports changed to ``anygrad``. Each asserts that it learns (an accuracy, a loss or a
perplexity reached on synthetic data), so this keeps whole programs working, not only
ops. ``DEVICE`` picks the device a script uses (``cpu`` here)."""

import os
import pathlib
import subprocess
import sys

import pytest

import anygrad

SCRIPTS = sorted((pathlib.Path(__file__).parent / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_script_runs_and_learns(script, tmp_path):
    package_root = str(pathlib.Path(anygrad.__file__).resolve().parent.parent)
    env = dict(os.environ, DEVICE="cpu", PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


def test_every_script_is_collected():
    assert len(SCRIPTS) >= 10
