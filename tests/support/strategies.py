"""Hypothesis strategies for yaad's reliability tests, and the vocabulary of input domains.

Strategies: shapes (0-d and 0-size included), broadcastable shapes, dtypes (float32,
float64, complex64, complex128), axes, keepdims, index expressions, and arrays whose
values lie in a :class:`Domain` (a union of intervals, for the real and the imaginary
parts). :class:`Call` is one drawn call (positional and keyword arguments).

The table that draws a call of every op with these, and says what NumPy computes for it,
is ``tests/op_cases/`` (``from tests.op_cases import CASES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.extra.numpy as npst
import numpy as np
from hypothesis import strategies as st

# ---------------------------------------------------------------------------------------
# Domains, dtypes, calls


@dataclass(frozen=True)
class Domain:
    """Where values are drawn: intervals for the real part and for the imaginary part."""

    real: tuple = ((-2.0, 2.0),)
    imag: tuple = ((-1.5, 1.5),)


def intervals_between_integers(lo: int = -3, hi: int = 3, margin: float = 0.1,
                               offset: float = 0.0) -> tuple:
    """``(k + offset + margin, k + 1 + offset - margin)`` for k in [lo, hi)."""
    return tuple((k + offset + margin, k + 1 + offset - margin) for k in range(lo, hi))


ANY = Domain()
POS = Domain(real=((0.3, 3.0),))
RIGHT = Domain(real=((0.3, 3.0),), imag=((-2.0, 2.0),))  # complex: right half plane
UNIT = Domain(real=((-0.85, 0.85),), imag=((-0.8, 0.8),))
NONZERO = Domain(real=((-3.0, -0.3), (0.3, 3.0)), imag=((-2.0, -0.3), (0.3, 2.0)))
NONINT = Domain(real=intervals_between_integers())
SMALL = Domain(real=((-1.0, 1.0),), imag=((-1.0, 1.0),))
GT1 = Domain(real=((1.2, 3.0),), imag=((-2.0, 2.0),))
PROB = Domain(real=((0.05, 0.95),))
HALVES = intervals_between_integers(offset=0.5)

F32, F64, C64, C128 = (np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))
REAL = (F32, F64)
ALL = (F32, F64, C64, C128)
INTS = (np.dtype("int64"), np.dtype("int32"), np.dtype("uint8"))


@dataclass(frozen=True)
class Ints:
    """Integer arrays in ``[lo, hi]`` (an order the fuzzer draws, not differentiated)."""

    lo: int
    hi: int


@dataclass(frozen=True)
class Call:
    """One call: positional and keyword arguments (arrays are the candidate inputs)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Shapes, dtypes, axes, indices


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0,
           max_side: int = 3) -> st.SearchStrategy:
    """Array shapes, 0-d and 0-size ones included by default."""
    return npst.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                             max_side=max_side)


def broadcastable_shapes(n: int = 2, min_dims: int = 0, max_dims: int = 3, min_side: int = 0,
                         max_side: int = 3) -> st.SearchStrategy:
    """``n`` shapes that broadcast together (a tuple of tuples)."""
    return npst.mutually_broadcastable_shapes(
        num_shapes=n, min_dims=min_dims, max_dims=max_dims, min_side=min_side,
        max_side=max_side).map(lambda b: b.input_shapes)


def dtypes(real_only: bool = False) -> st.SearchStrategy:
    """float32, float64 and, unless ``real_only``, complex64 and complex128."""
    return st.sampled_from(REAL if real_only else ALL)


def axis(ndim: int, allow_none: bool = True) -> st.SearchStrategy:
    """One valid axis (negative ones included), or None."""
    options = []
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
    if allow_none or not ndim:
        options.append(st.none())
    return st.one_of(options)


def axes(ndim: int) -> st.SearchStrategy:
    """The ``axis=`` of a reduction: None, one axis, or a tuple of distinct axes."""
    if not ndim:
        return st.sampled_from([None, ()])
    tuples = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).flatmap(
        lambda ax: st.tuples(*[st.sampled_from([a, a - ndim]) for a in ax]))
    return st.one_of(st.none(), st.integers(-ndim, ndim - 1), tuples)


keepdims = st.booleans


def index_expressions(shape: tuple) -> st.SearchStrategy:
    """Indices for an array of ``shape``: basic (ints, slices, None, Ellipsis), integer
    arrays (with repeats), boolean masks, and a slice mixed with an integer array."""
    options = [npst.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True)]
    if shape and all(shape):
        options.append(npst.integer_array_indices(
            shape, result_shape=npst.array_shapes(min_dims=1, max_dims=2, max_side=3)))
        options.append(npst.integer_array_indices(
            shape[:1], result_shape=npst.array_shapes(min_dims=1, max_dims=1, max_side=4)
        ).map(lambda t: t[0]))
    if shape:
        options.append(npst.arrays(np.bool_, shape))
        options.append(npst.arrays(np.bool_, shape[:1]))
    if len(shape) >= 2 and shape[1]:
        options.append(npst.arrays(np.intp, st.integers(1, 3),
                                   elements=st.integers(-shape[1], shape[1] - 1)).map(
            lambda a: (slice(None), a)))
    return st.one_of(options)


# ---------------------------------------------------------------------------------------
# Values


def _inward(lo: float, hi: float, width: int) -> tuple:
    """The interval shrunk to bounds that a float of ``width`` bits represents."""
    if width == 64:
        return lo, hi
    f32 = np.float32
    a, b = f32(lo), f32(hi)
    a = a if a >= lo else np.nextafter(a, f32(np.inf))
    b = b if b <= hi else np.nextafter(b, f32(-np.inf))
    return float(a), float(b)


def _floats(intervals: tuple, width: int) -> st.SearchStrategy:
    return st.one_of([st.floats(*_inward(lo, hi, width), width=width, allow_subnormal=False)
                      for lo, hi in intervals])


def elements(dtype: np.dtype, domain: Domain) -> st.SearchStrategy:
    """Scalars of ``dtype`` in ``domain``."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        width = 32 if dtype == C64 else 64
        return st.builds(complex, _floats(domain.real, width), _floats(domain.imag, width))
    if dtype.kind == "f":
        return _floats(domain.real, 32 if dtype == F32 else 64)
    if dtype.kind == "b":
        return st.booleans()
    lo = 0 if dtype.kind == "u" else int(domain.real[0][0])
    return st.integers(lo, int(domain.real[-1][1]))


def values(dtype: np.dtype, shape: tuple, domain: Domain = ANY,
           unique: bool = False) -> st.SearchStrategy:
    """Arrays of ``dtype`` and ``shape`` with values in ``domain``."""
    return npst.arrays(dtype, shape, elements=elements(dtype, domain), unique=unique)


def special_values(dtype: np.dtype, shape: tuple) -> st.SearchStrategy:
    """Arrays that may hold nan, inf, -0.0 and huge values (for tests and comparisons)."""
    if np.dtype(dtype).kind == "c":
        part = st.floats(width=32 if dtype == C64 else 64)
        return npst.arrays(dtype, shape, elements=st.builds(complex, part, part))
    return npst.arrays(dtype, shape, elements=st.floats(width=32 if dtype == F32 else 64))
