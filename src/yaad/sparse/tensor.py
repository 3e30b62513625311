"""SparseTensor: sparse and matrix-free linear operators that products and solvers differentiate.

A :class:`SparseTensor` is a sum ``sum_k c_k A_k`` of terms kept apart (nothing is
densified or merged): ``c_k`` is a number or a 0-d tensor, ``A_k`` one of

- a fixed pattern with values (CSR ``indptr``/``indices`` and a ``values`` vector that
  may be a tensor requiring grad: gradients with respect to the nonzeros);
- a fixed SciPy sparse matrix or ``LinearOperator`` (no gradient for the operator);
- a Python function ``v -> A v`` written with yaad functions (matrix-free; gradients for
  every tensor it uses).

``theta * H1 + H2``, ``sum(theta[k] * H[k])``, ``H / 2``, ``-H``, ``H.T``, ``H.mH`` build
new sums lazily; ``H @ x`` and ``x @ H`` (``x`` a vector ``(n,)`` or a batch of column
vectors ``(n, m)``) evaluate them, recorded like any other operation, and memory stays
O(nnz). A SparseTensor is a Tensor only so that Python gives its operators priority over
a tensor's (``theta * H``, ``psi @ H``); it has no dense ``.data``.
"""

from __future__ import annotations

from numbers import Number
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from ..core.op import op
from ..core.tensor import Tensor
from ..ops.elementwise import conj, multiply, reciprocal
from ..ops.products import operand_handlers
from ..ops.reductions import sum as _sum
from ..ops.shape import (
    broadcast_to,
    columns,
    front,
    getitem,
    reshape,
    scatter_add,
    take,
    transpose,
)
from .array_operator import ArrayOperator

__all__ = ["SparseTensor", "asarray", "csr_array", "coo_array", "is_operator"]


def is_operator(x: Any) -> bool:
    """Whether ``x`` is a SciPy sparse matrix/array or a SciPy ``LinearOperator``."""
    return sps.issparse(x) or isinstance(x, spla.LinearOperator)


def _c(x: Any) -> Any:
    """conj(x) for complex values (recorded for tensors), x itself for real ones."""
    return conj(x) if x.dtype.kind == "c" else x


def _dense(x: Any) -> Any:
    """The result of a SciPy product as an ndarray (np.matrix results included)."""
    return np.asarray(x)


# ---- a fixed pattern with values ---------------------------------------------------------


class Pattern:
    """A CSR sparsity pattern (``indptr``, ``indices``, ``shape``), fixed; duplicates allowed
    (they add up). The rows of the nonzeros are made on first use (gradients)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray,
                 shape: tuple[int, ...]) -> None:
        self.indptr = indptr
        self.indices = indices
        self.shape = (int(shape[0]), int(shape[1]))
        self._rows: np.ndarray | None = None
        self._cache: tuple[Any, ...] = (None, None)  # (values array, SciPy matrix over them)

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @property
    def rows(self) -> np.ndarray:
        if self._rows is None:
            counts = np.diff(self.indptr)
            self._rows = np.repeat(np.arange(self.shape[0], dtype=self.indices.dtype), counts)
        return self._rows

    def matrix(self, values: np.ndarray) -> sps.csr_array:
        """The SciPy CSR matrix with these values (cached for the last values seen)."""
        cached, m = self._cache
        if cached is not values:
            m = sps.csr_array((values, self.indices, self.indptr), shape=self.shape)
            self._cache = (values, m)
        return m


def _pattern_mv(values: np.ndarray, x: np.ndarray, pattern: Pattern) -> Any:
    return _dense(pattern.matrix(values) @ x)


def _pattern_tmv(values: np.ndarray, x: np.ndarray, pattern: Pattern) -> Any:
    return _dense(pattern.matrix(values).T @ x)


def _gather(g: Any, x: Any, first: np.ndarray, second: np.ndarray) -> Any:
    """``sum_j g[first_k, j] x[second_k, j]`` per nonzero k (for a vector: no sum)."""
    prod = take(g, first, axis=0) * take(x, second, axis=0)
    return prod if prod.ndim == 1 else _sum(prod, axis=tuple(range(1, prod.ndim)))


# y = A(v) x: gx = A(v)^H g = A(conj v)^T g; gv[k] = g[row_k] conj(x[col_k]).
def _columns_batch(fn: Callable[..., Any], at: int) -> Callable[..., Any]:
    """The batching rule of a product ``fn`` of a fixed matrix and argument ``at`` (a
    vector or columns): the examples' columns side by side, one product."""
    def batch(dims: Sequence[Any], *args: Any) -> Any:
        if any(d is not None for k, d in enumerate(dims) if k != at):
            return NotImplemented
        cols, back = columns(args[at], dims[at])
        return back(fn(*args[:at], cols, *args[at + 1:]))

    return batch


