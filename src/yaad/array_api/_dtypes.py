"""The array API's dtypes, constants and data type functions, on NumPy's dtypes (a
tensor's ``dtype`` is a ``numpy.dtype``, equal to these)."""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

bool = np.bool_  # noqa: A001
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

e, inf, nan, pi = math.e, math.inf, math.nan, math.pi
newaxis = None

_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}
_GROUP = {"b": "b", "i": "iu", "u": "iu", "f": "fc", "c": "fc"}  # kinds that promote together


def _dtype(x: Any, name: str) -> np.dtype:
    """The NumPy dtype of a dtype, a tensor or an array."""
    dt = x if isinstance(x, (type, np.dtype, str)) else getattr(x, "dtype", x)
    try:
        return np.dtype(dt)
    except TypeError:
        raise TypeError(f"{name}: expected a dtype or an array, got {x!r}") from None


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is of ``kind`` (numpy.isdtype; the array API's).

    Parameters
    ----------
    dtype : dtype
    kind : dtype, str or tuple
        A dtype; ``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``,
        ``"real floating"``, ``"complex floating"``, ``"numeric"``; or a tuple of these.

    Returns
    -------
    bool
    """
    dt = _dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; one of {sorted(_KINDS)}")
        return dt.kind in _KINDS[kind]
    return dt == _dtype(kind, "isdtype")


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype that arrays (tensors), dtypes and Python scalars promote to
    (numpy.result_type; Python scalars are weak, as NumPy 2 and the standard have them).

    Returns
    -------
    numpy.dtype
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is needed")
    args = [a if isinstance(a, (type, np.dtype, str)) else getattr(a, "dtype", a)
            for a in arrays_and_dtypes]
    return np.result_type(*args)


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or a tensor) promotes to ``to`` by the standard's type
    promotion (no cross-kind casts: bool to int or int to float is False, unlike
    numpy.can_cast).

    Returns
    -------
    bool
    """
    a, b = _dtype(from_, "can_cast"), _dtype(to, "can_cast")
    if _GROUP.get(a.kind) != _GROUP.get(b.kind):
        return False
    return builtins.bool(np.result_type(a, b) == b)


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating point dtype (the array API's ``finfo``)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: Any


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype (the array API's ``iinfo``)."""

    bits: int
    max: int
    min: int
    dtype: Any


def finfo(type: Any, /) -> finfo_object:  # noqa: A002
    """Machine limits of a floating point dtype, as Python floats (numpy.finfo).

    Parameters
    ----------
    type : dtype or Tensor
        For a complex dtype, those of its real part.

    Returns
    -------
    finfo_object
    """
    f = np.finfo(_dtype(type, "finfo"))
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), f.dtype.type)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype (numpy.iinfo).

    Parameters
    ----------
    type : dtype or Tensor

    Returns
    -------
    iinfo_object
    """
    i = np.iinfo(_dtype(type, "iinfo"))
    return iinfo_object(int(i.bits), int(i.max), int(i.min), i.dtype.type)
