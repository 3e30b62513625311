"""Array backends: a tensor keeps another library's array (array_api_strict here, Dask)
without converting or computing it."""

import functools
import warnings

import array_api_strict as xps
import numpy as np
import pytest

import yaad
from tests.support import backend_table
from yaad.core.backend import BackendError


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
# Every row of tests/op_cases/elementwise.py either runs on array_api_strict arrays, with values and
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


REFUSING = {  # no array API form: they refuse, never convert
    "linalg.eig": lambda t: yaad.linalg.eig(t)[0],
    "linalg.logm": yaad.linalg.logm,
    "linalg.sqrtm": yaad.linalg.sqrtm,
    "linalg.svd": lambda t: yaad.linalg.svd(t, hermitian=True)[1],
    "linalg.expm": lambda t: yaad.linalg.expm(t * np.inf),
}


@pytest.mark.parametrize("name", sorted(REFUSING))
def test_linalg_without_an_array_api_form_refuses_clearly(name):
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
    assert ran >= 193 and differentiated >= 195, (ran, differentiated)


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


# ---- linear algebra and contractions (tests/support/backend_table.py's LINALG) -----------

_NoConversion = backend_table.NoStrictConversion


@pytest.mark.parametrize("name", sorted(backend_table.LINALG))
def test_linalg_and_contractions_on_array_api_strict(name):
    # values, reverse- and forward-mode derivatives equal NumPy's to 1e-12 (degenerate
    # spectra included: the same GaugeError where NumPy's rule refuses), with no array
    # converted to NumPy on the way
    assert backend_table.linalg_outcome(name, _strict, _numpy, guard=_NoConversion) in (
        "works", "gauge")


# ---- advanced indexing: NumPy's semantics through take, its gradient a one-hot product --

_IX = R.standard_normal((4, 5, 3))
_MASK = R.standard_normal((4, 5)) > 0
INDICES = {
    "array": (np.array([0, 2, 2, -1]),),
    "slice, array": (slice(None), np.array([0, 2, 2, -1])),
    "array, slice": (np.array([0, 2, 2, -1]), slice(1, 4)),
    "int, slice, array (apart: result axes in front)": (0, slice(None), np.array([2, 0, 2])),
    "two arrays": (np.array([0, 2, 2, -1]), np.array([1, 1, 0, 4])),
    "ellipsis, array": (Ellipsis, np.array([1, 2, 1])),
    "broadcast arrays": (slice(None), np.array([[1], [4]]), np.array([0, 2])),
    "mask": (_MASK,),
    "mask, slice": (_MASK, slice(0, 2)),
    "slice, 1-d mask": (slice(1, 3), np.array([True, False, True, True, False])),
    "arrays apart": (np.array([1, 3]), slice(None), np.array([0, 2])),
    "list": ([0, 1, 1],),
    "array, int": (np.array([0, 2, 2, -1]), 2),
    "index arrays of the backend": (xps.asarray([3, 0, 3]), xps.asarray([4, 4, 0])),
    "empty index": (np.array([], dtype=np.int64),),
    "mask selecting nothing": (np.zeros((4, 5), dtype=bool),),
    "2-d index array": (slice(None), np.array([[0, 1], [4, 4]])),
}


@pytest.mark.parametrize("case", sorted(INDICES))
def test_advanced_indexing_on_array_api_strict(case):
    idx = INDICES[case]
    numpy_idx = tuple(np.asarray(i) if type(i) is STRICT else i for i in idx)
    x = yaad.tensor(_IX, requires_grad=True)
    y = x[numpy_idx]
    cot = R.standard_normal(y.shape)
    y.backward(gradient=cot)
    s = yaad.tensor(xps.asarray(_IX), requires_grad=True)
    with _NoConversion():
        ys = s[idx]
        ys.backward(gradient=xps.asarray(cot))  # repeated indices add up
    _close(ys.data, y.data)
    _close(s.grad, x.grad)
    _, tangent = yaad.func.jvp(lambda v: v[idx], (xps.asarray(_IX),),
                               (xps.asarray(np.ones_like(_IX)),))
    _close(tangent, np.ones_like(_IX)[numpy_idx])


def test_advanced_index_out_of_bounds_raises_as_numpy_does():
    s = yaad.tensor(xps.asarray(_IX))
    with pytest.raises(IndexError, match="out of bounds for axis 1"):
        s[:, np.array([0, 5])]
    with pytest.raises(IndexError, match="out of bounds"):
        s[np.array([-5])]


