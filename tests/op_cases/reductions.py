"""Rows of the reductions: sums, means, products, extrema and sorting, cumulative
ones, NaN-aware ones, and the normalisations of ``yaad.nn`` (logsumexp, softmax)."""

from __future__ import annotations

import math

import hypothesis.extra.numpy as npst
import numpy as np
import scipy.special as sp
from hypothesis import strategies as st

import yaad
from tests.op_cases.fixed import away, cases, cplx, real
from tests.op_cases.table import CASES, Case, Second, case, one
from tests.support.strategies import (
    ALL,
    ANY,
    C128,
    POS,
    REAL,
    Call,
    Domain,
    axes,
    axis,
    elements,
    shapes,
    values,
)

INDICES = "integer output (indices or counts)"  # (why an op has no VJP rule)

# ---- JAX's functions, where the op's name does not find them (second-order rows) ----------


def _jax_logsumexp(a, b=None, axis=None, keepdims=False):
    import jax.scipy.special as jsp

    return jsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)

# ---- reductions and products -----------------------------------------------------------


def _draw_reduce(data, shape):
    kw = {"axis": data.draw(axes(len(shape))), "keepdims": data.draw(st.booleans())}
    return (), kw


case("sum", np.sum, one(shapes(), _draw_reduce),
     second=lambda fn: cases(
         (lambda a: fn(a, axis=1), (real(2, 3),)),
         (lambda a: fn(a), (cplx(2, 3),))))
case("mean", np.mean, one(shapes(min_side=1), _draw_reduce), exact=False,
     second=lambda fn: cases((lambda a: fn(a, axis=0, keepdims=True), (cplx(2, 3),))))


def _draw_sum_dtype(data, dtype):
    s = data.draw(shapes())
    kw = {"axis": data.draw(axes(len(s))), "dtype": data.draw(st.sampled_from(ALL[1:]))}
    if np.dtype(dtype).kind == "c" and kw["dtype"].kind != "c":
        kw["dtype"] = C128
    return Call((data.draw(values(dtype, s)),), kw)


CASES["sum(dtype=)"] = Case("sum", np.sum, _draw_sum_dtype)


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


case("prod", np.prod, one(shapes(max_side=3), _draw_reduce),
     second=lambda fn: cases(
         (lambda a: fn(a, axis=1), (away(2, 3, lo=0.5, hi=1.5),)),
         (lambda a: fn(a), (cplx(2, 2, center=1),))))
case("cumsum", np.cumsum, one(shapes(), _draw_axis_only),
     second=lambda fn: cases((lambda a: fn(a, 1), (cplx(2, 3),))))
case("cumprod", np.cumprod, one(shapes(), _draw_axis_only),
     second=lambda fn: cases(
         (lambda a: fn(a, 1), (away(2, 3, lo=0.5, hi=1.5),)),
         (lambda a: fn(a, 0), (cplx(3, center=1),))))
case("var", np.var, one(shapes(), _draw_ddof), exact=False,
     ok=lambda c: _reduced_count(c) > c.kwargs.get("ddof", 0),
     second=lambda fn: cases(
         (lambda a: fn(a, axis=1, ddof=1), (real(2, 3),)),
         (lambda a: fn(a), (cplx(2, 3),))))
case("std", np.std, one(shapes(), _draw_ddof), exact=False, ok=_std_ok,
     second=lambda fn: cases(
         (lambda a: fn(a, axis=1), (real(2, 3),)),
         (lambda a: fn(a), (cplx(2, 3),))))
_EXTREMA_SECOND = {
    "max": Second(lambda fn: cases((lambda a: fn(a, axis=1), (real(2, 3),))),
                  jax="jax.numpy.max"),
    "min": Second(lambda fn: cases((lambda a: fn(a), (real(2, 3),))), jax="jax.numpy.min"),
}
for _name, _ref in (("amax", np.amax), ("amin", np.amin), ("max", np.max), ("min", np.min),
                    ("ptp", np.ptp)):
    case(_name, _ref, one(shapes(), _draw_reduce, unique=True), dtypes=REAL, ok=_distinct(),
         second=_EXTREMA_SECOND.get(_name))
case("sort", np.sort, one(shapes(min_dims=1), _draw_axis_only, unique=True), dtypes=REAL,
     ok=_distinct())
for _name in ("argmax", "argmin"):
    case(_name, getattr(np, _name), one(shapes(min_side=1), lambda data, s: ((), {
        "axis": data.draw(axis(len(s))), "keepdims": data.draw(st.booleans())})),
        dtypes=REAL, grad="none", no_rule=INDICES)
