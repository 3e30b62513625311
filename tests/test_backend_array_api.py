"""Array backends: a tensor keeps another library's array (array_api_strict here, Dask)
without converting or computing it."""

import functools
import warnings

import array_api_strict as xps
import numpy as np
import pytest
from support import backend_table

import yaad
from yaad.backend import BackendError


def test_tensor_keeps_an_array_api_array():
    a = xps.asarray([[1.0, 2.0], [3.0, 4.0]])
    t = yaad.Tensor(a)
    assert t.data is a  # no copy, no conversion
    assert t.shape == (2, 2) and t.ndim == 2
    assert t.dtype == xps.float64
    c = yaad.tensor(a, requires_grad=True)
    assert type(c.data) is type(a) and c.data is not a and c.requires_grad
    a[0, 0] = 10.0  # the copy is independent
    assert float(c.data[0, 0]) == 1.0
    assert yaad.as_tensor(a).data is a


def test_tensor_dtype_given_as_numpy_dtype_becomes_the_backends_own():
    t = yaad.tensor(xps.asarray([1, 2]), dtype=np.float32)
    assert type(t.data) is type(xps.asarray(1)) and t.dtype == xps.float32
    assert yaad.as_tensor(xps.asarray([1, 2]), dtype="float64").dtype == xps.float64


def test_integer_array_api_tensor_cannot_require_grad():
    with pytest.raises(TypeError, match="only floating point and complex"):
        yaad.tensor(xps.asarray([1, 2]), requires_grad=True)


def test_repr_names_shape_dtype_and_backend():
    t = yaad.tensor(xps.asarray([1.0, 2.0, 3.0]), requires_grad=True)
    assert repr(t) == ("tensor(<shape=(3,), dtype=float64, backend=array_api_strict>, "
                       "requires_grad=True)")


def test_dask_array_kept_lazy_and_repr_computes_nothing():
    da = pytest.importorskip("dask.array")

    def explode(block):
        raise AssertionError("the Dask array was computed")

    d = da.ones((6, 4), chunks=(3, 2)).map_blocks(explode, dtype=np.float64)
    t = yaad.tensor(d, requires_grad=True)  # a copy by Dask: still lazy
    assert isinstance(t.data, da.Array) and t.shape == (6, 4) and t.dtype == np.float64
    assert repr(t) == "tensor(<shape=(6, 4), dtype=float64, backend=dask>, requires_grad=True)"
    assert yaad.as_tensor(d).data is d and yaad.Tensor(d).data is d
    str(t), t._repr_html_()


# ---- the op-case table on array_api_strict arrays ---------------------------------------
# Every row of tests/op_cases.py either runs on array_api_strict arrays, with values and
# gradients (reverse and forward mode) equal to NumPy's and results that stay
# array_api_strict arrays, or raises yaad.BackendError naming the op and the backend. Any
# other outcome (a silent conversion to NumPy, a wrong value, another error) fails.

STRICT = type(xps.asarray(0.0))


def _strict(v):
    return xps.asarray(v) if isinstance(v, np.ndarray) else v


def _numpy(v):
    assert type(v) is STRICT, f"expected an array_api_strict array, got {type(v).__name__}"
    return np.asarray(v)  # (strict arrays convert explicitly through the buffer protocol)


def _close(got, expected):
    got = _numpy(got)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


@functools.cache
def outcome(name, dtype):
    return backend_table.outcome(name, dtype, _strict, _numpy)


@pytest.mark.parametrize("name,dtype", backend_table.cases())
def test_op_case_table_on_array_api_strict(name, dtype):
    result, message = outcome(name, dtype)
    if result == "refuses":
        assert "array_api_strict" in message and "yaad." in message, message


# Ops that must run on any array API backend (the rest may refuse, clearly).
MUST_WORK = ["sin", "cos", "tan", "tanh", "exp", "expm1", "log", "log1p", "sqrt", "square",
             "add", "subtract", "multiply", "divide", "power", "negative", "absolute",
             "maximum", "minimum", "where", "real", "imag", "conjugate", "arctan2", "hypot"]


