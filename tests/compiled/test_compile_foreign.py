"""yaad.compile on another library's arrays: array_api_strict (which refuses any hidden
conversion to NumPy here) and Dask (with computing refused while recording and replaying).

A compiled function called with tensors over another library's arrays records as eager
mode runs (in the arrays' library) and replays each recorded op call as eager mode makes
it, in that library, its gradients by the same rules; the NumPy spellings, buffers,
rewrites and the fused and native backends are for NumPy arrays only. The oracles: eager
yaad on the same arrays (the same code path, so the same numbers to rounding) and eager
yaad on NumPy arrays (1e-12).
"""

from __future__ import annotations

import warnings

import array_api_strict as xps
import dask
import dask.array as da
import numpy as np
import pytest

import yaad
from tests.support import backend_table

STRICT = type(xps.asarray(0.0))
RTOL = 1e-12


no_conversion = backend_table.NoStrictConversion


def _refuse(dsk, keys, **kwargs):
    raise AssertionError("a Dask graph was computed while recording or replaying")


def no_compute():
    """Inside the block, computing any Dask collection raises."""
    return dask.config.set(scheduler=_refuse)


def _host(a):
    """A result as a NumPy array, checking that it is of the expected library."""
    if isinstance(a, da.Array):
        return np.asarray(a.compute(scheduler="sync"))
    assert type(a) is STRICT, f"expected an array_api_strict array, got {type(a).__name__}"
    return np.asarray(a)


def _close(got, want, rtol=RTOL):
    """``got`` (of the expected library) equals ``want`` to ``rtol``."""
    _same(_host(got), want, rtol)


def _same(got, want, rtol=RTOL):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    scale = np.max(np.abs(want)) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


# ---- the programs: (function, input shapes, kind of inputs) ------------------------------

def _chain(x):
    return yaad.sum(yaad.exp(yaad.sin(x)) * x ** 2 / (1 + x ** 2) - yaad.tanh(x) * 0.5)


def _reductions(x):
    return (yaad.sum(yaad.mean(x, axis=0) ** 2) + yaad.sum(yaad.max(x, axis=1))
            + yaad.std(x) + yaad.sum(yaad.var(x, axis=0)) + yaad.logsumexp(x))


def _products(x, w):
    h = yaad.einsum("ij,jk->ik", x, w)
    return yaad.trace(h @ yaad.transpose(h)) + yaad.sum(yaad.tensordot(x, w, axes=1) * h)


def _indexing(x):
    rows = x[np.array([0, 2, 2, 1])]  # a repeated index: its gradient adds up
    return yaad.sum(yaad.sin(rows[:, 1:]) ** 2) + yaad.sum(x[1, ::2] * x[-1, ::2])


def _distinct_indexing(x):
    # (Dask refuses an index that repeats an element in the gradient: no add.at)
    rows = x[np.array([0, 3, 1])]
    return yaad.sum(yaad.sin(rows[:, 1:]) ** 2) + yaad.sum(x[1, ::2] * x[-1, ::2])


def _eigh(a):
    h = a + yaad.transpose(a)
    w, v = yaad.linalg.eigh(h)
    return yaad.sum(w ** 3) + yaad.sum(v[:, 0] ** 4)


def _svd(a):
    s = yaad.linalg.svd(a, full_matrices=False)[1]
    return yaad.sum(s ** 2) + yaad.sum(s)


def _solve(a, b):
    x = yaad.linalg.solve(a, b)
    return yaad.sum(x ** 2) + yaad.sum(yaad.linalg.inv(a) * a)


def _complex(z, x):
    return yaad.sum(yaad.abs(z * x) ** 2) + yaad.sum(yaad.real(z) * x)


def _several_outputs(x):
    return yaad.sin(x), yaad.sum(x ** 2)


def _mlp_step(w1, w2, x, y):
    # A training step compiled whole: the loss, its gradients (computed inside) and the
    # updated parameters.
    def loss(w1, w2):
        h = yaad.tanh(x @ w1)
        return yaad.mean((h @ w2 - y) ** 2)

    value, (g1, g2) = yaad.func.value_and_grad(loss, argnums=(0, 1))(w1, w2)
    return value, w1 - 0.1 * g1, w2 - 0.1 * g2