def _pattern_batch(transposed: bool) -> Callable[..., Any]:
    """The batching rule of a product with the pattern's matrix: one product for batched
    right-hand sides; with batched values, the products of the nonzeros summed into their
    rows (one gather and one scatter for the whole batch)."""
    fn = (lambda v, x, p: pattern_tmv(v, x, p)) if transposed else (
        lambda v, x, p: pattern_mv(v, x, p))
    by_columns = _columns_batch(fn, 1)

    def batch(dims: Sequence[int | None], v: Any, x: Any, p: Pattern) -> Any:
        if dims[0] is None:
            return by_columns(dims, v, x, p)
        n = np.shape(v)[dims[0]]
        v = front(v, dims[0])
        x = front(x, dims[1]) if dims[1] is not None else broadcast_to(x, (n,) + np.shape(x))
        rows, cols = (p.indices, p.rows) if transposed else (p.rows, p.indices)
        m = p.shape[1] if transposed else p.shape[0]
        trailing = np.shape(x)[2:]
        prod = getitem(x, (slice(None), cols)) * reshape(v, np.shape(v) + (1,) * len(trailing))
        return scatter_add(prod, (slice(None), rows), (n, m) + trailing), 0

    return batch


pattern_mv: Callable[..., Any] = op(_pattern_mv, name="sparse.pattern_matmul", linear=(0, 1),
                                    save_ans=False, vjp=(
    lambda g, ans, v, x, p: _gather(g, _c(x), p.rows, p.indices),
    lambda g, ans, v, x, p: pattern_tmv(_c(v), g, p)), batch=_pattern_batch(False))
# y = A(v)^T x: gx = A(conj v) g; gv[k] = g[col_k] conj(x[row_k]).
pattern_tmv: Callable[..., Any] = op(
    _pattern_tmv, name="sparse.pattern_matmul_transposed", linear=(0, 1), save_ans=False,
    vjp=(
        lambda g, ans, v, x, p: _gather(g, _c(x), p.indices, p.rows),
        lambda g, ans, v, x, p: pattern_mv(_c(v), g, p)), batch=_pattern_batch(True))


class _PatternPart:
    """``A(values)`` or its transpose."""

    def __init__(self, pattern: Pattern, values: Any, trans: bool = False) -> None:
        self.pattern = pattern
        self.values = values
        self.trans = trans

    @property
    def shape(self) -> tuple[Any, ...]:
        s = self.pattern.shape
        return (s[1], s[0]) if self.trans else s

    @property
    def dtype(self) -> np.dtype:
        dtype: np.dtype = self.values.dtype
        return dtype

    @property
    def nnz(self) -> int:
        return self.pattern.nnz

    def mv(self, x: Any) -> Any:
        return (pattern_tmv if self.trans else pattern_mv)(self.values, x, self.pattern)

    def transposed(self) -> _PatternPart:
        return _PatternPart(self.pattern, self.values, not self.trans)

    def conjugated(self) -> _PatternPart:
        return _PatternPart(self.pattern, _c(self.values), self.trans)

    def scipy(self) -> Any:
        values = self.values.data if isinstance(self.values, Tensor) else self.values
        m = self.pattern.matrix(values)
        return m.T if self.trans else m


