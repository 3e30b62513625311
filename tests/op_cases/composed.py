"""Rows of NumPy's functions that yaad composes from other ops: polynomials,
gradient, interp, select, cov, ..."""

from __future__ import annotations

import hypothesis.extra.numpy as npst
import numpy as np
from hypothesis import strategies as st

import yaad
from tests.op_cases.table import case, one, other_dtype
from tests.support.strategies import (
    C128,
    F64,
    POS,
    REAL,
    Call,
    Domain,
    broadcastable_shapes,
    shapes,
    special_values,
    values,
)

# ---- NumPy and SciPy stragglers ----------------------------------------------------------


def _draw_cross(data, dtype):
    sa, sb = data.draw(broadcastable_shapes(2, max_dims=2))
    na, nb = data.draw(st.sampled_from([(3, 3), (3, 3), (2, 3), (3, 2), (2, 2)]))
    a = data.draw(values(dtype, sa + (na,)))
    b = data.draw(values(other_dtype(data, dtype, False), sb + (nb,)))
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


def _draw_select(data, dtype):
    k = data.draw(st.integers(1, 3))
    shs = data.draw(broadcastable_shapes(2 * k + 1))
    conds = [data.draw(npst.arrays(np.bool_, s)) for s in shs[:k]]
    choices = [data.draw(values(other_dtype(data, dtype, False), s)) for s in shs[k:2 * k]]
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
    return Call((p, data.draw(values(other_dtype(data, dtype, False), data.draw(shapes())))))


case("polyval", np.polyval, _draw_polyval)


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
case("diagflat", np.diagflat, one(shapes(max_dims=2), lambda data, s: (
    (), {"k": data.draw(st.integers(-2, 2))})))


def _draw_ediff1d(data, dtype):
    x = data.draw(values(dtype, data.draw(shapes())))
    kw = {}
    for key in ("to_begin", "to_end"):
        if data.draw(st.booleans()):
            kw[key] = data.draw(values(dtype, (data.draw(st.integers(0, 2)),)))
    return Call((x,), kw)


case("ediff1d", np.ediff1d, _draw_ediff1d)
case("unstack", lambda a, axis=0: np.unstack(a, axis=axis), one(
    shapes(min_dims=1), lambda data, s: ((), {"axis": data.draw(st.integers(-len(s),
                                                                             len(s) - 1))})),
    call=lambda a, axis=0: yaad.unstack(a, axis=axis))


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
