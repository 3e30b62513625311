"""Shape, dtype and error rules of every product and ``linalg`` function, against NumPy.

A property test: hypothesis draws operand shapes (valid ones from each function's gufunc
signature, and arbitrary ones that often are not) and dtypes (bool, unsigned, signed,
float16/32/64, complex64/128, and mixed pairs). For each draw, yaad must raise where NumPy
raises, and otherwise give NumPy's shape, dtype and values; where both inputs are inexact,
the gradients have the inputs' shapes and dtypes. The deviations that are documented
(docs/linalg.md) are listed in ``DEVIATIONS`` and asserted as such.
"""

from __future__ import annotations

import warnings

import hypothesis.extra.numpy as npst
import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import yaad
from tests.support.reliability import fuzz_settings

DTYPES = [np.bool_, np.uint8, np.uint64, np.int8, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.complex64, np.complex128]
ERRORS = (ValueError, IndexError, TypeError)

L, Y = np.linalg, yaad.linalg

# name: (NumPy's function, yaad's, a gufunc signature for the valid shapes, or None to draw
# shapes that broadcast). Two operands each.
BINARY = {
    "vecdot": (np.vecdot, yaad.vecdot, "(n),(n)->()"),
    "vecdot_axis0": (lambda a, b: np.vecdot(a, b, axis=0),
                     lambda a, b: yaad.vecdot(a, b, axis=0), "(n),(n)->()"),
    "linalg.vecdot": (L.vecdot, Y.vecdot, "(n),(n)->()"),
    "matmul": (np.matmul, yaad.matmul, "(m?,n),(n,p?)->(m?,p?)"),
    "linalg.matmul": (L.matmul, Y.matmul, "(m?,n),(n,p?)->(m?,p?)"),
    "matvec": (np.matvec, yaad.matvec, "(m,n),(n)->(m)"),
    "vecmat": (np.vecmat, yaad.vecmat, "(m),(m,n)->(n)"),
    "dot": (np.dot, yaad.dot, "(m?,n),(n,p?)->(m?,p?)"),
    "vdot": (np.vdot, yaad.vdot, "(n),(n)->()"),
    "inner": (np.inner, yaad.inner, "(n),(n)->()"),
    "outer": (np.outer, yaad.outer, None),
    "linalg.outer": (L.outer, Y.outer, "(m),(n)->(m,n)"),
    "kron": (np.kron, yaad.kron, None),
    "tensordot": (np.tensordot, yaad.tensordot, "(m,n),(m,n)->()"),
    "tensordot_1": (lambda a, b: np.tensordot(a, b, 1),
                    lambda a, b: yaad.tensordot(a, b, 1), "(m,n),(n,p)->(m,p)"),
    "linalg.tensordot": (L.tensordot, Y.tensordot, "(m,n),(m,n)->()"),
    "einsum_matmul": (lambda a, b: np.einsum("...ij,...jk", a, b),
                      lambda a, b: yaad.einsum("...ij,...jk", a, b), "(m,n),(n,p)->(m,p)"),
    "einsum_trace": (lambda a, b: np.einsum("ii,i->i", a, b),
                     lambda a, b: yaad.einsum("ii,i->i", a, b), "(n,n),(n)->(n)"),
    "cross": (np.cross, yaad.cross, "(n),(n)->(n)"),
    "linalg.cross": (L.cross, Y.cross, "(n),(n)->(n)"),
    "multi_dot_2": (lambda a, b: L.multi_dot([a, b]), lambda a, b: Y.multi_dot([a, b]),
                    "(m?,n),(n,p?)->(m?,p?)"),
    "multi_dot_3": (lambda a, b: L.multi_dot([a, b, b]), lambda a, b: Y.multi_dot([a, b, b]),
                    "(m?,n),(n,n)->(m?,n)"),
    "linalg.solve": (L.solve, Y.solve, "(n,n),(n,p)->(n,p)"),
    "linalg.lstsq": (lambda a, b: L.lstsq(a, b)[0], lambda a, b: Y.lstsq(a, b)[0],
                     "(m,n),(m,p)->(n,p)"),
    "linalg.tensorsolve": (L.tensorsolve, Y.tensorsolve, "(m,n),(m)->(n)"),
}

