"""Values and derivatives that were wrong or crashed (issue 11), against PyTorch, JAX, SciPy
and finite differences: power on the edges of its domain, sqrtm on the branch cut,
linspace with tensor ends, clip by keyword, statistics of scalars and lists."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import torch

import yaad
from yaad import func as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# ---- power -------------------------------------------------------------------------------


@pytest.mark.parametrize("b0, expected", [(-1.0, -np.inf), (-0.5, -np.inf), (0.0, 0.0),
                                          (0.5, 0.0), (2.0, 0.0)])
def test_derivative_of_zero_to_the_b(b0, expected):
    b = torch.tensor(b0, dtype=torch.float64, requires_grad=True)
    torch.pow(torch.tensor(0.0, dtype=torch.float64), b).backward()
    assert b.grad.item() == expected  # the oracle agrees with the analytic limit
    assert F.grad(lambda b: yaad.power(0.0, b))(b0) == expected
    assert F.jvp(lambda b: yaad.power(0.0, b), (b0,), (1.0,))[1] == expected


def test_complex_exponent_on_a_negative_real_base():
    x0 = np.array([-2.0, 3.0, -0.5])
    b0 = np.array([0.5 + 0.3j, -1.2 + 0.7j, 2.0 - 1.0j])
    w = np.array([0.3 - 0.2j, 1.0 + 0.5j, -0.7 + 0.1j])
    xt = torch.tensor(x0, requires_grad=True)
    bt = torch.tensor(b0, requires_grad=True)
    (torch.pow(xt, bt) * torch.tensor(np.conj(w))).real.sum().backward()
    x = yaad.tensor(x0, requires_grad=True)
    b = yaad.tensor(b0, requires_grad=True)
    yaad.sum(yaad.real(yaad.power(x, b) * np.conj(w))).backward()
    assert np.all(np.isfinite(b.grad))
    np.testing.assert_allclose(b.grad, bt.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-13)
    # forward mode: the directional derivative along a complex direction of b
    v = np.array([1.0 - 0.5j, 0.2 + 0.1j, -0.3 + 1.0j])
    _, t = F.jvp(lambda b: yaad.power(x0, b), (b0,), (v,))
    np.testing.assert_allclose(t, np.power(x0 + 0j, b0) * np.log(x0 + 0j) * v, rtol=1e-13)


# ---- sqrtm and logm on the branch cut ---------------------------------------------------------


@pytest.mark.parametrize("name", ["sqrtm", "logm"])
def test_matrix_function_of_a_real_matrix_with_a_negative_eigenvalue(name):
    a0 = np.array([[1.0, 2.0, 0.0], [2.0, -3.0, 0.5], [0.0, 0.5, 2.0]])
    assert np.linalg.eigvalsh(a0).min() < 0  # the result is complex
    w = np.array([[0.3 + 0.2j, -0.1 + 0.5j, 0.2], [0.7 - 0.4j, 0.2 + 0.1j, -0.3j],
                  [0.1, 0.4 - 0.2j, 1.0 + 1.0j]])
    f = getattr(sla, name)

    def loss(a):
        return np.real(np.sum(f(a) * np.conj(w)))

    num = np.zeros_like(a0)
    h = 1e-4
    for idx in np.ndindex(a0.shape):
        e = np.zeros_like(a0)
        e[idx] = h
        num[idx] = (8 * (loss(a0 + e) - loss(a0 - e)) - (loss(a0 + 2 * e) - loss(a0 - 2 * e))
                    ) / (12 * h)
    a = yaad.tensor(a0, requires_grad=True)
    yaad.sum(yaad.real(getattr(yaad.linalg, name)(a) * np.conj(w))).backward()
    np.testing.assert_allclose(a.grad, num, rtol=1e-7, atol=1e-9)
    # and the JVP agrees with the VJP: <w, J v> = <J^T w, v>
    v = np.random.default_rng(0).standard_normal(a0.shape)
    _, jv = F.jvp(getattr(yaad.linalg, name), (a0,), (v,))
    np.testing.assert_allclose(np.real(np.sum(np.conj(w) * jv)), np.sum(a.grad * v),
                               rtol=1e-10)


# ---- linspace with tensor ends ----------------------------------------------------------


@pytest.mark.parametrize("args", [
    (0.0, 2.0, 5), (1.0, -3.0, 4, False), (0.5, 0.5, 3), (1.0, 2.0, 1), (1.0, 2.0, 0),
    (np.array([0.0, 1.0]), np.array([[2.0, 3.0], [4.0, 5.0]]), 3, True, False, None, 1),
    (np.float32(1.0), np.float32(2.5), 7), (0.0, 10.0, 4, True, False, int),
])
def test_linspace_with_tensor_ends_matches_numpy(args):
    ref = np.linspace(*args)
    for k in (0, 1):
        a = list(args)
        a[k] = yaad.tensor(a[k], requires_grad=True)
        got = yaad.linspace(*a)
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_array_equal(got.data, ref)  # bit for bit
        assert got.requires_grad == (ref.dtype.kind == "f")


def test_linspace_derivatives_against_jax():
    import jax
    import jax.numpy as jnp

    def f(s, e):
        return yaad.sum(yaad.linspace(s, e, 6) ** 2)

    with jax.enable_x64(True):
        ref = jax.grad(lambda s, e: jnp.sum(jnp.linspace(s, e, 6) ** 2), (0, 1))(0.3, 2.0)
        ref_t = jax.jvp(lambda s, e: jnp.linspace(s, e, 4, endpoint=False), (0.3, 2.0),
                        (1.0, -2.0))[1]
    np.testing.assert_allclose(F.grad(f, (0, 1))(0.3, 2.0), ref, rtol=1e-14)
    _, t = F.jvp(lambda s, e: yaad.linspace(s, e, 4, endpoint=False), (0.3, 2.0), (1.0, -2.0))
    np.testing.assert_allclose(t, ref_t, rtol=1e-14)
    y, step = yaad.linspace(yaad.tensor(0.0), yaad.tensor(3.0, requires_grad=True), 4,
                            retstep=True)
    assert step.requires_grad and float(step.data) == 1.0
    with pytest.raises(ValueError, match="requires_grad"):
        yaad.linspace(yaad.tensor(0.0), 1.0, 3, requires_grad=True)


# ---- clip by keyword, statistics of scalars and lists ------------------------------------


def test_clip_by_keyword_in_both_modes():
    x0 = np.array([-1.0, 0.2, 0.9])
    xt = torch.tensor(x0, requires_grad=True)
    torch.clip(xt, min=-0.1, max=0.7).sum().backward()
    g = F.grad(lambda x: yaad.sum(yaad.clip(x, a_min=-0.1, a_max=0.7)))(x0)
    np.testing.assert_array_equal(g, xt.grad.numpy())
    np.testing.assert_array_equal(F.grad(lambda x: yaad.sum(np.clip(x, a_min=-0.1, a_max=0.7)))(
        x0), xt.grad.numpy())
    out, t = F.jvp(lambda x: yaad.clip(x, a_max=0.7), (x0,), (np.ones(3),))
    np.testing.assert_array_equal(out, np.clip(x0, None, 0.7))
    np.testing.assert_array_equal(t, [1.0, 1.0, 0.0])


@pytest.mark.parametrize("name", ["mean", "var", "std", "sum", "prod"])
@pytest.mark.parametrize("value", [3.0, 2, [1.0, 2.5, -4.0], (1.0, 2.0)])
def test_statistics_of_python_numbers_and_lists_are_numpy(name, value):
    got = getattr(yaad, name)(value)
    expected = getattr(np, name)(value)
    assert not isinstance(got, yaad.Tensor)  # arrays (numbers) in, arrays out
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


# ---- det near the singular set ------------------------------------------------------------


def _cofactors(a):
    """The cofactor matrix (the gradient of det), from minors: a polynomial, exact."""
    c = np.zeros_like(a)
    for i, j in np.ndindex(a.shape):
        minor = np.delete(np.delete(a, i, 0), j, 1)
        c[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return c


def test_det_second_derivative_near_a_singular_matrix():
    # Found by the tighter gradcheck: at a matrix with det ~ 1e-12 (not exactly 0),
    # det(a) inv(a) lost the adjugate's derivative to rounding (an error of 1e-2).
    u, v = np.array([1.0, 2.0, -0.5]), np.array([0.3, -1.0, 2.0])
    a = np.outer(u, v) + np.outer(v, u) + 1e-13 * np.eye(3)
    e = np.random.default_rng(0).standard_normal((3, 3))
    np.testing.assert_allclose(F.grad(yaad.linalg.det)(a), _cofactors(a), atol=1e-12)
    _, h = F.jvp(F.grad(yaad.linalg.det), (a,), (e,))
    s = 1e-3
    num = (8 * (_cofactors(a + s * e) - _cofactors(a - s * e))
           - (_cofactors(a + 2 * s * e) - _cofactors(a - 2 * s * e))) / (12 * s)
    np.testing.assert_allclose(h, num, atol=1e-10)
    # complex: refused there (documented) rather than wrong
    with pytest.raises(NotImplementedError, match="singular complex"):
        F.jvp(F.grad(lambda z: yaad.real(yaad.linalg.det(z))), (a + 0j,), (e + 0j,))
