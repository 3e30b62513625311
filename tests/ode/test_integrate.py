"""yaad.integrate: odeint and solve_ivp with discrete-adjoint gradients, against closed forms
(linear ODEs through yaad.linalg.expm, stiff and not), a differentiated fine-step RK4 loop,
PyTorch on that loop, diffrax and torchdiffeq, and finite differences; real and complex
states; the implicit method (Radau); the times' gradients; checkpoints and memory; second
order and forward mode; the backsolve adjoint; errors."""

import os
import tracemalloc

import numpy as np
import pytest
import torch

import yaad
from yaad import func, integrate
from yaad.implicit import ConvergenceError

RNG = np.random.default_rng(5)
LONG = bool(int(os.environ.get("YAAD_FUZZ_PROGRAMS", 0)))  # the long variants
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
    ys = integrate.odeint(lambda y, t: -y, y0, [0.0, 1.0], adjoint="backsolve")
    with pytest.raises(NotImplementedError, match="second derivatives.*adjoint='discrete'"):
        yaad.autograd.grad(yaad.sum(ys ** 2), y0, create_graph=True)
    with pytest.raises(NotImplementedError, match="forward mode.*adjoint='discrete'"):
        func.jvp(lambda y: integrate.odeint(lambda y, t: -y, y, [0.0, 1.0],
                                            adjoint="backsolve"), (Y0,), (Y0,))
    with pytest.raises(ValueError, match="unknown method 'BDF'.*backsolve"):
        integrate.odeint(lambda y, t: -y, Y0, [0.0, 1.0], method="BDF")
    with pytest.raises(ValueError, match="adjoint must be one of"):
        integrate.odeint(lambda y, t: -y, Y0, [0.0, 1.0], adjoint="continuous")
    with pytest.raises(TypeError, match="Radau' takes a real state"):
        integrate.odeint(lambda y, t: -1j * y, Y0 + 0j, [0.0, 1.0], method="Radau")
    with pytest.raises(ConvergenceError, match="max_steps=5 .*method='Radau'"):
        integrate.odeint(lambda y, t: -1e4 * (y - yaad.cos(t)), np.ones(1), [0.0, 1.0],
                         max_steps=5)


# ---- stiff systems: the discrete adjoint against the matrix exponential ----------------

SV = np.array([[2.1, 0.3, -0.4], [0.5, 1.7, 0.2], [-0.3, 0.6, 2.4]])
STIFF = SV @ np.diag([-1.0, -60.0, -0.5]) @ np.linalg.inv(SV)   # eigenvalues -1, -60, -0.5
SY0 = np.array([0.7, -1.2, 0.4])
STS = np.linspace(0.0, 5.0, 6)


def stiff_loss(a, method="dopri5", adjoint="discrete", **kw):
    ys = integrate.odeint(lambda y, t, a: a @ y, SY0, STS, a, method=method, adjoint=adjoint,
                          rtol=1e-10, atol=1e-12, **kw)
    return yaad.sum(ys ** 2)


def stiff_exact(a):
    return sum(yaad.sum((yaad.linalg.expm(t * a) @ SY0) ** 2) for t in STS)


@pytest.mark.parametrize("method", ["dopri5", "Radau"])
def test_stiff_linear_system_gradient_matches_the_matrix_exponential(method):
    want = func.grad(stiff_exact)(STIFF)
    got = func.grad(lambda a: stiff_loss(a, method))(STIFF)
    assert got.dtype == np.float64 and got.shape == (3, 3)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-9 * np.abs(want).max())
    # the continuous adjoint integrates exp(+60 t) backwards: its gradient is off by
    # orders of magnitude here (the reason it is not the default)
    bad = func.grad(lambda a: stiff_loss(a, adjoint="backsolve"))(STIFF)
    assert not np.abs(bad - want).max() < np.abs(want).max()