# name: (NumPy's function, yaad's); one operand, drawn square or not.
UNARY = {name: (getattr(L, name), getattr(Y, name)) for name in [
    "cholesky", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm",
    "matrix_rank", "matrix_transpose", "norm", "pinv", "qr", "slogdet", "svd", "svdvals",
    "vector_norm", "diagonal", "trace"]}
UNARY["matrix_power_3"] = (lambda a: L.matrix_power(a, 3), lambda a: Y.matrix_power(a, 3))
UNARY["matrix_power_-2"] = (lambda a: L.matrix_power(a, -2), lambda a: Y.matrix_power(a, -2))
UNARY["tensorinv"] = (lambda a: L.tensorinv(a[..., None], 1),
                      lambda a: Y.tensorinv(yaad.expand_dims(a, -1), 1))
UNARY["np.trace"] = (np.trace, yaad.trace)


def _always_complex(want_dtype, want_shape, got_dtype, got_shape):
    # docs/linalg.md: eig and eigvals always return complex arrays (NumPy: real ones when
    # every eigenvalue is real, a dtype that depends on the values)
    return got_shape == want_shape and got_dtype == np.result_type(want_dtype, np.complex64)


DEVIATIONS = {
    "eig": _always_complex,
    "eigvals": _always_complex,
}
# the output whose gradient is checked, where the first has none (a real sign) or depends on
# a gauge (singular vectors)
GRADIENT_OUTPUT = {"slogdet": 1, "svd": 1}
# docs/linalg.md: lstsq accepts batches of matrices, where NumPy raises
BATCHED_EXTENSIONS = {"linalg.lstsq"}


def _values(shape, dtype, seed):
    """Small integers (exact in every dtype), diagonally dominant when square."""
    r = np.random.default_rng(seed)
    a = r.integers(0, 3, size=shape).astype(np.float64)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + 6 * np.eye(shape[-1])
    if np.dtype(dtype).kind == "c":
        a = a + 1j * r.integers(0, 2, size=shape)
    return a.astype(dtype)


def _numpy(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except ERRORS as e:
            return None, e


def _outputs(r):
    return list(r) if isinstance(r, tuple) else [r]


def _array(x):
    return np.asarray(x.detach().numpy() if isinstance(x, yaad.Tensor) else x)


def _check(name, nf, yf, arrays):
    want, err = _numpy(nf, *arrays)
    inexact = all(a.dtype.kind in "fc" and a.dtype != np.float16 for a in arrays)
    tensors = [yaad.tensor(a, requires_grad=inexact) for a in arrays]
    if err is not None:
        if name in BATCHED_EXTENSIONS and max(a.ndim for a in arrays) > 2:
            return
        with pytest.raises(ERRORS):
            yf(*tensors)
        return
    got = _outputs(yf(*tensors))
    want = _outputs(want)
    assert len(got) == len(want)
    for w, g in zip(want, got):
        w, gv = np.asarray(w), _array(g)
        if name in DEVIATIONS:
            assert DEVIATIONS[name](w.dtype, w.shape, gv.dtype, gv.shape), (w, gv)
            continue
        assert (gv.shape, gv.dtype) == (w.shape, w.dtype), (name, w, gv)
        if name in BINARY and w.dtype.kind in "biuc" or w.dtype.kind == "f" and w.size:
            np.testing.assert_allclose(gv, w, rtol=1e-2 if w.dtype == np.float16 else 1e-5,
                                       atol=1e-5)
    # gradients keep each input's shape and dtype, broadcast or not
    out = got[GRADIENT_OUTPUT.get(name, 0)]
    if inexact and isinstance(out, yaad.Tensor) and out.requires_grad and out.dtype.kind in "fc":
        loss = yaad.sum(yaad.real(out)) if out.dtype.kind == "c" else yaad.sum(out)
        try:
            loss.backward()
        except yaad.linalg.GaugeError:
            # a drawn matrix with a degenerate or zero singular value (small integers):
            # no derivative exists there (tests/linalg/test_degenerate_spectra.py checks when)
            return
        for t in tensors:
            assert t.grad is not None and (t.grad.shape, t.grad.dtype) == (t.shape, t.dtype)


def _shapes(signature):
    arbitrary = st.tuples(npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
                          npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    if signature is None:
        valid = npst.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3).map(
            lambda b: b.input_shapes)
    else:
        valid = npst.mutually_broadcastable_shapes(signature=signature, max_dims=2,
                                                   min_side=1, max_side=3).map(
            lambda b: b.input_shapes)
    return st.one_of(valid, valid, arbitrary)


def _dtype_pairs():
    same = st.sampled_from(DTYPES).map(lambda d: (d, d))
    return st.one_of(same, same, st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)))


