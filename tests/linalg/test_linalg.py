"""yaad.linalg without the spectral decompositions (see test_linalg_spectral.py).

Every function: values, shapes and dtypes equal to NumPy's (SciPy's for expm, logm, sqrtm,
solve_triangular); gradients against central finite differences on real and complex
inputs, unbatched and batched (3, 4, n, n), reverse and forward mode; second derivatives
of the main ones; float32 kept; known closed-form gradients; errors.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import scipy.linalg as sla

import yaad
from tests.support.linalg_inputs import BATCHES, COMPLEX, data, general, herm, posdef, rand
from yaad.testing import gradcheck, gradgradcheck

L = yaad.linalg


def _lstsq_ref(a, b):
    """numpy.linalg.lstsq's x, looped over a batch."""
    vec = b.ndim == 1
    batch = np.broadcast_shapes(a.shape[:-2], () if vec else b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = b if vec else np.broadcast_to(b, batch + b.shape[-2:])
    out = [np.linalg.lstsq(a[i], b if vec else b[i], rcond=None)[0] for i in np.ndindex(*batch)]
    return np.array(out).reshape(batch + out[0].shape)


def _sq(n=3):
    return lambda r, b, c: (general(r, b, n, c),)


def _right_half_plane(r, b, c):
    """Eigenvalues with positive real parts: away from the branch cut of logm and sqrtm."""
    return (0.5 * rand(r, b + (3, 3), c) + 3 * np.eye(3),)


def _tall(r, b, c):
    return (rand(r, b + (4, 3), c),)


def _wide(r, b, c):
    return (rand(r, b + (3, 4), c),)


# name: (function, inputs(rng, batch, complex), NumPy/SciPy reference or None,
#        batched: True for the batches () and (3, 4), False for () only, or a list)
CASES = {
    "inv": (L.inv, _sq(), np.linalg.inv, True),
    "det": (L.det, _sq(), np.linalg.det, True),
    "slogdet.logabsdet": (lambda a: L.slogdet(a).logabsdet, _sq(),
                          lambda a: np.linalg.slogdet(a).logabsdet, True),
    "slogdet.sign": (lambda a: L.slogdet(a).sign, _sq(), lambda a: np.linalg.slogdet(a).sign,
                     True),
    "solve": (L.solve, lambda r, b, c: (general(r, b, 3, c), rand(r, b + (3, 2), c)),
              np.linalg.solve, True),
    "solve.vector": (L.solve, lambda r, b, c: (general(r, b, 3, c), rand(r, (3,), c)),
                     np.linalg.solve, True),
    "pinv.tall": (L.pinv, _tall, np.linalg.pinv, True),
    "pinv.wide": (L.pinv, _wide, np.linalg.pinv, True),
    # eigenvalues away from 0 (the Hermitian part of _sq() can be nearly singular there)
    "pinv.hermitian": (lambda a: L.pinv(herm(a), hermitian=True),
                       lambda r, b, c: (posdef(r, b, 3, c),), None, True),
    "lstsq.x": (lambda a, b: L.lstsq(a, b)[0],
                lambda r, b, c: (rand(r, b + (5, 3), c), rand(r, b + (5, 2), c)),
                _lstsq_ref, True),
    "lstsq.x.vector": (lambda a, b: L.lstsq(a, b)[0],
                       lambda r, b, c: (rand(r, b + (5, 3), c), rand(r, (5,), c)),
                       _lstsq_ref, True),
    "lstsq.x.wide": (lambda a, b: L.lstsq(a, b)[0],
                     lambda r, b, c: (rand(r, b + (2, 4), c), rand(r, b + (2, 3), c)),
                     _lstsq_ref, True),
    "lstsq.residuals": (lambda a, b: L.lstsq(a, b)[1],
                        lambda r, b, c: (rand(r, (5, 3), c), rand(r, (5, 2), c)),
                        lambda a, b: np.linalg.lstsq(a, b)[1], False),
    "lstsq.s": (lambda a, b: L.lstsq(a, b)[3],
                lambda r, b, c: (rand(r, (5, 3), c), rand(r, (5,), c)),
                lambda a, b: np.linalg.lstsq(a, b)[3], False),
    "cholesky": (lambda a: L.cholesky(herm(a)), lambda r, b, c: (posdef(r, b, 3, c),),
                 np.linalg.cholesky, True),
    "cholesky.upper": (lambda a: L.cholesky(herm(a), upper=True),
                       lambda r, b, c: (posdef(r, b, 3, c),),
                       lambda a: np.linalg.cholesky(a, upper=True), True),
    "solve_triangular.lower": (
        lambda a, b: L.solve_triangular(a, b, lower=True),
        lambda r, b, c: (general(r, b, 3, c), rand(r, b + (3, 2), c)),
        lambda a, b: sla.solve_triangular(a, b, lower=True), True),
    "solve_triangular.upper.T": (
        lambda a, b: L.solve_triangular(a, b, trans="T"),
        lambda r, b, c: (general(r, b, 3, c), rand(r, b + (3, 2), c)),
        lambda a, b: sla.solve_triangular(a, b, trans="T"), True),
    "solve_triangular.lower.C.unit": (
        lambda a, b: L.solve_triangular(a, b, trans=2, lower=True, unit_diagonal=True),
        lambda r, b, c: (general(r, b, 3, c), rand(r, b + (3, 2), c)),
        lambda a, b: sla.solve_triangular(a, b, trans=2, lower=True, unit_diagonal=True),
        True),
    "solve_triangular.vector": (
        lambda a, b: L.solve_triangular(a, b, trans=1, lower=True),
        lambda r, b, c: (general(r, b, 3, c), rand(r, (3,), c)),
        lambda a, b: sla.solve_triangular(a, b, trans=1, lower=True), True),
    "trace": (lambda a: L.trace(a, offset=1), lambda r, b, c: (rand(r, b + (3, 4), c),),
              lambda a: np.linalg.trace(a, offset=1), True),
    "diagonal": (lambda a: L.diagonal(a, offset=-1), lambda r, b, c: (rand(r, b + (4, 3), c),),
                 lambda a: np.linalg.diagonal(a, offset=-1), True),
    "cross": (L.cross, lambda r, b, c: (rand(r, b + (3,), c), rand(r, (3,), c)),
              np.linalg.cross, True),
    "outer": (L.outer, lambda r, b, c: (rand(r, (3,), c), rand(r, (2,), c)), np.linalg.outer,
              False),
    "tensordot": (lambda x, y: L.tensordot(x, y, axes=([0, 2], [1, 0])),
                  lambda r, b, c: (rand(r, (2, 3, 4), c), rand(r, (4, 2, 3), c)),
                  lambda x, y: np.linalg.tensordot(x, y, axes=([0, 2], [1, 0])), False),
    "vecdot": (L.vecdot, lambda r, b, c: (rand(r, b + (2, 3), c), rand(r, (3,), c)),
               np.linalg.vecdot, True),
    "matmul": (L.matmul, lambda r, b, c: (rand(r, b + (2, 3), c), rand(r, (3, 2), c)),
               np.linalg.matmul, True),
    "matrix_transpose": (L.matrix_transpose, lambda r, b, c: (rand(r, b + (2, 3), c),),
                         np.linalg.matrix_transpose, True),
    "multi_dot": (lambda *xs: L.multi_dot(xs),
                  lambda r, b, c: (rand(r, (3,), c), rand(r, (3, 5), c), rand(r, (5, 2), c),
                                   rand(r, (2, 4), c)),
                  lambda *xs: np.linalg.multi_dot(xs), False),
    "matrix_power.3": (lambda a: L.matrix_power(a, 3), _sq(),
                       lambda a: np.linalg.matrix_power(a, 3), True),
    "matrix_power.-2": (lambda a: L.matrix_power(a, -2), _sq(),
                        lambda a: np.linalg.matrix_power(a, -2), True),
    "vector_norm": (L.vector_norm, lambda r, b, c: (rand(r, b + (3,), c),),
                    np.linalg.vector_norm, True),
    "vector_norm.axis.keepdims": (
        lambda x: L.vector_norm(x, axis=(0, -1), keepdims=True),
        lambda r, b, c: (rand(r, b + (2, 3), c),),
        lambda x: np.linalg.vector_norm(x, axis=(0, -1), keepdims=True), True),
    "vector_norm.1": (lambda x: L.vector_norm(x, axis=-1, ord=1),
                      lambda r, b, c: (rand(r, b + (3,), c),),
                      lambda x: np.linalg.vector_norm(x, axis=-1, ord=1), True),
    "vector_norm.3": (lambda x: L.vector_norm(x, axis=-1, ord=3),
                      lambda r, b, c: (rand(r, b + (3,), c),),
                      lambda x: np.linalg.vector_norm(x, axis=-1, ord=3), True),
    "vector_norm.0.5": (lambda x: L.vector_norm(x, axis=-1, ord=0.5),
                        lambda r, b, c: (rand(r, b + (3,), c),),
                        lambda x: np.linalg.vector_norm(x, axis=-1, ord=0.5), True),
    "vector_norm.inf": (lambda x: L.vector_norm(x, axis=-1, ord=np.inf),
                        lambda r, b, c: (rand(r, b + (3,), c),),
                        lambda x: np.linalg.vector_norm(x, axis=-1, ord=np.inf), True),
    "vector_norm.-inf": (lambda x: L.vector_norm(x, axis=-1, ord=-np.inf),
                         lambda r, b, c: (rand(r, b + (3,), c),),
                         lambda x: np.linalg.vector_norm(x, axis=-1, ord=-np.inf), True),
    **{f"matrix_norm.{o}": (lambda x, o=o: L.matrix_norm(x, ord=o), _tall,
                            lambda x, o=o: np.linalg.matrix_norm(x, ord=o), True)
       for o in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf)},
    "matrix_norm.keepdims": (lambda x: L.matrix_norm(x, ord="nuc", keepdims=True), _tall,
                             lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True),
                             True),
    "norm": (L.norm, lambda r, b, c: (rand(r, b + (2, 3), c),), np.linalg.norm, True),
    "norm.axis": (lambda x: L.norm(x, ord=3, axis=0),
                  lambda r, b, c: (rand(r, b + (2, 3), c),),
                  lambda x: np.linalg.norm(x, ord=3, axis=0), True),
    "norm.axes.keepdims": (lambda x: L.norm(x, ord="nuc", axis=(0, -1), keepdims=True),
                           lambda r, b, c: (rand(r, b + (2, 3), c),),
                           lambda x: np.linalg.norm(x, ord="nuc", axis=(0, -1), keepdims=True),
                           True),
    "norm.matrix.ord": (lambda x: L.norm(x, ord=1), lambda r, b, c: (rand(r, (3, 2), c),),
                        lambda x: np.linalg.norm(x, ord=1), False),
    "cond": (L.cond, _sq(), np.linalg.cond, True),
    "cond.fro": (lambda a: L.cond(a, "fro"), _sq(), lambda a: np.linalg.cond(a, "fro"), True),
    "tensorinv": (lambda a: L.tensorinv(a, ind=1), lambda r, b, c: (general(r, (), 4, c),),
                  lambda a: np.linalg.tensorinv(a, ind=1), False),
    "tensorsolve": (L.tensorsolve,
                    lambda r, b, c: (general(r, (), 6, c).reshape(2, 3, 6),
                                     rand(r, (2, 3), c)),
                    np.linalg.tensorsolve, False),
    "expm": (L.expm, lambda r, b, c: (general(r, b, 3, c) / 3,), sla.expm, True),
    # SciPy's logm costs about a millisecond a matrix: a smaller batch.
    "logm": (L.logm, _right_half_plane, sla.logm, [(), (2,)]),
    "sqrtm": (L.sqrtm, _right_half_plane, sla.sqrtm, True),
}