# ---- a fixed SciPy operator -----------------------------------------------------------------


def _adjoint(a: Any) -> Any:
    """The conjugate transpose of a SciPy operator, without copying where possible."""
    if isinstance(a, spla.LinearOperator):
        return a.H
    return a.T if a.dtype.kind != "c" else a.T.conj()


def _fixed_mv_vjp(g: Any, ans: Any, x: Any, a: Any) -> Any:
    if isinstance(a, spla.LinearOperator) or a.dtype.kind != "c":
        return fixed_mv(g, _adjoint(a))
    return conj(fixed_mv(conj(g), a.T))  # A^H g without a conjugated copy of A


fixed_mv: Callable[..., Any] = op(
    lambda x, a: _dense(a @ x), name="sparse.operator_matmul", linear=(0,), save_args=False,
    save_ans=False, vjp=_fixed_mv_vjp, batch=_columns_batch(lambda x, a: fixed_mv(x, a), 0))


class _FixedPart:
    """A SciPy sparse matrix or LinearOperator, constant."""

    def __init__(self, a: Any) -> None:
        self.a = a

    @property
    def shape(self) -> tuple[Any, ...]:
        return tuple(self.a.shape)

    @property
    def dtype(self) -> np.dtype:
        dtype: np.dtype = np.dtype(self.a.dtype)
        return dtype

    @property
    def nnz(self) -> int:
        return int(self.a.nnz) if sps.issparse(self.a) else 0

    def mv(self, x: Any) -> Any:
        return fixed_mv(x, self.a)

    def transposed(self) -> _FixedPart:
        return _FixedPart(self.a.T)

    def conjugated(self) -> _FixedPart:
        if self.a.dtype.kind != "c":
            return self
        if isinstance(self.a, spla.LinearOperator):
            return _FixedPart(self.a.H.T)
        return _FixedPart(self.a.conj())

    def scipy(self) -> Any:
        return self.a


# ---- a function ---------------------------------------------------------------------------


class _FunctionPart:
    """``v -> matvec(v)`` written with yaad functions, and optionally its adjoint."""

    def __init__(self, shape: tuple[int, ...], matvec: Callable[..., Any],
                 rmatvec: Callable[..., Any] | None, dtype: np.dtype) -> None:
        self.shape = (int(shape[0]), int(shape[1]))
        self.matvec = matvec
        self.rmatvec = rmatvec
        self.dtype = np.dtype(dtype)
        self.nnz = 0

    def mv(self, x: Any) -> Any:
        if x.ndim == 1:
            return self.matvec(x)
        from ..ops.shape import stack

        return stack([self.matvec(x[:, j]) for j in range(x.shape[1])], axis=1)

    def transposed(self) -> _FunctionPart:
        if self.rmatvec is None:
            raise NotImplementedError(
                "the transpose (or adjoint) of a yaad.sparse.linalg.LinearOperator needs its "
                "rmatvec=; give one (v -> A^H v), or multiply on the left only")
        f, r = self.matvec, self.rmatvec
        return _FunctionPart(self.shape[::-1], lambda v: _c(r(_c(v))),
                             lambda v: _c(f(_c(v))), self.dtype)

    def conjugated(self) -> _FunctionPart:
        f, r = self.matvec, self.rmatvec
        return _FunctionPart(self.shape, lambda v: _c(f(_c(v))),
                             None if r is None else lambda v: _c(r(_c(v))), self.dtype)

    def scipy(self) -> Any:
        raise TypeError("a yaad.sparse.linalg.LinearOperator given by a function has no "
                        "sparse matrix; use a matrix-free solver (eigsh, gmres, cg, minres, "
                        "expm_multiply)")


# ---- the sum of terms -----------------------------------------------------------------------


