"""Hypothesis strategies for yaad's reliability tests, and the table of op input domains.

Strategies: shapes (0-d and 0-size included), broadcastable shapes, dtypes (float32,
float64, complex64, complex128), axes, keepdims, index expressions, and arrays whose
values lie in a domain (a union of intervals, for the real and the imaginary parts).

The table ``CASES`` says, for every op declared with ``yaad.op`` (``yaad.registry``) and
for the public composite functions, how to draw a valid call and what NumPy computes for
it (the oracle). The fuzz tests walk it; an op in the registry without an entry fails
``test_fuzz_ops.py::test_every_registered_op_has_a_fuzz_case``, so new ops get picked up.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

import hypothesis.extra.numpy as npst
import numpy as np
import scipy.special as sp
from hypothesis import strategies as st

import yaad
from tests.op_cases import (
    ALL,
    ANY,
    C64,
    C128,
    ELEMENTWISE,
    F32,
    F64,
    NO_GRADIENT,
    NONZERO,
    POS,
    PROB,
    REAL,
    SMALL,
    Call,
    Domain,
    Ints,
    Row,
)

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


# ---------------------------------------------------------------------------------------
# The table


@dataclass
class Case:
    """How to call one public function on valid inputs, and its NumPy oracle.

    ``draw(data, dtype)`` returns a :class:`Call`. ``grad``: "smooth" (checked against
    finite differences), "zero" (piecewise constant: the gradient is exactly zero) or
    "none" (the result carries no gradient). ``ok(call)`` rejects calls too close to a
    non-differentiable point for finite differences. ``post`` maps outputs to the
    quantity whose gradient is checked (gauge-invariant parts of eigenvectors, say).
    ``exact=False`` compares forwards to a tolerance (yaad composes it differently).
    ``covers`` names registry ops that the function reaches without being one itself
    (a public wrapper around a helper op). ``call`` replaces ``yaad.<path>`` when the
    arrays are not positional arguments (``concatenate([a, b])``): it takes the arrays
    positionally, as ``ref`` does.
    """

    path: str
    ref: Callable
    draw: Callable
    dtypes: tuple = ALL
    grad: str = "smooth"
    ok: Callable | None = None
    post: Callable | None = None
    nondiff: tuple = ()
    exact: bool = True
    atol: float | None = None  # None: gradcheck's tight default for float64
    rtol: float | None = None
    covers: tuple = ()
    call: Callable | None = None
    note: str = ""

    @property
    def fn(self) -> Callable:
        return self.call or resolve(self.path)

    @property
    def op_name(self) -> str | None:
        spec = getattr(self.fn, "op", None)
        return spec.name if spec is not None else None

    def diff_positions(self, call: Call) -> list[int]:
        """Positional arguments that are differentiated: float/complex arrays."""
        return [i for i, a in enumerate(call.args) if i not in self.nondiff
                and isinstance(a, np.ndarray) and a.dtype.kind in "fc"]


def resolve(path: str) -> Callable:
    """``"linalg.det"`` -> ``yaad.linalg.det``."""
    obj: Any = yaad
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def available(path: str) -> bool:
    try:
        resolve(path)
    except AttributeError:
        return False
    return True


CASES: dict[str, Case] = {}


def case(path: str, ref: Callable, draw: Callable, **kw) -> Case:
    c = Case(path, ref, draw, **kw)
    CASES[path] = c
    return c


def _draw_arrays(data, dts, shps, doms, unique=False) -> list:
    return [data.draw(values(dt, s, d, unique=unique)) for dt, s, d in zip(dts, shps, doms)]


def _dom(dtype, dom: Domain, cdom: Domain | None) -> Domain:
    return (cdom or dom) if np.dtype(dtype).kind == "c" else dom


def unary(path, ref, dom=ANY, cdom=None, real_only=False, grad="smooth", ok=None,
          shape=None, **kw):
    """An elementwise function of one array."""
    shape = shape or shapes()

    def draw(data, dtype):
        s = data.draw(shape)
        return Call((data.draw(values(dtype, s, _dom(dtype, dom, cdom))),))

    return case(path, ref, draw, dtypes=REAL if real_only else ALL, grad=grad, ok=ok, **kw)


def _other_dtype(data, dtype, real_only):
    """Usually ``dtype``; sometimes another float dtype (to test NumPy's promotion)."""
    if data.draw(st.integers(0, 3)):
        return dtype
    return data.draw(dtypes(real_only))


def binary(path, ref, doms=(ANY, ANY), cdoms=(None, None), real_only=False, grad="smooth",
           ok=None, scalars=True, **kw):
    """An elementwise function of two arrays (broadcast; mixed dtypes; Python scalars)."""

    def draw(data, dtype):
        s = data.draw(broadcastable_shapes(2))
        dts = (dtype, _other_dtype(data, dtype, real_only))
        arrs = [data.draw(values(dt, sh, _dom(dt, d, cd)))
                for dt, sh, d, cd in zip(dts, s, doms, cdoms)]
        k = data.draw(st.integers(0, 5)) if scalars else 5
        if k < 2:  # a Python scalar operand: NumPy 2 never upcasts for it
            d = _dom(dtype, doms[k], cdoms[k])
            arrs[k] = data.draw(elements(C128 if np.dtype(dtype).kind == "c" else F64, d))
        return Call(tuple(arrs))

    return case(path, ref, draw, dtypes=REAL if real_only else ALL, grad=grad, ok=ok, **kw)


def nondiff(path, ref, nin=1, kinds=ALL, special=True):
    """A function whose result carries no gradient (comparisons, tests, bit operations)."""

    def draw(data, dtype):
        s = data.draw(broadcastable_shapes(nin))
        if np.dtype(dtype).kind in "fc" and special:
            return Call(tuple(data.draw(special_values(dtype, sh)) for sh in s))
        dom = Domain(real=((0, 7),)) if np.dtype(dtype).kind in "iu" else ANY
        return Call(tuple(data.draw(values(dtype, sh, dom)) for sh in s))

    return case(path, ref, draw, dtypes=kinds, grad="none")


def _broadcast(*arrays):
    return np.broadcast_arrays(*[np.asarray(a) for a in arrays])


def _apart(tol=0.02):
    """ok(): the two inputs are equal or at least ``tol`` apart (kinks of max/min)."""

    def ok(call):
        x, y = _broadcast(*call.args[:2])
        d = np.abs(x - y)
        return bool(np.all((d == 0) | (d > tol)))

    return ok


def _ratio_not_integer(call):
    x, y = _broadcast(*call.args[:2])
    with np.errstate(all="ignore"):
        r = x / y
    return bool(np.all(np.abs(r - np.round(r)) > 0.02))


# ---- elementwise: one row an op in tests/op_cases.py ---------------------------------


def _drawn_params(data, row: Row, shapes_: tuple) -> tuple:
    """The arguments before the inputs: drawn (``row.fuzz_params``) or fixed."""
    if row.fuzz_params is None:
        return row.params
    out = []
    for p, s in zip(row.fuzz_params, shapes_):
        if isinstance(p, Ints):
            out.append(data.draw(npst.arrays(np.int64, s, elements=st.integers(p.lo, p.hi))))
        else:
            out.append(data.draw(values(F64, s, p)))
    return tuple(out)


def elementwise_draw(row: Row) -> Callable:
    """Draw a call of ``row``'s op: inputs in its domains, broadcast shapes (0-d and 0-size
    ones included); with two inputs, sometimes of another float dtype (NumPy's promotion)
    or a Python scalar (NumPy 2 never upcasts for it)."""
    n, nparams = len(row.domains), len(row.params)

    def draw(data, dtype):
        if n == 1 and not nparams:
            shs = (data.draw(shapes()),)
        else:
            shs = data.draw(broadcastable_shapes(nparams + n))
        params = _drawn_params(data, row, shs[:nparams])
        dts = [dtype] * n
        if n == 2:
            dts[1] = _other_dtype(data, dtype, row.complex != "yes")
        arrs = [data.draw(values(dt, sh, row.domain(k, dt)))
                for k, (dt, sh) in enumerate(zip(dts, shs[nparams:]))]
        k = data.draw(st.integers(0, 5)) if n == 2 and row.scalars else 5
        if k < 2:  # a Python scalar operand
            kind = C128 if np.dtype(dtype).kind == "c" else F64
            arrs[k] = data.draw(elements(kind, row.domain(k, kind)))
        return Call((*params, *arrs, *row.after))

    return draw


def _draw_multigammaln(data, dtype):
    d = data.draw(st.integers(1, 4))
    a = data.draw(values(dtype, data.draw(shapes()), Domain(real=((0.5 * d + 0.2, 4.0),))))
    return Call((a, d))


def _draw_betainc(data, dtype):
    sa, sb, sx = data.draw(broadcastable_shapes(3))
    return Call((data.draw(values(dtype, sa, POS)), data.draw(values(dtype, sb, POS)),
                 data.draw(values(dtype, sx, PROB))))


def _draw_gammainc_da(data, dtype):
    sa, sx = data.draw(broadcastable_shapes(2))
    return Call((1, data.draw(values(dtype, sa, POS)), data.draw(values(dtype, sx, POS))))


def _draw_betainc_dab(data, dtype):
    i = data.draw(st.integers(0, 1))
    return Call((i, 1 - i) + _draw_betainc(data, dtype).args)


def _draw_round(data, dtype):
    x = data.draw(values(dtype, data.draw(shapes()), SMALL))
    return Call((x,), {"decimals": data.draw(st.integers(0, 2))})


def _round_ok(call):
    x, d = call.args[0], call.kwargs.get("decimals", 0)
    t = np.abs(np.concatenate([np.ravel(x.real), np.ravel(x.imag)])) * 10.0 ** d
    return bool(np.all(np.abs(t - np.floor(t) - 0.5) > 0.02))


def _draw_clip(data, dtype):
    sx, slo, shi = data.draw(broadcastable_shapes(3))
    x = data.draw(values(dtype, sx))
    kind = data.draw(st.sampled_from(["arrays", "scalars", "lo", "hi"]))
    if kind == "arrays":
        lo = data.draw(values(dtype, slo, Domain(real=((-2.0, -0.1),))))
        hi = data.draw(values(dtype, shi, Domain(real=((0.1, 2.0),))))
    else:
        lo = None if kind == "hi" else data.draw(st.floats(-2, -0.1))
        hi = None if kind == "lo" else data.draw(st.floats(0.1, 2))
    return Call((x, lo, hi))


def _draw_where(data, dtype):
    sc, sx, sy = data.draw(broadcastable_shapes(3))
    cond = data.draw(npst.arrays(np.bool_, sc))
    x = data.draw(values(dtype, sx))
    y = data.draw(values(_other_dtype(data, dtype, False), sy))
    return Call((cond, x, y))


# Ops whose calls are drawn otherwise (a parameter drawn with the inputs, an argument
# that may be None or a keyword): the draw, and what else differs from the row.
_OWN_DRAW = {
    "multigammaln": {"draw": _draw_multigammaln},
    "gammainc_da": {"draw": _draw_gammainc_da}, "betainc_dab": {"draw": _draw_betainc_dab},
    "round": {"draw": _draw_round, "ok": _round_ok},
    "clip": {"draw": _draw_clip}, "where": {"draw": _draw_where},
}

def row_case(name: str, row: Row) -> Case:
    """The case of the elementwise op ``name`` from its row of tests/op_cases.py."""
    kw = {"draw": elementwise_draw(row), "ok": row.ok, **_OWN_DRAW.get(name, {})}
    return Case(row.path or name, row.ref, kw["draw"],
                dtypes=ALL if row.complex == "yes" else REAL, grad=row.grad, ok=kw["ok"],
                nondiff=tuple(k for k, p in enumerate(row.fuzz_params or ())
                              if isinstance(p, Domain)),
                exact=row.exact, note=row.note)


for _name, _row in ELEMENTWISE.items():
    CASES[_row.path or _name] = row_case(_name, _row)

unary("sici", sp.sici, NONZERO, NONZERO)
unary("fresnel", sp.fresnel, ANY, SMALL)

# ---- no gradient -----------------------------------------------------------------------

for _name, _nogradient in NO_GRADIENT.items():
    nondiff(_name, _nogradient.ref, len(_nogradient.args), kinds=_nogradient.kinds)

# ---- shapes and indexing -----------------------------------------------------------------


def _one(dtype_shape_draw, params, dom=ANY, unique=False):
    """A case draw: one array of the drawn dtype and shape, plus ``params(data, shape)``."""

    def draw(data, dtype):
        s = data.draw(dtype_shape_draw)
        x = data.draw(values(dtype, s, dom, unique=unique))
        args, kwargs = params(data, s)
        return Call((x, *args), kwargs)

    return draw


def _factorizations(data, shape):
    n = math.prod(shape)
    dims = []
    rest = n
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1]
        d = data.draw(st.sampled_from(divisors))
        dims.append(d)
        rest = rest // d if d else rest
    if rest != 1 or not dims or data.draw(st.booleans()):
        dims.append(rest)
    if n and data.draw(st.booleans()):
        dims[data.draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


def _draw_reshape(data, shape):
    new = _factorizations(data, shape)
    if math.prod(shape) == 0 and -1 in new:
        new = tuple(0 if d == -1 else d for d in new)
    return (new,), {}


def _draw_transpose(data, shape):
    if data.draw(st.booleans()):
        return (), {}
    perm = data.draw(st.permutations(range(len(shape))))
    return (tuple(p - len(shape) if data.draw(st.booleans()) else p for p in perm),), {}


def _draw_two_axes(data, shape):
    n = len(shape)
    return (data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))), {}


