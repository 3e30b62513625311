"""yaad.func.fixed_point and yaad.func.root: gradients by the implicit function theorem,
checked against the gradient of the unrolled iteration (yaad through every step, and
PyTorch on the same unrolled loop), central finite differences and closed forms; real and
complex, closures, tuples, composition with the transforms, second order, errors."""

import contextlib
import warnings

import numpy as np
import pytest
import torch

import yaad
from yaad import func
from yaad.implicit import ConvergenceError

RNG = np.random.default_rng(7)
N = 6
W0 = 0.3 * RNG.standard_normal((N, N)) / np.sqrt(N)
B0 = RNG.standard_normal(N)
C0 = RNG.standard_normal(N)
WC = 0.3 * (RNG.standard_normal((N, N)) + 1j * RNG.standard_normal((N, N))) / np.sqrt(2 * N)
BC = RNG.standard_normal(N) + 1j * RNG.standard_normal(N)


def step(x, w, b):
    """A contraction: x -> tanh(w x + b)."""
    return yaad.tanh(w @ x + b)


def loss_of(x):
    return yaad.sum(yaad.sin(x) * C0)


def implicit_loss(w, b):
    return loss_of(func.fixed_point(step, np.zeros(N), w, b, tol=1e-13))


def unrolled_loss(w, b, n=200):
    x = np.zeros(N)
    for _ in range(n):
        x = step(x, w, b)
    return loss_of(x)


def central(f, x, eps=1e-6):
    """Central differences of a real scalar f at a real or complex array x (the gradient
    in yaad's convention, d/dRe + 1j d/dIm)."""
    x = np.asarray(x)
    out = np.zeros(x.shape, dtype=x.dtype)
    for idx in np.ndindex(x.shape):
        for unit in ((1, 1j) if x.dtype.kind == "c" else (1,)):
            e = np.zeros(x.shape, dtype=x.dtype)
            e[idx] = eps * unit
            out[idx] += unit * (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return out


def test_scalar_fixed_point_matches_the_closed_form():
    a = yaad.tensor(0.5, requires_grad=True)
    x = func.fixed_point(lambda x, a: yaad.cos(a * x), 1.0, a)
    x.backward()
    xs = float(x)
    assert abs(xs - np.cos(0.5 * xs)) < 1e-10
    s = np.sin(0.5 * xs)
    np.testing.assert_allclose(a.grad, -s * xs / (1 + 0.5 * s), rtol=1e-9)


def test_vector_gradient_matches_unrolled_iteration_and_finite_differences():
    gw, gb = func.grad(implicit_loss, argnums=(0, 1))(W0, B0)
    uw, ub = func.grad(unrolled_loss, argnums=(0, 1))(W0, B0)
    np.testing.assert_allclose(gw, uw, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb, ub, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb, central(lambda b: implicit_loss(W0, b), B0), rtol=1e-6)


def test_gradient_matches_pytorch_on_the_unrolled_loop():
    w = torch.tensor(W0, requires_grad=True)
    b = torch.tensor(B0, requires_grad=True)
    x = torch.zeros(N, dtype=torch.float64)
    for _ in range(200):
        x = torch.tanh(w @ x + b)
    (torch.sin(x) * torch.tensor(C0)).sum().backward()
    gw, gb = func.grad(implicit_loss, argnums=(0, 1))(W0, B0)
    np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb, b.grad.numpy(), rtol=1e-9, atol=1e-12)


def complex_step(x, w, b):
    """A non-holomorphic contraction of complex vectors (conj and abs)."""
    return (w @ yaad.conj(x)) / (1 + 0.1 * yaad.abs(x) ** 2) + b


def complex_loss(x):
    return yaad.sum(yaad.abs(x) ** 2 * C0) + yaad.sum(yaad.real(x) * B0)


def test_complex_non_holomorphic_map():
    def implicit(w, b):
        return complex_loss(func.fixed_point(complex_step, np.zeros(N, complex), w, b,
                                             tol=1e-13))

    def unrolled(w, b):
        x = np.zeros(N, complex)
        for _ in range(300):
            x = complex_step(x, w, b)
        return complex_loss(x)

    gw, gb = func.grad(implicit, argnums=(0, 1))(WC, BC)
    uw, ub = func.grad(unrolled, argnums=(0, 1))(WC, BC)
    assert gw.dtype == np.complex128
    np.testing.assert_allclose(gw, uw, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb, ub, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gb, central(lambda b: implicit(WC, b), BC), rtol=1e-6)