PROGRAMS = {
    "elementwise chain": (_chain, [(5, 3)], "real"),
    "reductions": (_reductions, [(4, 3)], "real"),
    "einsum, matmul, trace, tensordot": (_products, [(3, 4), (4, 2)], "real"),
    "indexing": (_indexing, [(3, 4)], "real"),
    "linalg.eigh": (_eigh, [(4, 4)], "real"),
    "linalg.svd": (_svd, [(5, 3)], "real"),
    "linalg.solve, inv": (_solve, [(4, 4), (4, 2)], "regular"),
    "complex": (_complex, [(3,), (3,)], "complex"),
    "two outputs": (_several_outputs, [(2, 3)], "real"),
}


def _inputs(rng, shapes, kind):
    out = [rng.standard_normal(s) for s in shapes]
    if kind == "complex":
        out[0] = out[0] + 1j * rng.standard_normal(shapes[0])
    if kind == "regular":  # (well conditioned)
        out[0] = out[0] + 4 * np.eye(len(out[0]))
    return out


def _loss(out):
    if isinstance(out, tuple):
        return yaad.sum(out[0] ** 2) + out[1]
    return out


def _run(fn, arrays, convert):
    ts = [yaad.tensor(convert(a), requires_grad=True) for a in arrays]
    out = fn(*ts)
    _loss(out).backward()
    values = [o.data for o in out] if isinstance(out, tuple) else [out.data]
    return values, [t.grad for t in ts]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_replay_on_array_api_strict_equals_eager_and_numpy(name):
    fn, shapes, kind = PROGRAMS[name]
    compiled = yaad.compile(fn)
    rng = np.random.default_rng(7)
    for _ in range(4):  # inputs change from call to call
        arrays = _inputs(rng, shapes, kind)
        with no_conversion(), warnings.catch_warnings():
            warnings.simplefilter("error")  # (no CompileWarning: nothing runs eagerly)
            got_values, got_grads = _run(compiled, arrays, xps.asarray)
            eager_values, eager_grads = _run(fn, arrays, xps.asarray)
        want_values, want_grads = _run(fn, arrays, np.asarray)
        for got, eager, want in zip(got_values + got_grads, eager_values + eager_grads,
                                    want_values + want_grads):
            _close(got, _host(eager), rtol=1e-13)  # the same code path as eager mode
            _close(got, want)  # and NumPy's numbers
    # recorded twice (verify), then replayed
    assert compiled.stats == {"replayed": 2, "recorded": 2, "eager": 0}


def test_a_training_step_compiled_whole_on_array_api_strict():
    compiled = yaad.compile(_mlp_step)
    rng = np.random.default_rng(3)
    w = [rng.standard_normal((3, 5)) * 0.5, rng.standard_normal((5, 2)) * 0.5]
    params = {"strict": [yaad.tensor(xps.asarray(a), requires_grad=True) for a in w],
              "numpy": [yaad.tensor(a, requires_grad=True) for a in w]}
    for _ in range(5):
        x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
        with no_conversion(), warnings.catch_warnings():
            warnings.simplefilter("error")
            value, *new = compiled(*params["strict"], yaad.tensor(xps.asarray(x)),
                                   yaad.tensor(xps.asarray(y)))
        want, *new_numpy = _mlp_step(*params["numpy"], yaad.tensor(x), yaad.tensor(y))
        _close(value.data, want.data)
        for a, b in zip(new, new_numpy):
            _close(a.data, b.data)
        params = {"strict": [yaad.tensor(a.data, requires_grad=True) for a in new],
                  "numpy": [yaad.tensor(b.data, requires_grad=True) for b in new_numpy]}
    assert compiled.stats == {"replayed": 3, "recorded": 2, "eager": 0}


def test_the_replay_on_strict_arrays_calls_the_ops_in_their_namespace():
    # The generated code of a foreign signature calls each op through the backend call
    # (the eager path), never a NumPy spelling: a NumPy function on a strict array would
    # fail under no_conversion.
    compiled = yaad.compile(_products)
    rng = np.random.default_rng(1)
    with no_conversion():
        for _ in range(3):
            _run(compiled, _inputs(rng, [(3, 4), (4, 2)], "real"), xps.asarray)
    (tree,) = compiled._trees.values()
    assert tree.foreign == "array_api_strict"
    source = tree.call.__source__
    assert "_foreign_call(" in source and "np." not in source
    end = tree.root.end
    assert end.to_fuse is None and end.fused_call is None and end.one is None
    assert "_foreign_call(" in end.bwd.__source__ and "np." not in end.bwd.__source__


