"""Matrix chains in a NumPy replay: a product, its bias and its activation as one BLAS call,
and elementwise steps written into the temporaries they consume.

A layer ``act(x @ W + b)`` is recorded as three op calls, and a plain replay makes three
NumPy calls and two temporaries (the product, then the biased product). :func:`fuse`
gives the three (or the first two, or a product and an activation) one entry whose call
preloads a new array with the broadcast bias, lets BLAS ``gemm`` add the product into it
(``beta = 1``), and applies the activation in place: no temporary at all.

:func:`in_place` then spells an elementwise step whose operand is a temporary that
nothing reads afterwards (a fresh array of the result's shape and dtype made by an
earlier step of the same program, no view of it alive) as the same ufunc with ``out=``
that operand: the derivative of an activation in the backward pass, ``g * (1 - y * y)``
for ``tanh``, then allocates one array instead of three.

Both keep eager mode's values bit for bit. An in-place ufunc runs the same loop. The
product plus bias is BLAS's ``C + A B`` where eager mode computes ``A B`` and then adds
``C``: the same sum when BLAS accumulates ``A B`` in one pass over the inner dimension
(it does up to some hundreds of terms), a different rounding when it adds partial sums
into ``C`` one block of the inner dimension at a time. Which one this machine's BLAS
does is tested for each shape, dtype and memory layout, once, on random values
(:func:`_exact`); where they differ, or a call brings operands laid out otherwise than
the recording's, the entry makes the product with NumPy and adds the bias and the
activation in place (eager mode's operations, one array).

Both run on the item lists of the NumPy replay only, after the fused and native backends
have had their chance at the program: those translate the op calls as recorded.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .codegen import item_defs, item_uses, ref_slots
from .product_ops import private_op
from .tape import Alias, Entry, Slot

_BLAS_TYPES = {np.dtype(t): c for t, c in (("float32", "s"), ("float64", "d"),
                                             ("complex64", "c"), ("complex128", "z"))}
# Activations whose forward is not a ufunc: the in-place call (the output's source, then
# the other arguments) that computes what the forward computes.
_SPELLED_ACTS = {"relu": (np.maximum, (None, 0)), "softplus": (np.logaddexp, (0, None))}


# ---- the shape of what an item list does with its slots -----------------------------------

def _uses_by_item(items: list) -> dict[int, list[int]]:
    """Slot -> the positions of the items that read it."""
    users: dict[int, list[int]] = {}
    for k, it in enumerate(items):
        for s in item_uses(it):
            users.setdefault(s, []).append(k)
    return users


def _registry_name(it: Entry) -> str | None:
    from ..core.op import registry

    name = it.op.name
    return name if registry.get(name) is it.op else None


def _plain(it: Any) -> bool:
    """An op call with positional arguments only, spelled as recorded, in the default
    floating-point state."""
    return type(it) is Entry and not it.kw and it.spell is None and it.err is None


# ---- x @ W + b, then an activation ------------------------------------------------------

def _operand(r: Any, info: Any) -> tuple | None:
    """(shape, dtype) of an array argument (a slot holding an ndarray, or a constant)."""
    if type(r) is Slot:
        if not info(r.i, True):
            return None
        return info(r.i), info.dtype[r.i]
    if type(r) is np.ndarray:
        return r.shape, r.dtype
    return None


def _bias(r: Any, info: Any, shape: tuple, dtype: np.dtype) -> bool:
    """Whether ``r`` broadcasts into an array of ``shape`` and ``dtype`` without changing
    them (a Python number, or an array of that dtype)."""
    if type(r) in (int, float) or (type(r) is complex and dtype.kind == "c"):
        return True
    got = _operand(r, info)
    if got is None or got[1] != dtype:
        return False
    try:
        return np.broadcast_shapes(got[0], shape) == shape
    except ValueError:
        return False


def _activation(it: Entry, dtype: np.dtype) -> tuple | None:
    """``(f, args)``: the activation of entry ``it`` written into ``out`` is ``f(*args,
    out=out)``, ``out`` in ``args`` as None (None: not an activation)."""
    if len(it.args) != 1 or not it.dtypes or it.dtypes[0] != dtype:
        return None
    f = it.op.forward
    if isinstance(f, np.ufunc):
        if f.nin != 1 or f.nout != 1 or _registry_name(it) is None:
            return None
        return f, (None,)
    spelled = _SPELLED_ACTS.get(it.op.name)
    if spelled is None or _registry_name(it) is None:
        return None
    return spelled


def fuse(items: list, keep: set, info: Any) -> list:
    """``items`` with each chain ``matmul`` -> ``add`` (-> a one-argument elementwise
    activation), whose intermediate values nothing else reads, as one entry (see the
    module docstring); ``keep``: slots read after the list; ``info``: the recorded shapes
    and dtypes (:class:`codegen.SlotInfo`)."""
    if not any(type(it) is Entry and it.op.name == "matmul" for it in items):
        return items
    users = _uses_by_item(items)
    made = {o: k for k, it in enumerate(items) if type(it) is Entry for o in it.outs}

    taken: set = set()  # positions of the entries already in a chain

    def only_user(s: int) -> Entry | None:
        u = users.get(s, ())
        if s in keep or len(u) != 1 or u[0] in taken or not _plain(items[u[0]]):
            return None
        return items[u[0]]

    out = list(items)
    for k, it in enumerate(items):
        if (k in taken or not _plain(it) or _registry_name(it) != "matmul"
                or len(it.args) != 2):
            continue
        a, w = (_operand(r, info) for r in it.args)
        z = it.outs[0]
        if a is None or w is None or not info(z, True):
            continue
        dtype = a[1]
        if (len(a[0]) != 2 or len(w[0]) != 2 or w[1] != dtype or dtype not in _BLAS_TYPES
                or a[0][1] != w[0][0] or min(*a[0], w[0][1]) < 2 or info.dtype[z] != dtype):
            continue
        shape = (a[0][0], w[0][1])
        add = only_user(z)
        bias = None
        last = it
        if add is not None and _registry_name(add) == "add" and len(add.args) == 2:
            x, y = add.args
            first = type(x) is Slot and x.i == z
            other = y if first else x
            if ((first or (type(y) is Slot and y.i == z))
                    and not (type(other) is Slot and other.i == z)
                    and _bias(other, info, shape, dtype)
                    and add.dtypes and add.dtypes[0] == dtype
                    and info(add.outs[0]) == shape):
                bias = other
                last = add
        act = None
        nxt = only_user(last.outs[0])
        if (nxt is not None and nxt.op.elementwise and len(nxt.args) == 1
                and type(nxt.args[0]) is Slot):
            act = _activation(nxt, dtype)
            if act is not None:
                last_act = nxt
        if bias is None and act is None:
            continue
        if act is not None:
            last = last_act
        run = _linear(it.args, bias, act, dtype, a[0], w[0])
        new = Entry(private_op(run, "linear", (), save_args=False),
                    (*it.args, bias if bias is not None else 0), None, last.outs,
                    last.grad_in, last.diff_out, None, last.dtypes)
        chain = [e for e in (it, add if bias is not None else None,
                             last if act is not None else None) if e is not None]
        taken.update(made[e.outs[0]] for e in chain)
        for e in chain:
            out[made[e.outs[0]]] = None
        out[made[last.outs[0]]] = new
    return [it for it in out if it is not None]


def _is_linear(it: Entry) -> bool:
    return getattr(it.op.forward, "_yaad_linear", False)


def _owner(x: np.ndarray) -> Any:
    """The array that owns ``x``'s memory (NumPy keeps a view's base the owner)."""
    b = x.base
    return x if b is None else b


def _linear(refs: tuple, bias: Any, act: tuple | None, dtype: np.dtype, sa: tuple,
            sw: tuple) -> Callable:
    """``run(a, w, b)``: ``act(a @ w + b)`` (without ``+ b`` when ``bias`` is None, without
    ``act`` when it is None) for operands of shapes ``sa``, ``sw`` and ``dtype``."""
    n, m = sa[0], sw[1]
    shape = (n, m)
    ndarray = np.ndarray
    f, where = act if act is not None else (None, ())
    k = where.index(None) if act is not None else -1  # (the position of the output)
    other = where[1 - k] if len(where) == 2 else None
    if bias is None:
        def run(a: Any, w: Any, _b: Any) -> Any:
            out = np.matmul(a, w)
            if k == 1:
                f(other, out, out=out)
            elif other is None:
                f(out, out=out)
            else:
                f(out, other, out=out)
            return out
        run._yaad_linear = True
        run.plans = {}
        return run
    plans: dict = {}  # (strides of a, strides of w) -> the gemm call, or None
    last: list = [None, None, None]  # the strides of the last call's a and w, its plan
    square = n == m

    def run(a: Any, w: Any, b: Any) -> Any:
        if a.__class__ is ndarray and w.__class__ is ndarray:
            sa, sw = a.strides, w.strides
            if sa == last[0] and sw == last[1]:
                p = last[2]
            else:
                p = plans.get((sa, sw), plans)
                if p is plans:
                    p = plans[sa, sw] = _gemm_plan(a, w, dtype, shape)
                last[:] = sa, sw, p
            # (NumPy multiplies a matrix by its own transpose with syrk, not gemm)
            if square and p is not None and _owner(a) is _owner(w):
                p = None
        else:
            p = None
        if p is None:
            out = np.matmul(a, w)
            np.add(out, b, out=out)
        else:
            out = np.empty(shape, dtype)
            out[...] = b
            p(a, w, out)
        if k == 0:
            if other is None:
                f(out, out=out)
            else:
                f(out, other, out=out)
        elif k == 1:
            f(other, out, out=out)
        return out

    run._yaad_linear = True
    run.plans = plans  # (what the tests read: which layouts met so far went to BLAS)
    return run


def _gemm_plan(a: np.ndarray, w: np.ndarray, dtype: np.dtype, shape: tuple) -> Any:
    """``call(a, w, out)`` adding ``a @ w`` into the C-ordered ``out`` by one BLAS call, or
    None when the operands' layout has none or its sum is not NumPy's (see _exact)."""
    from scipy.linalg import blas

    # out (n, m) in C order is out.T (m, n) in Fortran order: out.T += w.T @ a.T
    def operand(x: np.ndarray) -> tuple | None:
        if x.flags.c_contiguous:
            return 0, True  # x.T is Fortran-ordered
        if x.flags.f_contiguous:
            return 1, False  # x is; BLAS reads it transposed
        return None

    oa, ow = operand(a), operand(w)
    if oa is None or ow is None or not _exact(dtype, a.shape, w.shape, oa[0], ow[0]):
        return None
    gemm = blas.get_blas_funcs("gemm", dtype=dtype)
    (tb, a_t), (ta, w_t) = oa, ow
    one = dtype.type(1)

    if a_t and w_t:  # (both C-ordered: the common case)
        def call(a: Any, w: Any, out: Any) -> None:
            gemm(one, w.T, a.T, one, out.T, overwrite_c=1)
    else:
        def call(a: Any, w: Any, out: Any) -> None:
            gemm(one, w.T if w_t else w, a.T if a_t else a, one, out.T, trans_a=ta,
                 trans_b=tb, overwrite_c=1)
    return call


_EXACT: dict = {}


def _exact(dtype: np.dtype, sa: tuple, sw: tuple, ta: int, tb: int) -> bool:
    """Whether BLAS's ``C + A B`` equals NumPy's ``A @ B + C`` bit for bit for these
    shapes, dtype and layouts (``ta``, ``tb``: the operands are Fortran-ordered), tested
    once on random values."""
    key = (dtype, sa, sw, ta, tb)
    got = _EXACT.get(key)
    if got is None:
        from scipy.linalg import blas

        rng = np.random.default_rng(0)

        def draw(shape: tuple, order: str) -> np.ndarray:
            x = rng.standard_normal(shape)
            if dtype.kind == "c":
                x = x + 1j * rng.standard_normal(shape)
            return np.asarray(x, dtype=dtype, order=order)

        a = draw(sa, "F" if ta else "C")
        w = draw(sw, "F" if tb else "C")
        b = draw((sa[0], sw[1]), "C")
        want = np.matmul(a, w)
        np.add(want, b, out=want)
        c = b.copy()
        gemm = blas.get_blas_funcs("gemm", dtype=dtype)
        one = dtype.type(1)
        r = gemm(one, w if tb else w.T, a if ta else a.T, one, c.T, trans_a=tb, trans_b=ta,
                 overwrite_c=1)
        got = bool(np.shares_memory(r, c) and np.array_equal(c, want))
        _EXACT[key] = got
    return got


# ---- the derivatives of activations -------------------------------------------------------
#
# The VJP of tanh is g * (1 - y * y), of expit g * (y * (1 - y)), y the activation: three
# NumPy calls over the layer's array, two temporaries. With numba, one loop computes the
# same operations in the same order (numba_loops.py).

def _one(r: Any) -> bool:
    return type(r) in (int, float) and r == 1


def _slot(r: Any) -> int | None:
    return r.i if type(r) is Slot else None


def _loop_entry(kind: str, g: Any, y: Any, last: Entry, dtype: np.dtype) -> Entry:
    run = _grad_loop(kind, dtype)
    return Entry(private_op(run, f"{kind}_grad", (), save_args=False), (g, y), None,
                 last.outs, last.grad_in, last.diff_out, None, last.dtypes)


def _grad_loop(kind: str, dtype: np.dtype, colsum: bool = False) -> Callable:
    """``run(g, y, out=None)``: the VJP of ``kind`` (``tanh`` or ``expit``) at the output
    ``y`` for the gradient ``g`` (arrays of one shape and ``dtype``), into ``out`` if
    given (it may be ``g`` or ``y``); with ``colsum``, ``(that, its sum over axis 0)``."""
    one = dtype.type(1)
    loop: list = []

    def run(g: Any, y: Any, out: Any = None) -> Any:
        # (out: a new array, or g or y, written into: see in_place)
        if out is None:
            out = np.empty(g.shape, dtype)
        if not loop:
            from . import numba_loops

            loop.append(getattr(numba_loops, f"{kind}_grad"))
            loop.append(getattr(numba_loops, f"{kind}_grad_colsum"))
        if g.flags.c_contiguous and y.flags.c_contiguous:
            if not colsum:
                loop[0](g.reshape(-1), y.reshape(-1), one, out.reshape(-1))
                return out
            shape = g.shape
            if _colsum_exact(dtype, shape):
                if len(shape) == 2:  # (the common case: a layer's matrix, as it is)
                    col = np.empty(shape[1], dtype)
                    loop[1](g, y, one, out, col)
                    return out, col
                n = shape[0]
                col = np.empty(shape[1:], dtype)
                loop[1](g.reshape(n, -1), y.reshape(n, -1), one, out.reshape(n, -1),
                        col.reshape(-1))
                return out, col
            loop[0](g.reshape(-1), y.reshape(-1), one, out.reshape(-1))
            return out, np.add.reduce(out, 0)
        # (another layout: NumPy's calls, as the rule makes them)
        if kind == "tanh":
            t = y * y
            np.subtract(1, t, out=t)
        else:
            t = np.subtract(1, y)
            np.multiply(y, t, out=t)
        np.multiply(g, t, out=out)
        return (out, np.add.reduce(out, 0)) if colsum else out

    run._yaad_loop = f"{kind}_grad_colsum" if colsum else f"{kind}_grad"
    return run


def _colsum_loop(dtype: np.dtype) -> Callable:
    """``run(a)``: ``np.add.reduce(a, 0)`` for an array of ``dtype`` (one numba loop where
    it is C-ordered and the loop adds in NumPy's order, see ``_colsum_exact``)."""
    loop: list = []

    def run(a: Any) -> Any:
        shape = a.shape
        if a.flags.c_contiguous and _colsum_exact(dtype, shape):
            if not loop:
                from .numba_loops import colsum

                loop.append(colsum)
            col = np.empty(shape[1:], dtype)
            if len(shape) == 2:
                loop[0](a, col)
            else:
                loop[0](a.reshape(shape[0], -1), col.reshape(-1))
            return col
        return np.add.reduce(a, 0)

    run._yaad_loop = "colsum"
    return run


def _sum_call(it: Entry, info: Any) -> tuple[Any, ...] | None:
    """``(a, axis, dtype, out, keepdims, shape)`` if entry ``it`` is a plain ``sum`` of one
    output over a slot ``a`` whose shape is known, else None."""
    from .codegen import _axis_arg

    if not _plain_kw(it) or _registry_name(it) != "sum" or len(it.outs) != 1:
        return None
    got = _axis_arg(it, ("axis", "dtype", "out", "keepdims"), (None, None, None, False))
    a = it.args[0]
    if got is None or type(a) is not Slot or not info(a.i, True):
        return None
    return (a, *got, info(a.i))


def _last_axis_sum(it: Entry, info: Any) -> int | None:
    """The slot summed if entry ``it`` is ``sum(a, axis=-1, keepdims=True)`` of a real
    C-shaped array with rows of at most ``rowwise.MAX_ROW`` elements, else None."""
    from .rowwise import MAX_ROW

    got = _sum_call(it, info)
    if got is None:
        return None
    a, axis, dtype, out, keepdims, shape = got
    nd = len(shape)
    if type(axis) is tuple and len(axis) == 1:
        axis = axis[0]
    if (dtype is not None or out is not None or keepdims is not True or nd < 1
            or type(axis) is not int or axis not in (-1, nd - 1)
            or not 1 <= shape[-1] <= MAX_ROW or info.dtype[a.i] not in _REAL):
        return None
    return a.i


def _log_softmax_vjp(dtype: np.dtype) -> Callable:
    """``run(g, e, out=None)``: ``g - e * g.sum(-1, keepdims=True)`` (the VJP of
    log_softmax, ``e`` the exponential of its output) as one loop where the arrays are
    C-ordered and the row sums are NumPy's (see rowwise.rows_exact)."""
    from . import rowwise

    def run(g: Any, e: Any, out: Any = None) -> Any:
        # (out: a new array, or g or e, written into: see in_place)
        shape = g.shape
        if out is None:
            out = np.empty(shape, dtype)
        k = shape[-1]
        if g.flags.c_contiguous and e.flags.c_contiguous and rowwise.rows_exact(dtype, k):
            n = g.size // k
            rowwise.loops()["log_softmax_vjp"](g.reshape(n, k), e.reshape(n, k),
                                               np.empty(n, dtype), out.reshape(n, k))
            return out
        t = np.multiply(e, np.add.reduce(g, -1, None, None, True))
        return np.subtract(g, t, out=out)

    run._yaad_loop = "log_softmax_vjp"
    return run


def _scaled_rows_vjp(dtype: np.dtype) -> Callable:
    """``run(g, e, s, out=None)``: ``g - e * s`` for (n, k) ``g`` and ``e`` and (n, 1) ``s``
    of ``dtype`` as one loop where they are C-ordered (the products and differences NumPy
    makes, one at a time)."""
    loop: list = []

    def run(g: Any, e: Any, s: Any, out: Any = None) -> Any:
        if out is None:
            out = np.empty(g.shape, dtype)
        if g.flags.c_contiguous and e.flags.c_contiguous:
            if not loop:
                from .numba_loops import sub_scaled_rows

                loop.append(sub_scaled_rows)
            loop[0](g, e, s, out)
            return out
        return np.subtract(g, np.multiply(e, s), out=out)

    run._yaad_loop = "sub_scaled_rows"
    return run


def softmax_vjps(items: list, keep: set, info: Any) -> list:
    """With numba, ``g - e * sum(g, axis=-1, keepdims=True)`` (log_softmax's VJP over the
    last axis) as one loop whose row sums add in NumPy's order, where the sum and the
    product are read nowhere else and the arrays are real, of one shape and dtype."""
    if not getattr(info, "numba", False):
        return items
    users = _uses_by_item(items)
    made = {o: k for k, it in enumerate(items) if type(it) is Entry for o in it.outs}
    out = list(items)

    def only_user(s: int) -> Entry | None:
        u = users.get(s, ())
        if s in keep or len(u) != 1 or not _plain(items[u[0]]):
            return None
        return items[u[0]]

    for k, it in enumerate(items):
        if out[k] is None:
            continue  # (taken into a loop already)
        if type(it) is Entry and _registry_name(it) == "multiply":
            _scaled_rows(k, it, out, made, only_user, info)
            continue
        g = _last_axis_sum(it, info) if type(it) is Entry else None
        if g is None:
            continue
        s = it.outs[0]
        mul = only_user(s)
        if mul is None or _registry_name(mul) != "multiply" or len(mul.args) != 2:
            continue
        a, b = (_slot(r) for r in mul.args)
        e = b if a == s else a if b == s else None
        if e is None or e == s:
            continue
        sub = only_user(mul.outs[0])
        if (sub is None or _registry_name(sub) != "subtract" or len(sub.args) != 2
                or _slot(sub.args[0]) != g or _slot(sub.args[1]) != mul.outs[0]):
            continue
        r = sub.outs[0]
        dtype = info.dtype[r]
        if dtype not in _REAL or not all(info(x, True) and info.dtype[x] == dtype
                                         and info(x) == info(r) for x in (g, e, mul.outs[0])):
            continue
        out[k] = out[made[mul.outs[0]]] = None
        out[made[r]] = Entry(private_op(_log_softmax_vjp(dtype), "log_softmax_vjp", (),
                                        save_args=False),
                             (Slot(g, False), Slot(e, False)), None, sub.outs, sub.grad_in,
                             sub.diff_out, None, sub.dtypes)
    return [it for it in out if it is not None]


def _scaled_rows(k: int, mul: Entry, out: list, made: dict, only_user: Callable,
                 info: Any) -> None:
    """``g - e * s`` with the row sums ``s`` (n, 1) made elsewhere (a folded constant: the
    sum of a constant gradient) as one loop, in ``out`` (see softmax_vjps)."""
    if not _plain(mul) or len(mul.args) != 2 or len(mul.outs) != 1:
        return
    e, s = (_slot(r) for r in mul.args)
    t = mul.outs[0]
    sub = only_user(t)
    if (e is None or s is None or sub is None or _registry_name(sub) != "subtract"
            or len(sub.args) != 2 or _slot(sub.args[1]) != t or _slot(sub.args[0]) is None
            or len(sub.outs) != 1):
        return
    g, r = _slot(sub.args[0]), sub.outs[0]
    if out[made[r]] is not sub:
        return
    shape, dtype = info(r), info.dtype[r]
    if (dtype not in _REAL or len(shape) != 2 or g in (e, s, t)
            or not all(info(x, True) and info.dtype[x] == dtype and info(x) == shape
                       for x in (g, e, t))
            or not (info(s, True) and info.dtype[s] == dtype and info(s) == (shape[0], 1))):
        return
    out[k] = None
    out[made[r]] = Entry(private_op(_scaled_rows_vjp(dtype), "sub_scaled_rows", (),
                                    save_args=False),
                         (Slot(g, False), Slot(e, False), Slot(s, False)), None, sub.outs,
                         sub.grad_in, sub.diff_out, None, sub.dtypes)


_COLSUM: dict = {}


def _colsum_exact(dtype: np.dtype, shape: tuple) -> bool:
    """Whether the numba column sum equals ``np.add.reduce(a, 0)`` bit for bit for C-ordered
    arrays of this shape and dtype (the rows added in order from 0: NumPy's order when a
    row has more than one element), tested once on random values with zeros of both signs."""
    got = _COLSUM.get((dtype, shape))
    if got is None:
        from .numba_loops import colsum

        rng = np.random.default_rng(0)
        a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)).astype(dtype)
        flat = a.reshape(shape[0], -1)
        flat[:, 0] = -0.0
        col = np.empty(flat.shape[1], dtype)
        colsum(flat, col)
        want = np.add.reduce(a, 0).reshape(-1)
        got = _COLSUM[(dtype, shape)] = bool(
            want.dtype == col.dtype
            and np.array_equal(col.view(np.uint8), want.view(np.uint8)))
    return got


