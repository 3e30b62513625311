"""yaad as an array API namespace: the Python array API standard (2024.12), on tensors,
every function recorded.

``Tensor.__array_namespace__()`` returns this module, so array API code (SciPy with
``SCIPY_ARRAY_API=1``, scikit-learn with ``array_api_dispatch=True``, array-api-compat)
runs on tensors and is differentiated:

>>> import yaad
>>> x = yaad.tensor([1.0, 2.0], requires_grad=True)
>>> xp = x.__array_namespace__()
>>> xp.sum(xp.sort(x, descending=True) * xp.asarray([1.0, 0.0])).backward()
>>> x.grad
array([0., 1.])

Each name is yaad's function of that name, the same op: ``yaad`` keeps NumPy's names
and signatures, and NumPy 2 has the standard's names too (``yaad.acos``, ``yaad.concat``,
``yaad.unique_values``, ``yaad.float64``, ``yaad.isdtype``...). Only where the standard's
signature differs from NumPy's is there an adapter here, a thin one over yaad's ops:
``sort`` and ``argsort`` (``descending=``), ``clip`` (``min=``, ``max=``), ``astype``
(``device=``), ``expand_dims`` (``axis=0`` by default), ``reshape`` (``copy=``),
``meshgrid`` and ``broadcast_arrays`` (lists), the creation functions (keyword-only
``dtype=`` and ``device=``), ``fft.fftfreq`` and ``fft.rfftfreq`` (``dtype=``). The
deviations from the standard that remain are listed, with their reasons, in
docs/backends.md#array-api.
"""

from __future__ import annotations

import builtins
from typing import Any

from ..ops.composed import cumulative_prod, cumulative_sum, unstack
from ..ops.composed import meshgrid as _meshgrid
from ..ops.elementwise import (
    abs,  # noqa: A004
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    conj,
    copysign,
    cos,
    cosh,
    divide,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    nextafter,
    not_equal,
    positive,
    pow,  # noqa: A004
    real,
    reciprocal,
    remainder,
    round,  # noqa: A004
    sign,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trunc,
    where,
)
from ..ops.elementwise import clip as _clip
from ..ops.products import matmul, tensordot, vecdot
from ..ops.reductions import (
    all,  # noqa: A004
    any,  # noqa: A004
    argmax,
    argmin,
    count_nonzero,
    max,  # noqa: A004
    mean,
    min,  # noqa: A004
    nonzero,
    prod,
    searchsorted,
    std,
    sum,  # noqa: A004
    var,
)
from ..ops.reductions import argsort as _argsort
from ..ops.sets import isin, unique_all, unique_counts, unique_inverse, unique_values
from ..ops.shape import astype as _astype
from ..ops.shape import broadcast_arrays as _broadcast_arrays
from ..ops.shape import (
    broadcast_to,
    concat,
    diff,
    flip,
    matrix_transpose,
    moveaxis,
    permute_dims,
    repeat,
    roll,
    squeeze,
    stack,
    take,
    take_along_axis,
    tile,
    tril,
    triu,
)
from ..ops.shape import expand_dims as _expand_dims
from ..ops.shape import reshape as _reshape
from . import fft, linalg
from ._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from ._dtypes import (
    bool,  # noqa: A004
    can_cast,
    complex64,
    complex128,
    e,
    finfo,
    float32,
    float64,
    iinfo,
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
from ._info import __array_namespace_info__, check_device, from_dlpack

__array_api_version__ = "2024.12"


# ---- the adapters: the standard's signature where it is not NumPy's --------------------

def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """Cast to ``dtype`` (the array API's astype; :func:`yaad.astype` records it).

    Parameters
    ----------
    x : Tensor
    dtype : dtype
    copy : bool
        Copy even when the dtype does not change.
    device : None or "cpu"

    Returns
    -------
    Tensor
    """
    check_device(device, "astype")
    if not copy and x.dtype == dtype:
        return x
    return _astype(x, dtype, copy=True)


def _descending_order(x: Any, axis: int, stable: builtins.bool) -> Any:
    """The indices that sort ``x`` in descending order along ``axis``, ties in their
    order in ``x`` (a stable ascending sort of the reversed array, reversed)."""
    n = x.shape[axis]
    flipped = _argsort(flip(x, axis=axis), axis=axis, stable=stable)
    return subtract(n - 1, flip(flipped, axis=axis))


def argsort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Any:
    """The indices that sort ``x`` along ``axis`` (the array API's argsort).

    Parameters
    ----------
    x : Tensor
    axis : int
    descending : bool
    stable : bool
        Equal elements keep their order (also when descending).

    Returns
    -------
    Tensor
        Integer, without gradient.
    """
    if descending:
        return _descending_order(x, axis, stable)
    return _argsort(x, axis=axis, stable=stable)


def sort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True) -> Any:
    """A sorted copy of ``x`` along ``axis`` (the array API's sort); the gradient goes
    back through the permutation.

    Parameters
    ----------
    x : Tensor
    axis : int
    descending : bool
    stable : bool

    Returns
    -------
    Tensor
    """
    return take_along_axis(x, argsort(x, axis=axis, descending=descending, stable=stable),
                           axis=axis)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """``x`` limited to [min, max] (the array API's clip; :func:`yaad.clip` records it).

    Parameters
    ----------
    x : Tensor
    min : scalar, Tensor or None, optional
    max : scalar, Tensor or None, optional

    Returns
    -------
    Tensor
        Of the dtype of ``x``.
    """
    out = _clip(x, min, max)
    return out if out.dtype == x.dtype else _astype(out, x.dtype)


def expand_dims(x: Any, /, axis: int = 0) -> Any:
    """``x`` with an axis of length one inserted at ``axis`` (the array API's
    expand_dims).

    Parameters
    ----------
    x : Tensor
    axis : int

    Returns
    -------
    Tensor
    """
    return _expand_dims(x, axis)


def broadcast_arrays(*arrays: Any) -> list[Any]:
    """The arrays broadcast against each other, as a list (the array API's
    broadcast_arrays; NumPy's returns a tuple)."""
    return list(_broadcast_arrays(*arrays))


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids from 1-D arrays, as a list (the array API's meshgrid; NumPy's
    returns a tuple)."""
    return list(_meshgrid(*arrays, indexing=indexing))


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: builtins.bool | None = None) -> Any:
    """``x`` in a new shape (the array API's reshape).

    Parameters
    ----------
    x : Tensor
    shape : tuple of int
    copy : bool or None
        True: a copy; None or False: a view where NumPy can make one (False does not
        raise where it cannot: see docs/backends.md#array-api).

    Returns
    -------
    Tensor
    """
    out = _reshape(x, shape)
    return _astype(out, out.dtype, copy=True) if copy else out


# (``__array_api_version__``, ``__array_namespace_info__`` and ``newaxis`` are attributes
# too, left out of ``__all__``, which the reference page renders)
__all__ = [
    # constants and dtypes
    "e", "inf", "nan", "pi",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
    # creation
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # data types
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    # elementwise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal",
    "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag",
    "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log1p", "log2", "log10",
    "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
    "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "real",
    "reciprocal", "remainder", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt",
    "subtract", "tan", "tanh", "trunc",
    # indexing, linear algebra, manipulation
    "take", "take_along_axis", "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    # searching, sets, sorting, statistics, utilities
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
    # extensions
    "fft", "linalg",
]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
