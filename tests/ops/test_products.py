"""Products: matmul dot vdot inner outer tensordot kron trace, against NumPy (values, shapes,
dtypes) and finite differences (gradients, second derivatives, forward mode), real,
complex and mixed, batched and broadcast."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from tests.support.arrays import assert_like_numpy, check_jvp, random_array
from yaad.testing import gradcheck, gradgradcheck

# (name, shapes, keyword arguments); the NumPy function of the same name is the oracle.
CASES = [
    ("matmul", ((3,), (3,)), {}),
    ("matmul", ((2, 3), (3,)), {}),
    ("matmul", ((3,), (3, 4)), {}),
    ("matmul", ((2, 3), (3, 4)), {}),
    ("matmul", ((2, 1, 2, 3), (4, 3, 2)), {}),
    ("matmul", ((3,), (2, 3, 4)), {}),
    ("matmul", ((2, 2, 3), (3,)), {}),
    ("matmul", ((6, 6), (6,)), {}),
    ("dot", ((), (2, 3)), {}),
    ("dot", ((3,), (3,)), {}),
    ("dot", ((2, 3), (3, 4)), {}),
    ("dot", ((2, 3), (3,)), {}),
    ("dot", ((3,), (3, 2)), {}),
    ("dot", ((2, 2, 3), (3,)), {}),
    ("dot", ((2, 3), (2, 3, 4)), {}),
    ("dot", ((2, 2, 3), (4, 3, 2)), {}),
    ("vdot", ((3,), (3,)), {}),
    ("vdot", ((2, 3), (3, 2)), {}),
    ("vdot", ((2, 2), (4,)), {}),
    ("inner", ((3,), (3,)), {}),
    ("inner", ((2, 3), (4, 3)), {}),
    ("inner", ((), (2, 3)), {}),
    ("inner", ((2, 2, 3), (3,)), {}),
    ("outer", ((3,), (4,)), {}),
    ("outer", ((2, 2), (3,)), {}),
    ("tensordot", ((2, 3, 4), (3, 4, 5)), {}),
    ("tensordot", ((2, 3), (3, 4)), {"axes": 1}),
    ("tensordot", ((2,), (3,)), {"axes": 0}),
    ("tensordot", ((3, 2, 4), (2, 3, 5)), {"axes": ([1, 0], [0, 1])}),
    ("tensordot", ((2, 3), (3, 4)), {"axes": (-1, 0)}),
    ("tensordot", ((4, 2, 3), (5, 4, 3)), {"axes": ([2, 0], [2, 1])}),
    ("kron", ((2, 2), (3, 3)), {}),
    ("kron", ((3,), (2,)), {}),
    ("kron", ((2,), (2, 3)), {}),
    ("kron", ((2, 1, 2), (3, 2)), {}),
    ("kron", ((), (2,)), {}),
    ("trace", ((3, 3),), {}),
    ("trace", ((3, 4),), {"offset": 1}),
    ("trace", ((4, 3),), {"offset": -1}),
    ("trace", ((2, 3, 3),), {"axis1": 1, "axis2": 2}),
    ("trace", ((3, 2, 3),), {"axis1": 0, "axis2": 2}),
    ("trace", ((3, 3, 2),), {"axis1": 1, "axis2": 0, "offset": 1}),
    ("trace", ((2, 3, 4, 3),), {"axis1": -1, "axis2": 1}),
]
IDS = [f"{n}-{'x'.join(map(str, s[0]))}-{'x'.join(map(str, s[-1]))}-{k}" for n, s, k in CASES]


def _inputs(shapes, dtypes, seed=0):
    rng = np.random.default_rng(seed)
    return [random_array(rng, s, d) for s, d in zip(shapes, dtypes)]


def _f(name, kw):
    fn = getattr(yaad, name)
    return lambda *xs: fn(*xs, **kw)


DTYPE_PAIRS = [(np.float64, np.float64), (np.float32, np.float32), (np.complex128,) * 2,
               (np.float32, np.float64), (np.float64, np.complex128)]


@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=lambda d: "-".join(np.dtype(t).name
                                                                        for t in d))
@pytest.mark.parametrize("name, shapes, kw", CASES, ids=IDS)
def test_values_like_numpy(name, shapes, kw, dtypes):
    xs = _inputs(shapes, dtypes)
    expected = getattr(np, name)(*xs, **kw)
    out = _f(name, kw)(*[yaad.tensor(x, requires_grad=True) for x in xs])
    assert isinstance(out, yaad.Tensor) and out.requires_grad
    tol = 1e-5 if np.float32 in dtypes else 1e-12
    assert_like_numpy(out, expected, exact=False, rtol=tol, atol=tol)
    assert_like_numpy(_f(name, kw)(*xs), expected, exact=False, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["real", "complex", "mixed"])
@pytest.mark.parametrize("name, shapes, kw", CASES, ids=IDS)
def test_gradients(name, shapes, kw, kind):
    dtypes = {"real": (np.float64,) * 2, "complex": (np.complex128,) * 2,
              "mixed": (np.complex128, np.float64)}[kind]
    xs = _inputs(shapes, dtypes)
    gradcheck(_f(name, kw), xs)
    if kind == "mixed" and len(xs) == 2:
        gradcheck(_f(name, kw), _inputs(shapes, dtypes[::-1]))


@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.parametrize("name, shapes, kw", CASES, ids=IDS)
def test_second_derivatives(name, shapes, kw, kind):
    dtype = np.float64 if kind == "real" else np.complex128
    gradgradcheck(_f(name, kw), _inputs(shapes, (dtype,) * 2))


@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.parametrize("name, shapes, kw", CASES, ids=IDS)
def test_forward_mode(name, shapes, kw, kind):
    dtype = np.float64 if kind == "real" else np.complex128
    check_jvp(_f(name, kw), _inputs(shapes, (dtype,) * 2))


@pytest.mark.parametrize("name, shapes, kw", CASES, ids=IDS)
def test_float32_gradients_stay_float32(name, shapes, kw):
    xs = _inputs(shapes, (np.float32,) * 2)
    ts = [yaad.tensor(x, requires_grad=True) for x in xs]
    out = _f(name, kw)(*ts)
    assert out.dtype == np.float32
    yaad.sum(out).backward()
    ref = [yaad.tensor(x.astype(np.float64), requires_grad=True) for x in xs]
    yaad.sum(_f(name, kw)(*ref)).backward()
    for t, r in zip(ts, ref):
        assert t.grad.dtype == np.float32 and t.grad.shape == t.shape
        np.testing.assert_allclose(t.grad, r.grad, rtol=1e-5, atol=1e-5)


def test_seed_example_gradients_are_transposes(rng):
    a, b = rng.random((30, 30)), rng.random((30, 30))
    x1, x2 = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
    yaad.trace(x1 @ x2).backward()
    np.testing.assert_allclose(x1.grad, b.T)
    np.testing.assert_allclose(x2.grad, a.T)


def test_complex_matmul_gradients_are_conjugate_transposes(rng):
    a = random_array(rng, (3, 4), complex)
    b = random_array(rng, (4, 2), complex)
    g = random_array(rng, (3, 2), complex)
    ta, tb = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
    (ta @ tb).backward(g)
    np.testing.assert_allclose(ta.grad, g @ b.conj().T)
    np.testing.assert_allclose(tb.grad, a.conj().T @ g)


def test_vdot_conjugates_its_first_argument(rng):
    a, b = random_array(rng, (3,), complex), random_array(rng, (3,), complex)
    ta, tb = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
    out = yaad.vdot(ta, tb)
    np.testing.assert_allclose(out.data, np.sum(a.conj() * b))
    yaad.real(out).backward()
    # Re(sum(conj(a) b)): d/d(conj a) = b / 2 ... in the convention, grad_a = b, grad_b = a.
    np.testing.assert_allclose(ta.grad, b)
    np.testing.assert_allclose(tb.grad, a)


def test_trace_dtype_argument(rng):
    a = rng.random((3, 3))
    t = yaad.tensor(a, requires_grad=True)
    out = yaad.trace(t, dtype=np.complex128)
    assert out.dtype == np.complex128
    yaad.real(out * (1 + 2j)).backward()
    np.testing.assert_array_equal(t.grad, np.eye(3))


def test_numpy_functions_dispatch_to_yaad(rng):
    a, b = rng.random((2, 3)), rng.random((3, 4))
    ta, tb = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
    for fn in (np.dot, np.matmul, lambda x, y: np.tensordot(x, y, 1)):
        out = fn(ta, tb)
        assert isinstance(out, yaad.Tensor) and out.requires_grad
        np.testing.assert_allclose(out.data, a @ b)


@pytest.mark.parametrize("call, match", [
    (lambda a, b: yaad.matmul(a, b), "matmul"),
    (lambda a, b: yaad.dot(a, b), "matmul"),
    (lambda a, b: yaad.vdot(a, b[:1]), "vdot"),
    (lambda a, b: yaad.tensordot(a, b, axes=3), "tensordot"),
    (lambda a, b: yaad.tensordot(a, b, axes=([1], [0])), "tensordot"),
])
def test_shape_errors_name_the_op(call, match):
    a = yaad.tensor(np.ones((2, 3)), requires_grad=True)
    b = yaad.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match=match):
        call(a, b)


def test_out_argument_is_refused():
    a = yaad.tensor(np.ones((2, 2)))
    for call in (lambda: yaad.trace(a, out=np.zeros(())),
                 lambda: yaad.outer(a, a, out=np.zeros((4, 4)))):
        with pytest.raises(TypeError, match="out="):
            call()


_TENSORDOT_CALLS = [
    ((2, 2), (2, 2, 2, 2, 2), ([1], [3])),  # W13's gate on qubit 3
    ((2, 2, 2, 2), (2, 2, 2, 2, 2), ([2, 3], [4, 0])),  # W13's CNOT on a ring's last pair
    ((3, 4, 5), (4, 3, 2), ([1, 0], [0, 1])),
    ((3, 4), (4, 5), 1),
    ((3, 4), (5, 6), 0),  # an outer product
    ((), (), 0),
    ((3, 4, 5), (4, 5, 6), 2),
    ((3, 4, 5), (4, 5, 6), ([-2, -1], [0, 1])),
    ((3, 4), (4, 3), (1, 0)),  # ints, not sequences
    ((3, 4), (4, 3), ([0, -2], [1, 0])),  # one axis twice (0 and -2): NumPy's error
    ((3, 4), (3, 4), ([0, 0], [0, 1])),  # a duplicate
    ((3, 4), (5, 4), ([0], [0])),  # a length mismatch
    ((3, 4), (4, 5), ([5], [0])),  # out of range
    ((3, 4), (4, 5), (np.int64(1), np.int64(0))),  # NumPy integers
    ((3, 4), (4, 5), np.int64(1)),
    ((3, 4), (4, 5), ([1], [0, 1])),  # unequal numbers of axes
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
@pytest.mark.parametrize("sa, sb, axes", _TENSORDOT_CALLS)
def test_tensordot_on_arrays_is_numpys_bit_for_bit(sa, sb, axes, dtype):
    """tensordot on NumPy arrays (its forward, and each step of its VJP) reads the shapes
    and axes from a cache and makes numpy.tensordot's calls: the same values bit for bit,
    dtype and shape, the same error where NumPy raises, twice (the cached plan)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(sa) * 3
    b = rng.standard_normal(sb) * 3
    if np.dtype(dtype).kind == "c":
        a, b = a + 1j * rng.standard_normal(sa), b + 1j * rng.standard_normal(sb)
    a, b = a.astype(dtype), b.astype(dtype)
    for _ in range(2):
        try:
            expected = np.tensordot(a, b, axes)
        except Exception as e:  # noqa: BLE001  (NumPy's own error, whatever it is)
            with pytest.raises((type(e), ValueError)):
                yaad.tensordot(a, b, axes)
            continue
        got = yaad.tensordot(a, b, axes)
        assert type(got) is np.ndarray and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, strict=True)
        if dtype is np.int64:
            continue
        ta, tb = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
        out = yaad.tensordot(ta, tb, axes)
        np.testing.assert_array_equal(out.numpy(), expected, strict=True)
        cot = rng.standard_normal(expected.shape).astype(expected.dtype)
        ga, gb = yaad.autograd.grad(out, [ta, tb], cot)
        with yaad.enable_grad():
            ga2, gb2 = yaad.autograd.grad(yaad.tensordot(ta, tb, axes), [ta, tb],
                                          yaad.tensor(cot), create_graph=True)
        np.testing.assert_allclose(np.asarray(ga), ga2.numpy(), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(gb), gb2.numpy(), rtol=1e-5)