def test_radau_on_a_very_stiff_nonlinear_system_against_finite_differences():
    # y1 relaxes at rate 1e4 onto cos(t) + p y2^2; dopri5 would need ~1e4 steps
    def fvec(y, t, p):
        return yaad.stack([-1e4 * (y[0] - yaad.cos(t) - p[0] * y[1] ** 2),
                           -p[1] * y[1] + 0.1 * y[0]])

    def loss(p, y0):
        ys = integrate.odeint(fvec, y0, [0.0, 0.5, 2.0], p, method="Radau", rtol=1e-9,
                              atol=1e-11)
        return yaad.sum(ys[1:] ** 2 * np.array([1.0, 2.0]))

    p0, y0 = np.array([0.3, 0.8]), np.array([0.2, 1.0])
    gp, gy = func.grad(loss, argnums=(0, 1))(p0, y0)
    for x, g, other in ((p0, gp, lambda x: loss(x, y0)), (y0, gy, lambda x: loss(p0, x))):
        fd = np.array([(float(other(x + e)) - float(other(x - e))) / 2e-6
                       for e in 1e-6 * np.eye(2)])
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


def test_gradients_reach_the_times():
    # y(t_i) = expm((t_i - t_0) W) y0: d/dt_i = W y(t_i), d/dt_0 = -W sum of the others
    def loss(ts):
        ys = integrate.odeint(lambda y, t: W0 @ y, Y0, ts, rtol=1e-12, atol=1e-13)
        return yaad.sum(ys ** 2 * WEIGHTS[:3])

    def exact(ts):
        return sum(w * yaad.sum((yaad.linalg.expm((t - ts[0]) * W0) @ Y0) ** 2)
                   for w, t in zip(WEIGHTS[:3, 0], ts))

    ts = np.array([0.1, 0.5, 1.3])
    got = func.grad(loss)(ts)
    want = func.grad(exact)(ts)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    # time-dependent field, backwards in time, through solve_ivp's t_span and t_eval
    t0 = yaad.tensor(2.0, requires_grad=True)
    te = yaad.tensor([1.5, 0.2], requires_grad=True)
    r = integrate.solve_ivp(lambda t, y: -y * yaad.sin(t) + yaad.cos(3 * t), (t0, 0.0), Y0,
                            t_eval=te, rtol=1e-12, atol=1e-13)
    yaad.sum(r.y ** 3).backward()

    def plain(t0, te):
        r = integrate.solve_ivp(lambda t, y: -y * yaad.sin(t) + yaad.cos(3 * t), (t0, 0.0),
                                Y0, t_eval=te, rtol=1e-12, atol=1e-13)
        return float(yaad.sum(r.y ** 3))

    eps = 1e-6
    fd0 = (plain(2.0 + eps, [1.5, 0.2]) - plain(2.0 - eps, [1.5, 0.2])) / (2 * eps)
    fde = [(plain(2.0, [1.5 + eps, 0.2]) - plain(2.0, [1.5 - eps, 0.2])) / (2 * eps),
           (plain(2.0, [1.5, 0.2 + eps]) - plain(2.0, [1.5, 0.2 - eps])) / (2 * eps)]
    np.testing.assert_allclose(float(t0.grad), fd0, rtol=1e-6)
    np.testing.assert_allclose(te.grad, fde, rtol=1e-6)


@pytest.mark.parametrize("adjoint", ["discrete", "backsolve"])
def test_time_gradient_of_each_adjoint_is_the_vector_field(adjoint):
    ts = yaad.tensor([0.0, 0.7, 1.1], requires_grad=True)
    w = yaad.tensor(W0, requires_grad=True)
    ys = integrate.odeint(lambda y, t, w: yaad.tanh(w @ y) + yaad.sin(t), Y0, ts, w,
                          rtol=1e-12, atol=1e-13, adjoint=adjoint)
    g = RNG.standard_normal((3, N))
    ys.backward(g)
    fs = [np.tanh(W0 @ y) + np.sin(t) for y, t in zip(ys.data, ts.data)]
    want = [g[i] @ fs[i] for i in range(3)]
    # dL/dt0 = -<dL/dy0 - g0, f(y0, t0)>
    y0t = yaad.tensor(Y0, requires_grad=True)
    ys2 = integrate.odeint(lambda y, t, w: yaad.tanh(w @ y) + yaad.sin(t), y0t,
                           ts.data, W0, rtol=1e-12, atol=1e-13, adjoint=adjoint)
    ys2.backward(g)
    want[0] = -(y0t.grad - g[0]) @ fs[0]
    np.testing.assert_allclose(ts.grad, want, rtol=1e-7, atol=1e-9)


