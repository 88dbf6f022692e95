"""``anygrad.vision`` (torchvision's names): ``datasets`` (MNIST from IDX files on disk,
FashionMNIST), ``models`` (ResNets with torchvision's names) and ``transforms`` (Compose,
ToTensor, Normalize, Lambda, RandomHorizontalFlip)."""

from . import datasets, models, transforms  # noqa: F401