def test_op_case_table_counts(capsys):
    results = {case: outcome(*case)[0] for case in backend_table.cases()}
    with capsys.disabled():
        print("\n" + backend_table.summary(results, "array_api_strict"))
    missing = [n for n in MUST_WORK if results[(n, "float64")] != "works"]
    assert not missing, f"these ops must run on array API arrays: {missing}"


# ---- beyond the elementwise table: the engine's bookkeeping and other op families --------

def _value_and_grads(f, xs, backend):
    conv = _strict if backend == "strict" else (lambda v: v)
    ts = [yaad.tensor(conv(x), requires_grad=True) for x in xs]
    out = f(*ts)
    dtype = np.asarray(out.data).dtype
    cot = np.random.default_rng(2).standard_normal(out.shape).astype(dtype)
    out.backward(gradient=conv(cot))
    return out.data, [t.grad for t in ts]


def _same_as_numpy(f, *xs):
    """``f`` on array_api_strict tensors: values and gradients equal NumPy's, and of the
    strict type; or a BackendError (returned, for the caller to judge)."""
    expected = _value_and_grads(f, xs, "numpy")
    try:
        got = _value_and_grads(f, xs, "strict")
    except BackendError as e:
        return e
    _close(got[0], expected[0])
    for g, e in zip(got[1], expected[1]):
        _close(g, e)
    return None


R = np.random.default_rng(3)
A, B = R.standard_normal((3, 4)), R.standard_normal((4,))
Z = R.standard_normal((3, 4)) + 1j * R.standard_normal((3, 4))

WORKING = {
    "broadcast reduction": (lambda a, b: a * b, A, B),
    "complex to real projection": (lambda a, z: a * z, A, Z),
    "sum axis": (lambda a: yaad.sum(a, axis=0), A),
    "sum keepdims": (lambda a: yaad.sum(a * a, axis=1, keepdims=True), A),
    "mean": (lambda a: yaad.mean(a, axis=(0, 1)) * a, A),
    "prod": (lambda a: yaad.prod(a, axis=1), A),
    "max ties split": (lambda a: yaad.max(a, axis=0), np.array([[1.0, 2.0], [1.0, 0.5]])),
    "var ddof": (lambda a: yaad.var(a, axis=0, ddof=1), A),
    "std": (lambda a: yaad.std(a), A),
    "reshape": (lambda a: yaad.reshape(a, (2, 6)), A),
    "transpose": (lambda a: yaad.transpose(a) * 2, A),
    "swapaxes": (lambda a: yaad.swapaxes(a[None], 0, 2), A),
    "moveaxis": (lambda a: yaad.moveaxis(a[None], 0, -1), A),
    "expand_dims/squeeze": (lambda a: yaad.squeeze(yaad.expand_dims(a, (0, 2)), 0), A),
    "broadcast_to": (lambda b: yaad.broadcast_to(b, (3, 4)), B),
    "concatenate": (lambda a, z: yaad.concatenate([a, yaad.real(z)], axis=1), A, Z),
    "stack": (lambda a: yaad.stack([a, 2 * a], axis=-1), A),
    "flip": (lambda a: yaad.flip(a, axis=1), A),
    "getitem": (lambda a: a[1:, ::2], A),
    "matmul": (lambda a, b: yaad.matmul(a, b), A, B),
    "astype": (lambda a: yaad.astype(a, np.complex128) * 1j, A),
    "cumsum": (lambda a: yaad.cumsum(a, axis=1), A),
}


@pytest.mark.parametrize("case", sorted(WORKING))
def test_other_op_families_on_array_api_strict(case):
    f, *xs = WORKING[case]
    assert _same_as_numpy(f, *xs) is None


def test_an_op_without_an_implementation_refuses_naming_op_and_backend():
    t = yaad.tensor(xps.asarray(A), requires_grad=True)
    with pytest.raises(BackendError, match=r"no implementation of yaad.erf for backend "
                                           r"array_api_strict.*t.to\('numpy'\)"):
        yaad.erf(t)
    with pytest.raises(BackendError, match="yaad.einsum.*array_api_strict"):
        yaad.einsum("ij,ij->", t, t)