def _is_scalar(c: Any) -> bool:
    return isinstance(c, Number) or (hasattr(c, "shape") and tuple(c.shape) == () and
                                     np.dtype(c.dtype).kind in "biufc")


def _scaled(coef: Any, c: Any) -> Any:
    return c if coef is None else multiply(coef, c)


class SparseTensor(Tensor):
    """A sparse or matrix-free matrix ``sum_k c_k A_k`` (see the module docstring).

    Make one with :func:`asarray`, :func:`csr_array`, :func:`coo_array` or
    ``yaad.sparse.linalg.LinearOperator``; combine them with ``+``, ``-``, ``*`` and ``/``
    by scalars (numbers or 0-d tensors), ``.T``, ``.mH``, ``.conj()``; apply them with
    ``@`` to vectors ``(n,)`` or batches of column vectors ``(n, m)``.

    Attributes
    ----------
    shape : tuple
        ``(n_rows, n_cols)``.
    dtype : numpy.dtype
        The dtype of the products with a real vector.
    nnz : int
        Stored nonzeros over all sparse terms (0 for matrix-free ones).
    """

    __slots__ = ("terms", "_shape")
    terms: tuple[tuple[Any, Any], ...]  # (coefficient or None, part)
    _shape: tuple[int, int]

    def __init__(self, terms: Any, shape: tuple[Any, ...] | None = None) -> None:
        terms = tuple(terms)
        if not terms:
            raise ValueError("SparseTensor: no terms")
        shape = tuple(shape) if shape is not None else terms[0][1].shape
        for _, part in terms:
            if tuple(part.shape) != shape:
                raise ValueError(f"SparseTensor: terms of shapes {part.shape} and {shape} "
                                 f"cannot be added")
        self.terms = terms
        self._shape = shape
        self._node = None
        self.requires_grad = False

    # ---- attributes ----------------------------------------------------------------

    @property  # type: ignore[misc]  # read-only: a SparseTensor has no dense data
    def data(self) -> Any:
        raise TypeError(
            f"a yaad.sparse.SparseTensor (shape {self._shape}) has no dense data, so this "
            f"operation cannot take it: use H @ x, x @ H, +, -, * and / by scalars, "
            f"yaad.sparse.linalg, or H.todense() for a (small) dense tensor")

    _data = data  # (what yaad's op machinery reads: the same refusal)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(*[part.dtype for _, part in self.terms],
                              *[_coef_dtype(c) for c, _ in self.terms if c is not None])

    @property
    def nnz(self) -> int:
        nnz: int = sum(part.nnz for _, part in self.terms)
        return nnz

    @property
    def size(self) -> int:
        return self._shape[0] * self._shape[1]

    def __repr__(self) -> str:
        return (f"SparseTensor(shape={self._shape}, dtype={self.dtype}, nnz={self.nnz}, "
                f"terms={len(self.terms)})")

    __str__ = __repr__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(f"{self!r} is not converted to a dense array implicitly; use "
                        f"H.todense() (differentiable) or H.to_scipy()")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # NumPy scalars and arrays on the other side (np.float64(2) * H, np.matmul(x, H))
        if method != "__call__" or kwargs or len(inputs) != 2:
            return NotImplemented
        a, b = inputs
        left = a is self
        other = b if left else a
        if ufunc is np.multiply:
            return self.__mul__(other)
        if ufunc is np.true_divide and left:
            return self.__truediv__(b)
        if ufunc is np.add:
            return self.__add__(other)
        if ufunc is np.subtract:
            return self.__sub__(b) if left else self.__rsub__(a)
        if ufunc is np.matmul:
            return self.__matmul__(b) if left else self.__rmatmul__(a)
        return NotImplemented

    def __len__(self) -> int:
        return self._shape[0]

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a SparseTensor is ambiguous")

    __hash__ = object.__hash__

    @property
    def values(self) -> Any:
        """The nonzeros of a single-pattern tensor (as made by :func:`csr_array`)."""
        part = self._single("values")
        if not isinstance(part, _PatternPart):
            raise TypeError("values: this SparseTensor is not a pattern with values; make "
                            "one with yaad.sparse.csr_array")
        return part.values

    def with_values(self, values: Any) -> SparseTensor:
        """The same pattern with other nonzeros (a vector of length ``nnz``, a tensor
        requiring grad for gradients with respect to them)."""
        part = self._single("with_values")
        if not isinstance(part, _PatternPart):
            part = _PatternPart(*_pattern_of(part.scipy()))
        if tuple(np.shape(values)) != (part.pattern.nnz,):
            raise ValueError(f"with_values: {np.shape(values)} values for a pattern with "
                             f"{part.pattern.nnz} nonzeros")
        return SparseTensor([(None, _PatternPart(part.pattern, values, part.trans))])

    def _single(self, what: str) -> Any:
        if len(self.terms) != 1 or self.terms[0][0] is not None:
            raise TypeError(f"{what}: this SparseTensor is a sum of {len(self.terms)} terms "
                            f"(or a scaled one); take it from a tensor made by csr_array")
        return self.terms[0][1]

    # ---- products ------------------------------------------------------------------

    def _check(self, x: Any, axis: int, where: str) -> None:
        n = self._shape[1] if axis == 0 else self._shape[0]
        nd = np.ndim(x)
        if nd not in (1, 2) or np.shape(x)[axis if nd == 2 else 0] != n:
            raise ValueError(
                f"{where}: a SparseTensor of shape {self._shape} multiplies vectors of length "
                f"{n} ({'(n,) or (n, m)' if axis == 0 else '(n,) or (m, n)'}), not an array "
                f"of shape {np.shape(x)}")

    def __matmul__(self, x: Any) -> Any:
        if isinstance(x, SparseTensor) or is_operator(x):
            return NotImplemented
        self._check(x, 0, "matmul")
        out = None
        for coef, part in self.terms:
            y = part.mv(x)
            if coef is not None:
                y = multiply(coef, y)
            out = y if out is None else out + y
        return out

    def __rmatmul__(self, x: Any) -> Any:
        if isinstance(x, SparseTensor) or is_operator(x):
            return NotImplemented
        self._check(x, 1, "matmul")
        if np.ndim(x) == 1:
            return self.T @ x
        return transpose(self.T @ transpose(x))

    def dot(self, x: Any) -> Any:
        """``self @ x``."""
        return self @ x

    # ---- algebra -------------------------------------------------------------------

    def _map(self, coef_fn: Callable[..., Any], part_fn: Callable[..., Any],
             shape: tuple[int, ...] | None = None) -> SparseTensor:
        return SparseTensor([(coef_fn(c), part_fn(p)) for c, p in self.terms], shape)

    def __mul__(self, c: Any) -> SparseTensor:
        if not _is_scalar(c):
            return NotImplemented
        return self._map(lambda k: _scaled(k, c), lambda p: p, self._shape)

    __rmul__ = __mul__

    def __truediv__(self, c: Any) -> SparseTensor:
        if not _is_scalar(c):
            return NotImplemented
        out: SparseTensor = self * (reciprocal(c) if isinstance(c, Tensor) else 1 / c)
        return out

    def __neg__(self) -> SparseTensor:
        return self * -1

    def __pos__(self) -> SparseTensor:
        return self

    def __add__(self, other: Any) -> Any:
        # sum() starts from 0 (numbers.Number declares no __eq__: hence the ignore)
        if isinstance(other, Number) and other == 0:  # type: ignore[comparison-overlap]
            return self
        other = _as_sparse_or_none(other)
        if other is None:
            return NotImplemented
        if other.shape != self._shape:
            raise ValueError(f"add: SparseTensors of shapes {self._shape} and {other.shape}")
        return SparseTensor(self.terms + other.terms, self._shape)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        other = _as_sparse_or_none(other)
        return NotImplemented if other is None else self + (-other)

    def __rsub__(self, other: Any) -> Any:
        return (-self) + other

    @property
    def T(self) -> SparseTensor:  # noqa: N802
        """The transpose."""
        return self._map(lambda k: k, lambda p: p.transposed(), self._shape[::-1])

    mT = T

    def transpose(self) -> SparseTensor:
        """The transpose."""
        return self.T

    def conj(self) -> SparseTensor:
        """The complex conjugate."""
        return self._map(lambda k: None if k is None else _c(_as_coef(k)),
                         lambda p: p.conjugated(), self._shape)

    conjugate = conj

    @property
    def mH(self) -> SparseTensor:  # noqa: N802
        """The conjugate transpose."""
        return self.T.conj()

    H = mH

    # ---- conversions ---------------------------------------------------------------

    def todense(self) -> Any:
        """The dense matrix, differentiable (``self @ eye``: for small operators)."""
        return self @ np.eye(self._shape[1], dtype=self.dtype)

    def to_scipy(self) -> Any:
        """The current value as a SciPy sparse matrix (no gradient): the sum of the terms,
        each with its coefficient. Raises for matrix-free terms."""
        total = None
        for coef, part in self.terms:
            m = part.scipy()
            if not sps.issparse(m):
                raise TypeError(f"to_scipy: a term is a {type(m).__name__}, not a sparse "
                                f"matrix")
            if coef is not None:
                m = m * np.asarray(coef.data if isinstance(coef, Tensor) else coef)[()]
            total = m if total is None else total + m
        return sps.csr_array(total)

    def scipy_operator(self) -> Any:
        """A SciPy sparse matrix when every term is sparse, else a ``LinearOperator``
        (values detached): for SciPy's solvers."""
        try:
            return self.to_scipy()
        except TypeError:
            return ArrayOperator(self, "to_scipy").scipy()