def test_solve_ivp_t_span_gets_its_gradient_when_t_eval_starts_there():
    # t_eval[0] == t_span[0]: the solution starts at t_span[0], so the later outputs move
    # with it (-f(t0, y0) through dy/dy0); the first output is read at t_eval[0]:
    # y0 + (t_eval[0] - t0) f(t0, y0), the flow's derivatives (-f for t0, +f for t_eval[0])
    k = 0.7
    t_span = yaad.tensor([0.0, 0.5], requires_grad=True)
    te = np.array([0.0, 0.25, 0.5])
    sol = integrate.solve_ivp(lambda s, y: -k * y, t_span, np.array([1.0]), t_eval=te,
                              rtol=1e-11, atol=1e-12)
    assert isinstance(sol.y, yaad.Tensor) and sol.y.requires_grad and sol.y.shape == (1, 3)
    w = np.array([1.0, 2.0, 3.0])
    yaad.sum(sol.y[0] * w).backward()
    # y(t) = exp(-k (t - t0)): dy(t)/dt0 = k y(t); t_span[1] moves no output
    np.testing.assert_allclose(t_span.grad, [np.sum(w * k * np.exp(-k * te)), 0.0],
                               rtol=1e-8)
    assert t_span.grad.dtype == np.float64

    # nonlinear (Lotka-Volterra), both t0 and t_eval differentiated, against one-sided
    # differences (t0 can only move down, t_eval[0] only up: the other way leaves t_span)
    def lv(t, y, p):
        return yaad.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[3] * y[0] * y[1] - p[2] * y[1]])

    P = np.array([1.5, 1.0, 3.0, 1.0])
    G = RNG.standard_normal((2, 4))

    def loss(t0, te, p, y0):
        r = integrate.solve_ivp(lv, (t0, 2.0), y0, t_eval=te, args=(p,), rtol=1e-12,
                                atol=1e-13)
        return yaad.sum(r.y * G)

    t0 = yaad.tensor(0.3, requires_grad=True)
    tev = yaad.tensor([0.3, 0.8, 1.4, 2.0], requires_grad=True)
    y0 = yaad.tensor([1.0, 0.5], requires_grad=True)
    p = yaad.tensor(P, requires_grad=True)
    loss(t0, tev, p, y0).backward()

    def plain(t0, te):
        return float(loss(t0, te, P, np.array([1.0, 0.5])))

    def one_sided(g, e):  # second order: (-3 g(0) + 4 g(e) - g(2e)) / 2e
        return (-3 * g(0.0) + 4 * g(e) - g(2 * e)) / (2 * e)

    base = np.array([0.3, 0.8, 1.4, 2.0])
    want_t0 = one_sided(lambda e: plain(0.3 + e, base), -1e-4)
    want_te = [one_sided(lambda e: plain(0.3, base + e * np.eye(4)[0]), 1e-4)]
    for i in (1, 2, 3):
        d = 1e-6 * np.eye(4)[i]
        want_te.append((plain(0.3, base + d) - plain(0.3, base - d)) / 2e-6)
    np.testing.assert_allclose(float(t0.grad), want_t0, rtol=1e-6)
    np.testing.assert_allclose(tev.grad, want_te, rtol=1e-6, atol=1e-9)
    # y0 and p: as in the same solve with the times not differentiated
    y0b = yaad.tensor([1.0, 0.5], requires_grad=True)
    pb = yaad.tensor(P, requires_grad=True)
    loss(0.3, tev.data, pb, y0b).backward()
    np.testing.assert_allclose(y0.grad, y0b.grad, rtol=1e-12)
    np.testing.assert_allclose(p.grad, pb.grad, rtol=1e-12)