# ---- guards ------------------------------------------------------------------------------

def _branchy(x):
    s = yaad.sum(x)
    if s > 0:  # a guard: the replay computes it again and follows its outcome
        return yaad.sum(yaad.exp(x)) * s
    return yaad.sum(yaad.sin(x) ** 2)


def test_a_value_guard_on_strict_arrays_follows_both_branches():
    compiled = yaad.compile(_branchy)
    rng = np.random.default_rng(2)
    signs = [1, 1, -1, -1, 1, -1, 1, -1]  # each branch recorded twice, then replayed
    for sign in signs:
        a = np.abs(rng.standard_normal(4)) * sign
        with no_conversion():
            got_values, got_grads = _run(compiled, [a], xps.asarray)
        want_values, want_grads = _run(_branchy, [a], np.asarray)
        _close(got_values[0], want_values[0])
        _close(got_grads[0], want_grads[0])
    assert compiled.stats == {"replayed": 4, "recorded": 4, "eager": 0}


def test_a_shape_guard_on_strict_arrays_follows_the_masks_count():
    # a boolean mask: the length of x[m] depends on m's values (a shape guard, checked on
    # the strict arrays); a new count records that path, a known one replays
    def masked(x, m):
        return yaad.sum(yaad.exp(x[m]) ** 2)

    compiled = yaad.compile(masked)
    rng = np.random.default_rng(4)
    for count in (2, 2, 2, 4, 4, 4, 2, 4):
        a = rng.standard_normal(6)
        m = np.zeros(6, bool)
        m[rng.choice(6, count, replace=False)] = True
        x = yaad.tensor(xps.asarray(a), requires_grad=True)
        with no_conversion():
            out = compiled(x, yaad.tensor(xps.asarray(m)))
            out.backward()
        _close(out.data, np.sum(np.exp(a[m]) ** 2))
        _close(x.grad, np.where(m, 2 * np.exp(2 * a), 0.0))
    assert len(compiled._trees) == 1  # one signature, two paths
    assert compiled.stats == {"replayed": 4, "recorded": 4, "eager": 0}


def test_a_new_shape_on_strict_arrays_is_a_new_signature():
    compiled = yaad.compile(_chain)
    rng = np.random.default_rng(6)
    for shape in [(3,), (3,), (3,), (2, 2), (2, 2), (2, 2), (3,)]:
        a = rng.standard_normal(shape)
        with no_conversion():
            got_values, got_grads = _run(compiled, [a], xps.asarray)
        want_values, want_grads = _run(_chain, [a], np.asarray)
        _close(got_values[0], want_values[0])
        _close(got_grads[0], want_grads[0])
    assert len(compiled._trees) == 2
    assert compiled.stats == {"replayed": 3, "recorded": 4, "eager": 0}


def test_an_outside_strict_array_changed_in_place_is_seen():
    # A captured array of another library is state: compared by value in its library
    # before every replay, so a change made in place records anew (what the function
    # derived from it while recording would be stale otherwise).
    scale = xps.asarray(np.array([1.0, 2.0, 3.0]))

    def f(x):
        derived = scale * 2.0  # computed from the captured array while recording
        return yaad.sum(x * derived)

    compiled = yaad.compile(f)
    x = yaad.tensor(xps.asarray(np.array([1.0, -1.0, 0.5])), requires_grad=True)
    for _ in range(3):
        _close(compiled(x).data, np.float64(2 * (1 - 2 + 1.5)))
    scale[1] = -2.0
    for _ in range(3):
        _close(compiled(x).data, np.float64(2 * (1 + 2 + 1.5)))
    assert compiled.stats["recorded"] == 4 and compiled.stats["replayed"] == 2


