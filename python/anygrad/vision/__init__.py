"""``anygrad.vision`` (torchvision's names): ``datasets`` (MNIST from IDX files on disk,
FashionMNIST) and ``transforms`` (Compose, ToTensor, Normalize, Lambda, RandomHorizontalFlip)."""

from . import datasets, transforms  # noqa: F401
