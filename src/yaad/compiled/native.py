"""The native backend: a recorded program on small arrays run by one numba function.

Where the fused backend (``fused.py``) covers elementwise programs, this one covers
programs of small arrays that contract, reshape, transpose, index with constants, reduce,
broadcast and exponentiate matrices: a quantum circuit's gates and its adjoint pass, a
product of small ``expm``. A program is translated into instructions for the interpreter
of ``native_kernels.py`` (compiled by numba once and cached on disk, so a new program
costs no compilation). Every value has a region of its own in one of two flat
workspaces (float64, complex128), in C order, so:

- a reshape, an alias or a contiguous slice is a region, not an instruction;
- ops that move elements (``transpose``, ``swapaxes``, ``moveaxis``, ``broadcast_to``,
  ``expand_dims``, ``squeeze``, ``diagonal``, indexing with a constant index) are one
  gather, its index found by running the op itself on ``arange``; ops that put elements
  into zeros (``diag_embed``, ``scatter_add``, the blocks of ``linalg.block_upper``) are
  the reverse;
- elementwise arithmetic broadcasts a scalar by a stride of 0, anything else by a gather;
- contractions of one or two operands (``einsum``, ``matmul``, ``tensordot``, ``vdot``,
  sums over axes) are loops over precomputed index triples;
- ``linalg.expm`` is scaling and squaring with Pade approximants (Higham 2005, the method
  of ``scipy.linalg.expm``).

A program with anything else (another op, a dtype other than float64 and complex128, a
value-dependent index) is not translated: the caller keeps the NumPy replay. A native
program is kept only if it reproduces the values the recording computed (to rounding)
and runs faster than the NumPy replay of the same program, timed on the recorded values;
a call with values it does not reproduce (an ``expm`` of a non-finite matrix) runs that
replay. Without numba (it is optional) nothing changes.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from .tape import Alias, Const, Entry, Guard, Load, Slot, float_state

FORCE = [False]  # tests: keep a generated function even if it is not faster
MIN_ENTRIES = 24  # shorter programs: the NumPy replay is about as fast
MAX_SIZE = 4096  # elements: larger arrays are not "small" (NumPy's own loops win)
MAX_TERMS = 1 << 16  # index triples of one contraction
# a matrix product of fewer terms loops over index triples: a BLAS call costs more than
# that (W9's 2x2 gates on 32 amplitudes, W10's 4x4 products: 5% slower through BLAS)
GEMM_MIN_TERMS = 1024



class _Reject(Exception):
    """The program has something this backend does not generate."""


# ---- index arrays -------------------------------------------------------------------------

def _gather_to(shape_in: tuple, shape_out: tuple) -> np.ndarray:
    """Flat indices broadcasting an array of ``shape_in`` to ``shape_out``."""
    n = int(np.prod(shape_in))
    return np.broadcast_to(np.arange(n).reshape(shape_in), shape_out).ravel()


def _letters(subs: str, shapes: list, broadcast: bool) -> tuple | None:
    """``(terms, out, dims)`` of an einsum over explicit subscripts (``dims``: each letter's
    size; with ``broadcast``, size-1 axes stretch to the others), or None if it has none."""
    if "..." in subs or "->" not in subs:
        return None
    lhs, out = subs.split("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        return None
    dims: dict = {}
    for term, shape in zip(terms, shapes):
        if len(term) != len(shape):
            return None
        for c, d in zip(term, shape):
            seen = dims.setdefault(c, d)
            if seen != d and not (broadcast and 1 in (seen, d)):
                return None
            dims[c] = max(seen, d)
    return terms, out, dims


def _triples(subs: str, shapes: list, out_shape: tuple) -> tuple:
    """(out index, operand indices...) of every term of an einsum over explicit
    subscripts; size-1 axes broadcast."""
    parsed = _letters(subs, shapes, broadcast=True)
    if parsed is None:
        raise _Reject
    terms, out, dims = parsed
    letters = list(dims)
    total = int(np.prod([dims[c] for c in letters]))
    if total > MAX_TERMS or tuple(dims[c] for c in out) != tuple(out_shape):
        raise _Reject
    grid = np.indices([dims[c] for c in letters]).reshape(len(letters), -1)
    pos = {c: k for k, c in enumerate(letters)}

    def flat(term: str, shape: tuple) -> np.ndarray:
        if not term:
            return np.zeros(total, np.int64)
        idx = tuple(grid[pos[c]] if d != 1 else np.zeros(total, np.int64)
                    for c, d in zip(term, shape))
        return np.ravel_multi_index(idx, shape).astype(np.int64)

    return (flat(out, out_shape), *[flat(t, s) for t, s in zip(terms, shapes)])


def _gemm_plan(subs: str, shapes: list) -> tuple | None:
    """``(swap, M, K, N, ta, tb)`` where the two-operand einsum ``subs`` is one matrix
    product of its operands' regions read as matrices (``ta``/``tb``: read transposed;
    ``swap``: the product of the second by the first, for an output laid out the other
    way round), or None (a batch letter, a letter summed within one operand, broadcasting,
    or an axis order no matrix reading gives)."""
    parsed = _letters(subs, shapes, broadcast=False)
    if parsed is None:
        return None
    terms, out, dims = parsed
    if len(terms) != 2 or any(len(set(t)) != len(t) for t in (*terms, out)):
        return None
    ta_s, tb_s = terms
    a, b, o = set(ta_s), set(tb_s), set(out)
    if a & b & o or a - b - o or b - a - o or o - a - b:
        return None
    ms = "".join(c for c in ta_s if c in o)
    ns = "".join(c for c in tb_s if c in o)
    ks = "".join(c for c in ta_s if c in b)
    if ks != "".join(c for c in tb_s if c in a):
        return None
    ta = {ms + ks: 0, ks + ms: 1}.get(ta_s)
    tb = {ks + ns: 0, ns + ks: 1}.get(tb_s)
    swap = {ms + ns: False, ns + ms: True}.get(out)
    if ta is None or tb is None or swap is None:
        return None
    size = lambda letters: int(np.prod([dims[c] for c in letters]))  # noqa: E731
    return swap, size(ms), size(ks), size(ns), ta, tb


def _matmul_subs(sa: tuple, sb: tuple) -> str:
    if not sa or not sb:
        raise _Reject
    letters = iter("abcdefghijklmnopqrstuvw")
    a1, b1 = len(sa) == 1, len(sb) == 1
    nb = max(len(sa) - (1 if a1 else 2), len(sb) - (1 if b1 else 2), 0)
    batch = [next(letters) for _ in range(nb)]
    m, k, n = "x", "y", "z"
    ta = ("" if a1 else "".join(batch[nb - (len(sa) - 2):]) + m) + k
    tb = k + ("" if b1 else n)
    if not b1:
        tb = "".join(batch[nb - (len(sb) - 2):]) + tb
    out = "".join(batch) + ("" if a1 else m) + ("" if b1 else n)
    return f"{ta},{tb}->{out}"


# ---- the generator ------------------------------------------------------------------------

_MOVE = {"reshape", "transpose", "swapaxes", "moveaxis", "broadcast_to", "expand_dims",
         "squeeze", "diagonal", "getitem", "ravel", "flatten", "copy"}
_UNARY = {"negative": 0, "cos": 1, "sin": 2, "tan": 3, "exp": 4, "log": 5, "sqrt": 6,
          "tanh": 7, "sinh": 8, "cosh": 9, "absolute": 10, "square": 11, "reciprocal": 12,
          "expm1": 13, "log1p": 14, "arctan": 15, "sign": 16}
_BINARY = {"add": 0, "subtract": 1, "multiply": 2, "divide": 3}
# opcodes (see native_kernels)
(ADD, SUB, MUL, DIV, UNARY, NEG_Z, CONJ, REAL, IMAG, ABS_Z, TO_Z, GATHER, CONTRACT1,
 CONTRACT2, STRONG_ZERO, EXPM, SIGN_Z, GEMM, EXP_Z) = range(19)


class _Val:
    """A value of the program: ``n`` elements at offset ``off`` of workspace ``kind``
    (0: float64, 1: complex128), in C order; ``shape``: its recorded shape."""

    __slots__ = ("kind", "off", "n", "shape")

    def __init__(self, kind: int, off: int, n: int, shape: tuple) -> None:
        self.kind = kind
        self.off = off
        self.n = n
        self.shape = shape


def _kind(dt: Any) -> int:
    dt = np.dtype(dt)
    if dt == np.float64:
        return 0
    if dt == np.complex128:
        return 1
    raise _Reject


class _Gen:
    """The instructions of one program, its workspaces' layout and constants."""

    def __init__(self, value: list, consts: int) -> None:
        self.value = value
        self.const_from = consts  # slots from here on may be constants (see build)
        self.code: list[list[int]] = []
        self.ints: list[np.ndarray] = []
        self.nint = 0
        self.size = [0, 0]
        self.consts: list[tuple] = []  # (kind, offset, flat values)
        self.vals: dict[int, _Val] = {}
        self.defined: set = set()  # slots the program's items make

    def new(self, kind: int, shape: tuple) -> _Val:
        n = max(int(np.prod(shape)), 1)
        v = _Val(kind, self.size[kind], n, shape)
        self.size[kind] += n
        return v

    def index(self, idx: Any) -> int:
        """Offset of a constant index array in the pooled integer array."""
        idx = np.ascontiguousarray(idx, dtype=np.int64).ravel()
        start = self.nint
        self.ints.append(idx)
        self.nint += idx.size
        return start

    def const(self, a: Any) -> _Val:
        a = np.asarray(a)
        if a.dtype.kind in "iuf":
            a = a.astype(np.float64)
        kind = _kind(a.dtype)
        if a.size > MAX_SIZE or a.size == 0:
            raise _Reject
        v = self.new(kind, a.shape)
        self.consts.append((kind, v.off, a.ravel()))
        return v

    def val(self, r: Any) -> _Val:
        """The value of an argument (a slot or a constant)."""
        if type(r) is Slot:
            v = self.vals.get(r.i)
            if v is None:
                if r.i in self.defined or r.i < self.const_from:
                    raise _Reject  # (a value of the program, not a constant)
                # (a value made while deriving the backward: ones, an identity)
                v = self.vals[r.i] = self.const(self.value[r.i])
            return v
        if isinstance(r, (bool, np.bool_)) or not isinstance(
                r, (int, float, complex, np.ndarray, np.generic)):
            raise _Reject
        if isinstance(r, np.ndarray) and r.dtype.kind not in "iufc":
            raise _Reject
        return self.const(r)

    def op(self, op: int, out: _Val, a: _Val | None = None, b: _Val | None = None,
           sa: int = 1, sb: int = 1, x: int = 0, m: int = 0, ka: int | None = None) -> None:
        self.code.append([op, a.kind if a is not None else 0, b.kind if b is not None else 0,
                          out.kind, out.off, out.n, a.off if a is not None else 0, sa,
                          b.off if b is not None else 0, sb, x, m])

    def out(self, s: int) -> tuple[int, tuple]:
        v = self.value[s]
        if not isinstance(v, (np.ndarray, np.generic)) or v.size == 0 or v.size > MAX_SIZE:
            raise _Reject
        return _kind(v.dtype), v.shape

    def spread(self, v: _Val, shape: tuple) -> tuple[_Val, int]:
        """``v`` brought to ``shape`` (its stride: 0 for a scalar that broadcasts)."""
        if v.n == 1:
            return v, 0
        if v.shape == shape:
            return v, 1
        t = self.new(v.kind, shape)
        self.op(GATHER, t, v, x=self.index(_gather_to(v.shape, shape)))
        return t, 1

    def item(self, it: Any) -> None:
        t = type(it)
        if t is Guard:
            if it.kind != "shape":
                raise _Reject
            return  # (every op here has shapes that follow from its inputs')
        if t is Alias:
            if it.of not in self.vals:
                raise _Reject
            self.vals[it.slot] = self.vals[it.of]
            return
        if t is Const:
            self.out(it.slot)
            self.vals[it.slot] = self.const(it.value)
            return
        if t is not Entry or len(it.outs) != 1 or it.err is not None:
            raise _Reject
        out = it.outs[0]
        kind, shape = self.out(out)
        name = it.op.name
        emit = _EMITTERS.get(name)
        if emit is None:
            emit = (_move if name in _MOVE else _unary if name in _UNARY
                    else _binary if name in _BINARY else None)
        if emit is None:
            raise _Reject(name)
        self.vals[out] = emit(self, it, kind, shape)