def _coef_dtype(c: Any) -> np.dtype:
    return np.result_type(c.data if isinstance(c, Tensor) else c)


def _as_coef(c: Any) -> Any:
    return c if hasattr(c, "dtype") else np.asarray(c)


def _pattern_of(a: Any) -> tuple[Any, ...]:
    """``(Pattern, values)`` of a SciPy sparse matrix (as CSR) or a dense 2-D array."""
    if not sps.issparse(a):
        a = np.asarray(a)
        if a.ndim != 2:
            raise ValueError(f"a sparse matrix must be 2-D, not of shape {a.shape}")
    m = sps.csr_array(a)
    return Pattern(m.indptr, m.indices, m.shape), m.data


def _as_sparse_or_none(x: Any) -> SparseTensor | None:
    if isinstance(x, SparseTensor):
        return x
    if is_operator(x):
        return asarray(x)
    return None


def asarray(a: Any) -> SparseTensor:
    """A SciPy sparse matrix or array (any format), a SciPy ``LinearOperator`` or a dense
    2-D array as a constant :class:`SparseTensor` (no copy of a sparse matrix).

    Parameters
    ----------
    a : scipy.sparse matrix/array, scipy.sparse.linalg.LinearOperator, SparseTensor or
        array_like

    Returns
    -------
    SparseTensor
    """
    if isinstance(a, SparseTensor):
        return a
    if isinstance(a, Tensor):
        raise TypeError("asarray: a dense tensor; use yaad.sparse.csr_array(t.detach()) for "
                        "a constant pattern, or with_values(...) for differentiable nonzeros")
    if is_operator(a):
        if len(a.shape) != 2:
            raise ValueError(f"asarray: a sparse array of shape {a.shape}; it must be 2-D")
        return SparseTensor([(None, _FixedPart(a))])
    pattern, values = _pattern_of(a)
    return SparseTensor([(None, _PatternPart(pattern, values))])


