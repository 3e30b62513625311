"""Every registered op under ``yaad.func.vmap``, against a Python loop over the examples.

The op-case table (``strategies.CASES``, one entry per op of ``yaad.registry`` and the
public composites) draws a valid call; the batch is that call's arrays at three scales
(so the examples differ, and stay in the op's domain and structure), stacked along axis 0
or along a later axis, for all arrays or for some of them (the others shared). vmap's
result must equal the loop's ``stack`` in values, shape and dtype, and, for the arrays
differentiated, so must its vector-Jacobian products for batched cotangents (the path of
``jacrev``) and its Jacobian-vector products for batched tangents (``jacfwd``). A
registered op without a case, or without a batching rule, fails here.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

import yaad
from tests.op_cases import (
    CASES,
    RULE_TERMS,
    Call,
    Case,
    available,
    builtin_ops,
    covered_ops,
)
from tests.support.reliability import fuzz_settings
from yaad.func import BatchingWarning, jvp, vjp, vmap
from yaad.modes import batched_values as batching
from yaad.modes.batch import rule_of

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::numpy.exceptions.ComplexWarning")

SCALES = (1.0, 0.9, 1.1)  # example b is the drawn call with its float arrays scaled

# What runs once per example under vmap by design (an op declared batch="per_example", a
# function decorated with yaad.batching.per_example, or a rule that declines some
# arguments), and why. Nothing else may fall back to the loop on floating-point batches.
FALLBACK = {
    "argwhere": "its number of rows is the number of non-zeros, which follows the values "
                "(nonzero calls it)",
    "unique_indices": "the number of unique elements follows each example's values",
    "isin": "numpy.isin tests against one set of elements: a set that differs per example "
            "runs per example",
    "repeat": "repeats that differ per example give results of different lengths",
    "lstsq": "the shape of the residuals follows each example's rank",
    "_qr_raw": "numpy.linalg.qr(mode='raw') takes one matrix: it has no stacked form",
    "searchsorted": "numpy.searchsorted takes one sorted 1-D array: a sorted array that "
                    "differs per example runs per example (one shared is batched)",
    "signal.convolve": "with both inputs batched: SciPy convolves along every axis it is "
                       "given, a shared batch axis too, and an FFT over it would not give "
                       "the direct method's values (one input batched is one call)",
    "signal.correlate": "as signal.convolve",
    "linalg.solve_banded": "with the band batched: SciPy's banded solver takes one band (a "
                           "shared band solves all the examples' right-hand sides at once)",
    "polar": "SciPy's values, which come from one matrix at a time (yaad.linalg.polar)",
    "schur": "LAPACK's Schur form of one matrix; NumPy and SciPy have no stacked form",
    "polymul": "NumPy trims each polynomial's leading zeros: the length follows the values",
    "cov": "with batched fweights or aweights, whose values numpy.cov's checks read",
}


def _params(keys):
    return [pytest.param(k, marks=pytest.mark.skipif(
        not available(CASES[k].path), reason=f"yaad.{CASES[k].path} does not exist yet"))
        for k in sorted(keys)]


def _arrays(call: Call) -> list[int]:
    """Positions of the array arguments (the candidates for a batch axis)."""
    return [i for i, a in enumerate(call.args) if isinstance(a, np.ndarray)]


def _example(a: np.ndarray, b: int) -> np.ndarray:
    # (an array, 0-d too, as vmap gives the op one: SciPy gives a scalar another dtype)
    return np.asarray((a * a.dtype.type(SCALES[b])).astype(a.dtype)) if a.dtype.kind in "fc" \
        else a


def _outputs(out) -> list:
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o.data if isinstance(o, yaad.Tensor) else o) for o in out]


def _loop(case: Case, call: Call, batched: list[int]) -> list:
    per = []
    for b in range(len(SCALES)):
        args = [_example(a, b) if i in batched else a for i, a in enumerate(call.args)]
        per.append(_outputs(case.fn(*args, **call.kwargs)))
    return [np.stack(r) for r in zip(*per)]


def _batch(a: np.ndarray, axis: int) -> np.ndarray:
    return np.stack([_example(a, b) for b in range(len(SCALES))], axis=axis)


def _same(got: list, want: list, what: str, single: bool) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, the loop {len(want)}"
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"{what}: shape {g.shape}, the loop {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, the loop {w.dtype}"
        tol = 1e-4 if single or w.dtype in (np.float32, np.complex64) else 1e-9
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * (1 + np.nanmax(
                np.abs(w), initial=0)), err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


def _single(call: Call) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype in (np.float32, np.complex64)
               for a in call.args)


def _configs(data, case: Case, call: Call) -> list[tuple]:
    """(batched positions, their batch axes): all arrays at axis 0; all at their last
    axis; and a mix where some arrays are shared by every example."""
    arrays = _arrays(call)
    if not arrays:
        return []
    configs = [(arrays, [0] * len(arrays)),
               (arrays, [np.ndim(call.args[i]) for i in arrays])]
    if case.path == "index_put_":  # in place: the tensor written holds the batch
        return [([0, 1], [0, 0])]
    if len(arrays) > 1:
        some = data.draw(st.lists(st.sampled_from(arrays), min_size=1, max_size=len(arrays) - 1,
                                  unique=True), label="batched")
        configs.append((sorted(some), [0] * len(some)))
    return configs


def _vmapped(case: Case, call: Call, batched: list[int], axes: list[int]):
    def f(*xs):
        args = list(call.args)
        for i, x in zip(batched, xs):
            args[i] = x
        return case.fn(*args, **call.kwargs)

    return vmap(f, in_axes=tuple(axes))(*[_batch(call.args[i], a)
                                          for i, a in zip(batched, axes)])


def draw_call(case: Case, data) -> Call:
    dtype = data.draw(st.sampled_from(case.dtypes), label="dtype")
    call = case.draw(data, dtype)
    note(f"call: {case.path}(*{call.args!r}, **{call.kwargs!r})")
    return call


def _expected(case: Case, call: Call, batched: list[int]) -> list | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _loop(case, call, batched)
    except Exception:
        return None  # an example NumPy refuses (checked by the op's own suites)


def _floats_only(call: Call, batched: list[int]) -> bool:
    return all(call.args[i].dtype.kind in "fc" for i in batched)


@pytest.mark.parametrize("key", _params(CASES))
@fuzz_settings(4, 60)
@given(data=st.data())
def test_vmap_matches_a_loop(key, data):
    case = CASES[key]
    call = draw_call(case, data)
    for batched, axes in _configs(data, case, call):
        want = _expected(case, call, batched)
        if want is None:
            continue
        got, fell_back = _fallbacks(
            lambda batched=batched, axes=axes: _outputs(_vmapped(case, call, batched, axes)))
        what = f"{case.path} batched at {dict(zip(batched, axes))}"
        _same(got, want, what, _single(call))
        fell_back = [m for m in fell_back if m.split("'")[1] not in FALLBACK]
        if _floats_only(call, batched):
            assert not fell_back, f"{what}: ran per example: {fell_back}"


def _fallbacks(run):
    """``run()`` and the BatchingWarnings it raised (each op warns once a process: the
    record of ops already warned is cleared first, so that none is missed)."""
    batching._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BatchingWarning)
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        out = run()
    return out, [str(w.message) for w in caught if issubclass(w.category, BatchingWarning)]


def _diff_inputs(case: Case, call: Call) -> list[int]:
    return case.diff_positions(call)


def _random_like(rng, a) -> np.ndarray:
    a = np.asarray(a)
    r = rng.standard_normal(a.shape)
    if a.dtype.kind == "c":
        r = r + 1j * rng.standard_normal(a.shape)
    return r.astype(a.dtype)


def _function(case: Case, call: Call, pos: list[int]):
    def f(*xs):
        args = list(call.args)
        for p, x in zip(pos, xs):
            args[p] = x
        out = case.fn(*args, **call.kwargs)
        out = case.post(out) if case.post else out
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return tuple(o for o in outs if np.asarray(getattr(o, "data", o)).dtype.kind in "fc")

    return f


@pytest.mark.parametrize("key", _params(k for k, c in CASES.items() if c.grad == "smooth"))
@fuzz_settings(3, 40)
@given(data=st.data())
def test_vmap_of_vjp_and_jvp_matches_a_loop(key, data):
    """The rules of every differentiable op, run on batched cotangents and tangents."""
    case = CASES[key]
    call = draw_call(case, data)
    assume(case.ok is None or case.ok(call))
    pos = _diff_inputs(case, call)
    assume(pos)
    f = _function(case, call, pos)
    inputs = [call.args[p] for p in pos]
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            out, f_vjp = vjp(f, *inputs)
        except Exception:
            assume(False)
        assume(out)
        cots = tuple(np.stack([_random_like(rng, o) for _ in SCALES]) for o in out)
        want = [np.stack(r) for r in zip(*[f_vjp(tuple(c[b] for c in cots))
                                           for b in range(len(SCALES))])]
        got, fell_back = _fallbacks(lambda: vmap(f_vjp)(cots))
        _same(_outputs(got), want, f"vjp of {case.path}", _single(call))
        assert not fell_back, f"{case.path}: a rule ran per example: {fell_back}"

        tans = [np.stack([_random_like(rng, x) for _ in SCALES]) for x in inputs]
        want = [np.stack(r) for r in zip(*[jvp(f, inputs, [t[b] for t in tans])[1]
                                           for b in range(len(SCALES))])]
        got, fell_back = _fallbacks(lambda: vmap(lambda *ts: jvp(f, inputs, ts)[1])(*tans))
        _same(_outputs(got), want, f"jvp of {case.path}", _single(call))
        assert not fell_back, f"{case.path}: a rule ran per example: {fell_back}"


def _modules() -> list:
    mods = [yaad]
    for info in pkgutil.walk_packages(yaad.__path__, "yaad."):
        if info.name.split(".")[-1] not in ("__main__", "demo"):
            mods.append(importlib.import_module(info.name))
    return mods


def test_every_registered_op_has_a_batching_rule_and_a_case():
    ops = builtin_ops()
    missing = sorted(name for name, spec in ops.items() if rule_of(spec) is None)
    assert not missing, f"ops without a batching rule (yaad.op(batch=...)): {missing}"
    looped = sorted(name for name, spec in ops.items() if spec.batch == "per_example")
    unexplained = set(looped) - set(FALLBACK)
    assert not unexplained, f"ops declared per example, missing from FALLBACK: {unexplained}"
    decorated = {f.__name__ for mod in _modules() for f in vars(mod).values()
                 if callable(f) and getattr(f, "batch", None) == "per_example"}
    assert {"repeat", "lstsq", "_qr_raw"} <= decorated, decorated
    stale = set(FALLBACK) - set(ops) - decorated
    assert not stale, f"FALLBACK names what no longer runs per example: {stale}"
    uncovered = sorted(set(ops) - covered_ops() - set(RULE_TERMS))  # (checked by their rule's op)
    assert not uncovered, (f"ops without a case in tests/op_cases/ (a row in elementwise.py, "
                           f"or a case(...) in the module of its family): {uncovered}")
