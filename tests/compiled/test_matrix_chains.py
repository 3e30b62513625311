"""yaad.compile's replays of matrix chains: ``act(x @ W + b)`` as one BLAS call with the
bias and the activation in its epilogue, elementwise steps written into the temporaries
they consume, and the replay's spellings of ``mean``, ``softmax`` and ``log_softmax``
(``compiled/chains.py``, ``compiled/rowwise.py``, ``codegen._TEMPLATES``).

Every program is compiled, recorded, verified and replayed on new inputs; each value and
gradient must equal eager yaad's bit for bit (the fused call adds the same numbers in the
same order, or falls back to eager mode's operations) and PyTorch's to rounding (an
independent oracle), with eager mode's dtypes and shapes. A profile of the replay shows
which path ran: the fused entry (``chains.run``), its BLAS call (``chains.call``), or
neither where the chain does not apply.
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest

import yaad as Y
from yaad.compiled import chains

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(2030)
N, K, M = 6, 5, 4  # x (N, K) @ W (K, M)

REAL_ACTS = ["tanh", "expit", "relu", "softplus", "exp", "sin", None]
COMPLEX_ACTS = ["tanh", "exp", "sin", None]
TORCH_ACT = {"tanh": torch.tanh, "expit": torch.sigmoid, "relu": torch.relu,
             "softplus": torch.nn.functional.softplus, "exp": torch.exp, "sin": torch.sin,
             None: lambda z: z}


def _act(name):
    return (lambda z: z) if name is None else getattr(Y, name)


def _draw(shape, dtype):
    a = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


def _bias(kind, dtype):
    """The bias's value: an array of some broadcasting shape, a Python float, or None."""
    shapes = {"row": (M,), "row2d": (1, M), "full": (N, M), "col": (N, 1)}
    if kind == "scalar":
        return 0.25
    return None if kind == "none" else _draw(shapes[kind], dtype)


def _layer(xp, act, order):
    def f(x, w, b, c):
        z = x @ w
        if b is not None:
            z = z + b if order == "after" else b + z
        h = act(z)
        # a second product, so that the backward multiplies by the activation's derivative
        return xp.sum(xp.real((h @ c) * xp.conj(h @ c)))
    return f


def _yaad_run(fn, x, w, b, c, wlayout="C", xlayout="C"):
    """The loss and the gradients of ``fn`` at these values, W and x passed laid out as
    asked (see _laid_out) and read back as W and x."""
    xs = _leaf(x, xlayout)
    ws = _leaf(w, wlayout)
    bs = Y.tensor(b, requires_grad=True) if isinstance(b, np.ndarray) else b
    cs = Y.tensor(c, requires_grad=True)
    loss = fn(_view(xs, xlayout), _view(ws, wlayout), bs, cs)
    loss.backward()
    grads = [_unview(xs.grad, xlayout), _unview(ws.grad, wlayout),
             bs.grad if isinstance(b, np.ndarray) else None, cs.grad]
    return loss.data, grads


def _leaf(a, layout):
    """The leaf passed for ``a``: ``a`` in C order, in Fortran order (``F``), its
    transpose in C order (``T``, read back as ``.mT``: a Fortran-ordered view), a wider
    array (``wide``, read back with a step: neither order), or ``a`` itself a view with a
    step (``strided``: the same shape as ``a``, another layout)."""
    if layout == "F":
        return Y.tensor(np.asfortranarray(a), requires_grad=True)
    if layout == "T":
        return Y.tensor(np.ascontiguousarray(a.T), requires_grad=True)
    if layout in ("wide", "strided"):
        wide = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
        wide[:, ::2] = a
        if layout == "wide":
            return Y.tensor(wide, requires_grad=True)
        t = Y.as_tensor(wide[:, ::2])
        t.requires_grad = True
        return t
    return Y.tensor(a, requires_grad=True)


def _view(t, layout):
    if layout == "T":
        return t.mT
    if layout == "wide":
        return t[:, ::2]
    return t


def _unview(g, layout):
    if layout == "T":
        return g.T
    if layout == "wide":
        return g[:, ::2]
    return g


def _torch_run(act, order, x, w, b, c):
    ts = [torch.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a
          for a in (x, w, b, c)]
    loss = _layer(torch, TORCH_ACT[act], order)(*ts)
    loss.backward()
    return loss.detach().numpy(), [t.grad.numpy() if isinstance(t, torch.Tensor) else None
                                  for t in ts]


