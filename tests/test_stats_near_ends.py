"""Distributions just inside an end of the support, where a complement (1 - z) rounds or a
probability underflows: values against SciPy and mpmath, derivatives against mpmath."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.stats as ss

import yaad

S = yaad.stats


def _beta_sf_mp(x, a, b):
    return 1 - mpmath.betainc(a, b, 0, x, regularized=True)


@pytest.mark.parametrize("x, a, b", [(1e-20, 1e-3, 2.0), (1e-20, 0.5, 2.0), (1e-17, 1.0, 1.0),
                                     (1e-10, 2.0, 3.0), (0.3, 0.01, 100.0), (0.999, 2.0, 0.5)])
def test_beta_sf_just_above_the_lower_end(x, a, b):
    # sf was I_(1-z)(b, a) alone: 1 - z rounds to 1 below eps / 2, so sf(1e-20, 0.001, 2)
    # was 1 (SciPy and mpmath 0.0440524) and its derivatives in a and b were 0 (mpmath
    # 43.07 and -6.2e-4; at a = 0.5: 6.8e-9 and -4.2e-11, x's -inf for -7.5e9)
    args = [np.array(v) for v in (x, a, b)]
    ts = [yaad.tensor(v, requires_grad=True) for v in args]
    out = S.beta.sf(*ts)
    with mpmath.workdps(50):
        want = float(_beta_sf_mp(*[mpmath.mpf(v) for v in (x, a, b)]))
        dwant = []
        for i in range(3):
            point = [mpmath.mpf(v) for v in (x, a, b)]

            def along(u, i=i, point=point):
                return _beta_sf_mp(*(point[:i] + [u] + point[i + 1:]))

            dwant.append(float(mpmath.diff(along, point[i], h=point[i] * mpmath.mpf(10) ** -30)))
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(out.detach().numpy(), ss.beta.sf(x, a, b), rtol=1e-13)
    out.backward()
    np.testing.assert_allclose([float(t.grad) for t in ts], dwant, rtol=1e-10)
    _, jvp = yaad.func.jvp(lambda *v: S.beta.sf(*v), tuple(args),
                           (np.array(0.0), np.array(1.0), np.array(0.0)))
    np.testing.assert_allclose(float(np.asarray(jvp)), dwant[1], rtol=1e-10)


def _t_tail(z, df):
    return mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, df / (df + z * z), regularized=True) / 2


_EXACT = {
    ("gamma", "logsf"): lambda x, a: mpmath.gammainc(a, x, mpmath.inf, regularized=True),
    ("chi2", "logsf"): lambda x, k: mpmath.gammainc(k / 2, x / 2, mpmath.inf, regularized=True),
    ("beta", "logcdf"): lambda x, a, b: mpmath.betainc(a, b, 0, x, regularized=True),
    ("gamma", "logcdf"): lambda x, a: mpmath.gammainc(a, 0, x, regularized=True),
    ("chi2", "logcdf"): lambda x, k: mpmath.gammainc(k / 2, 0, x / 2, regularized=True),
    ("beta", "logsf"): lambda x, a, b: mpmath.betainc(b, a, 0, 1 - x, regularized=True),
    ("t", "logcdf"): _t_tail,
    ("t", "logsf"): lambda x, df: _t_tail(-x, df),
}


# gamma.logsf(800, 2) was -inf with the end's derivatives (x -1.0 for -0.99875, a inf for
# 6.263), beta.logcdf(0.01, 200, 2) likewise (b 4.883 for 4.873): now the continued
# fractions in log space; (710, 0.5) has a subnormal Q (log q and 1 / q lose digits there).
# Then the other tails: t.logcdf(-1e300, 3) was -inf (-2072.23; in df 0 for -689.87),
# gamma.logcdf(1e-300, 2.5) -inf (-1728.14; in a -inf for -691.88), beta.logsf(0.99, 2,
# 200) -inf (-915.74; in b -inf for -4.600): the series of P(a, x), the fraction of
# I_w(df / 2, 1 / 2) and of I_(1-x)(b, a).
@pytest.mark.parametrize("name, method, args", [("gamma", "logsf", (800.0, 2.0)),
                                                ("gamma", "logsf", (1000.0, 500.0)),
                                                ("gamma", "logsf", (710.0, 0.5)),
                                                ("chi2", "logsf", (1700.0, 4.0)),
                                                ("beta", "logcdf", (0.01, 200.0, 2.0)),
                                                ("beta", "logcdf", (0.3, 1000.0, 1000.0)),
                                                ("beta", "logcdf", (1e-5, 80.0, 0.5)),
                                                ("t", "logcdf", (-1e300, 3.0)),
                                                ("t", "logsf", (1e300, 3.0)),
                                                ("t", "logcdf", (-1e20, 30.0)),
                                                ("t", "logcdf", (-45.0, 1000.0)),
                                                ("t", "logsf", (1e155, 0.5)),
                                                ("gamma", "logcdf", (1e-300, 2.5)),
                                                ("gamma", "logcdf", (30.0, 400.0)),
                                                ("gamma", "logcdf", (900.0, 3000.0)),
                                                ("gamma", "logcdf", (1e-310, 0.7)),
                                                ("chi2", "logcdf", (1e-300, 3.0)),
                                                ("beta", "logsf", (0.99, 2.0, 200.0)),
                                                ("beta", "logsf", (0.7, 1000.0, 1000.0)),
                                                ("beta", "logsf", (1 - 1e-5, 0.5, 80.0))])
def test_a_log_cdf_where_the_cdf_underflows_inside_the_support(name, method, args):
    def exact(*v):
        return mpmath.log(_EXACT[name, method](*v))

    ts = [yaad.tensor(np.array(v), requires_grad=True) for v in args]
    out = getattr(getattr(S, name), method)(*ts)
    with mpmath.workdps(60):
        point = [mpmath.mpf(v) for v in args]
        want = float(exact(*point))  # (-793.314, -915.741)
        dwant = [float(mpmath.diff(lambda u, i=i: exact(*(point[:i] + [u] + point[i + 1:])),
                                   point[i], h=abs(point[i]) * mpmath.mpf(10) ** -25))
                 for i in range(len(args))]
    assert out.shape == () and out.dtype == np.float64
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)
    out.backward()
    np.testing.assert_allclose([float(t.grad) for t in ts], dwant, rtol=1e-8)
    # forward mode: the last shape parameter's derivative
    fn = getattr(getattr(S, name), method)
    tangents = tuple(np.array(float(k == len(args) - 1)) for k in range(len(args)))
    _, jvp = yaad.func.jvp(lambda *v: fn(*v), tuple(np.array(v) for v in args), tangents)
    np.testing.assert_allclose(float(np.asarray(jvp)), dwant[-1], rtol=1e-8)


@pytest.mark.parametrize("name, method, args", [("t", "logcdf", (-1e30, 3.0)),
                                                ("t", "logsf", (1e30, 3.0)),
                                                ("gamma", "logcdf", (1e-20, 2.5)),
                                                ("gamma", "logsf", (150.0, 2.5)),
                                                ("chi2", "logcdf", (1e-20, 3.0)),
                                                ("beta", "logsf", (0.9999, 2.0, 30.0)),
                                                ("beta", "logcdf", (1e-4, 30.0, 2.0))])
def test_a_float32_tail(name, method, args):
    # float32's probabilities underflow below 1e-45 (its 1e-280 is 0): the tails were -inf
    # with the end's derivatives (t.logcdf(-1e30, 3): -inf for -207.13), and t's came out
    # float64. SciPy in float64 at the same point: the value, and the derivative in x as
    # +-pdf / cdf (pdf / sf).
    a32 = [np.float32(v) for v in args]
    x = yaad.tensor(np.array(a32[0]), requires_grad=True)
    out = getattr(getattr(S, name), method)(x, *a32[1:])
    assert out.dtype == np.float32 and out.shape == ()
    at = [float(v) for v in a32]
    dist = getattr(ss, name)
    want = getattr(dist, method)(*at)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=2e-6)
    out.backward()
    assert x.grad.dtype == np.float32
    sign = 1.0 if method == "logcdf" else -1.0
    np.testing.assert_allclose(x.grad, sign * np.exp(dist.logpdf(*at) - want), rtol=1e-4)
