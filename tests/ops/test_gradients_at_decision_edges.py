"""Gradients at the edges of data-dependent decisions: inputs that flip them
(ties, zeros of both signs, infinities, NaN, degenerate spectra), in float32 and complex64
too, against PyTorch, JAX, NumPy and finite differences. Each test names what it guards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import yaad
from yaad.testing import gradgradcheck

jax.config.update("jax_enable_x64", True)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _grad(f, *xs, create_graph=False):
    ts = [yaad.tensor(np.asarray(x), requires_grad=True) for x in xs]
    gs = yaad.autograd.grad(f(*ts), ts, create_graph=create_graph, allow_unused=True)
    return ts, gs


def _torch_grad(f, *xs):
    ts = [torch.tensor(np.asarray(x), requires_grad=True) for x in xs]
    return [g.numpy() for g in torch.autograd.grad(f(*ts), ts)]


# ---- second order of eigh/svd when no column gets a cotangent, in single precision -----------


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("values", ["eigvalsh", "svdvals"])
def test_spectral_second_order_without_active_columns_in_single_precision(values, dtype):
    # (the float64/complex128 case: test_linalg_spectral's
    # test_second_order_when_no_column_gets_a_cotangent) The maximum takes real(t)
    # everywhere, so the second pass sends the spectral rule zero cotangents (the resolvent
    # of no column); the cube gives the Hessian a part of its own. PyTorch's double
    # backward in the same precision is the oracle; the dtypes must stay single.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2)) + 5
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((2, 2))
    x = x.astype(dtype)
    w = np.arange(4.0).reshape(2, 2)
    yf, tf = getattr(yaad.linalg, values), getattr(torch.linalg, values)

    def loss(t, lib, fn):
        return (lib.sum(lib.maximum(-fn(t) - 100, t.real)) + lib.sum((t * t * t).real))

    t = yaad.tensor(x, requires_grad=True)
    (g,) = yaad.autograd.grad(loss(t, yaad, yf), [t], create_graph=True)
    (h,) = yaad.autograd.grad(yaad.sum(yaad.real(g) * w), [t])
    assert g.dtype == h.dtype == np.dtype(dtype)

    tt = torch.tensor(x, requires_grad=True)
    (tg,) = torch.autograd.grad(loss(tt, torch, tf), [tt], create_graph=True)
    (th,) = torch.autograd.grad(torch.sum(tg.real * torch.tensor(w, dtype=tg.real.dtype)), [tt])
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(h), th.numpy(), rtol=1e-5, atol=1e-4)
    # and the same numbers as double precision (where finite differences are the oracle)
    t64 = yaad.tensor(x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64),
                      requires_grad=True)
    assert gradgradcheck(lambda a: loss(a, yaad, yf), [t64])


# ---- yaad.gradient with equally spaced tensor coordinates -------------------------------------


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("fdtype", [np.complex128, np.complex64])
def test_gradient_of_complex_values_on_equally_spaced_coordinates_is_numpys(fdtype, edge_order):
    rng = np.random.default_rng(11)
    for xdtype in (np.float64, np.float32, np.complex128):
        for _ in range(20):
            x = np.cumsum(np.full(5, rng.uniform(0.5, 1.5))).astype(xdtype)
            f = (rng.standard_normal((5, 2)) + 1j * rng.standard_normal((5, 2))).astype(fdtype)
            out = yaad.gradient(yaad.tensor(f, requires_grad=True),
                                yaad.tensor(x, requires_grad=True), axis=0,
                                edge_order=edge_order)
            want = np.gradient(f, x, axis=0, edge_order=edge_order)
            assert out.dtype == want.dtype
            np.testing.assert_array_equal(out.detach().numpy(), want)
    # infinities and NaN take NumPy's values too (the shortcut's numbers plus a zero)
    f = np.array([1 + 1j, complex(np.inf, 0), 2, complex(np.nan, 1), 4], fdtype)
    x = np.cumsum(np.full(5, 0.7))
    out = yaad.gradient(yaad.tensor(f, requires_grad=True), yaad.tensor(x, requires_grad=True),
                        edge_order=edge_order)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out.detach().numpy(),
                                      np.gradient(f, x, edge_order=edge_order))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_through_equally_spaced_coordinates_against_jax_and_torch(edge_order):
    # d/df and d/dx of a real loss of the complex gradient: JAX's jnp.gradient (edge order
    # 1 only; yaad's gradient is the conjugate of JAX's for a complex input) and PyTorch's
    # torch.gradient (both edge orders, spacing given as coordinates), and second
    # derivatives against finite differences.
    rng = np.random.default_rng(2)
    x = np.cumsum(np.full(5, 0.7)) + 0.3
    f = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))
    w = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))

    def jloss(f, x):
        return jnp.sum(jnp.abs(jnp.gradient(f, x, axis=0) * w) ** 2)


    def loss(a, b, lib=yaad):
        if lib is torch:
            (d,) = torch.gradient(a, spacing=(b,), dim=0, edge_order=edge_order)
            return torch.sum(torch.abs(d * torch.tensor(w)) ** 2)
        return yaad.sum(yaad.abs(yaad.gradient(a, b, axis=0, edge_order=edge_order) * w) ** 2)

    _, (gf, gx) = _grad(loss, f, x)
    tf, tx = _torch_grad(lambda a, b: loss(a, b, torch), f, x)
    np.testing.assert_allclose(gf, tf, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, tx, rtol=1e-12, atol=1e-12)
    if edge_order == 1:
        jf, jx = jax.grad(jloss, argnums=(0, 1))(f, x)
        np.testing.assert_allclose(gf, np.conj(jf), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gx, jx, rtol=1e-12, atol=1e-12)
    a = yaad.tensor(f[:, :1], requires_grad=True)
    b = yaad.tensor(x, requires_grad=True)
    assert gradgradcheck(lambda a, b: yaad.sum(yaad.abs(
        yaad.gradient(a, b, axis=0, edge_order=edge_order)) ** 2), [a, b])


# ---- infinities in selecting and special functions --------------------------------------------


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_maximum_and_minimum_with_an_infinite_loser(dtype, name):
    # maximum(-inf, 0) is 0 and its derivative in the -inf is 0: the rule's "0 * x" made it
    # NaN (a masked score of -inf clamped from below, a ratio 1/0 capped from above).
    x = np.array([-np.inf, np.inf, 1.0, 2.0, -0.0], dtype)
    y = np.array([0.0, 3.0, np.inf, -np.inf, 0.0], dtype)
    _, (gx, gy) = _grad(lambda a, b: yaad.sum(getattr(yaad, name)(a, b) * 3.0), x, y)
    tx, ty = _torch_grad(lambda a, b: torch.sum(getattr(torch, name)(a, b) * 3.0), x, y)
    np.testing.assert_array_equal(gx, tx)
    np.testing.assert_array_equal(gy, ty)
    assert gx.dtype == gy.dtype == np.dtype(dtype)
    # second order through the rule: a finite, zero Hessian at the infinite loser
    _, (g,) = _grad(lambda a: yaad.sum(yaad.maximum(a * a, -np.inf)), np.array([2.0, -1.0]),
                    create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [4.0, -2.0])



@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "rint", "fix", "round", "sign",
                                  "imag", "angle"])
def test_zero_derivatives_stay_zero_at_infinite_gradients(name):
    """A piecewise-constant function's derivative is exactly 0: ``f(x) * x`` at x = +-inf
    sends an infinite gradient into it, and 0 * inf gave NaN. Against PyTorch (its
    functions return zeros there), first order and forward mode."""
    x = np.array([np.inf, 2.5, -np.inf, -0.5])
    t = yaad.tensor(x, requires_grad=True)
    with np.errstate(invalid="ignore"):
        (getattr(yaad, name)(t) * t).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    torch_f = {"fix": torch.trunc, "rint": torch.round, "imag": torch.zeros_like,
               "angle": torch.angle}.get(name, getattr(torch, name, None))
    (torch_f(tt) * tt).sum().backward()
    assert t.grad.dtype == np.float64
    np.testing.assert_array_equal(t.grad, tt.grad.numpy())
    _, tangent = yaad.func.jvp(getattr(yaad, name), (yaad.tensor(x),),
                               (yaad.tensor(np.full(4, np.inf)),))
    np.testing.assert_array_equal(tangent, np.zeros(4))

@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_at_infinity(name):
    # d/dx logaddexp(x, y) = exp(x - ans) was exp(inf - inf) = NaN at x = +inf; PyTorch
    # gives 1 there (y finite), and 1/2 each is the limit on the diagonal x = y = +inf.
    x = np.array([np.inf, 1.0, np.inf, -np.inf, 0.5])
    y = np.array([1.0, np.inf, np.inf, 2.0, -0.5])
    _, (gx, gy) = _grad(lambda a, b: yaad.sum(getattr(yaad, name)(a, b)), x, y)
    np.testing.assert_array_equal(gx[:4], [1.0, 0.0, 0.5, 0.0])
    np.testing.assert_array_equal(gy[:4], [0.0, 1.0, 0.5, 1.0])
    tx, ty = _torch_grad(lambda a, b: torch.sum(getattr(torch, name)(a, b)), x, y)
    np.testing.assert_allclose(gx[[0, 1, 3, 4]], tx[[0, 1, 3, 4]], rtol=1e-15)
    np.testing.assert_allclose(gy[[0, 1, 3, 4]], ty[[0, 1, 3, 4]], rtol=1e-15)


def test_i1e_gradient_at_large_arguments_and_near_zero():
    # SciPy's ive(2, x), which the rule read, is NaN beyond |x| ~ 1.07e9: the gradient of
    # i1e was NaN there. Beyond |x| = 1000 the rule is I1' = I0 - I1 / x, whose cancellation
    # costs about |x| eps (relative); near 0 it keeps (I0 + I2) / 2, for accurate second
    # derivatives. The oracle: mpmath (and PyTorch at 0 and infinity, where it is exact).
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40

    def exact(x, k):
        return float(mpmath.diff(lambda t: mpmath.besseli(1, t) * mpmath.exp(-abs(t)),
                                 mpmath.mpf(x), k))

    for x in [1e-12, -1e-8, 1e-3, 3.0, -3.0, 999.0, 1001.0, 1e6, -2e9]:
        t = yaad.tensor(x, requires_grad=True)
        (g,) = yaad.autograd.grad(yaad.i1e(t), [t], create_graph=True)
        assert g.item() == pytest.approx(exact(x, 1), rel=max(1e-13, 1e-15 * abs(x)))
        if abs(x) < 1e4:
            (h,) = yaad.autograd.grad(g, [t])
            assert float(h) == pytest.approx(exact(x, 2), rel=1e-9)
    _, (g,) = _grad(lambda a: yaad.sum(yaad.i1e(a)), np.array([0.0, np.inf, -np.inf, 1e300]))
    (t,) = _torch_grad(lambda a: torch.sum(torch.special.i1e(a)), [0.0, np.inf, -np.inf, 1e300])
    np.testing.assert_array_equal(g, t)
    a = yaad.tensor(np.array([0.3, -2.0, 7.0, 1500.0]), requires_grad=True)
    assert gradgradcheck(lambda a: yaad.i1e(a), [a])


def test_log_ndtr_second_derivative_for_large_arguments():
    # erfcx(-x / sqrt 2) in the rule overflows beyond x ~ 38: the derivative 0 was right,
    # the second derivative NaN (inf / inf). The oracle: -g (x + g) for g = phi / Phi, by
    # mpmath.
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    for x in [-700.0, -20.0, -1.0, 0.0, 5.0, 30.0, 40.0, 1e5]:
        g = mpmath.npdf(x) / mpmath.ncdf(x)
        t = yaad.tensor(x, requires_grad=True)
        (yg,) = yaad.autograd.grad(yaad.log_ndtr(t), [t], create_graph=True)
        (yh,) = yaad.autograd.grad(yg, [t])
        assert yg.item() == pytest.approx(float(g), rel=1e-13, abs=1e-320)
        assert float(yh) == pytest.approx(float(-g * (x + g)), rel=1e-10, abs=1e-320)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_zero_norm_gradient_at_infinite_and_nan_entries(dtype):
    # ord=0 counts the non-zero entries: its gradient is 0, also at an inf or a NaN entry
    # (it was x * 0).
    x = np.array([[np.inf, 1.0, np.nan], [0.0, -2.0, 3.0]], dtype)
    _, (g,) = _grad(lambda a: yaad.sum(yaad.linalg.vector_norm(a, ord=0, axis=1)), x)
    np.testing.assert_array_equal(g, np.zeros_like(x))
    assert g.dtype == np.dtype(dtype)


# ---- det's second derivative at rank n - 2 ----------------------------------------------------


def _adjugate(a):
    n = a.shape[-1]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, j, 0), i, 1))
                      for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("n, rank", [(3, 1), (4, 2), (4, 1), (3, 0), (4, 3)])
def test_det_second_derivative_at_rank_n_minus_2_and_below(n, rank):
    # The gradient of det is adj(a)^T, a polynomial: its derivative exists everywhere. At
    # rank n - 2 the SVD route differentiated repeated zero singular values one by one and
    # the Hessian came out wrong by its own size, silently (PyTorch is right there); now
    # adj's derivative at diag(s) is written from its minors. The oracle: adj's central
    # difference, exact for a polynomial of degree n - 1 <= 3 up to rounding.
    rng = np.random.default_rng(n + 10 * rank)
    a = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, n))
    v = rng.standard_normal((n, n))
    s = 1e-3
    want = ((8 * (_adjugate(a + s * v) - _adjugate(a - s * v))
             - (_adjugate(a + 2 * s * v) - _adjugate(a - 2 * s * v))) / (12 * s)).T
    t = yaad.tensor(a, requires_grad=True)
    (g,) = yaad.autograd.grad(yaad.linalg.det(t), [t], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _adjugate(a).T, atol=1e-12)
    (h,) = yaad.autograd.grad(yaad.sum(g * v), [t])
    np.testing.assert_allclose(h, want, atol=1e-9)
    (th,) = _torch_grad(lambda x: torch.sum(torch.autograd.grad(
        torch.linalg.det(x), [x], create_graph=True)[0] * torch.tensor(v)), a)
    if rank:  # (PyTorch's is NaN at the zero matrix)
        np.testing.assert_allclose(h, th, atol=1e-9)
    # forward over reverse, and a batch holding a regular matrix too
    _, hf = yaad.func.jvp(yaad.func.grad(yaad.linalg.det), (a,), (v,))
    np.testing.assert_allclose(hf, want, atol=1e-9)
    b = np.stack([a, rng.standard_normal((n, n))])
    tb = yaad.tensor(b, requires_grad=True)
    (gb,) = yaad.autograd.grad(yaad.sum(yaad.linalg.det(tb)), [tb], create_graph=True)
    (hb,) = yaad.autograd.grad(yaad.sum(gb[0] * v), [tb])
    np.testing.assert_allclose(hb[0], want, atol=1e-9)
    np.testing.assert_array_equal(hb[1], 0)


def test_det_third_derivative_at_a_singular_matrix_raises():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
    t = yaad.tensor(a, requires_grad=True)
    (g,) = yaad.autograd.grad(yaad.linalg.det(t), [t], create_graph=True)
    (h,) = yaad.autograd.grad(yaad.sum(g * a), [t], create_graph=True)
    with pytest.raises(NotImplementedError, match="third and higher"):
        yaad.autograd.grad(yaad.sum(h * h), [t])


# ---- second derivatives at the point a rule's where guards -------------------------------------


def test_sinc_derivatives_near_and_at_zero():
    # (cos(pi x) - sinc(x)) / x cancels as x -> 0 (sinc'(1e-8) was 32% off; JAX's is too)
    # and the rule's constant 0 at x = 0 made sinc''(0) = 0 instead of -pi^2 / 3 (JAX: right
    # at 0). The oracle: sinc' and sinc'' from their Maclaurin series, by mpmath.
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40

    def exact(x, k):
        return float(mpmath.diff(lambda t: mpmath.sinc(mpmath.pi * t), mpmath.mpf(x), k))

    for x in [0.0, 1e-12, 1e-8, 1e-6, 1e-3, 0.049, 0.051, 0.3, -0.7, 2.5]:
        t = yaad.tensor(x, requires_grad=True)
        (g,) = yaad.autograd.grad(yaad.sinc(t), [t], create_graph=True)
        (h,) = yaad.autograd.grad(g, [t])
        assert g.item() == pytest.approx(exact(x, 1), rel=1e-13, abs=1e-300)
        assert float(h) == pytest.approx(exact(x, 2), rel=1e-12)
    assert float(jax.grad(jax.grad(jnp.sinc))(0.0)) == pytest.approx(-np.pi ** 2 / 3, rel=1e-15)
    z = yaad.tensor(np.array([0.01 + 0.02j, 0.3 - 0.1j, 0.0]), requires_grad=True)
    assert gradgradcheck(yaad.sinc, [z])


def test_power_mixed_second_derivative_at_exponent_zero():
    # d/dy (d/dx x**y) = x**(y-1) (1 + y log x) is 1/x at y = 0: the rule's where(y == 0, 0,
    # ...) made it 0 (PyTorch's is 0 too; JAX's is right). Only x == y == 0 keeps the 0.
    x, y = np.array([2.0, 0.5, 2.0]), np.array([0.0, 0.0, 1.5])
    tx, ty = yaad.tensor(x, requires_grad=True), yaad.tensor(y, requires_grad=True)
    (gx,) = yaad.autograd.grad(yaad.sum(tx ** ty), [tx], create_graph=True)
    (h,) = yaad.autograd.grad(yaad.sum(gx), [ty])
    want = jax.vmap(jax.grad(jax.grad(lambda a, b: a ** b, 0), 1))(x, y)
    np.testing.assert_allclose(h, want, rtol=1e-14)
    np.testing.assert_array_equal(gx.detach().numpy()[:2], 0.0)


def test_spence_second_derivative_at_one():
    # spence'(z) = log(z) / (1 - z) has the limit -1 at z = 1 and the slope 1/2 there
    mpmath = pytest.importorskip("mpmath")
    for z in [1.0, 0.5, 2.0]:
        t = yaad.tensor(z, requires_grad=True)
        (g,) = yaad.autograd.grad(yaad.spence(t), [t], create_graph=True)
        (h,) = yaad.autograd.grad(g, [t])
        want = float(mpmath.diff(lambda s: mpmath.polylog(2, 1 - s), z, 2))
        assert float(h) == pytest.approx(want, rel=1e-12)


# ---- compile reproducers (yaad.compile is the lead's, not this file's to fix) -------------------


def test_compiled_replay_raises_the_eager_error():
    # The second pass through gamma's rule on a complex input raises TypeError (digamma's
    # derivative is real only) in both modes; after logsumexp's weights cancel (v = 0, a
    # -inf), the replay raised KeyError instead (found by the compile fuzzer,
    # --hypothesis-seed=7707; fixed on main by b31919c).
    def f(v, x):
        loss = yaad.logsumexp(v, b=np.array([0.7, -0.7])) + yaad.real(yaad.sum(yaad.gamma(x)))
        gv, gx = yaad.autograd.grad(loss, [v, x], create_graph=True)
        return loss + yaad.sum(gv * gv) + yaad.sum(yaad.real(gx * yaad.conj(gx)))

    def outcome(fn, v):
        xs = [yaad.tensor(np.array(v), requires_grad=True),
              yaad.tensor(np.zeros(0, complex), requires_grad=True)]
        try:
            fn(*xs).backward()
        except Exception as e:  # noqa: BLE001 - the exception's type is compared
            return type(e).__name__
        return None

    c = yaad.compile(f)
    for v in ([-0.3, -0.4], [-0.3, -0.4], [0.0, 0.0]):
        assert outcome(c, v) == outcome(f, v) == "TypeError"


# (fixed on main in ee3d0a1: the rule is called on replay, not inlined)
def test_compiled_replay_on_strict_arrays_raises_where_eager_raises():
    xp = pytest.importorskip("array_api_strict")
    # a rule that works on NumPy arrays and fails on array API arrays (no .sum method)
    twice = yaad.extend.op(lambda x: x * 2.0, vjp=lambda g, ans, x: g.sum() * 0 + 2 * g,
                           name="adversarial_twice")

    def f(a, b):
        return yaad.sum(twice(a)) + yaad.sum(yaad.min(b, axis=(), keepdims=True))

    def outcome(fn, x, y):
        xs = [yaad.tensor(xp.asarray(np.array(v)), requires_grad=True) for v in (x, y)]
        try:
            fn(*xs).backward()
        except AttributeError:
            return "raise"
        return "value"

    c = yaad.compile(f)
    for x, y in [(0.5, 0.7), (0.5, 0.7), (0.5, 0.8), (1.0, 0.9)]:
        assert outcome(c, x, y) == outcome(f, x, y) == "raise"


# ---- array API arrays in first-order rules --------------------------------------------------


def test_tile_gradient_on_array_api_arrays():
    # Found by the compile fuzzer's strict run (eager raised): tile's rule called g.sum(),
    # which an array API array lacks (index_put's rule did too, for values with more axes).
    xp = pytest.importorskip("array_api_strict")
    a = np.arange(6.0).reshape(2, 3)
    w = np.arange(24.0).reshape(2, 2, 2, 3)
    got = []
    for conv in (np.asarray, xp.asarray):
        t = yaad.tensor(conv(a), requires_grad=True)
        yaad.sum(yaad.tile(t, (2, 2, 1, 1)) * conv(w)).backward()
        s = yaad.tensor(conv(np.array(0.8)), requires_grad=True)
        yaad.sum(yaad.tile(s, (2, 3)) * conv(np.arange(6.0).reshape(2, 3))).backward()
        got.append((np.asarray(t.grad), float(s.grad)))
    want = w.reshape(2, 2, 2, 3).sum(axis=(0, 1))
    for g, gs in got:
        np.testing.assert_array_equal(g, want)
        assert gs == 15.0
    (tg,) = _torch_grad(lambda x: torch.sum(torch.tile(x, (2, 2, 1, 1)) * torch.tensor(w)), a)
    np.testing.assert_array_equal(tg, want)