def _params():
    for name, (_, _, _, batched) in CASES.items():
        batches = batched if isinstance(batched, list) else BATCHES if batched else [()]
        for c in COMPLEX:
            for batch in batches:
                yield pytest.param(name, c, batch, id=f"{name}-{'c' if c else 'r'}-{batch}")


def _inputs(name, c, batch):
    rng = np.random.default_rng(zlib.crc32(f"{name} {c} {batch}".encode()))
    return CASES[name][1](rng, batch, c)


@pytest.mark.parametrize("name,c,batch", list(_params()))
def test_values_like_numpy(name, c, batch):
    f, _, ref, _ = CASES[name]
    if ref is None:
        pytest.skip("no NumPy counterpart")
    inputs = _inputs(name, c, batch)
    expected = np.asarray(ref(*inputs))
    for args in (inputs, [yaad.tensor(x, requires_grad=True) for x in inputs]):
        got = data(f(*args))
        assert got.shape == expected.shape
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,c,batch", list(_params()))
def test_gradcheck(name, c, batch):
    f = CASES[name][0]
    gradcheck(f, _inputs(name, c, batch), check_forward_ad=True)


SECOND_ORDER = ["inv", "det", "slogdet.logabsdet", "slogdet.sign", "solve", "pinv.tall",
                "lstsq.x", "cholesky", "solve_triangular.lower", "solve_triangular.upper.T",
                "cross", "matrix_power.-2", "vector_norm", "vector_norm.inf", "matrix_norm.nuc",
                "expm", "logm", "sqrtm"]