REFUSING = {  # not (yet) written with the array API: they refuse, never convert
    "linalg.eigh": lambda t: yaad.linalg.eigh(t)[0],
    "linalg.svd": lambda t: yaad.linalg.svd(t)[1],
    "linalg.qr": lambda t: yaad.linalg.qr(t)[1],
    "linalg.solve": lambda t: yaad.linalg.solve(t, t),
    "linalg.cholesky": yaad.linalg.cholesky,
    "linalg.inv": yaad.linalg.inv,
    "linalg.det": yaad.linalg.det,
    "linalg.expm": yaad.linalg.expm,
    "einsum": lambda t: yaad.einsum("bij->b", t),
    "trace": lambda t: yaad.trace(t, axis1=1, axis2=2),
    "logsumexp": yaad.logsumexp,
}


@pytest.mark.parametrize("name", sorted(REFUSING))
def test_linalg_and_contractions_refuse_clearly(name):
    a = R.standard_normal((2, 3, 3))
    t = yaad.tensor(xps.asarray(a + np.swapaxes(a, -1, -2) + 6 * np.eye(3)),
                    requires_grad=True)
    with pytest.raises(BackendError, match=f"no implementation of yaad.{name} for backend "
                                           f"array_api_strict"):
        REFUSING[name](t)


def test_mixing_backends_in_one_op_names_both():
    s = yaad.tensor(xps.asarray(B), requires_grad=True)
    n = yaad.tensor(B, requires_grad=True)
    for f in (lambda: s * n, lambda: n + s, lambda: yaad.matmul(yaad.tensor(A), s),
              lambda: yaad.stack([s, n])):
        with pytest.raises(BackendError, match="mixes arrays of two backends, (numpy|"
                                               "array_api_strict).*(array_api_strict|numpy)"):
            f()
    with pytest.raises(BackendError, match="gradient for output 0 is a numpy array"):
        (s * s).backward(gradient=np.ones(4))


def test_to_moves_explicitly_and_the_gradient_flows_back():
    x = yaad.tensor(A, requires_grad=True)
    s = x.to(xps)
    assert type(s.data) is STRICT and s.grad_fn.op.name == "to"
    back = yaad.sin(s * s).to("numpy")
    assert type(back.data) is np.ndarray
    np.testing.assert_allclose(back.data, np.sin(A * A), rtol=1e-15)
    back.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * A * np.cos(A * A), rtol=1e-13)
    assert x.to("cpu") is x and s.to("array_api_strict") is s
    # forward mode and a second derivative through the moves
    _, tangent = yaad.func.jvp(lambda v: yaad.sin(v.to(xps)).to("numpy"), (A,),
                               (np.ones_like(A),))
    np.testing.assert_allclose(tangent, np.cos(A), rtol=1e-15)
    g = yaad.func.grad(lambda v: yaad.sum(yaad.func.grad(
        lambda w: yaad.sum(yaad.sin(w.to(xps))).to("numpy"))(v) ** 2))(A)
    np.testing.assert_allclose(g, -2 * np.cos(A) * np.sin(A), rtol=1e-13)


def test_a_move_copies_so_writes_do_not_reach_the_source():
    s = yaad.tensor(xps.asarray(A))
    moved = s.to("numpy")
    moved += 1.0
    np.testing.assert_array_equal(np.asarray(s.to("numpy").data), A)
    assert not np.shares_memory(moved.data, np.asarray(s.to("numpy").data))


def test_numpy_of_another_backend_refuses_and_cupy_is_named_when_missing():
    s = yaad.tensor(xps.asarray(B))
    with pytest.raises(TypeError, match=r"move it first: t.to\('numpy'\)"):
        s.numpy()
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(BackendError, match="'cupy' is not installed"):
            s.to("cupy")
        with pytest.raises(BackendError, match="'cupy' is not installed"):
            yaad.zeros(3, device="cuda")


