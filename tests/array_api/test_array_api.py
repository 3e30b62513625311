"""yaad.array_api, the array API namespace of tensors, against array_api_strict (the
standard's reference implementation) as the oracle: the names, signatures, dtype
functions, and the same calls on array_api_strict arrays and on tensors (values, dtypes,
shapes; a call the oracle accepts must not raise on tensors); the array protocols of
Tensor; gradients of the adapters against PyTorch.

The official suite (data-apis/array-api-tests) cannot be fetched by ``make test``; its
pass counts, run once, and every deviation with its reason are in docs/backends.md.
"""

from __future__ import annotations

import inspect

import array_api_compat
import array_api_strict as xs
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import yaad
import yaad.array_api as xp
from tests.support.reliability import fuzz_settings

xs.set_array_api_strict_flags(api_version="2024.12")

# array_api_strict's own helpers (not the standard's) and broadcast_shapes (2025.12).
STRICT_ONLY = {"ArrayAPIStrictFlags", "Device", "get_array_api_strict_flags",
               "reset_array_api_strict_flags", "set_array_api_strict_flags",
               "broadcast_shapes"}
STANDARD = sorted(n for n in set(xs.__all__) - STRICT_ONLY if not n.startswith("__"))


def test_a_tensor_names_yaad_array_api_as_its_namespace():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert array_api_compat.array_namespace(x, x * 2) is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2019.01")
    assert xp.__array_api_version__ == "2024.12"
    assert x.device == "cpu" and x.to_device("cpu") is x
    assert array_api_compat.device(x) == "cpu"


@pytest.mark.parametrize("name", STANDARD)
def test_every_standard_name_is_there_with_the_standard_signature(name):
    ref = getattr(xs, name)
    assert hasattr(xp, name), f"yaad.array_api lacks {name}"
    if not inspect.isfunction(ref):
        return
    _check_signature(name, ref, getattr(xp, name))


@pytest.mark.parametrize("ext, name", [(ext, n) for ext in ("linalg", "fft")
                                       for n in getattr(xs, ext).__all__])
def test_every_extension_function_is_there_with_the_standard_signature(ext, name):
    ref = getattr(getattr(xs, ext), name)
    ours = getattr(getattr(xp, ext), name, None)
    assert ours is not None, f"yaad.array_api.{ext} lacks {name}"
    _check_signature(f"{ext}.{name}", ref, ours)


def _check_signature(name, ref, ours):
    """As the official suite checks: the standard's positional parameters are accepted in
    their places, its keyword parameters by name (extra parameters with defaults are
    allowed)."""
    std = list(inspect.signature(ref).parameters.values())
    got = inspect.signature(ours).parameters
    have = list(got.values())
    var_pos = any(p.kind is p.VAR_POSITIONAL for p in have)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in have)
    positional = [p for p in have if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for k, p in enumerate(std):
        if p.kind is p.POSITIONAL_ONLY:
            assert var_pos or k < len(positional), f"{name}: no place for {p.name}"
        elif p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            q = got.get(p.name)
            assert var_kw or (q is not None and q.kind is not q.POSITIONAL_ONLY), (
                f"{name}: keyword {p.name} not accepted")
        elif p.kind is p.VAR_POSITIONAL:
            assert var_pos, f"{name}: takes *{p.name}"


def test_inspection_namespace_matches_array_api_strict():
    ours, ref = xp.__array_namespace_info__(), xs.__array_namespace_info__()
    assert set(ours.capabilities()) >= {"boolean indexing", "data-dependent shapes"}
    assert ours.default_device() == "cpu" and ours.devices() == ["cpu"]
    assert {k: np.dtype(v).name for k, v in ours.default_dtypes().items()} == {
        k: _name(v) for k, v in ref.default_dtypes().items()}
    for kind in (None, "bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric", ("bool", "real floating")):
        assert set(ours.dtypes(kind=kind)) == set(ref.dtypes(kind=kind)), kind


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]  # (array_api_strict.float64 -> float64)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric"]


