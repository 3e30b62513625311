"""The first-order backward of einsum, expm and broadcast scalars on NumPy arrays calls
NumPy directly (issue 16, W9 and W10), where under ``create_graph`` the same rules run as
yaad ops on tensors. Both routes must give the same gradients, bit for bit, and agree
with independent oracles (PyTorch, SciPy's ``expm_frechet``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import torch

import yaad
from yaad.core.gradients import fit_gradient

RNG = np.random.default_rng(16)


def _rand(shape, dtype=complex):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _both_routes(f, *arrays):
    """The gradients of ``Re sum(conj(w) * f(*xs))`` by ``backward()`` (the NumPy route)
    and by ``autograd.grad(create_graph=True)`` (the rules as yaad ops on tensors)."""
    w = None
    got = []
    for create_graph in (False, True):
        xs = [yaad.tensor(a, requires_grad=True) for a in arrays]
        out = f(*xs)
        if w is None:
            w = _rand(out.shape, out.dtype)
        loss = yaad.sum(yaad.real(yaad.conj(yaad.tensor(w)) * out))
        if create_graph:
            grads = yaad.autograd.grad(loss, xs, create_graph=True)
            got.append([g.detach().numpy() for g in grads])
        else:
            loss.backward()
            got.append([x.grad.numpy() if isinstance(x.grad, yaad.Tensor) else x.grad
                        for x in xs])
    return got, w


def _torch_grads(f, w, *arrays):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = f(*xs)
    (torch.conj(torch.tensor(w)) * out).real.sum().backward()
    return [x.grad.numpy() for x in xs]


EINSUMS = [
    ("Za,abc->Zbc", [(2, 2), (2, 2, 2)], complex),           # a 1-qubit gate (W9)
    ("YZab,abc->YZc", [(2, 2, 2, 2), (2, 2, 2)], complex),   # a 2-qubit gate (W9)
    ("ij,jk->ik", [(20, 20), (20, 20)], complex),            # large enough for matmul
    ("ij,jk->ik", [(3, 4), (4, 5)], float),
    ("ij,jk->ik", [(3, 4), (4, 5)], np.float32),
    ("ii,i->i", [(3, 3), (3,)], complex),                    # a diagonal: the eye constant
    ("ij,k->i", [(3, 4), (5,)], complex),                    # summed in one operand: ones
    ("...i,...i", [(5, 1, 4), (3, 4)], complex),             # broadcast length-1 axis
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], complex),     # a path of several steps
]


@pytest.mark.parametrize("subscripts, shapes, dtype", EINSUMS,
                         ids=[c[0] + "/" + np.dtype(c[-1]).name for c in EINSUMS])
def test_einsum_gradients_by_both_routes_and_torch(subscripts, shapes, dtype):
    arrays = [_rand(s, dtype) for s in shapes]
    (numpy_route, op_route), w = _both_routes(lambda *xs: yaad.einsum(subscripts, *xs),
                                              *arrays)
    want = _torch_grads(lambda *xs: torch.einsum(subscripts, *xs), w, *arrays)
    for a, g, h, t in zip(arrays, numpy_route, op_route, want):
        assert type(g) is np.ndarray and g.shape == a.shape and g.dtype == a.dtype
        np.testing.assert_array_equal(g, h)
        tol = 1e-5 if a.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, t, rtol=tol, atol=tol)


def _expm_inputs():
    herm = _rand((4, 4))
    herm = herm + herm.conj().T
    nilpotent = np.triu(_rand((4, 4)), 1)  # not normal, not diagonalizable
    return {
        "skew-hermitian (W10)": -0.1j * herm,
        "hermitian": herm / 4,
        "non-normal": _rand((4, 4)) / 2,
        "nilpotent": nilpotent,
        "upper triangular, complex": np.triu(_rand((4, 4))),
        "2x2": _rand((2, 2)),
        "degenerate": np.kron(np.eye(2), np.array([[0, 1.0], [-1, 0]])) + 0j,
        "zero": np.zeros((3, 3), complex),
        "large norm": 40 * _rand((3, 3)),  # scaling and squaring
        "real": _rand((3, 3), float),
        "real float32": _rand((3, 3), np.float32),
        "batched": _rand((2, 3, 3, 3)) / 2,
    }


@pytest.mark.parametrize("name", list(_expm_inputs()))
def test_expm_gradient_by_both_routes_and_oracles(name):
    a = _expm_inputs()[name]
    (numpy_route, op_route), w = _both_routes(yaad.linalg.expm, a)
    g = numpy_route[0]
    assert type(g) is np.ndarray and g.shape == a.shape and g.dtype == a.dtype
    np.testing.assert_array_equal(g, op_route[0])
    # SciPy's Frechet derivative: the gradient G of Re sum(conj(w) expm(a)) satisfies
    # Re sum(conj(G) E) = Re sum(conj(w) L(a, E)) for every direction E.
    tol = 2e-4 if a.dtype == np.float32 else 1e-9
    scale = max(1.0, np.abs(sla.expm(a.astype(np.complex128))).max())
    a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    for _ in range(3):
        e = _rand(a.shape, a.dtype).astype(a64.dtype)
        frechet = np.vectorize(lambda m, d: sla.expm_frechet(m, d, compute_expm=False),
                               signature="(n,n),(n,n)->(n,n)")(a64, e)
        lhs = np.sum(np.conj(g) * e).real
        rhs = np.sum(np.conj(w) * frechet).real
        assert abs(lhs - rhs) <= tol * scale * np.abs(e).sum() * np.abs(w).sum()
    want = _torch_grads(torch.linalg.matrix_exp, w, a)[0]
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol * scale)


def _expm_forward_inputs():
    """Every class of input the direct route to SciPy's Pade kernels must tell apart."""
    upper = np.triu(_rand((4, 4)))
    strided = _rand((8, 8))[::2, ::2]
    return {
        **_expm_inputs(),
        "8x8 block (expm's VJP)": np.block([[_rand((4, 4)) / 3, _rand((4, 4))],
                                            [np.zeros((4, 4)), _rand((4, 4)) / 3]]),
        "tiny norm": 1e-9 * _rand((4, 4)),
        "huge norm (many squarings)": 30 * _rand((4, 4)),
        "upper triangular, real": upper.real.copy(),
        "lower triangular": upper.T.copy(),
        "zeros at [0,1] and [1,0] only": _rand((4, 4)) * (1 - np.eye(4)[[1, 0, 2, 3]]),
        "diagonal": np.diag(_rand(4)),
        "transposed (F-ordered)": _rand((5, 5)).T,
        "strided": strided,
        "1x1": _rand((1, 1)),
        "0x0": np.zeros((0, 0), complex),
        "integer": np.arange(9).reshape(3, 3) % 4,
        "complex64": _rand((3, 3), np.complex64),
        "nan": np.full((3, 3), np.nan) + 0j,
    }


