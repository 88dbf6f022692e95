"""``anygrad.nn`` (``torch.nn``): ``Module`` subclassed in Python, ``Parameter``, layers,
losses, ``functional``, ``init``, ``utils`` and ``parallel`` (``DataParallel``)."""

from .parameter import Buffer, Parameter
from .modules import *  # noqa: F401,F403
from .modules import Module
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