def test_real_parameter_of_a_complex_fixed_point_gets_a_real_gradient():
    s = yaad.tensor(0.7, requires_grad=True)
    x = func.fixed_point(lambda x, s: complex_step(x, s * WC, BC), np.zeros(N, complex), s)
    complex_loss(x).backward()
    assert s.grad.dtype == np.float64
    f = lambda v: float(complex_loss(func.fixed_point(  # noqa: E731
        lambda x: complex_step(x, v * WC, BC), np.zeros(N, complex), tol=1e-13)))
    np.testing.assert_allclose(s.grad, (f(0.7 + 1e-6) - f(0.7 - 1e-6)) / 2e-6, rtol=1e-6)


def test_closure_over_parameters_and_non_leaf_tensors():
    v = yaad.tensor(W0 / 2, requires_grad=True)
    b = yaad.tensor(B0, requires_grad=True)
    w = v * 2  # a non-leaf tensor captured by the closure
    x = func.fixed_point(lambda x: step(x, w, b), np.zeros(N), tol=1e-13)
    loss_of(x).backward()
    uw, ub = func.grad(unrolled_loss, argnums=(0, 1))(W0, B0)
    np.testing.assert_allclose(v.grad, 2 * uw, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.grad, ub, rtol=1e-9, atol=1e-12)


def test_mixed_explicit_and_captured_parameters_and_their_other_uses():
    w = yaad.tensor(W0, requires_grad=True)
    b = yaad.tensor(B0, requires_grad=True)
    x = func.fixed_point(lambda x, w: step(x, w, b), np.zeros(N), w, tol=1e-13)
    (loss_of(x) + yaad.sum(w * w) + yaad.sum(b)).backward()
    uw, ub = func.grad(unrolled_loss, argnums=(0, 1))(W0, B0)
    np.testing.assert_allclose(w.grad, uw + 2 * W0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.grad, ub + 1, rtol=1e-9, atol=1e-12)


def test_tuple_state():
    def f(xy, w, b):
        x, y = xy
        return yaad.tanh(w @ y + b), 0.5 * yaad.sin(x)

    def implicit(w, b):
        x, y = func.fixed_point(f, (np.zeros(N), np.zeros(N)), w, b, tol=1e-13)
        return loss_of(x) + yaad.sum(y * y)

    def unrolled(w, b):
        xy = (np.zeros(N), np.zeros(N))
        for _ in range(300):
            xy = f(xy, w, b)
        return loss_of(xy[0]) + yaad.sum(xy[1] * xy[1])

    got = func.grad(implicit, argnums=(0, 1))(W0, B0)
    want = func.grad(unrolled, argnums=(0, 1))(W0, B0)
    for g, u in zip(got, want):
        np.testing.assert_allclose(g, u, rtol=1e-9, atol=1e-12)
    xy = func.fixed_point(f, [np.zeros(N), np.zeros(N)], W0, B0)
    assert isinstance(xy, list) and all(isinstance(a, np.ndarray) for a in xy)


def test_second_derivatives_match_finite_differences_of_the_gradient():
    b = yaad.tensor(B0, requires_grad=True)
    loss = loss_of(func.fixed_point(step, np.zeros(N), W0, b, tol=1e-13))
    (g,) = yaad.autograd.grad(loss, b, create_graph=True)
    u = RNG.standard_normal(N)
    (hu,) = yaad.autograd.grad(yaad.sum(g * u), b)
    grad_at = lambda bb: func.grad(lambda b: implicit_loss(W0, b))(bb)  # noqa: E731
    eps = 1e-5
    fd = (grad_at(B0 + eps * u) - grad_at(B0 - eps * u)) / (2 * eps)
    np.testing.assert_allclose(hu, fd, rtol=1e-6, atol=1e-9)
    # and against the Hessian of the unrolled loop
    h_unrolled = func.jacrev(func.grad(lambda b: unrolled_loss(W0, b)))(B0)
    np.testing.assert_allclose(hu, h_unrolled @ u, rtol=1e-8, atol=1e-11)


def test_second_derivative_of_a_scalar_fixed_point():
    def d(a):  # dx*/da in closed form, x* = cos(a x*)
        x = 1.0
        for _ in range(2000):
            x = np.cos(a * x)
        s = np.sin(a * x)
        return -s * x / (1 + a * s)

    assert func.grad(func.grad(lambda a: func.fixed_point(
        lambda x, a: yaad.cos(a * x), 1.0, a, tol=1e-14)))(0.5) == pytest.approx(
        (d(0.5 + 1e-5) - d(0.5 - 1e-5)) / 2e-5, rel=1e-7)