# ---- checkpoints -------------------------------------------------------------------------

def test_checkpoints_give_the_same_gradient_with_bounded_memory():
    n = 4000
    y0 = RNG.standard_normal(n)
    k = yaad.tensor(0.3, requires_grad=True)

    def run(t1, checkpoints):
        k.grad = None
        tracemalloc.start()
        ys = integrate.odeint(lambda y, t: -k * y + 0.1 * yaad.sin(y + t), y0, [0.0, t1],
                              rtol=1e-6, atol=1e-8, checkpoints=checkpoints)
        yaad.sum(ys[-1]).backward()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top, float(k.grad)

    every, g_every = run(20.0, None)      # every step kept (they fit in 64 MiB)
    few, g_few = run(20.0, 4)             # 4 states a level, recomputed recursively
    assert g_few == g_every               # the same steps recomputed: the same numbers
    assert few < every / 2
    short, _ = run(2.0, 4)
    assert few < 2 * short                # 10x the steps, not 10x the memory


# ---- oracles: diffrax and torchdiffeq on Lotka-Volterra -----------------------------------

LV_P = np.array([1.5, 1.0, 3.0, 1.0])
LV_Y0 = np.array([1.0, 1.0])
LV_TS = np.linspace(0.0, 5.0, 40)


def lv(y, t, p):
    return yaad.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[3] * y[0] * y[1] - p[2] * y[1]])


def lv_grads():
    def loss(p, y0):
        return yaad.sum(integrate.odeint(lv, y0, LV_TS, p, rtol=1e-10, atol=1e-12) ** 2)

    return func.grad(loss, argnums=(0, 1))(LV_P, LV_Y0)


def test_lotka_volterra_gradients_match_diffrax():
    import diffrax
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def loss(p, y0):
        term = diffrax.ODETerm(lambda t, y, p: jnp.stack(
            [p[0] * y[0] - p[1] * y[0] * y[1], p[3] * y[0] * y[1] - p[2] * y[1]]))
        sol = diffrax.diffeqsolve(term, diffrax.Dopri5(), 0.0, 5.0, 0.01, y0, args=p,
                                  saveat=diffrax.SaveAt(ts=jnp.asarray(LV_TS)),
                                  stepsize_controller=diffrax.PIDController(rtol=1e-10,
                                                                            atol=1e-12),
                                  max_steps=4096, adjoint=diffrax.ForwardMode())
        return jnp.sum(sol.ys ** 2)

    want = jax.jit(jax.jacfwd(loss, argnums=(0, 1)))(jnp.asarray(LV_P), jnp.asarray(LV_Y0))
    for g, w in zip(lv_grads(), want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-7)


def test_lotka_volterra_gradients_match_torchdiffeq():
    import torchdiffeq

    p = torch.tensor(LV_P, requires_grad=True)
    y0 = torch.tensor(LV_Y0, requires_grad=True)

    def f(t, y):
        return torch.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[3] * y[0] * y[1] - p[2] * y[1]])

    ys = torchdiffeq.odeint(f, y0, torch.tensor(LV_TS), method="dopri5", rtol=1e-10,
                            atol=1e-12)
    (ys ** 2).sum().backward()
    for g, w in zip(lv_grads(), (p.grad, y0.grad)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-7)


# ---- second order and forward mode ---------------------------------------------------------

def so_loss(w, y0):
    ys = integrate.odeint(lambda y, t, w: w @ y, y0, [0.0, 0.4, 1.3], w, rtol=1e-12,
                          atol=1e-13)
    return yaad.sum(ys[1] * ys[2])


def so_exact(w, y0):
    return yaad.sum((yaad.linalg.expm(0.4 * w) @ y0) * (yaad.linalg.expm(1.3 * w) @ y0))


