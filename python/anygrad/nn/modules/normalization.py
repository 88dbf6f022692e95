"""Normalization layers: ``BatchNorm1d``, ``BatchNorm2d``, ``BatchNorm3d`` (running
statistics as buffers, ``num_batches_tracked``, ``momentum=None`` for a cumulative average),
``InstanceNorm1d``, ``InstanceNorm2d``, ``InstanceNorm3d``, ``LayerNorm``, ``RMSNorm`` and
``GroupNorm``."""

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from ... import _native


class _NormBase(Module):
    """What batch and instance norms share (PyTorch's ``_NormBase``): ``num_features``, ``eps``,
    ``momentum``, the affine ``weight`` and ``bias`` when ``affine``, and the running statistics
    as buffers when ``track_running_stats``."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(anygrad.ones(num_features, device=device, dtype=dtype))
            self.bias = Parameter(anygrad.zeros(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", anygrad.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", anygrad.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", anygrad.tensor(0, dtype=anygrad.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        """Running mean 0, variance 1, no batches."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()


class _BatchNorm(_NormBase):
    """Batch normalization over the channels (dim 1)."""

    _expected_dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        # Eval mode's folded scale and shift, kept between forwards while the statistics and
        # parameters are unchanged (an inference loop folds each batch norm once).
        self._fold_cache = _native.BatchNormFoldCache()

    def _check_input_dim(self, input):
        if input.dim() not in self._expected_dims:
            raise ValueError(
                f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} input (got {input.dim()}D input)"
            )

    def forward(self, input):
        """Normalize with the batch's statistics (training) or the running ones."""
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise RuntimeError(
                f"{type(self).__name__}: expected {self.num_features} channels, got input of shape {tuple(input.shape)}"
            )
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            from ... import no_grad

            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or not self.track_running_stats
        return _native.batch_norm(
            input,
            self.running_mean if not use_batch or self.track_running_stats else None,
            self.running_var if not use_batch or self.track_running_stats else None,
            self.weight,
            self.bias,
            use_batch,
            momentum,
            self.eps,
            self.__dict__.get("_fold_cache"),
        )

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``[N, C]`` or ``[N, C, L]`` inputs."""

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``[N, C, H, W]`` inputs."""

    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of ``[N, C, D, H, W]`` inputs."""

    _expected_dims = (5,)


class LayerNorm(Module):
    """Normalization over the trailing ``normalized_shape`` dims."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(anygrad.ones(*self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(anygrad.zeros(*self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        """Layer normalization."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims
    (``torch.nn.RMSNorm``): ``x / sqrt(mean(x**2) + eps) * weight``; ``eps=None`` is the input
    dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(anygrad.ones(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        """RMS normalization."""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalization over groups of channels."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(anygrad.ones(num_channels, device=device, dtype=dtype))
            self.bias = Parameter(anygrad.zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        """Group normalization."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNorm(_NormBase):
    """Instance normalization: each channel of each sample over its spatial dims. No affine
    parameters and no running statistics unless ``affine`` / ``track_running_stats``, as in
    PyTorch; with running statistics, evaluation mode normalizes with them."""

    _spatial_dims = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        """Instance normalization (an input without the batch dim is one sample)."""
        batched_dims = self._spatial_dims + 2
        if input.dim() not in (batched_dims - 1, batched_dims):
            raise ValueError(
                f"expected {batched_dims - 1}D or {batched_dims}D input (got {input.dim()}D input)"
            )
        unbatched = input.dim() == batched_dims - 1
        if unbatched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.num_features and (self.affine or self.track_running_stats):
            raise ValueError(
                f"{type(self).__name__}: expected input's size at dim=1 to match num_features ({self.num_features}), "
                f"but got: {input.shape[1]}."
            )
        momentum = self.momentum
        use_input_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            from ... import no_grad

            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        out = F.instance_norm(
            input,
            self.running_mean if self.track_running_stats else None,
            self.running_var if self.track_running_stats else None,
            self.weight,
            self.bias,
            use_input_stats,
            0.1 if momentum is None else momentum,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``[N, C, L]`` (or ``[C, L]``) inputs."""

    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``[N, C, H, W]`` (or ``[C, H, W]``) inputs."""

    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) inputs."""

    _spatial_dims = 3
