"""yaad.integrate: odeint and solve_ivp with adjoint gradients, against closed forms (linear
ODEs through yaad.linalg.expm), a differentiated fine-step RK4 loop, PyTorch on that loop,
and finite differences; real and complex states; constant memory; errors."""

import tracemalloc

import numpy as np
import pytest
import torch

import yaad
from yaad import func, integrate
from yaad.implicit import ConvergenceError

RNG = np.random.default_rng(5)
N = 4
W0 = 0.5 * RNG.standard_normal((N, N))
Y0 = RNG.standard_normal(N)
B0 = RNG.standard_normal(N)
TS = np.linspace(0.0, 2.0, 5)
WEIGHTS = np.arange(1.0, 6.0)[:, None]


def f(y, t, w, b):
    return yaad.tanh(w @ y) + b * yaad.sin(t)


def adjoint_loss(w, y0, b):
    ys = integrate.odeint(f, y0, TS, w, b, rtol=1e-11, atol=1e-12)
    return yaad.sum(ys ** 2 * WEIGHTS)


def rk4_loss(w, y0, b, substeps=100, lib=yaad):
    """The same loss through a differentiated fine-step RK4 loop."""
    y, t, out = y0, 0.0, [y0]
    h = (TS[1] - TS[0]) / substeps
    fn = (lambda y, t: lib.tanh(w @ y) + b * np.sin(t))
    for _ in range(len(TS) - 1):
        for _ in range(substeps):
            k1 = fn(y, t)
            k2 = fn(y + h / 2 * k1, t + h / 2)
            k3 = fn(y + h / 2 * k2, t + h / 2)
            k4 = fn(y + h * k3, t + h)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            t += h
        out.append(y)
    return lib.sum(lib.stack(out) ** 2 * (WEIGHTS if lib is yaad else torch.tensor(WEIGHTS)))


def test_odeint_gradients_match_a_differentiated_rk4_loop_and_pytorch():
    got = func.grad(adjoint_loss, argnums=(0, 1, 2))(W0, Y0, B0)
    want = func.grad(rk4_loss, argnums=(0, 1, 2))(W0, Y0, B0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-9)
    tw, ty, tb = (torch.tensor(a, requires_grad=True) for a in (W0, Y0, B0))
    rk4_loss(tw, ty, tb, lib=torch).backward()
    for g, t in zip(got, (tw, ty, tb)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-8, atol=1e-9)


def test_linear_ode_matches_the_matrix_exponential():
    def loss(w, y0):
        ys = integrate.odeint(lambda y, t: w @ y, y0, [0.0, 0.4, 1.3], rtol=1e-12, atol=1e-13)
        return yaad.sum(ys[1] * ys[2])

    def exact(w, y0):
        return yaad.sum((yaad.linalg.expm(0.4 * w) @ y0) * (yaad.linalg.expm(1.3 * w) @ y0))

    np.testing.assert_allclose(float(loss(W0, Y0)), float(exact(W0, Y0)), rtol=1e-11)
    for g, w in zip(func.grad(loss, argnums=(0, 1))(W0, Y0),
                    func.grad(exact, argnums=(0, 1))(W0, Y0)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)


def test_complex_schrodinger_evolution_and_closure():
    h = RNG.standard_normal((N, N)) + 1j * RNG.standard_normal((N, N))
    h = h + h.conj().T
    psi0 = RNG.standard_normal(N) + 1j * RNG.standard_normal(N)

    def loss(s, psi0):
        ys = integrate.odeint(lambda y, t: -1j * (s * h) @ y, psi0, [0.0, 0.7], rtol=1e-12,
                              atol=1e-13)
        return yaad.sum(abs(ys[-1][:2]) ** 2)

    def exact(s, psi0):
        return yaad.sum(abs((yaad.linalg.expm(-0.7j * s * h) @ psi0)[:2]) ** 2)

    got = func.grad(loss, argnums=(0, 1))(1.3, psi0)
    want = func.grad(exact, argnums=(0, 1))(1.3, psi0)
    assert got[1].dtype == np.complex128
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
    # a closure over a tensor that requires grad
    s = yaad.tensor(1.3, requires_grad=True)
    ys = integrate.odeint(lambda y, t: -1j * (s * h) @ y, psi0, [0.0, 0.7], rtol=1e-12,
                          atol=1e-13)
    yaad.sum(abs(ys[-1][:2]) ** 2).backward()
    np.testing.assert_allclose(s.grad, want[0], rtol=1e-9)


def test_matrix_state_and_finite_differences():
    a = 0.3 * RNG.standard_normal((2, 2))

    def loss(y0):
        ys = integrate.odeint(lambda y, t: a @ y - y @ a + 0.1 * y * y, y0, [0.0, 1.0],
                              rtol=1e-12, atol=1e-13)
        return yaad.sum(ys[-1] ** 3)

    y0 = RNG.standard_normal((2, 2))
    g = func.grad(loss)(y0)
    eps = 1e-6
    fd = np.zeros_like(y0)
    for idx in np.ndindex(y0.shape):
        e = np.zeros_like(y0)
        e[idx] = eps
        fd[idx] = (float(loss(y0 + e)) - float(loss(y0 - e))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_solve_ivp_interface():
    r = integrate.solve_ivp(lambda t, y, w: w @ y, (0.0, 1.0), Y0, t_eval=[0.5, 1.0],
                            args=(W0,))
    assert r.success and r.y.shape == (N, 2)
    np.testing.assert_allclose(r.t, [0.5, 1.0])
    np.testing.assert_allclose(r.y[:, 1], yaad.linalg.expm(W0) @ Y0, rtol=1e-8)
    w = yaad.tensor(W0, requires_grad=True)
    r = integrate.solve_ivp(lambda t, y, w: w @ y, (0.0, 1.0), Y0, args=(w,), rtol=1e-12,
                            atol=1e-13)
    yaad.sum(r.y[:, -1]).backward()
    want = func.grad(lambda w: yaad.sum(yaad.linalg.expm(w) @ Y0))(W0)
    np.testing.assert_allclose(w.grad, want, rtol=1e-9)


def test_memory_is_constant_in_the_number_of_steps():
    n = 20000
    y0 = RNG.standard_normal(n)
    k = yaad.tensor(0.3, requires_grad=True)

    def peak(t1):
        tracemalloc.start()
        ys = integrate.odeint(lambda y, t: -k * y + 0.1 * yaad.sin(y + t), y0, [0.0, t1],
                              rtol=1e-6, atol=1e-8, method="RK45")
        yaad.sum(ys[-1]).backward()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    # 10x the time: many more steps, the same memory
    assert peak(20.0) < 1.5 * peak(2.0)


def test_errors():
    with pytest.raises(ValueError, match="strictly monotonic"):
        integrate.odeint(lambda y, t: y, Y0, [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="returned shape"):
        integrate.odeint(lambda y, t: y[:2], Y0, [0.0, 1.0])
    with pytest.raises(TypeError, match="complex values for a real y0"):
        integrate.odeint(lambda y, t: 1j * y, Y0, [0.0, 1.0])
    with pytest.raises(ConvergenceError, match=r"integrate.odeint \(forward"):
        integrate.odeint(lambda y, t: y * y, np.ones(1), [0.0, 2.0])  # blows up at t = 1
    y0 = yaad.tensor(Y0, requires_grad=True)
    ys = integrate.odeint(lambda y, t: -y, y0, [0.0, 1.0])
    with pytest.raises(NotImplementedError, match="second derivatives"):
        yaad.autograd.grad(yaad.sum(ys ** 2), y0, create_graph=True)