def test_hessian_vector_products_and_forward_mode_match_the_matrix_exponential():
    v = RNG.standard_normal((N, N))

    def hvp(loss):
        w = yaad.tensor(W0, requires_grad=True)
        (g,) = yaad.autograd.grad(loss(w, Y0), [w], create_graph=True)
        (hv,) = yaad.autograd.grad(yaad.sum(g * v), [w])
        return np.asarray(hv)

    np.testing.assert_allclose(hvp(so_loss), hvp(so_exact), rtol=1e-8, atol=1e-10)
    out, tan = func.jvp(lambda w: so_loss(w, Y0), (W0,), (v,))
    out_e, tan_e = func.jvp(lambda w: so_exact(w, Y0), (W0,), (v,))
    np.testing.assert_allclose([float(out), float(tan)], [float(out_e), float(tan_e)],
                               rtol=1e-10)
    np.testing.assert_allclose(func.hessian(lambda y: so_loss(W0, y))(Y0),
                               func.hessian(lambda y: so_exact(W0, y))(Y0), rtol=1e-8,
                               atol=1e-10)



# ---- Radau: second order and forward mode ----------------------------------------------------

RTS = np.array([0.0, 0.4, 1.0])
RW = np.array([0.0, 1.0, 2.0])[:, None]


def radau_loss(a, y0=SY0, api="odeint"):
    """A weighted sum of squares of the stiff system's states (eigenvalues -1, -60, -0.5)."""
    if api == "odeint":
        ys = integrate.odeint(lambda y, t, a: a @ y, y0, RTS, a, method="Radau", rtol=1e-7,
                              atol=1e-9)
    else:
        ys = integrate.solve_ivp(lambda t, y, a: a @ y, (0.0, 1.0), y0, t_eval=RTS,
                                 args=(a,), method="Radau", rtol=1e-7, atol=1e-9).y.T
    return yaad.sum(ys ** 2 * RW)


def radau_exact(a, y0=SY0):
    return sum(w * yaad.sum((yaad.linalg.expm(t * a) @ y0) ** 2) for w, t in zip(RW[:, 0], RTS))


