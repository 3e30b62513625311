"""yaad.sparse.linalg: eigsh, eigs, expm_multiply, cg, minres, gmres, spsolve; values against
SciPy and NumPy, gradients against the dense yaad.linalg versions (eigh, eig, expm, solve)
and central finite differences, real and complex; degenerate and gauge cases; errors."""

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.sparse.linalg as spla

import yaad
from yaad.implicit import ConvergenceError
from yaad.linalg import GaugeError
from yaad.sparse import linalg as sl

RNG = np.random.default_rng(11)
N = 30
TH0 = np.array([0.7, 1.3])


def sparse(complex_, seed, hermitian=False, n=N, density=0.15):
    a = sps.random(n, n, density=density, random_state=seed, format="csr")
    if complex_:
        a = a + 1j * sps.random(n, n, density=density, random_state=seed + 100, format="csr")
    if hermitian:
        a = a + a.conj().T
    return sps.csr_array(a)


def two_terms(complex_, hermitian):
    a = sparse(complex_, 1, hermitian)
    b = sps.csr_array(sps.diags(RNG.standard_normal(N)))
    return a, b


def sparse_op(th, a, b):
    return th[0] * yaad.sparse.asarray(a) + th[1] * yaad.sparse.asarray(b)


def dense_op(th, a, b):
    return th[0] * a.toarray() + th[1] * b.toarray()


def vec(complex_, shape=(N,)):
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


