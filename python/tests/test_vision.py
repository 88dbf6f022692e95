"""``vision``: the ResNets have torchvision's parameter names and counts and run forward and
backward; MNIST's reader refuses damaged files and names missing ones."""

import gzip

import numpy as np
import pytest

import anygrad as torch
from anygrad.vision import datasets, models, transforms


def test_resnet18_has_torchvision_names_and_runs():
    model = models.resnet18(num_classes=10)
    keys = list(model.state_dict())
    assert len(keys) == 122 and len(list(model.parameters())) == 62
    assert keys[:3] == ["conv1.weight", "bn1.weight", "bn1.bias"]
    assert "layer2.0.downsample.0.weight" in keys and "layer4.1.bn2.running_var" in keys and keys[-1] == "fc.bias"
    out = model(torch.randn(2, 3, 32, 32))
    assert tuple(out.shape) == (2, 10)
    out.sum().backward()
    assert model.conv1.weight.grad is not None


def test_resnet50_names_and_no_downloads():
    model = models.resnet50()
    keys = list(model.state_dict())
    assert len(keys) == 320 and "layer1.0.conv3.weight" in keys and tuple(model.fc.weight.shape) == (1000, 2048)
    with pytest.raises(ValueError, match="downloads no weights"):
        models.resnet18(weights="IMAGENET1K_V1")


def write_idx(path, array):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))


