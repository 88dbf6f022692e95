"""``torch.version``: the package's version; anygrad is built on no CUDA, ROCm or cuDNN, so
those entries are None (as in PyTorch's CPU builds)."""

__version__ = "0.1.0"
cuda = None
hip = None
git_version = None