def _python_calls(fn):
    """(file, function) of the Python functions called while ``fn()`` runs."""
    seen = set()

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            seen.add((code.co_filename.replace("\\", "/").rsplit("/", 1)[-1], code.co_name))

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def _forward_chains(compiled):
    """The fused entries of the compiled function's forward: for each, whether the layouts
    it met went to BLAS (True) or to NumPy's product (False)."""
    (tree,) = compiled._trees.values()
    runs = [v for v in tree.call.__globals__.values() if getattr(v, "_yaad_linear", False)]
    return [[p is not None for p in run.plans.values()] for run in runs]


def _check(act, dtype, bias="row", order="after", wlayout="C", xlayout="C", fused=False,
           replay_layout=None):
    """Record, verify and replay ``act(x @ W + b)``; each call against eager yaad (bits) and
    PyTorch (rounding). Returns the fused entries of the forward (see _forward_chains)."""
    f = _layer(Y, _act(act), order)
    compiled = Y.compile(f, fused=fused)
    calls = None
    for k in range(4):
        x, w, c = _draw((N, K), dtype), _draw((K, M), dtype), _draw((M, 3), dtype)
        b = _bias(bias, dtype)
        wl = replay_layout if (replay_layout and k == 3) else wlayout
        if k == 3:
            args = (compiled, x, w, b, c, wl, xlayout)
            calls = _python_calls(functools.partial(_yaad_run, *args))
            assert FUSED in calls  # (a fused entry ran: the forward's, or the backward's)
        value, grads = _yaad_run(compiled, x, w, b, c, wl, xlayout)
        eager_value, eager_grads = _yaad_run(f, x, w, b, c, wl, xlayout)
        torch_value, torch_grads = _torch_run(act, order, x, w, b, c)
        assert np.array_equal(value, eager_value), (value, eager_value)
        assert np.asarray(value).dtype == np.asarray(eager_value).dtype
        tol = 1e-4 if np.dtype(dtype).itemsize * (2 if np.dtype(dtype).kind == "f" else 1) \
            <= 8 else 1e-11
        np.testing.assert_allclose(value, torch_value, rtol=tol)
        for g, ge, gt in zip(grads, eager_grads, torch_grads):
            if ge is None:
                assert g is None and gt is None
                continue
            assert g.shape == ge.shape == gt.shape and g.dtype == ge.dtype
            assert np.array_equal(g, ge), np.abs(g - ge).max()
            np.testing.assert_allclose(g, gt, rtol=0, atol=tol * np.abs(gt).max())
    assert compiled.stats["replayed"] == 3  # (the last call twice: profiled, then checked)
    return _forward_chains(compiled)


FUSED = ("chains.py", "run")  # a fused entry ran


@pytest.mark.parametrize("dtype,act", [(d, a) for d in ("float32", "float64")
                                       for a in REAL_ACTS] +
                         [(d, a) for d in ("complex64", "complex128") for a in COMPLEX_ACTS])
def test_a_layer_replays_as_one_gemm(dtype, act):
    assert _check(act, dtype) == [[True]]


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
@pytest.mark.parametrize("bias", ["row", "row2d", "full", "col", "scalar"])
@pytest.mark.parametrize("order", ["after", "before"])
def test_every_broadcasting_bias(dtype, bias, order):
    assert _check("tanh", dtype, bias, order) == [[True]]


@pytest.mark.parametrize("act", ["tanh", "expit", "relu", "softplus"])
def test_an_activation_without_a_bias(act):
    # tanh and expit: the product, then the activation in place (no gemm with beta: there
    # is nothing to add). relu and softplus: their derivatives read their input, the
    # product, which the backward needs: nothing to fuse.
    assert _check(act, "float64", bias="none") == ([[]] if act in ("tanh", "expit") else [])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("wlayout,xlayout", [("F", "C"), ("T", "C"), ("C", "F"), ("T", "F"),
                                             ("wide", "C"), ("C", "wide")])
def test_transposed_and_strided_operands(dtype, wlayout, xlayout):
    # BLAS reads Fortran-ordered operands transposed; a strided one goes through NumPy
    blas = "wide" not in (wlayout, xlayout)
    assert _check("tanh", dtype, wlayout=wlayout, xlayout=xlayout) == [[blas]]


