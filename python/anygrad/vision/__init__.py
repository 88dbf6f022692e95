"""``anygrad.vision`` (torchvision's names): ``datasets`` (MNIST and FashionMNIST from IDX files on disk,
CIFAR10 and CIFAR100 from their Python batches, ImageFolder), ``models`` (ResNets with torchvision's names) and ``transforms`` (Compose,
ToTensor, Normalize, Lambda, RandomHorizontalFlip)."""

from . import datasets, models, transforms  # noqa: F401