def test_numpy_and_foreign_inputs_get_their_own_signatures():
    # The signature includes the array's class: the same shapes and dtypes on NumPy and on
    # strict arrays are two recordings, each replayed on its own library; a NumPy tensor
    # with a strict one is a third, whose NumPy part runs NumPy's forward and is moved
    # explicitly (recorded: its gradient flows back to NumPy), as in eager mode.
    def f(x, y, library):
        return yaad.sum(yaad.sin(x) * x) + yaad.sum(y ** 2).to(library)

    compiled = yaad.compile(f)
    rng = np.random.default_rng(5)
    kinds = {"numpy": (np.asarray, np.asarray), "strict": (xps.asarray, xps.asarray),
             "mixed": (xps.asarray, np.asarray)}
    for _ in range(3):
        for name, (cx, cy) in kinds.items():
            a, b = rng.standard_normal(3), rng.standard_normal(2)
            tx = yaad.tensor(cx(a), requires_grad=True)
            ty = yaad.tensor(cy(b), requires_grad=True)
            # (mixed: the move's gradient goes back to NumPy, an explicit conversion)
            with no_conversion() if name == "strict" else warnings.catch_warnings():
                out = compiled(tx, ty, "numpy" if name == "numpy" else "array_api_strict")
                out.backward()
            if name == "numpy":
                assert isinstance(out.data, (np.ndarray, np.generic))
                got, gx, gy = out.data, tx.grad, ty.grad
            else:
                got, gx = _host(out.data), _host(tx.grad)
                gy = ty.grad if name == "mixed" else _host(ty.grad)
            assert type(gy) is np.ndarray or name != "mixed"
            np.testing.assert_allclose(got, np.sum(np.sin(a) * a) + np.sum(b ** 2), rtol=RTOL)
            np.testing.assert_allclose(gx, np.sin(a) + a * np.cos(a), rtol=RTOL)
            np.testing.assert_allclose(gy, 2 * b, rtol=RTOL)
    assert len(compiled._trees) == 3 and compiled.stats["eager"] == 0
    assert compiled.stats["replayed"] == 3
    foreign = sorted(str(t.foreign) for t in compiled._trees.values())
    assert foreign == ["None", "array_api_strict", "array_api_strict"]


# ---- Dask: the replay builds the lazy graph -----------------------------------------------

