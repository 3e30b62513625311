"""yaad.testing: the finite differences reach the tight default tolerance, catch formulas
a little off, run ordinary yaad code, and HIPS autograd's protocol catches wrong rules at
every order (the derivative of a VJP with respect to its cotangent included)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import yaad
from yaad.testing import (
    DOUBLE_TOLERANCE,
    GradcheckError,
    check_grads,
    gradcheck,
    gradgradcheck,
    numerical_gradient,
)

rng = np.random.default_rng(3)


def _erf_like(vjp_scale, jvp_scale=None):
    """erf with its derivative multiplied by a scale (a formula slightly off) in the VJP
    and in the JVP rule."""
    def d(x, scale):
        return scale * 2 / np.sqrt(np.pi) * yaad.exp(-(x * x))

    jvp_scale = vjp_scale if jvp_scale is None else jvp_scale
    return yaad.op(sp.erf, name=f"erf_times_{vjp_scale}_{jvp_scale}",
                   vjp=lambda g, ans, x: g * d(x, vjp_scale),
                   jvp=lambda t, ans, x: t * d(x, jvp_scale))


def test_default_tolerance_is_tight():
    assert max(DOUBLE_TOLERANCE) <= 1e-6


@pytest.mark.parametrize("off", [2e-4, 1e-5, 1e-6])
def test_a_derivative_off_by_a_little_fails(off):
    x = rng.uniform(-2, 2, (2, 3))
    assert gradcheck(_erf_like(1.0), [x], check_forward_ad=True)
    assert check_grads(_erf_like(1.0), [x])
    with pytest.raises(GradcheckError, match="gradient differs"):
        gradcheck(_erf_like(1 + off), [x])
    with pytest.raises(GradcheckError, match="Jacobian-vector product"):
        gradcheck(_erf_like(1.0, 1 + off), [x], check_forward_ad=True)
    with pytest.raises(GradcheckError, match="order 1, mode fwd"):
        check_grads(_erf_like(1.0, 1 + off), [x])
    with pytest.raises(GradcheckError, match="order 1, mode rev"):
        check_grads(_erf_like(1 + off, 1.0), [x])


@pytest.mark.parametrize("f, x, exact", [
    (np.sin, 0.7, np.cos(0.7)), (np.exp, 3.0, np.exp(3.0)), (np.log, 0.3, 1 / 0.3),
    (lambda x: np.tan(x), 1.2, 1 / np.cos(1.2) ** 2),
    (lambda x: 1 / x, 0.05, -1 / 0.05 ** 2),
])
def test_fourth_order_differences_reach_1e_10(f, x, exact):
    num = numerical_gradient(lambda t: f(t.data), [np.array(x)], [np.array(1.0)])[0]
    assert abs(num - exact) <= 1e-10 * max(1.0, abs(exact))


def test_gradcheck_runs_ordinary_yaad_code():
    # the function gets tensors, also for the finite differences: .detach(), .item(),
    # tensor methods and a normalisation by a detached maximum all work
    def probabilities(theta):
        logpsi = yaad.log(theta.reshape(2, 2) + 2j).sum(axis=1) * theta.mean()
        shifted = logpsi - yaad.max(logpsi.real).detach()  # cancels in the ratio below
        p = yaad.exp(2 * shifted.real)
        scale = 1.0 if theta.sum().item() > 0 else 2.0  # a branch on a value
        return scale * p / p.sum()

    theta = np.array([0.3, 1.2, -0.4, 0.8])
    assert gradcheck(probabilities, [theta], check_forward_ad=True)
    assert gradgradcheck(probabilities, [theta])
    assert check_grads(probabilities, [theta])


def test_single_precision_outputs_get_a_looser_default():
    x = rng.uniform(-1, 1, 4)
    assert gradcheck(lambda x: yaad.sin(x.astype(np.float32)), [x])
    with pytest.raises(GradcheckError):
        gradcheck(lambda x: yaad.sin(x.astype(np.float32)), [x], atol=1e-7, rtol=1e-7)


# ---- HIPS autograd's protocol ------------------------------------------------------------


def _sin_with(vjp=None, jvp=None, name="sin_variant"):
    return yaad.op(np.sin, name=name,
                   vjp=vjp or (lambda g, ans, x: g * yaad.conj(yaad.cos(x))),
                   jvp=jvp or (lambda t, ans, x: t * yaad.cos(x)))


def _plain(a):
    return a.data if isinstance(a, yaad.Tensor) else a


@pytest.mark.parametrize("x", [rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3) + 0.5j])
def test_check_grads_passes_correct_rules(x):
    assert check_grads(_sin_with(name="sin_right"), [x], order=3)
    assert check_grads(lambda a, b: (a * b, yaad.exp(a).sum()), [x, x[::-1] * 2])


def test_check_grads_catches_a_vjp_that_drops_its_cotangent():
    # right at order 1, but the cotangent is read as an array: the VJP as a function of
    # its cotangent has derivative 0 (what func.vjp itself gave before issue 11)
    bad = _sin_with(vjp=lambda g, ans, x: _plain(g) * yaad.cos(x), name="sin_drops_g")
    x = rng.uniform(-1, 1, 3)
    assert check_grads(bad, [x], order=1)
    with pytest.raises(GradcheckError, match=r"order 1, mode (fwd|rev), of vjp\(f\)"):
        check_grads(bad, [x], order=2)


def test_check_grads_catches_a_rule_without_second_derivatives():
    bad = _sin_with(vjp=lambda g, ans, x: g * np.cos(_plain(x)),
                    jvp=lambda t, ans, x: t * np.cos(_plain(x)), name="sin_opaque")
    x = rng.uniform(-1, 1, 3)
    assert check_grads(bad, [x], order=1)
    with pytest.raises(GradcheckError, match=r"of jvp\(f\)"):
        check_grads(bad, [x], modes=("fwd",), order=2)
    with pytest.raises(GradcheckError, match=r"of vjp\(f\)"):
        check_grads(bad, [x], modes=("rev",), order=2)


def test_check_grads_catches_a_wrong_complex_convention():
    bad = yaad.op(lambda z: z * z, name="sq_no_conj", vjp=lambda g, ans, z: 2 * g * z,
                  jvp=lambda t, ans, z: 2 * t * z)
    z = rng.uniform(-1, 1, 2) + 1j * rng.uniform(-1, 1, 2)
    assert check_grads(bad, [z], modes=("fwd",), order=1)  # the JVP is right
    with pytest.raises(GradcheckError, match="order 1, mode rev"):
        check_grads(bad, [z], modes=("rev",), order=1)


def test_check_grads_refuses_bad_arguments():
    with pytest.raises(ValueError, match="modes"):
        check_grads(yaad.sin, [np.ones(2)], modes=("backward",))
    with pytest.raises(TypeError, match="closure"):
        check_grads(lambda x, i: x[i], [np.ones(2), np.array([0])])