@pytest.mark.parametrize("recorded,replayed", [("C", "F"), ("F", "C"), ("C", "strided"),
                                               ("strided", "C")])
def test_a_replay_with_another_layout(recorded, replayed):
    # the layout is not part of the signature: the fused entry plans each one it meets
    chains_met = _check("tanh", "float64", wlayout=recorded, replay_layout=replayed)
    assert chains_met == [[recorded != "strided", replayed != "strided"]]


def test_numpy_product_where_blas_sums_otherwise(monkeypatch):
    # Where this machine's gemm would add C + AB in another order than NumPy's A @ B + C
    # (a long inner dimension, blocked), the fused entry makes NumPy's product and adds in
    # place: eager mode's bits still.
    monkeypatch.setattr(chains, "_EXACT", _AlwaysFalse())
    assert _check("tanh", "float64") == [[False]]


class _AlwaysFalse(dict):
    def get(self, key, default=None):
        return False


def test_the_exactness_probe_is_right_about_this_blas():
    # what _exact found is true on other values of those shapes too
    for (dtype, sa, sw, ta, tb), exact in list(chains._EXACT.items()) or [(
            (np.dtype("float64"), (N, K), (K, M), 0, 0), None)]:
        if exact is None:
            exact = chains._exact(dtype, sa, sw, ta, tb)
        a = _draw(sa, dtype)
        w = _draw(sw, dtype)
        b = _draw((sa[0], sw[1]), dtype)
        a = np.asfortranarray(a) if ta else a
        w = np.asfortranarray(w) if tb else w
        call = chains._gemm_plan(a, w, np.dtype(dtype), (sa[0], sw[1]))
        assert (call is not None) == exact
        if call is not None:
            out = b.copy()
            call(a, w, out)
            assert np.array_equal(out, a @ w + b)


def test_a_long_inner_dimension():
    # K = 1,500: OpenBLAS adds partial sums over blocks of the inner dimension into C, so
    # C + AB is not A @ B + C; the probe sees it and the entry keeps NumPy's order
    n, k, m = 8, 1500, 6
    x, w, b = _draw((n, k), "float64"), _draw((k, m), "float64"), _draw(m, "float64")
    f = Y.compile(lambda x, w, b: Y.sum(Y.tanh(x @ w + b) ** 2))
    for _ in range(3):
        got = f(Y.tensor(x), Y.tensor(w), Y.tensor(b)).data
    want = Y.sum(Y.tanh(Y.tensor(x) @ Y.tensor(w) + Y.tensor(b)) ** 2).data
    assert np.array_equal(got, want)


def _no_chains(monkeypatch):
    """The replay as it was without chains.py (what the fused entries must reproduce)."""
    monkeypatch.setattr(chains, "replay_items", lambda items, keep, info: items)


def test_chains_that_do_not_apply(monkeypatch):
    # The product or the biased product read elsewhere (returned, or used twice), a product
    # of vectors, a bias that promotes the dtype: no fusion there, and eager mode's values
    # (the gradients to rounding: the replay sums the contributions of x's three uses in
    # another order than the engine, with or without fusion).
    def f(x, w, b, v, b32):
        z = x @ w
        y = Y.tanh(z + b)
        u = x @ w + b
        extra = Y.sum(Y.abs(u + 0j)) + Y.sum(Y.exp(v @ v + 1.0))
        p = Y.tanh(x.astype(np.float32) @ w.astype(np.float32) + b32)
        q = Y.tanh(x @ w.astype(np.float32) + b)  # (float64 @ float32: promoted)
        return Y.sum(y * y) + Y.sum(z) + Y.sum(u * u) + extra + Y.sum(p) + Y.sum(q), z

    inputs = [[_draw((N, K), "float64"), _draw((K, M), "float64"), _draw(M, "float64"),
               _draw(K, "float64"), _draw(M, "float32")] for _ in range(4)]
    compiled = Y.compile(f, fused=False)
    got = [_grads(compiled, arrays) for arrays in inputs]
    _no_chains(monkeypatch)
    plain = Y.compile(f, fused=False)
    for arrays, g in zip(inputs, got):
        for a, b, c in zip(g, _grads(plain, arrays), _grads(f, arrays)):
            assert a.dtype == b.dtype == c.dtype and np.array_equal(a, b)
            np.testing.assert_allclose(a, c, rtol=0, atol=1e-13 * np.abs(c).max())
    assert compiled.stats["replayed"] == plain.stats["replayed"] == 2


