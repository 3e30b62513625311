"""Solvers given plain arrays and a function that uses a tensor requiring grad from outside
only on some of its calls (a Python branch on the time or the state): every call the
solver makes is checked for such a tensor, not only the first one, and the gradient
reaches it (the ODE solves run again with it; an implicit solve records it), or, where
that cannot be done (``yaad.sparse.linalg``'s operators), the call is refused."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from yaad import implicit, integrate
from yaad.core.tensor import Tensor

C = 0.7
# y' = -y for t < 1/2, -c y after: y(1) = y0 exp(-1/2) exp(-c/2), sum(y0) = 3
DY1_DC = -1.5 * np.exp(-0.5 - 0.5 * C)


def branch_field(c):
    def f(y, t):
        return -y if float(t) < 0.5 else -c * y
    return f


@pytest.mark.parametrize("method, adjoint, rtol", [("dopri5", "discrete", 1e-6),
                                                   ("Radau", "discrete", 1e-5),
                                                   ("dopri5", "backsolve", 1e-4)])
def test_odeint_sees_a_tensor_used_after_the_first_call(method, adjoint, rtol):
    c = yaad.tensor(C, requires_grad=True)
    out = integrate.odeint(branch_field(c), np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 5),
                           rtol=1e-11, atol=1e-12, method=method, adjoint=adjoint)
    assert isinstance(out, Tensor) and out.requires_grad and out.dtype == np.float64
    assert out.shape == (5, 2)
    yaad.sum(out[-1]).backward()
    assert c.grad.shape == () and c.grad.dtype == np.float64
    np.testing.assert_allclose(c.grad, DY1_DC, rtol=rtol)


def test_odeint_sees_it_in_compiled_programs_too():
    """The second solve with the same function runs it as compiled programs: the branch
    taken later is a recorded path that reads ``c`` (or a call that ran eagerly)."""
    c = yaad.tensor(C, requires_grad=True)
    f = branch_field(c)
    for _ in range(3):
        c.grad = None
        out = integrate.odeint(f, np.array([1.0, 2.0]), np.array([0.0, 1.0]), rtol=1e-10,
                               atol=1e-12)
        assert isinstance(out, Tensor) and out.requires_grad
        yaad.sum(out[-1]).backward()
        np.testing.assert_allclose(c.grad, DY1_DC, rtol=1e-6)


def test_solve_ivp_sees_a_tensor_used_after_the_first_call():
    c = yaad.tensor(C, requires_grad=True)
    res = integrate.solve_ivp(lambda t, y: -y if float(t) < 0.5 else -c * y, (0.0, 1.0),
                              np.array([1.0, 2.0]), rtol=1e-11, atol=1e-12)
    assert isinstance(res.y, Tensor) and res.y.requires_grad
    yaad.sum(res.y[:, -1]).backward()
    np.testing.assert_allclose(c.grad, DY1_DC, rtol=1e-6)


def _fixed_point_oracle(xs):
    # x = c cos x: dx/dc = cos x / (1 + c sin x)
    np.testing.assert_allclose(xs, C * np.cos(xs), rtol=1e-10)
    return np.cos(xs) / (1 + C * np.sin(xs))


@pytest.mark.parametrize("method", ["anderson", "iterate", "root"])
def test_fixed_point_sees_a_tensor_used_after_the_first_call(method):
    c = yaad.tensor(C, requires_grad=True)
    x = implicit.fixed_point(lambda x: yaad.cos(x) if x.item() > 0.95 else c * yaad.cos(x),
                             np.array(1.0), method=method, tol=1e-12)
    assert isinstance(x, Tensor) and x.requires_grad and x.dtype == np.float64
    assert x.shape == ()
    x.backward()
    np.testing.assert_allclose(c.grad, _fixed_point_oracle(float(x.detach())), rtol=1e-8)


def test_root_sees_a_tensor_used_after_the_first_call():
    c = yaad.tensor(C, requires_grad=True)
    x = implicit.root(lambda x: x - (yaad.cos(x) if x.item() > 0.95 else c * yaad.cos(x)),
                      np.array(1.0), tol=1e-12)
    assert isinstance(x, Tensor) and x.requires_grad
    x.backward()
    np.testing.assert_allclose(c.grad, _fixed_point_oracle(float(x.detach())), rtol=1e-8)


def test_a_sparse_operator_using_a_tensor_on_some_products_is_refused():
    c = yaad.tensor(2.0, requires_grad=True)
    n = 6
    a = np.diag(np.arange(1.0, n + 1))

    def matvec(v):
        return a @ v if float(yaad.sum(v * v)) < 1e-3 else c * (a @ v)

    op = yaad.sparse.linalg.LinearOperator((n, n), matvec)
    with pytest.raises(TypeError, match=r"cg: the operator uses a tensor that requires grad"):
        yaad.sparse.linalg.cg(op, np.ones(n))


@pytest.mark.parametrize("method", ["BFGS", "Nelder-Mead", "trust-ncg"])
def test_minimize_refuses_a_tensor_used_after_the_first_call(method):
    """minimize has no derivative for such a tensor (its result is SciPy's): refused at the
    first call that uses it, as at the first call."""
    c = yaad.tensor(0.5, requires_grad=True)

    def loss(x):
        return yaad.sum((x - 1) ** 2) * (1.0 if x.detach().numpy()[0] < 0.5 else c)

    with pytest.raises(TypeError, match=r"optimize.minimize: fun uses a tensor that requires "
                                        r"grad from outside \(shape \(\), float64\)"):
        yaad.optimize.minimize(loss, np.zeros(2), method=method)
    # without a gradient being recorded, nothing is refused: the minimum of either branch
    with yaad.no_grad():
        res = yaad.optimize.minimize(loss, np.zeros(2), method=method)
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-4)
    assert c.grad is None