case("argsort", lambda a, axis=-1: np.argsort(a, axis=axis, kind="stable"),
     one(shapes(min_dims=1), _draw_axis_only), dtypes=REAL, grad="none",
     call=lambda a, axis=-1: yaad.argsort(a, axis=axis, kind="stable"), covers=("argsort",),
     no_rule=INDICES)
for _name in ("all", "any"):
    case(_name, getattr(np, _name), one(shapes(), _draw_reduce, dom=Domain(
        real=((-1.0, 1.0),))), grad="none", no_rule="boolean output")
case("count_nonzero", np.count_nonzero, one(shapes(), lambda data, s: ((), {
    "axis": data.draw(axes(len(s))), "keepdims": data.draw(st.booleans())})), grad="none",
    no_rule=INDICES)
case("argwhere", np.argwhere, one(shapes(), lambda data, s: ((), {}), dom=Domain(
    real=((-1.0, 1.0),))), grad="none", covers=("argwhere",), no_rule=INDICES)
case("unique_values", np.unique_values, one(shapes(), lambda data, s: ((), {}), unique=True),
     dtypes=REAL, ok=_distinct(), covers=("unique_indices",),
     no_rule={"unique_indices": "integer output (first occurrences, inverse indices, counts)"})
case("isin", lambda a: np.isin(a, [0.0, 0.5]), one(shapes(), lambda data, s: ((), {}),
     dom=Domain(real=((-1.0, 1.0),))), grad="none", call=lambda a: yaad.isin(a, [0.0, 0.5]),
     covers=("isin",), no_rule="boolean output")


def _draw_searchsorted(data, dtype):
    a = np.sort(data.draw(values(dtype, (data.draw(st.integers(0, 5)),))))
    v = data.draw(values(dtype, data.draw(shapes(max_dims=2))))
    return Call((a, v), {"side": data.draw(st.sampled_from(["left", "right"]))})


case("searchsorted", np.searchsorted, _draw_searchsorted, dtypes=REAL, grad="none",
     covers=("searchsorted",), no_rule=INDICES)


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
     covers=("logsumexp", "logsumexp_sign"),
     second={"logsumexp": Second(
         lambda fn: cases((lambda a: fn(a, None, 1, False), (real(2, 3),)),
                          (lambda a, b: fn(a, b, None, False),
                           (real(2, 3), real(3, lo=0.5, hi=1.5))),
                          (lambda a: fn(a, None, 0, True), (cplx(2, 3),))),
         jax=_jax_logsumexp)},
     no_rule={"logsumexp_sign": "the sign of the sum, piecewise constant"})


def _empty_ok(f):
    """SciPy's softmax raises for 0-size input; an empty result is the NumPy-like answer."""
    return lambda x, axis=None: f(x, axis=axis) if np.size(x) else np.array(x, copy=True)


case("softmax", _empty_ok(sp.softmax), one(shapes(), _draw_axis_only), dtypes=REAL,
     exact=False,
     second=Second(
         lambda fn: cases((lambda x: fn(x, -1), (real(2, 3),))),
         jax="jax.nn.softmax"))
case("log_softmax", _empty_ok(sp.log_softmax), one(shapes(), _draw_axis_only), dtypes=REAL,
     exact=False,
     second=Second(
         lambda fn: cases((lambda x: fn(x, -1), (real(2, 3),))),
         jax="jax.nn.log_softmax"))


def _draw_partition(data, shape):
    ax = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = math.prod(shape) if ax is None else shape[ax]
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(0, n - 1),
                                                                min_size=1, max_size=2)))
    return (kth,), {"axis": ax}


case("partition", np.partition, one(shapes(min_dims=1, min_side=1), _draw_partition,
                                      unique=True), dtypes=REAL, ok=_distinct())
case("argpartition", np.argpartition, one(shapes(min_dims=1, min_side=1), _draw_partition),
     dtypes=REAL, grad="none", no_rule=INDICES)


# ---- more of NumPy, composed ------------------------------------------------------------


def _draw_cumulative(data, dtype):
    s = data.draw(shapes(max_dims=2))
    kw = {"include_initial": data.draw(st.booleans())}
    if len(s) > 1 or data.draw(st.booleans()):
        kw["axis"] = data.draw(st.integers(-max(len(s), 1), max(len(s), 1) - 1)) if s else 0
    return Call((data.draw(values(dtype, s)),), kw)


case("cumulative_sum", np.cumulative_sum, _draw_cumulative)
case("cumulative_prod", np.cumulative_prod, _draw_cumulative)


def _draw_median(data, shape):
    return (), {"axis": data.draw(axis(len(shape))), "keepdims": data.draw(st.booleans())}


case("median", np.median, one(shapes(min_side=1), _draw_median, unique=True), dtypes=REAL,
     ok=_distinct(), exact=False)