def _axis0_sum(it: Entry, info: Any) -> int | None:
    """The slot summed if entry ``it`` is ``sum(a, axis=0)`` (no keepdims) of a real float
    array with more than one element a row, else None."""
    got = _sum_call(it, info)
    if got is None:
        return None
    a, axis, dtype, out, keepdims, shape = got
    if (dtype is not None or out is not None or keepdims is not False
            or axis not in (0, (0,)) or len(shape) < 2 or math.prod(shape[1:]) < 2
            or shape[0] < 1
            or info.dtype[a.i] not in _REAL):
        return None
    return a.i


def _plain_kw(it: Any) -> bool:
    """An op call spelled as recorded, in the default floating-point state (keywords
    allowed)."""
    return type(it) is Entry and it.spell is None and it.err is None


_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def column_sums(items: list, keep: set, info: Any) -> list:
    """With numba, ``sum(a, axis=0)`` of a real array (a bias's gradient) as one loop: in the
    loop of the activation's derivative that makes ``a`` when there is one (see above),
    else a loop of its own."""
    if not getattr(info, "numba", False):
        return items
    made = {o: k for k, it in enumerate(items) if type(it) is Entry for o in it.outs}
    out = list(items)
    for k, it in enumerate(items):
        a = _axis0_sum(it, info) if type(it) is Entry else None
        if a is None:
            continue
        dtype = info.dtype[a]
        src = items[made[a]] if a in made else None
        if src is not None and getattr(src.op.forward, "_yaad_loop", False) and len(
                src.outs) == 1 and src.op.name in ("tanh_grad", "expit_grad"):
            kind = src.op.name[:-5]
            run = _grad_loop(kind, dtype, colsum=True)
            out[made[a]] = Entry(private_op(run, f"{kind}_grad_colsum", (), save_args=False),
                                 src.args, None, (a, it.outs[0]), src.grad_in,
                                 src.diff_out + it.diff_out, None, src.dtypes + it.dtypes)
            out[k] = None
        else:
            out[k] = Entry(private_op(_colsum_loop(dtype), "colsum", (), save_args=False),
                           (it.args[0],), None, it.outs, it.grad_in, it.diff_out, None,
                           it.dtypes)
    return [it for it in out if it is not None]


