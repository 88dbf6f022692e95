"""Datasets in torchvision's layout: ``MNIST(root, train=, transform=, download=)`` reads the
IDX files (plain or gzipped) from ``root/MNIST/raw/`` (or from ``root`` itself); this package
downloads nothing, and a missing file is an error naming the files to place."""

import gzip
import os

from ..files import read_regular_bytes
from ..utils.data import Dataset

_FILES = {
    True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _read_idx(path):
    """The array stored in an IDX file (``.gz`` decompressed)."""
    import numpy as np

    data = read_regular_bytes(path)
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    if data[2] != 0x08:
        raise ValueError(f"{path}: IDX element type {data[2]:#x} is not unsigned bytes")
    rank = data[3]
    header = 4 + 4 * rank
    if len(data) < header:
        raise ValueError(f"{path}: truncated IDX header")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(rank))
    count = 1
    for size in shape:
        count *= size
    if len(data) - header != count:
        raise ValueError(f"{path}: holds {len(data) - header} bytes of data, its header says {count}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


class MNIST(Dataset):
    """MNIST digits: ``(image, label)`` pairs, the image a PIL-free 28×28 uint8 array given to
    ``transform`` (``ToTensor`` makes it a ``[1, 28, 28]`` float tensor in [0, 1])."""

    folder_name = "MNIST"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root = os.fspath(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        images_name, labels_name = _FILES[bool(train)]
        images_path = self._find(images_name)
        labels_path = self._find(labels_name)
        import anygrad

        self.data = _read_idx(images_path)
        self.targets = anygrad.from_numpy(_read_idx(labels_path).astype("int64"))
        if len(self.data) != len(self.targets):
            raise ValueError(f"{images_path} has {len(self.data)} images but {labels_path} has {len(self.targets)} labels")
        self._labels = self.targets.tolist()

    def _find(self, name):
        """The path of ``name`` (plain or ``.gz``) under ``root/<folder>/raw`` or ``root``."""
        folders = [os.path.join(self.root, self.folder_name, "raw"), self.root]
        for folder in folders:
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        raise FileNotFoundError(
            f"{type(self).__name__}: {name} (or {name}.gz) not found in {folders[0]} or {folders[1]}; "
            f"place the four IDX files there (anygrad downloads nothing, download=True only accepts files already present)"
        )

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image = self.data[index]
        target = self._labels[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class FashionMNIST(MNIST):
    """Fashion-MNIST, in MNIST's file format (``root/FashionMNIST/raw/``)."""

    folder_name = "FashionMNIST"