def test_root_matches_closed_form_and_unrolled_newton():
    t = yaad.tensor(2.0, requires_grad=True)
    x = func.root(lambda x, t: x ** 3 + t * x - 1, 0.5, t)
    x.backward()
    xs = float(x)
    assert abs(xs ** 3 + 2 * xs - 1) < 1e-12
    np.testing.assert_allclose(t.grad, -xs / (3 * xs ** 2 + 2), rtol=1e-10)


def test_complex_root():
    # z^2 = c: the root near 1+1j, dz/dc = 1 / (2 z) (holomorphic)
    c = yaad.tensor(0.3 + 2.1j, requires_grad=True)
    z = func.root(lambda z, c: z * z - c, np.array(1.0 + 1.0j), c)
    (yaad.real(z) + 3 * yaad.imag(z)).backward()
    zs = complex(z)
    np.testing.assert_allclose(zs, np.sqrt(0.3 + 2.1j), rtol=1e-10)
    # L = Re(z) + 3 Im(z) = Re(conj(a) z) with a = 1 + 3j; in yaad's convention its
    # gradient for c is a * conj(dz/dc)
    np.testing.assert_allclose(c.grad, (1 + 3j) * np.conj(1 / (2 * zs)), rtol=1e-9)
    g = central(lambda cc: float(func.root(lambda z: z * z - cc, np.array(1.0 + 1.0j)).real
                                + 3 * func.root(lambda z: z * z - cc,
                                                np.array(1.0 + 1.0j)).imag),
                np.array(0.3 + 2.1j))
    np.testing.assert_allclose(c.grad, g, rtol=1e-6)


def test_arrays_in_arrays_out_and_no_grad():
    x = func.fixed_point(np.cos, 1.0)
    assert isinstance(x, np.ndarray) and abs(x - np.cos(x)) < 1e-9
    a = yaad.tensor(0.5, requires_grad=True)
    with yaad.no_grad():
        y = func.fixed_point(lambda x, a: yaad.cos(a * x), 1.0, a)
    assert isinstance(y, yaad.Tensor) and not y.requires_grad


def test_no_convergence_names_the_solver_the_residual_and_the_iterations():
    # the logistic map at r = 3.9 is chaotic: its fixed point 1 - 1/r repels the plain
    # iteration, which never settles; Anderson's method finds it
    with pytest.raises(ConvergenceError, match=r"fixed_point: no convergence after 30 "
                                               r"iterations: the relative residual is"):
        func.fixed_point(lambda x: 3.9 * x * (1 - x), 0.3, maxiter=30, method="iterate")
    x = func.fixed_point(lambda x: 3.9 * x * (1 - x), 0.3, maxiter=30)
    np.testing.assert_allclose(x, 1 - 1 / 3.9, rtol=1e-10)
    with pytest.raises(ConvergenceError, match=r"fixed_point: no convergence after 3 "):
        func.fixed_point(lambda x: 3.9 * x * (1 - x), 0.3, maxiter=3)
    with pytest.raises(ConvergenceError, match=r"root \(scipy.optimize.root"):
        func.root(lambda x: x * x + 1, 0.5)


def test_singular_adjoint_raises():
    # every x is a fixed point of the identity-like map along the first axis: the
    # gradient does not exist, and the adjoint solve says so
    a = yaad.tensor(1.0, requires_grad=True)
    x = func.fixed_point(lambda x, a: yaad.stack([x[0], 0.5 * x[1] + a]), np.zeros(2), a)
    with pytest.raises(ConvergenceError, match="adjoint solve"):
        yaad.sum(x).backward()


def test_bad_functions():
    with pytest.raises(ValueError, match="fixed_point: the function returned shape"):
        func.fixed_point(lambda x: yaad.stack([x, x]), 1.0)
    with pytest.raises(TypeError, match="complex value for a real x"):
        func.fixed_point(lambda x: x * 0.5j, 1.0)
    with pytest.raises(TypeError, match="same structure"):
        func.fixed_point(lambda x: x[0], (1.0, 2.0))