@pytest.mark.parametrize("api", ["odeint", "solve_ivp"])
def test_radau_second_order_and_forward_mode_match_the_matrix_exponential(api):
    # Radau's stages are an implicit function of each step's inputs: the replay's
    # derivatives of every order are those of the computed solution (steps held fixed).
    # Against the exact solution expm(t A) y0 (the computed one is within rtol = 1e-7):
    # hvp (forward over reverse) in A, and for odeint also jvp, grad of grad (reverse
    # over reverse) and, under YAAD_FUZZ_PROGRAMS, the Hessian in y0 (jacfwd of jacrev).
    v = np.random.default_rng(2).standard_normal((3, 3))
    loss = lambda a, y0=SY0: radau_loss(a, y0, api)  # noqa: E731
    hv = func.hvp(loss, (STIFF,), (v,))[1]
    want = func.hvp(radau_exact, (STIFF,), (v,))[1]
    assert hv.shape == (3, 3) and hv.dtype == np.float64
    np.testing.assert_allclose(hv, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    if api != "odeint":
        return
    out, tan = func.jvp(loss, (STIFF,), (v,))
    out_e, tan_e = func.jvp(radau_exact, (STIFF,), (v,))
    np.testing.assert_allclose([float(out), float(tan)], [float(out_e), float(tan_e)],
                               rtol=1e-6)
    a = yaad.tensor(STIFF, requires_grad=True)
    (g,) = yaad.autograd.grad(loss(a), [a], create_graph=True)
    (gg,) = yaad.autograd.grad(yaad.sum(g * v), [a])
    np.testing.assert_allclose(gg, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    if LONG:  # (the Hessian in y0 by jacfwd of jacrev: three more replays, about 8 s)
        h = func.hessian(lambda y0: loss(STIFF, y0))(SY0)
        np.testing.assert_allclose(h, func.hessian(lambda y0: radau_exact(STIFF, y0))(SY0),
                                   rtol=1e-6)


def van_der_pol(y, t, p):
    return yaad.stack([y[1], p[0] * ((1 - y[0] ** 2) * y[1]) - y[0]])


def vdp_loss(p, y0):
    ys = integrate.odeint(van_der_pol, y0, [0.0, 0.25, 0.5], p, method="Radau", rtol=1e-7,
                          atol=1e-9)
    return yaad.sum(ys[1:] ** 2 * np.array([[1.0, 0.3], [0.5, 2.0]]))


def test_radau_second_order_on_van_der_pol_against_finite_differences_of_the_gradient():
    # Van der Pol at mu = 100 (stiff): the Hessian-vector product in (mu, y0) and the
    # tangent against central differences of the first derivative (the discrete adjoint,
    # itself checked against finite differences of the loss); under YAAD_FUZZ_PROGRAMS the
    # whole Hessian against diffrax
    p0, y0 = np.array([100.0]), np.array([2.0, -0.6])
    dp, dy = np.array([1.0]), np.array([0.3, -0.5])
    _, (hp, hy) = func.hvp(vdp_loss, (p0, y0), (dp, dy))
    grad = func.grad(vdp_loss, argnums=(0, 1))
    plus, minus = grad(p0 + 1e-5 * dp, y0 + 1e-5 * dy), grad(p0 - 1e-5 * dp, y0 - 1e-5 * dy)
    for got, a, b in ((hp, plus[0], minus[0]), (hy, plus[1], minus[1])):
        fd = (a - b) / 2e-5
        np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-9 * np.abs(fd).max())
    _, tan = func.jvp(vdp_loss, (p0, y0), (dp, dy))
    g = grad(p0, y0)
    np.testing.assert_allclose(tan, g[0] @ dp + g[1] @ dy, rtol=1e-10)
    if LONG:  # the whole Hessian against diffrax's Kvaerno5 (jacfwd of jacfwd; ~35 s of jit)
        import diffrax
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)

        def with_diffrax(x):
            term = diffrax.ODETerm(lambda t, y, p: jnp.stack(
                [y[1], p[0] * ((1 - y[0] ** 2) * y[1]) - y[0]]))
            sol = diffrax.diffeqsolve(
                term, diffrax.Kvaerno5(), 0.0, 0.5, 1e-4, x[1:], args=x[:1],
                saveat=diffrax.SaveAt(ts=jnp.array([0.25, 0.5])),
                stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
                max_steps=100_000, adjoint=diffrax.ForwardMode())
            return jnp.sum(sol.ys ** 2 * jnp.array([[1.0, 0.3], [0.5, 2.0]]))

        x0 = np.concatenate([p0, y0])
        want = np.asarray(jax.jit(jax.jacfwd(jax.jacfwd(with_diffrax)))(jnp.asarray(x0)))
        got = func.hessian(lambda x: vdp_loss(x[:1], x[1:]))(x0)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10 * np.abs(want).max())


def test_backsolve_adjoint_on_a_non_stiff_system():
    got = func.grad(lambda w, y0: adjoint_loss(w, y0, B0), argnums=(0, 1))(W0, Y0)

    def loss(w, y0):
        ys = integrate.odeint(f, y0, TS, w, B0, rtol=1e-11, atol=1e-12, adjoint="backsolve")
        return yaad.sum(ys ** 2 * WEIGHTS)

    for g, w in zip(func.grad(loss, argnums=(0, 1))(W0, Y0), got):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("path", ["jacobians", "per stage"])