@pytest.mark.parametrize("name", SECOND_ORDER)
@pytest.mark.parametrize("c", COMPLEX)
def test_second_derivatives(name, c):
    f = CASES[name][0]
    gradgradcheck(f, _inputs(name, c, ()), check_forward_ad=True)


# ---- float32 stays float32 ---------------------------------------------------------------

FLOAT32 = ["inv", "det", "slogdet.logabsdet", "solve", "pinv.tall", "lstsq.x", "cholesky",
           "solve_triangular.lower", "cross", "vector_norm", "matrix_norm.nuc",
           "matrix_norm.2", "expm", "logm", "sqrtm"]


@pytest.mark.parametrize("name", FLOAT32)
@pytest.mark.parametrize("c", COMPLEX)
def test_float32_values_and_gradients(name, c):
    f = CASES[name][0]
    inputs = _inputs(name, c, (2,))
    low = [yaad.tensor(x.astype(np.complex64 if c else np.float32), requires_grad=True)
           for x in inputs]
    high = [yaad.tensor(x, requires_grad=True) for x in inputs]
    out_low, out_high = f(*low), f(*high)
    assert out_low.dtype.itemsize * 2 == out_high.dtype.itemsize
    np.testing.assert_allclose(out_low.data, out_high.data, rtol=2e-3, atol=2e-4)
    yaad.real(out_low).sum().backward()
    yaad.real(out_high).sum().backward()
    for lo, hi in zip(low, high):
        assert lo.grad.dtype == lo.dtype
        np.testing.assert_allclose(lo.grad, hi.grad, rtol=5e-3, atol=5e-3)