def _draw_moveaxis(data, shape):
    n = len(shape)
    k = data.draw(st.integers(1, n))
    src = data.draw(st.permutations(range(n)))[:k]
    dst = data.draw(st.permutations(range(n)))[:k]
    if k == 1 and data.draw(st.booleans()):
        return (src[0], dst[0] - n), {}
    return (tuple(src), tuple(dst)), {}


def _draw_expand_dims(data, shape):
    n = len(shape) + data.draw(st.integers(1, 2))
    ax = data.draw(st.lists(st.integers(0, n - 1), min_size=n - len(shape),
                            max_size=n - len(shape), unique=True))
    return ((ax[0] if len(ax) == 1 else tuple(ax)),), {}


def _draw_squeeze(data, shape):
    ones = [i for i, s in enumerate(shape) if s == 1]
    if not ones or data.draw(st.booleans()):
        return (), {}
    chosen = data.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    return (), {"axis": chosen[0] if len(chosen) == 1 else tuple(chosen)}


def _draw_broadcast_to(data, shape):
    target = data.draw(npst.broadcastable_shapes(shape, max_dims=4, max_side=3))
    # the target must hold the input: broadcast the two shapes
    return (np.broadcast_shapes(shape, target),), {}


case("reshape", np.reshape, _one(shapes(), _draw_reshape))
case("ravel", np.ravel, _one(shapes(), lambda data, s: ((), {})))
case("transpose", np.transpose, _one(shapes(), _draw_transpose))
case("swapaxes", np.swapaxes, _one(shapes(min_dims=1), _draw_two_axes))
case("matrix_transpose", lambda a: np.swapaxes(a, -1, -2),
     _one(shapes(min_dims=2), lambda data, s: ((), {})))
case("moveaxis", np.moveaxis, _one(shapes(min_dims=1), _draw_moveaxis))
case("expand_dims", np.expand_dims, _one(shapes(), _draw_expand_dims))
case("squeeze", np.squeeze, _one(shapes(max_side=2), _draw_squeeze))
case("broadcast_to", np.broadcast_to, _one(shapes(), _draw_broadcast_to))
case("astype", lambda a, dtype: a.astype(dtype),
     _one(shapes(), lambda data, s: ((data.draw(st.sampled_from(ALL)),), {})))
case("copy", np.copy, _one(shapes(), lambda data, s: ((), {})))
case("func.alias", np.copy, _one(shapes(), lambda data, s: ((), {})))


def _draw_getitem(data, dtype):
    s = data.draw(shapes(min_dims=1))
    return Call((data.draw(values(dtype, s)), data.draw(index_expressions(s))))


case("getitem", lambda a, idx: a[idx], _draw_getitem)


def _draw_scatter_add(data, dtype):
    s = data.draw(shapes(min_dims=1))
    idx = data.draw(index_expressions(s))
    target = np.zeros(s)[idx].shape
    return Call((data.draw(values(dtype, target)), idx, s))


def _scatter_add_ref(values_, idx, shape):
    out = np.zeros(shape, dtype=values_.dtype)
    np.add.at(out, idx, values_)
    return out


case("scatter_add", _scatter_add_ref, _draw_scatter_add)


def _draw_index_put(data, dtype):
    s = data.draw(shapes(min_dims=1))
    # repeated integer indices make the put ambiguous: basic indices and masks only
    idx = data.draw(st.one_of(npst.basic_indices(s), npst.arrays(np.bool_, s)))
    target = np.zeros(s)[idx].shape
    vshape = data.draw(npst.broadcastable_shapes(target, max_dims=len(target), min_side=0))
    vdt = _other_dtype(data, dtype, np.dtype(dtype).kind != "c")
    return Call((data.draw(values(dtype, s)), data.draw(values(vdt, vshape)), idx))


def _index_put_ref(a, v, idx):
    out = a.copy()
    out[idx] = v
    return out


case("index_put", _index_put_ref, _draw_index_put)

# ---- reductions and products -----------------------------------------------------------


def _draw_reduce(data, shape):
    kw = {"axis": data.draw(axes(len(shape))), "keepdims": data.draw(st.booleans())}
    return (), kw


case("sum", np.sum, _one(shapes(), _draw_reduce))
case("mean", np.mean, _one(shapes(min_side=1), _draw_reduce), exact=False)


def _draw_sum_dtype(data, dtype):
    s = data.draw(shapes())
    kw = {"axis": data.draw(axes(len(s))), "dtype": data.draw(st.sampled_from(ALL[1:]))}
    if np.dtype(dtype).kind == "c" and kw["dtype"].kind != "c":
        kw["dtype"] = C128
    return Call((data.draw(values(dtype, s)),), kw)


CASES["sum(dtype=)"] = Case("sum", np.sum, _draw_sum_dtype)


def _draw_matmul(data, dtype):
    n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
    kind = data.draw(st.sampled_from(["mm", "mv", "vm", "vv"]))
    ba, bb = data.draw(broadcastable_shapes(2, max_dims=2))
    a_shape = (k,) if kind in ("vm", "vv") else (*ba, n, k)
    b_shape = (k,) if kind in ("mv", "vv") else (*bb, k, m)
    a = data.draw(values(dtype, a_shape))
    b = data.draw(values(_other_dtype(data, dtype, False), b_shape))
    return Call((a, b))


case("matmul", np.matmul, _draw_matmul)


def _draw_trace(data, shape):
    n = len(shape)
    a1, a2 = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    return (), {"offset": data.draw(st.integers(-2, 2)), "axis1": a1 - n * data.draw(
        st.integers(0, 1)), "axis2": a2}


case("trace", np.trace, _one(shapes(min_dims=2), _draw_trace))


# ---- more reductions -------------------------------------------------------------------


def _distinct(tol=0.01):
    """ok(): the values of the first array are pairwise at least ``tol`` apart (no ties)."""

    def ok(call):
        v = np.sort(np.ravel(call.args[0]).real)
        return bool(np.all(np.diff(v) > tol))

    return ok


def _draw_axis_only(data, shape):
    return (), {"axis": data.draw(axis(len(shape)))}


def _draw_axis_int(data, shape):
    return (), {"axis": data.draw(axis(len(shape), allow_none=False))}


def _draw_ddof(data, shape):
    kw = {"axis": data.draw(axes(len(shape))), "keepdims": data.draw(st.booleans())}
    kw["ddof"] = data.draw(st.integers(0, 1))
    return (), kw


def _reduced_count(call):
    x = call.args[0]
    n = np.size(x) // max(1, np.size(np.sum(x, axis=call.kwargs.get("axis"))))
    return n


def _std_ok(call):
    if _reduced_count(call) <= call.kwargs.get("ddof", 0):
        return False
    v = np.var(call.args[0], axis=call.kwargs.get("axis"), ddof=call.kwargs.get("ddof", 0))
    return bool(np.all(v > 1e-3))


case("prod", np.prod, _one(shapes(max_side=3), _draw_reduce))
case("cumsum", np.cumsum, _one(shapes(), _draw_axis_only))
case("cumprod", np.cumprod, _one(shapes(), _draw_axis_only))
case("var", np.var, _one(shapes(), _draw_ddof), exact=False,
     ok=lambda c: _reduced_count(c) > c.kwargs.get("ddof", 0))
