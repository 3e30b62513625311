"""``yaad.nn``: modules, layers, losses and initialisers with PyTorch's names.

>>> import yaad
>>> model = yaad.nn.Sequential(yaad.nn.Linear(4, 8), yaad.nn.Tanh(), yaad.nn.Linear(8, 2))
>>> sum(p.size for p in model.parameters())
58
"""

from . import functional, init
from .functional import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .layers import (
    GELU,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Identity,
    L1Loss,
    LayerNorm,
    Linear,
    LogSoftmax,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Softplus,
    Tanh,
)
from .module import Module, Parameter
from .stateless import functional_call, stack_module_state

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "Sequential",
           "ModuleList", "Identity", "ReLU", "Tanh", "Sigmoid", "GELU", "Softplus", "Softmax",
           "LogSoftmax", "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "mse_loss", "l1_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "functional", "init",
           "functional_call", "stack_module_state"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