# ---- closed forms: gradients equal to known matrices ------------------------------------


@pytest.mark.parametrize("c", COMPLEX)
def test_det_gradient_is_the_cofactor_matrix(c):
    a = general(np.random.default_rng(0), (2,), 3, c)
    t = yaad.tensor(a, requires_grad=True)
    L.det(t).real.sum().backward()
    cof = np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    np.testing.assert_allclose(t.grad, np.conj(cof), rtol=1e-10)


def _cofactors(a):
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


@pytest.mark.parametrize("c", COMPLEX)
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_det_gradient_of_singular_matrices_is_finite_and_exact(c, rank):
    rng = np.random.default_rng(rank)
    a = rand(rng, (3, rank), c) @ rand(rng, (rank, 3), c)  # rank < 3: det = 0
    t = yaad.tensor(a, requires_grad=True)
    d = L.det(t)
    assert abs(d.item()) < 1e-12
    d.real.backward()
    expected = np.conj(_cofactors(a))  # nonzero for rank 2, zero below
    np.testing.assert_allclose(t.grad, expected, atol=1e-10)
    assert np.abs(expected).max() > 0.1 if rank == 2 else np.abs(expected).max() < 1e-12


@pytest.mark.parametrize("c", COMPLEX)
def test_matrix_function_gradients_closed_form(c):
    a = general(np.random.default_rng(1), (), 3, c) / 3
    # d tr(expm(a)) = tr(expm(a) da): the gradient is expm(a)^H
    t = yaad.tensor(a, requires_grad=True)
    L.trace(L.expm(t)).real.backward()
    np.testing.assert_allclose(t.grad, np.conj(sla.expm(a)).T, rtol=1e-10)
    # tr(logm(a)) = log det(a): the gradient is inv(a)^H
    t = yaad.tensor(a + np.eye(3), requires_grad=True)
    L.trace(L.logm(t)).real.backward()
    np.testing.assert_allclose(t.grad, np.conj(np.linalg.inv(a + np.eye(3))).T, rtol=1e-8)
    s = L.sqrtm(yaad.tensor(a + np.eye(3)))
    np.testing.assert_allclose((s @ s).data, a + np.eye(3), atol=1e-12)


