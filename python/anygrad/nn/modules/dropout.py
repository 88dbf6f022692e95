"""Dropout layers (active in training mode only)."""

from .module import Module
from .. import functional as F


class Dropout(Module):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) in training."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        """Dropout in training, the input in evaluation."""
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout):
    """Zero whole channels with probability ``p`` in training."""

    def forward(self, input):
        """Channel dropout in training."""
        return F.dropout2d(input, self.p, self.training)


class Dropout1d(Dropout2d):
    """Zero whole channels of ``[N, C, L]`` inputs in training."""

    def forward(self, input):
        """Channel dropout in training."""
        return F.dropout2d(input.unsqueeze(-1), self.p, self.training).squeeze(-1)


class Dropout3d(Dropout2d):
    """Zero whole channels of ``[N, C, D, H, W]`` inputs in training."""

    def forward(self, input):
        """Channel dropout in training."""
        return F.dropout3d(input, self.p, self.training)
