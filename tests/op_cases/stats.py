"""Rows of ``yaad.stats`` (scipy.stats' distributions: their densities and
distribution functions, differentiated in x and in the parameters)."""

from __future__ import annotations

import hypothesis.extra.numpy as npst
import numpy as np
from hypothesis import strategies as st

from tests.op_cases.table import case
from tests.support.strategies import (
    F64,
    POS,
    PROB,
    SMALL,
    Call,
    Domain,
    broadcastable_shapes,
    values,
)

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