def test_dtype_functions_match_array_api_strict_on_every_pair():
    checked = 0
    for a in DTYPES:
        da, ra = getattr(xp, a), getattr(xs, a)
        assert xp.asarray(0, dtype=da).dtype == da
        for kind in KINDS + DTYPES:
            k_ours = getattr(xp, kind) if kind in DTYPES else kind
            k_ref = getattr(xs, kind) if kind in DTYPES else kind
            assert xp.isdtype(da, k_ours) == xs.isdtype(ra, k_ref), (a, kind)
        for b in DTYPES:
            db, rb = getattr(xp, b), getattr(xs, b)
            assert xp.can_cast(da, db) == xs.can_cast(ra, rb), (a, b)
            try:
                want = _name(xs.result_type(ra, rb))
            except TypeError:
                continue  # (a mixed-kind pair: undefined by the standard)
            assert np.dtype(xp.result_type(da, db)).name == want, (a, b)
            checked += 1
        info = xp.finfo(da) if "float" in a or "complex" in a else (
            xp.iinfo(da) if a != "bool" else None)
        if info is not None:
            ref = (xs.finfo if "float" in a or "complex" in a else xs.iinfo)(ra)
            for field in ("bits", "max", "min") + (("eps", "smallest_normal")
                                                   if hasattr(ref, "eps") else ()):
                assert getattr(info, field) == getattr(ref, field), (a, field)
                assert type(getattr(info, field)) is type(getattr(ref, field)), (a, field)
            assert np.dtype(info.dtype).name == _name(ref.dtype)
    assert checked == 73  # (bool 1, integers 64 less the 8 of uint64 with int*, inexact 16)
    t = yaad.tensor([1, 2], dtype=np.int8)
    assert xp.result_type(t, 1.0) == np.float64 and xp.result_type(t, 1) == np.int8
    assert xp.can_cast(t, xp.int16) and not xp.can_cast(t, xp.float64)


# ---- the same calls on both: values, dtypes, shapes -------------------------------------

def _unary(name):
    return lambda m, x: getattr(m, name)(x)


def _binary(name):
    return lambda m, x, y: getattr(m, name)(x, y)


UNARY_FLOAT = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "conj", "cos",
               "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log",
               "log1p", "log2", "log10", "negative", "positive", "real", "reciprocal",
               "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh",
               "trunc"]
BINARY_FLOAT = ["add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater",
                "greater_equal", "hypot", "less", "less_equal", "logaddexp", "maximum",
                "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder",
                "subtract"]
BINARY_INT = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
              "bitwise_right_shift"]
