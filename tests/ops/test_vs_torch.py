"""A sample of ops compared with PyTorch: values and gradients, real and complex.

For a complex input, PyTorch's ``.grad`` of a real loss is ``dL/dx + 1j dL/dy``, yaad's
convention too, so the gradients must be equal, not conjugate. Skipped without torch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import yaad
from tests.support.arrays import random_array

R, POS = (-2.0, 2.0), (0.3, 2.0)


def _compare(yaad_fn, torch_fn, inputs, rtol=1e-8, atol=1e-10, seed=1):
    """Values, then the gradients of ``sum(Re(conj(w) * f(x)))`` for a random ``w``.

    The tolerance allows for the two libraries' special functions (digamma) differing in
    the last digits."""
    ys = [yaad.tensor(x, requires_grad=True) for x in inputs]
    ts = [torch.tensor(x, requires_grad=True) for x in inputs]
    oy, ot = yaad_fn(*ys), torch_fn(*ts)
    np.testing.assert_allclose(oy.data, ot.detach().numpy(), rtol=rtol, atol=atol)
    assert oy.dtype == ot.detach().numpy().dtype
    rng = np.random.default_rng(seed)
    w = random_array(rng, oy.shape, oy.dtype)
    yaad.sum(yaad.real(oy * np.conj(w))).backward()
    lt = ot * torch.tensor(np.conj(w))
    (lt.real if lt.is_complex() else lt).sum().backward()
    for y, t in zip(ys, ts):
        np.testing.assert_allclose(y.grad, t.grad.numpy(), rtol=rtol, atol=atol)
        assert y.grad.dtype == t.grad.numpy().dtype


def _inputs(shapes, dtype, domains=None, seed=0):
    rng = np.random.default_rng(seed)
    domains = domains or [R] * len(shapes)
    return [random_array(rng, s, dtype, *d, imag=(-0.5, 0.5)) for s, d in zip(shapes, domains)]


# (id, yaad function, torch function, shapes, domains, complex too)
ELEMENTWISE = [
    ("sin", yaad.sin, torch.sin, [(3, 4)], [R], True),
    ("exp", yaad.exp, torch.exp, [(3, 4)], [R], True),
    ("log", yaad.log, torch.log, [(3, 4)], [POS], True),
    ("sqrt", yaad.sqrt, torch.sqrt, [(3, 4)], [POS], True),
    ("tanh", yaad.tanh, torch.tanh, [(3, 4)], [R], True),
    ("arcsinh", yaad.arcsinh, torch.asinh, [(3, 4)], [R], True),
    ("reciprocal", yaad.reciprocal, torch.reciprocal, [(3, 4)], [POS], True),
    ("abs", yaad.abs, torch.abs, [(3, 4)], [R], True),
    ("angle", yaad.angle, torch.angle, [(3, 4)], [POS], True),
    ("sigmoid", yaad.sigmoid, torch.sigmoid, [(3, 4)], [R], False),
    ("relu", yaad.relu, torch.relu, [(3, 4)], [R], False),
    ("softplus", yaad.softplus, torch.nn.functional.softplus, [(3, 4)], [R], False),
    ("erf", yaad.erf, torch.erf, [(3, 4)], [R], False),
    ("digamma", yaad.digamma, torch.digamma, [(3, 4)], [POS], False),
    ("multiply", yaad.multiply, torch.mul, [(3, 1), (4,)], [R, R], True),
    ("divide", yaad.divide, torch.div, [(3, 1), (4,)], [R, POS], True),
    ("power", yaad.power, torch.pow, [(3, 1), (4,)], [POS, R], True),
    ("maximum", yaad.maximum, torch.maximum, [(3, 1), (4,)], [R, R], False),
    ("arctan2", yaad.arctan2, torch.atan2, [(3, 1), (4,)], [R, POS], False),
    ("hypot", yaad.hypot, torch.hypot, [(3, 1), (4,)], [R, R], False),
    ("logaddexp", yaad.logaddexp, torch.logaddexp, [(3, 1), (4,)], [R, R], False),
    ("xlogy", yaad.xlogy, torch.xlogy, [(3, 1), (4,)], [R, POS], False),
]
REDUCTIONS = [
    ("sum", lambda x: yaad.sum(x, axis=1), lambda x: x.sum(1), True),
    ("mean", lambda x: yaad.mean(x, axis=(0, 2), keepdims=True),
     lambda x: x.mean((0, 2), keepdim=True), True),
    ("prod", lambda x: yaad.prod(x, axis=-1), lambda x: x.prod(-1), True),
    ("amax", lambda x: yaad.amax(x, axis=1), lambda x: x.amax(1), False),
    ("var", lambda x: yaad.var(x, axis=1), lambda x: x.var(1, correction=0), True),
    ("std", lambda x: yaad.std(x, axis=0, ddof=1), lambda x: x.std(0), False),
    ("cumsum", lambda x: yaad.cumsum(x, axis=2), lambda x: x.cumsum(2), True),
]
PRODUCTS = [
    ("matmul", yaad.matmul, torch.matmul, [(3, 4), (4, 2)]),
    ("matmul-batched", yaad.matmul, torch.matmul, [(2, 1, 3, 4), (5, 4, 2)]),
    ("matmul-vector", yaad.matmul, torch.matmul, [(3,), (2, 3, 4)]),
    ("dot", yaad.dot, torch.dot, [(4,), (4,)]),
    ("vdot", yaad.vdot, torch.vdot, [(4,), (4,)]),
    ("inner", yaad.inner, torch.inner, [(2, 4), (3, 4)]),
    ("outer", yaad.outer, torch.outer, [(3,), (4,)]),
    ("tensordot", lambda a, b: yaad.tensordot(a, b, axes=([1, 0], [0, 2])),
     lambda a, b: torch.tensordot(a, b, dims=([1, 0], [0, 2])), [(3, 2, 4), (2, 5, 3)]),
    ("kron", yaad.kron, torch.kron, [(2, 3), (3, 2)]),
    ("trace", yaad.trace, torch.trace, [(4, 4)]),
    ("einsum-matmul", lambda a, b: yaad.einsum("ij,jk->ik", a, b),
     lambda a, b: torch.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    ("einsum-trace", lambda a: yaad.einsum("ii->", a), lambda a: torch.einsum("ii->", a),
     [(4, 4)]),
    ("einsum-batched-diagonal", lambda a: yaad.einsum("bii->bi", a),
     lambda a: torch.einsum("bii->bi", a), [(2, 3, 3)]),
    ("einsum-batched-trace", lambda a, b: yaad.einsum("bij,bji->", a, b),
     lambda a, b: torch.einsum("bij,bji->", a, b), [(5, 3, 3), (5, 3, 3)]),
    ("einsum-ellipsis", lambda a, b: yaad.einsum("...ij,...jk->...ik", a, b),
     lambda a, b: torch.einsum("...ij,...jk->...ik", a, b), [(2, 3, 4), (4, 2)]),
    ("einsum-chain", lambda a, b, c: yaad.einsum("ab,bc,cd->ad", a, b, c),
     lambda a, b, c: torch.einsum("ab,bc,cd->ad", a, b, c), [(2, 3), (3, 4), (4, 2)]),
    ("einsum-mps", lambda e, a: yaad.einsum("ab,asc->bsc", e, a),
     lambda e, a: torch.einsum("ab,asc->bsc", e, a), [(4, 4), (4, 2, 4)]),
]
NN = [
    ("softmax", lambda x: yaad.softmax(x, axis=1), lambda x: torch.softmax(x, 1)),
    ("log_softmax", lambda x: yaad.log_softmax(x, axis=-1), lambda x: torch.log_softmax(x, -1)),
    ("logsumexp", lambda x: yaad.logsumexp(x, axis=(0, 2)), lambda x: x.logsumexp((0, 2))),
    ("logsumexp-keepdims", lambda x: yaad.logsumexp(x, axis=1, keepdims=True),
     lambda x: x.logsumexp(1, keepdim=True)),
]


def _kinds(complex_ok):
    return ["real", "complex"] if complex_ok else ["real"]


def _dtype(kind):
    return np.complex128 if kind == "complex" else np.float64


@pytest.mark.parametrize("name, yf, tf, shapes, domains, kind", [
    (n, y, t, s, d, k) for n, y, t, s, d, c in ELEMENTWISE for k in _kinds(c)])
def test_elementwise(name, yf, tf, shapes, domains, kind):
    _compare(yf, tf, _inputs(shapes, _dtype(kind), domains))


@pytest.mark.parametrize("name, yf, tf, kind", [
    (n, y, t, k) for n, y, t, c in REDUCTIONS for k in _kinds(c)])
def test_reductions(name, yf, tf, kind):
    _compare(yf, tf, _inputs([(2, 3, 4)], _dtype(kind)))


@pytest.mark.parametrize("name, yf, tf, shapes", PRODUCTS)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_products_and_einsum(name, yf, tf, shapes, kind):
    _compare(yf, tf, _inputs(shapes, _dtype(kind)))


@pytest.mark.parametrize("name, yf, tf", NN)
def test_nn_functions(name, yf, tf):
    _compare(yf, tf, _inputs([(2, 3, 4)], np.float64))


def test_logsumexp_minus_inf_slice_is_finite_where_torch_is_not():
    x = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])
    t = yaad.tensor(x, requires_grad=True)
    yaad.sum(yaad.logsumexp(t, axis=1)).backward()
    np.testing.assert_array_equal(t.grad, [[1.0, 0.0], [0.0, 0.0]])
    tt = torch.tensor(x, requires_grad=True)
    tt.logsumexp(1).sum().backward()
    np.testing.assert_array_equal(tt.grad.numpy()[0], t.grad[0])  # the finite row agrees


def test_float32_matches_torch_float32():
    x = _inputs([(3, 4), (4, 2)], np.float32)
    ys = [yaad.tensor(v, requires_grad=True) for v in x]
    ts = [torch.tensor(v, requires_grad=True) for v in x]
    yaad.sum(yaad.tanh(ys[0] @ ys[1])).backward()
    torch.tanh(ts[0] @ ts[1]).sum().backward()
    for y, t in zip(ys, ts):
        assert y.grad.dtype == np.float32 == t.grad.numpy().dtype
        np.testing.assert_allclose(y.grad, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_complex_convention_abs_squared():
    z = yaad.tensor(np.array([3 + 4j]), requires_grad=True)
    tz = torch.tensor(np.array([3 + 4j]), requires_grad=True)
    yaad.sum(yaad.abs(z) ** 2).backward()
    (tz.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad, [6 + 8j])
    np.testing.assert_allclose(tz.grad.numpy(), [6 + 8j])