@pytest.mark.parametrize("c", COMPLEX)
def test_cholesky_gradient_is_hermitian(c):
    a = posdef(np.random.default_rng(2), (), 4, c)
    t = yaad.tensor(a, requires_grad=True)
    w = rand(np.random.default_rng(3), (4, 4), c)
    yaad.real(L.cholesky(t) * w).sum().backward()
    np.testing.assert_allclose(t.grad, np.conj(t.grad.T), atol=1e-12)
    assert np.abs(t.grad).max() > 0.01


def test_solve_triangular_gradient_stays_in_the_triangle():
    a = general(np.random.default_rng(4), (), 4)
    t = yaad.tensor(a, requires_grad=True)
    L.solve_triangular(t, np.ones((4, 2)), lower=True, unit_diagonal=True).sum().backward()
    assert np.all(np.triu(t.grad) == 0)
    assert np.all(t.grad[np.tril_indices(4, -1)] != 0)


# ---- norms at zero and ties -------------------------------------------------------------


@pytest.mark.parametrize("c", COMPLEX)
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, np.inf, -np.inf, 0])
def test_vector_norm_at_zero_has_gradient_zero(c, ord):
    x = yaad.tensor(np.zeros((2, 3), complex if c else float), requires_grad=True)
    n = L.vector_norm(x, axis=-1, ord=ord)
    np.testing.assert_array_equal(n.data, 0)
    n.sum().backward()
    np.testing.assert_array_equal(x.grad, 0)


def test_norm_subgradient_zero_only_where_zero():
    x = yaad.tensor(np.array([[0.0, 0.0], [3.0, 4.0]]), requires_grad=True)
    L.norm(x, axis=1).sum().backward()
    np.testing.assert_allclose(x.grad, [[0, 0], [0.6, 0.8]])
    z = yaad.tensor(np.array([3 + 4j, 0]), requires_grad=True)
    L.norm(z).backward()
    np.testing.assert_allclose(z.grad, [0.6 + 0.8j, 0])
    m = yaad.tensor(np.zeros((3, 3)), requires_grad=True)
    for ord in ("fro", "nuc", 1, np.inf, 2):
        m.grad = None
        L.matrix_norm(m, ord=ord).backward()
        assert np.all(np.isfinite(m.grad)), ord


