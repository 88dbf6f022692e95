"""``anygrad.nn`` (``torch.nn``): ``Module`` subclassed in Python, ``Parameter``, layers,
losses, ``functional``, ``init`` and ``utils``."""

from .parameter import Buffer, Parameter
from .modules import *  # noqa: F401,F403
from .modules import Module
from . import functional, init, utils  # noqa: F401