MATRIX = {
    "sum": lambda m, x: m.sum(x, axis=0, keepdims=True),
    "prod": lambda m, x: m.prod(x, axis=-1),
    "mean": lambda m, x: m.mean(x, axis=(0, 1)),
    "std": lambda m, x: m.std(x, axis=0, correction=1),
    "var": lambda m, x: m.var(x, correction=0.5),
    "max": lambda m, x: m.max(x, axis=1),
    "min": lambda m, x: m.min(x, keepdims=True),
    "argmax": lambda m, x: m.argmax(x, axis=0),
    "argmin": lambda m, x: m.argmin(x, axis=1, keepdims=True),
    "cumulative_sum": lambda m, x: m.cumulative_sum(x, axis=0, include_initial=True),
    "cumulative_prod": lambda m, x: m.cumulative_prod(x, axis=1),
    "sort": lambda m, x: m.sort(x, axis=0, descending=True),
    "argsort": lambda m, x: m.argsort(x, axis=1, descending=True, stable=True),
    "argsort-ascending": lambda m, x: m.argsort(x, axis=0),
    "unique_values": lambda m, x: m.unique_values(x),
    "unique_counts": lambda m, x: m.unique_counts(x),
    "unique_inverse": lambda m, x: m.unique_inverse(x),
    "unique_all": lambda m, x: m.unique_all(x),
    "clip": lambda m, x: m.clip(x, min=-0.5, max=0.5),
    "clip-array": lambda m, x: m.clip(x, max=m.asarray(0.25, dtype=x.dtype)),
    "permute_dims": lambda m, x: m.permute_dims(x, (1, 0)),
    "concat": lambda m, x: m.concat([x, x], axis=1),
    "concat-none": lambda m, x: m.concat([x, x], axis=None),
    "stack": lambda m, x: m.stack([x, x], axis=-1),
    "expand_dims": lambda m, x: m.expand_dims(x, axis=-1),
    "reshape": lambda m, x: m.reshape(x, (-1,), copy=True),
    "squeeze": lambda m, x: m.squeeze(m.expand_dims(x, axis=0), axis=0),
    "flip": lambda m, x: m.flip(x, axis=1),
    "roll": lambda m, x: m.roll(x, 2, axis=None),
    "moveaxis": lambda m, x: m.moveaxis(x, 0, 1),
    "repeat": lambda m, x: m.repeat(x, 2, axis=0),
    "tile": lambda m, x: m.tile(x, (2, 1)),
    "unstack": lambda m, x: m.unstack(x, axis=1),
    "broadcast_arrays": lambda m, x: m.broadcast_arrays(x, x[:1, :]),
    "broadcast_to": lambda m, x: m.broadcast_to(x[:1, :], (4, x.shape[1])),
    "meshgrid": lambda m, x: m.meshgrid(x[0, :], x[:, 0], indexing="ij"),
    "tril": lambda m, x: m.tril(x, k=-1),
    "triu": lambda m, x: m.triu(x, k=1),
    "take": lambda m, x: m.take(x, m.asarray([2, 0, 0]), axis=1),
    "take_along_axis": lambda m, x: m.take_along_axis(x, m.argsort(x, axis=0), axis=0),
    "diff": lambda m, x: m.diff(x, axis=0, n=2),
    "count_nonzero": lambda m, x: m.count_nonzero(m.floor(x), axis=0),
    "nonzero": lambda m, x: m.nonzero(x > 0),
    "where": lambda m, x: m.where(x > 0, x, 0.0),
    "searchsorted": lambda m, x: m.searchsorted(m.sort(x[0, :]), x[1, :], side="right"),
    "all": lambda m, x: m.all(x > -1, axis=0),
    "any": lambda m, x: m.any(x > 1, keepdims=True),
    "astype": lambda m, x: m.astype(x, m.float32),
    "matmul": lambda m, x: m.matmul(x, m.matrix_transpose(x)),
    "tensordot": lambda m, x: m.tensordot(x, x, axes=([0], [0])),
    "vecdot": lambda m, x: m.vecdot(x, x, axis=-2),
    "full_like": lambda m, x: m.full_like(x, 2.5),
    "zeros": lambda m, x: m.zeros((2, 3), dtype=x.dtype),
    "ones_like": lambda m, x: m.ones_like(x, dtype=m.int32),
    "eye": lambda m, x: m.eye(3, 4, k=1, dtype=x.dtype),
    "arange": lambda m, x: m.arange(1, 7, 2, dtype=x.dtype),
    "linspace": lambda m, x: m.linspace(0.0, 1.0, 5, dtype=x.dtype, endpoint=False),
    "full": lambda m, x: m.full((2,), 3),
    "asarray-copy": lambda m, x: m.asarray(x, copy=True),
    "linalg.matrix_norm": lambda m, x: m.linalg.matrix_norm(x[:3, :3], ord="fro"),
    "linalg.vector_norm": lambda m, x: m.linalg.vector_norm(x, axis=0, ord=3),
    "linalg.det": lambda m, x: m.linalg.det(x[:3, :3]),
    "linalg.inv": lambda m, x: m.linalg.inv(x[:3, :3] + 3 * m.eye(3, dtype=x.dtype)),
    "linalg.solve": lambda m, x: m.linalg.solve(x[:3, :3] + 3 * m.eye(3, dtype=x.dtype),
                                                x[:3, 0]),
    "linalg.eigvalsh": lambda m, x: m.linalg.eigvalsh(x[:3, :3] + x[:3, :3].mT),
    "linalg.svdvals": lambda m, x: m.linalg.svdvals(x),
    "linalg.cross": lambda m, x: m.linalg.cross(x[:, :3], x[::-1, :3]),
    "linalg.outer": lambda m, x: m.linalg.outer(x[0, :], x[1, :]),
    "linalg.trace": lambda m, x: m.linalg.trace(x, offset=1),
    "linalg.diagonal": lambda m, x: m.linalg.diagonal(x, offset=-1),
    "linalg.matrix_power": lambda m, x: m.linalg.matrix_power(x[:3, :3], 3),
    "linalg.cholesky": lambda m, x: m.linalg.cholesky(
        x[:3, :3] @ x[:3, :3].mT + m.eye(3, dtype=x.dtype), upper=True),
    "fft.fft": lambda m, x: m.fft.fft(m.astype(x, m.complex128 if x.dtype == m.float64 else
                                              m.complex64), axis=0, norm="ortho"),
    "fft.rfftn": lambda m, x: m.fft.rfftn(x, axes=(0, 1)),
    "fft.fftshift": lambda m, x: m.fft.fftshift(x, axes=0),
    "fft.fftfreq": lambda m, x: m.fft.fftfreq(5, d=0.5, dtype=x.dtype),
    "fft.rfftfreq": lambda m, x: m.fft.rfftfreq(6, dtype=x.dtype),
}