case("std", np.std, _one(shapes(), _draw_ddof), exact=False, ok=_std_ok)
for _name, _ref in (("amax", np.amax), ("amin", np.amin), ("max", np.max), ("min", np.min),
                    ("ptp", np.ptp)):
    case(_name, _ref, _one(shapes(), _draw_reduce, unique=True), dtypes=REAL, ok=_distinct())
case("sort", np.sort, _one(shapes(min_dims=1), _draw_axis_only, unique=True), dtypes=REAL,
     ok=_distinct())
for _name in ("argmax", "argmin"):
    case(_name, getattr(np, _name), _one(shapes(min_side=1), lambda data, s: ((), {
        "axis": data.draw(axis(len(s))), "keepdims": data.draw(st.booleans())})),
        dtypes=REAL, grad="none")
case("argsort", lambda a, axis=-1: np.argsort(a, axis=axis, kind="stable"),
     _one(shapes(min_dims=1), _draw_axis_only), dtypes=REAL, grad="none",
     call=lambda a, axis=-1: yaad.argsort(a, axis=axis, kind="stable"), covers=("argsort",))
for _name in ("all", "any"):
    case(_name, getattr(np, _name), _one(shapes(), _draw_reduce, dom=Domain(
        real=((-1.0, 1.0),))), grad="none")
case("count_nonzero", np.count_nonzero, _one(shapes(), lambda data, s: ((), {
    "axis": data.draw(axes(len(s))), "keepdims": data.draw(st.booleans())})), grad="none")
case("argwhere", np.argwhere, _one(shapes(), lambda data, s: ((), {}), dom=Domain(
    real=((-1.0, 1.0),))), grad="none", covers=("argwhere",))
case("unique_values", np.unique_values, _one(shapes(), lambda data, s: ((), {}), unique=True),
     dtypes=REAL, ok=_distinct(), covers=("unique_indices",))
case("isin", lambda a: np.isin(a, [0.0, 0.5]), _one(shapes(), lambda data, s: ((), {}),
     dom=Domain(real=((-1.0, 1.0),))), grad="none", call=lambda a: yaad.isin(a, [0.0, 0.5]),
     covers=("isin",))


def _draw_searchsorted(data, dtype):
    a = np.sort(data.draw(values(dtype, (data.draw(st.integers(0, 5)),))))
    v = data.draw(values(dtype, data.draw(shapes(max_dims=2))))
    return Call((a, v), {"side": data.draw(st.sampled_from(["left", "right"]))})


case("searchsorted", np.searchsorted, _draw_searchsorted, dtypes=REAL, grad="none",
     covers=("searchsorted",))


def _draw_average(data, dtype):
    s = data.draw(shapes(min_side=1))
    x = data.draw(values(dtype, s))
    kw = {"axis": data.draw(axes(len(s)))}
    if data.draw(st.booleans()):
        kw["weights"] = data.draw(values(REAL[1], s, POS))
    return Call((x,), kw)


case("average", np.average, _draw_average, exact=False,
     call=lambda a, **kw: yaad.average(a, **kw))


def _with_nan(dtype, shape):
    el = elements(dtype, ANY)
    return npst.arrays(dtype, shape, elements=st.one_of(el, st.just(complex("nan")) if np.dtype(
        dtype).kind == "c" else st.just(float("nan"))))


def _draw_nan_reduce(data, dtype):
    s = data.draw(shapes(min_side=1))
    return Call((data.draw(_with_nan(dtype, s)),), {"axis": data.draw(axes(len(s))),
                                                    "keepdims": data.draw(st.booleans())})


case("nansum", np.nansum, _draw_nan_reduce, exact=False)
case("nanmean", np.nanmean, _draw_nan_reduce, exact=False,
     ok=lambda c: bool(np.all(np.sum(~np.isnan(c.args[0]), axis=c.kwargs["axis"]) > 0)))

# ---- joins and splits --------------------------------------------------------------------


def _draw_join(min_n=1, max_n=3, same_shape=False, min_dims=1):
    def draw(data, dtype):
        base = list(data.draw(shapes(min_dims=min_dims)))
        nd = len(base)
        ax = data.draw(st.integers(-nd, nd - 1)) if nd else 0
        arrs = []
        for _ in range(data.draw(st.integers(min_n, max_n))):
            s = list(base)
            if nd and not same_shape:
                s[ax] = data.draw(st.integers(0, 3))
            arrs.append(data.draw(values(_other_dtype(data, dtype, False), tuple(s))))
        if same_shape:
            ax = data.draw(st.integers(-nd - 1, nd))
        return Call(tuple(arrs), {"axis": ax})

    return draw


def _draw_join_none(data, dtype):
    arrs = [data.draw(values(dtype, data.draw(shapes()))) for _ in range(data.draw(
        st.integers(1, 3)))]
    return Call(tuple(arrs), {"axis": None})


case("concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _draw_join(),
     call=lambda *xs, axis=0: yaad.concatenate(list(xs), axis=axis), covers=("concatenate",))
CASES["concatenate(axis=None)"] = Case(
    "concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _draw_join_none,
    call=lambda *xs, axis=0: yaad.concatenate(list(xs), axis=axis))
case("stack", lambda *xs, axis=0: np.stack(xs, axis=axis), _draw_join(same_shape=True,
                                                                       min_dims=0),
     call=lambda *xs, axis=0: yaad.stack(list(xs), axis=axis), covers=("stack",))
for _name in ("hstack", "vstack", "dstack", "column_stack"):
    case(_name, (lambda f: lambda *xs: f(xs))(getattr(np, _name)),
         lambda data, dtype: Call(tuple(data.draw(values(dtype, sh)) for sh in data.draw(
             st.sampled_from([((2,), (2,)), ((2, 3), (2, 3)), ((1, 2), (1, 2), (1, 2)),
                              ((3,), (3,)), ((2, 1, 2), (2, 1, 2))])))),
         call=(lambda f: lambda *xs: f(list(xs)))(resolve(_name)) if available(_name) else None)


def _draw_split(data, dtype):
    s = data.draw(shapes(min_dims=1, min_side=1, max_side=4))
    ax = data.draw(st.integers(-len(s), len(s) - 1))
    n = s[ax]
    how = data.draw(st.one_of(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]),
                              st.lists(st.integers(0, n), max_size=3).map(sorted)))
    return Call((data.draw(values(dtype, s)), how), {"axis": ax})


case("split", np.split, _draw_split)
case("array_split", np.array_split, _draw_split)

# ---- rearranging -----------------------------------------------------------------------------


def _draw_flip(data, shape):
    return (), {"axis": data.draw(axes(len(shape)))}


def _draw_roll(data, shape):
    nd = len(shape)
    if nd and data.draw(st.booleans()):
        ax = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3))
        return (tuple(data.draw(st.integers(-4, 4)) for _ in ax),), {"axis": tuple(ax)}
    return (data.draw(st.integers(-4, 4)),), {"axis": data.draw(axis(nd))}


def _draw_rot90(data, shape):
    a, b = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2,
                              unique=True))
    return (data.draw(st.integers(-2, 5)),), {"axes": (a, b)}


def _draw_tile(data, shape):
    return (tuple(data.draw(st.lists(st.integers(0, 2), max_size=4))),), {}


def _draw_repeat(data, shape):
    nd = len(shape)
    ax = data.draw(axis(nd))
    n = math.prod(shape) if ax is None else shape[ax]
    reps = data.draw(st.one_of(st.integers(0, 3), npst.arrays(np.int64, (n,), elements=st.integers(
        0, 3)), npst.arrays(np.int64, (1,), elements=st.integers(0, 3))))
    return (reps,), {"axis": ax}


def _draw_pad(data, shape):
    nd = len(shape)
    width = data.draw(st.one_of(st.integers(0, 2), st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=nd, max_size=nd).map(tuple)))
    kw = {}
    if data.draw(st.booleans()):
        kw["constant_values"] = data.draw(st.floats(-2, 2))
    return (width,), kw


def _draw_diff(data, shape):
    nd = len(shape)
    kw = {"n": data.draw(st.integers(0, 2)), "axis": data.draw(st.integers(-nd, nd - 1))}
    return (), kw


case("flip", np.flip, _one(shapes(), _draw_flip))
case("fliplr", np.fliplr, _one(shapes(min_dims=2), lambda d, s: ((), {})))
case("flipud", np.flipud, _one(shapes(min_dims=1), lambda d, s: ((), {})))
case("rot90", np.rot90, _one(shapes(min_dims=2), _draw_rot90))
case("roll", np.roll, _one(shapes(), _draw_roll))
case("tile", np.tile, _one(shapes(), _draw_tile))
case("repeat", np.repeat, _one(shapes(), _draw_repeat), covers=("repeat", "repeat_sum"))
case("pad", np.pad, _one(shapes(), _draw_pad), covers=("pad",))
case("diff", np.diff, _one(shapes(min_dims=1), _draw_diff))
case("diagonal", np.diagonal, _one(shapes(min_dims=2), _draw_trace))
case("tril", np.tril, _one(shapes(min_dims=2), lambda d, s: ((), {"k": d.draw(st.integers(
    -2, 2))})))
case("triu", np.triu, _one(shapes(min_dims=2), lambda d, s: ((), {"k": d.draw(st.integers(
    -2, 2))})))
case("diag", np.diag, _one(shapes(min_dims=1, max_dims=2), lambda d, s: ((), {"k": d.draw(
    st.integers(-2, 2))})))


def _draw_diag_embed(data, dtype):
    shape = data.draw(shapes(min_dims=2, max_dims=3, min_side=1))
    a1, a2 = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2,
                                unique=True))
    offset = data.draw(st.integers(-1, 1))
    dshape = np.diagonal(np.zeros(shape), offset, a1, a2).shape
    return Call((data.draw(values(dtype, dshape)), shape), {"offset": offset, "axis1": a1,
                                                       "axis2": a2})


def _diag_embed_ref(d, shape, offset=0, axis1=0, axis2=1):
    out = np.zeros(shape, dtype=d.dtype)
    idx = np.diagonal(np.arange(out.size).reshape(shape), offset, axis1, axis2)
    out.reshape(-1)[idx.reshape(-1)] = d.reshape(-1)
    return out


