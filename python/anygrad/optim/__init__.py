"""``anygrad.optim`` (``torch.optim``): optimizers with parameter groups and state dicts, and
``lr_scheduler``."""

from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .lbfgs import LBFGS
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from . import lr_scheduler