def _arrays_of(out):
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _arrays_of(o)]
    return [out]


def _compare(name, call, *values):
    want = call(xs, *(xs.asarray(v) for v in values))  # (the inputs are all defined)
    got = call(xp, *(yaad.tensor(v) for v in values))
    containers = (tuple, list)
    assert isinstance(got, containers) == isinstance(want, containers), (name, type(got))
    if isinstance(want, containers):  # (a list where the standard says list)
        assert isinstance(got, list) == isinstance(want, list), (name, type(got))
    for g, w in zip(_arrays_of(got), _arrays_of(want), strict=True):
        assert isinstance(g, yaad.Tensor), (name, type(g))
        assert g.shape == w.shape, (name, g.shape, w.shape)
        assert g.dtype == np.dtype(_name(w.dtype)), (name, g.dtype, w.dtype)
        w = np.asarray(w)
        tol = 1e-5 if w.dtype in (np.float32, np.complex64) else 1e-12
        if w.dtype.kind == "c" or w.dtype.kind == "f" and name.startswith(("linalg", "fft")):
            np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(g.numpy(), w, err_msg=name)


FLOATS = st.sampled_from([np.float32, np.float64])


def _values(data, dtype, shape, lo=-3.0, hi=3.0):
    return np.asarray(data.draw(st.lists(st.floats(lo, hi, width=32), min_size=int(
        np.prod(shape)), max_size=int(np.prod(shape)))), dtype=dtype).reshape(shape)