def csr_array(arg: Any, shape: tuple[Any, ...] | None = None) -> SparseTensor:
    """A fixed sparsity pattern with values that may require grad (``scipy.sparse.csr_array``).

    Parameters
    ----------
    arg : tuple or matrix
        ``(data, indices, indptr)`` as in SciPy, where ``data`` may be a tensor requiring
        grad (gradients with respect to the nonzeros); or a SciPy sparse matrix / dense
        2-D array whose nonzeros become the (constant) values.
    shape : tuple, optional
        ``(n_rows, n_cols)``; required with ``(data, indices, indptr)`` unless it can be
        inferred.

    Returns
    -------
    SparseTensor
    """
    if isinstance(arg, tuple) and len(arg) == 3:
        data, indices, indptr = arg
        indices = np.asarray(indices)
        indptr = np.asarray(indptr)
        if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
            raise TypeError("csr_array: indices and indptr must be integer arrays")
        if shape is None:
            shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
        if indptr.size != shape[0] + 1 or indptr[-1] != indices.size:
            raise ValueError(f"csr_array: indptr of length {indptr.size} ending at "
                             f"{indptr[-1]} does not fit {indices.size} indices and "
                             f"{shape[0]} rows")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
            raise ValueError(f"csr_array: column indices outside [0, {shape[1]})")
        return _with_data(Pattern(indptr, indices, shape), data, "csr_array")
    return asarray(arg) if isinstance(arg, SparseTensor) else SparseTensor(
        [(None, _PatternPart(*_pattern_of(arg)))])