def test_memory_does_not_grow_with_the_iterations():
    import tracemalloc

    n = 2000
    b = yaad.tensor(RNG.standard_normal(n), requires_grad=True)

    def peak(run):
        tracemalloc.start()
        run()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    def implicit(rate):  # rate 0.9: ~250 iterations; 0.98: ~1300
        def f(x, b):
            return rate * yaad.tanh(x) + (1 - rate) * b

        return lambda: yaad.sum(yaad.sin(func.fixed_point(f, np.zeros(n), b, tol=1e-12,
                                                          maxiter=5000))).backward()

    def unrolled():
        x = np.zeros(n)
        for _ in range(250):
            x = 0.9 * yaad.tanh(x) + 0.1 * b
        yaad.sum(yaad.sin(x)).backward()

    short, long = peak(implicit(0.9)), peak(implicit(0.98))
    assert long < 1.5 * short
    assert short * 3 < peak(unrolled)


def test_mean_field_example():
    from tests.support.examples import load

    r = load("mean_field").main(["--L", "8"])
    assert r["relative_difference"] < 1e-8
    assert r["iterations"] > 100
    assert r["memory"][0] < r["memory"][1]
    # the susceptibility is positive everywhere (ferromagnetic couplings)
    assert np.all(r["grad"][0] > 0)



# ---- forward mode --------------------------------------------------------------------


def test_jvp_of_fixed_point_and_root_matches_finite_differences():
    u = RNG.standard_normal(N)

    def explicit(b):
        return func.fixed_point(step, np.zeros(N), W0, b, tol=1e-13)

    def closure(b):
        return func.fixed_point(lambda x: step(x, W0, b), np.zeros(N), tol=1e-13)

    def as_root(b):
        return func.root(lambda x, b: step(x, W0, b) - x, np.zeros(N), b, tol=1e-13)

    x = lambda b: np.asarray(explicit(b))  # noqa: E731
    fd = (x(B0 + 1e-6 * u) - x(B0 - 1e-6 * u)) / 2e-6
    for f in (explicit, closure, as_root):
        value, tangent = func.jvp(f, (B0,), (u,))
        np.testing.assert_allclose(value, x(B0), rtol=1e-12)
        np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-9)
        assert tangent.dtype == np.float64 and tangent.shape == (N,)


def test_jvp_of_a_complex_non_holomorphic_fixed_point():
    u = RNG.standard_normal(N) + 1j * RNG.standard_normal(N)

    def f(b):
        return func.fixed_point(complex_step, np.zeros(N, complex), WC, b, tol=1e-13)

    _, tangent = func.jvp(f, (BC,), (u,))
    fd = (np.asarray(f(BC + 1e-6 * u)) - np.asarray(f(BC - 1e-6 * u))) / 2e-6
    assert tangent.dtype == np.complex128
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-9)