@pytest.mark.parametrize("name", UNARY_FLOAT)
@fuzz_settings(4, 60)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64, np.complex128]))
def test_elementwise_unary_matches_array_api_strict(name, data, dtype):
    if name in ("ceil", "floor", "trunc", "signbit"):  # (real only)
        dtype = np.float64 if dtype == np.complex128 else dtype
    elif name == "imag":  # (complex only)
        dtype = np.complex128
    x = _values(data, np.float64, (3,)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _values(data, np.float64, (3,))
    with np.errstate(all="ignore"):
        _compare(name, _unary(name), x)


@pytest.mark.parametrize("name", BINARY_FLOAT)
@fuzz_settings(4, 60)
@given(data=st.data(), dtype=FLOATS)
def test_elementwise_binary_matches_array_api_strict(name, data, dtype):
    x, y = _values(data, dtype, (2, 3)), _values(data, dtype, (3,))
    with np.errstate(all="ignore"):
        _compare(name, _binary(name), x, y)


@pytest.mark.parametrize("name", BINARY_INT)
@fuzz_settings(4, 60)
@given(data=st.data(), dtype=st.sampled_from([np.int8, np.int64, np.uint8]))
def test_elementwise_integer_matches_array_api_strict(name, data, dtype):
    x = np.asarray(data.draw(st.lists(st.integers(0, 100), min_size=3, max_size=3)), dtype)
    y = np.asarray(data.draw(st.lists(st.integers(0, 6), min_size=3, max_size=3)), dtype)
    _compare(name, _binary(name), x, y)
    _compare("bitwise_invert", _unary("bitwise_invert"), x)


@pytest.mark.parametrize("name", sorted(MATRIX))
@fuzz_settings(3, 40)
@given(data=st.data(), dtype=FLOATS)
def test_functions_match_array_api_strict(name, data, dtype):
    x = _values(data, dtype, (4, 3))
    if data.draw(st.booleans()):
        x[1] = x[0]  # (ties: for sort, unique, argmax)
    with np.errstate(all="ignore"):
        _compare(name, MATRIX[name], x)


def test_operators_match_array_api_strict():
    ints = np.array([[12, 7, 0], [3, 255, 40]], dtype=np.int64)
    small = np.array([1, 2, 3], dtype=np.int64)
    for op in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__add__",
               "__floordiv__", "__mod__", "__pow__", "__lt__", "__ne__"):
        _compare(op, lambda m, a, b, op=op: getattr(a, op)(b), ints, small)
        _compare(op + "-scalar", lambda m, a, op=op: getattr(a, op)(2), ints)
    bools = np.array([True, False, True])
    for op in ("__and__", "__or__", "__xor__", "__invert__"):
        _compare(op, lambda m, a, op=op: getattr(a, op)(*([a[::-1]] if op != "__invert__"
                                                          else [])), bools)
    for iop in ("__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"):
        def inplace(m, a, b, iop=iop):
            a = m.asarray(a, copy=True)
            return getattr(a, iop)(b)
        _compare(iop, inplace, ints, small)


def test_isin_matches_numpy():  # (array_api_strict has it from 2025.12 only)
    x = np.array([[0.0, 1.0, 2.5], [np.nan, -1.0, 1.0]])
    for invert in (False, True):
        got = xp.isin(yaad.tensor(x), yaad.tensor([1.0, np.nan, 2.5]), invert=invert)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), np.isin(x, [1.0, np.nan, 2.5],
                                                            invert=invert))


def test_dlpack_round_trips_and_refuses_a_tensor_that_requires_grad():
    a = np.arange(6.0).reshape(2, 3)
    t = xp.from_dlpack(a)
    assert isinstance(t, yaad.Tensor) and np.shares_memory(t.numpy(), a)
    assert np.shares_memory(np.from_dlpack(t), a)
    assert t.__dlpack_device__() == a.__dlpack_device__()
    np.testing.assert_array_equal(xs.from_dlpack(t), xs.asarray(a))
    x = yaad.tensor([1.0], requires_grad=True)
    assert xp.from_dlpack(x) is x
    with pytest.raises(TypeError, match="requires grad"):
        np.from_dlpack(x)


def test_device_arguments_accept_cpu_and_refuse_others():
    x = xp.zeros((2,), device="cpu")
    assert xp.ones_like(x, device=x.device).device == "cpu"
    with pytest.raises(ValueError, match="zeros: device='gpu'"):
        xp.zeros((2,), device="gpu")


# ---- gradients of the adapters, against PyTorch ------------------------------------------