@pytest.mark.parametrize("name", list(_expm_forward_inputs()))
def test_expm_equals_scipy_bit_for_bit(name):
    # SciPy's kernels called directly for one generic matrix; SciPy's expm for the rest
    a = _expm_forward_inputs()[name]
    want = sla.expm(a.astype(np.promote_types(a.dtype, np.float64)))
    if a.dtype in (np.float32, np.complex64):
        want = want.astype(np.complex64 if want.dtype.kind == "c" else np.float32)
    got = yaad.linalg.expm(yaad.tensor(a)).numpy()
    assert got.shape == a.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert yaad.linalg.expm(a).base is None  # (never a view of the kernels' workspace)
    if a.size and np.isfinite(a).all() and a.dtype == np.complex128 and a.ndim == 2:
        np.testing.assert_allclose(got, torch.linalg.matrix_exp(torch.tensor(a)).numpy(),
                                   rtol=1e-10, atol=1e-12 * np.abs(want).max())


def test_expm_second_derivative_still_runs_through_the_ops():
    # d/dt of the gradient of tr(expm(t A)) at t: tr(A expm(t A) A) (analytic)
    a = _rand((3, 3)) / 2
    t = yaad.tensor(0.7, requires_grad=True)
    (g,) = yaad.autograd.grad(yaad.real(yaad.trace(yaad.linalg.expm(t * a))), [t],
                              create_graph=True)
    (h,) = yaad.autograd.grad(g, [t])
    np.testing.assert_allclose(h, np.trace(a @ a @ sla.expm(0.7 * a)).real, rtol=1e-10)


@pytest.mark.parametrize("ref_shape, g_shape, ref_dtype, g_dtype", [
    ((), (4, 4), np.float64, np.complex128),       # a real scalar times a complex gate
    ((), (2, 2), np.float32, np.complex128),
    ((1, 4), (3, 4), np.float64, np.float64),
    ((4,), (2, 3, 4), np.complex128, np.complex128),
    ((2, 1, 4), (2, 3, 4), np.float32, np.float64),
    ((3,), (3,), np.float32, np.float64),          # only a cast
    ((3,), (3,), np.float64, np.complex128),       # only the real part
])
def test_fit_gradient_on_numpy_equals_the_op_route(ref_shape, g_shape, ref_dtype, g_dtype):
    ref = np.zeros(ref_shape, ref_dtype)
    g = _rand(g_shape, g_dtype)
    got = fit_gradient(g, ref, "multiply", 0, g, (ref, g))
    via_ops = fit_gradient(yaad.tensor(g), ref, "multiply", 0, g, (ref, g))
    assert np.shape(got) == ref_shape and got.dtype == ref_dtype
    np.testing.assert_array_equal(got, via_ops.numpy())
    axes = tuple(range(len(g_shape) - len(ref_shape))) + tuple(
        len(g_shape) - len(ref_shape) + k for k, n in enumerate(ref_shape)
        if n == 1 and g_shape[len(g_shape) - len(ref_shape) + k] != 1)
    want = np.sum(g, axis=axes).reshape(ref_shape)
    want = (want.real if ref.dtype.kind != "c" else want).astype(ref_dtype)
    np.testing.assert_array_equal(got, want)


def test_fit_gradient_still_refuses_a_gradient_of_the_wrong_shape():
    with pytest.raises(Exception, match="multiply"):
        fit_gradient(np.ones((3, 5)), np.zeros((3, 4)), "multiply", 0, np.ones((3, 4)),
                     (np.zeros((3, 4)),))
