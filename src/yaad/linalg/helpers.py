"""The building blocks of the rules of ``yaad.linalg``: transposes, Hermitian parts,
diagonals, input checks and the batching rule of the solves.

They work on arrays and tensors alike, so the rules written with them give second
derivatives. Rules follow the package's convention: with the inner product
``<X, Y> = Re tr(X^H Y)``, the VJP is the adjoint of the JVP, so for a holomorphic map the
gradient is ``g * conj(f'(z))`` (``ga = -inv(a)^H g inv(a)^H`` for ``inv``).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from ..core.backend import dtype_kind
from ..ops.elementwise import conj, real
from ..ops.products import matmul
from ..ops.shape import (
    _values,
    aligned,
    columns,
    concatenate,
    diag_embed,
    diagonal,
    expand_dims,
    front,
    squeeze,
    swapaxes,
    tril,
    triu,
)

_F = TypeVar("_F", bound=Callable[..., Any])


def public(fn: _F) -> _F:
    """The op ``fn`` named as the function of ``yaad.linalg`` it is (``inv``); its op
    keeps the name ``linalg.inv`` for errors and the registry."""
    name: str = fn.op.name  # type: ignore[attr-defined]  # an op function carries its Op
    fn.__name__ = fn.__qualname__ = name.removeprefix("linalg.")
    return fn


def data_of(x: Any) -> Any:
    """The array behind ``x`` (for masks and checks, which carry no gradient; inside
    vmap, every example's)."""
    return _values(x)


def is_complex(x: Any) -> bool:
    """Whether ``x`` has a complex dtype (of any array library)."""
    return dtype_kind(x.dtype) == "c"


def mT(x: Any) -> Any:
    """The last two axes swapped."""
    return swapaxes(x, -1, -2)


def mH(x: Any) -> Any:
    """The conjugate transpose of the last two axes."""
    t = swapaxes(x, -1, -2)
    return conj(t) if is_complex(x) else t


def herm(x: Any) -> Any:
    """The Hermitian part ``(x + x^H) / 2``."""
    return (x + mH(x)) * 0.5


def col(v: Any) -> Any:
    """``v[..., :, None]``."""
    return expand_dims(v, -1)


def row(v: Any) -> Any:
    """``v[..., None, :]``."""
    return expand_dims(v, -2)


def mv(m: Any, x: Any, vec: bool) -> Any:
    """``m @ x`` where ``x`` is a batch of vectors (``vec``) or of matrices."""
    if vec:
        return squeeze(matmul(m, col(x)), -1)
    return matmul(m, x)


def outer_h(x: Any, y: Any, vec: bool) -> Any:
    """``x @ y^H`` for batches of matrices, ``x y^H`` (an outer product) for vectors."""
    if vec:
        return col(x) * conj(row(y)) if is_complex(y) else col(x) * row(y)
    return matmul(x, mH(y))


def diag(x: Any) -> Any:
    """The main diagonals of a batch of matrices (last axis)."""
    return diagonal(x, 0, -2, -1)


def diag_matrix(d: Any) -> Any:
    """A batch of diagonal matrices with ``d`` (last axis) on the diagonal."""
    n = d.shape[-1]
    return diag_embed(d, tuple(d.shape[:-1]) + (n, n), 0, -2, -1)


def tri(x: Any, lower: bool, strict: bool = False) -> Any:
    """The lower or upper triangle (without the diagonal when ``strict``)."""
    if lower:
        return tril(x, -1 if strict else 0)
    return triu(x, 1 if strict else 0)


def real_diag_matrix(x: Any) -> Any:
    """``diag(Re diag(x))``: the Hermitian part of the diagonal of ``x``."""
    d = diag(x)
    return diag_matrix(real(d) if is_complex(d) else d)


def as_array(x: Any) -> Any:
    """``x`` itself if it is an array (of any array library), else a NumPy array (lists)."""
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)


def square_matrices(name: str, a: Any) -> Any:
    """``a`` as an array, checked to be a (batch of) square matrices."""
    a = as_array(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(
            f"{name}: expected a (batch of) square matrices of shape (..., n, n), got shape "
            f"{a.shape}")
    return a


def solve_batch(fn: Any) -> Any:
    """The batching rule of a solve ``fn(a, b, *rest)`` for ``a x = b`` (``b``: a vector or
    matrices): with one matrix ``a``, a single solve for the examples' right-hand sides as
    columns; else stacks of matrices, each vector made a column."""
    def batch(dims: Any, a: Any, b: Any, *rest: Any, **kw: Any) -> Any:
        da, db = dims[:2]
        if any(d is not None for d in dims[2:]):
            return NotImplemented
        nda, ndb = np.ndim(a) - (da is not None), np.ndim(b) - (db is not None)
        if da is None and nda == 2 and ndb <= 2:
            cols, back = columns(b, db)
            return back(fn(a, cols, *rest, **kw))
        vec = ndb == 1
        b = front(b, db)
        a, b = aligned((a, expand_dims(b, -1) if vec else b), (da, db and 0), cores=(2, 2))
        out = fn(a, b, *rest, **kw)
        return (squeeze(out, -1) if vec else out), 0

    return batch


def concat_last(*xs: Any, axis: Any = -1) -> Any:
    """Concatenate along ``axis`` (default the last), for rules."""
    return concatenate(list(xs), axis=axis)
