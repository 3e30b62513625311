"""yaad: reverse-mode automatic differentiation on NumPy, PyTorch-like, exact on complex numbers.

>>> import numpy as np, yaad
>>> x = yaad.tensor(np.arange(3.0), requires_grad=True)
>>> (x ** 2).sum().backward()
>>> x.grad
array([0., 2., 4.])
"""

from __future__ import annotations

# The order matters: the tensor and the op mechanism, then the ops, then what uses them.
from .core.tensor import Tensor, is_tensor
from .core.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .core.graph import ShapeDtype
from .core.op import Op, op, registry
from .creation import *
from .ops.elementwise import *
from .ops.elementwise import abs, pow, round  # noqa: A004
from .ops.shape import *
from .ops.reductions import *
from .ops.reductions import sum  # noqa: A004
from .ops.products import *
from .ops.nn import *
from .ops.composed import *
from .ops.convolution import convolve, correlate
from .ops.special_pairs import fresnel, sici
from .ops.sets import *
from . import linalg
from . import fft
from . import stats
from . import signal
from .linalg import vecdot
from . import anomaly, autograd, backend, testing
from . import func
from .function import Function, once_differentiable
from . import extend
from .modes.anomaly import detect_anomaly
from .modes.checkpoint import checkpoint
from . import nn, optim, optimize
from . import integrate, sparse
from .serialization import load, save
from .compile import CompileWarning, compile  # noqa: A004
from .core.lazy import compute
from . import interop
from . import array_api
from .array_api._dtypes import (  # NumPy's dtypes and the array API's dtype functions
    bool,  # noqa: A004
    complex64,
    complex128,
    e,
    float32,
    float64,
    inf,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    nan,
    newaxis,
    pi,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .array_api._info import from_dlpack
from .bindings import tensor_methods as _methods

__version__ = "0.1.0"

_methods.install(__import__(__name__))

# The public names (what ``dir(yaad)`` lists and the reference page shows): everything bound
# above but the internal modules (tests/project/test_public_names.py checks that no other
# leaks) and,
# as in yaad.array_api, ``newaxis`` (None: an attribute the reference page cannot render).
_INTERNAL = {"annotations", "bindings", "compiled", "core", "creation", "function", "implicit",
             "modes", "ode", "ops", "newaxis"}
__all__ = sorted(n for n in globals() if not n.startswith("_") and n not in _INTERNAL)


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