def test_compiled_programs_give_eager_mode_gradients(path, monkeypatch):
    # a time-dependent field: the compiled step and VJP against compiled=False, times too;
    # the outputs' gradients are zero at some times and in some components (a stage's
    # cotangent is zero in some calls and not in others); the adjoint from the stages'
    # Jacobians (a small real state) and the one vector-Jacobian product per stage
    if path == "per stage":
        monkeypatch.setattr(yaad.ode.field, "LINEAR_MAX_STATE", 0)
    weights = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, -1.5, 0.0, 0.0],
                        [1.0, 1.0, 1.0, 1.0]])

    def grads(compiled, checkpoints=None):
        w = yaad.tensor(W0, requires_grad=True)
        b = yaad.tensor(B0, requires_grad=True)
        y0 = yaad.tensor(Y0, requires_grad=True)
        ts = yaad.tensor([0.0, 0.3, 0.35, 2.0], requires_grad=True)
        ys = integrate.odeint(f, y0, ts, w, b, compiled=compiled, rtol=1e-7,
                              checkpoints=checkpoints)
        yaad.sum(ys ** 2 * weights).backward()
        return [np.asarray(x.grad) for x in (w, b, y0, ts)]

    want = grads(False)
    for _ in range(4):  # eager (a func's first solve), recorded, verified, replayed
        for got, w in zip(grads(True), want):
            np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-13)
    # the steps recomputed from checkpoints (two per level): the same numbers
    for got, w in zip(grads(True, checkpoints=2), want):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-13)
    if path == "per stage":
        return
    # the two adjoints agree (to rounding)
    monkeypatch.setattr(yaad.ode.field, "LINEAR_MAX_STATE", 0)
    for got, w in zip(grads(True), want):
        np.testing.assert_allclose(got, w, rtol=1e-11, atol=1e-12)


# ---- the numba loops over native programs (yaad/ode/native.py) ---------------------------

def linear(y, t, w):
    return w @ y


def count_native_loops(monkeypatch):
    """Calls of the numba loops, counted in the dict returned."""
    from yaad.ode import native

    calls = {"dopri5_steps": 0, "dopri5_adjoint": 0, "execute_rows": 0}

    def counter(name):
        run = getattr(native, name)

        def counted(*args):
            calls[name] += 1
            return run(*args)
        return counted

    for name in calls:
        monkeypatch.setattr(native, name, counter(name))
    return calls


def test_native_loops_take_the_numpy_paths_steps_and_match_the_matrix_exponential(
        monkeypatch):
    # From a func's second solve on, its step and vector-Jacobian product are native
    # programs: the forward steps run in one numba loop (dopri5_steps), the adjoint in
    # another (dopri5_adjoint), Radau's Jacobians in a third (execute_rows). The same
    # steps as the NumPy path (bit for bit: the error estimate's sum is BLAS's in both),
    # gradients to rounding, both against the matrix exponential; across the loop's
    # chunks (128, 256, 512, ... steps) and with checkpoints (two a level, the steps
    # recomputed)
    from yaad.ode import solver

    calls = count_native_loops(monkeypatch)
    steps = {}
    run = solver.Trajectory.run

    def kept(self, y0):
        out = run(self, y0)
        steps["ts"] = self.ts
        return out

    monkeypatch.setattr(solver.Trajectory, "run", kept)
    ts = np.linspace(0.0, 6.0, 7)

    def solve(checkpoints=None, method="dopri5"):
        w = yaad.tensor(W0, requires_grad=True)
        y0 = yaad.tensor(Y0, requires_grad=True)
        ys = integrate.odeint(linear, y0, ts, w, rtol=1e-12, atol=1e-13,
                              checkpoints=checkpoints, method=method)
        yaad.sum(ys ** 2 * np.arange(1.0, 8.0)[:, None]).backward()
        return np.asarray(ys.detach()), steps["ts"], w.grad, y0.grad

    exact = func.grad(lambda w, y0: yaad.sum(yaad.stack(
        [yaad.linalg.expm(t * w) @ y0 for t in ts]) ** 2 * np.arange(1.0, 8.0)[:, None]),
        argnums=(0, 1))(W0, Y0)
    for _ in range(3):  # eager (the first solve), recorded, verified
        solve()
    for checkpoints, method in ((None, "dopri5"), (2, "dopri5"), (None, "Radau")):
        for name in calls:
            calls[name] = 0
        ys, grid, gw, gy = solve(checkpoints, method)
        if method == "Radau":
            assert calls["execute_rows"] >= len(grid)  # (a Jacobian each step)
        else:
            assert calls["dopri5_steps"] >= 3 and calls["dopri5_adjoint"] >= 1
            assert len(grid) > 128 + 256  # (3 chunks at least)
        np.testing.assert_allclose(gw, exact[0], rtol=1e-8)
        np.testing.assert_allclose(gy, exact[1], rtol=1e-8)
        with monkeypatch.context() as m:  # the NumPy path
            m.setattr(yaad.ode.field.Field, "native", lambda self, name, arrays: None)
            for name in calls:
                calls[name] = 0
            ys_np, grid_np, gw_np, gy_np = solve(checkpoints, method)
            assert not any(calls.values())
        assert np.array_equal(grid, grid_np)
        np.testing.assert_allclose(ys, ys_np, rtol=1e-15, atol=1e-15)
        np.testing.assert_allclose(gw, gw_np, rtol=1e-12)
        np.testing.assert_allclose(gy, gy_np, rtol=1e-12)


