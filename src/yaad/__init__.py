"""yaad: reverse-mode automatic differentiation on NumPy, PyTorch-like, exact on complex numbers.

>>> import numpy as np, yaad
>>> x = yaad.tensor(np.arange(3.0), requires_grad=True)
>>> (x ** 2).sum().backward()
>>> x.grad
array([0., 2., 4.])
"""

from __future__ import annotations

from . import methods as _methods
from .creation import *  # noqa: F403
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .op import Meta, Op, op, registry
from .ops.elementwise import *  # noqa: F403
from .ops.elementwise import abs, pow, round  # noqa: A004
from .ops.products import *  # noqa: F403
from .ops.reductions import *  # noqa: F403
from .ops.reductions import sum  # noqa: A004
from .ops.shape import *  # noqa: F403
from .tensor import Tensor, is_tensor

from . import autograd, testing  # noqa: E402  (they need the ops above)

__version__ = "0.1.0"

_methods.install(__import__(__name__))
