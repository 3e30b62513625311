"""Set functions: the unique elements (NumPy 2's ``unique_values``, ``unique_counts``,
``unique_inverse``, ``unique_all``, the array API's), and membership (``isin``).

The indices (of first occurrences, of the inverse, the counts) are one op's integer
results, so a compiled replay finds them again on new values; the unique values are a
gather of the input at the first occurrences, and their gradient goes back there. Where
elements tie, the unique value stands for all its copies and the gradient reaches the
first one (a derivative that moves the copies apart changes the result's shape: it does
not exist).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core.op import op
from .shape import ravel, reshape, take


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _unique_indices(a: Any) -> tuple[Any, Any, Any]:
    _, index, inverse, counts = np.unique(np.ravel(a), return_index=True, return_inverse=True,
                                          return_counts=True, equal_nan=False)
    return index, inverse, counts


_indices = op(_unique_indices, name="unique_indices", nout=3, batch="per_example")


def _parts(x: Any) -> tuple[Any, Any, Any, Any]:
    index, inverse, counts = _indices(x)
    values = take(ravel(x), index)
    return values, index, reshape(inverse, np.shape(x)), counts


def unique_values(x: Any, /) -> Any:
    """The unique elements, sorted (numpy.unique_values; NaNs are all distinct).

    Parameters
    ----------
    x : Tensor or array_like

    Returns
    -------
    Tensor
        1-D; differentiable (a gather of ``x`` at the first occurrences).
    """
    return _parts(x)[0]


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The unique elements and how often each occurs (numpy.unique_counts).

    Parameters
    ----------
    x : Tensor or array_like

    Returns
    -------
    UniqueCountsResult
        ``values`` (differentiable, as in :func:`unique_values`) and ``counts``.
    """
    values, _, _, counts = _parts(x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The unique elements and where each element of ``x`` is among them
    (numpy.unique_inverse): ``values[inverse_indices]`` equals ``x``.

    Parameters
    ----------
    x : Tensor or array_like

    Returns
    -------
    UniqueInverseResult
        ``values`` (differentiable) and ``inverse_indices`` (the shape of ``x``).
    """
    values, _, inverse, _ = _parts(x)
    return UniqueInverseResult(values, inverse)


def unique_all(x: Any, /) -> UniqueAllResult:
    """The unique elements, the index of each one's first occurrence in the flattened
    ``x``, the inverse indices and the counts (numpy.unique_all).

    Parameters
    ----------
    x : Tensor or array_like

    Returns
    -------
    UniqueAllResult
        ``values`` (differentiable), ``indices``, ``inverse_indices``, ``counts``.
    """
    return UniqueAllResult(*_parts(x))


isin = op(lambda element, test_elements, assume_unique=False, invert=False, *, kind=None:
          np.isin(element, test_elements, assume_unique=assume_unique, invert=invert,
                  kind=kind), name="isin", batch="per_example")
isin.__doc__ = """Whether each element is in ``test_elements`` (numpy.isin; no gradient).

Parameters
----------
element : Tensor or array_like
test_elements : Tensor or array_like
assume_unique : bool
invert : bool
kind : str, optional

Returns
-------
Tensor
    Boolean, of the shape of ``element``.
"""

__all__ = ["unique_values", "unique_counts", "unique_inverse", "unique_all", "isin"]
