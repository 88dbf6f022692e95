"""The sequence example (``python/examples/sequences.py``) learns: in a short run on the CPU the
LSTM's next-value loss falls several times over and the transformer tells sorted sequences from
shuffled ones."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import sequences  # noqa: E402


def test_sequence_models_learn():
    (lstm_first, lstm_last), (tf_first, tf_last), accuracy = sequences.main(["--steps", "80", "--device", "cpu"])
    assert lstm_last < lstm_first / 4, (lstm_first, lstm_last)
    assert tf_last < tf_first / 2, (tf_first, tf_last)
    assert accuracy > 0.8, accuracy