case("diag_embed", _diag_embed_ref, _draw_diag_embed)


def _draw_take(data, dtype):
    s = data.draw(shapes(min_dims=0, min_side=1))
    ax = data.draw(axis(len(s)))
    n = math.prod(s) if ax is None else s[ax]
    idx = data.draw(st.one_of(st.integers(-n, n - 1), npst.arrays(
        np.int64, npst.array_shapes(min_dims=0, max_dims=2, max_side=3),
        elements=st.integers(-n, n - 1))))
    return Call((data.draw(values(dtype, s)), idx), {"axis": ax})


def _draw_take_along_axis(data, dtype):
    s = data.draw(shapes(min_dims=1, min_side=1))
    ax = data.draw(st.integers(-len(s), len(s) - 1))
    ishape = list(s)
    ishape[ax] = data.draw(st.integers(0, 4))
    idx = data.draw(npst.arrays(np.int64, tuple(ishape), elements=st.integers(0, s[ax] - 1)))
    return Call((data.draw(values(dtype, s)), idx), {"axis": ax})


case("take", np.take, _draw_take)
case("take_along_axis", np.take_along_axis, _draw_take_along_axis)


def _index_put_inplace(a, v, idx):
    # on a non-leaf copy: in-place on a leaf that requires grad is an error
    t = a * 1 if isinstance(a, yaad.Tensor) else a.copy()
    return yaad.index_put_(t, v, idx)


case("index_put_", _index_put_ref, _draw_index_put, call=_index_put_inplace,
     covers=("index_put_",))

# ---- products and einsum ----------------------------------------------------------------------


def _draw_vdot(data, dtype):
    sa = data.draw(shapes(max_dims=2))
    n = math.prod(sa)
    sb = data.draw(st.sampled_from([(n,), sa, (1, n)]))
    return Call((data.draw(values(dtype, sa)), data.draw(values(_other_dtype(
        data, dtype, False), sb))))


def _draw_tensordot(data, dtype):
    k = data.draw(st.integers(0, 2))
    contracted = tuple(data.draw(st.integers(1, 3)) for _ in range(k))
    fa = tuple(data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2))))
    fb = tuple(data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2))))
    a = data.draw(values(dtype, fa + contracted))
    b = data.draw(values(_other_dtype(data, dtype, False), contracted + fb))
    if k and data.draw(st.booleans()):  # the pair form, with the axes of b permuted
        perm = data.draw(st.permutations(range(k)))
        b = np.moveaxis(b, list(range(k)), list(perm))
        axes_ = ([len(fa) + i for i in range(k)], [perm[i] for i in range(k)])
        return Call((a, b), {"axes": axes_})
    return Call((a, b), {"axes": k})


def _draw_two_any(data, dtype):
    sa, sb = data.draw(shapes(max_dims=2)), data.draw(shapes(max_dims=2))
    return Call((data.draw(values(dtype, sa)), data.draw(values(_other_dtype(data, dtype, False),
                                                                 sb))))


def _draw_dot(data, dtype):
    kind = data.draw(st.integers(0, 3))
    k = data.draw(st.integers(1, 3))
    sa = [(), (k,), (2, k), (2, 2, k)][kind]
    sb = data.draw(st.sampled_from([(), (k,), (k, 2), (3, k, 2)])) if kind else data.draw(
        shapes(max_dims=2))
    return Call((data.draw(values(dtype, sa)), data.draw(values(dtype, sb))))


def _draw_inner(data, dtype):
    k = data.draw(st.integers(1, 3))
    sa = data.draw(st.sampled_from([(), (k,), (2, k), (2, 1, k)]))
    sb = data.draw(st.sampled_from([(), (k,), (3, k)]))
    return Call((data.draw(values(dtype, sa)), data.draw(values(dtype, sb))))


case("vdot", np.vdot, _draw_vdot)
case("tensordot", np.tensordot, _draw_tensordot, exact=False)
case("dot", np.dot, _draw_dot, exact=False)
case("inner", np.inner, _draw_inner, exact=False)
case("outer", np.outer, _draw_two_any)
case("kron", np.kron, _draw_two_any)


@st.composite
def einsum_calls(draw, dtype, max_operands=3):
    """Random einsum subscripts (repeated labels, ellipses, implicit outputs) and operands."""
    labels = "abcd"
    size = {c: draw(st.integers(1, 3)) for c in labels}
    n = draw(st.integers(1, max_operands))
    ell = draw(st.booleans())
    batch = draw(shapes(max_dims=2, min_side=1, max_side=2)) if ell else ()
    terms, ops = [], []
    for _ in range(n):
        term = "".join(draw(st.lists(st.sampled_from(labels), max_size=3)))
        shape = tuple(size[c] for c in term)
        if ell:
            lead = batch[len(batch) - draw(st.integers(0, len(batch))):]
            lead = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in lead)
            shape = lead + shape
            term = "..." + term
        terms.append(term)
        ops.append(draw(values(dtype, shape)))
    used = sorted(set("".join(terms).replace(".", "")))
    if draw(st.booleans()):
        subs = ",".join(terms)
    else:
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        subs = ",".join(terms) + "->" + ("..." if ell else "") + out
    return Call((subs, *ops))


case("einsum", np.einsum, lambda data, dtype: data.draw(einsum_calls(dtype)), exact=False,
     covers=("einsum",))

# ---- nn ------------------------------------------------------------------------------------------


def _draw_logsumexp(data, dtype):
    s = data.draw(shapes())
    kw = {"axis": data.draw(axes(len(s))), "keepdims": data.draw(st.booleans())}
    args = [data.draw(values(dtype, s))]
    if data.draw(st.booleans()):  # weights that broadcast to a's shape
        bshape = data.draw(npst.broadcastable_shapes(s, max_dims=len(s), min_side=0).filter(
            lambda b: np.broadcast_shapes(s, b) == s))
        kw["b"] = data.draw(values(REAL[1], bshape, POS))
    return Call(tuple(args), kw)


def _logsumexp_ref(a, axis=None, b=None, keepdims=False):
    if np.size(a) == 0:  # scipy raises IndexError; the sum of no terms is 0, its log -inf
        with np.errstate(divide="ignore"):
            w = np.exp(a) if b is None else np.exp(a) * b
            return np.log(np.sum(w, axis=axis, keepdims=keepdims))
    # scipy gives shape (1,) for a 0-d input with keepdims; NumPy's reductions give ()
    out = sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)
    return np.reshape(out, np.sum(a, axis=axis, keepdims=keepdims).shape)


case("logsumexp", _logsumexp_ref, _draw_logsumexp, exact=False,
     covers=("logsumexp", "logsumexp_sign"))
def _empty_ok(f):
    """SciPy's softmax raises for 0-size input; an empty result is the NumPy-like answer."""
    return lambda x, axis=None: f(x, axis=axis) if np.size(x) else np.array(x, copy=True)


case("softmax", _empty_ok(sp.softmax), _one(shapes(), _draw_axis_only), dtypes=REAL,
     exact=False)
case("log_softmax", _empty_ok(sp.log_softmax), _one(shapes(), _draw_axis_only), dtypes=REAL,
     exact=False)


# ---- linear algebra ----------------------------------------------------------------------------

try:
    import scipy.linalg as sla
except ImportError:  # pragma: no cover - scipy is a dependency
    sla = None


def _batch(data) -> tuple:
    return data.draw(shapes(max_dims=2, min_side=1, max_side=2))


def _square(data, dtype, n_min=1, n_max=3, shift=True, batch=True):
    """A batch of square matrices; ``shift`` adds a spread diagonal (well conditioned,
    eigenvalues apart)."""
    n = data.draw(st.integers(n_min, n_max))
    a = data.draw(values(dtype, (_batch(data) if batch else ()) + (n, n), SMALL))
    if shift:
        a = a + np.diag(np.arange(1, n + 1) * 2.5).astype(dtype)
    return a


def _herm(a):
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _yherm(a):
    return (a + yaad.conj(yaad.swapaxes(a, -1, -2))) / 2


def _gaps(w, tol=0.05) -> bool:
    w = np.sort_complex(np.asarray(w).reshape(-1, np.shape(w)[-1])) if np.iscomplexobj(
        w) else np.sort(np.asarray(w).reshape(-1, np.shape(w)[-1]))
    if w.shape[-1] < 2:
        return True
    d = np.abs(w[:, None, :] - w[:, :, None]) + np.eye(w.shape[-1]) * 1e9
    return bool(np.all(d > tol))


def _abs2(x):
    """|x|^2, computed the same way for arrays and tensors."""
    return yaad.real(x * yaad.conj(x))


def _sq(dtype_draw=None, **kw):
    return lambda data, dtype: Call((_square(data, dtype, **kw),))


def _la(name):
    return lambda *a, **k: getattr(np.linalg, name)(*a, **k)


case("linalg.det", _la("det"), _sq(shift=False))
case("linalg.slogdet", lambda a: tuple(np.linalg.slogdet(a)), _sq(),
     call=lambda a: tuple(yaad.linalg.slogdet(a)), covers=("linalg.slogdet",))
case("linalg.inv", _la("inv"), _sq())
case("linalg.matrix_power", _la("matrix_power"), lambda data, dtype: Call(
    (_square(data, dtype), data.draw(st.sampled_from([-2, -1, 1, 2, 3])))), exact=False,
    note="n = 0 gives a constant (the identity): see test_gradient_semantics")


def _draw_solve(data, dtype):
    a = _square(data, dtype)
    n = a.shape[-1]
    if data.draw(st.booleans()):
        b = data.draw(values(_other_dtype(data, dtype, False), (n,)))
    else:
        b = data.draw(values(_other_dtype(data, dtype, False), a.shape[:-2] + (n, data.draw(
            st.integers(1, 2)))))
    return Call((a, b))


case("linalg.solve", _la("solve"), _draw_solve)
case("linalg.cholesky", lambda a, upper=False: np.linalg.cholesky(_herm(a), upper=upper),
     lambda data, dtype: Call((_square(data, dtype),), {"upper": data.draw(st.booleans())}),
     call=lambda a, upper=False: yaad.linalg.cholesky(_yherm(a), upper=upper),
     covers=("linalg.cholesky",), note="Hermitian part of the input: the op reads one triangle")


def _eigh_ok(call):
    return _gaps(np.linalg.eigvalsh(_herm(call.args[0])))


