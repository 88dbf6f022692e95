"""Datasets: the bundled 8×8 digits (``load_digits``, scikit-learn's function),
``ImageFolder`` (PNG/JPEG files in one folder per class, decoded by the library) and, in
torchvision's layout, ``MNIST(root, train=, transform=, download=)`` reads the
IDX files (plain or gzipped) from ``root/MNIST/raw/`` (or from ``root`` itself), and
``CIFAR10``/``CIFAR100`` read the Python batches of ``root/cifar-10-batches-py/`` and
``root/cifar-100-python/``; this package downloads nothing, and a missing file is an error
naming the files to place."""

import gzip
import io
import os
import pickle

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


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """Unpickles only what CIFAR's batches hold (dicts, lists, numbers, strings, bytes and
    numpy arrays): a pickle that names any other callable is refused, so a doctored data file
    cannot run code."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("_codecs", "encode"),
    }

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refers to {module}.{name}, which a data batch never holds")
        return super().find_class(module, name)


def _read_batch(path):
    """The dict stored in one of CIFAR's Python batch files (keys decoded to ``str``)."""
    data = read_regular_bytes(path)
    try:
        entry = _ArraysOnlyUnpickler(io.BytesIO(data), encoding="latin1").load()
    except Exception as error:  # noqa: BLE001 -- any malformed pickle, reported with the path
        raise ValueError(f"{path}: not a CIFAR batch ({type(error).__name__}: {error})") from None
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: not a CIFAR batch (holds a {type(entry).__name__}, not a dict)")
    return {key.decode("latin1") if isinstance(key, bytes) else key: value for key, value in entry.items()}


class CIFAR10(Dataset):
    """CIFAR-10 in torchvision's layout: ``(image, label)`` pairs from the Python batches in
    ``root/cifar-10-batches-py/`` (``data_batch_1`` … ``data_batch_5`` for ``train=True``,
    ``test_batch`` otherwise; ``batches.meta`` gives ``classes``). The image is a 32×32×3
    uint8 numpy array given to ``transform`` (``ToTensor`` makes it a ``[3, 32, 32]`` float
    tensor in [0, 1]); ``data`` holds them all (N×32×32×3) and ``targets`` the labels (a
    list). The batches are pickles: only arrays, lists and dicts are unpickled from them."""

    base_folder = "cifar-10-batches-py"
    train_list = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"]
    test_list = ["test_batch"]
    meta_file = "batches.meta"
    meta_key = "label_names"
    labels_key = "labels"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        import numpy as np

        self.root = os.fspath(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        folder = os.path.join(self.root, self.base_folder)
        names = self.train_list if train else self.test_list
        missing = [name for name in names + [self.meta_file] if not os.path.isfile(os.path.join(folder, name))]
        if missing:
            raise FileNotFoundError(
                f"{type(self).__name__}: {', '.join(missing)} not found in {folder}; place the "
                f"extracted Python version of the data set there (anygrad downloads nothing, "
                f"download=True only accepts files already present)")
        images, self.targets = [], []
        for name in names:
            path = os.path.join(folder, name)
            entry = _read_batch(path)
            data = np.asarray(entry.get("data"))
            labels = entry.get(self.labels_key)
            if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
                raise ValueError(f"{path}: 'data' is {data.dtype} {data.shape}, not uint8 rows of 3072 values")
            if not isinstance(labels, (list, tuple, np.ndarray)) or len(labels) != len(data):
                raise ValueError(f"{path}: '{self.labels_key}' does not give one label per image")
            images.append(data.reshape(-1, 3, 32, 32))
            self.targets.extend(int(label) for label in labels)
        self.data = np.ascontiguousarray(np.concatenate(images).transpose(0, 2, 3, 1))
        meta = _read_batch(os.path.join(folder, self.meta_file))
        self.classes = [c.decode("latin1") if isinstance(c, bytes) else str(c) for c in meta.get(self.meta_key, [])]
        self.class_to_idx = {name: index for index, name in enumerate(self.classes)}
        if self.classes and not all(0 <= t < len(self.classes) for t in self.targets):
            raise ValueError(f"{folder}: a label is outside the {len(self.classes)} classes of {self.meta_file}")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = self.data[index], self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class CIFAR100(CIFAR10):
    """CIFAR-100 (``root/cifar-100-python/``: ``train``, ``test`` and ``meta``), with the 100
    fine labels as targets, as torchvision gives them."""

    base_folder = "cifar-100-python"
    train_list = ["train"]
    test_list = ["test"]
    meta_file = "meta"
    meta_key = "fine_label_names"
    labels_key = "fine_labels"


def load_digits(*, return_X_y=False, as_frame=False):
    """The 1,797 8×8 digits bundled with anygrad, as scikit-learn's ``load_digits`` gives them:
    ``(data, target)`` numpy arrays (float64 ``[1797, 64]`` intensities 0..16, int64 labels)
    with ``return_X_y=True``, else a dict with ``data``, ``target``, ``images`` and
    ``target_names``."""
    import numpy as np

    from .. import _native

    if as_frame:
        raise NotImplementedError("load_digits: as_frame=True needs pandas; anygrad returns numpy arrays")
    features, labels = _native.load_digits()
    data = features.numpy().astype(np.float64)
    target = labels.numpy().astype(np.int64)
    if return_X_y:
        return data, target
    return {"data": data, "target": target, "images": data.reshape(-1, 8, 8), "target_names": np.arange(10)}


class ImageFolder(Dataset):
    """Images in ``root/<class>/**/*.png|jpg|jpeg``, classes sorted by name as torchvision
    sorts them: ``(image, class index)`` pairs, the image an H×W×3 uint8 numpy array (H×W×1
    with ``gray=True``) given to ``transform`` (``ToTensor`` makes it C×H×W floats). Missing
    folders, empty classes and corrupt images are errors naming the path."""

    def __init__(self, root, transform=None, target_transform=None, loader=None, is_valid_file=None, gray=False):
        from .. import _native

        if loader is not None or is_valid_file is not None:
            raise NotImplementedError("ImageFolder: loader= and is_valid_file= are not supported; the library decodes PNG and JPEG")
        self.root = os.fspath(root)
        self.transform = transform
        self.target_transform = target_transform
        self._reader = _native.ImageFolderReader(self.root, gray)
        self.classes = self._reader.classes()
        self.class_to_idx = {name: index for index, name in enumerate(self.classes)}
        self.samples = []
        for index in range(len(self._reader)):
            path = self._reader.source(index)
            self.samples.append((path, self.class_to_idx[os.path.relpath(path, self.root).split(os.sep)[0]]))
        self.imgs = self.samples
        self.targets = [label for _, label in self.samples]

    def __len__(self):
        return len(self._reader)

    def __getitem__(self, index):
        import numpy as np

        if index < 0:
            index += len(self)
        pixels, height, width, channels, target = self._reader.load(index)
        image = np.frombuffer(pixels, dtype=np.uint8).reshape(height, width, channels)
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
