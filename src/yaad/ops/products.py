"""Products: matmul, dot, vdot, inner, outer, tensordot, kron, trace and einsum.

NumPy names, signatures and semantics, batched where NumPy is, real and complex. For
complex inputs the VJPs follow PyTorch's convention: the products are holomorphic in
each input, so ``ga = g @ b^H`` and ``gb = a^H @ g`` (``vdot`` conjugates its first
input and is anti-holomorphic in it). All products are linear in each input, so their
JVPs are the products themselves with a tangent in place of an input.

``einsum`` accepts every NumPy subscript form. It is a chain of one- or two-operand
contractions along a path chosen by ``opt_einsum`` (cached per subscripts and shapes), so
its backward reuses the intermediates; each contraction's VJP is itself an einsum.
"""

from __future__ import annotations

import math
import string
from collections import Counter
from functools import lru_cache
from typing import Any, Callable

import numpy as np
import opt_einsum
from numpy.lib.array_utils import normalize_axis_index

from ..core.backend import dtype_kind, implements, namespace, native_dtype
from ..core.op import op
from ..core.presentation import dtype_of, ndim_of, shape_of
from .elementwise import conj, multiply
from .public_names import exported
from .shape import (
    aligned,
    broadcast_to,
    columns,
    expand_dims,
    flat_examples,
    front,
    moveaxis,
    reshape,
    squeeze,
    swapaxes,
    transpose,
)


def _mT(x):  # noqa: N802 - NumPy's name
    """``x.mT``, the last two axes swapped (a Dask array has no ``mT``)."""
    try:
        return x.mT
    except AttributeError:
        return swapaxes(x, -1, -2)


def _c(x):
    """conj(x) for complex values, x itself for real ones (no copy)."""
    if type(x) is np.ndarray:
        return x.conj() if x.dtype.kind == "c" else x
    if dtype_kind(x.dtype) != "c":
        return x
    return x.conj() if hasattr(x, "conj") else conj(x)


def _conj_product(f, g, others, target):
    """``f(g, *conj(others))``, the gradient for ``target`` of a multilinear product.

    When the conjugated operands are larger than ``g`` and the gradient together, compute
    ``conj(f(conj(g), *others))`` instead: two small conjugations, no large copy.
    """
    complex_ = False
    size = 0
    for o in others:  # (a loop, no generators: this runs for every product's gradient)
        d = o.dtype
        complex_ = complex_ or (d.kind if isinstance(d, np.dtype) else dtype_kind(d)) == "c"
        size += o.size
    if not complex_:
        return f(g, *others)
    if size > g.size + target.size:
        return _c(f(_c(g), *others))
    return f(g, *[_c(o) for o in others])


# ---- matmul, trace -------------------------------------------------------------------


