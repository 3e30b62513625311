"""scipy.special functions beyond the basic table: gradients against JAX and mpmath.

The registry suites (test_elementwise, test_registry_second_order, test_fuzz_ops) check
values against SciPy and gradients against finite differences. Here: the gradients against
an independent implementation (``jax.scipy.special``), the parameter derivatives of
``gammainc`` and ``betainc`` (no closed form) against mpmath's high-precision
differentiation, and the edge cases a finite difference cannot see.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as js
import mpmath
import numpy as np
import pytest
import scipy.special as sp

import yaad
from yaad.ops import elementwise as ew

jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(7)
POS = rng.uniform(0.3, 3.0, 6)
POS2 = rng.uniform(0.3, 3.0, 6)
REAL = rng.uniform(-2.0, 2.0, 6)
PROB = rng.uniform(0.05, 0.95, 6)


def _grads(f, *xs):
    ts = [yaad.tensor(x, requires_grad=True) for x in xs]
    yaad.sum(f(*ts)).backward()
    return [t.grad for t in ts]


def _jax_grads(f, *xs):
    return jax.grad(lambda *a: jnp.sum(f(*a)), argnums=tuple(range(len(xs))))(*xs)


# name: (yaad function, jax function, inputs)
AGAINST_JAX = {
    "ndtr": (yaad.ndtr, js.ndtr, (REAL,)),
    "log_ndtr": (yaad.log_ndtr, js.log_ndtr, (np.r_[REAL, -30.0, -200.0, 9.0],)),
    "ndtri": (yaad.ndtri, js.ndtri, (PROB,)),
    "rgamma": (yaad.rgamma, lambda x: 1 / js.gamma(x), (POS,)),  # JAX has no rgamma
    "loggamma": (yaad.loggamma, js.loggamma, (POS,)),
    "gammasgn": (yaad.gammasgn, js.gammasgn, (REAL + 0.05,)),
    "multigammaln": (lambda a: yaad.multigammaln(a, 3), lambda a: js.multigammaln(a, 3),
                     (POS + 1.5,)),
    "factorial": (yaad.factorial, js.factorial, (POS,)),
    "poch": (yaad.poch, js.poch, (POS, POS2)),
    "entr": (yaad.entr, js.entr, (POS,)),
    "rel_entr": (yaad.rel_entr, js.rel_entr, (POS, POS2)),
    "kl_div": (yaad.kl_div, js.kl_div, (POS, POS2)),
    "exp1": (yaad.exp1, js.exp1, (POS,)),
    "expi": (yaad.expi, js.expi, (POS,)),
    "expn": (lambda x: yaad.expn(np.array([0, 1, 2, 3, 4, 5]), x),
             lambda x: js.expn(jnp.array([0, 1, 2, 3, 4, 5]), x), (POS,)),
    "zeta": (lambda q: yaad.zeta(2.5, q), lambda q: js.zeta(2.5, q), (POS,)),
    "dawsn": (yaad.dawsn, js.dawsn, (REAL,)),
    "owens_t": (yaad.owens_t, js.owens_t, (REAL, REAL[::-1])),
    "hyp1f1": (lambda x: yaad.hyp1f1(0.7, 1.3, x), lambda x: js.hyp1f1(0.7, 1.3, x), (REAL,)),
    "hyp2f1": (lambda x: yaad.hyp2f1(0.7, 1.3, 2.1, x),
               lambda x: js.hyp2f1(0.7, 1.3, 2.1, x), (PROB - 0.5,)),
    "gammainc": (yaad.gammainc, js.gammainc, (POS, POS2)),
    "gammaincc": (yaad.gammaincc, js.gammaincc, (POS, POS2)),
    "betainc_x": (lambda x: yaad.betainc(1.5, 2.5, x), lambda x: js.betainc(1.5, 2.5, x),
                  (PROB,)),
    "xlogy": (yaad.xlogy, js.xlogy, (REAL, POS)),
    "xlog1py": (yaad.xlog1py, js.xlog1py, (REAL, POS)),
    "expit": (yaad.expit, js.expit, (REAL,)),
    "logit": (yaad.logit, js.logit, (PROB,)),
    "sinc": (yaad.sinc, jnp.sinc, (np.r_[REAL, 0.0],)),
    "boxcox": (yaad.boxcox, js.boxcox, (POS, REAL)),
    "boxcox1p": (yaad.boxcox1p, js.boxcox1p, (POS, REAL)),
}


@pytest.mark.parametrize("name", sorted(AGAINST_JAX))
def test_gradient_equals_jax(name):
    f, jf, xs = AGAINST_JAX[name]
    ours = _grads(f, *xs)
    theirs = _jax_grads(jf, *xs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-7, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", ["sici", "fresnel"])
def test_two_output_functions_against_jax(name):
    x = np.r_[POS, -POS[:2]]
    ts = yaad.tensor(x, requires_grad=True)
    a, b = getattr(yaad, name)(ts)
    yaad.sum(a + 2 * b).backward()
    jf = getattr(js, name)
    jg = jax.grad(lambda v: jnp.sum(jf(v)[0] + 2 * jf(v)[1]))(x)
    np.testing.assert_allclose(ts.grad, jg, rtol=1e-9)
    for u, v in zip(getattr(yaad, name)(x), getattr(sp, name)(x)):
        np.testing.assert_array_equal(u, v)


def test_jn_is_jv_and_yn_matches_scipy():
    assert yaad.jn is yaad.jv
    x = POS
    (g,) = _grads(lambda t: yaad.yn(2, t), x)
    np.testing.assert_allclose(g, sp.yvp(2, x), rtol=1e-12)


def test_gradient_of_wofz_on_complex_input_equals_jax():
    z = REAL + 1j * POS
    t = yaad.tensor(z, requires_grad=True)
    yaad.sum(yaad.real(yaad.wofz(t))).backward()
    jg = jax.grad(lambda v: jnp.sum(js.wofz(v).real))(z)
    # JAX's gradient of a real function of complex z is conj of yaad's (PyTorch's)
    np.testing.assert_allclose(t.grad, np.conj(np.asarray(jg)), rtol=1e-7)


# ---- parameter derivatives of gammainc and betainc --------------------------------------

mpmath.mp.dps = 30


def _mp_gammainc(k, a, x):
    return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a, k))


def _mp_betainc(i, j, a, b, x):
    return float(mpmath.diff(lambda p, q: mpmath.betainc(p, q, 0, x, regularized=True),
                             (a, b), (i, j)))


GAMMA_POINTS = [(0.3, 0.2), (1.0, 1.5), (2.5, 2.0), (7.0, 12.0), (30.0, 25.0), (2.0, 0.01),
                (0.7, 5.0), (100.0, 110.0), (3.0, 40.0)]
BETA_POINTS = [(0.3, 0.5, 0.2), (1.0, 2.0, 0.5), (2.5, 2.5, 0.9), (7.0, 1.5, 0.7),
               (30.0, 40.0, 0.45), (2.0, 9.0, 0.01), (100.0, 80.0, 0.6), (3.0, 0.2, 0.99)]


@pytest.mark.parametrize("k", [1, 2])
def test_gammainc_parameter_derivatives_against_mpmath(k):
    a, x = (np.array(v) for v in zip(*GAMMA_POINTS))
    got = ew._gammainc_da(k, a, x)
    expected = [_mp_gammainc(k, ai, xi) for ai, xi in GAMMA_POINTS]
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("ij", [(1, 0), (0, 1), (2, 0), (1, 1), (0, 2)])
def test_betainc_parameter_derivatives_against_mpmath(ij):
    a, b, x = (np.array(v) for v in zip(*BETA_POINTS))
    got = ew._betainc_dab(*ij, a, b, x)
    expected = [_mp_betainc(*ij, *p) for p in BETA_POINTS]
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


def test_gammainc_gradient_in_a_equals_jax():
    (ga, gx) = _grads(yaad.gammainc, POS, POS2)
    ja, jx = _jax_grads(js.gammainc, POS, POS2)
    np.testing.assert_allclose(ga, ja, rtol=1e-9)
    np.testing.assert_allclose(gx, jx, rtol=1e-12)


def test_hessian_of_gammainc_and_betainc_in_the_parameters():
    from yaad import func

    h = func.hessian(lambda a: yaad.gammainc(a, 2.0))(np.array(1.5))
    np.testing.assert_allclose(h, _mp_gammainc(2, 1.5, 2.0), rtol=1e-10)
    h = func.hessian(lambda p: yaad.betainc(p[0], p[1], 0.3))(np.array([1.5, 2.5]))
    expected = [[_mp_betainc(2, 0, 1.5, 2.5, 0.3), _mp_betainc(1, 1, 1.5, 2.5, 0.3)],
                [_mp_betainc(1, 1, 1.5, 2.5, 0.3), _mp_betainc(0, 2, 1.5, 2.5, 0.3)]]
    np.testing.assert_allclose(h, expected, rtol=1e-9)


def test_third_derivative_in_a_raises_naming_the_function():
    a = yaad.tensor(np.array(1.5), requires_grad=True)
    y = yaad.gammainc(a, 2.0)
    (g,) = yaad.autograd.grad(y, [a], create_graph=True)
    (h,) = yaad.autograd.grad(g, [a], create_graph=True)
    with pytest.raises(NotImplementedError, match="gammainc: derivatives of order 3"):
        yaad.autograd.grad(h, [a])


def test_parameter_derivatives_at_the_ends_of_the_support_are_zero():
    a = np.array([0.5, 2.0])
    assert np.all(ew._gammainc_da(1, a, 0.0) == 0)
    assert np.all(ew._betainc_dab(1, 0, a, 2.0, np.array([0.0, 1.0])) == 0)
    assert np.all(np.isnan(ew._betainc_dab(0, 1, a, 2.0, np.array([-0.1, 1.1]))))


def test_log_ndtr_gradient_far_in_the_left_tail_is_finite_and_accurate():
    x = np.array([-10.0, -40.0, -1e3, -1e6])
    (g,) = _grads(yaad.log_ndtr, x)
    expected = [float(mpmath.npdf(v) / mpmath.ncdf(v)) for v in x]  # phi / Phi
    np.testing.assert_allclose(g, expected, rtol=1e-13)


def test_boxcox_gradient_in_lambda_is_smooth_through_zero():
    x = np.array([0.5, 2.0, 3.0])
    for lm in (0.0, 1e-300, 1e-9, 1e-3):
        (_, gl) = _grads(yaad.boxcox, x, np.full(3, lm))
        np.testing.assert_allclose(gl, np.log(x) ** 2 / 2, rtol=2e-3)


def test_spence_gradient_where_jax_gives_nan():
    # jax.grad(jax.scipy.special.spence) is NaN at 1.98 and 1.11 (JAX 0.10); the
    # derivative of SciPy's spence is log(z) / (1 - z), -1 at z = 1.
    x = np.array([1.98775776, 1.11044897, 0.5, 1.0, 3.0])
    (g,) = _grads(yaad.spence, x)
    with np.errstate(all="ignore"):
        expected = np.where(x == 1, -1.0, np.log(x) / (1 - x))
    np.testing.assert_allclose(g, expected, rtol=1e-13)
    assert np.isnan(jax.grad(js.spence)(1.98775776))