@contextlib.contextmanager
def per_example_loop():
    """jacfwd, jacrev and hessian batch through vmap, where a solver's rules run once per
    example (with a BatchingWarning, once per process)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", func.BatchingWarning)
        yield


@pytest.mark.parametrize("captured", [False, True])
def test_forward_over_reverse_and_reverse_over_forward(captured):
    # the Hessian of a loss of the fixed point: jacfwd(jacrev) (hessian), forward over
    # reverse (hvp), reverse over reverse and reverse over forward agree with each other
    # and with the Hessian of the unrolled loop
    if captured:
        def loss(b):
            return loss_of(func.fixed_point(lambda x: step(x, W0, b), np.zeros(N),
                                            tol=1e-13))
    else:
        def loss(b):
            return implicit_loss(W0, b)

    want = func.jacrev(func.grad(lambda b: unrolled_loss(W0, b)))(B0)
    u = RNG.standard_normal(N)
    with per_example_loop():
        np.testing.assert_allclose(func.hessian(loss)(B0), want, rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(func.hvp(loss, (B0,), (u,))[1], want @ u, rtol=1e-8,
                               atol=1e-11)
    np.testing.assert_allclose(func.grad(lambda b: func.jvp(loss, (b,), (u,))[1])(B0),
                               want @ u, rtol=1e-8, atol=1e-11)
    with per_example_loop():
        jf = func.jacfwd(lambda b: func.fixed_point(step, np.zeros(N), W0, b,
                                                    tol=1e-13))(B0)
        jr = func.jacrev(lambda b: func.fixed_point(step, np.zeros(N), W0, b,
                                                    tol=1e-13))(B0)
    np.testing.assert_allclose(jf, jr, rtol=1e-9, atol=1e-12)


def test_jvp_through_the_second_derivative_of_root():
    # d^3 x*/dt^3 of x^3 + t x - 1 = 0 by jvp of grad of grad, against finite
    # differences of the closed-form second derivative
    def x_of(t):
        return func.root(lambda x, t: x ** 3 + t * x - 1, 0.5, t, tol=1e-14)

    def d2(t):  # x'' from differentiating 3x^2 x' + x + t x' = 0 twice
        x = float(x_of(t))
        d1 = -x / (3 * x * x + t)
        return -(6 * x * d1 * d1 + 2 * d1) / (3 * x * x + t)

    _, third = func.jvp(func.grad(func.grad(x_of)), (np.array(2.0),), (np.array(1.0),))
    np.testing.assert_allclose(func.grad(func.grad(x_of))(2.0), d2(2.0), rtol=1e-9)
    np.testing.assert_allclose(third, (d2(2.0 + 1e-5) - d2(2.0 - 1e-5)) / 2e-5, rtol=1e-6)


# ---- Anderson acceleration near a critical point: the BCS gap equation -----------------

XI = (np.arange(2000) + 0.5) / 2000 * 2.0 - 1.0  # energies in [-omega_D, omega_D]
DXI = 2.0 / 2000


def gap_map(d, lam, T):
    """The BCS gap equation as a fixed point, Delta = lam Delta sum tanh(E/2T) / 2E."""
    e = yaad.sqrt(XI ** 2 + d ** 2)
    return lam * d * yaad.sum(DXI * yaad.tanh(e / (2 * T)) / (2 * e))


def gap_condition(d, lam, T):
    """The gap equation divided by Delta (no trivial root): zero at the gap."""
    e = np.sqrt(XI ** 2 + d ** 2)
    return lam * np.sum(DXI * np.tanh(e / (2 * T)) / (2 * e)) - 1


def bracketed_gap(lam, T):
    """The gap by Brent's method on a bracket (0 above the critical temperature)."""
    from scipy.optimize import brentq

    if gap_condition(0.0, lam, T) <= 0:
        return 0.0
    return brentq(gap_condition, 1e-14, 1.0, args=(lam, T), xtol=1e-18, rtol=1e-15)


def richardson(f, x, h):
    """Central differences extrapolated (error O(h^4)): the gap is sqrt-like near T_c."""
    d = lambda h: (f(x + h) - f(x - h)) / (2 * h)  # noqa: E731
    return (4 * d(h / 2) - d(h)) / 3


def test_bcs_gap_from_low_temperature_to_above_the_critical_one():
    from scipy.optimize import brentq

    lam = 0.3
    tc = brentq(lambda T: gap_condition(0.0, lam, T), 1e-3, 1.0, xtol=1e-17, rtol=1e-15)
    for ratio in (0.2, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0001, 1.01, 1.5):
        T = ratio * tc
        lt = yaad.tensor(lam, requires_grad=True)
        tt = yaad.tensor(T, requires_grad=True)
        d = func.fixed_point(gap_map, 0.1, lt, tt)  # the defaults
        d.backward()
        want = bracketed_gap(lam, T)
        if ratio > 1:
            assert abs(float(d)) < 1e-15 and abs(lt.grad) < 1e-12 and abs(tt.grad) < 1e-12
            continue
        np.testing.assert_allclose(float(d), want, rtol=1e-10)
        h = 1e-3 * abs(1 - ratio)  # well inside the distance to the critical point
        np.testing.assert_allclose(
            lt.grad, richardson(lambda v, T=T: bracketed_gap(v, T), lam, h * lam), rtol=1e-6)
        np.testing.assert_allclose(
            tt.grad, richardson(lambda v: bracketed_gap(lam, v), T, h * T), rtol=1e-6)
        assert lt.grad.dtype == np.float64


def test_plain_iteration_stalls_near_the_critical_point_and_the_documented_switches():
    lam, T = 0.3, 0.9999 * 0.04044952687628672
    with pytest.raises(ConvergenceError, match="method='root'"):
        func.fixed_point(gap_map, 0.1, lam, T, method="iterate", maxiter=1000)
    want = bracketed_gap(lam, T)
    np.testing.assert_allclose(func.fixed_point(gap_map, 0.1, lam, T, method="root"), want,
                               rtol=1e-9)
    np.testing.assert_allclose(func.root(lambda d: gap_map(d, lam, T) - d, 0.1), want,
                               rtol=1e-9)
    with pytest.raises(ValueError, match="method='newton'"):
        func.fixed_point(gap_map, 0.1, lam, T, method="newton")
