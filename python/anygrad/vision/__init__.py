"""``anygrad.vision`` (torchvision's names): ``datasets`` (MNIST and FashionMNIST from IDX
files on disk, CIFAR10 and CIFAR100 from their Python batches, ImageFolder), ``models``
(ResNets with torchvision's names), ``transforms`` (Compose, ToTensor, Normalize, Lambda,
RandomHorizontalFlip, crops, pads, Resize) and ``utils`` (``make_grid``)."""

from . import datasets, models, transforms, utils  # noqa: F401