def central(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        out.flat[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return out


# ---- eigsh ------------------------------------------------------------------------------


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("which", ["SA", "LA", "LM"])
def test_eigsh_gradients_match_dense_eigh(complex_, which):
    a, b = two_terms(complex_, True)
    c = vec(True)
    k = 3

    def pick(w, v):  # the k eigenpairs eigsh returns, ascending
        w = w.data if isinstance(w, yaad.Tensor) else w
        order = {"SA": np.arange(k), "LA": np.arange(N - k, N),
                 "LM": np.sort(np.argsort(-np.abs(w))[:k])}[which]
        return order

    def loss(w, v):
        return w[0] + 0.5 * w[2] + yaad.sum(abs(yaad.matmul(c, v)) ** 2 * np.arange(1.0, 4.0))

    def sparse_loss(th):
        w, v = sl.eigsh(sparse_op(th, a, b), k=k, which=which, tol=1e-14)
        return loss(w, v)

    def dense_loss(th):
        w, v = yaad.linalg.eigh(dense_op(th, a, b))
        idx = pick(w, v)
        return loss(w[idx], v[:, idx])

    g = yaad.func.grad(sparse_loss)(TH0)
    np.testing.assert_allclose(g, yaad.func.grad(dense_loss)(TH0), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(g, central(sparse_loss, TH0), rtol=1e-6)


@pytest.mark.parametrize("complex_", [False, True])
def test_eigsh_values_and_nonzeros_gradient(complex_):
    a = sparse(complex_, 4, hermitian=True)
    rows = np.repeat(np.arange(N), np.diff(a.indptr))

    def loss(w, v):
        return w[1] - 0.3 * w[0] + yaad.sum(abs(v[:4, 0]) ** 2)

    vals = yaad.tensor(a.data.copy(), requires_grad=True)
    h = yaad.sparse.csr_array((vals, a.indices, a.indptr), shape=a.shape)
    w, v = sl.eigsh(h, k=2, which="LA", tol=1e-14)
    np.testing.assert_allclose(w.data, np.linalg.eigvalsh(a.toarray())[-2:], rtol=1e-12)
    loss(w, v).backward()
    ad = yaad.tensor(a.toarray(), requires_grad=True)
    wd, vd = yaad.linalg.eigh(ad)
    loss(wd[-2:], vd[:, -2:]).backward()
    # eigh's gradient is that for Hermitian perturbations: compare along them, on the
    # (symmetric) pattern
    g = np.zeros((N, N), complex)
    g[rows, a.indices] = vals.grad
    on = a.toarray() != 0
    np.testing.assert_allclose((g + g.conj().T)[on], (ad.grad + ad.grad.conj().T)[on],
                               rtol=1e-7, atol=1e-9)


def test_eigsh_matrix_free_operator_with_closure_and_shift_invert():
    a, b = two_terms(True, True)
    th = yaad.tensor(TH0, requires_grad=True)
    op = sl.LinearOperator((N, N), lambda v: th[0] * (a @ v) + th[1] * (b @ v),
                           dtype=complex)
    w, v = sl.eigsh(op, k=2, sigma=0.1, which="LM", tol=1e-14)
    (w[0] + w[1]).backward()
    wd = np.linalg.eigvalsh(dense_op(TH0, a, b))
    closest = np.sort(wd[np.argsort(np.abs(wd - 0.1))[:2]])
    np.testing.assert_allclose(w.data, closest, rtol=1e-10)
    g = yaad.func.grad(lambda t: yaad.sum(yaad.linalg.eigvalsh(dense_op(t, a, b))[
        np.sort(np.argsort(np.abs(wd - 0.1))[:2])]))(TH0)
    np.testing.assert_allclose(th.grad, g, rtol=1e-8)


def test_eigsh_of_a_constant_operator_has_no_graph():
    a = sparse(False, 5, hermitian=True)
    w, v = sl.eigsh(a, k=2, which="SA")
    assert isinstance(w, np.ndarray) and isinstance(v, np.ndarray)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.toarray())[:2], rtol=1e-10)


def degenerate_operator(complex_):
    """A Hermitian operator with eigenvalues 1, 1, 1 (a triple level), 2, 3, ..."""
    q, _ = np.linalg.qr(vec(complex_, (N, N)))
    w = np.concatenate([[1.0, 1.0, 1.0], np.arange(2.0, N - 1)])
    return q, w


def level_operator(complex_, s):
    """D + (s - 1) E with D's eigenvalues 1, 1, 1 (a triple level), 2, 3, ...: at s = 1
    the level is exactly degenerate."""
    q, w = degenerate_operator(complex_)
    d = sps.csr_array(q @ np.diag(w) @ q.conj().T)
    e = sps.csr_array(np.diag((np.arange(N) % 3).astype(float)))
    h = yaad.sparse.asarray(d) + (s - 1) * yaad.sparse.asarray(e)
    dense = lambda sv: d.toarray() + (sv - 1) * e.toarray()  # noqa: E731
    return h, dense


@pytest.mark.parametrize("complex_", [False, True])
def test_eigsh_degenerate_level_exact_where_gauge_invariant(complex_):
    def level(sv):
        return np.linalg.eigh(sv)[0][:3], np.linalg.eigh(sv)[1][:, :3]

    losses = {  # gauge-invariant functions of the computed level
        "sum of the level": (lambda w, v: yaad.sum(w),
                             lambda w, v: np.sum(w)),
        "projector": (lambda w, v: yaad.real((v @ yaad.conj(v).T)[0, 1]) * 3,
                      lambda w, v: np.real((v @ v.conj().T)[0, 1]) * 3),
    }
    for name, (loss, ref) in losses.items():
        s = yaad.tensor(1.0, requires_grad=True)
        h, dense = level_operator(complex_, s)
        w, v = sl.eigsh(h, k=3, which="SA", tol=1e-14, ncv=N)
        loss(w, v).backward()
        fd = (ref(*level(dense(1 + 1e-6))) - ref(*level(dense(1 - 1e-6)))) / 2e-6
        np.testing.assert_allclose(s.grad, fd, rtol=1e-6, atol=1e-8, err_msg=name)
    # one eigenvector of the level: the basis inside it is arbitrary
    s = yaad.tensor(1.0, requires_grad=True)
    w, v = sl.eigsh(level_operator(complex_, s)[0], k=3, which="SA", tol=1e-14, ncv=N)
    with pytest.raises(GaugeError, match="sparse.linalg.eigsh: the loss depends on the basis"):
        yaad.sum(abs(v[:, 0]) ** 2 * np.arange(N)).backward()
    # values and basis together (as in V diag(w) V^H): refused, as linalg.eigh refuses it
    for solve in (lambda t: sl.eigsh(level_operator(complex_, t)[0], k=3, which="SA", ncv=N),
                  lambda t: tuple(x[..., :3] for x in yaad.linalg.eigh(
                      level_operator(complex_, t)[1](t)))):
        s = yaad.tensor(1.0, requires_grad=True)
        w, v = solve(s)
        with pytest.raises(GaugeError, match="0/0 limit"):
            yaad.real((v * w @ yaad.conj(v).T)[0, 1]).backward()


@pytest.mark.parametrize("complex_", [False, True])
def test_eigsh_k_cutting_a_degenerate_level(complex_):
    def lowest(dense, sv, k):
        return np.sum(np.linalg.eigvalsh(dense(sv))[:k])

    for solver, kw, loss in ((sl.eigsh, dict(which="SA"), yaad.sum),
                             (sl.eigs, dict(which="SR"), lambda w: yaad.real(yaad.sum(w)))):
        s = yaad.tensor(1.0, requires_grad=True)
        h, dense = level_operator(complex_, s)
        # The oracle: the sum of the 2 lowest of the triple level has one-sided derivatives
        # that differ along s (which splits the level); the sum of all 3 is smooth.
        right, left = [(lowest(dense, 1 + e, 2) - lowest(dense, 1, 2)) / e
                       for e in (1e-6, -1e-6)]
        assert abs(right - left) > 0.1
        w, v = solver(h, k=2, tol=1e-14, ncv=N, **kw)
        with pytest.raises(GaugeError, match="cuts through a degenerate level"):
            loss(w).backward()  # eigenvalues only: no derivative, not even of their sum
        w, v = solver(h, k=2, tol=1e-14, ncv=N, **kw)
        with pytest.raises(GaugeError, match="cuts through a degenerate|inside a degenerate"):
            yaad.real((v @ yaad.conj(v).T)[0, 1]).backward()  # the span of 2 of the 3
        for k in (3, 4):  # the whole level (and one more state): exact
            w, _ = solver(h, k=k, tol=1e-14, ncv=N, **kw)
            (g,) = yaad.autograd.grad(loss(w), s)
            fd = (lowest(dense, 1 + 1e-6, k) - lowest(dense, 1 - 1e-6, k)) / 2e-6
            np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_eigsh_largest_magnitude_tied_with_its_mirror_image_raises():
    # eigenvalues -3, 3, 1, 2, ...: k=1, "LM" picks one of +-3 by rounding; along a
    # perturbation the largest-magnitude eigenvalue jumps from 3 to -3
    d = np.concatenate([[-3.0, 3.0], np.linspace(0.1, 2, N - 2)])
    q = np.linalg.qr(vec(False, (N, N)))[0]
    a = sps.csr_array(q @ np.diag(d) @ q.T)
    s = yaad.tensor(1.0, requires_grad=True)
    w, _ = sl.eigsh(s * yaad.sparse.asarray(a), k=1, which="LM", tol=1e-14)
    with pytest.raises(GaugeError, match="k cuts through"):
        w[0].backward()
    w, _ = sl.eigsh(s * yaad.sparse.asarray(a), k=2, which="LM", tol=1e-14)
    yaad.sum(w ** 2).backward()  # both: exact
    np.testing.assert_allclose(s.grad, 4 * 9.0, rtol=1e-10)


def test_eigsh_phase_dependent_loss_raises():
    a = sparse(True, 6, hermitian=True)
    s = yaad.tensor(1.0, requires_grad=True)
    w, v = sl.eigsh(s * yaad.sparse.asarray(a), k=1, which="SA")
    with pytest.raises(GaugeError, match="phases"):
        yaad.real(v[0, 0]).backward()


def test_eigsh_refuses_non_hermitian_and_reports_no_convergence():
    a = sparse(False, 7)  # not symmetric
    with pytest.raises(ValueError, match=r"not Hermitian.*eigs"):
        sl.eigsh(a, k=1)
    h = sparse(False, 8, hermitian=True, n=400, density=0.05)
    with pytest.raises(ConvergenceError, match=r"eigsh \(ARPACK\): no convergence after 2 "
                                               r"iterations.*eigenpairs converged"):
        sl.eigsh(h, k=3, which="SM", maxiter=2, tol=1e-15)


# ---- eigs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("complex_", [False, True])
def test_eigs_gradients_match_dense_eig(complex_):
    a = sparse(complex_, 9) + sps.eye(N) * 2
    b = sps.csr_array(sps.diags(RNG.standard_normal(N)))
    c = vec(True)

    def loss(w, v):
        return yaad.real(w[0]) + 0.3 * yaad.imag(w[1]) + yaad.sum(abs(yaad.matmul(c, v)) ** 2)

    def sparse_loss(th):
        w, v = sl.eigs(sparse_op(th, a, b), k=2, which="LM", tol=1e-14)
        order = np.argsort(-np.abs(w.data))
        return loss(w[order], v[:, order])

    def dense_loss(th):
        w, v = yaad.linalg.eig(dense_op(th, a, b))
        order = np.argsort(-np.abs(w.data))[:2]
        return loss(w[order], v[:, order])

    g = yaad.func.grad(sparse_loss)(TH0)
    np.testing.assert_allclose(g, yaad.func.grad(dense_loss)(TH0), rtol=1e-8, atol=1e-9)


def test_eigs_phase_dependent_loss_raises():
    a = sparse(True, 10) + sps.eye(N) * 2
    s = yaad.tensor(1.0, requires_grad=True)
    w, v = sl.eigs(s * yaad.sparse.asarray(a), k=1)
    with pytest.raises(GaugeError, match="phases"):
        yaad.imag(v[0, 0]).backward()


# ---- second derivatives and forward mode through eigs ----------------------------------------


def values(x):
    """The value of a tensor or an array, as an array (for orderings)."""
    return x.detach().numpy() if isinstance(x, yaad.Tensor) else np.asarray(x)


def hatano_nelson(th, lib=yaad, sparse_=True, n=24):
    """The Hatano-Nelson ring: hopping e^(+g) to the right and e^(-g) to the left, and a
    random potential of strength W, th = (g, W); a complex spectrum (the skin effect).
    A SparseTensor, or dense (``lib``: yaad or jax.numpy)."""
    rng = np.random.default_rng(3)
    right = sps.csr_array(sps.diags([np.ones(n - 1), [1.0]], [-1, n - 1]))
    terms = [right, sps.csr_array(right.T), sps.csr_array(sps.diags(rng.uniform(-1, 1, n)))]
    s = yaad.sparse.asarray if sparse_ else (lambda m: m.toarray())
    right, left, pot = (s(m) for m in terms)
    return lib.exp(th[0]) * right + lib.exp(-th[0]) * left + th[1] * pot


def hn_loss(w, v, lib):
    """Eigenvalues (real and imaginary parts) and phase-invariant eigenvector functions:
    the inverse participation ratio of v_0 and an overlap |c . v_1|^2."""
    c = np.linspace(-1.0, 1.0, v.shape[0])
    return (lib.real(w[0]) + lib.imag(w[1]) ** 2 + lib.sum(lib.abs(v[:, 0]) ** 4)
            + lib.abs(lib.sum(c * v[:, 1])) ** 2)


def hn_sparse(th):
    w, v = sl.eigs(hatano_nelson(th), k=3, which="LR", tol=1e-14, v0=np.ones(24))
    order = np.argsort(-values(w).real)
    return hn_loss(w[order], v[:, order], yaad)


HN_TH = np.array([0.4, 1.1])


@pytest.mark.filterwarnings("ignore::yaad.func.BatchingWarning")
def test_eigs_second_derivatives_and_forward_mode_of_the_hatano_nelson_ring():
    # against the dense yaad.linalg.eig, JAX (jax.lax.linalg.eig with its eigenvector
    # derivatives: jacfwd of jacfwd, jvp) and central differences of the first derivative
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def dense(th):
        w, v = yaad.linalg.eig(hatano_nelson(th, sparse_=False))
        order = np.argsort(-values(w).real)[:3]
        return hn_loss(w[order], v[:, order], yaad)

    def with_jax(th):
        w, v = jax.lax.linalg.eig(hatano_nelson(th, jnp, False), compute_left_eigenvectors=False,
                                  enable_eigvec_derivs=True)
        order = jnp.argsort(-jnp.real(jax.lax.stop_gradient(w)))[:3]
        return hn_loss(w[order], v[:, order], jnp)

    hess = yaad.func.jacrev(yaad.func.grad(hn_sparse))(HN_TH)
    assert hess.shape == (2, 2) and hess.dtype == np.float64
    want = np.asarray(jax.jit(jax.jacfwd(jax.jacfwd(with_jax)))(jnp.asarray(HN_TH)))
    np.testing.assert_allclose(hess, want, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(hess, yaad.func.jacrev(yaad.func.grad(dense))(HN_TH),
                               rtol=1e-9, atol=1e-10)
    grad = yaad.func.grad(hn_sparse)
    fd = np.stack([(grad(HN_TH + e) - grad(HN_TH - e)) / 2e-5 for e in 1e-5 * np.eye(2)])
    np.testing.assert_allclose(hess, fd, rtol=1e-6, atol=1e-7)
    t = np.array([0.3, -0.7])
    np.testing.assert_allclose(yaad.func.hvp(hn_sparse, (HN_TH,), (t,))[1], want @ t,
                               rtol=1e-9, atol=1e-10)
    _, tangent = yaad.func.jvp(hn_sparse, (HN_TH,), (t,))
    _, want_t = jax.jit(lambda x, y: jax.jvp(with_jax, (x,), (y,)))(jnp.asarray(HN_TH),
                                                                   jnp.asarray(t))
    np.testing.assert_allclose(tangent, float(want_t), rtol=1e-10)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.filterwarnings("ignore::yaad.func.BatchingWarning")
def test_eigs_second_derivatives_and_forward_mode_match_dense_eig(complex_):
    # A phase-invariant loss of eigenvalues and eigenvectors: reverse over reverse
    # (jacrev of grad), forward over reverse (hvp) and its tangent (jvp) against the dense
    # yaad.linalg.eig; the tangents of the eigenpairs against central differences of
    # numpy.linalg.eig (the eigenvectors' phases aligned: v_i^H dv_i = 0)
    a = sparse(complex_, 9) + sps.eye(N) * 2
    b = sps.csr_array(sps.diags(RNG.standard_normal(N)))
    c = vec(True)

    def loss(w, v):
        return (yaad.real(w[0]) + 0.3 * yaad.imag(w[1]) ** 2
                + yaad.sum(abs(yaad.matmul(c, v)) ** 2) + yaad.real(w[1] * abs(v[3, 1]) ** 2))

    def top(w, v, count=2):
        order = np.argsort(-np.abs(values(w)))[:count]
        return w[order], v[:, order]

    def sparse_loss(th):
        return loss(*top(*sl.eigs(sparse_op(th, a, b), k=2, which="LM", tol=1e-14)))

    def dense_loss(th):
        return loss(*top(*yaad.linalg.eig(dense_op(th, a, b))))

    hess = yaad.func.jacrev(yaad.func.grad(dense_loss))(TH0)
    np.testing.assert_allclose(yaad.func.jacrev(yaad.func.grad(sparse_loss))(TH0), hess,
                               rtol=1e-9, atol=1e-10)
    t = np.array([0.3, -1.1])
    np.testing.assert_allclose(yaad.func.hvp(sparse_loss, (TH0,), (t,))[1], hess @ t,
                               rtol=1e-9, atol=1e-10)
    _, tangent = yaad.func.jvp(sparse_loss, (TH0,), (t,))
    np.testing.assert_allclose(tangent, yaad.func.grad(dense_loss)(TH0) @ t, rtol=1e-10)
    (w, v), (dw, dv) = yaad.func.jvp(
        lambda th: top(*sl.eigs(sparse_op(th, a, b), k=2, which="LM", tol=1e-14)), (TH0,),
        (t,))
    w, v, dw, dv = (np.asarray(x) for x in (w, v, dw, dv))
    assert dw.dtype == dv.dtype == np.complex128 and dv.shape == (N, 2)
    np.testing.assert_allclose(np.sum(v.conj() * dv, axis=0), 0, atol=1e-10)

    def numpy_pairs(e):
        wd, vd = np.linalg.eig(dense_op(TH0 + e * t, a, b))
        order = np.argsort(-np.abs(wd))[:2]
        vd = vd[:, order]
        phase = np.sum(vd.conj() * v, axis=0)
        return wd[order], vd * phase / abs(phase)

    (wp, vp), (wm, vm) = numpy_pairs(1e-6), numpy_pairs(-1e-6)
    np.testing.assert_allclose(dw, (wp - wm) / 2e-6, rtol=1e-7)
    np.testing.assert_allclose(dv, (vp - vm) / 2e-6, atol=1e-7)


def liouvillian_terms(n=4, gamma=0.5):
    """A dissipative Ising chain (open, n spins): H = -sum Z_i Z_(i+1) - sum g_i Z_i
    - h sum X_i and decay sqrt(gamma) sigma^-_i, as the Liouvillian L0 + h L1 acting on
    row-major vec(rho); rho' = -i[H, rho] + sum (c rho c^H - {c^H c, rho} / 2)."""
    sx = sps.csr_array([[0.0, 1.0], [1.0, 0.0]])
    sz = sps.csr_array([[1.0, 0.0], [0.0, -1.0]])
    sm = sps.csr_array([[0.0, 0.0], [1.0, 0.0]])

    def site(o, i):
        m = sps.eye(1, format="csr")
        for j in range(n):
            m = sps.kron(m, o if j == i else sps.eye(2), format="csr")
        return m

    one = sps.eye(2 ** n, format="csr")
    h0 = -sum(site(sz, i) @ site(sz, i + 1) for i in range(n - 1)) - sum(
        (0.3 + 0.06 * i) * site(sz, i) for i in range(n))
    x = -sum(site(sx, i) for i in range(n))

    def commutator(h):
        return -1j * (sps.kron(h, one) - sps.kron(one, h.T))

    l0 = commutator(h0)
    for i in range(n):
        c = np.sqrt(gamma) * site(sm, i)
        cc = c.T @ c
        l0 = l0 + sps.kron(c, c) - 0.5 * sps.kron(cc, one) - 0.5 * sps.kron(one, cc.T)
    return sps.csr_array(l0), sps.csr_array(commutator(x))


@pytest.mark.parametrize("h", [0.4, 1.0])
def test_liouvillian_gap_second_derivative_against_exact_diagonalisation(h):
    # The slowest decay rate (the Liouvillian gap) Delta(h) = -Re lambda_1 of a dissipative
    # Ising chain (256 x 256, non-normal): d^2 Delta / dh^2 by grad of grad, hvp and jvp of
    # grad, against second-order perturbation theory on numpy.linalg.eig of the dense
    # Liouvillian (left eigenvectors: rows of V^-1), and second differences of its exact
    # spectrum. At h = 0.4 the slowest mode is a complex pair (-0.367 +- 3.51i), at h = 1
    # a real one (-0.467). (Restarted GMRES stalls on the bordered systems of such
    # eigenvalues, interior to the field of values; the sparse LU does not.)
    l0, l1 = liouvillian_terms()

    def gap(hh):
        # (v0: ARPACK's random start missed lambda_1 in about 1 of 20 runs)
        w = sl.eigs(yaad.sparse.asarray(l0) + hh * yaad.sparse.asarray(l1), k=4, which="LR",
                    tol=1e-14, v0=np.ones(256), return_eigenvectors=False)
        return -yaad.real(w[np.argsort(-values(w).real)[1]])

    w, r = np.linalg.eig((l0 + h * l1).toarray())
    i = np.argsort(-w.real)[1]
    m = np.linalg.solve(r, l1 @ r)
    others = np.arange(w.size) != i
    exact = -np.real(2 * np.sum(m[i, others] * m[others, i] / (w[i] - w[others])))
    got = yaad.func.grad(yaad.func.grad(gap))(h)
    assert np.ndim(got) == 0 and np.asarray(got).dtype == np.float64
    np.testing.assert_allclose(got, exact, rtol=1e-10)
    np.testing.assert_allclose(yaad.func.hvp(gap, (np.float64(h),), (np.float64(1.0),))[1],
                               exact, rtol=1e-10)
    np.testing.assert_allclose(yaad.func.jvp(yaad.func.grad(gap), (h,), (1.0,))[1], exact,
                               rtol=1e-10)
    ed = lambda hh: -np.sort(np.linalg.eigvals((l0 + hh * l1).toarray()).real)[-2]  # noqa: E731
    fd = lambda e: (ed(h + e) - 2 * ed(h) + ed(h - e)) / e ** 2  # noqa: E731
    np.testing.assert_allclose(got, (4 * fd(1e-3) - fd(2e-3)) / 3, rtol=1e-6)


def test_eigs_forward_mode_and_second_order_at_a_degenerate_level():
    # A non-normal A = S diag(-2, -1, -1, -1, 0.5 .. 3) S^-1 by eigs, k = 4: the "singlet"
    # and the whole "triplet". As at first order: a tangent that keeps the triplet
    # degenerate (along A itself: dw = w) has a derivative, one that splits it (along
    # S diag(0, -1, 0, 1, 0 ..) S^-1, which commutes with A) raises, as does a second
    # derivative that reaches it: of its sum, or of any loss whose cotangent is
    # differentiated (every computed pair enters). A second derivative of the singlet is
    # exact with a constant cotangent (its real part), or with k = 1 (its square): central
    # differences of the first derivative. The triplet's sum has the first derivative
    # tr(P dA), P its spectral projector.
    rng = np.random.default_rng(8)
    n = 16
    sv = np.eye(n) + 0.3 * rng.standard_normal((n, n))
    si = np.linalg.inv(sv)
    d = np.array([-2.0, -1, -1, -1, *np.linspace(0.5, 3, n - 4)])
    a = sps.csr_array(sv @ np.diag(d) @ si)
    split = sps.csr_array(sv @ np.diag([0.0, -1, 0, 1] + [0] * (n - 4)) @ si)
    e1, e2 = (sps.csr_array(np.where(rng.random((n, n)) < 0.3, rng.standard_normal((n, n)),
                                     0)) for _ in range(2))
    s = yaad.sparse.asarray

    def pairs(th, op=None, k=4):
        op = s(a) + th[0] * s(e1) + th[1] * s(e2) if op is None else op
        w, v = sl.eigs(op, k=k, which="SR", tol=1e-14, v0=np.ones(n))
        order = np.argsort(values(w).real)
        return w[order], v[:, order]

    (w, _), (dw, _) = yaad.func.jvp(lambda t: pairs(None, t * s(a)), (1.0,), (1.0,))
    np.testing.assert_allclose(dw, w, atol=1e-11)
    np.testing.assert_allclose(w, [-2, -1, -1, -1], atol=1e-11)
    with pytest.raises(GaugeError, match="couples the vectors of a degenerate level"):
        yaad.func.jvp(lambda b: pairs(None, s(a) + b * s(split)), (0.0,), (1.0,))
    zero = np.zeros(2)
    for k, f in ((4, lambda w: yaad.real(w[0])), (1, lambda w: yaad.real(w[0]) ** 2)):
        def singlet(th, k=k, f=f):
            return f(pairs(th, k=k)[0])

        grad = yaad.func.grad(singlet)
        fd = np.stack([(grad(zero + e) - grad(zero - e)) / 2e-5 for e in 1e-5 * np.eye(2)])
        np.testing.assert_allclose(yaad.func.jacrev(grad)(zero), fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(GaugeError, match="degenerate eigenvalue -1.*compute fewer"):
        yaad.func.jacrev(yaad.func.grad(lambda th: yaad.real(pairs(th)[0][0]) ** 2))(zero)
    triplet = lambda th: yaad.sum(yaad.real(pairs(th)[0][1:]))  # noqa: E731
    p = sv[:, 1:4] @ si[1:4]
    np.testing.assert_allclose(yaad.func.grad(triplet)(zero),
                               [np.sum(p.T * e1.toarray()), np.sum(p.T * e2.toarray())],
                               atol=1e-10)
    with pytest.raises(GaugeError, match="degenerate eigenvalue -1"):
        yaad.func.hvp(triplet, (zero,), (np.ones(2),))


# ---- expm_multiply --------------------------------------------------------------------------


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("hermitian", [False, True])
def test_expm_multiply_gradients_match_dense_expm(complex_, hermitian):
    a, b = two_terms(complex_, hermitian)
    x0 = vec(True)
    c = vec(True)

    def sparse_loss(th, t, x):
        y = sl.expm_multiply(-1j * t * sparse_op(th, a, b), x)
        return yaad.sum(abs(y[:5]) ** 2) + yaad.real(yaad.vdot(c, y))

    def dense_loss(th, t, x):
        y = yaad.linalg.expm(-1j * t * dense_op(th, a, b)) @ x
        return yaad.sum(abs(y[:5]) ** 2) + yaad.real(yaad.vdot(c, y))

    args = (TH0, 1.7, x0)
    np.testing.assert_allclose(float(sparse_loss(*args)), float(dense_loss(*args)),
                               rtol=1e-12)
    got = yaad.func.grad(sparse_loss, argnums=(0, 1, 2))(*args)
    want = yaad.func.grad(dense_loss, argnums=(0, 1, 2))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


def test_expm_multiply_real_batch_and_time_grid():
    a = sparse(False, 12)
    x0 = RNG.standard_normal((N, 3))
    y = sl.expm_multiply(yaad.sparse.asarray(a), x0)
    np.testing.assert_allclose(y, spla.expm_multiply(a, x0), rtol=1e-12)
    ys = sl.expm_multiply(a, x0[:, 0], start=0.0, stop=2.0, num=5)
    np.testing.assert_allclose(ys, spla.expm_multiply(a, x0[:, 0], start=0.0, stop=2.0,
                                                      num=5, endpoint=True), rtol=1e-11)
    s = yaad.tensor(0.5, requires_grad=True)
    ys = sl.expm_multiply(s * yaad.sparse.asarray(a), x0, start=0.0, stop=2.0, num=3)
    yaad.sum(ys ** 2).backward()
    g = yaad.func.grad(lambda sv: yaad.sum(yaad.stack(
        [yaad.linalg.expm(t * sv * a.toarray()) @ x0 for t in (0.0, 1.0, 2.0)]) ** 2))(0.5)
    np.testing.assert_allclose(s.grad, g, rtol=1e-9)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.filterwarnings("ignore::yaad.func.BatchingWarning")
def test_expm_multiply_second_order_and_forward_mode_match_dense_expm(complex_):
    """Hessians (grad of grad, forward over reverse), Hessian-vector products and jvp
    through expm_multiply against yaad.linalg.expm and, for the Hessian in (theta, t),
    central differences of SciPy's dense expm."""
    import scipy.linalg

    a, b = two_terms(complex_, False)
    x0 = vec(True)
    c = vec(True)

    def loss(y):
        return yaad.sum(abs(y[:5]) ** 2) + yaad.real(yaad.vdot(c, y))

    def sparse_loss(p):
        return loss(sl.expm_multiply(-1j * p[2] * sparse_op(p[:2], a, b), x0))

    def dense_loss(p):
        return loss(yaad.linalg.expm(-1j * p[2] * dense_op(p[:2], a, b)) @ x0)

    def scipy_loss(p):
        y = scipy.linalg.expm(-1j * p[2] * (p[0] * a.toarray() + p[1] * b.toarray())) @ x0
        return np.sum(abs(y[:5]) ** 2) + np.real(np.vdot(c, y))

    p0 = np.array([0.7, 1.3, 0.9])
    h = yaad.func.jacrev(yaad.func.grad(sparse_loss))(p0)
    np.testing.assert_allclose(h, yaad.func.jacrev(yaad.func.grad(dense_loss))(p0),
                               rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(yaad.func.hessian(sparse_loss)(p0), h, rtol=1e-9, atol=1e-10)
    eps, fd = 1e-4, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            ei, ej = np.eye(3)[i] * eps, np.eye(3)[j] * eps
            fd[i, j] = (scipy_loss(p0 + ei + ej) - scipy_loss(p0 + ei - ej)
                        - scipy_loss(p0 - ei + ej) + scipy_loss(p0 - ei - ej)) / (4 * eps**2)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-5)
    u = np.array([0.3, -0.5, 0.2])
    np.testing.assert_allclose(yaad.func.hvp(sparse_loss, (p0,), (u,))[1], h @ u,
                               rtol=1e-9, atol=1e-10)
    # jvp in theta and in B; the second derivative with respect to the cotangent
    du = vec(True)
    y, t = yaad.func.jvp(lambda p, x: sl.expm_multiply(-1j * p[2] * sparse_op(p[:2], a, b), x),
                         (p0, x0), (u, du))
    yd, td = yaad.func.jvp(
        lambda p, x: yaad.linalg.expm(-1j * p[2] * dense_op(p[:2], a, b)) @ x, (p0, x0),
        (u, du))
    assert t.dtype == td.dtype and t.shape == (N,)
    np.testing.assert_allclose(y, yd, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(t, td, rtol=1e-10, atol=1e-11)

    def through_cotangent(f, g):
        return yaad.func.grad(lambda gg: yaad.sum(yaad.func.vjp(f, p0)[1](gg)[0] ** 2))(g)

    g0 = vec(True)
    np.testing.assert_allclose(
        through_cotangent(lambda p: sl.expm_multiply(-1j * p[2] * sparse_op(p[:2], a, b), x0),
                          g0),
        through_cotangent(lambda p: yaad.linalg.expm(-1j * p[2] * dense_op(p[:2], a, b)) @ x0,
                          g0), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("scale", [1.0, 12.0])
def test_expm_multiply_takes_scipys_steps(scale):
    """The step count of Al-Mohy and Higham's selection as SciPy chooses it (|A|_1 small:
    from the norm, the same; large: from estimates of |A^p|_1^(1/p), within one), and an
    error against scipy.linalg.expm within twice SciPy's (real, complex, sparse, dense, a
    batch)."""
    import scipy.linalg
    import scipy.sparse.linalg._expm_multiply as em

    rng = np.random.default_rng(5)
    for a in (scale * sparse(False, 3), scale * sparse(True, 4, hermitian=True) * 1j,
              scale * rng.standard_normal((N, N)) / 3):
        for x in (rng.standard_normal(N), rng.standard_normal((N, 2)) + 1j):
            seen = {}
            core = em._expm_multiply_simple_core

            def spy(A, B, t, mu, m, s, *rest, seen=seen, core=core):
                seen["steps"] = s
                return core(A, B, t, mu, m, s, *rest)

            em._expm_multiply_simple_core = spy
            try:
                want = spla.expm_multiply(a, x)
            finally:
                em._expm_multiply_simple_core = core
            op = sl._operator(yaad.sparse.asarray(a), "test")
            problem = sl._Expm(op, x, None, False)
            # the |A^p|_1 estimates are lower bounds by different block estimators
            assert abs(problem.steps - seen["steps"]) <= 1
            assert max(problem.counts) <= 55
            got = sl.expm_multiply(yaad.sparse.asarray(a), x).data
            exact = scipy.linalg.expm(a.toarray() if sps.issparse(a) else a) @ x
            scipy_error = np.abs(want - exact).max()
            assert np.abs(got - exact).max() <= 2 * scipy_error + 1e-14 * np.abs(exact).max()


@pytest.mark.parametrize("complex_", [False, True])
def test_expm_multiply_keeps_a_sparse_operator_sparse_and_shifts_by_the_trace(complex_):
    """A sparse operator with a few nonzeros a column stays sparse from n of about 130 on
    (SciPy's sparse product is then faster than a dense one), a small or dense one is made
    dense; either way the shift by tr(A)/n is taken where it lowers |A|_1, with the norm of
    the shifted matrix (both norms from one pass over |A|; against the explicit shift), and
    the values match scipy.linalg.expm."""
    import scipy.linalg

    for n, density, kept_sparse in ((300, 5 / 300, True), (60, 0.2, False), (300, 0.6, False)):
        a = sparse(complex_, 3, n=n, density=density)
        x = vec(complex_, (n,))
        # a trace whose shift lowers the norm; one whose shift raises the largest column
        for diag in (2 + np.arange(n) / n, np.where(np.arange(n), -1.0, 50.0)):
            shifted_here = sps.csr_array(a + sps.diags(diag))  # a trace; a shift that helps
            op = sl._operator(yaad.sparse.asarray(shifted_here), "test")
            problem = sl._Expm(op, x, None, False)
            assert sps.issparse(problem.mv.__self__) == kept_sparse
            for m in (shifted_here, shifted_here.toarray()):
                mu = m.trace() / n
                got, mu_got, norm = sl._shifted(m, mu)
                explicit = m.toarray() if sps.issparse(m) else m
                norms = [np.abs(explicit - s * np.eye(n)).sum(axis=0).max() for s in (0, mu)]
                assert mu_got == (mu if norms[1] < norms[0] else 0)
                assert mu_got == (mu if diag[0] < 50 else 0)
                np.testing.assert_allclose(norm, min(norms), rtol=1e-14)
                dense_got = got.toarray() if sps.issparse(got) else got
                assert np.array_equal(dense_got, explicit - mu_got * np.eye(n))
            want = scipy.linalg.expm(shifted_here.toarray()) @ x
            got = sl.expm_multiply(yaad.sparse.asarray(shifted_here), x).data
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


# ---- linear solvers ---------------------------------------------------------------------------


def spd(complex_):
    a = sparse(complex_, 13)
    return sps.csr_array(a @ a.conj().T + sps.eye(N))


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("name", ["cg", "minres", "gmres", "spsolve"])
def test_solvers_gradients_match_dense_solve(name, complex_):
    m = spd(complex_) if name in ("cg", "minres") else sparse(complex_, 14) + sps.eye(N)
    eye = sps.eye(N, format="csr")
    solver = getattr(sl, name)
    weights = np.arange(N) / N

    def sparse_loss(th, b):
        h = sparse_op(th, m, eye)
        x = solver(h, b) if name == "spsolve" else solver(h, b, rtol=1e-13)[0]
        return yaad.sum(abs(x) ** 2 * weights)

    def dense_loss(th, b):
        return yaad.sum(abs(yaad.linalg.solve(dense_op(th, m, eye), b)) ** 2 * weights)

    args = (TH0, vec(complex_))
    got = yaad.func.grad(sparse_loss, argnums=(0, 1))(*args)
    want = yaad.func.grad(dense_loss, argnums=(0, 1))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)


def test_solve_gradient_with_respect_to_the_nonzeros():
    m = spd(False)
    vals = yaad.tensor(m.data.copy(), requires_grad=True)
    b = RNG.standard_normal(N)
    x, info = sl.cg(yaad.sparse.csr_array((vals, m.indices, m.indptr), shape=m.shape), b,
                    rtol=1e-13)
    assert info == 0
    yaad.sum(x ** 2).backward()
    md = yaad.tensor(m.toarray(), requires_grad=True)
    yaad.sum(yaad.linalg.solve(md, b) ** 2).backward()
    rows = np.repeat(np.arange(N), np.diff(m.indptr))
    np.testing.assert_allclose(vals.grad, md.grad[rows, m.indices], rtol=1e-8, atol=1e-12)


def test_solver_errors():
    with pytest.raises(ConvergenceError, match=r"sparse.linalg.cg: no convergence after 2 "
                                               r"iterations: the relative residual is"):
        sl.cg(spd(False), np.ones(N), rtol=1e-14, maxiter=2)
    with pytest.raises(ValueError, match="not Hermitian"):
        sl.cg(sparse(False, 15), np.ones(N))
    with pytest.raises(TypeError, match="matrix-free"):
        sl.spsolve(sl.LinearOperator((N, N), lambda v: v), np.ones(N))
    with pytest.raises(TypeError, match="needs its shape"):
        sl.gmres(lambda v: v, np.ones(N))


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("name,preconditioned", [
    ("cg", False), ("cg", True), ("minres", False), ("minres", True), ("gmres", False),
    ("gmres", True), ("spsolve", False)])
@pytest.mark.filterwarnings("ignore::yaad.func.BatchingWarning")
def test_solvers_second_order_forward_mode_and_preconditioners(name, preconditioned,
                                                               complex_):
    # Hessians (reverse over reverse), Hessian-vector products (forward over reverse) and
    # JVPs through each solver, with and without a preconditioner, against the dense solve
    m = spd(complex_) if name in ("cg", "minres") else sparse(complex_, 14) + sps.eye(N)
    eye = sps.eye(N, format="csr")
    jacobi = sps.diags(1 / m.diagonal()) if preconditioned else None
    if preconditioned and name == "gmres":
        jacobi = sps.diags(1 / (m.diagonal() + (1j if complex_ else 0.5)))  # M^H != M
    weights = np.arange(N) / N
    b0 = vec(complex_)

    def solve(th, b):
        h = sparse_op(th, m, eye)
        if name == "spsolve":
            return sl.spsolve(h, b)
        return getattr(sl, name)(h, b, rtol=1e-13, M=jacobi)[0]

    def sparse_loss(th, b):
        return yaad.sum(abs(solve(th, b)) ** 2 * weights)

    def dense_loss(th, b):
        return yaad.sum(abs(yaad.linalg.solve(dense_op(th, m, eye), b)) ** 2 * weights)

    u = np.array([0.3, -0.5])
    np.testing.assert_allclose(yaad.func.jacrev(yaad.func.grad(sparse_loss))(TH0, b0),
                               yaad.func.jacrev(yaad.func.grad(dense_loss))(TH0, b0),
                               rtol=1e-8, atol=1e-10)
    v = vec(complex_)  # grad of <v, grad_b loss> (a real scalar) for b and theta

    def second(loss):
        return yaad.func.grad(lambda th, b: yaad.sum(yaad.real(
            np.conj(v) * yaad.func.grad(loss, 1)(th, b))), (0, 1))(TH0, b0)

    for got, want in zip(second(sparse_loss), second(dense_loss)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(yaad.func.hvp(lambda th: sparse_loss(th, b0), (TH0,), (u,))[1],
                               yaad.func.hvp(lambda th: dense_loss(th, b0), (TH0,), (u,))[1],
                               rtol=1e-8, atol=1e-10)
    x, t = yaad.func.jvp(lambda th: solve(th, b0), (TH0,), (u,))
    xd, td = yaad.func.jvp(lambda th: yaad.linalg.solve(dense_op(th, m, eye), b0), (TH0,),
                           (u,))
    assert t.dtype == xd.dtype and t.shape == (N,)
    np.testing.assert_allclose(x, xd, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(t, td, rtol=1e-8, atol=1e-10)


def test_preconditioned_cg_applies_the_preconditioner_and_keeps_the_gradient():
    # an ill-conditioned diagonal-dominated SPD matrix: Jacobi preconditioning
    d = np.logspace(0, 6, N)
    a = sps.csr_array(sps.diags(d) + 0.1 * spd(False))
    counts = []
    for m in (None, sps.diags(1 / a.diagonal())):
        count = [0]
        b = yaad.tensor(np.ones(N), requires_grad=True)
        x, _ = sl.cg(a, b, rtol=1e-12, maxiter=10 * N,
                     M=None if m is None else spla.LinearOperator(
                         (N, N), matvec=lambda v, m=m, count=count: (
                             count.__setitem__(0, count[0] + 1), m @ v)[1]))
        yaad.sum(x * x).backward()
        np.testing.assert_allclose(b.grad, 2 * np.linalg.solve(
            a.toarray(), np.linalg.solve(a.toarray(), np.ones(N))), rtol=1e-8)
        counts.append(count[0])
    assert counts[0] == 0 and counts[1] > 0


def test_dense_tensor_and_float32_operators():
    a = RNG.standard_normal((8, 8))
    a = a + a.T
    t = yaad.tensor(a, requires_grad=True)
    w, _ = sl.eigsh(t, k=2, which="SA")
    (w[0] + w[1]).backward()
    td = yaad.tensor(a, requires_grad=True)
    wd, _ = yaad.linalg.eigh(td)
    (wd[0] + wd[1]).backward()
    # eigh reads one triangle: compare along symmetric perturbations
    np.testing.assert_allclose(t.grad + t.grad.T, td.grad + td.grad.T, atol=1e-12)
    m = spd(False).astype(np.float32)
    b = yaad.tensor(np.ones(N, dtype=np.float32), requires_grad=True)
    x, _ = sl.cg(m, b, rtol=1e-6)
    assert x.dtype == np.float32
    yaad.sum(x).backward()
    assert b.grad.dtype == np.float32
    np.testing.assert_allclose(b.grad, np.linalg.solve(m.toarray().astype(float), np.ones(N)),
                               rtol=1e-4)


# ---- second derivatives through eigsh --------------------------------------------------


def tfim_terms(L):
    """-sum Z_i Z_(i+1) and -sum X_i of the periodic transverse-field Ising chain."""
    sx = sps.csr_array([[0.0, 1.0], [1.0, 0.0]])
    sz = sps.csr_array([[1.0, 0.0], [0.0, -1.0]])

    def site(op, i):
        m = sps.eye(1, format="csr")
        for j in range(L):
            m = sps.kron(m, op if j == i else sps.eye(2), format="csr")
        return m

    zz = sum(site(sz, i) @ site(sz, (i + 1) % L) for i in range(L))
    x = sum(site(sx, i) for i in range(L))
    return sps.csr_array(-zz), sps.csr_array(-x)


@pytest.mark.parametrize("h", [0.7, 1.0, 1.5])
def test_tfim_second_derivative_of_the_ground_state_energy_against_exact_diagonalisation(h):
    # d^2 E0 / dh^2 = -2 sum_n |<n|X|0>|^2 / (E_n - E_0) (second-order perturbation theory
    # on numpy.linalg.eigh of the dense Hamiltonian) and finite differences of the exact
    # ground-state energy
    zz, x = tfim_terms(8)

    def e0(hh):
        w, _ = sl.eigsh(yaad.sparse.asarray(zz) + hh * yaad.sparse.asarray(x), k=1,
                        which="SA", tol=1e-14)
        return w[0]

    w, v = np.linalg.eigh((zz + h * x).toarray())
    m = v.T @ (x @ v[:, 0])
    exact = -2 * np.sum(m[1:] ** 2 / (w[1:] - w[0]))
    got = yaad.func.grad(yaad.func.grad(e0))(h)
    assert np.ndim(got) == 0 and np.asarray(got).dtype == np.float64
    np.testing.assert_allclose(got, exact, rtol=1e-9)
    ed = lambda hh: np.linalg.eigvalsh((zz + hh * x).toarray())[0]  # noqa: E731
    fd = lambda e: (ed(h + e) - 2 * ed(h) + ed(h - e)) / e ** 2  # noqa: E731
    np.testing.assert_allclose(got, (4 * fd(1e-3) - fd(2e-3)) / 3, rtol=1e-6)


@pytest.mark.parametrize("h", [0.5, 1.0, 1.5])
def test_tfim_fidelity_susceptibility_by_differentiating_the_ground_state(h):
    # chi_F = sum_(n>0) |<n|dH/dh|0>|^2 / (E_n - E_0)^2 (exact diagonalisation), from the
    # ground state's tangent (jvp: <dpsi|dpsi> - |<psi|dpsi>|^2) and from the curvature of
    # the fidelity, -d^2/dh'^2 log|<psi0(h)|psi0(h')>| at h' = h (grad of grad; hvp). At
    # h = 0.5 an odd-parity state lies 1.5e-3 above the ground state; dH|0> has no overlap
    # with it, and the projected solves converge.
    zz, x = tfim_terms(8)

    def psi(hh):
        _, v = sl.eigsh(yaad.sparse.asarray(zz) + hh * yaad.sparse.asarray(x), k=1,
                        which="SA", tol=1e-14)
        return v[:, 0]

    w, v = np.linalg.eigh((zz + h * x).toarray())
    m = v.T @ (x @ v[:, 0])
    exact = np.sum(m[1:] ** 2 / (w[1:] - w[0]) ** 2)
    p, dp = yaad.func.jvp(psi, (h,), (1.0,))
    p, dp = np.asarray(p), np.asarray(dp)
    assert dp.shape == (256,) and dp.dtype == np.float64
    np.testing.assert_allclose(np.vdot(dp, dp) - abs(np.vdot(p, dp)) ** 2, exact, rtol=1e-10)

    def log_overlap(hh):
        return -yaad.log(abs(yaad.sum(psi(hh) * p)))

    np.testing.assert_allclose(yaad.func.grad(yaad.func.grad(log_overlap))(h), exact,
                               rtol=1e-10)
    np.testing.assert_allclose(yaad.func.hvp(log_overlap, (np.float64(h),),
                                             (np.float64(1.0),))[1], exact, rtol=1e-10)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.filterwarnings("ignore::yaad.func.BatchingWarning")
def test_eigsh_hessian_of_eigenvalues_matches_dense_eigh(complex_):
    a, b = two_terms(complex_, True)

    def sparse_loss(th):
        w, _ = sl.eigsh(sparse_op(th, a, b), k=3, which="SA", tol=1e-14)
        return w[0] + 2 * w[1] - w[2] ** 2

    def dense_loss(th):
        w, _ = yaad.linalg.eigh(dense_op(th, a, b))
        return w[0] + 2 * w[1] - w[2] ** 2

    np.testing.assert_allclose(yaad.func.jacrev(yaad.func.grad(sparse_loss))(TH0),
                               yaad.func.jacrev(yaad.func.grad(dense_loss))(TH0),
                               rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.filterwarnings("ignore::yaad.func.BatchingWarning")
def test_eigsh_second_derivatives_and_forward_mode_of_eigenvector_losses(complex_):
    # A phase-invariant loss of eigenvalues and eigenvectors: its Hessian by reverse over
    # reverse (jacrev of grad) and forward over reverse (hvp), and its tangent (jvp),
    # against the dense yaad.linalg.eigh (itself checked against finite differences)
    a, b = two_terms(complex_, True)
    c = vec(complex_)

    def loss(w, v):
        return (yaad.sum(abs(yaad.conj(c) @ v[:, 0]) ** 2) + w[1] * abs(v[3, 1]) ** 2
                + yaad.real((v @ yaad.conj(v).T)[2, 5]))

    def sparse_loss(th):
        return loss(*sl.eigsh(sparse_op(th, a, b), k=3, which="SA", tol=1e-14))

    def dense_loss(th):
        w, v = yaad.linalg.eigh(dense_op(th, a, b))
        return loss(w[:3], v[:, :3])

    hess = yaad.func.jacrev(yaad.func.grad(dense_loss))(TH0)
    np.testing.assert_allclose(yaad.func.jacrev(yaad.func.grad(sparse_loss))(TH0), hess,
                               rtol=1e-7, atol=1e-9)
    t = np.array([0.3, -1.1])
    _, hv = yaad.func.hvp(sparse_loss, (TH0,), (t,))
    np.testing.assert_allclose(hv, hess @ t, rtol=1e-7, atol=1e-9)
    _, tangent = yaad.func.jvp(sparse_loss, (TH0,), (t,))
    np.testing.assert_allclose(tangent, yaad.func.grad(dense_loss)(TH0) @ t, rtol=1e-8)
    # the eigenvectors' tangents themselves: v_i^H dv_i = 0 (the phase fixed), checked
    # against central differences of the dense eigenvectors aligned in phase
    (w, v), (dw, dv) = yaad.func.jvp(
        lambda th: sl.eigsh(sparse_op(th, a, b), k=3, which="SA", tol=1e-14), (TH0,), (t,))
    dense = lambda e: np.linalg.eigh(dense_op(TH0 + e * t, a, b))  # noqa: E731
    (wp, vp), (wm, vm) = dense(1e-6), dense(-1e-6)
    np.testing.assert_allclose(dw, (wp[:3] - wm[:3]) / 2e-6, rtol=1e-6, atol=1e-8)
    v = np.asarray(v)
    align = lambda u: u * (np.sum(u.conj() * v, axis=0) / abs(np.sum(u.conj() * v, axis=0)))  # noqa: E731,E501
    np.testing.assert_allclose(dv, (align(vp[:, :3]) - align(vm[:, :3])) / 2e-6, atol=1e-6)
    assert np.asarray(dv).dtype == v.dtype and np.asarray(dw).dtype == np.float64