def _grads(fn, arrays):
    ts = [Y.tensor(a, requires_grad=True) for a in arrays]
    loss, z = fn(*ts)
    loss.backward()
    return [loss.data, z.data] + [t.grad for t in ts]


def test_no_step_writes_into_an_array_still_read(monkeypatch):
    # t = a * b is consumed by u = t * 2 while its transpose (a view) is read afterwards;
    # s = a * b + 1 is a result and an operand of the next step: neither is written into
    def f(a, b):
        t = a * b
        v = t.mT
        u = t * 2.0
        s = a * b + 1.0
        w = s * 3.0
        return Y.sum(u @ v) + Y.sum(w * s), s

    inputs = [[_draw((4, 4), "float64"), _draw((4, 4), "float64")] for _ in range(4)]
    compiled = Y.compile(f, fused=False)
    got = [_grads(compiled, arrays) for arrays in inputs]
    _no_chains(monkeypatch)
    plain = Y.compile(f, fused=False)
    for arrays, g in zip(inputs, got):
        for a, b, c in zip(g, _grads(plain, arrays), _grads(f, arrays)):
            assert np.array_equal(a, b)
            np.testing.assert_allclose(a, c, rtol=0, atol=1e-13 * np.abs(c).max())
    assert compiled.stats["replayed"] == 2


def test_the_backward_steps_write_into_their_temporaries():
    # the derivative of tanh, g * (1 - y * y): y * y is the one array it allocates
    f = _layer(Y, Y.tanh, "after")
    compiled = Y.compile(f, fused=False)
    for _ in range(3):
        _yaad_run(compiled, _draw((N, K), "float64"), _draw((K, M), "float64"),
                  _draw(M, "float64"), _draw((M, 3), "float64"))
    end = next(t.root.end for t in compiled._trees.values())
    src = end.bwd.__source__
    assert "out=" in src, src


@pytest.mark.parametrize("act", ["tanh", "expit"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["C", "transposed gradient"])
def test_the_derivative_of_an_activation_is_one_loop(act, dtype, layout):
    # With numba, g * (1 - y * y) (tanh) and g * (y * (1 - y)) (expit) are one loop, in
    # place into g: eager mode's bits. (80 x 64: larger than what the native backend takes;
    # a transposed gradient, not C-ordered, goes through NumPy's calls inside the entry.)
    def f(x, w, b, c):
        h = getattr(Y, act)(x @ w + b)
        if layout != "C":
            h = h.mT
        return Y.sum(Y.sin(h) * c)

    shapes = [(80, 5), (5, 64), (64,), (64, 80) if layout != "C" else (80, 64)]
    compiled = Y.compile(f)
    plain = Y.compile(f, fused=False)
    for _ in range(4):
        arrays = [_draw(s, dtype) for s in shapes]
        got, want, numpy_replay = (_grads_of(fn, arrays) for fn in (compiled, f, plain))
        for a, b, c in zip(got, want, numpy_replay):
            assert a.dtype == b.dtype == np.dtype(dtype)
            assert np.array_equal(a, b) and np.array_equal(a, c)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    h = TORCH_ACT[act](ts[0] @ ts[1] + ts[2])
    torch.sum(torch.sin(h.mT if layout != "C" else h) * ts[3]).backward()
    for g, t in zip(got[1:], ts):
        tol = 1e-4 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=0, atol=tol * np.abs(g).max())
    end = next(t.root.end for t in compiled._trees.values())
    loops = [v for v in end.bwd.__globals__.values() if getattr(v, "_yaad_loop", False)]
    # (one in each branch of the backward: the implicit seed 1, another seed)
    assert len(loops) == 2 and compiled.stats["replayed"] == 2


def _same_bits(a, b):
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        a.view(np.uint8), b.view(np.uint8))


def _loops(compiled):
    """The numba loops the backward of a compiled function calls (by name)."""
    end = next(t.root.end for t in compiled._trees.values())
    return sorted(v._yaad_loop for v in end.bwd.__globals__.values()
                  if getattr(v, "_yaad_loop", False))