class ScaledIdentity(np.lib.mixins.NDArrayOperatorsMixin):
    """``scale * I``: the gradient of a square matrix's trace, kept lazy.

    The matmul rules use it directly (``(s I) @ b^H = s b^H``: no matrix product), as
    YAAD.jl's ``IMatrix`` did; anything else sees it as the dense array it stands for
    (NumPy functions, operators and attributes densify it). The engine densifies it
    before a user can see it (hooks, ``.grad``, ``autograd.grad``).
    """

    __array_priority__ = 2000

    def __init__(self, scale: Any, n: int) -> None:
        self.scale = scale  # a NumPy scalar
        self.n = n
        self.dtype = scale.dtype
        self.shape = (n, n)
        self.ndim = 2
        self.size = n * n

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.eye(self.n, dtype=self.dtype) * self.scale
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        dense = tuple(np.asarray(x) if isinstance(x, ScaledIdentity) else x for x in inputs)
        return getattr(ufunc, method)(*dense, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        dense = tuple(np.asarray(x) if isinstance(x, ScaledIdentity) else x for x in args)
        return func(*dense, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # NumPy probing for array protocols
            raise AttributeError(name)
        return getattr(np.asarray(self), name)

    def __getitem__(self, idx: Any) -> Any:
        return np.asarray(self)[idx]

    def __len__(self) -> int:
        return self.n

    @property
    def mT(self) -> ScaledIdentity:  # noqa: N802 - NumPy's name
        return self

    T = mT

    def conj(self) -> ScaledIdentity:
        return self if self.dtype.kind != "c" else ScaledIdentity(np.conj(self.scale), self.n)


# First-order backward on NumPy arrays: the products of the rules below as NumPy's own calls
# (the op on arrays would only add its dispatch; the same function, so the same bits).
def _g_bh(g, b):
    return np.matmul(g, b.mT)


def _ah_g(g, a):
    return np.matmul(a.mT, g)


def _matmul_vjp_a(g, ans, a, b):
    if type(g) is np.ndarray and type(b) is np.ndarray and a.ndim > 1 and b.ndim > 1:
        return _conj_product(_g_bh, g, (b,), a)
    if type(g) is ScaledIdentity:
        return g.scale * _mT(_c(b))
    if a.ndim == 1 and b.ndim == 1:
        return g * _c(b)
    if b.ndim == 1:
        return multiply(expand_dims(g, -1), _c(b))
    if a.ndim == 1:
        return squeeze(_conj_product(lambda g, b: matmul(expand_dims(g, -2), _mT(b)), g, (b,),
                                     a), -2)
    return _conj_product(lambda g, b: matmul(g, _mT(b)), g, (b,), a)


def _matmul_vjp_b(g, ans, a, b):
    if type(g) is np.ndarray and type(a) is np.ndarray and a.ndim > 1 and b.ndim > 1:
        return _conj_product(_ah_g, g, (a,), b)
    if type(g) is ScaledIdentity:
        return _mT(_c(a)) * g.scale
    if a.ndim == 1 and b.ndim == 1:
        return g * _c(a)
    if a.ndim == 1:
        return multiply(expand_dims(_c(a), -1), expand_dims(g, -2))
    if b.ndim == 1:
        return squeeze(_conj_product(lambda g, a: matmul(_mT(a), expand_dims(g, -1)), g, (a,),
                                     b), -1)
    return _conj_product(lambda g, a: matmul(_mT(a), g), g, (a,), b)


def _matmul_batch(dims, a, b):
    da, db = dims
    nda, ndb = ndim_of(a) - (da is not None), ndim_of(b) - (db is not None)
    if db is None and ndb == 2 and nda <= 2:
        # rows (or matrices) of a times one matrix: a single product of (n*rows, k) by b
        a = front(a, da)
        rows = reshape(a, (math.prod(a.shape[:-1]), a.shape[-1]))
        return reshape(_matmul(rows, b), a.shape[:-1] + b.shape[-1:]), 0
    if da is None and nda == 2 and ndb <= 2:  # one matrix times the columns of b
        cols, back = columns(b, db)
        return back(_matmul(a, cols))
    # in general: vectors as matrices, the batch axis in front of aligned stacks
    va, vb = nda == 1, ndb == 1
    a, b = front(a, da), front(b, db)
    if va:
        a = expand_dims(a, -2)
    if vb:
        b = expand_dims(b, -1)
    a, b = aligned((a, b), (da and 0, db and 0), max(nda + va, ndb + vb))
    out = _matmul(a, b)
    if va or vb:
        out = squeeze(out, (-2, -1) if va and vb else -2 if va else -1)
    return out, 0


_matmul = op(np.matmul, name="matmul", save_ans=False, linear=True,
             vjp=(_matmul_vjp_a, _matmul_vjp_b), batch=_matmul_batch)

# Multipliers of operands that are not arrays (SciPy sparse matrices, LinearOperators):
# yaad.sparse registers one. Each returns NotImplemented for operands it does not know.
operand_handlers: list = []


def matmul(x1: Any, x2: Any, /) -> Any:
    """Matrix product with NumPy's broadcasting over leading axes (numpy.matmul).

    Parameters
    ----------
    x1 : Tensor or array_like
        Arrays of at least one dimension; 1-D arrays are vectors, as in NumPy. One of them
        may be a SciPy sparse matrix, a ``scipy.sparse.linalg.LinearOperator`` or a
        ``yaad.sparse`` tensor (see ``yaad.sparse``): the product stays sparse.
    x2 : Tensor or array_like
        Arrays of at least one dimension; 1-D arrays are vectors, as in NumPy. One of them
        may be a SciPy sparse matrix, a ``scipy.sparse.linalg.LinearOperator`` or a
        ``yaad.sparse`` tensor (see ``yaad.sparse``): the product stays sparse.

    Returns
    -------
    Tensor
        The product; for complex inputs the gradients are ``g @ x2^H`` and ``x1^H @ g``.
    """
    try:
        return _matmul(x1, x2)
    except (TypeError, ValueError):
        for handler in operand_handlers:
            out = handler(x1, x2)
            if out is not NotImplemented:
                return out
        raise


matmul.op = _matmul.op


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise TypeError("trace: out= is not supported (results are new tensors)")
    if not hasattr(a, "trace"):
        a = np.asarray(a)  # a list or a scalar, not an array
    return a.trace(offset, axis1, axis2, dtype)


@lru_cache(maxsize=256)
def _eye(n: int, m: int, k: int, dtype: np.dtype) -> np.ndarray:
    eye = np.eye(n, m, k=k, dtype=dtype)
    eye.flags.writeable = False  # shared between calls
    return eye


def _trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if (a.ndim == 2 and offset == 0 and a.shape[0] == a.shape[1]
            and isinstance(g, (np.ndarray, np.generic)) and g.ndim == 0):
        return ScaledIdentity(g[()], a.shape[0])
    nd = a.ndim
    axes = (axis1 % nd, axis2 % nd)
    n, m = a.shape[axis1], a.shape[axis2]
    eye = (_eye(n, m, offset, g.dtype) if isinstance(g, (np.ndarray, np.generic)) else
           namespace(g).eye(n, m, k=offset, dtype=g.dtype))
    g = reshape(g, g.shape + (1, 1)) * eye
    return g if axes == (nd - 2, nd - 1) else moveaxis(g, (-2, -1), axes)


def _trace_batch(dims, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    nd = ndim_of(a) - 1
    return trace(front(a, dims[0]), offset, normalize_axis_index(axis1, nd) + 1,
                 normalize_axis_index(axis2, nd) + 1, dtype, out), 0


trace = op(_trace, name="trace", save_args=False, save_ans=False, linear=(0,),
           vjp=_trace_vjp, batch=_trace_batch)
trace.__doc__ = """Sum along a diagonal (numpy.trace), batched through ``axis1``/``axis2``.

Parameters
----------
a : Tensor or array_like
    At least two dimensions.
offset : int
    The diagonal: 0 the main one, positive above, negative below.
axis1 : int, optional
    The axes of the matrices; the other axes are batch axes, kept in order.
axis2 : int, optional
    The axes of the matrices; the other axes are batch axes, kept in order.
dtype : data-type, optional
    The dtype of the result.

Returns
-------
Tensor
    The traces, of shape ``a.shape`` without ``axis1`` and ``axis2``.
"""


# ---- vdot, tensordot and the products built on them ----------------------------------


def _vdot(a, b):
    return np.vdot(a, b)


def _vdot_batch(dims, a, b):
    # conj(a) . b of each example's flattened arrays: a batched dot product
    a, b = (flat_examples(x, d) if d is not None else reshape(x, (-1,))
            for x, d in zip((a, b), dims))
    if dtype_kind(a.dtype) == "c":
        a = conj(a)
    return _contract("ij,ij->i" if a.ndim == b.ndim == 2 else
                     "ij,j->i" if a.ndim == 2 else "j,ij->i", a, b), 0


vdot = op(_vdot, name="vdot", save_ans=False, linear=True,
          vjp=(lambda g, ans, a, b: reshape(_c(g) * reshape(b, a.shape), a.shape),
               lambda g, ans, a, b: reshape(g * reshape(a, b.shape), b.shape)),
          batch=_vdot_batch)
vdot.__doc__ = """Dot product of two flattened arrays, conjugating the first (numpy.vdot).

Parameters
----------
a : Tensor or array_like
    Arrays with the same number of elements.
b : Tensor or array_like
    Arrays with the same number of elements.

Returns
-------
Tensor
    The 0-d sum ``conj(a).ravel() @ b.ravel()``.
"""


def _tensordot_axes(axes, nda: int, ndb: int) -> tuple[list, list]:
    """NumPy's ``axes`` argument as two lists of non-negative axes."""
    if isinstance(axes, (int, np.integer)):
        axes = int(axes)
        if axes < 0 or axes > min(nda, ndb):
            raise ValueError(f"tensordot: axes={axes} must be between 0 and the number of "
                             f"dimensions of both inputs ({nda} and {ndb})")
        return list(range(nda - axes, nda)), list(range(axes))
    try:
        ia, ib = axes
    except (TypeError, ValueError):
        raise ValueError(f"tensordot: axes must be an int or a pair of axis sequences, got "
                         f"{axes!r}") from None
    ia = [ia] if isinstance(ia, (int, np.integer)) else list(ia)
    ib = [ib] if isinstance(ib, (int, np.integer)) else list(ib)
    return [int(i) % nda for i in ia], [int(i) % ndb for i in ib]


def _tensordot(a, b, axes=2):
    if type(a) is np.ndarray and type(b) is np.ndarray:
        # NumPy's tensordot works out its transposes and shapes in Python on every call;
        # they depend on the shapes and axes alone: cached, then the same calls
        # (transpose, reshape, dot, reshape), so the same bits.
        try:
            plan = _tensordot_plan(_axes_key(axes), a.shape, b.shape)
        except TypeError:  # (axes NumPy reads otherwise, or not hashable: NumPy's way)
            plan = None
        if plan is not None:
            ta, sa, tb, sb, out = plan
            return np.dot(a.transpose(ta).reshape(sa), b.transpose(tb).reshape(sb)).reshape(out)
    _tensordot_axes(axes, ndim_of(a), ndim_of(b))  # a clear error for bad axes
    return np.tensordot(a, b, axes)


def _axes_key(axes) -> Any:
    """tensordot's ``axes`` as a hashable key: an int, or a pair of ints or int tuples."""
    if type(axes) is int:
        return axes
    ia, ib = axes
    return (ia if type(ia) is int else tuple([int(i) for i in ia]),
            ib if type(ib) is int else tuple([int(i) for i in ib]))


@lru_cache(maxsize=1024)
def _tensordot_plan(axes, sa: tuple, sb: tuple) -> tuple | None:
    """What numpy.tensordot computes from the shapes and axes: the transposes and shapes
    of both operands and of the result; None where NumPy would raise (NumPy's error)."""
    nda, ndb = len(sa), len(sb)
    if type(axes) is int:
        if axes < 0 or axes > min(nda, ndb):
            return None
        ia, ib = list(range(nda - axes, nda)), list(range(axes))
    else:
        ia, ib = ([x] if type(x) is int else list(x) for x in axes)
    if (len(ia) != len(ib) or len(set(ia)) != len(ia) or len(set(ib)) != len(ib)
            or not all(-nda <= i < nda for i in ia) or not all(-ndb <= i < ndb for i in ib)):
        return None
    ia = [i % nda for i in ia]
    ib = [i % ndb for i in ib]
    if len(set(ia)) != len(ia) or len(set(ib)) != len(ib):
        return None  # (the same axis given as i and i - n: NumPy's own result)
    if any(sa[i] != sb[j] for i, j in zip(ia, ib)):
        return None
    fa = [k for k in range(nda) if k not in ia]
    fb = [k for k in range(ndb) if k not in ib]
    n2 = math.prod(sa[i] for i in ia)
    return (tuple(fa + ia), (math.prod(sa[k] for k in fa), n2), tuple(ib + fb),
            (n2, math.prod(sb[k] for k in fb)), tuple(sa[k] for k in fa) + tuple(sb[k] for k in fb))


def _inverse(perm: list) -> tuple | None:
    """The permutation undoing ``perm``, or None when it is the identity."""
    inv = tuple(int(i) for i in np.argsort(perm))
    return None if inv == tuple(range(len(inv))) else inv


def _tensordot_vjp_a(g, ans, a, b, axes=2):
    ia, ib = _tensordot_axes(axes, a.ndim, b.ndim)
    fa = [i for i in range(a.ndim) if i not in ia]
    fb = [i for i in range(b.ndim) if i not in ib]
    # g has the axes fa + fb; contracting fb leaves fa + b's axes ib in increasing order,
    # each standing for the axis of a it was paired with.
    r = _conj_product(lambda g, b: tensordot(g, b, (list(range(len(fa), g.ndim)), fb)),
                      g, (b,), a)
    perm = _inverse(fa + [ia[ib.index(j)] for j in sorted(ib)])
    return r if perm is None else transpose(r, perm)


def _tensordot_vjp_b(g, ans, a, b, axes=2):
    ia, ib = _tensordot_axes(axes, a.ndim, b.ndim)
    fa = [i for i in range(a.ndim) if i not in ia]
    r = _conj_product(lambda g, a: tensordot(a, g, (fa, list(range(len(fa))))),
                      g, (a,), b)
    perm = _inverse([ib[ia.index(i)] for i in sorted(ia)] +
                    [i for i in range(b.ndim) if i not in ib])
    return r if perm is None else transpose(r, perm)


def _tensordot_batch(dims, a, b, axes=2):
    da, db = dims[:2]
    ia, ib = _tensordot_axes(axes, ndim_of(a) - (da is not None), ndim_of(b) - (db is not None))
    if da is not None and db is not None:  # a batch axis shared by both: an einsum
        na, nb = ndim_of(a) - 1, ndim_of(b) - 1
        la, lb = list(_LETTERS[1:na + 1]), list(_LETTERS[na + 1:na + nb + 1])
        for i, j in zip(ia, ib):
            lb[j] = la[i]
        out = "a" + "".join(c for k, c in enumerate(la) if k not in ia) + "".join(
            c for k, c in enumerate(lb) if k not in ib)
        return _contract(f"a{''.join(la)},a{''.join(lb)}->{out}", front(a, da), front(b, db)), 0
    if da is not None:
        return tensordot(front(a, da), b, ([i + 1 for i in ia], ib)), 0
    return tensordot(a, front(b, db), (ia, [j + 1 for j in ib])), ndim_of(a) - len(ia)


tensordot = op(_tensordot, name="tensordot", save_ans=False, linear=True,
               vjp=(_tensordot_vjp_a, _tensordot_vjp_b), batch=_tensordot_batch)
tensordot.__doc__ = """Sum products over the given axes (numpy.tensordot).

Parameters
----------
a : Tensor or array_like
    The inputs.
b : Tensor or array_like
    The inputs.
axes : int or (sequence of int, sequence of int)
    An int N sums over the last N axes of ``a`` and the first N of ``b``; a pair lists
    the axes of ``a`` and of ``b`` to contract, in matching order.

Returns
-------
Tensor
    The free axes of ``a`` followed by the free axes of ``b``.
"""


def dot(a: Any, b: Any) -> Any:
    """Dot product of two arrays (numpy.dot).

    Parameters
    ----------
    a : Tensor or array_like
        0-d: multiplication; 1-D and 2-D: inner and matrix products; N-D: a sum over the
        last axis of ``a`` and the second-to-last of ``b`` (the last if ``b`` is 1-D).
    b : Tensor or array_like
        0-d: multiplication; 1-D and 2-D: inner and matrix products; N-D: a sum over the
        last axis of ``a`` and the second-to-last of ``b`` (the last if ``b`` is 1-D).

    Returns
    -------
    Tensor
    """
    nda, ndb = ndim_of(a), ndim_of(b)
    if nda == 0 or ndb == 0:
        return multiply(a, b)
    if nda <= 2 and ndb <= 2 or ndb == 1 or nda == 1:
        return matmul(a, b)  # the same as numpy.dot for these shapes
    return tensordot(a, b, ([nda - 1], [ndb - 2]))


def inner(a: Any, b: Any) -> Any:
    """Inner product over the last axes, without conjugation (numpy.inner).

    Parameters
    ----------
    a : Tensor or array_like
        The last axes must have the same length; 0-d inputs multiply.
    b : Tensor or array_like
        The last axes must have the same length; 0-d inputs multiply.

    Returns
    -------
    Tensor
        Of shape ``a.shape[:-1] + b.shape[:-1]``.
    """
    nda, ndb = ndim_of(a), ndim_of(b)
    if nda == 0 or ndb == 0:
        return multiply(a, b)
    return tensordot(a, b, ([nda - 1], [ndb - 1]))


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """Outer product of two flattened arrays (numpy.outer).

    Parameters
    ----------
    a : Tensor or array_like
        Flattened to vectors of lengths M and N.
    b : Tensor or array_like
        Flattened to vectors of lengths M and N.

    Returns
    -------
    Tensor
        Of shape ``(M, N)``: ``out[i, j] = a[i] * b[j]``.
    """
    if out is not None:
        raise TypeError("outer: out= is not supported (results are new tensors)")
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def kron(a: Any, b: Any) -> Any:
    """Kronecker product (numpy.kron): blocks of ``b`` scaled by the entries of ``a``.

    Parameters
    ----------
    a : Tensor or array_like
        The shorter shape is padded with leading ones.
    b : Tensor or array_like
        The shorter shape is padded with leading ones.

    Returns
    -------
    Tensor
        Of shape ``a.shape * b.shape`` (elementwise, after padding).
    """
    sa, sb = shape_of(a), shape_of(b)
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    # Interleave the axes: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...).
    ar = reshape(a, tuple(x for s in sa for x in (s, 1)))
    br = reshape(b, tuple(x for s in sb for x in (1, s)))
    return reshape(ar * br, tuple(x * y for x, y in zip(sa, sb)))


# ---- einsum --------------------------------------------------------------------------

_LETTERS = string.ascii_letters
_INT_LABELS = string.ascii_uppercase + string.ascii_lowercase  # NumPy's order for 0..51


def _sublist_to_str(sub, what: str) -> str:
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
            out.append(_INT_LABELS[s])
        else:
            raise ValueError(f"einsum: {what} must contain integers in [0, 52) or Ellipsis, "
                             f"got {s!r}")
    return "".join(out)


def _split_args(args: tuple) -> tuple[str, tuple]:
    """Subscripts and operands, from the string form or the interleaved sublist form."""
    if not args:
        raise TypeError("einsum: no subscripts given")
    if isinstance(args[0], str):
        return args[0], args[1:]
    out = None
    if len(args) % 2:
        out, args = args[-1], args[:-1]
    ops, subs = args[0::2], args[1::2]
    s = ",".join(_sublist_to_str(x, f"sublist {k}") for k, x in enumerate(subs))
    if out is not None:
        s += "->" + _sublist_to_str(out, "the output sublist")
    return s, ops


def _parse(subscripts: str, ndims: tuple) -> tuple[tuple, str]:
    """Input and output labels, with ellipses replaced by unused letters."""
    s = "".join(subscripts.split())
    lhs, arrow, rhs = s.partition("->")
    if "->" in rhs or (not arrow and ("-" in s or ">" in s)):
        raise ValueError(f"einsum: malformed subscripts {subscripts!r}")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: the subscripts {subscripts!r} name {len(terms)} operands, "
                         f"but {len(ndims)} were given")
    for term in (*terms, rhs):
        if any(c not in _LETTERS and c != "." for c in term) or (
                term.count(".") != (3 if "..." in term else 0)):
            raise ValueError(f"einsum: invalid subscripts {term!r} in {subscripts!r}: use "
                             f"letters and at most one '...'")
    free = [c for c in _LETTERS if c not in s]
    extra = []
    for k, (term, nd) in enumerate(zip(terms, ndims)):
        named = len(term) - (3 if "..." in term else 0)
        if nd < named or ("..." not in term and nd != named):
            raise ValueError(f"einsum: operand {k} has {nd} dimensions, but its subscripts "
                             f"{term!r} name {named}")
        extra.append(nd - named)
    n_ell = max(extra, default=0)
    ell = "".join(free[:n_ell])
    if len(ell) < n_ell:
        raise ValueError("einsum: too many dimensions (at most 52 distinct labels)")
    inputs = tuple(t.replace("...", ell[n_ell - e:]) for t, e in zip(terms, extra))
    if not arrow:
        counts = Counter("".join(inputs))
        output = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        if "..." not in rhs and n_ell:
            raise ValueError(f"einsum: the output of {subscripts!r} has no '...', but the "
                             f"ellipsis covers {n_ell} dimensions; add '...' to the output")
        output = rhs.replace("...", ell)
        for c in output:
            if output.count(c) > 1:
                raise ValueError(f"einsum: label {c!r} appears twice in the output of "
                                 f"{subscripts!r}")
            if c not in "".join(inputs):
                raise ValueError(f"einsum: output label {c!r} of {subscripts!r} appears in "
                                 f"no input")
    return inputs, output


def _check_sizes(inputs: tuple, shapes: tuple, subscripts: str) -> None:
    """Each label has one size across operands (or 1, which broadcasts), as in NumPy."""
    sizes: dict = {}
    for k, (term, shape) in enumerate(zip(inputs, shapes)):
        mine: dict = {}
        for c, n in zip(term, shape):
            if mine.setdefault(c, n) != n:
                raise ValueError(f"einsum: label {c!r} repeats in operand {k} with different "
                                 f"lengths {mine[c]} and {n} (subscripts {subscripts!r}, "
                                 f"shapes {list(shapes)})")
            prev = sizes.get(c, 1)
            if n != prev and n != 1 and prev != 1:
                raise ValueError(f"einsum: label {c!r} has length {prev} in one operand and "
                                 f"{n} in operand {k}; they must match or be 1 (subscripts "
                                 f"{subscripts!r}, shapes {list(shapes)})")
            sizes[c] = max(n, prev)


def _optimize_key(optimize) -> Any:
    """A hashable form of NumPy's ``optimize`` argument for opt_einsum."""
    if optimize is True:
        return "auto"
    if optimize is False or optimize is None:
        return False
    if isinstance(optimize, str):
        return optimize
    if isinstance(optimize, (list, tuple)):
        items = list(optimize)
        if items and isinstance(items[0], str):
            if items[0] == "einsum_path":
                items = items[1:]
            elif len(items) == 2 and not isinstance(items[1], (list, tuple)):
                return (items[0], items[1])  # (strategy, memory limit), as NumPy allows
        return ("path", tuple(tuple(int(i) for i in step) for step in items))
    if isinstance(optimize, opt_einsum.paths.PathOptimizer):  # (cotengra's optimizers are)
        return optimize
    raise TypeError(f"einsum: optimize must be a bool, a strategy name ('greedy', "
                    f"'optimal', ...), a contraction path or a path optimizer "
                    f"(opt_einsum.paths.PathOptimizer, such as cotengra.HyperOptimizer()), "
                    f"got {optimize!r}")


@lru_cache(maxsize=4096)
def _plan(subscripts: str, shapes: tuple, optimize: Any) -> tuple:
    """How to contract operands of these shapes: canonical subscripts (one contraction
    over all operands), or the steps ``((positions, subscripts), ...)`` of a path.

    Positions are popped from the operand list in the order given and the step's result
    is appended, as in ``opt_einsum``'s contraction list.
    """
    inputs, output = _parse(subscripts, tuple(len(s) for s in shapes))
    _check_sizes(inputs, shapes, subscripts)
    canonical = ",".join(inputs) + "->" + output
    n = len(shapes)
    if n <= 2 or optimize is False:
        return canonical
    kw: dict = {}
    if isinstance(optimize, tuple) and optimize[0] == "path":
        kw["optimize"] = [list(step) for step in optimize[1]]
    elif isinstance(optimize, tuple):
        kw["optimize"], kw["memory_limit"] = optimize
    elif isinstance(optimize, str) or type(optimize).__module__.startswith("opt_einsum"):
        kw["optimize"] = optimize
    else:  # another library's path optimizer (cotengra's): its indices kept in order
        sizes: dict = {}
        for term, shape in zip(inputs, shapes):
            for c, k in zip(term, shape):
                sizes[c] = max(k, sizes.get(c, 1))
        kw["optimize"] = [list(step) for step in optimize([tuple(t) for t in inputs],
                                                          tuple(output), sizes)]
    _, info = opt_einsum.contract_path(canonical, *shapes, shapes=True, **kw)
    return tuple((tuple(step[0]), step[2]) for step in info.contraction_list)


def _run(steps: str | tuple, operands: tuple, contract: Callable | None = None) -> Any:
    """The contraction planned as ``steps``, each step by ``contract`` (the op by
    default; its forward where every operand is a NumPy array and nothing is recorded)."""
    contract = contract or _contract
    if isinstance(steps, str):
        return contract(steps, *operands)
    ops = list(operands)
    for positions, subscripts in steps:
        ops.append(contract(subscripts, *[ops.pop(i) for i in positions]))
    return ops[0]


def einsum(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K",
           casting: str = "safe", optimize: Any = True) -> Any:
    """Einstein summation (numpy.einsum), differentiable in every operand.

    Parameters
    ----------
    *operands
        ``subscripts, op0, op1, ...`` (e.g. ``"ij,jk->ik"``, ``"ii->"``, ``"...ii->..."``,
        implicit output when ``->`` is absent), or NumPy's interleaved form
        ``op0, sublist0, op1, sublist1, ..., [sublist_out]`` with integer labels.
    dtype : data-type, optional
        Cast the operands to this dtype first (following ``casting``).
    order : str
        Accepted for NumPy compatibility; the layout of the result is NumPy's choice.
    casting : str
        The casting rule for ``dtype``.
    optimize : bool, str, list or path optimizer
        The contraction order. True (the default): ``opt_einsum``'s 'auto' (optimal for a
        few operands, greedy for many); 'greedy', 'optimal' or another ``opt_einsum``
        strategy; a path such as ``['einsum_path', (0, 1), (0, 1)]``; a path optimizer
        (an ``opt_einsum.paths.PathOptimizer``, such as ``cotengra.HyperOptimizer()``);
        False: one contraction over all operands, as NumPy does. The order never changes the result
        beyond rounding. Paths are cached per subscripts and shapes.

    Returns
    -------
    Tensor
        The contraction. Its gradients are einsums too (cached the same way); a label
        repeated in one operand (a diagonal) gets its gradient placed on that diagonal.
    """
    if optimize is True and dtype is None and out is None and operands and type(operands[0]) is str:
        # The usual call (subscripts, then arrays or tensors): its plan from the cache
        # without normalising the arguments (an operand without a shape, a list, takes the
        # general way below).
        try:
            shapes = tuple([o.shape for o in operands[1:]])
            steps = _plan(operands[0], shapes, "auto")
        except (AttributeError, ValueError):
            pass
        else:
            if type(steps) is str:
                return _contract(steps, *operands[1:])
            return _run(steps, operands[1:])
    if out is not None:
        raise TypeError("einsum: out= is not supported (results are new tensors)")
    subscripts, ops = _split_args(operands)
    ops = tuple([o if hasattr(o, "shape") else np.asarray(o) for o in ops])
    if dtype is not None:
        ops = _cast_operands(ops, np.dtype(dtype), casting)
    shapes = tuple([o.shape for o in ops])
    try:
        steps = _plan(subscripts, shapes, _optimize_key(optimize))
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg if msg.startswith("einsum") else f"einsum: {msg}") from None
    return _run(steps, ops)


def _cast_operands(ops: tuple, dtype: np.dtype, casting: str) -> tuple:
    """einsum's operands cast to ``dtype`` (apart from einsum: its comprehension's
    variables would be cells on every call of einsum)."""
    from .shape import astype

    for k, o in enumerate(ops):
        if not np.can_cast(o.dtype, dtype, casting):
            raise TypeError(f"einsum: cannot cast operand {k} from {o.dtype} to {dtype} "
                            f"with casting={casting!r}")
    return tuple([o if o.dtype == dtype else astype(o, dtype) for o in ops])


# -- the contraction primitive: one op for one, two or (optimize=False) more operands


@lru_cache(maxsize=4096)
def _pair_plan(subscripts: str, sa: tuple, sb: tuple) -> tuple:
    """How to contract two operands: a broadcast product, a matmul, or numpy.einsum."""
    lhs, output = subscripts.split("->")
    ta, tb = lhs.split(",")
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return ("einsum",)
    summed = (set(ta) | set(tb)) - set(output)
    if not summed:
        # Every label survives: align both operands with the output and multiply.
        return ("mul", _align(ta, sa, output), _align(tb, sb, output))
    if not summed <= set(ta) & set(tb):
        return ("einsum",)  # a label summed within one operand
    size = dict(zip(ta, sa))
    if any(size.get(c, n) != n for c, n in zip(tb, sb)):
        return ("einsum",)  # broadcasting of length-1 labels
    size.update(zip(tb, sb))
    batch = [c for c in output if c in ta and c in tb]
    free_a = [c for c in output if c in ta and c not in tb]
    free_b = [c for c in output if c in tb and c not in ta]
    summed = [c for c in ta if c in summed]
    n = [int(np.prod([size[c] for c in part], dtype=np.int64))
         for part in (batch, free_a, summed, free_b)]
    # matmul (BLAS) wins from small sizes on (1.8 against 3.1 us for 16x16 matrices,
    # 71 against 497 us for 1000 batched 8x8 products); numpy.einsum's own loop wins for
    # tiny products and for batched dot products (matmul of 1xk by kx1 matrices).
    if n[0] * n[1] * n[2] * n[3] < 256 or n[2] == 1 or (n[1] == n[3] == 1 and n[0] > 1):
        return ("einsum",)
    # Either operand may go on the left of the matmul, and the summed labels may follow
    # either operand's order: take the layout that copies the least.
    best = None
    for (left, fl), (right, fr) in (((ta, free_a), (tb, free_b)), ((tb, free_b), (ta, free_a))):
        for order in (ta, tb):
            summed_in = [c for c in order if c in summed]
            vl = _matrix_view(left, batch, fl, summed_in, True, size)
            vr = _matrix_view(right, batch, fr, summed_in, False, size)
            out_order = batch + fl + fr
            perm = _perm(out_order, output)
            cost = vl[3] + vr[3] + (n[0] * n[1] * n[3] if perm else 0)
            if best is None or cost < best[0]:
                best = (cost, ("matmul", left is ta, vl[:3], vr[:3],
                               tuple(size[c] for c in out_order), perm))
    return best[1]


def _matrix_view(term: str, batch: list, free: list, summed: list, left: bool,
                 size: dict) -> tuple:
    """How to see an operand as a stack of matrices for matmul.

    Returns ``(perm, shape, swap, cost)``: transpose by ``perm`` (None: no copy), reshape
    to ``shape``, then swap the last two axes if ``swap`` (a view), giving
    ``(batch, free, summed)`` matrices on the left or ``(batch, summed, free)`` on the
    right. ``cost`` is the number of elements copied.
    """
    nb, nf, ns = (int(np.prod([size[c] for c in part], dtype=np.int64))
                  for part in (batch, free, summed))
    lead = (nb,) if batch else ()
    want = batch + (free + summed if left else summed + free)
    shape = (*lead, nf, ns) if left else (*lead, ns, nf)
    if list(term) == want:
        return None, shape, False, 0
    if list(term) == batch + (summed + free if left else free + summed):
        return None, (*lead, *shape[-1:-3:-1]), True, 0
    return _perm(term, want), shape, False, nb * nf * ns


def _perm(term, order) -> tuple | None:
    """The transpose taking the axes labelled ``term`` to ``order`` (None: no change)."""
    perm = tuple(term.index(c) for c in order)
    return None if perm == tuple(range(len(perm))) else perm


def _align(term: str, shape: tuple, output: str) -> tuple:
    """Transpose and shape that line up an operand's axes with the output's."""
    size = dict(zip(term, shape))
    shape = tuple(size.get(c, 1) for c in output)
    return _perm(term, [c for c in output if c in term]), shape


def _aligned(x, perm: tuple | None, shape: tuple):
    if perm is not None:
        x = x.transpose(perm)
    return x.reshape(shape) if x.shape != shape else x


def _as_matrices(x, perm: tuple | None, shape: tuple, swap: bool):
    if perm is not None:
        x = x.transpose(perm)
    x = x.reshape(shape)
    return x.swapaxes(-1, -2) if swap else x


# numpy.einsum without a path is its C loop behind a Python dispatcher: call the loop itself
# where NumPy exposes it (the same function numpy.einsum calls; W9 runs ~120 per step).
try:
    from numpy._core.multiarray import c_einsum as _einsum_loop
except ImportError:  # pragma: no cover - another NumPy layout
    _einsum_loop = np.einsum


def _contract_forward(subscripts: str, *ops):
    if len(ops) == 2:
        a, b = ops
        plan = _pair_plan(subscripts, a.shape, b.shape)
        kind = plan[0]
        if kind == "mul":
            return np.multiply(_aligned(a, *plan[1]), _aligned(b, *plan[2]))
        if kind == "matmul":
            _, a_left, vl, vr, shape, perm = plan
            left, right = (a, b) if a_left else (b, a)
            r = np.matmul(_as_matrices(left, *vl), _as_matrices(right, *vr)).reshape(shape)
            return r if perm is None else r.transpose(perm)
    return _einsum_loop(subscripts, *ops)


@lru_cache(maxsize=4096)
def _vjp_plan(subscripts: str, k: int, shapes: tuple) -> tuple:
    """How to compute operand ``k``'s gradient: the einsum's plan, and its constants.

    The gradient is an einsum of ``g`` and the other operands. A label repeated in
    operand k gets a fresh label and an identity matrix linking the two (the gradient of
    ``"ii->"`` is ``g * I``); a label summed in operand k alone gets a vector of ones
    (the gradient is broadcast along it).
    """
    lhs, output = subscripts.split("->")
    terms = lhs.split(",")
    sizes: dict = {}
    for term, shape in zip(terms, shapes):
        for c, n in zip(term, shape):
            sizes[c] = max(n, sizes.get(c, 1))
    others = terms[:k] + terms[k + 1:]
    fresh = (c for c in _LETTERS if c not in subscripts)
    target, consts = [], []
    for c, n in zip(terms[k], shapes[k]):
        if c in target:
            f = next(fresh)
            consts.append((c + f, "eye", n))
            c = f
        target.append(c)
    have = set(output).union(*others, *(t for t, _, _ in consts))
    consts += [(c, "ones", n) for c, n in zip(target, shapes[k]) if c not in have]
    inputs = [output, *others, *(t for t, _, _ in consts)]
    bwd = ",".join(inputs) + "->" + "".join(target)
    bwd_shapes = (tuple(sizes[c] for c in output), *shapes[:k], *shapes[k + 1:],
                  *(((n, n) if kind == "eye" else (n,)) for _, kind, n in consts))
    return _plan(bwd, bwd_shapes, "auto"), tuple((kind, n) for _, kind, n in consts)


def _contract_vjp(i, g, ans, subscripts, *ops):
    k = i - 1
    steps, consts = _vjp_plan(subscripts, k, tuple([o.shape for o in ops]))
    if (type(steps) is str and not consts and len(ops) == 2 and type(g) is np.ndarray
            and type(ops[0]) is np.ndarray and type(ops[1]) is np.ndarray):
        # A product of two NumPy arrays in a first-order backward (W9's gates): the
        # calls of the general way below (_conj_product, _run, _contract_forward), inline.
        a, b = ops[k], ops[1 - k]
        if b.dtype.kind != "c":
            r = _contract_forward(steps, g, b)
        elif b.size > g.size + a.size:
            r = _contract_forward(steps, g.conj() if g.dtype.kind == "c" else g, b)
            if r.dtype.kind == "c":
                r = r.conj()
        else:
            r = _contract_forward(steps, g, b.conj())
        if r.shape != a.shape:
            r = broadcast_to(r, np.broadcast_shapes(r.shape, a.shape))
        return r
    return _contract_vjp_general(k, g, steps, consts, ops)


def _contract_vjp_general(k, g, steps, consts, ops):
    # (apart from _contract_vjp: its closures' variables would be cells on every call)
    if consts:
        xp = namespace(g)  # (NumPy for a tensor)
        extra = [xp.eye(n, dtype=g.dtype) if kind == "eye" else xp.ones(n, dtype=g.dtype)
                 for kind, n in consts]
    else:
        extra = ()
    a = ops[k]
    # First-order backward on NumPy arrays: the op's forward itself (the op would only add
    # its dispatch); otherwise the op (tensors under create_graph, other libraries' arrays).
    contract = (_contract_forward if type(g) is np.ndarray
                and all([type(o) is np.ndarray for o in ops]) else _contract)
    r = _conj_product(lambda g, *o: _run(steps, (g, *o, *extra), contract), g,
                      ops[:k] + ops[k + 1:], a)
    if r.shape != a.shape:
        # A label of length 1 here that broadcast against a longer one elsewhere (the
        # engine sums the other way, where this operand's label is the longer one).
        r = broadcast_to(r, np.broadcast_shapes(r.shape, a.shape))
    return r


def _contract_batch(dims, subscripts, *ops):
    # a new label for the batch axis, in front of the batched operands and of the output
    label = next(c for c in _LETTERS if c not in subscripts)
    lhs, output = subscripts.split("->")
    terms = [label + t if d is not None else t for t, d in zip(lhs.split(","), dims[1:])]
    return _contract(",".join(terms) + "->" + label + output,
                     *(front(o, d) for o, d in zip(ops, dims[1:]))), 0


# Variadic: every positional argument after the subscripts is an operand.
_contract = op(_contract_forward, name="einsum", variadic=True, linear=True,
               save_ans=False, vjp=_contract_vjp, batch=_contract_batch)

def _core_shapes(name: str, shapes: tuple, cores: tuple) -> None:
    """NumPy's gufunc shape rules, with an error naming ``name``.

    ``cores`` gives each operand's core axes as letters (``("mn", "n")`` for matvec): an
    operand needs at least that many dimensions, axes with the same letter must have the
    same length (the summed axis is never broadcast), and the leading (loop) axes broadcast.
    """
    sizes: dict = {}
    for k, (shape, core) in enumerate(zip(shapes, cores)):
        if len(shape) < len(core):
            raise ValueError(f"{name}: operand {k} has shape {shape}, but needs at least "
                             f"{len(core)} dimension(s) for its core axes ({','.join(core)})")
        for c, n in zip(core, shape[len(shape) - len(core):]):
            if sizes.setdefault(c, (n, k))[0] != n:
                raise ValueError(
                    f"{name}: the core axes of operands {sizes[c][1]} and {k} (shapes "
                    f"{shapes[sizes[c][1]]} and {shape}) must have the same length, got "
                    f"{sizes[c][0]} and {n}; NumPy does not broadcast them")
    try:
        np.broadcast_shapes(*(s[:len(s) - len(c)] for s, c in zip(shapes, cores)))
    except ValueError:
        raise ValueError(f"{name}: the leading (batch) axes of shapes "
                         f"{', '.join(map(str, shapes))} do not broadcast together") from None


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector product over the last axes, batched (numpy.matvec).

    Parameters
    ----------
    x1 : (..., m, n) Tensor or array_like
    x2 : (..., n) Tensor or array_like

    Returns
    -------
    Tensor
        ``x1 @ x2`` with ``x2`` as column vectors: shape ``(..., m)``.

    Raises
    ------
    ValueError
        As NumPy: ``x1`` below 2-D, ``x2`` below 1-D, unequal ``n``, or batch axes that do
        not broadcast.
    """
    _core_shapes("matvec", (shape_of(x1), shape_of(x2)), ("mn", "n"))
    return squeeze(matmul(x1, expand_dims(x2, -1)), -1)


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix product conjugating the vector, batched (numpy.vecmat).

    Parameters
    ----------
    x1 : (..., m) Tensor or array_like
    x2 : (..., m, n) Tensor or array_like

    Returns
    -------
    Tensor
        ``conj(x1) @ x2``: shape ``(..., n)``.

    Raises
    ------
    ValueError
        As NumPy: ``x1`` below 1-D, ``x2`` below 2-D, unequal ``m``, or batch axes that do
        not broadcast.
    """
    _core_shapes("vecmat", (shape_of(x1), shape_of(x2)), ("m", "mn"))
    if dtype_kind(dtype_of(x1)) == "c":
        x1 = conj(x1)
    return squeeze(matmul(expand_dims(x1, -2), x2), -2)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Vector dot product along ``axis``, conjugating ``x1`` (numpy.vecdot, linalg.vecdot).

    Parameters
    ----------
    x1 : Tensor or array_like
        At least 1-D, with the same length along ``axis``; the other axes broadcast.
    x2 : Tensor or array_like
        At least 1-D, with the same length along ``axis``; the other axes broadcast.
    axis : int
        The axis of the vectors, in both inputs.

    Returns
    -------
    Tensor
        ``sum(conj(x1) * x2, axis)``, with NumPy's dtype (that of ``x1 * x2``: ``uint8``
        stays ``uint8``, ``bool`` stays ``bool``).

    Raises
    ------
    ValueError
        As NumPy: a 0-d input, unequal lengths along ``axis`` (never broadcast), an axis
        out of range, or other axes that do not broadcast.
    """
    s1, s2 = shape_of(x1), shape_of(x2)
    if not s1 or not s2:
        _core_shapes("vecdot", (s1, s2), ("n", "n"))  # raises: a 0-d input has no vectors
    a1, a2 = normalize_axis_index(axis, len(s1)), normalize_axis_index(axis, len(s2))
    s1, s2 = s1[:a1] + s1[a1 + 1:] + s1[a1:a1 + 1], s2[:a2] + s2[a2 + 1:] + s2[a2:a2 + 1]
    _core_shapes("vecdot", (s1, s2), ("n", "n"))
    if a1 != len(s1) - 1:
        x1 = moveaxis(x1, a1, -1)
    if a2 != len(s2) - 1:
        x2 = moveaxis(x2, a2, -1)
    if dtype_kind(dtype_of(x1)) == "c":
        x1 = conj(x1)
    if len(s1) == len(s2) == 1:
        return matmul(x1, x2)
    # (a sum of products in the dtype of the product: matmul keeps uint8 and bool, sum not)
    return squeeze(matmul(expand_dims(x1, -2), expand_dims(x2, -1)), (-2, -1))


__all__ = exported(globals())


# ---- the bodies on other libraries' arrays, in their array API namespace xp (yaad.backend) --
# einsum: the library's own (CuPy's, Dask's blockwise one), else as the array API can say
# it: diagonals by linalg.diagonal, sums, and each pair of operands as one batched matmul.

@implements("einsum")
def _einsum_xp(xp, subscripts, *ops):
    own = getattr(xp, "einsum", None)
    if own is not None:
        return own(subscripts, *ops)
    lhs, output = subscripts.split("->")
    terms = lhs.split(",")
    term, acc = _distinct_labels(xp, terms[0], ops[0])
    for k in range(1, len(ops)):
        keep = output + "".join(terms[k + 1:])
        tb, b = _distinct_labels(xp, terms[k], ops[k])
        term, acc = _pair_xp(xp, term, acc, tb, b, keep)
    term, acc = _summed_out(xp, term, acc, output)
    return xp.permute_dims(acc, tuple(term.index(c) for c in output))


def _distinct_labels(xp, term, x):
    """Operand ``x`` (labels ``term``) with each repeated label made one diagonal axis."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        rest = [k for k in range(len(term)) if k not in (i, j)]
        x = xp.linalg.diagonal(xp.permute_dims(x, (*rest, i, j)))
        term = "".join(term[k] for k in rest) + c
    return term, x


