"""yaad.stats' cumulative functions at both ends of every continuous distribution's support.

At an end, ``cdf`` is 0 or 1 and ``logcdf`` (lower end) or ``logsf`` (upper end) is ``log 0 =
-inf``, SciPy's value. Every derivative there is the limit of the derivative as ``x``
approaches the end from inside the support (``+-inf`` where it diverges); at an infinite end,
as ``x`` goes to infinity. The oracle: mpmath's derivative (in 60 digits, a step far below
the distance to the end) of the distribution's cumulative function written in mpmath, at two
points approaching the end; converged, the limit is its value, else its sign gives the
infinity. Before, ``logcdf`` at the lower end and ``logsf`` at the upper one had NaN
gradients (every distribution but ``norm``, ``expon``, ``laplace`` and ``uniform``), and
``cdf``/``sf`` at ``x = inf`` (gamma, chi2) too.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.stats as ss

import yaad
from yaad import stats as S

mp = mpmath.mp
LOC, SCALE = 0.3, 1.4


def _t_cdf(z, df):
    w = df / (df + z * z)
    tail = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, w, regularized=True) / 2
    return tail if z < 0 else 1 - tail


# the standard distributions' cdf and sf, in mpmath: (cdf(z, *shapes), sf(z, *shapes))
_MP = {
    "norm": (lambda z: mpmath.ncdf(z), lambda z: mpmath.ncdf(-z)),
    "t": (_t_cdf, lambda z, df: _t_cdf(-z, df)),
    "gamma": (lambda z, a: mpmath.gammainc(a, 0, z, regularized=True),
              lambda z, a: mpmath.gammainc(a, z, mpmath.inf, regularized=True)),
    "chi2": (lambda z, df: mpmath.gammainc(df / 2, 0, z / 2, regularized=True),
             lambda z, df: mpmath.gammainc(df / 2, z / 2, mpmath.inf, regularized=True)),
    "beta": (lambda z, a, b: mpmath.betainc(a, b, 0, z, regularized=True),
             lambda z, a, b: mpmath.betainc(b, a, 0, 1 - z, regularized=True)),
    "expon": (lambda z: -mpmath.expm1(-z), lambda z: mpmath.exp(-z)),
    "laplace": (lambda z: mpmath.exp(z) / 2 if z < 0 else 1 - mpmath.exp(-z) / 2,
                lambda z: mpmath.exp(-z) / 2 if z > 0 else 1 - mpmath.exp(z) / 2),
    "cauchy": (lambda z: mpmath.acot(-z) / mpmath.pi if z < 0 else
               1 - mpmath.acot(z) / mpmath.pi,
               lambda z: mpmath.acot(z) / mpmath.pi if z > 0 else
               1 - mpmath.acot(-z) / mpmath.pi),
    "uniform": (lambda z: z, lambda z: 1 - z),
    "lognorm": (lambda z, s: mpmath.ncdf(mpmath.log(z) / s),
                lambda z, s: mpmath.ncdf(-mpmath.log(z) / s)),
}

# (name, shapes, lower end, upper end) of the standard form; two shape regimes where the
# behaviour at an end depends on them (a density infinite or zero there)
DISTRIBUTIONS = [
    ("norm", (), -math.inf, math.inf), ("t", (3.5,), -math.inf, math.inf),
    ("gamma", (2.5,), 0.0, math.inf), ("gamma", (0.5,), 0.0, math.inf),
    ("chi2", (3.0,), 0.0, math.inf), ("chi2", (1.0,), 0.0, math.inf),
    ("beta", (1.5, 2.5), 0.0, 1.0), ("beta", (0.5, 0.7), 0.0, 1.0),
    ("expon", (), 0.0, math.inf), ("laplace", (), -math.inf, math.inf),
    ("cauchy", (), -math.inf, math.inf), ("uniform", (), 0.0, 1.0),
    ("lognorm", (0.7,), 0.0, math.inf),
]
METHODS = ("logcdf", "logsf", "cdf", "sf")
CASES = [(name, shapes, end, edge, method)
         for name, shapes, lo, hi in DISTRIBUTIONS
         for end, edge in (("lower", lo), ("upper", hi)) for method in METHODS]


def _ids(case):
    name, shapes, end, _, method = case
    return f"{name}{list(shapes)}-{method}-{end}"


def _mp_function(name, method):
    """``method(x, *shapes, loc, scale)`` in mpmath."""
    cdf, sf = _MP[name]

    def f(x, *params):
        *shapes, loc, scale = params
        z = (x - loc) / scale
        p = (cdf if method in ("cdf", "logcdf") else sf)(z, *shapes)
        return mpmath.log(p) if method.startswith("log") else p
    return f


def _point(edge, end, d):
    """A standardised point ``d`` inside the support from ``edge`` (an infinite edge: at
    ``-+1/d``), in mpmath."""
    d = mpmath.mpf(d)
    if math.isinf(edge):
        return -1 / d if end == "lower" else 1 / d
    return edge + d if end == "lower" else edge - d


def _oracle_derivative(f, args, i, step):
    """The central difference of ``f`` in argument ``i`` in 60 digits (a step so small that
    its error is below float64's rounding). ``args``: numbers, or ``(shapes, edge, end, d)``
    for the point ``_point(edge, end, d)`` computed in 60 digits (1e-24 from an end is no
    float)."""
    with mp.workdps(60):
        if len(args) == 4 and isinstance(args[0], tuple):
            shapes, edge, end, d = args
            z = _point(edge, end, d)
            args = [mpmath.mpf(LOC) + mpmath.mpf(SCALE) * z, *shapes, LOC, SCALE]
        args = [mpmath.mpf(a) for a in args]
        h = mpmath.mpf(step)

        def g(v):
            return f(*args[:i], v, *args[i + 1:])
        return float((g(args[i] + h) - g(args[i] - h)) / (2 * h))


def _args(name, shapes, z):
    return [LOC + SCALE * z, *shapes, LOC, SCALE]


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_derivatives_at_an_end_are_the_limits_from_inside(case):
    name, shapes, end, edge, method = case
    f = _mp_function(name, method)
    at = _args(name, shapes, edge)
    # yaad at the end: SciPy's value, every derivative finite or +-inf, never NaN
    ts = [yaad.tensor(np.array(a), requires_grad=True) for a in at]
    out = getattr(getattr(S, name), method)(*ts)
    want_value = getattr(getattr(ss, name), method)(*at)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.detach().numpy(), want_value)
    out.backward()
    for i, t in enumerate(ts):
        got = float(t.grad)
        # the oracle: the derivative in argument i at two points approaching the end
        near, nearer = (_oracle_derivative(f, (shapes, edge, end, d), i,
                                           (SCALE * d if math.isfinite(edge) else 1.0) * 1e-12)
                        for d in (1e-12, 1e-24))
        label = (name, shapes, method, end, i, got, near, nearer)
        if abs(nearer) > abs(near) + 1:  # diverging (p / z, or log z, in the distance z)
            assert np.sign(near) == np.sign(nearer) != 0, label
            assert got == np.sign(nearer) * np.inf, label
        else:  # converging (the error: O(z), or O(z^p log z) for p > 0)
            np.testing.assert_allclose(got, nearer, rtol=1e-6, atol=1e-9, err_msg=str(label))


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_just_inside_an_end(case):
    # values (SciPy) and derivatives (mpmath) a little inside the support: where the
    # functions are still representable (a finite end: 1e-6 from it; an infinite one: at 30)
    name, shapes, end, edge, method = case
    z = float(_point(edge, end, 1e-6 if math.isfinite(edge) else 1 / 30))
    args = _args(name, shapes, z)
    ts = [yaad.tensor(np.array(a), requires_grad=True) for a in args]
    out = getattr(getattr(S, name), method)(*ts)
    np.testing.assert_allclose(out.detach().numpy(), getattr(getattr(ss, name), method)(*args),
                               rtol=1e-9, atol=1e-300)
    out.backward()
    f = _mp_function(name, method)
    for i, t in enumerate(ts):
        want = _oracle_derivative(f, args, i, 1e-20)
        np.testing.assert_allclose(float(t.grad), want, rtol=1e-7, atol=1e-12,
                                   err_msg=str((name, shapes, method, end, i)))


@pytest.mark.parametrize("name, shapes, lo, hi", DISTRIBUTIONS)
def test_beyond_an_end_and_in_float32(name, shapes, lo, hi):
    # outside the support the four functions are constant: value SciPy's, every derivative
    # 0; float32 inputs keep float32 results and gradients, also at the ends
    for z in [v for v in (lo - 1.0, hi + 1.0) if math.isfinite(v)] + [lo, hi]:
        args = _args(name, shapes, z)
        for method in METHODS:
            ts = [yaad.tensor(np.array(a, dtype=np.float32), requires_grad=True) for a in args]
            out = getattr(getattr(S, name), method)(*ts)
            assert out.dtype == np.float32
            np.testing.assert_array_equal(out.detach().numpy(), np.float32(
                getattr(getattr(ss, name), method)(*args)))
            out.backward()
            for t in ts:
                assert t.grad.dtype == np.float32 and not np.isnan(t.grad), (name, method, z)
                if z not in (lo, hi):
                    assert t.grad == 0, (name, method, z)


@pytest.mark.parametrize("name, shapes, lo, hi", DISTRIBUTIONS)
def test_an_underflowing_tail(name, shapes, lo, hi):
    # far inside, where the cdf (sf) underflows and SciPy's log-cdf is -inf: the same value,
    # and the derivatives of the end, not NaN (log(0) * 0)
    for method, z in (("logcdf", -1e300 if math.isinf(lo) else 1e-300),
                      ("logsf", 1e300 if math.isinf(hi) else 1 - 1e-16)):
        args = _args(name, shapes, z)
        ts = [yaad.tensor(np.array(a), requires_grad=True) for a in args]
        out = getattr(getattr(S, name), method)(*ts)
        want = getattr(getattr(ss, name), method)(*args)
        if out.detach().numpy() != want:  # (laplace: -1e300, where SciPy's is log(0))
            with mp.workdps(60):
                exact = float(_mp_function(name, method)(*[mpmath.mpf(a) for a in args]))
            assert out.detach().numpy() == exact, (name, method, out, want, exact)
        out.backward()
        assert not any(np.isnan(t.grad) for t in ts), (name, method)


def test_cauchy_logpdf_far_out():
    # -log(pi) - log1p(z^2): z^2 overflowed beyond 1e154 (-inf); SciPy's is finite
    x = yaad.tensor(np.array([-1e300, -1e160, 1e200, 3.0]), requires_grad=True)
    out = S.cauchy.logpdf(x, 0.5, 2.0)
    with mp.workdps(40):
        want = [float(-mpmath.log(mpmath.pi * 2) - mpmath.log1p(((mpmath.mpf(v) - 0.5) / 2) ** 2))
                for v in x.detach().numpy()]
        dwant = [float(-2 * (mpmath.mpf(v) - 0.5) / (4 + (mpmath.mpf(v) - 0.5) ** 2))
                 for v in x.detach().numpy()]
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(out.detach().numpy(), ss.cauchy.logpdf(x.detach().numpy(), 0.5, 2.0),
                               rtol=1e-14)
    yaad.sum(out).backward()
    np.testing.assert_allclose(x.grad, dwant, rtol=1e-14, atol=0)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_forward_mode_agrees_with_reverse_mode_at_an_end(case):
    # jacfwd == jacrev at the end: a zero tangent contributes 0, also where it meets an
    # infinite partial (gamma.cdf(0, 0.5) in the scale: the tangent of z is 0 and the
    # derivative of gammainc in z inf; forward mode gave inf * 0 = NaN, reverse mode 0)
    name, shapes, end, edge, method = case
    fn = getattr(getattr(S, name), method)
    at = [np.array(a) for a in _args(name, shapes, edge)]
    ts = [yaad.tensor(a, requires_grad=True) for a in at]
    fn(*ts).backward()
    rev = [float(t.grad) for t in ts]
    fwd = []
    for i in range(len(at)):
        tangents = tuple(np.array(float(k == i)) for k in range(len(at)))
        _, d = yaad.func.jvp(lambda *v: fn(*v), tuple(at), tangents)
        fwd.append(float(np.asarray(d)))
    assert not any(np.isnan(fwd)), (name, shapes, method, end, fwd)
    np.testing.assert_array_equal(fwd, rev, err_msg=str((name, shapes, method, end)))


def _mp_logpdf(name):
    """The standard ``logpdf(z, *shapes)`` in mpmath (at ``z`` inside the support)."""
    half_log_2pi = mpmath.log(2 * mpmath.pi) / 2
    return {
        "norm": lambda z: -z * z / 2 - half_log_2pi,
        "t": lambda z, df: (mpmath.loggamma((df + 1) / 2) - mpmath.loggamma(df / 2)
                            - mpmath.log(df * mpmath.pi) / 2
                            - (df + 1) / 2 * mpmath.log1p(z * z / df)),
        "cauchy": lambda z: -mpmath.log(mpmath.pi) - mpmath.log1p(z * z),
        "laplace": lambda z: -abs(z) - mpmath.log(2),
        "gamma": lambda z, a: (a - 1) * mpmath.log(z) - z - mpmath.loggamma(a),
        "chi2": lambda z, k: ((k / 2 - 1) * mpmath.log(z) - z / 2 - mpmath.loggamma(k / 2)
                              - k / 2 * mpmath.log(2)),
        "expon": lambda z: -z,
        "lognorm": lambda z, s: (-mpmath.log(s) - half_log_2pi - mpmath.log(z)
                                 - mpmath.log(z) ** 2 / (2 * s * s)),
    }[name]


FAR = [(name, shapes, end) for name, shapes, lo, hi in DISTRIBUTIONS
       for end, edge in (("lower", lo), ("upper", hi)) if math.isinf(edge)]


def _assert_the_limit(got: float, near: float, nearer: float, label: tuple) -> None:
    """``got`` is the limit of the derivatives ``near`` and ``nearer`` (the oracle's, at two
    distances from the end): +-inf where they grow, else ``nearer`` to rounding."""
    if abs(nearer) > abs(near) + 1:
        assert np.sign(near) == np.sign(nearer) != 0, label
        assert got == np.sign(nearer) * np.inf, label
    else:
        np.testing.assert_allclose(got, nearer, rtol=1e-6, atol=1e-9, err_msg=str(label))


@pytest.mark.parametrize("name, shapes, end", FAR)
def test_logpdf_at_an_infinite_end(name, shapes, end):
    # logpdf at x = -inf or +inf: -inf (SciPy's value; SciPy's gamma and chi2 give inf - inf
    # = NaN for a > 1, the limit is -inf), each derivative the limit as x goes there (against
    # mpmath at 1e12 and 1e24), both modes. They were NaN (lognorm in x and loc, gamma and
    # chi2 everywhere) or another limit (t and cauchy in the scale: 0 and -1 / scale for df /
    # scale and 1 / scale).
    sign = -1.0 if end == "lower" else 1.0
    at = [np.array(a) for a in _args(name, shapes, sign * math.inf)]
    ts = [yaad.tensor(a, requires_grad=True) for a in at]
    out = getattr(S, name).logpdf(*ts)
    want = getattr(ss, name).logpdf(*at)
    assert out.dtype == np.float64 and out.detach().numpy() == -np.inf
    assert want == -np.inf or (name in ("gamma", "chi2") and np.isnan(want))
    out.backward()
    std = _mp_logpdf(name)

    def f(x, *params):
        *sh, loc, scale = params
        return std((x - loc) / scale, *sh) - mpmath.log(scale)

    got = [float(t.grad) for t in ts]
    for i in range(len(at)):
        near, nearer = (_oracle_derivative(
            f, [LOC + SCALE * sign * d, *shapes, LOC, SCALE], i,
            (d if i == 0 else 1.0) * 1e-20) for d in (1e12, 1e24))
        label = (name, shapes, end, i, got[i], near, nearer)
        _assert_the_limit(got[i], near, nearer, label)
        tangents = tuple(np.array(float(k == i)) for k in range(len(at)))
        _, d = yaad.func.jvp(lambda *v: getattr(S, name).logpdf(*v), tuple(at), tangents)
        assert float(np.asarray(d)) == got[i], label
    # pdf: 0, every derivative 0
    ts = [yaad.tensor(a, requires_grad=True) for a in at]
    p = getattr(S, name).pdf(*ts)
    p.backward()
    assert p.detach().numpy() == 0 and all(float(t.grad) == 0 for t in ts)


_MP_PDF = {
    "gamma": lambda z, a: z ** (a - 1) * mpmath.exp(-z) / mpmath.gamma(a),
    "chi2": lambda z, k: (z / 2) ** (k / 2 - 1) * mpmath.exp(-z / 2) / (2 * mpmath.gamma(k / 2)),
    "beta": lambda z, a, b: z ** (a - 1) * (1 - z) ** (b - 1) / mpmath.beta(a, b),
}


@pytest.mark.parametrize("name, shapes, end", [
    ("gamma", (2.0,), "lower"), ("gamma", (1.5,), "lower"), ("gamma", (3.0,), "lower"),
    ("chi2", (4.0,), "lower"), ("chi2", (3.0,), "lower"), ("chi2", (5.0,), "lower"),
    ("beta", (2.0, 3.0), "lower"), ("beta", (3.0, 2.0), "upper"), ("beta", (1.5, 1.5), "lower"),
    ("beta", (1.5, 1.5), "upper"), ("beta", (2.5, 2.0), "upper"), ("beta", (2.0, 0.5), "lower"),
    ("gamma", (0.5,), "lower"), ("chi2", (1.0,), "lower"), ("beta", (0.5, 2.0), "lower"),
    ("beta", (2.0, 0.5), "upper"), ("beta", (0.5, 0.5), "lower"), ("beta", (0.5, 0.5), "upper")])
def test_a_density_that_vanishes_at_an_end(name, shapes, end):
    # pdf = C z^c near an end with c > 0: its value 0 (SciPy's), its slope in x and loc the
    # limit from inside: C / scale^2 at c = 1 (gamma.pdf(0, a=2) in x: 1 / scale^2; it was
    # 0, exp(-inf) * inf), +-inf for c < 1, 0 for c > 1; 0 in the scale and the shapes.
    # For c < 0 (value inf) every derivative +-inf (they were NaN in the scale and the
    # shapes). Against mpmath approaching the end; both modes.
    edge = 0.0 if end == "lower" else 1.0
    at = [np.array(a) for a in _args(name, shapes, edge)]
    ts = [yaad.tensor(a, requires_grad=True) for a in at]
    out = getattr(S, name).pdf(*ts)
    assert out.dtype == np.float64 and out.detach().numpy() == getattr(ss, name).pdf(*at)
    out.backward()
    std = _MP_PDF[name]

    def f(x, *params):
        *sh, loc, scale = params
        return std((x - loc) / scale, *sh) / scale

    got = [float(t.grad) for t in ts]
    fn = getattr(S, name).pdf
    for i in range(len(at)):
        near, nearer = (_oracle_derivative(f, (shapes, edge, end, d), i, SCALE * d * 1e-12)
                        for d in (1e-12, 1e-24))
        label = (name, shapes, end, i, got[i], near, nearer)
        _assert_the_limit(got[i], near, nearer, label)
        tangents = tuple(np.array(float(k == i)) for k in range(len(at)))
        _, d = yaad.func.jvp(lambda *v: fn(*v), tuple(at), tangents)
        assert float(np.asarray(d)) == got[i], label
