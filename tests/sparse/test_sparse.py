"""yaad.sparse: products of SciPy sparse matrices, LinearOperators and SparseTensors with
tensors, gradients to the dense side and to the nonzeros, checked against dense yaad,
PyTorch's sparse autograd and finite differences; real and complex, vectors and batches."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.sparse.linalg as spla
import torch

import yaad
from yaad.sparse import SparseTensor
from yaad.testing import gradcheck, gradgradcheck

RNG = np.random.default_rng(3)
N = 12


def random_sparse(n=N, m=N, density=0.3, complex_=False, seed=0):
    a = sps.random(n, m, density=density, random_state=seed, format="csr")
    if complex_:
        a = a + 1j * sps.random(n, m, density=density, random_state=seed + 1, format="csr")
    return sps.csr_array(a)


def dense_vec(shape, complex_):
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


FORMATS = ["csr_array", "csc_array", "coo_array", "dia_array", "bsr_array", "csr_matrix",
           "coo_matrix", "LinearOperator"]


def convert(a, fmt):
    if fmt == "LinearOperator":
        return spla.aslinearoperator(a)
    return getattr(sps, fmt)(a)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("shape", [(N,), (N, 3)])
def test_sparse_times_tensor_gradient_to_the_dense_side(fmt, complex_, shape):
    a0 = random_sparse(complex_=complex_)
    a = convert(a0, fmt)
    dense = a0.toarray()
    x0 = dense_vec(shape, complex_)
    w = dense_vec((N,) + shape[1:], True)

    def loss(y):
        return yaad.sum(abs(y) ** 2 * abs(w)) + yaad.real(yaad.sum(y * w))

    # (np.matmul refuses LinearOperators before any dispatch: __array_ufunc__ = None)
    numpy_matmul = (lambda x: yaad.matmul(a, x)) if fmt == "LinearOperator" else (
        lambda x: np.matmul(a, x))
    for product, reference in [
            (lambda x: yaad.matmul(a, x), lambda x: dense @ x),
            (numpy_matmul, lambda x: dense @ x),
            (lambda x: yaad.dot(a, x), lambda x: dense @ x),
            (lambda x: x.T @ a if x.ndim == 2 else x @ a,
             lambda x: x.T @ dense if x.ndim == 2 else x @ dense),
            (lambda x: yaad.matmul(x.T, a) if x.ndim == 2 else yaad.matmul(x, a),
             lambda x: x.T @ dense if x.ndim == 2 else x @ dense)]:
        x = yaad.tensor(x0, requires_grad=True)
        y = product(x)
        loss(y.T if y.ndim == 2 and y.shape[0] != N else y).backward()
        xr = yaad.tensor(x0, requires_grad=True)
        yr = reference(xr)
        loss(yr.T if yr.ndim == 2 and yr.shape[0] != N else yr).backward()
        np.testing.assert_allclose(y.data, yr.data, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(x.grad, xr.grad, rtol=1e-12, atol=1e-12)
        assert x.grad.dtype == x0.dtype


def test_plain_arrays_give_arrays():
    a = random_sparse()
    x = RNG.standard_normal(N)
    y = yaad.matmul(a, x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, a @ x)


def test_scipy_on_the_left_of_at_names_the_fix():
    a = random_sparse()
    x = yaad.tensor(RNG.standard_normal(N), requires_grad=True)
    with pytest.raises(TypeError, match=r"yaad.matmul\(A, t\)"):
        a @ x  # noqa: B018  SciPy converts its operand: the gradient would be lost


def test_sum_of_parameters_times_fixed_terms_matches_dense():
    terms = [random_sparse(seed=s) for s in range(3)]
    theta0 = RNG.standard_normal(3)
    x0 = dense_vec(N, True)

    def loss(theta, build):
        h = build(theta)
        y = h @ x0
        return yaad.sum(abs(y) ** 2) + yaad.real(yaad.vdot(x0, y))

    sparse = lambda th: sum(th[k] * yaad.sparse.asarray(t) for k, t in enumerate(terms))  # noqa: E731
    dense = lambda th: sum(th[k] * t.toarray() for k, t in enumerate(terms))  # noqa: E731
    g = yaad.func.grad(lambda th: loss(th, sparse))(theta0)
    gd = yaad.func.grad(lambda th: loss(th, dense))(theta0)
    np.testing.assert_allclose(g, gd, rtol=1e-12)
    h = sparse(yaad.tensor(theta0))
    assert isinstance(h, SparseTensor) and len(h.terms) == 3
    assert h.nnz == sum(t.nnz for t in terms)


def torch_sparse_reference(a, values, x, loss_weights):
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    v = torch.tensor(values, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    m = torch.sparse_coo_tensor(torch.tensor(np.stack([rows, a.indices])), v, a.shape)
    y = torch.sparse.mm(m, xt if xt.ndim == 2 else xt[:, None])
    y = y if xt.ndim == 2 else y[:, 0]
    (torch.abs(y) ** 2 * torch.tensor(loss_weights)).sum().backward()
    return y.detach().numpy(), v.grad.numpy(), xt.grad.numpy()


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("shape", [(N,), (N, 2)])
def test_gradient_with_respect_to_the_nonzeros_matches_pytorch(complex_, shape):
    a = random_sparse(complex_=complex_)
    x0 = dense_vec(shape, complex_)
    weights = RNG.uniform(0.5, 1.5, shape)
    v = yaad.tensor(a.data.copy(), requires_grad=True)
    x = yaad.tensor(x0, requires_grad=True)
    h = yaad.sparse.csr_array((v, a.indices, a.indptr), shape=a.shape)
    y = h @ x
    yaad.sum(abs(y) ** 2 * weights).backward()
    y_ref, gv_ref, gx_ref = torch_sparse_reference(a, a.data.copy(), x0, weights)
    np.testing.assert_allclose(y.data, y_ref, rtol=1e-12)
    np.testing.assert_allclose(v.grad, gv_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad, gx_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("complex_", [False, True])
def test_nonzeros_gradients_left_transposed_and_adjoint_products_by_gradcheck(complex_):
    a = random_sparse(n=6, m=5, density=0.5, complex_=complex_)
    x0 = dense_vec(6, complex_)
    z0 = dense_vec(5, complex_)

    def f(v, x, z):
        h = yaad.sparse.csr_array((v, a.indices, a.indptr), shape=a.shape)
        return yaad.concatenate([x @ h, h.T @ x, (h.mH @ x) * 2, h @ z, h.conj() @ z,
                                 (-h / 3) @ z])

    assert gradcheck(f, (a.data.copy(), x0, z0))
    assert gradgradcheck(f, (a.data.copy(), x0, z0))


def test_coo_array_with_repeated_coordinates_adds_them():
    row = np.array([0, 2, 0, 1, 2])
    col = np.array([1, 0, 1, 2, 2])
    data0 = RNG.standard_normal(5)
    d = yaad.tensor(data0, requires_grad=True)
    h = yaad.sparse.coo_array((d, (row, col)), shape=(3, 3))
    x0 = RNG.standard_normal(3)
    y = h @ x0
    ref = sps.coo_array((data0, (row, col)), shape=(3, 3)).toarray()
    np.testing.assert_allclose(y.data, ref @ x0)
    yaad.sum(y * np.arange(1.0, 4.0)).backward()
    np.testing.assert_allclose(d.grad, np.arange(1.0, 4.0)[row] * x0[col])


def test_function_operator_and_its_closure():
    a = random_sparse().toarray()
    s = yaad.tensor(0.7, requires_grad=True)
    op = yaad.sparse.linalg.LinearOperator((N, N), lambda v: s * (a @ v))
    x0 = RNG.standard_normal((N, 2))
    y = op @ x0 + 2 * op @ x0[:, 0][:, None]
    yaad.sum(y * y).backward()
    sr = yaad.tensor(0.7, requires_grad=True)
    yr = sr * (a @ x0) + 2 * sr * (a @ x0[:, :1])
    yaad.sum(yr * yr).backward()
    np.testing.assert_allclose(s.grad, sr.grad, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="rmatvec"):
        op.T @ x0


def test_algebra_and_conversions():
    a, b = random_sparse(seed=1), random_sparse(seed=2, complex_=True)
    h = 2 * yaad.sparse.asarray(a) - yaad.sparse.asarray(b) / 4 + a
    ref = 3 * a.toarray() - b.toarray() / 4
    np.testing.assert_allclose(h.to_scipy().toarray(), ref)
    np.testing.assert_allclose(h.todense().data, ref)
    np.testing.assert_allclose(h.mH.todense().data, ref.conj().T)
    np.testing.assert_allclose((np.float64(2.0) * h).todense().data, 2 * ref)
    assert h.shape == (N, N) and h.dtype == np.complex128 and h.ndim == 2
    assert "SparseTensor(shape=(12, 12)" in repr(h)
    assert (0 + h) is h and h.with_values is not None
    c = yaad.sparse.csr_array(a)
    np.testing.assert_allclose(c.values, a.data)
    np.testing.assert_allclose(c.with_values(2 * a.data).to_scipy().toarray(), 2 * a.toarray())


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("adjoint", ["rmatvec", "vjp"])
def test_scipy_operator_acts_as_the_dense_matrix(complex_, adjoint):
    """SparseTensor.scipy_operator: the SciPy sparse matrix when every term is sparse;
    with a matrix-free term a SciPy LinearOperator whose products, adjoint products (from
    rmatvec, or from the VJP of matvec without one) and solves are the dense matrix's, on
    plain arrays."""
    a = random_sparse(seed=4) + 6 * sps.eye_array(N)  # well conditioned, for the solve
    b = random_sparse(seed=5, complex_=complex_).toarray()
    theta = yaad.tensor(0.5, requires_grad=True)
    rmatvec = (lambda v: theta * (b.conj().T @ v)) if adjoint == "rmatvec" else None
    f = yaad.sparse.linalg.LinearOperator((N, N), lambda v: theta * (b @ v), rmatvec)
    ref = 2 * a.toarray() + 0.5 * b

    only_sparse = (2 * yaad.sparse.asarray(a)).scipy_operator()
    assert sps.issparse(only_sparse)
    np.testing.assert_allclose(only_sparse.toarray(), 2 * a.toarray())

    op = (2 * yaad.sparse.asarray(a) + f).scipy_operator()
    assert isinstance(op, spla.LinearOperator) and op.shape == (N, N) and op.dtype == ref.dtype
    v, m = dense_vec(N, complex_), dense_vec((N, 3), complex_)
    for got, want in [(op.matvec(v), ref @ v), (op @ m, ref @ m),
                      (op.rmatvec(v), ref.conj().T @ v), (op.H @ m, ref.conj().T @ m)]:
        assert type(got) is np.ndarray and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    x, info = spla.gmres(op, v, rtol=1e-12, atol=0.0)
    assert info == 0
    np.testing.assert_allclose(x, np.linalg.solve(ref, v), rtol=1e-9, atol=1e-12)
    assert theta.grad is None  # values detached: nothing recorded


def test_errors_are_clear():
    h = yaad.sparse.asarray(random_sparse())
    with pytest.raises(TypeError, match="has no dense data"):
        yaad.exp(h)
    with pytest.raises(TypeError, match="not converted to a dense array implicitly"):
        np.asarray(h)
    with pytest.raises(ValueError, match=r"multiplies vectors of length 12"):
        h @ np.ones(5)
    with pytest.raises(TypeError):
        h * np.ones(N)  # elementwise with a dense array: not a scalar
    with pytest.raises(ValueError, match="values for a pattern"):
        yaad.sparse.csr_array(random_sparse()).with_values(np.ones(3))
    theta = yaad.tensor(1.0, requires_grad=True)
    with pytest.raises(TypeError, match=r"multiply: .*theta \* yaad.sparse.asarray\(H\)"):
        theta * random_sparse()  # NumPy would multiply the SciPy matrix by itself


def test_memory_stays_of_the_order_of_the_nonzeros():
    n = 200_000
    indptr = np.arange(0, 10 * n + 1, 10)
    terms = [sps.csr_array((RNG.standard_normal(10 * n), RNG.integers(0, n, 10 * n), indptr),
                           shape=(n, n)) for _ in range(4)]
    theta = yaad.tensor(RNG.standard_normal(4), requires_grad=True)
    x = RNG.standard_normal(n)
    tracemalloc.start()
    h = sum(theta[k] * yaad.sparse.asarray(t) for k, t in enumerate(terms))
    loss = yaad.sum((h @ x) ** 2)
    loss.backward()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the terms hold 4 x 2e6 nonzeros (about 100 MB); the products need a few vectors
    assert peak < 20 * x.nbytes
    assert theta.grad.shape == (4,)


@pytest.mark.parametrize("make", [sps.csr_matrix, sps.csr_array])
def test_elementwise_op_with_a_scipy_sparse_operand_raises_instead_of_an_object_array(make):
    x = yaad.tensor(np.ones((3, 3)), requires_grad=True)
    a = make(np.eye(3))
    for f in (lambda: x * a, lambda: x + a, lambda: yaad.multiply(x, a),
              lambda: yaad.multiply(x, a, dtype=None), lambda: yaad.where(x.data > 0, x, a)):
        with pytest.raises(TypeError, match=r"(multiply|add|where): an operand of type "
                                            r"csr_.*yaad.sparse.asarray"):
            f()
    assert x.grad is None
    # plain operands are untouched by the check
    assert (x * 2).data.dtype == np.float64 and (x * [1.0, 2.0, 3.0]).data[0, 2] == 3.0
