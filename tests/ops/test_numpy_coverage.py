"""Every NumPy function and ufunc that reaches a tensor either has a yaad op, or raises a
TypeError naming it, or is in the documented no-gradient list (issue 7).

NumPy's public functions (``numpy``, ``numpy.linalg``, ``numpy.fft``) that dispatch
through ``__array_function__``, every ufunc and every ufunc method are enumerated; none
may return a result that silently lost the gradient.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import yaad
from tests.op_cases import CASES, available
from tests.support.op_calls import as_inputs, assert_same_forward, draw_call
from tests.support.reliability import fuzz_settings
from yaad.bindings import numpy_protocols as nd

_DISPATCHER = type(np.concatenate)


def _dispatched() -> dict:
    out = {}
    for module in (np, np.linalg, np.fft):
        for name in dir(module):
            f = getattr(module, name)
            if not name.startswith("_") and isinstance(f, _DISPATCHER):
                out[f"{f.__module__}.{f.__name__}"] = f
    return out


DISPATCHED = _dispatched()
UFUNCS = {u.__name__: u for u in vars(np).values() if isinstance(u, np.ufunc)}


def target(f):
    """The yaad function ``Tensor.__array_function__`` calls for ``f``, or None."""
    return nd._yaad_function(f.__name__, f.__module__)


MAPPED = sorted(k for k, f in DISPATCHED.items() if target(f) is not None)
NONDIFF = sorted(k for k, f in DISPATCHED.items() if target(f) is None and f.__name__ in
                 nd.NONDIFF)
RAISES = sorted(k for k in DISPATCHED if k not in MAPPED and k not in NONDIFF)

# What remains without a yaad op, and why. A call on a tensor raises TypeError naming the
# function (test_function_without_an_op_raises_naming_it); this list must stay equal to
# RAISES, so a function that gains an op leaves it.
_WRITES_IN_PLACE = ("writes into its argument; tensors are not written through NumPy: use "
                    "yaad.index_put or an in-place operator on the tensor")
_NOT_YET = "differentiable (a composition of yaad ops), not implemented yet"
_CALLBACK = ("calls a Python function per slice; write the loop with yaad functions "
             "(yaad.stack of the results)")
WITHOUT_AN_OP = {
    **{f"numpy.{n}": _WRITES_IN_PLACE for n in (
        "copyto", "fill_diagonal", "place", "put", "put_along_axis", "putmask")},
    **{f"numpy.{n}": _CALLBACK for n in ("apply_along_axis", "apply_over_axes", "piecewise")},
    "numpy.busday_offset": "dates: no floating-point result",
    "numpy.datetime_as_string": "dates: no floating-point result",
    "numpy.einsum_path": "a contraction plan, not values (yaad.einsum plans its own)",
    "numpy.ix_": "index arrays, not values",
    **{f"numpy.{n}": ("a set operation: sorted unique values, a value-dependent selection "
                      "whose gradient is ambiguous for repeated values")
       for n in ("intersect1d", "union1d", "setdiff1d", "setxor1d")},
    **{f"numpy.{n}": "histogram counts are piecewise constant (no gradient); bin edges are "
                     "not differentiated" for n in ("histogram2d", "histogramdd")},
    "numpy.roots": "eigenvalues of the companion matrix: differentiable for simple roots "
                   "(yaad.linalg.eigvals of it), not implemented yet",
    "numpy.polyfit": "a least-squares fit: differentiable (yaad.linalg.lstsq of the Vandermonde "
                     "matrix), not implemented yet",
    **{f"numpy.{n}": _NOT_YET for n in (
        "block", "choose", "compress", "delete", "extract", "geomspace", "insert", "logspace",
        "nancumprod", "nancumsum", "nanmax", "nanmedian", "nanmin", "nanpercentile", "nanprod",
        "nanquantile", "nanstd", "nanvar", "percentile", "poly", "polydiv", "quantile",
        "resize", "sort_complex", "trim_zeros", "unwrap")},
}


def test_functions_without_an_op_are_listed_with_a_reason():
    assert set(RAISES) == set(WITHOUT_AN_OP), (
        f"not listed: {sorted(set(RAISES) - set(WITHOUT_AN_OP))}; listed but mapped now: "
        f"{sorted(set(WITHOUT_AN_OP) - set(RAISES))}")


def _grad_tensor(shape=(3,)):
    return yaad.tensor(np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape),
                       requires_grad=True)


def test_enumeration_is_complete():
    # Guards the enumeration: NumPy's dispatched functions and ufuncs were all found.
    assert len(DISPATCHED) > 200 and len(UFUNCS) > 80
    assert {"numpy.concatenate", "numpy.linalg.svd", "numpy.fft.fft"} <= set(DISPATCHED)
    assert len(MAPPED) + len(NONDIFF) + len(RAISES) == len(DISPATCHED)


@pytest.mark.parametrize("key", RAISES)
def test_function_without_an_op_raises_naming_it(key):
    f = DISPATCHED[key]
    t = _grad_tensor()
    with pytest.raises(TypeError, match=re.escape(key)):
        nd.array_function(f, (t,), {})
    # Through NumPy itself: whatever the arguments, never a result without the gradient.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = f(t)
    except Exception:
        return
    assert isinstance(out, yaad.Tensor) and out.requires_grad, f"{key} dropped the gradient"


# Parameters of NumPy functions that yaad's function of the same name does not take.
# Passing one raises TypeError (checked below), it is never silently ignored.
KNOWN_SIGNATURE_GAPS = {
    "all": {"where"}, "any": {"where"}, "amax": {"initial", "where"},
    "amin": {"initial", "where"}, "max": {"initial", "where"}, "min": {"initial", "where"},
    "mean": {"where"}, "nanmean": {"where"}, "nansum": {"initial", "where"},
    "prod": {"initial", "where"}, "sum": {"initial", "where"}, "std": {"where", "mean"},
    "var": {"where", "mean"}, "around": {"a", "out"}, "round": {"a", "out"},
    "astype": {"x", "device"}, "broadcast_arrays": {"subok"}, "broadcast_to": {"array"},
    "clip": {"a", "out", "min", "max"}, "copy": {"order", "subok"}, "dot": {"out"},
    "reshape": {"copy"}, "tile": {"A"}, "save": {"file", "arr", "allow_pickle"},
}


def _params(fn) -> dict | None:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None


@pytest.mark.parametrize("key", MAPPED)
def test_function_with_an_op_takes_numpys_parameters(key):
    f = DISPATCHED[key]
    y = target(f)
    assert y.__doc__, f"yaad's {key.removeprefix('numpy.')} has no docstring"
    theirs, ours = _params(f), _params(y)
    if theirs is None or ours is None or any(p.kind == p.VAR_KEYWORD for p in ours.values()):
        return
    missing = {n for n, p in theirs.items() if n not in ours and n != "like"
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    assert missing <= KNOWN_SIGNATURE_GAPS.get(f.__name__, set()), (
        f"yaad's {f.__name__} lacks NumPy's parameters {sorted(missing)}")


@pytest.mark.parametrize("name,param", sorted(
    (n, p) for n, ps in KNOWN_SIGNATURE_GAPS.items() if n not in ("save", "astype")
    for p in ps if p not in ("a", "x", "A", "array", "out")))
def test_a_parameter_yaad_lacks_raises_instead_of_being_ignored(name, param):
    t = _grad_tensor((2, 3))
    value = {"where": np.array([True, False, True]), "initial": 1.0, "mean": 0.5,
             "min": 0.0, "max": 1.0, "order": "F", "subok": True, "copy": True}[param]
    args = {"broadcast_to": ((2, 3),), "reshape": ((3, 2),), "tile": ((2,),),
            "clip": ()}.get(name, ())
    with pytest.raises(TypeError):
        getattr(np, name)(t, *args, **{param: value})


def test_documented_gap_list_is_current():
    # A gap that yaad closes must leave KNOWN_SIGNATURE_GAPS (so the list stays honest).
    for name, gaps in KNOWN_SIGNATURE_GAPS.items():
        f, y = getattr(np, name), getattr(yaad, name, None)
        if y is None or _params(y) is None:
            continue
        closed = {g for g in gaps if g in _params(y) and g in _params(f)}
        assert not closed, f"yaad.{name} now takes {sorted(closed)}: update the list"


def _numpy_named_cases():
    keys = []
    for k, c in CASES.items():
        if c.call is None and available(c.path) and "." not in c.path:
            f = getattr(np, c.path, None)
            if isinstance(f, (np.ufunc, _DISPATCHER)):
                keys.append(k)
    return sorted(keys)


@pytest.mark.parametrize("key", _numpy_named_cases())
@fuzz_settings(3, 30)
@given(data=st.data())
def test_numpy_call_on_tensors_equals_the_yaad_call(key, data):
    """``np.f(tensor)`` is recorded and differentiates like ``yaad.f(tensor)``."""
    case = CASES[key]
    call = draw_call(case, data)
    npf = getattr(np, case.path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = case.ref(*call.args, **call.kwargs)
        except Exception:
            return
        a, b = as_inputs(case, call), as_inputs(case, call)
        got = npf(*a, **call.kwargs)
        direct = case.fn(*b, **call.kwargs)
    assert_same_forward(case, got, expected, single=True)
    got = got if isinstance(got, (list, tuple)) else [got]
    direct = direct if isinstance(direct, (list, tuple)) else [direct]
    assert all(isinstance(g, yaad.Tensor) for g in got)
    assert [g.requires_grad for g in got] == [d.requires_grad for d in direct]
    pairs = [(g, d) for g, d in zip(got, direct) if g.requires_grad]
    if not pairs:
        return
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ws = [rng.standard_normal(g.shape) for g, _ in pairs]
        sum(yaad.real(g * w).sum() for (g, _), w in zip(pairs, ws)).backward()
        sum(yaad.real(d * w).sum() for (_, d), w in zip(pairs, ws)).backward()
    for ta, tb in zip(a, b):
        if isinstance(ta, yaad.Tensor) and ta.requires_grad:
            np.testing.assert_array_equal(ta.grad, tb.grad)


# ---- the no-gradient list ----------------------------------------------------------------------

# Names in numpy_dispatch.NONDIFF that __array_function__ never receives: ufuncs (they go
# through __array_ufunc__), functions NumPy does not dispatch, and names NumPy 2 removed.
NONDIFF_NOT_DISPATCHED = {
    "isfinite", "isinf", "isnan", "signbit",  # ufuncs
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",  # like= only
    "isscalar", "ndenumerate", "ndindex", "mask_indices",  # not dispatched
    "alltrue", "sometrue", "in1d",  # removed in NumPy 2
}


def test_every_no_gradient_name_is_a_numpy_function():
    names = {k.rsplit(".", 1)[1] for k in DISPATCHED}
    unknown = sorted(n for n in nd.NONDIFF if n not in names and n not in NONDIFF_NOT_DISPATCHED)
    assert not unknown, f"numpy_dispatch.NONDIFF names no NumPy function: {unknown}"


_NONDIFF_CALLS = {
    "shape": (), "ndim": (), "size": (), "argmax": (), "argmin": (), "argsort": (),
    "nonzero": (), "flatnonzero": (), "argwhere": (), "count_nonzero": (), "unique": (),
    "iscomplexobj": (), "isrealobj": (), "zeros_like": (), "ones_like": (),
    "searchsorted": (1.0,), "digitize": ([0.0, 1.0],), "isin": ([1.0],),
    "allclose": (np.ones(3),), "array_equal": (np.ones(3),), "histogram": (),
    "isclose": (np.ones(3),), "result_type": (), "array2string": (),
}


@pytest.mark.parametrize("name", sorted(_NONDIFF_CALLS))
def test_no_gradient_functions_give_numpys_answer_on_the_data(name):
    if f"numpy.{name}" not in NONDIFF and f"numpy.{name}" not in MAPPED:
        pytest.skip(f"numpy.{name} is not in the no-gradient list")
    t = _grad_tensor()
    f = getattr(np, name)
    got = f(t, *_NONDIFF_CALLS[name])
    expected = f(t.data, *_NONDIFF_CALLS[name])
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        g = g.data if isinstance(g, yaad.Tensor) else g
        assert not getattr(g, "requires_grad", False)
        if isinstance(e, str) or isinstance(e, np.dtype):
            assert g == e
        else:
            np.testing.assert_array_equal(g, e)


def test_regression_numpy_save_of_a_tensor_saves_its_data(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, yaad.tensor(np.array([1.0, 2.0])))
    np.testing.assert_array_equal(np.load(path), [1.0, 2.0])


# ---- ufuncs and their methods --------------------------------------------------------------------


def _ufunc_inputs(u):
    """Inputs of a dtype the ufunc takes: floats in (0.5, 1.5) if it can, else integers."""
    types = u.types
    nin = u.nin
    for code, make in (("d", lambda: _grad_tensor()), ("D", lambda: _grad_tensor() * (1 + 1j)),
                       ("l", lambda: yaad.tensor(np.array([3, 1, 2]))),
                       ("?", lambda: yaad.tensor(np.array([True, False, True])))):
        if any(t.startswith(code * nin + "->") for t in types):
            return [make() for _ in range(nin)]
    return None


@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_ufunc_maps_to_an_op_or_raises_naming_it(name):
    u = UFUNCS[name]
    fn = nd._yaad_function(nd._UFUNC_ALIASES.get(name, name), "numpy")
    inputs = _ufunc_inputs(u)
    if fn is None:
        t = _grad_tensor()
        with pytest.raises(TypeError, match=re.escape(f"numpy.{name}")):
            u(*[t] * u.nin)
        return
    if inputs is None:
        pytest.skip(f"numpy.{name} takes no float, complex, integer or boolean input")
    if u.signature is not None:  # a gufunc (matvec...): give each operand its core axes
        cores = [c.strip("()") for c in u.signature.split("->")[0].split("),(")]
        inputs = [yaad.tensor(np.linspace(0.5, 1.5, 3 ** max(1, len(c.split(","))))
                              .reshape((3,) * max(1, len(c.split(",")))), requires_grad=True)
                  for c in cores]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = u(*inputs)
        expected = u(*[x.data for x in inputs])
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        assert isinstance(g, yaad.Tensor), f"numpy.{name} returned {type(g).__name__}"
        np.testing.assert_array_equal(g.data, e)
        assert g.dtype == e.dtype
        if any(x.requires_grad for x in inputs) and e.dtype.kind in "fc" and _has_rules(fn):
            assert g.requires_grad, f"numpy.{name} dropped the gradient"


def _has_rules(fn) -> bool:
    """False for ops declared without gradient (heaviside: piecewise constant)."""
    spec = getattr(fn, "op", None)
    return spec is None or any(r is not None for r in spec.vjps)


_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")


@pytest.mark.parametrize("name,method", [(n, m) for n in sorted(UFUNCS) if UFUNCS[n].nin == 2
                                         for m in _METHODS])
def test_ufunc_method_maps_or_raises_naming_it(name, method):
    u = UFUNCS[name]
    fn = nd._yaad_function(nd._UFUNC_ALIASES.get(name, name), "numpy")
    mapped = (name, method) in nd._UFUNC_METHODS or (method == "outer" and fn is not None)
    t = _grad_tensor((2, 3))
    args = {"reduce": (t,), "accumulate": (t,), "reduceat": (t, [0, 1]), "outer": (t, t),
            "at": (t, [0], 1.0)}[method]
    plain = [a.data.copy() if isinstance(a, yaad.Tensor) else a for a in args]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(u, method)(*plain)
    except (TypeError, ValueError, RuntimeError):  # NumPy refuses (matmul.reduce, divmod.at)
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            getattr(u, method)(*args)
        return
    if not mapped:
        with pytest.raises(TypeError, match=re.escape(f"numpy.{name}.{method}")):
            getattr(u, method)(*args)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(u, method)(*args)
    np.testing.assert_allclose(got.data, expected, rtol=1e-12)
    assert got.dtype == expected.dtype
    if expected.dtype.kind in "fc" and _has_rules(fn):
        assert got.requires_grad
