"""Reductions, scans and sorting: NumPy's values for every axis form, finite-difference
gradients (real and complex, first and second order), the documented subgradients (ties,
zeros, constant inputs), forward mode, and PyTorch where installed."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import yaad
from tests.support.shape_checks import assert_like, check_jvp, rand
from yaad.testing import gradcheck, gradgradcheck

C128, F32 = np.complex128, np.float32
AXES = [None, 0, -1, (0, 2), (-1, 0, 1), ()]

# (name, yaad function, numpy function, defined on complex numbers)
REDUCTIONS = [
    ("sum", yaad.sum, np.sum, True),
    ("mean", yaad.mean, np.mean, True),
    ("prod", yaad.prod, np.prod, True),
    ("max", yaad.max, np.max, False),
    ("min", yaad.min, np.min, False),
    ("amax", yaad.amax, np.amax, False),
    ("amin", yaad.amin, np.amin, False),
    ("var", yaad.var, np.var, True),
    ("std", yaad.std, np.std, True),
    ("var_ddof", lambda a, **k: yaad.var(a, ddof=1, **k), lambda a, **k: np.var(a, ddof=1, **k),
     True),
    ("std_correction", lambda a, **k: yaad.std(a, correction=1, **k),
     lambda a, **k: np.std(a, correction=1, **k), True),
    ("ptp", yaad.ptp, np.ptp, False),
    ("nansum", yaad.nansum, np.nansum, True),
    ("nanmean", yaad.nanmean, np.nanmean, True),
    ("average", yaad.average, np.average, True),
]
IDS = [r[0] for r in REDUCTIONS]


def _dtypes(complex_ok):
    return [np.float64, F32] + ([C128] if complex_ok else [])


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("name,f,npf,complex_ok", REDUCTIONS, ids=IDS)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_forward_like_numpy(name, f, npf, complex_ok, axis, keepdims):
    for dtype in _dtypes(complex_ok):
        x = rand((2, 3, 4), dtype)
        expected = npf(x, axis=axis, keepdims=keepdims)
        got = f(yaad.tensor(x, requires_grad=True), axis=axis, keepdims=keepdims)
        a = got.data
        assert a.shape == np.shape(expected) and a.dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(a, expected, rtol=1e-6 if dtype == F32 else 1e-13)


@pytest.mark.parametrize("name,f,npf,complex_ok", REDUCTIONS, ids=IDS)
@pytest.mark.parametrize("axis", [None, -1, (0, 2)], ids=str)
def test_reduction_gradient(name, f, npf, complex_ok, axis):
    for dtype in [np.float64] + ([C128] if complex_ok else []):
        gradcheck(lambda a: f(a, axis=axis), [rand((2, 3, 4), dtype)])
        gradcheck(lambda a: f(a, axis=axis, keepdims=True), [rand((3, 1, 2), dtype, 3)])


@pytest.mark.parametrize("name,f,npf,complex_ok", REDUCTIONS, ids=IDS)
def test_reduction_second_derivative(name, f, npf, complex_ok):
    gradgradcheck(lambda a: f(a, axis=1) ** 2, [rand((2, 3))])
    if complex_ok:
        gradgradcheck(lambda a: f(a, axis=0), [rand((3, 2), C128)])


@pytest.mark.parametrize("name,f,npf,complex_ok", REDUCTIONS, ids=IDS)
def test_reduction_float32_gradient(name, f, npf, complex_ok):
    x = yaad.tensor(rand((3, 4), F32), requires_grad=True)
    f(x, axis=0).sum().backward()
    assert x.grad.dtype == F32 and x.grad.shape == (3, 4)
    ref = yaad.tensor(x.data.astype(np.float64), requires_grad=True)
    f(ref, axis=0).sum().backward()
    np.testing.assert_allclose(x.grad, ref.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,f,npf,complex_ok", REDUCTIONS, ids=IDS)
def test_reduction_forward_mode(name, f, npf, complex_ok):
    check_jvp(lambda a: f(a, axis=(0, 2)), [rand((2, 3, 2))])


def test_reductions_reject_out_and_bad_axes():
    x = yaad.tensor(rand((2, 3)), requires_grad=True)
    for f in (yaad.sum, yaad.mean, yaad.prod, yaad.max, yaad.var, yaad.std, yaad.cumsum,
              yaad.argmax, yaad.all):
        with pytest.raises(TypeError, match="out="):
            f(x, out=np.zeros(3))
        with pytest.raises(np.exceptions.AxisError):
            f(x, axis=2)
    with pytest.raises(ValueError, match="mean: (repeated axis|duplicate value)"):
        yaad.mean(x, axis=(0, 0))


def test_sum_and_mean_dtype_and_integers():
    x = np.arange(6).reshape(2, 3)
    assert_like(yaad.sum(yaad.tensor(x), axis=0), np.sum(x, axis=0))
    assert_like(yaad.mean(yaad.tensor(x)), np.mean(x))
    t = yaad.tensor(rand((2, 3), F32), requires_grad=True)
    s = yaad.sum(t, dtype=np.float64)
    assert s.dtype == np.float64
    s.backward()
    assert t.grad.dtype == F32
    np.testing.assert_array_equal(t.grad, np.ones((2, 3)))


def test_mean_of_python_scalar_weighted_sum():
    x = yaad.tensor(rand((4,)), requires_grad=True)
    yaad.mean(x).backward()
    np.testing.assert_allclose(x.grad, np.full(4, 0.25))


# ---- prod and cumprod with zeros ---------------------------------------------------------

@pytest.mark.parametrize("zeros", [[1], [1, 3], [0, 1, 2, 3]], ids=["one", "two", "all"])
@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["real", "complex"])
def test_prod_with_zeros(zeros, dtype):
    x = rand((4,), dtype)
    x[zeros] = 0
    t = yaad.tensor(x, requires_grad=True)
    yaad.prod(t).real.backward()
    expected = np.array([np.prod(np.delete(x, i)) for i in range(4)]).conj()
    np.testing.assert_allclose(t.grad, expected)
    assert np.all(np.isfinite(t.grad))
    gradcheck(lambda a: yaad.prod(a.reshape(2, 2), axis=0), [x])
    gradgradcheck(yaad.prod, [x])


def test_prod_with_zeros_over_several_axes():
    x = rand((2, 3, 2))
    x[0, 1, 0] = 0
    x[1, :, 1] = 0
    for axis in [None, (0, 2), 1]:
        gradcheck(partial(yaad.prod, axis=axis, keepdims=True), [x])
        gradgradcheck(partial(yaad.prod, axis=axis), [x])
        check_jvp(partial(yaad.prod, axis=axis), [x])


def test_prod_of_empty_slice():
    t = yaad.tensor(np.zeros((0, 3)), requires_grad=True)
    y = yaad.prod(t, axis=0)
    assert_like(y, np.ones(3))
    y.sum().backward()
    assert t.grad.shape == (0, 3)


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["real", "complex"])
def test_cumsum_cumprod(axis, dtype):
    x = rand((3, 4), dtype)
    for f, npf in ((yaad.cumsum, np.cumsum), (yaad.cumprod, np.cumprod)):
        np.testing.assert_allclose(f(yaad.tensor(x), axis=axis).data, npf(x, axis=axis))
        gradcheck(partial(f, axis=axis), [x])
        gradgradcheck(partial(f, axis=axis), [x])
        check_jvp(partial(f, axis=axis), [x])
    x[1, 1] = x[2, 0] = x[2, 2] = 0
    gradcheck(lambda a: yaad.cumprod(a, axis=axis), [x])
    gradgradcheck(lambda a: yaad.cumprod(a, axis=axis), [x])
    check_jvp(lambda a: yaad.cumprod(a, axis=axis), [x])


def test_cumsum_dtype_and_float32():
    x = yaad.tensor(rand((3,), F32), requires_grad=True)
    y = yaad.cumsum(x)
    assert y.dtype == F32
    (y * np.array([1.0, 2.0, 3.0], F32)).sum().backward()
    assert x.grad.dtype == F32
    np.testing.assert_allclose(x.grad, [6.0, 5.0, 3.0])
    assert yaad.cumsum(yaad.tensor(np.arange(3)), dtype=np.float64).dtype == np.float64


# ---- max and min: ties, NaN, complex -----------------------------------------------------

def test_max_splits_the_gradient_among_ties():
    x = yaad.tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]], requires_grad=True)
    yaad.max(x, axis=1).sum().backward()
    np.testing.assert_allclose(x.grad, [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3, 0]])
    x.grad = None
    yaad.min(x).backward()
    np.testing.assert_array_equal(x.grad, [[0, 0, 0, 0], [0, 0, 0, 1]])
    x.grad = None
    x.max().backward()
    np.testing.assert_allclose(x.grad, [[0, 0, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0]])


def test_max_with_nan_gives_the_gradient_to_the_nans():
    x = yaad.tensor([1.0, np.nan, 3.0, np.nan], requires_grad=True)
    y = yaad.max(x)
    assert np.isnan(y.item())
    y.backward()
    np.testing.assert_array_equal(x.grad, [0, 0.5, 0, 0.5])


def test_max_gradient_of_complex_raises():
    z = yaad.tensor(rand((3,), C128), requires_grad=True)
    y = yaad.max(z)
    assert_like(y, np.max(z.data))
    with pytest.raises(TypeError, match="max: the gradient is not defined for complex"):
        yaad.abs(y).backward()


def test_max_ties_match_torch_amax():
    import torch
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    w = rand((2,))
    t = yaad.tensor(x, requires_grad=True)
    (yaad.amax(t, axis=1) * w).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    (torch.amax(tt, dim=1) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(t.grad, tt.grad.numpy())


# ---- var and std ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, F32, C128], ids=["f64", "f32", "c128"])
def test_std_of_a_constant_is_zero_with_a_zero_gradient(dtype):
    x = yaad.tensor(np.full((2, 3), 1.5, dtype=dtype), requires_grad=True)
    s = yaad.std(x, axis=1)
    np.testing.assert_array_equal(s.data, [0, 0])
    s.sum().backward()
    np.testing.assert_array_equal(x.grad, np.zeros((2, 3)))
    assert x.grad.dtype == dtype
    v = yaad.var(x)
    v.backward()
    np.testing.assert_array_equal(x.grad, np.zeros((2, 3)))


def test_std_with_one_constant_slice_keeps_the_other_gradient():
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    t = yaad.tensor(x, requires_grad=True)
    yaad.std(t, axis=1).sum().backward()
    d = x[1] - x[1].mean()
    np.testing.assert_allclose(t.grad, [[0, 0, 0], d / (3 * x[1].std())])


def test_var_with_ddof_at_least_n_gives_nan_like_numpy():
    x = yaad.tensor(rand((2,)), requires_grad=True)
    with pytest.warns(RuntimeWarning):
        v = yaad.var(x, ddof=2)
    assert np.isinf(v.item()) or np.isnan(v.item())
    v.backward()
    assert np.all(np.isnan(x.grad))


def test_var_std_match_torch():
    import torch
    x = rand((3, 4), C128)
    for f, tf in ((yaad.var, torch.var), (yaad.std, torch.std)):
        t = yaad.tensor(x, requires_grad=True)
        f(t, axis=1, ddof=1).sum().backward()
        tt = torch.tensor(x, requires_grad=True)
        tf(tt, dim=1, correction=1).sum().backward()
        np.testing.assert_allclose(t.grad, tt.grad.numpy(), rtol=1e-10)


def test_prod_cumprod_with_zeros_match_torch():
    import torch
    x = rand((3, 4))
    x[0, 1] = x[1, 1] = x[1, 3] = 0
    w = rand((3, 4), seed=2)
    t = yaad.tensor(x, requires_grad=True)
    (yaad.cumprod(t, axis=1) * w).sum().backward()
    yaad.prod(t, axis=1).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    (torch.cumprod(tt, 1) * torch.tensor(w)).sum().backward()
    torch.prod(tt, 1).sum().backward()
    np.testing.assert_allclose(t.grad, tt.grad.numpy())


# ---- nan-aware and weighted -------------------------------------------------------------

def test_nansum_nanmean_ignore_nans():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])
    t = yaad.tensor(x, requires_grad=True)
    assert_like(yaad.nansum(t, axis=1), np.nansum(x, axis=1))
    assert_like(yaad.nanmean(t, axis=1), np.nanmean(x, axis=1))
    (yaad.nansum(t) + yaad.nanmean(t, axis=1).sum()).backward()
    np.testing.assert_allclose(t.grad, [[1.5, 0, 1.5], [0, 0, 2]])


def test_nanmean_of_all_nan_slice_warns():
    t = yaad.tensor([np.nan, np.nan])
    with pytest.warns(RuntimeWarning, match="empty slice"):
        assert np.isnan(yaad.nanmean(t).item())


def test_average_with_weights():
    x, w = rand((3, 4)), rand((4,), seed=1) ** 2 + 0.1
    assert_like(yaad.average(yaad.tensor(x), axis=1, weights=w), np.average(x, axis=1, weights=w))
    avg, scale = yaad.average(yaad.tensor(x), axis=1, weights=w, returned=True)
    expected = np.average(x, axis=1, weights=w, returned=True)
    np.testing.assert_allclose(avg.data, expected[0])
    np.testing.assert_allclose(scale.data, expected[1])
    _, scale0 = yaad.average(yaad.tensor(x), axis=0, returned=True)
    np.testing.assert_array_equal(scale0.data, np.average(x, axis=0, returned=True)[1])
    gradcheck(lambda a, b: yaad.average(a, axis=1, weights=b), [x, w])
    gradcheck(lambda a, b: yaad.average(a, weights=b), [x, rand((3, 4), seed=2) ** 2])
    with pytest.raises(ZeroDivisionError):
        yaad.average(yaad.tensor(x), axis=1, weights=np.zeros(4))
    with pytest.raises(TypeError, match="axis"):
        yaad.average(yaad.tensor(x), weights=w)


# ---- sorting and the functions without gradient ---------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_gradient_follows_the_permutation(axis):
    x = rand((3, 4))
    t = yaad.tensor(x, requires_grad=True)
    s = yaad.sort(t, axis=axis)
    assert_like(s, np.sort(x, axis=axis))
    w = rand(s.shape, seed=3)
    (s * w).sum().backward()
    perm = np.argsort(x, axis=axis)
    expected = np.zeros(x.size)
    if axis is None:
        expected[perm] = w
    else:
        expected = np.zeros_like(x)
        np.put_along_axis(expected, perm, w, axis=axis)
    np.testing.assert_allclose(t.grad, expected.reshape(x.shape))
    gradcheck(lambda a: yaad.sort(a, axis=axis), [x])
    gradgradcheck(lambda a: yaad.sort(a, axis=axis) ** 2, [x])
    assert_like(yaad.sort(x, axis=axis), np.sort(x, axis=axis))


def test_sort_method_and_complex():
    z = rand((4,), C128)
    t = yaad.tensor(z, requires_grad=True)
    assert_like(t.sort(), np.sort(z))
    gradcheck(yaad.sort, [z])


@pytest.mark.parametrize("name,kw", [("argmax", {}), ("argmin", {"axis": 0}),
                                     ("argsort", {"axis": -1}), ("all", {"axis": 1}),
                                     ("any", {"keepdims": True}), ("count_nonzero", {})])
def test_functions_without_gradient(name, kw):
    x = rand((3, 4))
    x[0, 0] = 0
    t = yaad.tensor(x, requires_grad=True)
    out = getattr(yaad, name)(t, **kw)
    assert isinstance(out, yaad.Tensor) and not out.requires_grad
    assert_like(out, getattr(np, name)(x, **kw))
    assert_like(getattr(t, name)(**kw), getattr(np, name)(x, **kw))


def test_nonzero_argwhere_searchsorted():
    x = np.array([[0.0, 1.5], [2.0, 0.0]])
    t = yaad.tensor(x, requires_grad=True)
    nz = yaad.nonzero(t)
    assert all(isinstance(i, yaad.Tensor) and not i.requires_grad for i in nz)
    for got, expected in zip(nz, np.nonzero(x)):
        assert_like(got, expected)
    assert_like(t[yaad.nonzero(t)], x[np.nonzero(x)])
    assert_like(yaad.argwhere(t), np.argwhere(x))
    s = yaad.tensor([1.0, 2.0, 3.0])
    assert_like(yaad.searchsorted(s, yaad.tensor([2.5, 0.0])), np.searchsorted([1, 2, 3], [2.5, 0]))
    assert isinstance(yaad.nonzero(x), tuple)


def test_tensor_reduction_methods():
    x = rand((3, 4))
    t = yaad.tensor(x, requires_grad=True)
    assert_like(t.sum(0), x.sum(0))
    assert_like(t.mean(axis=1, keepdims=True), x.mean(axis=1, keepdims=True))
    assert_like(t.max(), x.max())
    assert_like(t.min(1), x.min(1))
    assert_like(t.prod(), x.prod())
    assert_like(t.cumsum(1), x.cumsum(1))
    np.testing.assert_allclose(t.std(ddof=1).data, x.std(ddof=1))
    np.testing.assert_allclose(t.var(0).data, x.var(0))
    assert_like(t.ptp(), np.ptp(x))