def _kw(it: Entry) -> dict:
    return dict(it.kw) if it.kw else {}


def _args(g: _Gen, it: Entry, n: int) -> list:
    if len(it.args) != n or it.kw:
        raise _Reject
    return [g.val(r) for r in it.args]


def _unary(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    (a,) = _args(g, it, 1)
    out = g.new(kind, shape)
    if a.kind == 0 and kind == 0:
        g.op(UNARY, out, a, m=_UNARY[it.op.name])
    elif a.kind == 1 and kind == 1 and it.op.name == "negative":
        g.op(NEG_Z, out, a)
    elif a.kind == 1 and kind == 0 and it.op.name == "absolute":
        g.op(ABS_Z, out, a)
    elif a.kind == 1 and kind == 1 and it.op.name == "sign":
        g.op(SIGN_Z, out, a)
    elif a.kind == 1 and kind == 1 and it.op.name == "exp":
        g.op(EXP_Z, out, a)
    else:
        raise _Reject  # (other complex functions: NumPy's and numba's may differ at edges)
    return out


def _binary(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a, b = _args(g, it, 2)
    if kind == 0 and (a.kind or b.kind) or kind == 1 and not (a.kind or b.kind):
        raise _Reject
    a, sa = g.spread(a, shape)
    b, sb = g.spread(b, shape)
    out = g.new(kind, shape)
    g.op(_BINARY[it.op.name], out, a, b, sa, sb)
    return out


def _moving_input(g: _Gen, it: Entry) -> _Val:
    """The input of an op that moves elements (its other arguments are constants)."""
    if type(it.args[0]) is not Slot:
        raise _Reject
    for x in [*it.args[1:], *_kw(it).values()]:
        _constant_index(x)
    return g.val(it.args[0])


def _run_on(it: Entry, a: _Val, probe: np.ndarray) -> np.ndarray:
    """The op run on ``probe`` (the flat values of its input ``a``) with its constants."""
    return np.asarray(it.op.forward(probe.reshape(a.shape), *it.args[1:], **_kw(it)))


def _move(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a = _moving_input(g, it)
    if a.kind != kind:
        raise _Reject
    idx = _run_on(it, a, np.arange(a.n, dtype=np.int64))
    if idx.shape != shape or idx.dtype != np.int64:
        raise _Reject
    idx = idx.ravel()
    if np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return _Val(kind, a.off + int(idx[0]), idx.size, shape)  # a region of ``a``
    out = g.new(kind, shape)
    g.op(GATHER, out, a, x=g.index(idx))
    return out


def _place(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    # An op that puts its input's elements into zeros (diag_embed): where each lands is
    # found by running it on 1, 2, 3, ...
    a = _moving_input(g, it)
    if a.kind > kind:
        raise _Reject
    placed = _run_on(it, a, np.arange(1, a.n + 1, dtype=np.float64))
    if placed.shape != shape:
        raise _Reject
    flat = placed.ravel()
    oi = np.flatnonzero(flat)
    ai = flat[oi].astype(np.int64) - 1
    if not np.array_equal(np.sort(ai), np.arange(a.n)):
        raise _Reject  # (not each element placed once)
    out = g.new(kind, shape)
    _accumulate(g, out, a, oi, ai)
    return out


def _constant_index(x: Any) -> None:
    """Reject an argument that is not a constant (a slot: a value-dependent index)."""
    if type(x) is Slot or type(x).__name__ == "SlotTuple":
        raise _Reject
    if isinstance(x, (tuple, list)):
        for y in x:
            _constant_index(y)


def _accumulate(g: _Gen, out: _Val, a: _Val, oi: Any, ai: Any, acc: bool = False) -> None:
    """``out[oi] += a[ai]`` (after zeroing ``out`` unless ``acc``)."""
    oi = np.asarray(oi, np.int64).ravel()
    ai = np.broadcast_to(np.asarray(ai, np.int64), oi.shape).ravel()
    if a.kind > out.kind:
        raise _Reject
    x = g.index(np.concatenate([oi, ai]))
    g.op(CONTRACT1, out, a, x=x, m=oi.size)
    g.code[-1][8] = int(acc)


def _reduce(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    r = it.args[0]
    kw = _kw(it)
    if type(r) is not Slot or set(kw) - {"axis", "keepdims"} or len(it.args) > 2:
        raise _Reject
    axis = it.args[1] if len(it.args) == 2 else kw.get("axis")
    _constant_index(axis)
    a = g.val(r)
    if a.kind != kind:
        raise _Reject
    nout = max(int(np.prod(shape)), 1)
    keep = np.sum(np.zeros(a.shape), axis=axis, keepdims=True).shape
    if int(np.prod(keep)) != nout:
        raise _Reject
    out = g.new(kind, shape)
    oi = np.broadcast_to(np.arange(nout).reshape(keep), a.shape) if a.shape else [0]
    _accumulate(g, out, a, oi, np.arange(a.n))
    if it.op.name == "mean":
        total, out = out, g.new(kind, shape)
        g.op(DIV, out, total, g.const(float(a.n // nout)), 1, 0)
    return out


def _contraction(g: _Gen, subs: str, refs: tuple, kind: int, shape: tuple) -> _Val:
    vals = [g.val(r) for r in refs]
    out = g.new(kind, shape)
    if len(vals) == 1:
        trip = _triples(subs, [v.shape for v in vals], shape)
        _accumulate(g, out, vals[0], trip[0], trip[1])
        return out
    if len(vals) != 2:
        raise _Reject
    a, b = vals
    if kind != max(a.kind, b.kind):
        raise _Reject
    plan = _gemm_plan(subs, [a.shape, b.shape]) if a.kind == b.kind else None
    if plan is not None and plan[1] * plan[2] * plan[3] >= GEMM_MIN_TERMS:  # (one BLAS call)
        swap, M, K, N, ta, tb = plan
        if swap:  # out = (op(a) @ op(b)).T = op(b).T @ op(a).T
            a, b, M, N, ta, tb = b, a, N, M, 1 - tb, 1 - ta
        g.op(GEMM, out, a, b, ta, tb, x=K, m=M)
        return out
    trip = _triples(subs, [v.shape for v in vals], shape)
    g.op(CONTRACT2, out, a, b, x=g.index(np.concatenate(trip)), m=trip[0].size)
    return out


def _einsum(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    if it.kw or not isinstance(it.args[0], str):
        raise _Reject
    return _contraction(g, it.args[0].replace(" ", ""), it.args[1:], kind, shape)


def _matmul(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a, b = _args(g, it, 2)
    return _contraction(g, _matmul_subs(a.shape, b.shape), it.args, kind, shape)


def _tensordot(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    from ..ops.products import _tensordot_axes

    kw = _kw(it)
    if len(it.args) not in (2, 3) or set(kw) - {"axes"}:
        raise _Reject
    axes = it.args[2] if len(it.args) == 3 else kw.get("axes", 2)
    _constant_index(axes)
    a, b = (g.val(r) for r in it.args[:2])
    ia, ib = _tensordot_axes(axes, len(a.shape), len(b.shape))
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [next(letters) for _ in a.shape]
    lb = [next(letters) for _ in b.shape]
    for i, j in zip(ia, ib):
        lb[j] = la[i]
    out = ([c for k, c in enumerate(la) if k not in ia]
           + [c for k, c in enumerate(lb) if k not in ib])
    subs = f"{''.join(la)},{''.join(lb)}->{''.join(out)}"
    return _contraction(g, subs, it.args[:2], kind, shape)


def _vdot(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a, b = _args(g, it, 2)
    if a.n != b.n or not a.shape or not b.shape:
        raise _Reject
    if a.kind:
        c = g.new(1, a.shape)
        g.op(CONJ, c, a)
        a = c
    if kind != max(a.kind, b.kind):
        raise _Reject
    out = g.new(kind, shape)
    ar = np.arange(a.n)
    g.op(CONTRACT2, out, a, b, x=g.index(np.concatenate([ar * 0, ar, ar])), m=a.n)
    return out


def _power(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    # (x ** 2 is x * x in NumPy too; other exponents are not generated)
    if it.kw or len(it.args) != 2 or type(it.args[1]) not in (int, float) \
            or it.args[1] != 2:
        raise _Reject
    a = g.val(it.args[0])
    if a.kind != kind:
        raise _Reject
    out = g.new(kind, shape)
    a, sa = g.spread(a, shape)
    g.op(MUL, out, a, a, sa, sa)
    return out


def _conjugate(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    (a,) = _args(g, it, 1)
    if a.kind != kind:
        raise _Reject
    if not kind:
        return a
    out = g.new(1, shape)
    g.op(CONJ, out, a)
    return out


def _real_imag(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    (a,) = _args(g, it, 1)
    if kind != 0:
        raise _Reject
    if not a.kind:
        if it.op.name == "imag":
            raise _Reject
        return a
    out = g.new(0, shape)
    g.op(REAL if it.op.name == "real" else IMAG, out, a)
    return out


def _astype(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a = g.val(it.args[0])
    if a.kind == kind:
        return a
    if kind != 1:
        raise _Reject
    out = g.new(1, shape)
    g.op(TO_Z, out, a)
    return out


def _join(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    # stack and concatenate: one gather from the whole workspace (every input, of the
    # output's kind, has its region there), so each element is copied exactly.
    kw = _kw(it)
    if set(kw) - {"axis", "dtype", "casting"} or kw.get("casting", "same_kind") != "same_kind":
        raise _Reject
    axis = kw.get("axis", 0)
    if type(axis) is not int or not it.args:
        raise _Reject
    vals = []
    for r in it.args:
        v = g.val(r)
        if v.kind != kind:
            if v.kind > kind:
                raise _Reject
            z = g.new(1, v.shape)
            g.op(TO_Z, z, v)
            v = z
        vals.append(v)
    grid = np.arange(max(int(np.prod(shape)), 1)).reshape(shape)
    if it.op.name == "stack":
        axis = axis + len(shape) if axis < 0 else axis
        if not 0 <= axis < len(shape) or shape[axis] != len(vals):
            raise _Reject
        places = list(np.moveaxis(grid, axis, 0))
    else:
        if not shape:
            raise _Reject
        axis = axis + len(shape) if axis < 0 else axis
        if not 0 <= axis < len(shape) or any(len(v.shape) != len(shape) for v in vals):
            raise _Reject
        cuts = np.cumsum([v.shape[axis] for v in vals])[:-1]
        places = np.split(grid, cuts, axis=axis)
    src = np.empty(grid.size, np.int64)
    for v, place in zip(vals, places):
        if place.shape != v.shape:
            raise _Reject
        src[place.ravel()] = v.off + np.arange(v.n)
    out = g.new(kind, shape)
    g.op(GATHER, out, _Val(kind, 0, 0, ()), x=g.index(src))
    return out


def _scatter_add(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    if it.kw or len(it.args) != 3:
        raise _Reject
    vals, idx, where = it.args
    _constant_index(idx)
    if tuple(where) != shape:
        raise _Reject
    a = g.val(vals)
    target = np.asarray(np.arange(max(int(np.prod(shape)), 1)).reshape(shape)[idx])
    if np.broadcast_shapes(a.shape, target.shape) != target.shape:
        raise _Reject
    out = g.new(kind, shape)
    src = np.zeros(target.shape, np.int64) if a.n == 1 else _gather_to(a.shape, target.shape)
    _accumulate(g, out, a, target, src)
    return out


def _strong_zero(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a, b = _args(g, it, 2)
    if b.shape != shape or b.kind != kind:
        raise _Reject
    a, sa = g.spread(a, shape)
    out = g.new(kind, shape)
    g.op(STRONG_ZERO, out, a, b, sa)
    return out


def _expm(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    (a,) = _args(g, it, 1)
    if len(a.shape) != 2 or a.shape[0] != a.shape[1] or a.shape[0] > 32 or a.kind != kind:
        raise _Reject
    out = g.new(kind, shape)
    g.op(EXPM, out, a, m=a.shape[0])
    return out


def _block_upper(g: _Gen, it: Entry, kind: int, shape: tuple) -> _Val:
    a, e = _args(g, it, 2)
    if len(a.shape) != 2 or a.shape != e.shape or a.shape[0] != a.shape[1]:
        raise _Reject
    n = a.shape[0]
    grid = np.arange(4 * n * n).reshape(2 * n, 2 * n)
    out = g.new(kind, shape)
    ar = np.arange(n * n)
    _accumulate(g, out, a, np.concatenate([grid[:n, :n].ravel(), grid[n:, n:].ravel()]),
                np.concatenate([ar, ar]))
    _accumulate(g, out, e, grid[:n, n:], ar, acc=True)
    return out


_EMITTERS: dict[str, Callable] = {
    "sum": _reduce, "mean": _reduce, "einsum": _einsum, "matmul": _matmul, "vdot": _vdot,
    "tensordot": _tensordot, "diag_embed": _place,
    "conjugate": _conjugate, "real": _real_imag, "imag": _real_imag, "astype": _astype,
    "scatter_add": _scatter_add, "strong_zero": _strong_zero, "linalg.expm": _expm,
    "linalg.block_upper": _block_upper, "power": _power, "stack": _join,
    "concatenate": _join,
}


# ---- building and choosing -----------------------------------------------------------------

def available() -> bool:
    """Whether numba is installed (this backend is optional)."""
    from . import fused

    return fused.available()


def worthwhile(items: list, value: list, short: bool = False) -> bool:
    """Whether a native program may pay: many operations (any number with ``short``) on
    small arrays (each NumPy call costing more than its arithmetic)."""
    if FORCE[0]:
        return True
    n = sum(1 for it in items if type(it) is Entry)
    big = max((np.size(v) for v in value if isinstance(v, np.ndarray)), default=0)
    return (short or n >= MIN_ENTRIES) and big <= MAX_SIZE


def build(items: list, params: list, results: list, value: list,
          consts: int, force: bool = False) -> Callable | None:
    """A native function for ``items`` (None: not covered, numba missing, or not faster
    than the NumPy replay unless ``force``).

    ``params``: the slots the program reads from outside, in the order the returned
    function takes them; ``results``: the slots it returns (None entries allowed);
    ``value``: every slot's recorded value (shapes, dtypes, the check and the timing);
    ``consts``: a slot from here on that the program reads but does not make is a
    constant made while deriving the backward (a seed of ones, an identity).
    """
    if not available():
        return None
    try:
        return _build(items, params, results, value, consts, force)
    except Exception:  # not covered, or numba failed: stay NumPy
        return None


def _build(items: list, params: list, results: list, value: list,
           consts: int, force: bool = False) -> Callable | None:
    from .codegen import item_defs

    gen = _Gen(value, consts)
    inputs = []
    for s in params:
        kind, shape = gen.out(s)
        gen.vals[s] = v = gen.new(kind, shape)
        inputs.append((v, None))
    for it in items:
        if type(it) is not Guard:
            gen.defined.update(item_defs(it))
    for it in items:
        if type(it) is Load:
            kind, shape = gen.out(it.slot)
            gen.vals[it.slot] = v = gen.new(kind, shape)
            inputs.append((v, it.tensor))  # (read on every call)
        else:
            try:
                gen.item(it)
            except _Reject as e:
                raise _Reject(f"{it!r} {e}") from None
    outs = []
    for r in results:
        if r is not None:
            v = gen.vals.get(r)
            if v is None:
                raise _Reject
            outs.append((v, np.shape(value[r]), isinstance(value[r], np.ndarray),
                         value[r].dtype))
    from . import native_kernels
    from .codegen import numpy_program

    run = _Program(native_kernels.execute, gen, inputs, outs, results)
    loads = [it.slot for it in items if type(it) is Load]
    run.fallback = replay = numpy_program(items, params + loads, results, value)
    check = run.run([value[s] for s in params] + [value[it.slot] for it in items
                                                  if type(it) is Load])
    for r, v in zip(results, check):
        if r is None:
            continue
        ref = np.asarray(value[r])
        scale = float(np.abs(ref).max()) if ref.size else 0.0
        if (np.shape(v) != ref.shape or np.asarray(v).dtype != ref.dtype
                or not np.allclose(v, ref, rtol=1e-9, atol=1e-9 * scale, equal_nan=True)):
            raise _Reject
    args = [value[s] for s in params]
    if not (force or FORCE[0]) and not _faster(lambda: run(*args),
                                    lambda: replay(*args, *[value[s] for s in loads])):
        return None
    return run


def _own(results: tuple) -> tuple:
    """The NumPy replay's results as arrays of their own (a native program's are)."""
    return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in results)


def _unset(*args: Any) -> tuple:
    raise RuntimeError("a native program without its NumPy replay")


class _Program:
    """``run(*params)``: a native program on its workspaces; the results copied out in
    their recorded shapes (0-d arrays or NumPy scalars where the recording had them)."""

    def __init__(self, execute: Callable, gen: _Gen, inputs: list, outs: list,
                 results: list) -> None:
        self.execute = execute
        self.code = np.array(gen.code, dtype=np.int64).reshape(-1, 12)
        self.idx = np.concatenate(gen.ints) if gen.ints else np.zeros(1, np.int64)
        self.R0 = np.zeros(max(gen.size[0], 1))
        self.Z0 = np.zeros(max(gen.size[1], 1), complex)
        for kind, off, a in gen.consts:
            (self.Z0 if kind else self.R0)[off:off + a.size] = a
        self.inputs = inputs
        self.outs = outs
        self.results = results
        self.free: list = []  # workspaces not in use
        self.fallback: Callable = _unset  # the NumPy replay (see _build)
        self.__source__ = f"native program: {len(self.code)} instructions"

    def __call__(self, *args: Any) -> tuple:
        return self.run([*args, *[t._data for v, t in self.inputs[len(args):]]])

    def run(self, arrays: list) -> tuple:
        """The results for the values of the inputs (the parameters, then the tensors
        read from outside)."""
        if float_state() is not None:  # an error raises: numba's kernels do not
            return _own(self.fallback(*arrays))
        free = self.free
        R, Z = free.pop() if free else (self.R0.copy(), self.Z0.copy())
        try:
            self._write(R, Z, arrays)
            if self.execute(self.code, self.idx, R, Z):
                return _own(self.fallback(*arrays))
            got = []
            for v, shape, is_array, dt in self.outs:
                w = Z if v.kind else R
                x = w[v.off:v.off + v.n].reshape(shape)
                got.append(x.copy() if is_array else dt.type(x[()]))
        finally:
            free.append((R, Z))
        it = iter(got)
        return tuple(None if r is None else next(it) for r in self.results)

    def _write(self, R: np.ndarray, Z: np.ndarray, arrays: list) -> None:
        for (v, _), a in zip(self.inputs, arrays):
            w = Z if v.kind else R
            w[v.off:v.off + v.n] = np.ravel(a)

    def workspace(self, arrays: list) -> tuple[np.ndarray, np.ndarray]:
        """Workspaces ``(R, Z)`` of their own holding the inputs (``arrays``: the
        parameters' values; the tensors read from outside are read now), for a caller
        that runs ``native_kernels.execute(program.code, program.idx, R, Z)`` itself,
        writing the inputs that change into their regions (``program.inputs[k][0]``:
        ``kind``, ``off``, ``n``) and reading the results from theirs
        (``program.outs[k][0]``)."""
        R, Z = self.R0.copy(), self.Z0.copy()
        self._write(R, Z, [*arrays, *[t._data for _, t in self.inputs[len(arrays):]]])
        return R, Z


def _faster(run: Callable, replay: Callable) -> bool:
    """Whether ``run()`` beats ``replay()`` (the fastest of a few calls each,
    interleaved)."""
    best = [float("inf"), float("inf")]
    start = time.perf_counter()
    for _ in range(20):
        for k, fn in enumerate((run, replay)):
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
        if time.perf_counter() - start > 0.05:
            break
    return best[0] < best[1]