def _chunked(a):
    return da.from_array(a, chunks=tuple(max(1, (n + 1) // 2) for n in a.shape))


DASK_PROGRAMS = {
    "elementwise chain": (_chain, [(6, 4)]),
    "reductions": (_reductions, [(4, 6)]),
    "products": (_products, [(4, 6), (6, 2)]),
    "indexing": (_distinct_indexing, [(4, 4)]),
}


@pytest.mark.parametrize("name", sorted(DASK_PROGRAMS))
def test_compiled_replay_on_dask_computes_nothing_and_equals_numpy(name):
    fn, shapes = DASK_PROGRAMS[name]
    compiled = yaad.compile(fn)
    rng = np.random.default_rng(11)
    for _ in range(4):
        arrays = [rng.standard_normal(s) for s in shapes]
        ts = [yaad.tensor(_chunked(a), requires_grad=True) for a in arrays]
        with no_compute(), warnings.catch_warnings():
            warnings.simplefilter("error")
            out = compiled(*ts)
            out.backward()
            assert isinstance(out.data, da.Array)
            assert all(isinstance(t.grad, da.Array) for t in ts)
        value, *grads = yaad.compute(out, *(t.grad for t in ts))
        want_values, want_grads = _run(fn, arrays, np.asarray)
        _same((value), want_values[0])
        for g, w in zip(grads, want_grads):
            _same((g), w)
    assert compiled.stats == {"replayed": 2, "recorded": 2, "eager": 0}


def test_a_training_step_compiled_whole_on_dask_computes_nothing():
    # gradients computed inside the compiled function: the replayed backward builds
    # graphs too
    compiled = yaad.compile(_mlp_step)
    rng = np.random.default_rng(12)
    w = [rng.standard_normal((3, 5)), rng.standard_normal((5, 2))]
    for _ in range(4):
        x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
        ts = [yaad.tensor(_chunked(a), requires_grad=True) for a in w]
        with no_compute():
            out = compiled(*ts, yaad.tensor(_chunked(x)), yaad.tensor(_chunked(y)))
        got = yaad.compute(*out)
        want = _mlp_step(*[yaad.tensor(a, requires_grad=True) for a in w], yaad.tensor(x),
                         yaad.tensor(y))
        for g, e in zip(got, want):
            _same(g, e.data)
        w = list(got[1:])
    assert compiled.stats == {"replayed": 2, "recorded": 2, "eager": 0}


def test_a_value_read_on_dask_runs_eagerly_and_says_so():
    # A replay would have to compute the array to decide the branch: the recording
    # refuses and the function runs eagerly for these inputs (where float() computes, as
    # eager mode does), with a warning.
    compiled = yaad.compile(_branchy)
    a = np.array([0.5, -0.25, 1.0])
    with pytest.warns(yaad.CompileWarning, match="bool\\(\\) of a value of a dask array"):
        out = compiled(yaad.tensor(_chunked(a), requires_grad=True))
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = yaad.tensor(_chunked(a), requires_grad=True)
            out = compiled(t)
            out.backward()
    want_values, want_grads = _run(_branchy, [a], np.asarray)
    _same((yaad.compute(out)[0]), want_values[0])
    _same((yaad.compute(t.grad)[0]), want_grads[0])
    assert compiled.stats == {"replayed": 0, "recorded": 1, "eager": 2}


def test_an_outside_dask_array_changed_is_seen_without_computing_it():
    shift = _chunked(np.arange(4.0))

    def f(x):
        return yaad.sum((x - shift) ** 2)

    compiled = yaad.compile(f)
    a = np.array([1.0, 0.0, 2.0, 5.0])
    x = yaad.tensor(_chunked(a), requires_grad=True)
    with no_compute():
        for _ in range(3):
            out = compiled(x)
    _same((yaad.compute(out)[0]), np.float64(np.sum((a - np.arange(4.0)) ** 2)))
    with no_compute():
        shift[0] = 10.0  # a new graph: a new key
        for _ in range(3):
            out = compiled(x)
    want = np.sum((a - np.array([10.0, 1, 2, 3])) ** 2)
    _same((yaad.compute(out)[0]), np.float64(want))
    assert compiled.stats == {"replayed": 2, "recorded": 4, "eager": 0}


# ---- yaad.func.vjp and jvp on array_api_strict tensors -----------------------------------

def _pair(x, z):
    return yaad.sin(x) * x[0] + yaad.real(z * yaad.conj(z)) * x, yaad.sum(x ** 3)


@pytest.mark.parametrize("as_tensor", [False, True])
def test_vjp_and_jvp_take_strict_tensors_and_give_numpys_numbers(as_tensor):
    x = np.array([0.3, -1.2, 2.0])
    z = np.array([1.0 - 2.0j, 0.5j, -1.5 + 0.25j])
    u, s = np.array([1.5, -0.5, 2.0]), 0.75
    dx, dz = np.array([0.5, 1.0, -2.0]), np.array([1j, 2.0, -1.0 + 0.5j])

    def run(convert):
        wrap = (lambda a: yaad.tensor(convert(a))) if as_tensor else convert
        out, pullback = yaad.func.vjp(_pair, wrap(x), wrap(z))
        cotangents = pullback((wrap(u), wrap(np.asarray(s))))
        primal, tangent = yaad.func.jvp(_pair, (wrap(x), wrap(z)), (wrap(dx), wrap(dz)))
        return [*out, *cotangents, *primal, *tangent]

    want = run(np.asarray)
    with no_conversion():
        got = run(xps.asarray)
    assert len(got) == len(want) == 8
    for g, w in zip(got, want):
        g = g.data if isinstance(g, yaad.Tensor) else g
        w = w.data if isinstance(w, yaad.Tensor) else w
        _close(g, w)


def test_strict_and_dask_arrays_as_arguments_are_recorded():
    # Arrays (not tensors) among the arguments are inputs of the signature too, by class.
    def f(x, a):
        return yaad.sum(yaad.sin(x) * a) + yaad.sum(x ** 2 * a)  # (strict: a tensor on the left)

    rng = np.random.default_rng(8)
    for convert, guard in ((xps.asarray, no_conversion), (_chunked, no_compute)):
        compiled = yaad.compile(f)
        for _ in range(3):
            b, c = rng.standard_normal(4), rng.standard_normal(4)
            x = yaad.tensor(convert(b), requires_grad=True)
            with guard():
                out = compiled(x, convert(c))
                out.backward()
            value, grad = yaad.compute(out, x.grad)
            value = _host(value) if convert is xps.asarray else value
            grad = _host(grad) if convert is xps.asarray else grad
            _same(value, np.sum(np.sin(b) * c) + np.sum(c * b ** 2))
            _same(grad, np.cos(b) * c + 2 * c * b)
        assert compiled.stats == {"replayed": 1, "recorded": 2, "eager": 0}


def test_a_value_dependent_shape_on_dask_runs_eagerly_and_says_so():
    def masked(x, m):
        return yaad.sum(x[m] ** 2)

    compiled = yaad.compile(masked)
    a = np.array([0.5, -1.0, 2.0, 3.0])
    m = np.array([True, False, True, True])
    with no_compute(), pytest.warns(yaad.CompileWarning, match="whose shape depends on its "
                                                               "values"):
        x = yaad.tensor(_chunked(a), requires_grad=True)
        out = compiled(x, yaad.tensor(_chunked(m)))
    assert isinstance(out.data, da.Array)
    _same(yaad.compute(out)[0], np.sum(a[m] ** 2))
    assert compiled.stats == {"replayed": 0, "recorded": 1, "eager": 0}


def test_second_derivatives_through_a_compiled_output_on_strict_arrays():
    # create_graph re-runs the recorded path on tensors (eager mode's ops, in the arrays'
    # library): the same numbers as eager mode's second derivative
    def f(x, w):
        return yaad.sum(yaad.tanh(x @ w) ** 2)

    compiled = yaad.compile(f)
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    results = []
    for fn in (compiled, compiled, compiled, f):
        x, w = (yaad.tensor(xps.asarray(v), requires_grad=True) for v in (a, b))
        with no_conversion():
            (gx,) = yaad.autograd.grad(fn(x, w), [x], create_graph=True)
            yaad.sum(gx ** 2).backward()
        results.append((gx.data, w.grad, x.grad))
    want = _run(lambda x, w: yaad.sum(yaad.autograd.grad(f(x, w), [x], create_graph=True)[0]
                                      ** 2), [a, b], np.asarray)[1]
    for got in results[:3]:
        for g, e in zip(got, results[3]):
            _close(g, _host(e), rtol=1e-13)
        _close(got[1], want[1])
        _close(got[2], want[0])
    assert compiled.stats == {"replayed": 1, "recorded": 2, "eager": 0}


def test_a_function_that_moves_numpy_inputs_to_another_library_replays_there():
    # NumPy inputs, strict values inside (an explicit move): the first recording finds
    # them and the signature records again as on strict arrays
    def f(x, w):
        y = x.to(xps)
        return yaad.sum(yaad.sin(y) * y) + yaad.sum(w * w).to(xps)

    compiled = yaad.compile(f)
    for k in range(5):
        a = np.arange(3.0) - k
        x = yaad.tensor(a, requires_grad=True)
        w = yaad.tensor(a[:2], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = compiled(x, w)
            out.backward()
        _close(out.data, np.sum(np.sin(a) * a) + np.sum(a[:2] ** 2))
        _same(x.grad, np.sin(a) + a * np.cos(a))  # (moved back: NumPy)
        _same(w.grad, 2 * a[:2])
        assert type(x.grad) is np.ndarray and type(w.grad) is np.ndarray
    assert compiled.stats == {"replayed": 2, "recorded": 3, "eager": 0}
    (tree,) = compiled._trees.values()
    assert tree.foreign == "array_api_strict"


def test_item_of_a_strict_tensor_is_a_guard():
    # Found by make fuzz (test_fuzz_compiled_programs_on_array_api_strict_equal_eager, 2 in
    # 326 programs): once Tensor.item() worked on strict arrays, the recording's guard still
    # called .item() on the array (which the array API lacks), failed, and left no guard:
    # the replay reused the first call's value. One conversion (backend.item) serves both.
    def f(v):
        return yaad.sum(v * v[0].item())

    g = yaad.compile(f)
    for v in ([0.8, 1.1, -0.6], [0.8, 1.1, -0.6], [-0.8, 1.1, -0.6], [2.0, 1.0, 1.0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = g(yaad.tensor(xps.asarray(v), requires_grad=True))
        assert float(out.to("numpy").numpy()) == pytest.approx(sum(v) * v[0], rel=1e-14)
