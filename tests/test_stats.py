"""yaad.stats against scipy.stats (values) and jax.scipy.stats (gradients in the value and
every parameter), second derivatives, the support's ends, invalid parameters, frozen
distributions and errors.

The registry-driven fuzz cases (tests/op_cases/stats.py, ``stats.*``) check values against
SciPy and gradients against finite differences on random broadcast inputs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.stats as ss

import yaad
from yaad import stats as S
from yaad.testing import gradcheck, gradgradcheck

jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(5)
Z_ANY = rng.uniform(-3, 3, 5)
Z_POS = rng.uniform(0.2, 4, 5)
Z_UNIT = rng.uniform(0.05, 0.95, 5)
LOC, SCALE = 0.3, 1.4

# name: (standardised points, shape parameters)
CONTINUOUS = {
    "norm": (Z_ANY, ()), "t": (Z_ANY, (3.5,)), "gamma": (Z_POS, (1.7,)),
    "chi2": (Z_POS, (2.5,)), "beta": (Z_UNIT, (1.5, 2.5)), "expon": (Z_POS, ()),
    "laplace": (Z_ANY, ()), "cauchy": (Z_ANY, ()), "uniform": (Z_UNIT, ()),
    "lognorm": (Z_POS, (0.7,)),
}
METHODS = ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf")


def _inputs(name):
    z, shapes = CONTINUOUS[name]
    return [LOC + SCALE * z, *[np.array(s) for s in shapes], np.array(LOC), np.array(SCALE)]


def _fn(module, name, method):
    return getattr(getattr(module, name), method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_values_equal_scipy(name, method):
    args = _inputs(name)
    got = _fn(S, name, method)(*args)
    expected = _fn(ss, name, method)(*args)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


_JAX_MISSING = {("t", m) for m in ("logcdf", "cdf", "logsf", "sf")} | {
    ("laplace", m) for m in ("logcdf", "logsf", "sf")} | {
    ("uniform", m) for m in ("logcdf", "logsf", "sf")} | {
    ("lognorm", m) for m in METHODS}
# JAX's betainc has no gradient in a and b ("not supported")
_JAX_NO_SHAPE_GRADIENT = {("beta", m) for m in ("logcdf", "cdf", "logsf", "sf")}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_gradients_in_every_argument(name, method):
    args = _inputs(name)
    f = _fn(S, name, method)
    ts = [yaad.tensor(a, requires_grad=True) for a in args]
    yaad.sum(f(*ts)).backward()
    if (name, method) in _JAX_MISSING:  # JAX lacks it: finite differences only
        assert gradcheck(f, args, atol=1e-7, rtol=1e-6)
        return
    jf = _fn(jst, name, method)
    argnums = tuple(range(len(args)))
    if (name, method) in _JAX_NO_SHAPE_GRADIENT:  # finite differences for those
        argnums = (0, len(args) - 2, len(args) - 1)
        assert gradcheck(f, args, atol=1e-7, rtol=1e-6)
    jg = jax.grad(lambda *a: jnp.sum(jf(*a)), argnums=argnums)(*args)
    for i, g in zip(argnums, jg):
        np.testing.assert_allclose(ts[i].grad, np.asarray(g), rtol=1e-8, atol=1e-12,
                                   err_msg=f"{name}.{method}")


@pytest.mark.parametrize("method", ("logpdf", "cdf", "logsf"))
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_second_derivatives(name, method):
    args = _inputs(name)
    assert gradgradcheck(_fn(S, name, method), args, check_forward_ad=True, atol=1e-6)


def test_gradient_in_a_shape_parameter_equal_to_one():
    # (a - 1) log x has the derivative log x in a, also at a = 1 (yaad.xlogy's gradient in
    # its first argument is 0 where that argument is 0: not usable for a parameter).
    x = np.array([0.5, 2.0])
    for name, shapes in (("gamma", (1.0,)), ("beta", (1.0, 1.0)), ("chi2", (2.0,))):
        xs = x / 3 if name == "beta" else x
        ps = [yaad.tensor(np.array(s), requires_grad=True) for s in shapes]
        yaad.sum(_fn(S, name, "logpdf")(xs, *ps)).backward()
        jg = jax.grad(lambda *a, name=name, xs=xs: jnp.sum(_fn(jst, name, "logpdf")(xs, *a)),
                      argnums=tuple(range(len(shapes))))(*shapes)
        for p, g in zip(ps, jg):
            np.testing.assert_allclose(p.grad, g, rtol=1e-12, err_msg=name)


def test_laplace_at_its_location():
    # logpdf has a kink there: the subgradient 0 (as yaad.abs); the cdf is smooth there.
    x = yaad.tensor(np.array([0.3]), requires_grad=True)
    yaad.sum(S.laplace.logpdf(x, 0.3, 2.0)).backward()
    assert x.grad[0] == 0.0
    x.grad = None
    yaad.sum(S.laplace.cdf(x, 0.3, 2.0)).backward()
    np.testing.assert_allclose(x.grad, [0.25])


def test_t_cdf_gradient_at_and_near_the_centre():
    df = yaad.tensor(np.array(2.5), requires_grad=True)
    x = yaad.tensor(np.array([0.0, 1e-20, -1e-12, 0.7]), requires_grad=True)
    yaad.sum(S.t.cdf(x, df)).backward()
    np.testing.assert_allclose(x.grad, ss.t.pdf(x.data, 2.5), rtol=1e-12)
    # d cdf / d df: 0 at the centre; finite differences of SciPy elsewhere
    h = 1e-6
    fd = (ss.t.cdf(0.7, 2.5 + h) - ss.t.cdf(0.7, 2.5 - h)) / (2 * h)
    np.testing.assert_allclose(df.grad, fd, rtol=1e-7)


def test_outside_the_support_and_invalid_parameters_like_scipy():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    for name, shapes in (("beta", (2.0, 3.0)), ("gamma", (0.5,)), ("gamma", (1.0,)),
                         ("uniform", ()), ("expon", ()), ("lognorm", (1.0,))):
        for method in METHODS:
            got = _fn(S, name, method)(x, *shapes)
            np.testing.assert_allclose(got, _fn(ss, name, method)(x, *shapes), rtol=1e-12,
                                       err_msg=f"{name}.{method}")
    for name, args in (("norm", (0.0, -1.0)), ("t", (-1.0,)), ("gamma", (0.0,)),
                       ("beta", (1.0, -2.0)), ("lognorm", (0.0,))):
        for method in METHODS:
            assert np.all(np.isnan(_fn(S, name, method)(x, *args)))
            assert np.all(np.isnan(_fn(ss, name, method)(x, *args)))


def test_no_nan_gradient_from_outside_the_support():
    x = yaad.tensor(np.array([-1.0, 0.5, 2.0]), requires_grad=True)
    a = yaad.tensor(np.array(2.0), requires_grad=True)
    total = yaad.sum(yaad.where(x > 0, S.gamma.logpdf(x, a), 0.0)) + yaad.sum(S.beta.cdf(x, a, a))
    total.backward()
    assert np.all(np.isfinite(x.grad)) and np.isfinite(a.grad)
    assert x.grad[0] == 0.0


def test_float32_stays_float32():
    x = yaad.tensor(np.float32([0.5, 1.5]), requires_grad=True)
    for name, shapes in (("norm", ()), ("gamma", (np.float32(2.0),)), ("t", (np.float32(3),))):
        y = S.__dict__[name].logpdf(x, *shapes)
        assert y.dtype == np.float32, name
    yaad.sum(S.norm.cdf(x)).backward()
    assert x.grad.dtype == np.float32


def test_frozen_distributions_and_parameter_errors():
    x = np.array([0.2, 1.3])
    np.testing.assert_array_equal(S.gamma(2.0, scale=3.0).logpdf(x),
                                  S.gamma.logpdf(x, 2.0, scale=3.0))
    np.testing.assert_array_equal(S.dirichlet(np.array([1.0, 2.0])).pdf(np.array([0.3, 0.7])),
                                  S.dirichlet.pdf(np.array([0.3, 0.7]), np.array([1.0, 2.0])))
    with pytest.raises(TypeError, match="stats.t.logpdf: missing the shape parameter"):
        S.t.logpdf(x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sigma'"):
        S.norm.cdf(x, sigma=2.0)
    with pytest.raises(TypeError, match="multiple values for 'loc'"):
        S.norm.cdf(x, 1.0, loc=2.0)
    with pytest.raises(TypeError, match="at most 2 parameters"):
        S.norm.cdf(x, 1.0, 2.0, 3.0)


# ---- discrete ----------------------------------------------------------------------------

K = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 2.5, -1.0, 9.0])


@pytest.mark.parametrize("method", ("logpmf", "pmf"))
def test_discrete_values_and_gradients(method):
    for name, params in (("poisson", (2.3,)), ("binom", (6, 0.3))):
        np.testing.assert_allclose(_fn(S, name, method)(K, *params),
                                   _fn(ss, name, method)(K, *params), rtol=1e-12)
    mu = yaad.tensor(np.array(2.3), requires_grad=True)
    p = yaad.tensor(np.array(0.3), requires_grad=True)
    k = K[:5]
    yaad.sum(_fn(S, "poisson", method)(k, mu) + _fn(S, "binom", method)(k, 6, p)).backward()
    jmu, jp = jax.grad(lambda m, q: jnp.sum(_fn(jst, "poisson", method)(k, m)
                                            + _fn(jst, "binom", method)(k, 6.0, q)),
                       argnums=(0, 1))(2.3, 0.3)
    np.testing.assert_allclose(mu.grad, jmu, rtol=1e-12)
    np.testing.assert_allclose(p.grad, jp, rtol=1e-12)


def test_discrete_edge_cases_like_scipy():
    np.testing.assert_array_equal(S.poisson.logpmf(np.array([0.0, 1.0]), 0.0),
                                  ss.poisson.logpmf([0, 1], 0.0))
    np.testing.assert_array_equal(S.binom.logpmf(np.array([0.0, 5.0]), 5, 1.0),
                                  ss.binom.logpmf([0, 5], 5, 1.0))
    assert np.isnan(S.poisson.logpmf(1.0, -1.0)) and np.isnan(S.binom.logpmf(1.0, 5.5, 0.3))
    np.testing.assert_array_equal(S.poisson.logpmf(np.array([3.0]), 2.0, loc=1),
                                  ss.poisson.logpmf([3], 2.0, loc=1))


# ---- multivariate ------------------------------------------------------------------------


def _spd(k, batch=()):
    a = rng.standard_normal(batch + (k, k))
    return a @ np.swapaxes(a, -1, -2) + np.eye(k)


def test_multivariate_normal_against_scipy_and_jax():
    k = 3
    x, mean, cov = rng.standard_normal((4, k)), rng.standard_normal(k), _spd(k)
    np.testing.assert_allclose(S.multivariate_normal.logpdf(x, mean, cov),
                               ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
    np.testing.assert_allclose(S.multivariate_normal.pdf(x[0], mean, cov),
                               ss.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-12)
    ts = [yaad.tensor(v, requires_grad=True) for v in (x, mean, cov)]
    yaad.sum(S.multivariate_normal.logpdf(*ts)).backward()
    jg = jax.grad(lambda *a: jnp.sum(jst.multivariate_normal.logpdf(*a)),
                  argnums=(0, 1, 2))(x, mean, cov)
    np.testing.assert_allclose(ts[0].grad, jg[0], rtol=1e-10)
    np.testing.assert_allclose(ts[1].grad, jg[1], rtol=1e-10)
    # the gradient in cov: symmetric, -1/2 (S^-1 - S^-1 d d^T S^-1) summed over samples;
    # JAX's is the same up to symmetrisation (it reads one triangle)
    inv = np.linalg.inv(cov)
    d = x - mean
    expected = -0.5 * (len(x) * inv - inv @ d.T @ d @ inv)
    np.testing.assert_allclose(ts[2].grad, expected, rtol=1e-10)
    np.testing.assert_allclose(ts[2].grad, (jg[2] + jg[2].T) / 2, rtol=1e-10)


def test_multivariate_normal_diagonal_scalar_and_one_dimensional_like_scipy():
    x = rng.standard_normal((5, 2))
    for cov in (2.0, np.array([0.5, 3.0])):
        np.testing.assert_allclose(S.multivariate_normal.logpdf(x, np.zeros(2), cov),
                                   ss.multivariate_normal.logpdf(x, np.zeros(2), cov),
                                   rtol=1e-12)
    v = rng.standard_normal(6)  # a 1-D distribution: six samples
    for mean, cov in ((None, 1), (0.5, 2.0), (np.array([0.5]), np.array([[2.0]]))):
        np.testing.assert_allclose(S.multivariate_normal.logpdf(v, mean, cov),
                                   ss.multivariate_normal.logpdf(v, mean, cov), rtol=1e-12)
    assert np.shape(S.multivariate_normal.logpdf(x[:1], np.zeros(2), 1.0)) == ()


def test_multivariate_normal_batched_parameters():
    x = rng.standard_normal((4, 3))
    mean = rng.standard_normal((2, 1, 3))
    cov = _spd(3, (2, 1))
    got = S.multivariate_normal.logpdf(x, mean, cov)
    expected = [[ss.multivariate_normal.logpdf(x[j], mean[i, 0], cov[i, 0]) for j in range(4)]
                for i in range(2)]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert gradcheck(S.multivariate_normal.logpdf, [x, mean, cov])
    assert gradgradcheck(S.multivariate_normal.logpdf, [x[:2], mean[:, :, :], cov])


def test_multivariate_normal_errors():
    x = rng.standard_normal((4, 3))
    with pytest.raises(NotImplementedError, match="allow_singular"):
        S.multivariate_normal.logpdf(x, np.zeros(3), np.eye(3), allow_singular=True)
    with pytest.raises(ValueError, match="3 components"):
        S.multivariate_normal.logpdf(x, np.zeros(2), np.eye(2))
    with pytest.raises(np.linalg.LinAlgError):
        S.multivariate_normal.logpdf(x, np.zeros(3), -np.eye(3))


def test_dirichlet_against_scipy_and_jax():
    alpha = np.array([1.0, 2.0, 3.5])
    x = rng.uniform(0.1, 1.0, (3, 4))
    x /= x.sum(axis=0)
    for xx in (x, x[:, 0], x[:2]):
        np.testing.assert_allclose(S.dirichlet.logpdf(xx, alpha), ss.dirichlet.logpdf(xx, alpha),
                                   rtol=1e-12)
    tx, ta = yaad.tensor(x, requires_grad=True), yaad.tensor(alpha, requires_grad=True)
    yaad.sum(S.dirichlet.logpdf(tx, ta)).backward()
    jx, ja = jax.grad(lambda u, a: jnp.sum(jst.dirichlet.logpdf(u, a)), argnums=(0, 1))(x, alpha)
    np.testing.assert_allclose(tx.grad, jx, rtol=1e-12)
    np.testing.assert_allclose(ta.grad, ja, rtol=1e-12)
    assert gradgradcheck(S.dirichlet.logpdf, [x[:2], alpha])
    assert np.isnan(S.dirichlet.logpdf(x, -alpha)).all()
    assert S.dirichlet.logpdf(np.array([1.2, -0.2]), np.array([1.0, 2.0])) == -np.inf
    with pytest.raises(ValueError, match="alpha must be 1-D"):
        S.dirichlet.logpdf(x, alpha[:1])


def test_regression_second_derivative_through_where_at_an_accidental_zero():
    # Found by the dirichlet gradgradcheck: the strong zeros of `where` zeroed the
    # derivative of an upstream gradient that was zero by accident (here c * ... at c = 0),
    # so d2/dc dy of where(y > 0, c log y, 0) was 0 instead of 1/y.
    c, y = np.array([0.0, 1.0, 2.0]), np.array([0.2, 0.3, 0.5])
    assert gradgradcheck(lambda c, y: yaad.where(y > 0, c * yaad.log(y), 0.0), [c, y])


# ---- the ends of the support, and parameters at their limits -------------------------------


def _one_sided(f, args, i, direction, h=1e-6):
    """One-sided derivative of SciPy's ``f`` in argument ``i``, stepping into the support
    (``direction`` +1 or -1), Richardson-extrapolated."""
    def step(h):
        a = list(args)
        a[i] += direction * h
        return (f(*a) - f(*args)) / (direction * h)
    return 2 * step(h / 2) - step(h)


# (distribution, method, arguments, the argument differentiated, the direction into the
# support, the analytic one-sided derivative): each was NaN (0 / 0 in d/dy of x log(y))
EDGES = [
    ("gamma", "logpdf", (0.0, 1.0), 0, +1, -1.0),       # logpdf = -x
    ("gamma", "pdf", (0.0, 1.0), 0, +1, -1.0),
    ("chi2", "logpdf", (0.0, 2.0), 0, +1, -0.5),        # -x/2 - log 2
    ("beta", "logpdf", (0.0, 1.0, 2.0), 0, +1, -1.0),   # log 2 + log(1 - x)
    ("beta", "logpdf", (1.0, 2.0, 1.0), 0, -1, 1.0),    # log 2 + log x
    ("beta", "logpdf", (0.0, 1.0, 1.0), 0, +1, 0.0),    # uniform
    ("beta", "pdf", (1.0, 1.0, 1.0), 0, -1, 0.0),
    ("poisson", "logpmf", (0.0, 0.0), 1, +1, -1.0),     # -mu
    ("poisson", "pmf", (0.0, 0.0), 1, +1, -1.0),
    ("binom", "logpmf", (0.0, 5.0, 0.0), 2, +1, -5.0),  # n log(1 - p)
    ("binom", "pmf", (0.0, 5.0, 0.0), 2, +1, -5.0),
    ("binom", "logpmf", (5.0, 5.0, 1.0), 2, -1, 5.0),   # n log p
]


@pytest.mark.parametrize("name, method, args, i, direction, want", EDGES)
def test_one_sided_derivatives_at_the_ends_of_the_support(name, method, args, i, direction,
                                                          want):
    sf = _fn(ss, name, method)
    np.testing.assert_allclose(_one_sided(sf, args, i, direction), want, atol=1e-6)
    ts = [yaad.tensor(np.array(a), requires_grad=k == i) for k, a in enumerate(args)]
    out = _fn(S, name, method)(*ts)
    np.testing.assert_allclose(out.data, sf(*args), rtol=1e-14)
    out.backward()
    np.testing.assert_allclose(ts[i].grad, want, rtol=1e-12, atol=1e-15)


def test_dirichlet_gradient_at_a_zero_component_with_alpha_one():
    # (alpha_0 - 1) log x_0 = 0 for every x_0 when alpha_0 = 1: its derivative is 0
    x = yaad.tensor(np.array([0.0, 0.3, 0.7]), requires_grad=True)
    alpha = np.array([1.0, 2.0, 3.0])
    out = S.dirichlet.logpdf(x, alpha)
    np.testing.assert_allclose(out.data, ss.dirichlet.logpdf(x.data, alpha), rtol=1e-13)
    out.backward()
    np.testing.assert_allclose(x.grad, [0.0, 1 / 0.3, 2 / 0.7], rtol=1e-13)


@pytest.mark.parametrize("method", METHODS)
def test_t_with_infinite_df_is_the_normal(method):
    """SciPy's t at df = inf is the normal distribution; yaad's logpdf was NaN there, every
    gradient too. The gradient in df is 0 (its limit: the t's moves as 1/df^2)."""
    x = np.array([-1.5, 0.0, 0.5, 2.0])
    xt = yaad.tensor(x, requires_grad=True)
    df = yaad.tensor(np.array(np.inf), requires_grad=True)
    out = _fn(S, "t", method)(xt, df, LOC, SCALE)
    np.testing.assert_allclose(out.data, _fn(ss, "t", method)(x, np.inf, LOC, SCALE),
                               rtol=1e-13)
    np.testing.assert_allclose(out.data, _fn(ss, "norm", method)(x, LOC, SCALE), rtol=1e-13)
    yaad.sum(out).backward()
    xn = yaad.tensor(x, requires_grad=True)
    yaad.sum(_fn(S, "norm", method)(xn, LOC, SCALE)).backward()
    np.testing.assert_allclose(xt.grad, xn.grad, rtol=1e-13)
    assert df.grad == 0.0
    # the finite-df gradient in df tends to that 0
    big = yaad.tensor(np.array(1e8), requires_grad=True)
    yaad.sum(_fn(S, "t", method)(x, big, LOC, SCALE)).backward()
    assert abs(float(big.grad)) < 1e-7


def test_t_at_large_finite_df_keeps_its_digits():
    """lgamma((df + 1) / 2) - lgamma(df / 2) - log(df) / 2 cancels at large df: the log
    density at x = 1 was off by 2e-4 at df = 1e12, was +1.66 at df = 1e15 and -24.1 at
    df = 1e20 (SciPy: -1.4189385; PyTorch's StudentT is as wrong as yaad was). The oracle:
    mpmath, for the value and the derivative in df."""
    import mpmath

    def exact(x, df):
        with mpmath.extradps(25 + int(mpmath.log10(df))):  # (it cancels in mpmath too)
            x, df = mpmath.mpf(x), mpmath.mpf(df)
            return (mpmath.loggamma((df + 1) / 2) - mpmath.loggamma(df / 2)
                    - mpmath.log(df * mpmath.pi) / 2 - (df + 1) / 2 * mpmath.log1p(x * x / df))

    x = np.array([-3.0, 0.0, 1.0, 2.5])
    for d in (3.0, 49.9, 50.1, 1e3, 1e6, 1e10, 1e15, 1e20, 1e300):
        df = yaad.tensor(np.array(d), requires_grad=True)
        xt = yaad.tensor(x, requires_grad=True)
        out = S.t.logpdf(xt, df)
        want = [float(exact(v, d)) for v in x]
        np.testing.assert_allclose(out.data, want, rtol=2e-15, err_msg=f"df={d}")
        np.testing.assert_allclose(out.data, ss.t.logpdf(x, d), rtol=1e-12)  # (SciPy's 7e-14)
        yaad.sum(out).backward()
        with mpmath.extradps(25 + int(np.log10(d))):
            ddf = float(sum(mpmath.diff(lambda v, xi=xi: exact(xi, v), mpmath.mpf(d)) for xi in x))
        # (an absolute eps x^2 / df: the x term's own cancellation, O(1/df^2) from O(1/df);
        # at df = 1e300, 1/df^2 underflows and the derivative is -x^2 / (2 df))
        err = abs(float(df.grad) - ddf)
        assert d > 1e100 or err <= 1e-13 * abs(ddf) + 1e-15 * x @ x / d, (d, ddf)
        np.testing.assert_allclose(xt.grad, -(d + 1) * x / (d + x * x), rtol=1e-14)
    # the cdf's derivative in x is the density
    x1 = yaad.tensor(np.array(1.0), requires_grad=True)
    S.t.cdf(x1, 1e15).backward()
    np.testing.assert_allclose(x1.grad, ss.norm.pdf(1.0), rtol=1e-14)


# ---- parameters' derivatives at an edge of the support, against PyTorch ---------------------
#
# At an edge (x = 0 for gamma, beta, lognorm; k = 0 with mu = 0), the value is the limit from
# inside the support (SciPy's), and so is every parameter's derivative: the limit of its
# derivative as x (or the parameter) approaches the edge from inside, +-inf where it
# diverges. gamma.logpdf(0, a) is +inf for a < 1, 0 at a = 1 and -inf for a > 1: both
# one-sided derivatives in a are -inf at a = 1 too, where yaad (and PyTorch) gave the finite
# -digamma(1) (xlogy's gradient in its first argument is 0 where it is 0).

_ED = 1e-8  # how close to the edge the one-sided oracle goes


def _torch_log_prob(make, x):
    """``(make, x)`` -> the gradients of PyTorch's ``make(*params).log_prob(x)``."""
    import torch

    def grads(params):
        ts = [torch.tensor(float(p), dtype=torch.float64, requires_grad=True) for p in params]
        value = x if isinstance(x, torch.Tensor) else torch.tensor(float(x), dtype=torch.float64)
        make(*ts).log_prob(value).backward()
        return [None if t.grad is None else float(t.grad) for t in ts]
    return grads


def _td():
    import torch

    return torch.distributions


# (case, yaad's log density of (x, *params), its SciPy form, x, params, the index of the
# parameter differentiated, where the oracle approaches the edge from inside (a function of
# d > 0 giving (x, *params)), the limit (the expected derivative), PyTorch's
# (make(*params), x) or None, and what PyTorch gives if it differs (with the reason))
PARAMETER_EDGES = [
    ("gamma a<1", "gamma", (0.0, 0.5), 1, lambda d: (d, 0.5), -np.inf,
     lambda a: _td().Gamma(a, 1.0, validate_args=False), None),
    ("gamma a=1", "gamma", (0.0, 1.0), 1, lambda d: (d, 1.0), -np.inf,
     lambda a: _td().Gamma(a, 1.0, validate_args=False),
     (0.5772156649015329, "xlogy's gradient is 0 where its first argument is 0")),
    ("gamma a>1", "gamma", (0.0, 2.0), 1, lambda d: (d, 2.0), -np.inf,
     lambda a: _td().Gamma(a, 1.0, validate_args=False), None),
    ("gamma scale, a<1", "gamma", (0.0, 0.5, 0.0, 2.0), 3, lambda d: (d, 0.5, 0.0, 2.0), -0.25,
     lambda a, loc, s: _td().Gamma(a, 1 / s, validate_args=False), None),
    ("gamma scale, a>1", "gamma", (0.0, 2.0, 0.0, 2.0), 3, lambda d: (d, 2.0, 0.0, 2.0), -1.0,
     lambda a, loc, s: _td().Gamma(a, 1 / s, validate_args=False), None),
    ("chi2 df=2", "chi2", (0.0, 2.0), 1, lambda d: (d, 2.0), -np.inf,
     lambda df: _td().Chi2(df, validate_args=False),
     (-0.05796575782920627, "xlogy's gradient is 0 where its first argument is 0")),
    ("chi2 df=4", "chi2", (0.0, 4.0), 1, lambda d: (d, 4.0), -np.inf,
     lambda df: _td().Chi2(df, validate_args=False), None),
    ("beta a=1 at 0", "beta", (0.0, 1.0, 2.0), 1, lambda d: (d, 1.0, 2.0), -np.inf,
     lambda a, b: _td().Beta(a, b, validate_args=False),
     (1.5, "xlogy's gradient is 0 where its first argument is 0")),
    ("beta b at 0", "beta", (0.0, 1.0, 2.0), 2, lambda d: (d, 1.0, 2.0), 0.5,
     lambda a, b: _td().Beta(a, b, validate_args=False), None),
    ("beta b=1 at 1", "beta", (1.0, 2.0, 1.0), 2, lambda d: (1 - d, 2.0, 1.0), -np.inf,
     lambda a, b: _td().Beta(a, b, validate_args=False),
     (1.5, "xlogy's gradient is 0 where its first argument is 0")),
    ("beta b<1 at 1", "beta", (1.0, 2.0, 0.5), 2, lambda d: (1 - d, 2.0, 0.5), -np.inf,
     lambda a, b: _td().Beta(a, b, validate_args=False), None),
    ("lognorm s at 0", "lognorm", (0.0, 0.8), 1, lambda d: (d, 0.8), np.inf,
     lambda s: _td().LogNormal(0.0, s, validate_args=False), None),
    ("expon scale at 0", "expon", (0.0, 0.0, 2.0), 2, lambda d: (d, 0.0, 2.0), -0.5,
     lambda loc, s: _td().Exponential(1 / s, validate_args=False), None),
    ("uniform scale at loc", "uniform", (0.0, 0.0, 2.0), 2, lambda d: (d, 0.0, 2.0), -0.5,
     lambda loc, s: _td().Uniform(loc, loc + s, validate_args=False), None),
    ("uniform loc at loc + scale", "uniform", (2.0, 0.0, 2.0), 1, lambda d: (2 - d, 0.0, 2.0),
     0.0, lambda loc, s: _td().Uniform(loc, loc + s, validate_args=False), None),
    ("poisson mu=0, k=0", "poisson", (0.0, 0.0), 1, lambda d: (0.0, d), -1.0,
     lambda mu: _td().Poisson(mu, validate_args=False),
     (np.nan, "the rate's log is taken first: 0 * log 0")),
    ("poisson mu=0, k=2", "poisson", (2.0, 0.0), 1, lambda d: (2.0, d), np.inf,
     lambda mu: _td().Poisson(mu, validate_args=False), None),
    ("binom p=0, k=0", "binom", (0.0, 5.0, 0.0), 2, lambda d: (0.0, 5.0, d), -5.0,
     lambda n, p: _td().Binomial(5, p, validate_args=False),
     (0.0, "probabilities are clamped to [eps, 1 - eps] through logits")),
    ("binom p=1, k=5", "binom", (5.0, 5.0, 1.0), 2, lambda d: (5.0, 5.0, 1 - d), 5.0,
     lambda n, p: _td().Binomial(5, p, validate_args=False),
     (0.0, "probabilities are clamped to [eps, 1 - eps] through logits")),
    ("binom p=0, k=5", "binom", (5.0, 5.0, 0.0), 2, lambda d: (5.0, 5.0, d), np.inf,
     lambda n, p: _td().Binomial(5, p, validate_args=False),
     (0.0, "probabilities are clamped to [eps, 1 - eps] through logits")),
]


def _density(module, name):
    return _fn(module, name, "logpmf" if name in ("poisson", "binom") else "logpdf")


def _parameter_fd(name, args, i, d):
    """SciPy's central difference in argument ``i`` at ``args``, ``d`` from the edge: with a
    step far below ``d`` where the parameter moves the edge (a discrete distribution's, a
    location at the upper end), else 1e-6."""
    h = 1e-3 * d if name in ("poisson", "binom") or (name == "uniform" and i == 1) else 1e-6
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    f = _density(ss, name)
    return (f(*up) - f(*down)) / (2 * h)


@pytest.mark.parametrize("case", PARAMETER_EDGES, ids=[c[0] for c in PARAMETER_EDGES])
def test_parameter_derivatives_at_an_edge_of_the_support(case):
    label, name, args, i, approach, want, torch_make, torch_differs = case
    # the oracle: SciPy's derivative as the edge is approached from inside
    near = _parameter_fd(name, approach(1e-4), i, 1e-4)
    nearer = _parameter_fd(name, approach(_ED), i, _ED)
    if np.isfinite(want):
        np.testing.assert_allclose(nearer, want, atol=1e-4, err_msg=label)
    else:  # diverging towards want's sign
        assert np.sign(near) == np.sign(nearer) == np.sign(want), (label, near, nearer)
        assert abs(nearer) > abs(near) + 2, (label, near, nearer)
    # yaad: the value is SciPy's, the derivative the limit
    ts = [yaad.tensor(np.array(a), requires_grad=k == i) for k, a in enumerate(args)]
    out = _density(S, name)(*ts)
    np.testing.assert_allclose(out.data, _density(ss, name)(*args), rtol=1e-14, err_msg=label)
    out.backward()
    np.testing.assert_allclose(ts[i].grad, want, rtol=1e-12, atol=1e-15, err_msg=label)
    # PyTorch: the same, or a known deviation
    x, *params = args
    torch_grad = _torch_log_prob(torch_make, x)(params)[i - 1]
    expected = want if torch_differs is None else torch_differs[0]
    np.testing.assert_allclose(torch_grad, expected, rtol=1e-12, err_msg=label)


def test_dirichlet_parameter_at_a_zero_component():
    # alpha_0 = 1 at x_0 = 0: the same jump as gamma's (+inf, 0, -inf): -inf, as the limit
    # of log x_0 - digamma(1) + digamma(sum alpha); PyTorch: finite (xlogy's convention)
    import torch

    x = np.array([0.0, 0.3, 0.7])
    alpha = yaad.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    S.dirichlet.logpdf(x, alpha).backward()
    assert alpha.grad[0] == -np.inf and np.all(np.isfinite(alpha.grad[1:]))
    inside = np.array([_ED, 0.3, 0.7 - _ED])
    h = 1e-6
    fd = (ss.dirichlet.logpdf(inside, [1 + h, 2.0, 3.0])
          - ss.dirichlet.logpdf(inside, [1 - h, 2.0, 3.0])) / (2 * h)
    assert fd < -15
    ta = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    _td().Dirichlet(ta, validate_args=False).log_prob(torch.tensor(x)).backward()
    assert np.isfinite(ta.grad[0].item())


@pytest.mark.parametrize("name, shapes", [("gamma", (0.5,)), ("chi2", (1.0,)),
                                          ("beta", (0.5, 2.0))])
def test_cdf_in_the_scale_at_the_location(name, shapes):
    # At x = loc, z = 0 for every scale: cdf and sf are constant in the scale there, their
    # derivative 0 (SciPy's central difference); the chain rule gave pdf(0) * 0 = inf * 0,
    # NaN, where pdf(0) is infinite.
    for method in ("cdf", "sf"):
        s = yaad.tensor(2.0, requires_grad=True)
        _fn(S, name, method)(0.5, *shapes, loc=0.5, scale=s).backward()
        f = _fn(ss, name, method)
        fd = (f(0.5, *shapes, loc=0.5, scale=2.0 + 1e-6)
              - f(0.5, *shapes, loc=0.5, scale=2.0 - 1e-6)) / 2e-6
        assert fd == 0.0 and s.grad == 0.0, (name, method, s.grad)