@pytest.mark.parametrize("act", ["tanh", "expit", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bias_gradients_are_column_sums_in_numpys_order(act, dtype):
    # The gradient of a bias broadcast over rows is a sum over axis 0: inside the loop of
    # the activation's derivative (tanh, expit), or a loop of its own (after log_softmax),
    # rows added in order from 0 as NumPy adds them (a column of zeros of both signs sums to
    # +0.0, as NumPy's does): bit for bit, signs of zeros included. 80 x 64: more than the
    # native backend takes.
    def f(x, w, b, c):
        z = x @ w + b
        h = Y.log_softmax(z, axis=-1) if act == "log_softmax" else getattr(Y, act)(z)
        return Y.sum(h * c)

    shapes = [(80, 5), (5, 64), (64,), (80, 64)]
    compiled = Y.compile(f)
    for _ in range(4):
        arrays = [_draw(s, dtype) for s in shapes]
        arrays[3][:, 3] = 0.0
        arrays[3][::2, 3] = -0.0  # (a gradient column of -0.0 and 0.0: its sum is +0.0)
        arrays[3][:, 5] = -0.0
        got, want = _grads_of(compiled, arrays), _grads_of(f, arrays)
        for a, b in zip(got, want):
            assert _same_bits(a, b)
        if act != "log_softmax":  # (there the gradient of z is c - softmax * sum(c))
            assert got[3][5] == 0 and not np.signbit(got[3][5])
    want_loops = {"tanh": ["tanh_grad_colsum"], "expit": ["expit_grad_colsum"],
                  "log_softmax": ["colsum", "log_softmax_vjp"]}[act]
    # (one in each branch of the backward: the implicit seed 1, another seed)
    assert _loops(compiled) == sorted(want_loops * 2) and compiled.stats["replayed"] == 2


def test_a_column_sum_of_another_layout_is_numpys():
    # a bias gradient whose rows are not C-ordered (a transposed product): NumPy's sum
    def f(x, w, b):
        return Y.sum(Y.exp((x @ w).mT + b) * 0.5)

    compiled = Y.compile(f)
    for _ in range(4):
        arrays = [_draw((64, 5), "float64"), _draw((5, 80), "float64"), _draw(64, "float64")]
        for a, b in zip(_grads_of(compiled, arrays), _grads_of(f, arrays)):
            assert _same_bits(a, b)
    assert compiled.stats["replayed"] == 2


def _grads_of(fn, arrays):
    ts = [Y.tensor(a, requires_grad=True) for a in arrays]
    loss = fn(*ts)
    loss.backward()
    return [loss.data] + [t.grad for t in ts]


# ---- mean, softmax and log_softmax -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (0, False),
                                           (-1, True), ((0, 2), False)])
def test_mean_as_numpy_computes_it(dtype, axis, keepdims):
    f = lambda x: Y.sum(Y.real(Y.mean(x * x, axis=axis, keepdims=keepdims) * 3.0))  # noqa
    compiled = Y.compile(lambda x: Y.mean(x, axis=axis, keepdims=keepdims) * 1.0)
    g = Y.compile(f)
    for _ in range(4):
        a = _draw((3, 5, 7), dtype)
        got = compiled(Y.tensor(a)).data
        want = np.mean(a, axis=axis, keepdims=keepdims)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.dtype(dtype)
        assert np.array_equal(got, want)
        ga, gb = [_one_grad(h, a) for h in (g, f)]
        assert np.array_equal(ga, gb)
    assert compiled.stats["replayed"] == 2


def _one_grad(fn, a):
    t = Y.tensor(a, requires_grad=True)
    fn(t).backward()
    return t.grad


