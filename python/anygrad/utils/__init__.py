"""``anygrad.utils``: ``data`` (datasets and loaders), ``checkpoint`` and ``tensorboard``
(``SummaryWriter``)."""

from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import tensorboard  # noqa: F401