case("linalg.eigh", lambda a: (lambda r: (r[0], _abs2(r[1])))(np.linalg.eigh(_herm(a))),
     _sq(), call=lambda a: (lambda r: (r[0], _abs2(r[1])))(yaad.linalg.eigh(_yherm(a))),
     ok=_eigh_ok, exact=False, covers=("linalg.eigh",),
     note="|eigenvectors|^2: invariant to the gauge")
case("linalg.eigvalsh", lambda a: np.linalg.eigvalsh(_herm(a)), _sq(),
     call=lambda a: yaad.linalg.eigvalsh(_yherm(a)), ok=_eigh_ok, exact=False)


def _resolvent_call(m, shifts, g):
    # The spectral basis comes from the current value of m, as the rules of eigh pass it.
    from yaad.linalg.spectral import resolvent
    w, v = yaad.linalg.eigh(_yherm(m.detach() if isinstance(m, yaad.Tensor) else m))
    return resolvent(_yherm(m), shifts, g, v, w, n=w.shape[-1], name="fuzz")


def _resolvent_ref(m, shifts, g):
    h = _herm(m)
    eye = np.eye(h.shape[-1])
    return np.stack([np.linalg.solve(x * eye - h, g[..., i]) for i, x in enumerate(shifts)], -1)


def _draw_resolvent(data, dtype):
    m = _square(data, dtype, batch=False)
    t = data.draw(st.integers(1, 2))
    shifts = np.array(data.draw(st.lists(st.sampled_from([-2.0, 1.25, 3.75, 6.25, 11.0]),
                                         min_size=t, max_size=t)))
    return Call((m, shifts, data.draw(values(dtype, (m.shape[-1], t), SMALL))))


def _resolvent_ok(call):
    w = np.linalg.eigvalsh(_herm(call.args[0]))
    return bool(np.min(np.abs(call.args[1][:, None] - w[None, :])) > 0.3)


case("linalg.spectral.resolvent", _resolvent_ref, _draw_resolvent, call=_resolvent_call,
     ok=_resolvent_ok, exact=False, covers=("linalg.resolvent",),
     note="(shift - M)^-1 g by a spectral basis of M (the tails of eigh and svd)")


def _eig_ok(call):
    # LAPACK orders the eigenvalues of an exactly triangular matrix differently from those
    # of its neighbours (a discontinuity of numpy.linalg.eig itself): keep off-diagonals
    a = np.asarray(call.args[0])
    off = ~np.eye(a.shape[-1], dtype=bool)
    return _gaps(np.linalg.eigvals(a), 0.1) and bool(np.all(np.abs(a[..., off]) > 0.05))


def _complex(x):
    return x.astype(np.result_type(x.dtype, np.complex64))


case("linalg.eig", lambda a: (lambda r: (_complex(r[0]), _abs2(r[1])))(np.linalg.eig(a)),
     _sq(shift=True), call=lambda a: (lambda r: (r[0], _abs2(r[1])))(yaad.linalg.eig(a)),
     ok=_eig_ok, covers=("linalg.eig",), exact=False,
     note="yaad returns complex eigenvalues always (documented); |v|^2 is gauge-invariant")
case("linalg.eigvals", lambda a: _complex(np.linalg.eigvals(a)), _sq(), ok=_eig_ok,
     exact=False)


def _rect(data, dtype, tall=None, batch=True):
    m, n = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    if tall is not None and (m < n) == tall:
        m, n = n, m
    a = data.draw(values(dtype, (_batch(data) if batch else ()) + (m, n), SMALL))
    k = min(m, n)
    spread = np.zeros((m, n))
    spread[np.arange(k), np.arange(k)] = np.arange(1, k + 1) * 2.0
    return a + spread.astype(dtype)


def _svd_ok(call):
    s = np.linalg.svd(call.args[0], compute_uv=False)
    return _gaps(s, 0.05) and bool(np.all(s > 0.05))


def _svd_post(r):
    u, s, vh = r
    k = s.shape[-1]
    return _abs2(u[..., :, :k]), s, _abs2(vh[..., :k, :])


case("linalg.svd", lambda a, full_matrices=True: _svd_post(np.linalg.svd(a, full_matrices)),
     lambda data, dtype: Call((_rect(data, dtype),), {"full_matrices": data.draw(st.booleans())}),
     call=lambda a, full_matrices=True: _svd_post(yaad.linalg.svd(a, full_matrices)),
     ok=_svd_ok, covers=("linalg.svd",), exact=False,
     note="|U|^2, |Vh|^2 on the first min(m, n) vectors")
case("linalg.svdvals", lambda a: np.linalg.svd(a, compute_uv=False),
     lambda data, dtype: Call((_rect(data, dtype),)), ok=_svd_ok, exact=False)
case("linalg.pinv", _la("pinv"), lambda data, dtype: Call((_rect(data, dtype),)), ok=_svd_ok,
     exact=False)
case("linalg.cond", _la("cond"), lambda data, dtype: Call((_rect(data, dtype),)), ok=_svd_ok,
     exact=False)
case("linalg.matrix_rank", _la("matrix_rank"), lambda data, dtype: Call((_rect(data, dtype),)),
     grad="none", covers=("linalg.matrix_rank",))


def _draw_qr(data, dtype):
    mode = data.draw(st.sampled_from(["reduced", "complete", "r"]))
    a = _rect(data, dtype, tall=mode != "complete")
    return Call((a,), {"mode": mode})


def _full_rank(call):
    return bool(np.all(np.linalg.svd(call.args[0], compute_uv=False) > 0.05))


def _qr_ok(call):
    # Householder QR jumps (a sign) where a column is already zero below the diagonal;
    # for complex input also where a column with nothing below its diagonal (the last
    # of a square matrix, a 1x1) has a real diagonal entry: LAPACK reflects it to -|a|
    # as soon as its imaginary part is not exactly 0.
    a = np.asarray(call.args[0])
    m, n = a.shape[-2:]
    below = np.tril(np.ones((m, n), dtype=bool), -1)
    ok = _full_rank(call) and bool(np.all(np.abs(a[..., below]) > 0.05))
    if ok and np.iscomplexobj(a) and n >= m:
        ok = bool(np.all(np.abs(a[..., m - 1, m - 1].imag) > 0.05))
    return ok


case("linalg.qr", lambda a, mode="reduced": (np.linalg.qr(a, mode),) if mode == "r" else tuple(
     np.linalg.qr(a, mode)), _draw_qr, ok=_qr_ok,
     call=lambda a, mode="reduced": (yaad.linalg.qr(a, mode),) if mode == "r" else tuple(
         yaad.linalg.qr(a, mode)), covers=("linalg.qr",))


def _draw_lstsq(data, dtype):
    a = _rect(data, dtype, tall=True, batch=False)
    m = a.shape[0]
    bshape = data.draw(st.sampled_from([(m,), (m, 2)]))
    return Call((a, data.draw(values(dtype, bshape))), {"rcond": None})


case("linalg.lstsq", lambda a, b, rcond=None: np.linalg.lstsq(a, b, rcond=rcond)[0],
     _draw_lstsq, ok=_full_rank, exact=False,
     call=lambda a, b, rcond=None: yaad.linalg.lstsq(a, b, rcond=rcond)[0],
     covers=("linalg.lstsq",), note="the solution; residuals and s in test_linalg")


def _norm_ok(call):
    x = np.asarray(call.args[0])
    v = np.sort(np.abs(x).ravel())
    return bool(np.all(v > 0.05)) and (v.size < 2 or bool(np.all(np.diff(v) > 0.01)))


def _draw_vector_norm(data, dtype):
    s = data.draw(shapes(min_side=1))
    kw = {"axis": data.draw(axes(len(s))), "keepdims": data.draw(st.booleans()),
          "ord": data.draw(st.sampled_from([2, 1, np.inf, -np.inf, 3, 0.5, -1]))}
    return Call((data.draw(values(dtype, s)),), kw)


def _draw_matrix_norm(data, dtype):
    kw = {"keepdims": data.draw(st.booleans()),
          "ord": data.draw(st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]))}
    return Call((_rect(data, dtype),), kw)


def _matrix_norm_ok(call):
    a = call.args[0]
    return (_svd_ok(call) and _gaps(np.sum(np.abs(a), axis=-1), 0.02)
            and _gaps(np.sum(np.abs(a), axis=-2), 0.02) and bool(np.all(np.abs(a) > 0.02)))


def _draw_norm(data, dtype):
    if data.draw(st.booleans()):
        s = data.draw(shapes(min_side=1))
        kw = {"ord": None, "axis": data.draw(st.one_of(st.none(), axis(len(s), False)))
              if len(s) else None, "keepdims": data.draw(st.booleans())}
        if len(s) == 1 or isinstance(kw["axis"], int):
            kw["ord"] = data.draw(st.sampled_from([None, 2, 1, np.inf, -np.inf, 3]))
        return Call((data.draw(values(dtype, s)),), kw)
    a = _rect(data, dtype)
    return Call((a,), {"ord": data.draw(st.sampled_from([None, "fro", "nuc", 1, 2, np.inf])),
                       "axis": (-2, -1), "keepdims": data.draw(st.booleans())})


case("linalg.vector_norm", _la("vector_norm"), _draw_vector_norm, ok=_norm_ok, exact=False,
     covers=("linalg.vector_norm",))
case("linalg.matrix_norm", _la("matrix_norm"), _draw_matrix_norm, ok=_matrix_norm_ok,
     exact=False)
case("linalg.norm", _la("norm"), _draw_norm,
     ok=lambda c: _norm_ok(c) if c.kwargs["axis"] != (-2, -1) else _matrix_norm_ok(c),
     exact=False)


def _draw_cross(data, dtype):
    sa, sb = data.draw(broadcastable_shapes(2, max_dims=2, min_side=1))
    return Call((data.draw(values(dtype, sa + (3,))), data.draw(values(dtype, sb + (3,)))))


case("linalg.cross", _la("cross"), _draw_cross)


def _draw_vecdot(data, dtype):
    sa, sb = data.draw(broadcastable_shapes(2, max_dims=2, min_side=1))
    k = data.draw(st.integers(1, 3))
    return Call((data.draw(values(dtype, sa + (k,))), data.draw(values(dtype, sb + (k,)))))


