"""``yaad.optim``: optimizers and learning-rate schedulers with PyTorch's names.

>>> import numpy as np, yaad
>>> w = yaad.tensor(np.array([3.0 + 4.0j]), requires_grad=True)
>>> opt = yaad.optim.SGD([w], lr=0.25)
>>> for _ in range(2):
...     opt.zero_grad()
...     (w.real ** 2 + w.imag ** 2).sum().backward()  # |w|^2: the gradient is 2w
...     opt.step()
>>> w.data
array([0.75+1.j])
"""

from . import lr_scheduler
from .lr_scheduler import CosineAnnealingLR, ExponentialLR, LambdaLR, LRScheduler, StepLR
from .optimizer import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LRScheduler",
           "StepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "lr_scheduler"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