@pytest.mark.parametrize("name", list(BINARY))
@fuzz_settings(40, 1000)
@given(data=st.data())
def test_binary_shape_dtype_and_errors_follow_numpy(name, data):
    nf, yf, signature = BINARY[name]
    sa, sb = data.draw(_shapes(signature), label="shapes")
    da, db = data.draw(_dtype_pairs(), label="dtypes")
    arrays = [_values(sa, da, 0), _values(sb, db, 1)]
    note(f"NumPy: {_numpy(nf, *arrays)[1]!r}")
    _check(name, nf, yf, arrays)


@pytest.mark.parametrize("name", list(UNARY))
@fuzz_settings(30, 600)
@given(data=st.data())
def test_linalg_shape_dtype_and_errors_follow_numpy(name, data):
    nf, yf = UNARY[name]
    n = data.draw(st.integers(0, 3), label="n")
    shape = data.draw(st.one_of(
        st.tuples(st.integers(1, 2)).map(lambda b: b + (n, n)), st.just((n, n)),
        npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)), label="shape")
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    arrays = [_values(shape, dtype, 0)]
    note(f"NumPy: {_numpy(nf, *arrays)[1]!r}")
    _check(name, nf, yf, arrays)


@pytest.mark.parametrize("x1, x2", [(np.ones(3), np.ones(1)), (np.ones((2, 3)), np.ones(2)),
                                    (np.ones(()), np.ones(3))])
def test_vecdot_never_broadcasts_the_summed_axis(x1, x2):
    """The issue's case: ``vecdot(ones(3), ones(1))`` was 3.0; NumPy raises."""
    with pytest.raises(ValueError):
        np.vecdot(x1, x2)
    with pytest.raises(ValueError, match="vecdot"):
        yaad.vecdot(yaad.tensor(x1), yaad.tensor(x2))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_, np.float32, np.complex64])
def test_vecdot_keeps_numpy_dtype(dtype):
    """uint8 stayed uint8 in NumPy but became uint64 (a sum's promotion) in yaad."""
    a = _values((2, 3), dtype, 0)
    b = _values((3,), dtype, 1)
    got = yaad.vecdot(yaad.tensor(a), yaad.tensor(b))
    want = np.vecdot(a, b)
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(_array(got), want)


@pytest.mark.parametrize("name, shapes", [
    ("matvec", [(3,), (3,)]), ("matvec", [(2, 3), (2,)]), ("vecmat", [(2, 1, 3), (3,)]),
    ("vecmat", [(3,), (2, 3)]), ("linalg.tensorsolve", [(0, 0), (0, 0)]),
    ("linalg.tensorsolve", [(3, 3), (3, 3)]), ("multi_dot_2", [(2, 3, 3), (3,)])])
def test_edge_shapes_follow_numpy(name, shapes):
    """Shapes the property test reaches rarely: a 1-D 'matrix' of matvec and vecmat (yaad
    took it as a matrix row), tensorsolve when b has as many axes as a, and multi_dot of
    two arrays (numpy.dot's shapes)."""
    nf, yf, _ = BINARY[name]
    _check(name, nf, yf, [_values(s, np.float64, k) for k, s in enumerate(shapes)])