def activation_grads(items: list, keep: set, info: Any) -> list:
    """``items`` with the VJPs of ``tanh`` and ``expit`` (see above) as one entry each,
    where the temporaries are read nowhere else and the arrays are real, of one shape and
    dtype; ``info.numba``: numba may be used."""
    if not getattr(info, "numba", False):
        return items
    users = _uses_by_item(items)
    made = {o: k for k, it in enumerate(items) if type(it) is Entry for o in it.outs}

    def only_user(s: int, name: str) -> Entry | None:
        u = users.get(s, ())
        if s in keep or len(u) != 1 or not _plain(items[u[0]]):
            return None
        e = items[u[0]]
        return e if _registry_name(e) == name and len(e.args) == 2 else None

    def other(e: Entry, s: int) -> int | None:
        a, b = (_slot(r) for r in e.args)
        return b if a == s else a if b == s else None

    out = list(items)
    for it in items:
        if not _plain(it) or len(it.args) != 2 or len(it.outs) != 1:
            continue
        name = _registry_name(it)
        a, b = it.args
        if name == "multiply" and _slot(a) is not None and _slot(a) == _slot(b):
            kind, y = "tanh", a.i  # y * y, then 1 - that, then g * that
            e2 = only_user(it.outs[0], "subtract")
            if e2 is None or not _one(e2.args[0]) or _slot(e2.args[1]) != it.outs[0]:
                continue
        elif name == "subtract" and _one(a) and _slot(b) is not None:
            kind, y = "expit", b.i  # 1 - y, then y * that, then g * that
            e2 = only_user(it.outs[0], "multiply")
            if e2 is None or other(e2, it.outs[0]) != y:
                continue
        else:
            continue
        e3 = only_user(e2.outs[0], "multiply")
        g = None if e3 is None else other(e3, e2.outs[0])
        if g is None or g == e2.outs[0]:
            continue
        r = e3.outs[0]
        dtype = info.dtype[r]
        slots = (y, g, it.outs[0], e2.outs[0], r)
        if (dtype not in (np.dtype(np.float32), np.dtype(np.float64))
                or not all(info(s, True) and info.dtype[s] == dtype
                           and info(s) == info(r) for s in slots)):
            continue
        out[made[it.outs[0]]] = out[made[e2.outs[0]]] = None
        out[made[r]] = _loop_entry(kind, Slot(g, False), Slot(y, False), e3, dtype)
    return [it for it in out if it is not None]