def test_native_adjoint_gives_an_autonomous_fields_time_gradients(monkeypatch):
    # The times' gradients of a field that does not read the time: its VJP program gives
    # the time's gradient as a computed (exact) zero, so that the VJP is one native
    # program (a constant zero tensor among its results kept it out of the numba adjoint:
    # W12 with the times' gradient took 4.5 ms, 1.1 ms now); against the matrix
    # exponential and the NumPy path
    calls = count_native_loops(monkeypatch)
    weights = np.arange(1.0, 6.0)[:, None]
    times = np.array([0.2, 0.7, 1.1, 2.0, 2.6])

    def solve():
        ts = yaad.tensor(times, requires_grad=True)
        w = yaad.tensor(W0, requires_grad=True)
        ys = integrate.odeint(linear, Y0, ts, w, rtol=1e-12, atol=1e-13)
        yaad.sum(ys ** 2 * weights).backward()
        return np.asarray(ts.grad), np.asarray(w.grad)

    exact = func.grad(lambda ts, w: yaad.sum(yaad.stack(
        [yaad.linalg.expm((t - ts[0]) * w) @ Y0 for t in ts]) ** 2 * weights),
        argnums=(0, 1))(times, W0)
    for _ in range(3):  # eager (the first solve), recorded, verified
        solve()
    calls["dopri5_adjoint"] = 0
    gt, gw = solve()
    assert calls["dopri5_adjoint"] >= 1
    np.testing.assert_allclose(gt, exact[0], rtol=1e-8, atol=1e-9 * np.abs(exact[0]).max())
    np.testing.assert_allclose(gw, exact[1], rtol=1e-8)
    with monkeypatch.context() as m:  # the NumPy path
        m.setattr(yaad.ode.field.Field, "native", lambda self, name, arrays: None)
        gt_np, gw_np = solve()
    np.testing.assert_allclose(gt, gt_np, rtol=1e-12, atol=1e-12 * np.abs(gt_np).max())
    np.testing.assert_allclose(gw, gw_np, rtol=1e-12)


def test_native_loop_raises_as_the_numpy_path(monkeypatch):
    # max_steps and a solution that blows up, from the numba loop
    def blowup(y, t):
        return y * y

    calls = count_native_loops(monkeypatch)
    for _ in range(3):  # eager (the first solve), recorded, verified and replayed
        with pytest.raises(ConvergenceError, match=r"forward.*step size became too small"):
            integrate.odeint(blowup, np.ones(1), [0.0, 2.0])  # blows up at t = 1
        with pytest.raises(ConvergenceError, match="max_steps=5 steps were taken"):
            integrate.odeint(linear, Y0, [0.0, 1.0], W0, max_steps=5, rtol=1e-12)
    assert calls["dopri5_steps"] >= 4  # (both functions: 2 solves each at least)