def test_expm_on_the_array_api_against_a_40_digit_reference():
    # The array API expm (Pade 13, Al-Mohy and Higham's scaling) against mpmath, and the
    # adjoint Frechet derivative (the gradient) likewise: both to 1e-13. (SciPy's expm is
    # off by 1.4e-12 on this gradient: the table of tests/support/backend_table.py keeps
    # its inputs where NumPy's path is accurate to 1e-12.)
    mpmath = pytest.importorskip("mpmath")  # (installed with torch, a test dependency)
    mpmath.mp.dps = 40
    a = np.random.default_rng(7).standard_normal((3, 3)) * 4
    g = np.random.default_rng(8).standard_normal((3, 3))

    def reference(m):
        return np.array(mpmath.expm(mpmath.matrix(m.tolist())).tolist(), dtype=float)

    t = yaad.tensor(xps.asarray(a), requires_grad=True)
    with _NoConversion():
        e = yaad.linalg.expm(t)
        e.backward(gradient=xps.asarray(g))
    np.testing.assert_allclose(_numpy(e.data), reference(a), rtol=1e-13)
    block = np.block([[a.T, g], [np.zeros((3, 3)), a.T]])
    np.testing.assert_allclose(_numpy(t.grad), reference(block)[:3, 3:], rtol=1e-13)


# ---- yaad.compile and vmap on another library's arrays ---------------------------------

def _program(x, w):
    h = yaad.einsum("ij,jk->ik", x, w)
    e = yaad.linalg.eigh(h @ yaad.transpose(h))[0]
    return yaad.sum(yaad.sin(h[np.array([0, 2, 2])]) ** 2) + yaad.sum(e) + yaad.logsumexp(x)


def test_compile_replays_on_array_api_arrays():
    # A compiled function called with array_api_strict tensors records and replays on
    # them (each op in their namespace, nothing converted: see
    # tests/compiled/test_compile_foreign.py for the program set), without a warning,
    # giving eager yaad's values and gradients,
    # equal to NumPy's; NumPy inputs of the same shapes have their own signature.
    f = yaad.compile(_program)
    rng = np.random.default_rng(5)
    for _ in range(4):  # inputs change between calls
        x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
        ts = [yaad.tensor(xps.asarray(v), requires_grad=True) for v in (x, w)]
        with warnings.catch_warnings(), _NoConversion():
            warnings.simplefilter("error")
            out = f(*ts)
            out.backward()
            eager = [yaad.tensor(xps.asarray(v), requires_grad=True) for v in (x, w)]
            _program(*eager).backward()
        plain = [yaad.tensor(v, requires_grad=True) for v in (x, w)]
        expected = _program(*plain)
        expected.backward()
        _close(out.data, expected.data)
        for t, e, p in zip(ts, eager, plain):
            _close(t.grad, p.grad)
            np.testing.assert_allclose(_numpy(t.grad), _numpy(e.grad), rtol=1e-13, atol=1e-14)
    assert f.stats == {"replayed": 2, "recorded": 2, "eager": 0}
    for _ in range(3):
        plain = [yaad.tensor(rng.standard_normal(s), requires_grad=True)
                 for s in ((3, 4), (4, 2))]
        f(*plain).backward()
    assert f.stats["recorded"] == 4 and f.stats["replayed"] == 3 and len(f._trees) == 2


def test_vmap_refuses_another_backends_arrays_naming_it():
    s = yaad.tensor(xps.asarray(A))
    with pytest.raises(BackendError, match="vmap: no batching for arrays of backend "
                                           "array_api_strict"):
        yaad.func.vmap(lambda v: yaad.sum(v * v))(s)
    with pytest.raises(BackendError, match="array_api_strict"):
        yaad.func.vmap(yaad.sin)(xps.asarray(A))