def _rows_input(dtype, shape, special):
    a = _draw(shape, dtype) * 3
    flat = a.reshape(-1, shape[-1])
    if special:
        flat[0, 1] = np.nan
        flat[1, :] = -np.inf
        flat[2, 0] = np.inf
        if len(flat) > 3:
            flat[3, :] = 0.0
            flat[3, 1] = -0.0
    return a


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # (a row of -inf)
@pytest.mark.parametrize("name", ["log_softmax", "softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axis", [((6, 10), -1), ((6, 10), 1), ((2, 3, 4), -1),
                                        ((7,), None), ((7,), 0), ((6, 10), 0)])
@pytest.mark.parametrize("fused", [True, False])
def test_softmax_rows(name, dtype, shape, axis, fused):
    fn = getattr(Y, name)
    f = lambda x: Y.sum(fn(x, axis=axis) * WEIGHTS[:x.shape[-1]])  # noqa: E731
    compiled = Y.compile(f, fused=fused)
    tf = getattr(torch, name)
    for k in range(5):
        a = _rows_input(dtype, shape, special=(k % 2 == 1 and len(shape) > 1))
        with np.errstate(invalid="ignore"):
            got_t = Y.tensor(a, requires_grad=True)
            value = compiled(got_t)
            value.backward()
            want_t = Y.tensor(a, requires_grad=True)
            eager = f(want_t)
            eager.backward()
        assert np.array_equal(value.data, eager.data, equal_nan=True)
        assert np.array_equal(got_t.grad, want_t.grad, equal_nan=True)
        assert got_t.grad.dtype == np.dtype(dtype)
        if k % 2 == 0:  # finite: PyTorch's values
            x = torch.tensor(a)
            tv = tf(x, dim=-1 if axis is None else axis).numpy()
            tol = (1e-5 if dtype == "float32" else 1e-13) * np.abs(tv).max()
            np.testing.assert_allclose(value_of(fn, a, axis), tv, rtol=0, atol=tol)
    assert compiled.stats["replayed"] == 3


WEIGHTS = np.linspace(-1, 2, 10)


def value_of(fn, a, axis):
    """``fn(a, axis=axis)`` compiled, on its second replay."""
    compiled = Y.compile(lambda x: fn(x, axis=axis))
    for _ in range(3):
        out = compiled(Y.tensor(a))
    assert compiled.stats["replayed"] == 1
    return out.data


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows_exact", [True, False])
def test_the_cross_entropy_head_is_numpys(dtype, rows_exact, monkeypatch):
    # W2's loss: -mean(log_softmax(z)[rows, labels]). With numba the forward's row sums and
    # the backward's g - exp(ans) * sum(g, -1) are loops adding as NumPy's pairwise sum
    # does; where that order is not NumPy's (rows_exact False: forced here), NumPy's calls.
    # Bit for bit, against eager yaad; PyTorch's cross-entropy to rounding.
    from yaad.compiled import rowwise

    if not rows_exact:
        monkeypatch.setattr(rowwise, "rows_exact", lambda dtype, k: False)
    rows, labels = np.arange(70), RNG.integers(0, 10, 70)

    def f(z):
        return -Y.mean(Y.log_softmax(z, axis=-1)[rows, labels])

    compiled = Y.compile(f)
    for _ in range(4):
        z = _draw((70, 10), dtype) * 3
        got, want = _grads_of(compiled, [z]), _grads_of(f, [z])
        for a, b in zip(got, want):
            assert _same_bits(a, b)
        t = torch.tensor(z, requires_grad=True)
        torch.nn.functional.cross_entropy(t, torch.tensor(labels)).backward()
        tol = 1e-5 if dtype == "float32" else 1e-13
        np.testing.assert_allclose(got[1], t.grad.numpy(), rtol=0, atol=tol)
    # (under the implicit seed 1, the gradient reaching log_softmax is a constant one-hot
    # array and its row sums are folded: that branch's loop takes them, g - e * s; the
    # branch for another seed sums the rows itself)
    assert _loops(compiled) == ["log_softmax_vjp", "sub_scaled_rows"]
    assert compiled.stats["replayed"] == 2


def test_sums_over_empty_axes_stay_numpys():
    # a bias gradient over zero rows, log_softmax of zero rows: NumPy's calls (no loop
    # for an empty array), eager mode's values (float32: the native backend takes no such
    # program, the NumPy replay runs)
    def f(x, w, b):
        h = Y.tanh(x @ w + b)
        return Y.sum(h) + Y.sum(Y.log_softmax(x @ w, axis=-1))

    compiled = Y.compile(f)
    for _ in range(4):
        arrays = [_draw((0, 3), "float32"), _draw((3, 4), "float32"), _draw(4, "float32")]
        for a, b in zip(_grads_of(compiled, arrays), _grads_of(f, arrays)):
            assert _same_bits(a, b)
    assert compiled.stats["replayed"] == 2 and compiled.stats["eager"] == 0
    assert "tanh_grad_colsum" not in _loops(compiled)  # (it could not reshape 0 rows)
