"""NumPy functions and ufuncs called on tensors go to the yaad op (and are recorded);
those without a yaad op raise TypeError naming them; those whose results carry no
gradient run on the data."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from tests.support.shape_checks import assert_like, rand
from yaad.testing import gradcheck


def _leaf(x):
    return yaad.tensor(x, requires_grad=True)


@pytest.mark.parametrize("f", [np.sin, np.exp, np.negative, np.square, np.conjugate,
                               np.absolute, np.fabs], ids=lambda f: f.__name__)
def test_ufunc_call_is_recorded(f):
    x = rand((2, 3))
    t = _leaf(x)
    y = f(t)
    assert isinstance(y, yaad.Tensor) and y.requires_grad
    assert_like(y, f(x))
    gradcheck(f, [x])


def test_binary_ufuncs_and_mixed_operands():
    x, y = rand((2, 3)), rand((3,), seed=1)
    t = _leaf(x)
    for f in (np.add, np.multiply, np.divide, np.power, np.maximum, np.arctan2, np.matmul):
        a = np.abs(x) + 0.5 if f is np.power else x
        b = rand((3, 2), seed=1) if f is np.matmul else y
        out = f(yaad.tensor(a, requires_grad=True), b)
        assert isinstance(out, yaad.Tensor) and out.requires_grad
        assert_like(out, f(a, b))
    # an ndarray on the left: NumPy hands the operation to the tensor
    out = y + t
    assert isinstance(out, yaad.Tensor)
    assert_like(out, y + x)
    (y * t).sum().backward()
    np.testing.assert_allclose(t.grad, np.broadcast_to(y, (2, 3)))


def test_ufunc_dtype_casts_and_other_keywords_raise():
    t = _leaf(rand((3,)))
    y = np.sin(t, dtype=np.float32)
    assert y.dtype == np.float32 and y.requires_grad
    with pytest.raises(TypeError, match="where"):
        np.sin(t, where=np.array([True, False, True]))


@pytest.mark.parametrize("call,expected", [
    (lambda t: np.add.reduce(t), lambda x: np.add.reduce(x)),
    (lambda t: np.add.reduce(t, axis=None), lambda x: np.add.reduce(x, axis=None)),
    (lambda t: np.add.reduce(t, 1, keepdims=True), lambda x: np.add.reduce(x, 1, keepdims=True)),
    (lambda t: np.multiply.reduce(t, axis=-1), lambda x: np.multiply.reduce(x, axis=-1)),
    (lambda t: np.maximum.reduce(t), lambda x: np.maximum.reduce(x)),
    (lambda t: np.minimum.reduce(t, axis=1), lambda x: np.minimum.reduce(x, axis=1)),
    (lambda t: np.add.accumulate(t), lambda x: np.add.accumulate(x)),
    (lambda t: np.multiply.accumulate(t, axis=1), lambda x: np.multiply.accumulate(x, axis=1)),
    (lambda t: np.multiply.outer(t, np.arange(3.0)),
     lambda x: np.multiply.outer(x, np.arange(3.0))),
    (lambda t: np.subtract.outer(t[0], t), lambda x: np.subtract.outer(x[0], x)),
], ids=["add.reduce", "reduce_none", "reduce_keepdims", "multiply.reduce", "maximum.reduce",
        "minimum.reduce", "add.accumulate", "multiply.accumulate", "multiply.outer",
        "subtract.outer"])
def test_ufunc_methods(call, expected):
    x = rand((3, 4))
    y = call(_leaf(x))
    assert isinstance(y, yaad.Tensor) and y.requires_grad
    np.testing.assert_allclose(y.data, expected(x))
    assert y.shape == np.shape(expected(x))
    gradcheck(call, [x])


def test_logical_reduce_and_unsupported_methods():
    t = yaad.tensor(np.array([[True, False], [True, True]]))
    assert_like(np.logical_and.reduce(t), np.array([True, False]))
    with pytest.raises(TypeError, match=r"numpy\.add\.at has no yaad op"):
        np.add.at(_leaf(rand((3,))), [0], 1.0)
    with pytest.raises(TypeError, match=r"numpy\.add\.reduceat"):
        np.add.reduceat(_leaf(rand((3,))), [0, 1])
    with pytest.raises(TypeError, match=r"numpy\.gcd\.reduce"):
        np.gcd.reduce(yaad.tensor([4, 6]))


@pytest.mark.parametrize("call", [
    lambda t, u: np.sum(t, axis=0),
    lambda t, u: np.mean(t, axis=(0, 1), keepdims=True),
    lambda t, u: np.max(t, axis=1),
    lambda t, u: np.amin(t),
    lambda t, u: np.prod(t, axis=-1),
    lambda t, u: np.std(t, ddof=1),
    lambda t, u: np.cumsum(t, axis=1),
    lambda t, u: np.concatenate([t, u]),
    lambda t, u: np.stack([t, u], axis=-1),
    lambda t, u: np.vstack((t, u)),
    lambda t, u: np.transpose(t),
    lambda t, u: np.reshape(t, (4, 3)),
    lambda t, u: np.reshape(t, shape=(2, 6)),
    lambda t, u: np.squeeze(np.expand_dims(t, 0)),
    lambda t, u: np.where(t > 0, t, u),
    lambda t, u: np.clip(t, -0.5, 0.5),
    lambda t, u: np.take(t, [0, 2], axis=0),
    lambda t, u: np.sort(t, axis=0),
    lambda t, u: np.diagonal(t),
    lambda t, u: np.trace(t),
    lambda t, u: np.real(t * 1j),
    lambda t, u: np.pad(t, 1),
    lambda t, u: np.split(t, 2, axis=1)[1],
    lambda t, u: np.einsum("ij,ij->i", t, u),
    lambda t, u: np.dot(t, np.ones(4)),
], ids=["sum", "mean", "max", "amin", "prod", "std", "cumsum", "concatenate", "stack",
        "vstack", "transpose", "reshape", "reshape_kw", "squeeze", "where", "clip", "take",
        "sort", "diagonal", "trace", "real", "pad", "split", "einsum", "dot"])
def test_array_functions_go_to_yaad(call):
    x, y = rand((3, 4)), rand((3, 4), seed=1)
    out = call(_leaf(x), _leaf(y))
    assert isinstance(out, yaad.Tensor) and out.requires_grad
    expected = call(x, y)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.data, expected)
    gradcheck(call, [x, y])


def test_functions_without_gradient_run_on_the_data():
    x = rand((3, 4))
    t = _leaf(x)
    assert np.shape(t) == (3, 4) and np.ndim(t) == 2 and np.size(t) == 12
    assert np.allclose(t, x) and np.array_equal(t, t)
    assert np.iscomplexobj(_leaf(x + 0j))
    assert_like(np.argmax(t, axis=1), np.argmax(x, axis=1))
    assert_like(np.unique(yaad.tensor([3, 1, 3])), np.array([1, 3]))
    assert np.count_nonzero(t > 0) == np.count_nonzero(x > 0)
    nz = np.where(t > 0)
    for got, expected in zip(nz, np.where(x > 0)):
        assert_like(got, expected)


def test_missing_function_raises_naming_it():
    t = _leaf(rand((3,)))
    with pytest.raises(TypeError, match=r"numpy\.percentile has no yaad op"):
        np.percentile(t, 50)
    with pytest.raises(TypeError, match=r"numpy\.unwrap has no yaad op"):
        np.unwrap(t)
    with pytest.raises(TypeError, match="cannot convert a tensor that requires grad"):
        np.asarray(t)
    assert_like(np.asarray(t.detach()), t.data)


def test_out_raises():
    t = _leaf(rand((3,)))
    with pytest.raises(TypeError, match=r"numpy\.sin: out="):
        np.sin(t, out=np.zeros(3))
    with pytest.raises(TypeError, match="out="):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(TypeError, match="out="):
        np.add.reduce(t, out=np.zeros(()))
    arr = np.zeros(3)
    with pytest.raises(TypeError, match="out="):
        arr += t  # NumPy's in-place add writes into its out= argument


def test_linalg_dispatch():
    if not hasattr(yaad, "linalg"):
        pytest.skip("yaad.linalg is not there yet")
    x = rand((3, 3))
    out = np.linalg.norm(_leaf(x))
    assert isinstance(out, yaad.Tensor) and out.requires_grad
    np.testing.assert_allclose(out.data, np.linalg.norm(x))


def test_repeated_ufunc_calls_keep_their_keywords_and_gradients():
    """A ufunc called on a tensor again (the look-up is kept after the first call without
    keywords) gives what the first call gave, and a call with ``dtype=`` or ``out=``
    before or after it still casts or raises."""
    a = np.array([[1.0, -2.0], [0.5, 3.0]])
    x0 = np.array([[0.25, 1.5], [-1.0, 2.0]])
    for _ in range(3):
        x = yaad.tensor(x0, requires_grad=True)
        y = np.multiply(x, x, dtype=np.float32)
        assert y.dtype == np.float32
        np.testing.assert_array_equal(y.numpy(), np.multiply(x0, x0, dtype=np.float32))
        z = np.add(a, x) * np.multiply(a, x)
        assert z.dtype == np.float64
        np.testing.assert_array_equal(z.numpy(), (a + x0) * (a * x0))
        z.sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad), a * x0 + (a + x0) * a, rtol=1e-15)
        with pytest.raises(TypeError, match="out="):
            np.add(a, x, out=np.empty((2, 2)))
        with pytest.raises(TypeError, match="keyword"):
            np.add(a, x, where=True)