case("linalg.vecdot", _la("vecdot"), _draw_vecdot, exact=False)
case("linalg.outer", _la("outer"), lambda data, dtype: Call(tuple(data.draw(values(
    dtype, (data.draw(st.integers(1, 3)),))) for _ in range(2))))
case("linalg.trace", _la("trace"), lambda data, dtype: Call((data.draw(values(dtype, data.draw(
    shapes(min_dims=2)))),), {"offset": data.draw(st.integers(-2, 2))}))
case("linalg.diagonal", _la("diagonal"), lambda data, dtype: Call((data.draw(values(
    dtype, data.draw(shapes(min_dims=2)))),), {"offset": data.draw(st.integers(-2, 2))}))
case("linalg.matmul", _la("matmul"), _draw_matmul)
# yaad.sparse: products of a fixed pattern with values (rows 0: cols 0, 2; 1: col 1;
# 2: cols 0, 2), of its transpose and of a constant SciPy matrix, with vectors or batches.
_SPARSE_INDPTR, _SPARSE_INDICES = np.array([0, 2, 3, 5]), np.array([0, 2, 1, 0, 2])


def _sparse_dense(v):
    m = np.zeros((3, 3), dtype=np.asarray(v).dtype)
    np.add.at(m, (np.repeat(np.arange(3), np.diff(_SPARSE_INDPTR)), _SPARSE_INDICES), v)
    return m


def _sparse_products(v, x):
    import scipy.sparse as sps

    s = yaad.sparse.csr_array((v, _SPARSE_INDICES, _SPARSE_INDPTR), shape=(3, 3))
    fixed = yaad.sparse.asarray(sps.csr_array(_sparse_dense(np.arange(1.0, 6.0))))
    return yaad.concatenate([s @ x, s.T @ x, fixed @ x, fixed.mH @ x])


def _sparse_products_ref(v, x):
    m, fixed = _sparse_dense(v), _sparse_dense(np.arange(1.0, 6.0))
    return np.concatenate([m @ x, m.T @ x, fixed @ x, fixed.T @ x])


case("sparse.csr_array", _sparse_products_ref, lambda data, dtype: Call((
    data.draw(values(dtype, (5,))),
    data.draw(values(dtype, data.draw(st.sampled_from([(3,), (3, 1), (3, 2)])))))),
    call=_sparse_products, exact=False,
    covers=("sparse.pattern_matmul", "sparse.pattern_matmul_transposed",
            "sparse.operator_matmul"))
case("linalg.matrix_transpose", _la("matrix_transpose"), lambda data, dtype: Call((data.draw(
    values(dtype, data.draw(shapes(min_dims=2)))),)))
case("linalg.tensordot", lambda a, b, axes=2: np.linalg.tensordot(a, b, axes=axes),
     _draw_tensordot, exact=False)


def _draw_multi_dot(data, dtype):
    dims = [data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(3, 5)))]
    shapes_ = [(dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    if data.draw(st.booleans()):
        shapes_[0] = shapes_[0][1:]
    if data.draw(st.booleans()):
        shapes_[-1] = shapes_[-1][:1]
    return Call(tuple(data.draw(values(dtype, s)) for s in shapes_))


case("linalg.multi_dot", lambda *xs: np.linalg.multi_dot(xs), _draw_multi_dot, exact=False,
     call=lambda *xs: yaad.linalg.multi_dot(list(xs)))


def _draw_tensorinv(data, dtype):
    a = _square(data, dtype, 2, 3, batch=False)
    n = a.shape[0]
    out = {2: (2, 1), 3: (3, 1)}[n]
    return Call((a.reshape(out + (n,)),), {"ind": len(out)})


def _draw_tensorsolve(data, dtype):
    call = _draw_tensorinv(data, dtype)
    a = call.args[0]
    b = data.draw(values(dtype, a.shape[:call.kwargs["ind"]]))
    return Call((a, b))


case("linalg.tensorinv", _la("tensorinv"), _draw_tensorinv, exact=False)
case("linalg.tensorsolve", _la("tensorsolve"), _draw_tensorsolve, exact=False)


def _near_identity(data, dtype):
    n = data.draw(st.integers(1, 3))
    return np.eye(n, dtype=dtype) + 0.3 * data.draw(values(dtype, _batch(data) + (n, n), SMALL))


def _scipy_matfunc(name):
    """SciPy's matrix function, batched, in the input's precision (SciPy computes single
    precision in double; yaad keeps float32 float32)."""

    def ref(a):
        f = getattr(sla, name)
        out = np.array([f(m) for m in a.reshape(-1, *a.shape[-2:])]).reshape(a.shape)
        if a.dtype.kind == "f" and np.iscomplexobj(out) and np.all(abs(out.imag) < 1e-5):
            out = out.real  # SciPy's logm of a real matrix with complex eigenvalues
        single = a.dtype in (F32, C64)
        kind = "c" if np.iscomplexobj(out) or a.dtype.kind == "c" else "f"
        return out.astype({("f", False): F64, ("f", True): F32, ("c", False): C128,
                           ("c", True): C64}[kind, single])

    return ref


case("linalg.expm", _scipy_matfunc("expm"), lambda data, dtype: Call((data.draw(values(
    dtype, _batch(data) + (data.draw(st.integers(1, 3)),) * 2, SMALL)),)), exact=False)
for _name in ("logm", "sqrtm"):
    case(f"linalg.{_name}", _scipy_matfunc(_name), lambda data, dtype: Call(
        (_near_identity(data, dtype),)), exact=False)


def _draw_solve_triangular(data, dtype):
    a = _square(data, dtype, batch=False)
    n = a.shape[0]
    b = data.draw(values(dtype, data.draw(st.sampled_from([(n,), (n, 2)]))))
    kw = {"trans": data.draw(st.sampled_from([0, 1, 2])), "lower": data.draw(st.booleans()),
          "unit_diagonal": data.draw(st.booleans())}
    return Call((a, b), kw)


case("linalg.solve_triangular", lambda a, b, **kw: sla.solve_triangular(a, b, **kw),
     _draw_solve_triangular, exact=False,
     note="reads one triangle: the gradient for the other one is zero")


def _draw_block_upper(data, dtype):
    n = data.draw(st.integers(1, 3))
    sa, se = data.draw(broadcastable_shapes(2, max_dims=2, min_side=1))
    return Call((data.draw(values(dtype, sa + (n, n))), data.draw(values(dtype, se + (n, n)))))


def _block_upper_ref(a, e):
    z = np.zeros(np.broadcast_shapes(a.shape, e.shape), np.result_type(a, e))
    a, e = a + z, e + z
    return np.concatenate([np.concatenate([a, e], -1), np.concatenate([z, a], -1)], -2)


case("linalg.matrix_functions.block_upper", _block_upper_ref, _draw_block_upper)


# ---- numpy.fft ---------------------------------------------------------------------------

NORMS = (None, "backward", "ortho", "forward")


def _draw_fft_1d(data, dtype):
    s = data.draw(shapes(min_dims=1, min_side=1, max_side=4))
    kw = {"axis": data.draw(axis(len(s), allow_none=False)),
          "norm": data.draw(st.sampled_from(NORMS))}
    n = data.draw(st.one_of(st.none(), st.integers(1, 6)))
    if n is not None:
        kw["n"] = n
    return Call((data.draw(values(dtype, s)),), kw)


def _draw_fft_nd(two=False):
    def draw(data, dtype):
        shape = data.draw(shapes(min_dims=2 if two else 1, min_side=1, max_side=3))
        nd = len(shape)
        kw = {"norm": data.draw(st.sampled_from(NORMS))}
        k = 2 if two else data.draw(st.integers(1, nd))
        ax = data.draw(st.permutations(range(nd)))[:k]
        if two or data.draw(st.booleans()):
            kw["axes"] = tuple(a - nd * data.draw(st.integers(0, 1)) for a in ax)
        elif k != nd:
            kw["axes"] = tuple(ax)
        if data.draw(st.booleans()):
            kw["s"] = tuple(data.draw(st.integers(1, 4)) for _ in range(k))
            kw.setdefault("axes", tuple(range(-k, 0)))
        return Call((data.draw(values(dtype, shape)),), kw)

    return draw


def _fft_ref(name):
    return lambda a, **kw: getattr(np.fft, name)(a, **kw)


for _name in ("fft", "ifft", "hfft"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_1d)
case("fft.irfft", _fft_ref("irfft"), _draw_fft_1d,
     note="complex and real input: the imaginary parts of frequency 0 and n/2 are ignored")
for _name in ("rfft", "ihfft"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_1d, dtypes=REAL)
for _name in ("fftn", "ifftn", "irfftn"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_nd())
case("fft.rfftn", _fft_ref("rfftn"), _draw_fft_nd(), dtypes=REAL)
for _name in ("fft2", "ifft2", "irfft2"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_nd(two=True))
case("fft.rfft2", _fft_ref("rfft2"), _draw_fft_nd(two=True), dtypes=REAL)


def _draw_fftshift(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    ax = data.draw(st.one_of(st.none(), axis(len(shape), allow_none=False), axes(len(shape)
                                                                                  ).filter(
        lambda a: isinstance(a, tuple))))
    return Call((data.draw(values(dtype, shape)),), {"axes": ax})


for _name in ("fftshift", "ifftshift"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fftshift)


# ---- scipy.stats ---------------------------------------------------------------------------
# x is drawn as loc + scale * z with z inside the support, away from its ends and kinks;
# the parameters are differentiated too. SciPy computes in float64 only: so does the case.

_Z_ANY = Domain(real=((-3.0, 3.0),))
_Z_POS = Domain(real=((0.2, 4.0),))
_Z_UNIT = Domain(real=((0.05, 0.95),))
_NONZERO_Z = Domain(real=((-3.0, -0.1), (0.1, 3.0)))
_SHAPE = Domain(real=((0.6, 4.0),))
STATS_CONTINUOUS = {  # name: (domain of z, domains of the shape parameters)
    "norm": (_Z_ANY, ()), "t": (_Z_ANY, (_SHAPE,)), "gamma": (_Z_POS, (_SHAPE,)),
    "chi2": (_Z_POS, (_SHAPE,)), "beta": (_Z_UNIT, (_SHAPE, _SHAPE)),
    "expon": (_Z_POS, ()), "laplace": (_NONZERO_Z, ()), "cauchy": (_Z_ANY, ()),
    "uniform": (_Z_UNIT, ()), "lognorm": (_Z_POS, (Domain(real=((0.3, 2.0),)),)),
}
STATS_METHODS = ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf")


def _draw_continuous(zdom, shape_doms):
    def draw(data, dtype):
        s = data.draw(broadcastable_shapes(3 + len(shape_doms), max_dims=2, max_side=2))
        z = data.draw(values(F64, s[0], zdom))
        params = tuple(data.draw(values(F64, sh, d)) for sh, d in zip(s[1:], shape_doms))
        loc = data.draw(values(F64, s[-2], Domain(real=((-1.0, 1.0),))))
        scale = data.draw(values(F64, s[-1], Domain(real=((0.5, 2.0),))))
        return Call((loc + scale * z,) + params + (loc, scale))

    return draw


def _scipy_stat(name, method):
    import scipy.stats as ss

    return lambda *args: getattr(getattr(ss, name), method)(*args)


for _name, (_zdom, _sdoms) in STATS_CONTINUOUS.items():
    for _method in STATS_METHODS:
        case(f"stats.{_name}.{_method}", _scipy_stat(_name, _method),
             _draw_continuous(_zdom, _sdoms), dtypes=(F64,), exact=False)


def _draw_discrete(name):
    def draw(data, dtype):
        sk, sp_ = data.draw(broadcastable_shapes(2, max_dims=2, max_side=3))
        if name == "poisson":
            k = data.draw(npst.arrays(F64, sk, elements=st.integers(0, 6).map(float)))
            return Call((k, data.draw(values(F64, sp_, POS))))
        n = data.draw(st.integers(0, 6))
        k = data.draw(npst.arrays(F64, sk, elements=st.integers(0, n).map(float)))
        return Call((k, n, data.draw(values(F64, sp_, PROB))))

    return draw


for _name in ("poisson", "binom"):
    for _method in ("logpmf", "pmf"):
        case(f"stats.{_name}.{_method}", _scipy_stat(_name, _method), _draw_discrete(_name),
             dtypes=(F64,), exact=False, nondiff=(0,),
             note="k (and binom's n) are integers: not differentiated here")


def _draw_dirichlet(data, dtype):
    k = data.draw(st.integers(2, 4))
    n = data.draw(st.sampled_from([(), (data.draw(st.integers(1, 3)),)]))
    x = data.draw(values(F64, (k,) + n, Domain(real=((0.2, 1.0),))))
    x = x / x.sum(axis=0)
    if data.draw(st.booleans()):
        x = x[:-1]  # SciPy's K - 1 form
    return Call((x, data.draw(values(F64, (k,), Domain(real=((0.5, 3.0),))))))


def _draw_mvn(data, dtype):
    k = data.draw(st.integers(1, 3))
    a = data.draw(values(F64, (k, k), SMALL))
    kind = data.draw(st.sampled_from(["full", "diag", "scalar"]))
    cov = {"full": a @ a.T + np.eye(k), "diag": np.abs(np.diag(a)) + 0.5,
           "scalar": np.array(abs(a[0, 0]) + 0.5)}[kind]
    x = data.draw(values(F64, data.draw(st.sampled_from([(k,), (2, k)]))))
    return Call((x, data.draw(values(F64, (k,))), cov))


for _method in ("logpdf", "pdf"):
    case(f"stats.dirichlet.{_method}", _scipy_stat("dirichlet", _method), _draw_dirichlet,
         dtypes=(F64,), exact=False)
    case(f"stats.multivariate_normal.{_method}", _scipy_stat("multivariate_normal", _method),
         _draw_mvn, dtypes=(F64,), exact=False)


# ---- NumPy and SciPy stragglers ----------------------------------------------------------


def _draw_cross(data, dtype):
    sa, sb = data.draw(broadcastable_shapes(2, max_dims=2))
    na, nb = data.draw(st.sampled_from([(3, 3), (3, 3), (2, 3), (3, 2), (2, 2)]))
    a = data.draw(values(dtype, sa + (na,)))
    b = data.draw(values(_other_dtype(data, dtype, False), sb + (nb,)))
    kw = {}
    if data.draw(st.booleans()) and a.ndim > 1:
        a = np.moveaxis(a, -1, 0)
        kw["axisa"] = 0
    if data.draw(st.booleans()) and (na, nb) != (2, 2):
        kw["axisc"] = 0
    return Call((a, b), kw)


case("cross", np.cross, _draw_cross)


def _draw_gradient(data, dtype):
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=3, max_side=4))
    kw = {"edge_order": data.draw(st.sampled_from([1, 2]))}
    axes_ = tuple(range(len(shape)))
    if data.draw(st.booleans()):
        kw["axis"] = data.draw(st.integers(0, len(shape) - 1))
        axes_ = (kw["axis"],)
    kind = data.draw(st.sampled_from(["none", "scalar", "each"]))
    spacing = ()
    if kind == "scalar":
        spacing = (data.draw(st.floats(0.5, 2.0)),)
    elif kind == "each":
        spacing = tuple(np.cumsum(data.draw(values(F64, (shape[ax],), Domain(
            real=((0.5, 1.5),))))) for ax in axes_)
    return Call((data.draw(values(dtype, shape)),) + spacing, kw)


case("gradient", np.gradient, _draw_gradient, note="differentiable in the coordinates too")


def _draw_rollaxis(data, shape):
    n = len(shape)
    return (data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n))), {}


