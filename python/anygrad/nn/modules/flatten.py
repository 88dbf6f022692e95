"""``Flatten`` and ``Unflatten``."""

from .module import Module


class Flatten(Module):
    """Merge dims ``start_dim..=end_dim`` (all but the batch by default)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        """The flattened input."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        """The unflattened input."""
        return input.unflatten(self.dim, list(self.unflattened_size))
