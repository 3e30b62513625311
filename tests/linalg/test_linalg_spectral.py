"""yaad.linalg's decompositions: eigh, eigvalsh, eig, eigvals, svd, svdvals, qr.

Values like NumPy's; gradients (reverse and forward mode) against finite differences on
real and complex inputs, unbatched and batched; second derivatives; the degenerate cases
(identity, repeated and zero singular values, truncated SVD) with their exact finite
values; GaugeError for losses that depend on a phase or on a basis the decomposition
leaves free; the ``eps=`` Lorentzian broadening. The table's calls are the ``variants=``
(``spectral=True``) of the functions' rows in ``tests/op_cases/linalg.py``.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import yaad
from tests.op_cases import variants
from tests.op_cases.linalg import projector, svd_reconstruct
from tests.support.linalg_inputs import (
    BATCHES,
    COMPLEX,
    abs2,
    data,
    general,
    herm,
    hermitian,
    mH,
    rand,
    unitary,
)
from yaad.testing import gradcheck, gradgradcheck

L = yaad.linalg


def _cplx(c):
    return np.complex128 if c else np.float64


# name -> Variant: the calls of the spectral rows of tests/op_cases/ (their variants=), at
# seeded inputs, batched
CASES = variants(spectral=True)


def _inputs(name, c, batch):
    rng = np.random.default_rng(zlib.crc32(f"{name} {c} {batch}".encode()))
    return CASES[name].inputs(rng, batch, c)


PARAMS = [pytest.param(name, c, batch, id=f"{name}-{'c' if c else 'r'}-{batch}")
          for name in CASES for c in COMPLEX for batch in BATCHES]


@pytest.mark.parametrize("name,c,batch", PARAMS)
def test_gradcheck(name, c, batch):
    gradcheck(CASES[name].f, _inputs(name, c, batch), check_forward_ad=True)


@pytest.mark.parametrize("name,c,batch", [p for p in PARAMS if CASES[p.values[0]].ref])
def test_values_like_numpy(name, c, batch):
    f, ref = CASES[name].f, CASES[name].ref
    (a,) = _inputs(name, c, batch)
    expected = np.asarray(ref(a))
    for arg in (a, yaad.tensor(a, requires_grad=True)):
        got = data(f(arg))
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("c", COMPLEX)
def test_eig_and_eigvals_are_complex_and_match_numpy(c):
    a = general(np.random.default_rng(0), (2,), 3, c)
    w, v = L.eig(yaad.tensor(a))
    ref = np.linalg.eig(a)
    assert w.dtype == v.dtype == np.complex128
    np.testing.assert_allclose(w.data, ref.eigenvalues, rtol=1e-12)
    np.testing.assert_allclose(v.data, ref.eigenvectors, rtol=1e-12)
    np.testing.assert_allclose(L.eigvals(a), np.linalg.eigvals(a), rtol=1e-12)
    assert L.eigvals(a).dtype == np.complex128
    assert L.eig(a.astype(np.complex64 if c else np.float32))[0].dtype == np.complex64


SECOND_ORDER = [name for name, v in CASES.items() if v.second]


@pytest.mark.parametrize("name", SECOND_ORDER)
@pytest.mark.parametrize("c", COMPLEX)
def test_second_derivatives(name, c):
    gradgradcheck(CASES[name].f, _inputs(name, c, ()), check_forward_ad=True)


@pytest.mark.parametrize("name", [name for name, v in CASES.items() if v.float32])
@pytest.mark.parametrize("c", COMPLEX)
def test_float32_stays_float32(name, c):
    (a,) = _inputs(name, c, (2,))
    low = yaad.tensor(a.astype(np.complex64 if c else np.float32), requires_grad=True)
    high = yaad.tensor(a, requires_grad=True)
    out_low, out_high = CASES[name].f(low), CASES[name].f(high)
    assert out_low.dtype.itemsize * 2 == out_high.dtype.itemsize
    np.testing.assert_allclose(out_low.data, out_high.data, rtol=1e-3, atol=1e-4)
    yaad.real(out_low).sum().backward()
    yaad.real(out_high).sum().backward()
    assert low.grad.dtype == low.dtype
    np.testing.assert_allclose(low.grad, high.grad, rtol=1e-2, atol=1e-3)


# ---- degenerate spectra: finite and exact ----------------------------------------------


def _with_spectrum(values, c, seed=0, cols=None):
    rng = np.random.default_rng(seed)
    q = unitary(rng, len(values), c)
    if cols is None:
        return q @ np.diag(values) @ np.conj(q.T)
    p = unitary(rng, cols, c)[:, :len(values)]
    return q @ np.diag(values) @ np.conj(p.T)


@pytest.mark.parametrize("c", COMPLEX)
def test_identity_matrix_gives_exact_eigenvalue_gradients(c):
    eye = yaad.tensor(np.eye(4, dtype=_cplx(c)), requires_grad=True)
    (L.eigvalsh(eye) ** 2).sum().backward()
    np.testing.assert_allclose(eye.grad, 2 * np.eye(4), atol=1e-14)
    eye.grad = None
    w, v = L.eigh(eye)
    (yaad.exp(w).sum() + abs2(v @ mH(v)).sum()).backward()  # v v^H = I: no gradient
    np.testing.assert_allclose(eye.grad, np.e * np.eye(4), atol=1e-13)
    eye.grad = None
    L.svdvals(eye).sum().backward()
    np.testing.assert_allclose(eye.grad, np.eye(4), atol=1e-14)


@pytest.mark.parametrize("c", COMPLEX)
def test_eigh_projector_onto_a_degenerate_eigenspace(c):
    h = _with_spectrum([1.0, 1.0, 1.0, 2.0, 3.0], c)
    f = lambda a: projector(L.eigh(herm(a)).eigenvectors[..., :3])  # noqa: E731
    gradcheck(f, h, check_forward_ad=True)
    t = yaad.tensor(h, requires_grad=True)
    yaad.real(f(t)).sum().backward()
    assert np.all(np.isfinite(t.grad)) and np.abs(t.grad).max() > 0.1


@pytest.mark.parametrize("c", COMPLEX)
def test_svd_with_repeated_singular_values(c):
    a = _with_spectrum([3.0, 3.0, 1.0], c, cols=5)  # 3 x 5 with s = (3, 3, 1)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    t = yaad.tensor(a, requires_grad=True)
    L.svdvals(t).sum().backward()
    np.testing.assert_allclose(t.grad, u @ vh, atol=1e-12)  # d sum(s) = Re tr(u^H da v)
    t.grad = None
    r = L.svd(t, full_matrices=False)
    (abs2(svd_reconstruct(r.U, r.S, r.Vh, 3))).sum().backward()
    np.testing.assert_allclose(t.grad, 2 * a, atol=1e-12)
    # smooth functions of the degenerate block and of the whole factorisation
    gradcheck(lambda x: projector(L.svd(x, full_matrices=False).U[..., :2]), a)
    gradcheck(lambda x: svd_reconstruct(*L.svd(x), 3), a)


@pytest.mark.parametrize("c", COMPLEX)
def test_svd_of_a_rank_deficient_matrix(c):
    a = _with_spectrum([2.0, 1.0, 0.0, 0.0], c, cols=4)
    t = yaad.tensor(a, requires_grad=True)
    r = L.svd(t, full_matrices=False)
    (abs2(svd_reconstruct(r.U, r.S, r.Vh, 4))).sum().backward()
    np.testing.assert_allclose(t.grad, 2 * a, atol=1e-12)
    t.grad = None
    L.matrix_norm(t, ord="nuc").backward()
    assert np.all(np.isfinite(t.grad))
    u, s, vh = np.linalg.svd(a)
    np.testing.assert_allclose(u[:, :2].conj().T @ t.grad @ vh[:2].conj().T, np.eye(2),
                               atol=1e-12)


def _two_site_step(chi):
    """A tensor-network step: split a two-site tensor by an SVD truncated to ``chi``."""
    def step(theta):
        d = theta.shape[0]
        u, s, vh = L.svd(yaad.reshape(theta, (2 * d, 2 * d)), full_matrices=False)
        a = yaad.reshape(u[:, :chi], (d, 2, chi))
        b = yaad.reshape(yaad.expand_dims(s[:chi], -1) * vh[:chi], (chi, 2, d))
        return yaad.einsum("asb,btc->astc", a, b) / L.norm(s[:chi])
    return step


@pytest.mark.parametrize("c", COMPLEX)
@pytest.mark.parametrize("degenerate", [False, True])
def test_truncated_svd_in_a_tensor_network_step(c, degenerate):
    d, chi = 3, 3
    rng = np.random.default_rng(7)
    if degenerate:  # repeated values inside the kept block and inside the discarded one
        theta = _with_spectrum([3.0, 2.0, 2.0, 1.0, 0.5, 0.5], c, seed=3)
    else:
        theta = rand(rng, (2 * d, 2 * d), c)
    theta = theta.reshape(d, 2, 2, d)
    # Inside a degenerate block the singular vectors have no derivative: forward mode and
    # second derivatives there are not supported (docs/linalg.md); first order is exact.
    gradcheck(_two_site_step(chi), theta, check_forward_ad=not degenerate)
    if not degenerate:
        gradgradcheck(_two_site_step(chi), theta, check_forward_ad=True)


# ---- gauge: clear errors instead of wrong gradients -----------------------------------------


def _grad_of(f, a):
    t = yaad.tensor(a, requires_grad=True)
    yaad.real(f(t)).sum().backward()
    return t.grad


def test_phase_dependent_losses_raise():
    a = general(np.random.default_rng(1), (), 3, True)
    h = a + np.conj(a.T)
    with pytest.raises(L.GaugeError, match="linalg.eigh: the loss depends on the phases"):
        _grad_of(lambda x: L.eigh(x).eigenvectors, h)
    with pytest.raises(L.GaugeError, match="linalg.eig: the loss depends on the phases"):
        _grad_of(lambda x: L.eig(x).eigenvectors, a)
    with pytest.raises(L.GaugeError, match="linalg.svd: the loss depends on the phases"):
        _grad_of(lambda x: L.svd(x).U, a)
    # the same vectors through phase-invariant quantities are fine
    assert np.all(np.isfinite(_grad_of(lambda x: abs2(L.eig(x).eigenvectors), a)))
    assert np.all(np.isfinite(_grad_of(lambda x: (lambda r: r.U @ r.Vh)(L.svd(x)), a)))


@pytest.mark.parametrize("c", COMPLEX)
def test_basis_dependent_losses_in_a_degenerate_subspace_raise(c):
    h = _with_spectrum([1.0, 1.0, 2.0, 3.0], c)
    w = np.arange(4.0)
    with pytest.raises(L.GaugeError, match="linalg.eigh: the loss depends on the basis"):
        _grad_of(lambda x: abs2(L.eigh(x).eigenvectors[..., 0]) * w, h)
    a = _with_spectrum([3.0, 3.0, 1.0], c, cols=4)
    with pytest.raises(L.GaugeError, match="linalg.svd: the loss depends on the basis"):
        _grad_of(lambda x: abs2(L.svd(x, full_matrices=False).U[..., 0]) * w[:3], a)
    with pytest.raises(L.GaugeError, match="beyond min"):  # a 2-dimensional complement
        _grad_of(lambda x: abs2(L.svd(x).Vh[..., 3, :]) * w, a[:2])
    with pytest.raises(L.GaugeError, match="linalg.qr: .*columns of Q beyond n"):
        _grad_of(lambda x: abs2(L.qr(x, "complete").Q[..., 3]) * w, rand(
            np.random.default_rng(2), (4, 2), c))


def _lorentzian_eigh_gradient(h, wts, eps):
    """The gradient of sum(wts * |V|^2) by the textbook formula, in NumPy, with
    1/(l_j - l_i) broadened: V (F o skew(V^H gV)) V^H."""
    lam, v = np.linalg.eigh(h)
    gv = 2 * wts * v
    j = np.conj(v.T) @ gv
    diff = lam[None, :] - lam[:, None]
    f = diff / (diff ** 2 + eps ** 2)
    return v @ (f * (j - np.conj(j.T)) / 2) @ np.conj(v.T)


@pytest.mark.parametrize("c", COMPLEX)
def test_eps_broadening(c):
    rng = np.random.default_rng(3)
    wts = rng.uniform(size=(4, 4))
    loss = lambda eps: lambda x: abs2(L.eigh(x, eps=eps).eigenvectors) * wts  # noqa: E731
    # distinct eigenvalues: eps far below the gaps changes nothing
    h = hermitian(rng, (), 4, c)
    np.testing.assert_allclose(_grad_of(loss(1e-9), h), _grad_of(loss(None), h), rtol=1e-8,
                               atol=1e-12)
    # a degenerate pair: finite, the broadened formula
    h = _with_spectrum([1.0, 1.0, 2.0, 4.0], c)
    got = _grad_of(loss(1e-3), h)
    np.testing.assert_allclose(got, _lorentzian_eigh_gradient(h, wts, 1e-3), atol=1e-9)
    assert np.abs(got).max() > 0.1
    with pytest.raises(ValueError, match="eps must be None or a positive float"):
        L.eigh(h, eps=0.0)


def test_svd_eps_is_finite_for_degenerate_singular_values():
    a = _with_spectrum([3.0, 3.0, 1.0], False, cols=4)
    g = _grad_of(lambda x: abs2(L.svd(x, full_matrices=False, eps=1e-6).U[..., 0])
                 * np.arange(3.0), a)
    assert np.all(np.isfinite(g)) and np.abs(g).max() > 1e-3


def test_qr_raw_mode():
    a = rand(np.random.default_rng(4), (4, 3))
    h, tau = L.qr(a, "raw")
    np.testing.assert_array_equal(h, np.linalg.qr(a, "raw")[0])
    with pytest.raises(ValueError, match="qr: mode='raw' is not differentiable"):
        L.qr(yaad.tensor(a, requires_grad=True), "raw")
    with yaad.no_grad():
        h2, _ = L.qr(yaad.tensor(a, requires_grad=True), "raw")
    np.testing.assert_array_equal(h2.data, h)
    with pytest.raises(ValueError, match="qr: unrecognized mode"):
        L.qr(a, "full")


def test_results_are_named_tuples():
    a = hermitian(np.random.default_rng(5), (), 3)
    r = L.eigh(yaad.tensor(a))
    assert isinstance(r, L.EighResult) and r.eigenvalues is r[0]
    assert L.svd(a)._fields == ("U", "S", "Vh")
    assert L.qr(a)._fields == ("Q", "R")
    assert L.eig(a)._fields == ("eigenvalues", "eigenvectors")
    assert L.slogdet(a + 10 * np.eye(3))._fields == ("sign", "logabsdet")


@pytest.mark.parametrize("c", COMPLEX)
def test_coupled_losses_at_equal_eigenvalues_raise_and_their_remedies_work(c):
    h = _with_spectrum([1.0, 1.0, 2.0, 3.0], c)
    obs = rand(np.random.default_rng(8), (4, 4), c)

    def thermal(x):  # V diag(exp(-w)) V^H: f'(1) is needed inside the degenerate block
        w, v = L.eigh(x)
        return (v * yaad.expand_dims(yaad.exp(-w), -2)) @ mH(v) * obs

    with pytest.raises(L.GaugeError, match="linalg.eigh: at equal eigenvalues.*0/0 limit"):
        _grad_of(thermal, h)
    # the matrix function is exact at any spectrum
    gradcheck(lambda x: L.expm(-herm(x)) * obs, h)
    # an eigenvalue term and a projector term from separate calls pass separately
    def separate(x):
        x = herm(x)
        return (L.eigvalsh(x)[..., :2].sum()
                + yaad.real(yaad.sum(projector(L.eigh(x).eigenvectors[..., :2]) * obs)))

    gradcheck(separate, h)
    v = np.linalg.eigh(h)[1]
    q = np.conj(v.T) @ _grad_of(separate, h) @ v
    np.testing.assert_allclose(q[:2, :2], np.eye(2), atol=1e-12)  # the block: d(w_0 + w_1)
    a = _with_spectrum([3.0, 3.0, 1.0], c, cols=4)
    with pytest.raises(L.GaugeError, match="linalg.svd: at equal singular values"):
        _grad_of(lambda x: (lambda r: yaad.sum(svd_reconstruct(r.U, r.S, r.Vh, 3) * obs[:3])
                            + yaad.sum(projector(r.U[..., :2]) * obs[:3, :3]))(
            L.svd(x, full_matrices=False)), a)


# ---- second derivatives at degenerate spectra --------------------------------------------
# The discarded part of a truncated decomposition enters the rules as one block (through
# the matrix it spans), so repeated or zero values there leave second derivatives exact.
# Inside the kept part, equal values coupled by the loss make the second derivative a
# limit the chain rule cannot reach: GaugeError, never a wrong number.


def _second_fd(f, x, e, h=2e-3):
    """d^2/dt^2 f(x + t e) at 0, by the 7-point central stencil (error O(h^6))."""
    c = (2, -27, 270, -490, 270, -27, 2)
    return sum(ck * float(np.real(f(x + (k - 3) * h * e))) for k, ck in enumerate(c)) / (
        180 * h * h)


def _hessian_along(f, x, e):
    """e . H e by reverse over reverse and by forward over reverse."""
    g = yaad.func.grad(lambda t: yaad.real(f(t)))
    rr = yaad.func.grad(lambda t: yaad.real(yaad.sum(g(t) * np.conj(e))))(x)
    fr = yaad.func.jvp(g, (x,), (e,))[1]
    return (float(np.real(np.sum(np.conj(e) * data(rr)))),
            float(np.real(np.sum(np.conj(e) * data(fr)))))


def _tn_loss(k, m1, m2, b, split=0.5):
    """A gauge-invariant network of the bond (U_k S_k^p, S_k^(1-p) Vh_k) of a truncated SVD."""
    def f(a):
        u, s, vh = L.svd(a, full_matrices=False)
        x = u[..., :k] * s[:k] ** split
        y = mH(vh[..., :k, :]) * s[:k] ** (1 - split)
        xy = x @ mH(y)
        c = mH(x) @ b @ y
        return yaad.trace(m1 @ xy @ m2 @ xy) + yaad.trace(c @ c @ c) / 3
    return f


def _truncated_projector_loss(k, m):
    """A loss of the isometry made of the k largest eigenvectors (as in CTMRG)."""
    def f(a):
        v = L.eigh(herm(a)).eigenvectors[..., -k:]
        c = mH(v) @ m @ v
        return yaad.trace(c @ c) + yaad.trace(c @ c @ c)
    return f


@pytest.mark.parametrize("c", COMPLEX)
@pytest.mark.parametrize("spectrum", [[3.0, 2.0, 1.5, 0.5, 0.5, 0.0],
                                      [3.0, 2.0, 1.5, 0.2, 0.0, 0.0],
                                      [3.0, 2.5, 1.5, 0.5, 0.3, 0.1]])
@pytest.mark.parametrize("split", [0.5, 1.0])
def test_truncated_svd_second_derivatives_with_degenerate_discarded_values(c, spectrum, split):
    rng = np.random.default_rng(11)
    n, k = len(spectrum), 3
    a = _with_spectrum(spectrum, c, seed=5)
    m1, m2, b, e = (rand(rng, (n, n), c) for _ in range(4))
    f = _tn_loss(k, m1, m2, b, split)
    exact = _second_fd(lambda x: data(f(x)), a, e)
    rr, fr = _hessian_along(f, a, e)
    np.testing.assert_allclose([rr, fr], [exact, exact], rtol=1e-7)
    gradgradcheck(f, a, check_forward_ad=True)


@pytest.mark.parametrize("c", COMPLEX)
def test_truncated_eigh_second_derivatives_with_degenerate_discarded_values(c):
    rng = np.random.default_rng(12)
    h = _with_spectrum([0.0, 0.0, 0.5, 0.5, 2.0, 3.0], c, seed=6)
    m, e = rand(rng, (6, 6), c), herm(rand(rng, (6, 6), c))
    f = _truncated_projector_loss(2, m)
    exact = _second_fd(lambda x: data(f(x)), h, e)
    rr, fr = _hessian_along(f, h, e)
    np.testing.assert_allclose([rr, fr], [exact, exact], rtol=1e-7)


def test_truncated_svd_second_derivatives_match_torch_and_jax_where_they_are_finite():
    import jax
    import torch

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(13)
    a = _with_spectrum([3.0, 2.0, 1.5, 0.7, 0.4, 0.1], False, seed=7)
    m1, m2, b, e = (rand(rng, (6, 6)) for _ in range(4))

    def loss(lib, x):
        const = getattr(lib, "asarray", lambda y: y)  # torch and jax.numpy; yaad takes arrays
        u, s, vh = lib.linalg.svd(x, full_matrices=False)
        r = s[:3] ** 0.5
        xx, yy = u[:, :3] * r, vh[:3].T * r
        xy, cc = xx @ yy.T, xx.T @ const(b) @ yy
        return lib.trace(const(m1) @ xy @ const(m2) @ xy) + lib.trace(cc @ cc @ cc) / 3

    rr, fr = _hessian_along(lambda x: loss(yaad, x), a, e)
    t = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad(loss(torch, t), t, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.tensor(e)).sum(), t)
    hj = jax.jvp(jax.grad(lambda x: loss(jax.numpy, x)), (a,), (e,))[1]
    for ref in (float((ht * torch.tensor(e)).sum()), float(np.sum(hj * e))):
        np.testing.assert_allclose([rr, fr], [ref, ref], rtol=1e-9)
    # A degenerate discarded block (0.5, 0.5) and a zero: exact here (PyTorch 2.13 divides
    # by the rounding difference of the two 0.5s and returns -147.312 for -147.011).
    a = _with_spectrum([3.0, 2.0, 1.5, 0.5, 0.5, 0.0], False, seed=7)
    rr, fr = _hessian_along(lambda x: loss(yaad, x), a, e)
    exact = _second_fd(lambda x: data(loss(yaad, x)), a, e)
    np.testing.assert_allclose([rr, fr], [exact, exact], rtol=1e-7)


@pytest.mark.parametrize("c", COMPLEX)
@pytest.mark.parametrize("split", [0.0, 0.5, 1.0])
def test_bond_splits_at_equal_kept_singular_values_have_exact_gradients(c, split):
    # (U S^p, S^(1-p) Vh) joined in a gauge-invariant network, equal values inside the kept
    # block: the degenerate term is herm(J + K) / (s_a + s_b), the limit of the exact formula.
    rng = np.random.default_rng(14)
    a = _with_spectrum([3.0, 2.0, 2.0, 1.0, 0.5], c, seed=8)
    m1, m2, b = (rand(rng, (5, 5), c) for _ in range(3))
    gradcheck(_tn_loss(3, m1, m2, b, split), a)


@pytest.mark.parametrize("c", COMPLEX)
def test_polar_factor_at_equal_singular_values_has_exact_gradients(c):
    # U Vh (invariant under (U R, V R)): the degenerate term is 0, also at a multiple of the
    # identity, where no pair of distinct values says which kind of loss it is.
    rng = np.random.default_rng(15)
    m = rand(rng, (4, 4), c)

    def polar(x):
        r = L.svd(x)
        return yaad.real(yaad.sum((r.U @ r.Vh) * m))

    for a in (_with_spectrum([2.0, 2.0, 1.0, 0.5], c, seed=9), 1.5 * np.eye(4, dtype=_cplx(c))):
        g = _grad_of(polar, a)
        q, p = scipy_polar(a)
        # d Re<m, Q>: the polar factor's derivative, dQ = Q (skew part of Q^H dA P^-1) ...
        h = 1e-6
        fd = np.zeros(a.shape, dtype=a.dtype)
        for idx in np.ndindex(a.shape):
            for unit in ((1, 1j) if c else (1,)):
                d = np.zeros(a.shape, dtype=a.dtype)
                d[idx] = h * unit
                num = (np.real(np.sum(scipy_polar(a + d)[0] * m))
                       - np.real(np.sum(scipy_polar(a - d)[0] * m))) / (2 * h)
                fd[idx] += num * unit
        np.testing.assert_allclose(g, fd, atol=1e-7)
        assert np.abs(g).max() > 0.1


def scipy_polar(a):
    import scipy.linalg

    return scipy.linalg.polar(a)


@pytest.mark.parametrize("c", COMPLEX)
def test_coupled_losses_that_were_silently_wrong_now_raise(c):
    rng = np.random.default_rng(16)
    m = rand(rng, (3, 3), c)
    # U diag(s^2) Vh = A (A^H A)^(1/2): its derivative at equal s needs f'(s) = 2s, which
    # the gradients reaching svd do not carry (an earlier rule returned herm(J)/s).
    a = _with_spectrum([2.0, 2.0, 1.0], c, seed=10)
    with pytest.raises(L.GaugeError, match="linalg.svd: at equal singular values"):
        _grad_of(lambda x: (lambda r: yaad.sum((r.U * r.S ** 2) @ r.Vh * m))(L.svd(x)), a)
    # V diag(w^2) V^-1 from eig: an earlier rule did not look at it at all.
    s = rand(rng, (3, 3), c) + 3 * np.eye(3)
    g = s @ np.diag([1.0, 1.0, 2.0]) @ np.linalg.inv(s)
    with pytest.raises(L.GaugeError, match="linalg.eig: at equal eigenvalues"):
        _grad_of(lambda x: (lambda r: yaad.sum((r.eigenvectors * r.eigenvalues ** 2)
                                               @ L.inv(r.eigenvectors) * m))(L.eig(x)), g)
    # the same losses as matrix functions are exact
    gradcheck(lambda x: yaad.sum(x @ L.sqrtm(mH(x) @ x) * m), a)
    gradcheck(lambda x: yaad.sum(x @ x * m), g)


@pytest.mark.parametrize("c", COMPLEX)
def test_second_derivatives_through_a_coupled_degenerate_block_raise(c):
    rng = np.random.default_rng(17)
    n = 6
    m1, m2, b, e = (rand(rng, (n, n), c) for _ in range(4))
    a = _with_spectrum([3.0, 2.0, 2.0, 0.5, 0.3, 0.0], c, seed=5)  # equal values kept
    f = _tn_loss(3, m1, m2, b)
    gradcheck(f, a)  # the first derivative is exact
    g = yaad.func.grad(lambda t: yaad.real(f(t)))
    with pytest.raises(L.GaugeError, match="linalg.svd: a second derivative"):
        yaad.func.grad(lambda t: yaad.real(yaad.sum(g(t) * np.conj(e))))(a)
    with pytest.raises(L.GaugeError, match="linalg.svd: a second derivative"):
        yaad.func.jvp(g, (a,), (e,))
    h = _with_spectrum([1.0, 1.0, 1.0, 2.0, 3.0], c, seed=4)
    p = _truncated_projector_loss(3, rand(rng, (5, 5), c))
    f = lambda x: p(-x)  # noqa: E731  (the 3 smallest of x: a degenerate block)
    gradcheck(f, h)
    with pytest.raises(L.GaugeError, match="linalg.eigh: a second derivative"):
        yaad.func.hvp(lambda t: yaad.real(f(t)), (h,), (herm(rand(rng, (5, 5), c)),))
    # (two of a level of three: not a symmetric function of the level, no first derivative)
    with pytest.raises(L.GaugeError, match="linalg.eigh: the loss is not a symmetric"):
        yaad.func.jvp(yaad.func.grad(lambda t: yaad.real(L.eigvalsh(herm(t))[:2].sum() ** 2)),
                      (h,), (herm(rand(rng, (5, 5), c)),))


def test_forward_over_reverse_at_equal_values_along_a_direction_that_keeps_the_basis():
    # A tangent that does not mix a degenerate block (a multiple of the identity on it, in
    # any basis) leaves its vectors where they are: the Hessian-vector product is exact.
    rng = np.random.default_rng(18)
    q = unitary(rng, 5)
    h = q @ np.diag([1.0, 1.0, 1.0, 2.0, 3.0]) @ q.T
    e = q @ np.diag([0.7, 0.7, 0.7, -0.4, 1.3]) @ q.T + q @ _offblock(rng) @ q.T
    p = _truncated_projector_loss(3, rand(rng, (5, 5)))
    f = lambda x: p(-x)  # noqa: E731
    g = yaad.func.grad(f)
    fr = float(np.sum(e * data(yaad.func.jvp(g, (h,), (e,))[1])))
    np.testing.assert_allclose(fr, _second_fd(lambda x: data(f(x)), h, e), rtol=1e-7)


def _offblock(rng):
    """Symmetric, zero inside the 3 x 3 leading block."""
    x = rng.standard_normal((5, 5))
    x = x + x.T
    x[:3, :3] = 0
    return x


def test_gauge_errors_name_the_call_site_of_the_decomposition():
    # A chain of truncated SVDs (a network) where the third one is degenerate and its
    # truncation cuts through the block: the error raised in backward says which call.
    rng = np.random.default_rng(19)
    mats = [rand(rng, (4, 4)) for _ in range(5)]
    mats[2] = _with_spectrum([3.0, 2.0, 2.0, 1.0], False, seed=3)
    x = yaad.tensor(np.eye(4), requires_grad=True)
    total = 0
    for m in mats:
        u, s, vh = L.svd(m @ x)
        total = total + yaad.sum(u[:, :2] @ vh[:2])  # the third cuts through (2, 2)
    line = next(i + 1 for i, text in enumerate(open(__file__).read().splitlines())
                if "u, s, vh = L.svd(m @ x)" in text)
    with pytest.raises(L.GaugeError) as err:
        total.backward()
    msg = str(err.value)
    assert f"test_linalg_spectral.py, line {line}" in msg
    assert "call 3 from that line in this process" in msg
    assert "`u, s, vh = L.svd(m @ x)`" in msg and msg.startswith("linalg.svd: ")


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("values", ["eigvalsh", "svdvals"])
def test_second_order_when_no_column_gets_a_cotangent(values, dtype):
    # Found by test_fuzz_program[911547] (YAAD_FUZZ_SEED=910000): the maximum takes x
    # everywhere, so the first gradient's eigenvector (singular vector) terms get exactly
    # zero cotangents in the second pass; the rule's truncated-block solve then had no
    # column and its max over zero shifts raised. The loss is sum(x) near x: its Hessian
    # is zero, and gradgradcheck compares with finite differences.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2)) + 5
    if dtype == np.complex128:
        x = x + 1j * rng.standard_normal((2, 2))
    fn = getattr(yaad.linalg, values)

    def loss(t):
        return yaad.sum(yaad.real(yaad.maximum(-fn(t) - 100, yaad.real(t))))

    t = yaad.tensor(x, requires_grad=True)
    assert gradgradcheck(loss, [t])
    (g,) = yaad.autograd.grad(loss(t), [t], create_graph=True)
    assert g.dtype == np.dtype(dtype)
    (h,) = yaad.autograd.grad(yaad.sum(yaad.real(g) * np.arange(4.0).reshape(2, 2)), [t],
                              allow_unused=True)
    assert h is None or np.array_equal(np.asarray(h), np.zeros((2, 2), dtype))