case("rollaxis", np.rollaxis, _one(shapes(min_dims=1), _draw_rollaxis))


def _draw_partition(data, shape):
    ax = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = math.prod(shape) if ax is None else shape[ax]
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(0, n - 1),
                                                                min_size=1, max_size=2)))
    return (kth,), {"axis": ax}


case("partition", np.partition, _one(shapes(min_dims=1, min_side=1), _draw_partition,
                                      unique=True), dtypes=REAL, ok=_distinct())
case("argpartition", np.argpartition, _one(shapes(min_dims=1, min_side=1), _draw_partition),
     dtypes=REAL, grad="none")


def _draw_select(data, dtype):
    k = data.draw(st.integers(1, 3))
    shs = data.draw(broadcastable_shapes(2 * k + 1))
    conds = [data.draw(npst.arrays(np.bool_, s)) for s in shs[:k]]
    choices = [data.draw(values(_other_dtype(data, dtype, False), s)) for s in shs[k:2 * k]]
    default = (data.draw(values(dtype, shs[-1])) if data.draw(st.booleans())
               else data.draw(st.floats(-2, 2)))
    return Call((k, *conds, *choices, default))


def _select(fn):
    def call(k, *rest):
        return fn(list(rest[:k]), list(rest[k:2 * k]), rest[2 * k])

    return call


case("select", _select(np.select), _draw_select, call=_select(yaad.select))


def _draw_nan_to_num(data, dtype):
    x = data.draw(special_values(dtype, data.draw(shapes())).filter(
        lambda a: np.all(np.abs(a[np.isfinite(a)]) < 1e3)))
    kw = {}
    if data.draw(st.booleans()):
        kw = {"nan": data.draw(st.floats(-2, 2)), "posinf": data.draw(st.floats(2, 9)),
              "neginf": data.draw(st.floats(-9, -2))}
    return Call((x,), kw)


case("nan_to_num", np.nan_to_num, _draw_nan_to_num,
     ok=lambda c: bool(np.all(np.isfinite(c.args[0]))),
     note="gradient 1 where kept, 0 where replaced (test_numpy_stragglers_vs_jax)")


def _draw_real_if_close(data, dtype):
    x = data.draw(values(dtype, data.draw(shapes())))
    if np.dtype(dtype).kind == "c" and data.draw(st.booleans()):
        x = np.asarray(x.real + 1j * np.finfo(dtype).eps * data.draw(st.sampled_from(
            [0.0, 10.0, 1e3])), dtype=dtype)
    return Call((x,), {"tol": data.draw(st.sampled_from([100, 1e-3]))})


case("real_if_close", np.real_if_close, _draw_real_if_close)


def _draw_interp(data, dtype):
    n = data.draw(st.integers(1, 5))
    xp = np.cumsum(data.draw(values(F64, (n,), Domain(real=((0.2, 1.0),))))) - 1.5
    fp = data.draw(values(data.draw(st.sampled_from([F64, C128])), (n,)))
    x = data.draw(values(dtype if np.dtype(dtype).kind == "f" else F64, data.draw(shapes()),
                         Domain(real=((-2.5, 3.5),))))
    kw = {}
    if data.draw(st.booleans()):
        kw = {"left": data.draw(st.floats(-3, 3)), "right": data.draw(st.floats(-3, 3))}
    elif data.draw(st.booleans()):
        kw = {"period": data.draw(st.floats(1.0, 6.0))}
    return Call((x, xp, fp), kw)


def _interp_ok(call):
    """x away from the knots, and (with a period) no two knots at the same phase: there
    the sort of the knots ties and the derivative in a knot is one-sided."""
    x, xp = call.args[0], call.args[1]
    if "period" in call.kwargs:
        p = call.kwargs["period"]
        phases = np.sort(np.mod(xp, p))
        if np.any(np.diff(np.concatenate([phases, phases[:1] + p])) <= 0.02):
            return False
        x, xp = np.mod(x, p), np.concatenate([phases - p, phases, phases + p])
    return bool(np.all(np.abs(np.subtract.outer(np.ravel(x), xp)) > 0.02))


case("interp", np.interp, _draw_interp, dtypes=REAL, ok=_interp_ok,
     note="kinks at the knots: away from them")


def _draw_polyval(data, dtype):
    p = data.draw(values(dtype, (data.draw(st.integers(1, 4)),)))
    return Call((p, data.draw(values(_other_dtype(data, dtype, False), data.draw(shapes())))))


case("polyval", np.polyval, _draw_polyval)


def _draw_convolve_1d(default):
    def draw(data, dtype):
        a = data.draw(values(dtype, (data.draw(st.integers(1, 5)),)))
        v = data.draw(values(_other_dtype(data, dtype, False), (data.draw(st.integers(1, 5)),)))
        mode = data.draw(st.sampled_from([None, "full", "same", "valid"]))
        return Call((a, v), {} if mode is None else {"mode": mode})

    return draw


case("convolve", np.convolve, _draw_convolve_1d("full"))
case("correlate", np.correlate, _draw_convolve_1d("valid"))


