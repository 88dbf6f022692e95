"""The CIFAR-10 example (``python/examples/cifar10.py``, PyTorch's "Training a classifier"
tutorial) runs as a PyTorch user runs it and learns: on batches written in CIFAR's Python
layout whose classes differ by a colour pattern under noise, a short run is far above
chance on every device."""

import os
import pickle
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))


def write_learnable_cifar(root, per_batch, test_count):
    """Batches whose class k has channel k % 3 brightened in the region k // 3 of a 4×4
    layout of the image (plus uniform noise), so a CNN can tell the classes apart."""
    rng = np.random.default_rng(0)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)

    def batch(count):
        labels = rng.integers(0, 10, size=count)
        images = rng.integers(0, 120, size=(count, 3, 32, 32)).astype(np.uint8)
        for image, label in zip(images, labels):
            row, column = divmod(int(label) // 3 + 4 * (int(label) % 3 == 2), 4)
            image[int(label) % 3, row * 8:(row + 1) * 8, column * 8:(column + 1) * 8] += 120
        return {b"data": images.reshape(count, 3072), b"labels": labels.tolist()}

    for name in [f"data_batch_{i}" for i in range(1, 6)]:
        with open(folder / name, "wb") as handle:
            pickle.dump(batch(per_batch), handle, protocol=2)
    with open(folder / "test_batch", "wb") as handle:
        pickle.dump(batch(test_count), handle, protocol=2)
    with open(folder / "batches.meta", "wb") as handle:
        names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
        pickle.dump({b"label_names": [name.encode() for name in names]}, handle, protocol=2)


def test_cifar10_example_learns(device, tmp_path, capsys):
    import cifar10

    write_learnable_cifar(tmp_path, per_batch=120, test_count=100)
    accuracy = cifar10.main([
        "--data", str(tmp_path), "--device", device, "--epochs", "4",
        "--batch-size", "8", "--lr", "0.01", "--log-interval", "1000",
    ])
    output = capsys.readouterr().out
    assert f"device: {device}" in output and "grid (3, 36, 274)" in output
    assert "Accuracy for class:" in output
    assert accuracy > 50.0, output