def test_creation_like_and_device():
    like = xps.asarray([1.0])
    for t, expected in [(yaad.zeros((2, 3), like=like), np.zeros((2, 3))),
                        (yaad.ones(3, like=like, dtype=np.float32), np.ones(3, np.float32)),
                        (yaad.full((2,), 7.0, like=like), np.full((2,), 7.0)),
                        (yaad.eye(2, 3, 1, like=like), np.eye(2, 3, 1)),
                        (yaad.identity(3, like=like), np.identity(3)),
                        (yaad.arange(1.0, 4.0, like=like), np.arange(1.0, 4.0)),
                        (yaad.zeros_like(yaad.tensor(xps.asarray(A))), np.zeros_like(A)),
                        (yaad.full_like(xps.asarray(A), 2.0), np.full_like(A, 2.0))]:
        assert type(t.data) is STRICT
        got = np.asarray(t.data)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert type(yaad.zeros(2, device="cpu").data) is np.ndarray


def _public_functions():
    import inspect

    import yaad.fft
    import yaad.linalg
    import yaad.nn.functional
    import yaad.stats

    for module in (yaad, yaad.linalg, yaad.fft, yaad.stats, yaad.nn.functional):
        for name in sorted(dir(module)):
            f = getattr(module, name)
            if not name.startswith("_") and callable(f) and not inspect.isclass(f):
                yield f"{module.__name__}.{name}", f


def _outputs(r):
    return [o for o in (r if isinstance(r, (tuple, list)) else (r,))]


def test_no_public_function_hands_back_numpy_for_array_api_input():
    # The sweep behind "never a silent transfer to NumPy": every public function of yaad,
    # yaad.linalg, yaad.fft, yaad.stats and yaad.nn.functional on a (3, 3) matrix, a
    # vector and two matrices (the first call it accepts). What runs returns
    # array_api_strict arrays, equal to NumPy's, and so are the gradients; the rest
    # refuses or rejects the arguments. (It found linalg.schur returning NumPy arrays.)
    x0, v0 = R.standard_normal((3, 3)), R.standard_normal(3)
    ran = differentiated = 0
    for name, f in _public_functions():
        for inputs in ((x0,), (v0,), (x0, x0)):
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = f(*[yaad.tensor(xps.asarray(a)) for a in inputs])
            except Exception:  # a refusal, or arguments this function does not take
                continue
            ran += 1
            for o in _outputs(out):
                assert not isinstance(o, np.ndarray) or o.ndim == 0, name
                if isinstance(o, yaad.Tensor) and o.ndim:
                    assert not isinstance(o.data, np.ndarray), name
            differentiated += _same_gradients_as_numpy(name, f, inputs)
            break
    assert ran > 150 and differentiated > 140, (ran, differentiated)


def _same_gradients_as_numpy(name, f, inputs):
    """How many gradients of sum(real(f)) on array_api_strict inputs were compared with
    NumPy's (0 where f has no gradient or refuses in backward)."""
    strict = [yaad.tensor(xps.asarray(a), requires_grad=True) for a in inputs]
    plain = [yaad.tensor(a, requires_grad=True) for a in inputs]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            first = _outputs(f(*strict))[0]
        except Exception:
            return 0
        if not (isinstance(first, yaad.Tensor) and first.requires_grad):
            return 0
        ref = _outputs(f(*plain))[0]
        np.testing.assert_allclose(np.asarray(first.to("numpy").data), ref.data,
                                   rtol=1e-12, atol=1e-12, err_msg=name)
        try:
            yaad.sum(yaad.real(first)).backward()
        except BackendError:
            return 0
        yaad.sum(yaad.real(ref)).backward()
    compared = 0
    for s, p in zip(strict, plain):
        if p.grad is not None:
            assert not isinstance(s.grad, np.ndarray), name
            np.testing.assert_allclose(np.asarray(yaad.tensor(s.grad).to("numpy").data),
                                       p.grad, rtol=1e-10, atol=1e-12, err_msg=name)
            compared += 1
    return compared