# ---- elementwise steps into the temporaries they consume -----------------------------------

def _fresh(it: Any, info: Any) -> bool:
    """Whether entry ``it`` makes a new array that nothing else holds: a ufunc called as
    recorded (its templates spell ``a + b``, ``a @ b``, ``-a``, all new arrays; not the
    conjugate of a real array, which is the array), or a fused product."""
    if type(it) is not Entry or not info(it.outs[0], True):
        return False
    if getattr(it.op.forward, "_yaad_loop", False):
        return it.op.name in ("tanh_grad", "expit_grad", "tanh_grad_colsum",
                              "expit_grad_colsum", "log_softmax_vjp",
                              "sub_scaled_rows")  # (their first
        # output; colsum's: no)
    if len(it.outs) != 1:
        return False
    if _is_linear(it):
        return True
    f = it.op.forward
    return (isinstance(f, np.ufunc) and f.nout == 1 and it.spell is None
            and it.op.name != "conjugate" and (not it.kw or set(it.kw) == {"out"}))


def in_place(items: list, keep: set, info: Any) -> list:
    """``items`` with ufunc steps writing into an operand that is a dead temporary of the
    result's shape and dtype (see the module docstring)."""
    owners: dict[int, frozenset] = {}  # slot -> the temporaries whose memory it may share
    last: dict[int, float] = {}  # temporary -> position of the last read of its memory
    fresh = set()
    for k, it in enumerate(items):
        uses: set = set()
        if type(it) is Entry:
            for r in (*it.args, *(it.kw or {}).values()):
                ref_slots(r, uses)
        else:
            uses = item_uses(it)
        for s in uses:
            for t in owners.get(s, ()):
                last[t] = k
        if type(it) is Alias:
            owners[it.slot] = owners.get(it.of, frozenset())
        elif type(it) is Entry:
            if _fresh(it, info):
                o = it.outs[0]
                owners[o] = frozenset((o,))
                fresh.add(o)
            else:
                shared = frozenset().union(*(owners.get(s, frozenset()) for s in uses))
                for o in item_defs(it):
                    owners[o] = shared
    for s in keep:
        for t in owners.get(s, ()):
            last[t] = float("inf")
    out = []
    for k, it in enumerate(items):
        if type(it) is Entry and _fresh(it, info) and not it.kw and not _is_linear(it):
            o = it.outs[0]
            for r in it.args:
                if (type(r) is Slot and r.i in fresh and last.get(r.i) == k
                        and info(r.i) == info(o) and info.dtype[r.i] == info.dtype[o]):
                    it = Entry(it.op, it.args, {"out": Slot(r.i, False)}, it.outs,
                               it.grad_in, it.diff_out, it.err, it.dtypes)
                    break
        out.append(it)
    return out


def replay_items(items: list, keep: set, info: Any) -> list:
    """The item list a NumPy replay spells: chains fused, the derivatives of activations
    one loop each (with numba), then steps in place."""
    items = activation_grads(fuse(items, keep, info), keep, info)
    items = softmax_vjps(items, keep, info)
    return in_place(column_sums(items, keep, info), keep, info)


