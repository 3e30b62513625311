"""yaad.linalg without the spectral decompositions (see test_linalg_spectral.py).

Every function: values, shapes and dtypes equal to NumPy's (SciPy's for expm, logm, sqrtm,
solve_triangular); gradients against central finite differences on real and complex
inputs, unbatched and batched (3, 4, n, n), reverse and forward mode; second derivatives
of the main ones; float32 kept; known closed-form gradients; errors. The calls are the
``variants=`` of the functions' rows in ``tests/op_cases/linalg.py``.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import scipy.linalg as sla

import yaad
from tests.op_cases import variants
from tests.support.linalg_inputs import BATCHES, COMPLEX, data, general, posdef, rand
from yaad.testing import gradcheck, gradgradcheck

L = yaad.linalg


# name -> Variant: the calls of the rows of tests/op_cases/ (their variants=), at seeded
# inputs, batched
CASES = variants(spectral=False)


def _params():
    for name, v in CASES.items():
        batches = v.batched if isinstance(v.batched, list) else BATCHES if v.batched else [()]
        for c in COMPLEX:
            for batch in batches:
                yield pytest.param(name, c, batch, id=f"{name}-{'c' if c else 'r'}-{batch}")


def _inputs(name, c, batch):
    rng = np.random.default_rng(zlib.crc32(f"{name} {c} {batch}".encode()))
    return CASES[name].inputs(rng, batch, c)


@pytest.mark.parametrize("name,c,batch", list(_params()))
def test_values_like_numpy(name, c, batch):
    f, ref = CASES[name].f, CASES[name].ref
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
    f = CASES[name].f
    gradcheck(f, _inputs(name, c, batch), check_forward_ad=True)


SECOND_ORDER = [name for name, v in CASES.items() if v.second]


@pytest.mark.parametrize("name", SECOND_ORDER)
@pytest.mark.parametrize("c", COMPLEX)
def test_second_derivatives(name, c):
    f = CASES[name].f
    gradgradcheck(f, _inputs(name, c, ()), check_forward_ad=True)


# ---- float32 stays float32 ---------------------------------------------------------------

FLOAT32 = [name for name, v in CASES.items() if v.float32]


@pytest.mark.parametrize("name", FLOAT32)
@pytest.mark.parametrize("c", COMPLEX)
def test_float32_values_and_gradients(name, c):
    f = CASES[name].f
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
