"""``torch.backends`` flags that scripts set: accepted, with anygrad's own behaviour."""


class _Flags:
    """A namespace of settable flags."""

    def __init__(self, **flags):
        self.__dict__.update(flags)

    def is_available(self):
        """These backends (cuDNN, MPS) do not exist in anygrad."""
        return False

    def version(self):
        """No cuDNN: None, as PyTorch answers without it."""
        return None


cudnn = _Flags(benchmark=False, deterministic=False, enabled=True, allow_tf32=False)
mps = _Flags()
cuda = _Flags(matmul=_Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                            allow_bf16_reduced_precision_reduction=True))