SECOND_ORDER = {
    "eigh": ("sym", lambda t: yaad.sum(yaad.linalg.eigh(t)[0] ** 3)),
    "eigh degenerate": ("degen", lambda t: yaad.sum(yaad.linalg.eigh(t)[0] ** 3)),
    "svd": ("tall", lambda t: yaad.sum(yaad.linalg.svd(t, full_matrices=False)[1] ** 3)),
    "det": ("gen", lambda t: yaad.sum(yaad.linalg.det(t))),
    "expm": ("small", lambda t: yaad.sum(yaad.linalg.expm(t) ** 2)),
    "einsum": ("t3", lambda t: yaad.sum(yaad.einsum("bij,bkj->bik", t, t) ** 2)),
    "qr": ("tall", lambda t: yaad.sum(yaad.linalg.qr(t)[1] ** 2)),
    "cholesky": ("pd", lambda t: yaad.sum(yaad.linalg.cholesky(t) ** 2)),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_derivatives_of_linalg_on_array_api_strict(name):
    # the gradient with create_graph, then the gradient of its squared norm: NumPy's
    key, f = SECOND_ORDER[name]
    a = backend_table.INPUTS[key]

    def run(convert):
        t = yaad.tensor(convert(a), requires_grad=True)
        (g,) = yaad.autograd.grad(f(t), [t], create_graph=True)
        yaad.sum(g * g).backward()
        return g.data, t.grad

    expected = run(lambda v: v)
    with _NoConversion():
        got = run(xps.asarray)
    for g, e in zip(got, expected):
        _close(g, e)


# ---- yaad.func's transforms on array_api_strict arrays ----------------------------------
# grad, value_and_grad, vjp and jvp run on the arrays' library and give NumPy's numbers;
# the Jacobians (built by vmap over unit vectors) refuse naming the library.

def _loss(x, z):
    return yaad.sum(yaad.sin(x) * x) + yaad.sum(yaad.abs(z) ** 2 * x[:2])


TRANSFORMS = {
    "grad": lambda f, x, z: yaad.func.grad(f, argnums=(0, 1))(x, z),
    "value_and_grad": lambda f, x, z: yaad.func.value_and_grad(f, argnums=(0, 1))(x, z),
    "vjp": lambda f, x, z: yaad.func.vjp(lambda a: yaad.sin(a) * a, x)[1](
        x * 0 + 1.5),
    "jvp": lambda f, x, z: yaad.func.jvp(lambda a: yaad.sin(a) * a, (x,), (x * 0 + 0.5,)),
    "grad of a tensor": lambda f, x, z: yaad.func.grad(f, argnums=(0, 1))(
        yaad.as_tensor(x), yaad.as_tensor(z)),
}


def _leaves(r):
    if isinstance(r, (tuple, list)):
        return [v for item in r for v in _leaves(item)]
    return [r.data if isinstance(r, yaad.Tensor) else r]


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_func_transforms_on_array_api_strict(name):
    x = np.array([0.3, -1.2, 2.0])
    z = np.array([1.0 - 2.0j, 0.5j])
    expected = _leaves(TRANSFORMS[name](_loss, x, z))
    got = _leaves(TRANSFORMS[name](_loss, xps.asarray(x), xps.asarray(z)))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert type(e) is np.ndarray or np.isscalar(e)
        _close(g, e)
        assert _numpy(g).dtype == np.asarray(e).dtype


@pytest.mark.parametrize("name", ["jacrev", "jacfwd", "hessian"])
def test_jacobians_refuse_array_api_strict_naming_it(name):
    x = xps.asarray(np.array([0.3, -1.2, 2.0]))
    f = getattr(yaad.func, name)(lambda a: yaad.sum(yaad.sin(a) * a) if name == "hessian"
                                 else yaad.sin(a) * a)
    with pytest.raises(BackendError, match=f"{name}: .*array_api_strict.*yaad.func.vjp"):
        f(x)


def test_a_strict_array_left_of_a_tensor_is_strict_s_to_refuse():
    # (docs/backends.md: array_api_strict raises instead of returning NotImplemented;
    # the other orders run, on strict arrays)
    a = xps.asarray(np.array([1.0, 2.0]))
    t = yaad.tensor(xps.asarray(np.array([3.0, 4.0])), requires_grad=True)
    with pytest.raises(TypeError, match="Expected Array or Python scalar"):
        a * t
    for r in (t * a, yaad.multiply(a, t)):
        _close(r.data, np.array([3.0, 8.0]))
    yaad.sum(yaad.multiply(a, t)).backward()
    _close(t.grad, np.array([1.0, 2.0]))


def test_item_len_and_iteration_on_strict_and_dask_tensors():
    # The array API has no .item(), no len() and no .tolist(): a tensor's conversions read
    # its shape and its 0-d values instead (AttributeError and TypeError before).
    t = yaad.tensor(xps.asarray([1.5, -2.0]))
    assert len(t) == 2
    got = [x.item() for x in t]
    assert got == [1.5, -2.0] and all(type(v) is float for v in got)
    for data, want in [(xps.asarray([[3]]), 3), (xps.asarray([1j]), 1j),
                       (xps.asarray(True), True), (xps.asarray([7], dtype=xps.uint8), 7)]:
        value = yaad.tensor(data).item()
        assert value == want and type(value) is type(want)
    with pytest.raises(ValueError, match="one-element"):
        t.item()
    with pytest.raises(TypeError, match=r"tolist\(\).*t.to\('numpy'\)"):
        t.tolist()
    da = pytest.importorskip("dask.array")
    d = yaad.tensor(da.arange(3.0, chunks=1))
    assert len(d) == 3
    assert d[2].item() == 2.0


def test_bitwise_functions_by_their_array_api_names():
    # NumPy's invert, left_shift and right_shift are bitwise_invert, bitwise_left_shift and
    # bitwise_right_shift in the array API (they raised BackendError on strict arrays).
    a, b = np.array([5, -3, 0], np.int64), np.array([1, 2, 0], np.int64)
    for name in ("invert", "left_shift", "right_shift"):
        fn = getattr(yaad, name)
        args = (a,) if name == "invert" else (a, b)
        got = fn(*(yaad.tensor(xps.asarray(v)) for v in args)).data
        assert type(got) is type(xps.asarray(a))
        np.testing.assert_array_equal(np.asarray(yaad.tensor(got).to("numpy").numpy()),
                                      getattr(np, name)(*args))
    mask = yaad.tensor(xps.asarray([True, False]))
    assert yaad.invert(mask).to("numpy").numpy().tolist() == [False, True]
