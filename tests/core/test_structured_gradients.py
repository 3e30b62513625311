"""The lazy gradient of a square trace (a scaled identity) is exact and never seen by users."""

import numpy as np
import pytest

import yaad
from yaad.ops.products import ScaledIdentity
from yaad.testing import gradcheck, gradgradcheck

rng = np.random.default_rng(7)
A = rng.standard_normal((5, 5))
B = rng.standard_normal((5, 5))
Z = A + 1j * rng.standard_normal((5, 5))


@pytest.mark.parametrize("f, inputs", [
    (lambda x, y: yaad.trace(x @ y), (A, B)),
    (lambda x, y: yaad.trace(x @ y).real, (Z, Z)),
    (lambda x, y: yaad.trace(x @ y).imag, (Z, B)),
    (lambda x: yaad.trace(x) * yaad.sin(x).sum(), (A,)),
    (lambda x: yaad.trace(yaad.exp(x)) + x.sum(), (A,)),
    (lambda x: yaad.trace(x @ x @ x), (A,)),
    (lambda x, v: yaad.trace(x) * v, (A, B[0])),
])
def test_trace_gradients_match_finite_differences(f, inputs):
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_the_trace_gradient_is_structured_and_the_matmul_rule_uses_it():
    from yaad.core.graph import ShapeDtype
    from yaad.ops.products import _matmul_vjp_a, _trace_vjp

    g = _trace_vjp(np.float64(2.0), None, ShapeDtype((5, 5), np.dtype(np.float64)))
    assert isinstance(g, ScaledIdentity)
    np.testing.assert_array_equal(np.asarray(g), 2.0 * np.eye(5))
    np.testing.assert_allclose(_matmul_vjp_a(g, None, A, B), 2.0 * B.T)
    np.testing.assert_allclose(g + A, 2.0 * np.eye(5) + A)  # anything else densifies it
    np.testing.assert_allclose(g.sum(axis=0), 2.0 * np.ones(5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_dtypes_are_kept(dtype):
    x = yaad.tensor(A.astype(dtype), requires_grad=True)
    loss = yaad.trace(x @ x)
    (loss.real if np.iscomplexobj(loss.data) else loss).backward()
    assert x.grad.dtype == dtype
    np.testing.assert_allclose(x.grad, 2 * np.conj(A.astype(dtype)).T, rtol=1e-5)


def test_users_only_ever_see_arrays():
    x = yaad.tensor(A, requires_grad=True)
    m = x @ x
    seen = []
    m.register_hook(lambda g: seen.append(type(g)))
    m.retain_grad()
    yaad.trace(m).backward()
    assert seen == [np.ndarray]
    assert type(m.grad) is np.ndarray and type(x.grad) is np.ndarray
    y = yaad.tensor(A, requires_grad=True)
    yaad.trace(y).backward()
    assert type(y.grad) is np.ndarray and y.grad.flags.writeable
    (gm,) = yaad.autograd.grad(yaad.trace(y @ y), [y])
    assert type(gm) is np.ndarray
    np.testing.assert_allclose(gm, 2 * A.T)