def test_mnist_reads_torchvision_layout_and_reports_missing_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    images = np.arange(3 * 28 * 28).reshape(3, 28, 28) % 256
    write_idx(raw / "t10k-images-idx3-ubyte.gz", images)
    write_idx(raw / "t10k-labels-idx1-ubyte.gz", np.array([7, 2, 1]))
    ds = datasets.MNIST(tmp_path, train=False, download=True, transform=transforms.ToTensor())
    image, label = ds[1]
    assert len(ds) == 3 and label == 2 and tuple(image.shape) == (1, 28, 28)
    assert image.max().item() <= 1.0 and image.dtype == torch.float32
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        datasets.MNIST(tmp_path, train=True)
    (raw / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x09abc"))
    with pytest.raises(ValueError, match="header says 9"):
        datasets.MNIST(tmp_path, train=False)


def test_crops_and_pads_match_numpy():
    image = (np.arange(36).reshape(6, 6) % 256).astype(np.uint8)
    np.testing.assert_array_equal(transforms.CenterCrop(4)(image), image[1:5, 1:5])
    np.testing.assert_array_equal(transforms.Pad(1)(image), np.pad(image, 1))
    tensor = transforms.ToTensor()(image)
    np.testing.assert_allclose(transforms.CenterCrop(2)(tensor).numpy(), image[None, 2:4, 2:4] / 255.0, rtol=1e-6)
    np.testing.assert_allclose(transforms.Pad((1, 2))(tensor).numpy(), np.pad(image[None] / 255.0, ((0, 0), (2, 2), (1, 1))), rtol=1e-6)
    crops = [transforms.RandomCrop(6, padding=2)(tensor) for _ in range(20)]
    assert all(tuple(c.shape) == (1, 6, 6) for c in crops)
    assert len({tuple(c.numpy().ravel().tolist()) for c in crops}) > 1
    padded = np.pad(image, 2)
    crop = transforms.RandomCrop(6, padding=2)(image)
    assert any((padded[t:t + 6, l:l + 6] == crop).all() for t in range(5) for l in range(5))
    with pytest.raises(ValueError, match="larger than the image"):
        transforms.CenterCrop(8)(image)


def test_image_folder_reads_classes_and_pixels(tmp_path):
    import zlib
    import struct

    def png(path, rgb):
        raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(3))
        chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        header = struct.pack(">IIBBBBB", 2, 3, 8, 2, 0, 0, 0)
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

    for name, colour in (("cat", (255, 0, 0)), ("dog", (0, 0, 255))):
        (tmp_path / name).mkdir()
        png(tmp_path / name / "a.png", colour)
    folder = datasets.ImageFolder(tmp_path)
    assert folder.classes == ["cat", "dog"] and folder.class_to_idx == {"cat": 0, "dog": 1}
    assert len(folder) == 2 and folder.targets == [0, 1]
    image, label = folder[1]
    assert image.shape == (3, 2, 3) and label == 1 and image[0, 0].tolist() == [0, 0, 255]
    tensor, _ = datasets.ImageFolder(tmp_path, transform=transforms.ToTensor())[0]
    assert tuple(tensor.shape) == (3, 3, 2) and tensor[0].max().item() == 1.0
    (tmp_path / "dog" / "a.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="a.png: malformed input"):
        datasets.ImageFolder(tmp_path)[1]
    with pytest.raises(OSError, match="missing"):
        datasets.ImageFolder(tmp_path / "missing")


def _write_cifar(folder, names, labels_key, count, meta_name, meta_key, classes, seed):
    """Batches in CIFAR's Python layout (pickled dicts of a uint8 data matrix and labels)."""
    import pickle

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    written = []
    for name in names:
        data = rng.integers(0, 256, size=(count, 3072), dtype=np.uint8)
        labels = rng.integers(0, len(classes), size=count).tolist()
        with open(folder / name, "wb") as handle:
            pickle.dump({b"batch_label": b"batch", b"data": data, labels_key.encode(): labels}, handle, protocol=2)
        written.append((data, labels))
    with open(folder / meta_name, "wb") as handle:
        pickle.dump({meta_key: classes}, handle, protocol=2)
    return written


def test_cifar10_reads_the_python_batches(tmp_path):
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    train = _write_cifar(tmp_path / "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)],
                         "labels", 3, "batches.meta", "label_names", classes, seed=0)
    test = _write_cifar(tmp_path / "test-only" / "cifar-10-batches-py", ["test_batch"], "labels", 4,
                        "batches.meta", "label_names", classes, seed=1)
    dataset = datasets.CIFAR10(tmp_path, train=True, download=True)
    assert len(dataset) == 15 and dataset.classes == classes and dataset.class_to_idx["cat"] == 3
    image, label = dataset[4]  # the second image of the second batch
    data, labels = train[1]
    np.testing.assert_array_equal(image, data[1].reshape(3, 32, 32).transpose(1, 2, 0))
    assert label == labels[1] and dataset.targets[4] == labels[1]

    # Through ToTensor and Normalize into a batch, as a training script reads it.
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    tested = datasets.CIFAR10(tmp_path / "test-only", train=False, transform=transform)
    batch, targets = next(iter(torch.utils.data.DataLoader(tested, batch_size=4)))
    assert tuple(batch.shape) == (4, 3, 32, 32) and targets.tolist() == test[0][1]
    expected = test[0][0].reshape(4, 3, 32, 32).astype(np.float32) / 255.0 * 2.0 - 1.0
    np.testing.assert_allclose(batch.numpy(), expected, atol=1e-6)


def test_cifar100_uses_the_fine_labels(tmp_path):
    classes = [f"class{i}" for i in range(100)]
    written = _write_cifar(tmp_path / "cifar-100-python", ["train"], "fine_labels", 5, "meta",
                           "fine_label_names", classes, seed=2)
    dataset = datasets.CIFAR100(tmp_path)
    assert len(dataset) == 5 and dataset.targets == written[0][1] and len(dataset.classes) == 100


def test_cifar_errors_name_the_files_and_refuse_code(tmp_path):
    import os
    import pickle

    with pytest.raises(FileNotFoundError, match="data_batch_1.*cifar-10-batches-py"):
        datasets.CIFAR10(tmp_path, download=True)

    class RunsCode:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in ["test_batch", "batches.meta"]:
        with open(folder / name, "wb") as handle:
            pickle.dump({"data": RunsCode()}, handle, protocol=2)
    with pytest.raises(ValueError, match="test_batch: not a CIFAR batch.*system"):
        datasets.CIFAR10(tmp_path, train=False)
    assert not (tmp_path / "pwned").exists()

    (folder / "test_batch").write_bytes(b"\x80\x02}q\x00(X")  # a truncated pickle
    with pytest.raises(ValueError, match="test_batch: not a CIFAR batch"):
        datasets.CIFAR10(tmp_path, train=False)


def test_random_augmentations_follow_manual_seed():
    image = np.arange(5 * 6 * 3, dtype=np.uint8).reshape(5, 6, 3)
    augment = transforms.Compose([transforms.RandomCrop(4, padding=2), transforms.RandomHorizontalFlip()])

    def run():
        torch.manual_seed(17)
        return [augment(image).tolist() for _ in range(6)]

    first = run()
    assert first == run()
    assert len({str(crop) for crop in first}) > 1


def test_make_grid_tiles_like_torchvision():
    from anygrad.vision.utils import make_grid

    images = np.arange(5 * 1 * 2 * 3, dtype=np.float32).reshape(5, 1, 2, 3)
    grid = make_grid(torch.from_numpy(images), nrow=2, padding=1, pad_value=-1.0).numpy()
    # 3 rows of 2 columns of 2×3 images, one pixel of padding between and around, 3 channels.
    assert grid.shape == (3, 3 * 3 + 1, 2 * 4 + 1)
    expected = np.full((3, 10, 9), -1.0, dtype=np.float32)
    for index in range(5):
        row, column = divmod(index, 2)
        expected[:, 1 + 3 * row:3 + 3 * row, 1 + 4 * column:4 + 4 * column] = images[index, 0]
    np.testing.assert_array_equal(grid, expected)

    normalized = make_grid(torch.from_numpy(images[:2] * 2 - 3), normalize=True, padding=0).numpy()
    assert normalized.min() == 0.0 and normalized.max() == 1.0
    single = make_grid(torch.ones(3, 4, 4))
    assert tuple(single.shape) == (3, 4, 4)
    with pytest.raises(ValueError, match="value_range"):
        make_grid(torch.ones(2, 3, 4, 4), normalize=True, value_range=(0.0,))
    with pytest.raises(ValueError, match="nrow"):
        make_grid(torch.ones(2, 3, 4, 4), nrow=0)
    with pytest.raises(ValueError, match="no pixels"):
        make_grid(torch.ones(0, 3, 4, 4))


def test_save_image_writes_the_grid_as_png(tmp_path):
    from anygrad.vision.utils import make_grid, save_image

    batch = torch.rand(3, 3, 5, 4)
    folder = tmp_path / "images" / "grid"
    folder.mkdir(parents=True)
    save_image(batch, folder / "batch.png", nrow=2, padding=1)
    read, _ = datasets.ImageFolder(tmp_path / "images")[0]
    expected = (make_grid(batch, nrow=2, padding=1).numpy() * 255.0 + 0.5).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(read, expected.transpose(1, 2, 0))
    with pytest.raises(ValueError, match="PNG"):
        save_image(batch, tmp_path / "batch.jpg", format="jpeg")
    with pytest.raises(OSError, match="missing-folder"):
        save_image(batch, tmp_path / "missing-folder" / "batch.png")
