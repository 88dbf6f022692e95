"""The layers of ``anygrad.nn``, one concept per file."""

from .module import Module
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from .linear import Identity, Linear
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .activation import (
    ELU, GELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSoftmax, Mish, ReLU, ReLU6,
    Sigmoid, SiLU, Softmax, Softplus, Tanh,
)
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .dropout import Dropout, Dropout1d, Dropout2d
from .flatten import Flatten, Unflatten
from .sparse import Embedding
from .attention import MultiheadAttention
from .transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell
from .loss import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,
    NLLLoss, SmoothL1Loss,
)