def _grads(f_ours, f_torch, *arrays):
    ours = [yaad.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    w = np.cos(np.arange(50.0))
    out = f_ours(*ours)
    yaad.sum(out * w[:out.size].reshape(out.shape)).backward()
    out_t = f_torch(*theirs)
    (out_t * torch.tensor(w[:out_t.numel()].reshape(out_t.shape))).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=1e-14)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad, b.grad.numpy(), rtol=1e-13, atol=1e-15)


X = np.array([[0.3, -1.2, 0.3, 2.0], [1.5, 1.5, -0.7, 0.0], [0.1, 0.1, 0.1, -2.0]])


def test_sort_descending_gradient_and_order_match_torch():
    _grads(lambda x: xp.sort(x, axis=1, descending=True),
           lambda x: torch.sort(x, dim=1, descending=True, stable=True).values, X)
    _grads(lambda x: xp.sort(x, axis=0),
           lambda x: torch.sort(x, dim=0, stable=True).values, X)
    got = xp.argsort(yaad.tensor(X), axis=1, descending=True)
    want = torch.sort(torch.tensor(X), dim=1, descending=True, stable=True).indices
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_clip_copysign_and_expand_dims_gradients_match_torch():
    lo = np.full((3, 4), -0.5)
    _grads(lambda x, lo: xp.clip(x, min=lo, max=1.0),
           lambda x, lo: torch.clamp(x, min=lo, max=torch.tensor(1.0, dtype=x.dtype)), X, lo)
    _grads(lambda x, y: xp.copysign(x, y), torch.copysign, X, X[::-1] - 0.05)
    _grads(lambda x: xp.reshape(xp.expand_dims(x, axis=1), (3, 4), copy=True),
           lambda x: torch.reshape(x.unsqueeze(1), (3, 4)), X)
    _grads(lambda x: xp.astype(x, xp.float32), lambda x: x.to(torch.float32), X)


def test_unique_values_gradient_reaches_first_occurrences():
    # (PyTorch's unique has no backward; the oracle is a gather at np.unique's indices)
    x = yaad.tensor(X, requires_grad=True)
    res = xp.unique_all(x)
    w = np.arange(1.0, res.values.shape[0] + 1)
    yaad.sum(res.values * w).backward()
    _, first = np.unique(X.ravel(), return_index=True)
    want = np.zeros(X.size)
    want[first] = w
    np.testing.assert_array_equal(x.grad, want.reshape(X.shape))
    np.testing.assert_array_equal(res.values.detach().numpy()[res.inverse_indices.numpy()],
                                  X)
    assert res.counts.numpy().sum() == X.size


def test_namespace_functions_are_recorded_under_forward_mode_vmap_and_compile():
    f = lambda x: xp.sum(xp.sort(xp.clip(x, min=-1.0), descending=True) ** 2 *  # noqa: E731
                         xp.linspace(1.0, 2.0, 4))
    g = lambda x: (torch.sort(torch.clamp(x, min=-1.0), descending=True).values ** 2  # noqa: E731
                   * torch.linspace(1.0, 2.0, 4, dtype=x.dtype)).sum()
    x0 = X[0]
    want = torch.func.grad(g)(torch.tensor(x0)).numpy()
    np.testing.assert_allclose(yaad.func.grad(f)(x0), want, rtol=1e-13)
    t = np.array([1.0, 0.5, -1.0, 2.0])
    _, tangent = yaad.func.jvp(f, (x0,), (t,))
    np.testing.assert_allclose(tangent, want @ t, rtol=1e-13)
    batched = yaad.func.vmap(yaad.func.grad(f))(X)
    np.testing.assert_allclose(batched, torch.func.vmap(torch.func.grad(g))(
        torch.tensor(X)).numpy(), rtol=1e-13)
    compiled = yaad.compile(f)
    for row in X:
        x = yaad.tensor(row, requires_grad=True)
        compiled(x).backward()
        np.testing.assert_allclose(x.grad, torch.func.grad(g)(torch.tensor(row)).numpy(),
                                   rtol=1e-13)