def test_max_norm_shares_the_gradient_among_ties():
    x = yaad.tensor(np.array([-2.0, 2.0, 1.0]), requires_grad=True)
    L.vector_norm(x, ord=np.inf).backward()
    np.testing.assert_allclose(x.grad, [-0.5, 0.5, 0])


def test_matrix_power_zero_is_the_identity():
    a = yaad.tensor(np.ones((2, 3, 3)), requires_grad=True)
    np.testing.assert_array_equal(L.matrix_power(a, 0).data, np.broadcast_to(np.eye(3),
                                                                              (2, 3, 3)))


def test_numpy_functions_on_tensors_dispatch_here():
    a = general(np.random.default_rng(5), (2,), 3)
    t = yaad.tensor(a, requires_grad=True)
    out = np.linalg.inv(t)
    assert isinstance(out, yaad.Tensor)
    out.sum().backward()
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(t.grad, -np.swapaxes(inv, -1, -2) @ np.ones((3, 3))
                               @ np.swapaxes(inv, -1, -2), rtol=1e-10)
    assert isinstance(np.linalg.norm(t), yaad.Tensor)
    assert isinstance(np.linalg.det(t), yaad.Tensor)


def test_lists_are_accepted_like_numpy():
    np.testing.assert_allclose(L.inv([[2.0, 0.0], [0.0, 4.0]]), [[0.5, 0], [0, 0.25]])
    assert L.det([[1.0, 2.0], [3.0, 4.0]]) == pytest.approx(-2.0)


def test_lstsq_of_plain_arrays_is_numpys():
    rng = np.random.default_rng(6)
    a, b = rand(rng, (5, 3)), rand(rng, (5, 2))
    for got, want in zip(L.lstsq(a, b), np.linalg.lstsq(a, b)):
        np.testing.assert_array_equal(got, want)
    x, res, rank, s = L.lstsq(yaad.tensor(a), yaad.tensor(b))
    np.testing.assert_allclose(res.data, np.linalg.lstsq(a, b)[1], rtol=1e-10)
    assert rank == 3


# ---- errors ---------------------------------------------------------------------------------


def test_errors_name_the_function_and_the_problem():
    t = yaad.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(np.linalg.LinAlgError, match=r"linalg.inv: .*square.*\(2, 3\)"):
        L.inv(t)
    with pytest.raises(np.linalg.LinAlgError, match="linalg.inv: Singular matrix"):
        L.inv(yaad.tensor(np.ones((2, 2)), requires_grad=True))
    with pytest.raises(np.linalg.LinAlgError, match="linalg.cholesky"):
        L.cholesky(yaad.tensor(-np.eye(2), requires_grad=True))
    with pytest.raises(ValueError, match="solve_triangular: trans"):
        L.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(ValueError, match="matrix_norm: invalid norm order"):
        L.matrix_norm(t, ord=3)
    with pytest.raises(ValueError, match="norm: invalid norm order 'fro' for vectors"):
        L.norm(t, ord="fro", axis=1)
    with pytest.raises(ValueError, match="cross: both inputs must have 3 entries"):
        L.cross(t.T, t.T)
    with pytest.raises(ValueError, match="outer: both inputs must be 1-D"):
        L.outer(t, t)
    with pytest.raises(TypeError, match="matrix_power: the exponent must be an integer"):
        L.matrix_power(yaad.tensor(np.eye(2)), 1.5)
    with pytest.raises(TypeError, match="multi_dot: out="):
        L.multi_dot([t, t.T], out=np.empty((2, 2)))


def test_slogdet_of_a_singular_matrix_has_no_gradient():
    t = yaad.tensor(np.ones((2, 2)), requires_grad=True)
    sign, logabs = L.slogdet(t)
    assert sign.item() == 0 and logabs.item() == -np.inf
    with pytest.raises(np.linalg.LinAlgError, match="slogdet: a matrix is singular"):
        logabs.backward()