def coo_array(arg: tuple[Any, ...], shape: tuple[Any, ...] | None = None) -> SparseTensor:
    """A sparse matrix from coordinates, ``(data, (row, col))`` as in ``scipy.sparse.coo_array``.

    ``data`` may be a tensor requiring grad; repeated coordinates add up.

    Parameters
    ----------
    arg : tuple
        ``(data, (row, col))``.
    shape : tuple, optional
        ``(n_rows, n_cols)``; inferred from the largest indices if not given.

    Returns
    -------
    SparseTensor
    """
    data, (row, col) = arg
    row = np.asarray(row)
    col = np.asarray(col)
    if row.shape != col.shape or row.ndim != 1:
        raise ValueError(f"coo_array: row and col must be vectors of one length, not "
                         f"{row.shape} and {col.shape}")
    if shape is None:
        shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
    order = np.lexsort((col, row))
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=shape[0]), out=indptr[1:])
    if np.shape(data) != row.shape:
        raise ValueError(f"coo_array: {np.shape(data)} values for {row.size} coordinates")
    return _with_data(Pattern(indptr, col[order], shape), take(data, order), "coo_array")


def _with_data(pattern: Pattern, data: Any, where: str) -> SparseTensor:
    if not isinstance(data, Tensor):
        data = np.asarray(data)
    if tuple(data.shape) != (pattern.nnz,):
        raise ValueError(f"{where}: {tuple(data.shape)} values for {pattern.nnz} nonzeros")
    if np.dtype(data.dtype).kind not in "fc":
        data = data.astype(float) if not isinstance(data, Tensor) else data
    return SparseTensor([(None, _PatternPart(pattern, data))])


WRAPPED = ("this tensor holds a SciPy sparse matrix: tensor * sparse_matrix cannot be "
           "recorded by NumPy. Wrap the matrix first: theta * yaad.sparse.asarray(H) "
           "(see docs/errors.md#sparse-operand)")


def _handler(x1: Any, x2: Any) -> Any:
    """yaad.matmul for SciPy sparse matrices, LinearOperators and SparseTensors."""
    for x in (x1, x2):
        if type(x) is Tensor and is_operator(x.data):
            raise TypeError(WRAPPED)
    if isinstance(x1, SparseTensor) or is_operator(x1):
        return asarray(x1) @ x2
    if isinstance(x2, SparseTensor) or is_operator(x2):
        return x1 @ asarray(x2)
    return NotImplemented


operand_handlers.append(_handler)