def _draw_convolve_nd(data, dtype):
    nd = data.draw(st.integers(1, 2))
    a = data.draw(values(dtype, tuple(data.draw(st.integers(1, 4)) for _ in range(nd))))
    v = data.draw(values(_other_dtype(data, dtype, False),
                         tuple(data.draw(st.integers(1, 3)) for _ in range(nd))))
    if data.draw(st.booleans()):
        a, v = v, a
    return Call((a, v), {"mode": data.draw(st.sampled_from(["full", "same", "valid"])),
                         "method": data.draw(st.sampled_from(["auto", "direct", "fft"]))})


def _scipy_signal(name):
    import scipy.signal as ssig

    return lambda *a, **kw: getattr(ssig, name)(*a, **kw)


case("signal.convolve", _scipy_signal("convolve"), _draw_convolve_nd)
case("signal.correlate", _scipy_signal("correlate"), _draw_convolve_nd)


def _draw_fftconvolve(data, dtype):
    call = _draw_convolve_nd(data, dtype)
    kw = {"mode": call.kwargs["mode"]}
    if call.args[0].ndim == 2 and data.draw(st.booleans()):
        kw["axes"] = data.draw(st.sampled_from([0, 1, (0, 1), -1]))
        other = 1 - kw["axes"] % 2 if kw["axes"] != (0, 1) else None
        if other is not None:  # the other axis is a batch: lengths equal
            a, v = call.args
            v = np.repeat(v[(slice(None),) * other + (slice(0, 1),)], a.shape[other], other)
            return Call((a, v), kw)
    return Call(call.args, kw)


case("signal.fftconvolve", _scipy_signal("fftconvolve"), _draw_fftconvolve, exact=False)


def _draw_sylvester(data, dtype):
    m, n = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    batch = data.draw(st.sampled_from([(), (2,)]))
    a = data.draw(values(dtype, batch + (m, m), SMALL)) + 3 * np.eye(m, dtype=dtype)
    b = data.draw(values(_other_dtype(data, dtype, False), (n, n), SMALL)) + 2 * np.eye(n)
    q = data.draw(values(dtype, (m, n)))
    return Call((a, b.astype(np.result_type(b, dtype)), q))


def _sylvester_ref(a, b, q):
    # (promoted first: SciPy 1.17 gives a wrong x for a real `a` with complex eigenvalues
    # and a complex `b`; see test_regression_solve_sylvester_with_a_real_and_a_complex_matrix)
    a, b, q = (np.asarray(v, np.result_type(a, b, q)) for v in (a, b, q))
    return np.vectorize(sla.solve_sylvester, signature="(m,m),(n,n),(m,n)->(m,n)")(a, b, q)


case("linalg.solve_sylvester", _sylvester_ref, _draw_sylvester, exact=False)


def _draw_lyapunov(data, dtype):
    n = data.draw(st.integers(1, 3))
    a = data.draw(values(dtype, (n, n), SMALL)) + 3 * np.eye(n, dtype=dtype)
    return Call((a, data.draw(values(dtype, (n, n)))))


case("linalg.solve_continuous_lyapunov", lambda a, q: sla.solve_continuous_lyapunov(a, q),
     _draw_lyapunov, exact=False)


def _draw_banded(data, dtype):
    n = data.draw(st.integers(1, 5))
    lower, upper = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    ab = data.draw(values(dtype, (lower + upper + 1, n), SMALL))
    ab[upper] += 4
    b = data.draw(values(dtype, data.draw(st.sampled_from([(n,), (n, 2)]))))
    return Call(((lower, upper), ab, b))


case("linalg.solve_banded", lambda lu, ab, b: sla.solve_banded(lu, ab, b), _draw_banded,
     exact=False, note="entries of ab outside the matrix are not read: zero gradient")


def _draw_polar(data, dtype):
    side = data.draw(st.sampled_from(["right", "left"]))
    return Call((_rect(data, dtype, batch=False),), {"side": side})


case("linalg.polar", lambda a, side="right": sla.polar(a, side), _draw_polar, ok=_svd_ok,
     exact=False)
case("linalg.schur", lambda a, output="real": sla.schur(a, output),
     lambda data, dtype: Call((_square(data, dtype, batch=False),), {"output": data.draw(
         st.sampled_from(["real", "complex"]))}), grad="none", nondiff=(0,),
     note="no gradient: the Schur vectors' phases and the eigenvalue order are gauge")


# ---- more of NumPy, composed ------------------------------------------------------------


def _draw_cumulative(data, dtype):
    s = data.draw(shapes(max_dims=2))
    kw = {"include_initial": data.draw(st.booleans())}
    if len(s) > 1 or data.draw(st.booleans()):
        kw["axis"] = data.draw(st.integers(-max(len(s), 1), max(len(s), 1) - 1)) if s else 0
    return Call((data.draw(values(dtype, s)),), kw)


case("cumulative_sum", np.cumulative_sum, _draw_cumulative)
case("cumulative_prod", np.cumulative_prod, _draw_cumulative)


def _draw_meshgrid(data, dtype):
    xs = tuple(data.draw(values(dtype, (data.draw(st.integers(0, 3)),)))
               for _ in range(data.draw(st.integers(1, 3))))
    return Call(xs, {"indexing": data.draw(st.sampled_from(["xy", "ij"])),
                     "sparse": data.draw(st.booleans())})


case("meshgrid", lambda *xs, **kw: tuple(np.meshgrid(*xs, **kw)), _draw_meshgrid,
     call=lambda *xs, **kw: yaad.meshgrid(*xs, **kw))


def _draw_trapezoid(data, dtype):
    s = data.draw(shapes(min_dims=1, max_dims=2, min_side=1))
    ax = data.draw(st.integers(-len(s), len(s) - 1))
    y = data.draw(values(dtype, s))
    kind = data.draw(st.sampled_from(["dx", "x1", "xfull"]))
    if kind == "dx":
        return Call((y,), {"dx": data.draw(st.floats(0.1, 2.0)), "axis": ax})
    xs = np.cumsum(data.draw(values(F64, s if kind == "xfull" else (s[ax],), POS)),
                   axis=ax if kind == "xfull" else 0)
    return Call((y, xs), {"axis": ax})


case("trapezoid", np.trapezoid, _draw_trapezoid, exact=False)
case("vander", np.vander, lambda data, dtype: Call(
    (data.draw(values(dtype, (data.draw(st.integers(0, 4)),))),),
    {"N": data.draw(st.one_of(st.none(), st.integers(0, 4))),
     "increasing": data.draw(st.booleans())}))
case("diagflat", np.diagflat, _one(shapes(max_dims=2), lambda data, s: (
    (), {"k": data.draw(st.integers(-2, 2))})))


def _draw_ediff1d(data, dtype):
    x = data.draw(values(dtype, data.draw(shapes())))
    kw = {}
    for key in ("to_begin", "to_end"):
        if data.draw(st.booleans()):
            kw[key] = data.draw(values(dtype, (data.draw(st.integers(0, 2)),)))
    return Call((x,), kw)


case("ediff1d", np.ediff1d, _draw_ediff1d)
case("unstack", lambda a, axis=0: np.unstack(a, axis=axis), _one(
    shapes(min_dims=1), lambda data, s: ((), {"axis": data.draw(st.integers(-len(s),
                                                                             len(s) - 1))})),
    call=lambda a, axis=0: yaad.unstack(a, axis=axis))


def _draw_median(data, shape):
    return (), {"axis": data.draw(axis(len(shape))), "keepdims": data.draw(st.booleans())}


case("median", np.median, _one(shapes(min_side=1), _draw_median, unique=True), dtypes=REAL,
     ok=_distinct(), exact=False)


def _leading_coefficients_not_near_zero(call):
    """polymul drops leading zeros (numpy.poly1d), so its output's length depends on them:
    finite differences across that change of shape mean nothing."""
    return all(abs(np.ravel(a)[0]) > 0.01 for a in call.args)


for _name in ("polyadd", "polysub", "polymul"):
    case(_name, getattr(np, _name), lambda data, dtype: Call(tuple(data.draw(values(
        dtype, (data.draw(st.integers(1, 4)),))) for _ in range(2))),
         ok=_leading_coefficients_not_near_zero if _name == "polymul" else None)
case("polyder", np.polyder, lambda data, dtype: Call((data.draw(values(dtype, (
    data.draw(st.integers(1, 5)),))), data.draw(st.integers(0, 3)))))
case("polyint", np.polyint, lambda data, dtype: Call((data.draw(values(dtype, (
    data.draw(st.integers(1, 4)),))), data.draw(st.integers(0, 2)))))


def _draw_cov(data, dtype):
    nvar, nobs = data.draw(st.integers(1, 3)), data.draw(st.integers(3, 5))
    m = data.draw(values(dtype, data.draw(st.sampled_from([(nvar, nobs), (nobs,)]))))
    kw = {"bias": data.draw(st.booleans())}
    if data.draw(st.booleans()):
        kw["aweights"] = data.draw(values(F64, (nobs,), POS))
    return Call((m,), kw)


case("cov", np.cov, _draw_cov, exact=False,
     note="the aweights' gradient is checked against torch in "
          "tests/ops/test_numpy_stragglers_vs_jax.py")


def _draw_corrcoef(data, dtype):
    m = data.draw(values(dtype, (data.draw(st.integers(2, 3)), 5), Domain(real=(
        (-2.0, -0.5), (0.5, 2.0)))))
    return Call((m,))


case("corrcoef", np.corrcoef, _draw_corrcoef, exact=False,
     ok=lambda c: bool(np.all(np.var(c.args[0], axis=1) > 1e-2)))


# ---------------------------------------------------------------------------------------
# Which ops are built in


def builtin_ops() -> dict:
    """The ops that yaad itself declares, by name: those held by its modules (users' and
    tests' ops, which also land in ``yaad.registry``, left out)."""
    mods = [yaad]
    for info in pkgutil.walk_packages(yaad.__path__, "yaad."):
        if info.name.split(".")[-1] in ("__main__", "demo"):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError:
            pass
    out = {}
    for mod in mods:
        for value in vars(mod).values():
            spec = getattr(value, "op", None)
            if isinstance(spec, yaad.Op) and yaad.registry.get(spec.name) is spec:
                out[spec.name] = spec
    return out


def covered_ops() -> set:
    """Registry names that some case exercises."""
    names = set()
    for c in CASES.values():
        if available(c.path):
            names.update(c.covers)
            if c.op_name:
                names.add(c.op_name)
    return names