def _summed_out(xp, term, x, keep):
    """``x`` summed over its labels that are not in ``keep``."""
    axes = tuple(k for k, c in enumerate(term) if c not in keep)
    if not axes:
        return term, x
    return "".join(c for c in term if c in keep), xp.sum(x, axis=axes)


def _pair_xp(xp, ta, a, tb, b, keep):
    """Two operands contracted as one batched matmul: ``(batch, free a, summed)`` times
    ``(batch, summed, free b)``; labels of length 1 broadcast against the other's."""
    ta, a = _summed_out(xp, ta, a, keep + tb)
    tb, b = _summed_out(xp, tb, b, keep + ta)
    size = dict(zip(ta, a.shape))
    for c, n in zip(tb, b.shape):
        size[c] = max(n, size.get(c, 1))
    batch = [c for c in ta if c in tb and c in keep]
    summed = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]

    def matrices(term, x, labels, shape):
        x = xp.permute_dims(x, tuple(term.index(c) for c in labels))
        x = xp.broadcast_to(x, tuple(size[c] for c in labels))
        return xp.reshape(x, tuple(math.prod(size[c] for c in part) for part in shape))

    left = matrices(ta, a, batch + free_a + summed, (batch, free_a, summed))
    right = matrices(tb, b, batch + summed + free_b, (batch, summed, free_b))
    out = batch + free_a + free_b
    return "".join(out), xp.reshape(xp.matmul(left, right), tuple(size[c] for c in out))


@implements("tensordot")
def _tensordot_xp(xp, a, b, axes=2):
    return xp.tensordot(a, b, axes=tuple(_tensordot_axes(axes, a.ndim, b.ndim)))


@implements("trace")
def _trace_xp(xp, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise TypeError("trace: out= is not supported (results are new tensors)")
    return xp.linalg.trace(xp.moveaxis(a, (axis1, axis2), (-2, -1)), offset=offset,
                           dtype=native_dtype(xp, dtype))


implements("vdot")(lambda xp, a, b: xp.vecdot(xp.reshape(a, (-1,)), xp.reshape(b, (-1,))))
