"""softmax, log_softmax and logsumexp against scipy.special (values, shapes, dtypes) and
finite differences; stability for large inputs; -inf entries and slices; weights b."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import yaad
from tests.support.arrays import assert_like_numpy, check_jvp, random_array
from yaad.testing import gradcheck, gradgradcheck

FUNCS = ["softmax", "log_softmax", "logsumexp"]
AXES = [None, 0, 1, -1, (0, 2)]
DTYPES = [np.float64, np.float32, np.complex128]


def _x(dtype, shape=(2, 3, 4), seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype, -2.0, 2.0)


def _f(name, **kw):
    fn = getattr(yaad, name)
    return lambda x: fn(x, **kw)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", FUNCS)
def test_values_like_scipy(name, axis, dtype):
    x = _x(dtype)
    expected = getattr(sp, name)(x, axis=axis)
    out = getattr(yaad, name)(yaad.tensor(x, requires_grad=True), axis=axis)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_like_numpy(out, expected, exact=False, rtol=tol, atol=tol)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_logsumexp_keepdims(axis, keepdims):
    x = _x(np.float64)
    out = yaad.logsumexp(yaad.tensor(x), axis=axis, keepdims=keepdims)
    assert_like_numpy(out, sp.logsumexp(x, axis=axis, keepdims=keepdims), exact=False)
    gradcheck(lambda a: yaad.logsumexp(a, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", FUNCS)
def test_gradients(name, axis, dtype):
    x = _x(dtype, (2, 3, 2))
    gradcheck(_f(name, axis=axis), x)
    gradgradcheck(_f(name, axis=axis), x)
    check_jvp(_f(name, axis=axis), [x])


@pytest.mark.parametrize("name", FUNCS)
def test_float32_stays_float32(name):
    x = _x(np.float32)
    t = yaad.tensor(x, requires_grad=True)
    out = getattr(yaad, name)(t, axis=1)
    assert out.dtype == np.float32
    yaad.sum(out * np.arange(out.size, dtype=np.float32).reshape(out.shape)).backward()
    assert t.grad.dtype == np.float32
    t64 = yaad.tensor(x.astype(np.float64), requires_grad=True)
    out64 = getattr(yaad, name)(t64, axis=1)
    yaad.sum(out64 * np.arange(out64.size).reshape(out64.shape)).backward()
    np.testing.assert_allclose(t.grad, t64.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", FUNCS)
def test_large_inputs_do_not_overflow(name):
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]])
    t = yaad.tensor(x, requires_grad=True)
    with np.errstate(all="raise"):
        out = getattr(yaad, name)(t, axis=1)
        yaad.sum(out * np.arange(out.size).reshape(out.shape)).backward()
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(t.grad))
    np.testing.assert_allclose(out.data, getattr(sp, name)(x, axis=1), rtol=1e-12)
    gradcheck(_f(name, axis=1), x)


def test_logsumexp_with_minus_inf_entries():
    x = np.array([[0.0, -np.inf, np.log(3.0)], [-np.inf, -np.inf, -np.inf]])
    t = yaad.tensor(x, requires_grad=True)
    out = yaad.logsumexp(t, axis=1)
    np.testing.assert_allclose(out.data, [np.log(4.0), -np.inf])
    out.backward(np.array([1.0, 1.0]))
    # Softmax weights where finite; 0 at -inf entries; 0 for a slice of only -inf.
    np.testing.assert_allclose(t.grad, [[0.25, 0.0, 0.75], [0.0, 0.0, 0.0]])
    # Second derivatives stay finite too.
    t = yaad.tensor(x, requires_grad=True)
    (g,) = yaad.autograd.grad(yaad.sum(yaad.logsumexp(t, axis=1)), [t], create_graph=True)
    (h,) = yaad.autograd.grad(yaad.sum(g * g), [t])
    assert np.all(np.isfinite(h))


def test_softmax_and_log_softmax_with_minus_inf_entries():
    x = np.array([0.0, -np.inf, np.log(3.0)])
    t = yaad.tensor(x, requires_grad=True)
    s = yaad.softmax(t)
    np.testing.assert_allclose(s.data, [0.25, 0.0, 0.75])
    yaad.sum(s * np.array([1.0, 2.0, 3.0])).backward()
    np.testing.assert_allclose(t.grad, [0.25 * (1 - 2.5), 0.0, 0.75 * (3 - 2.5)])
    t = yaad.tensor(x, requires_grad=True)
    ls = yaad.log_softmax(t)
    np.testing.assert_allclose(ls.data, [np.log(0.25), -np.inf, np.log(0.75)])
    ls.backward(np.array([1.0, 0.0, 1.0]))
    np.testing.assert_allclose(t.grad, [1 - 0.25 * 2, 0.0, 1 - 0.75 * 2])


def test_logsumexp_of_empty_slices_is_minus_inf():
    x = np.zeros((0, 3))
    assert_like_numpy(yaad.logsumexp(x, axis=0), sp.logsumexp(x, axis=0))


@pytest.mark.parametrize("return_sign", [False, True])
@pytest.mark.parametrize("axis", [None, 1], ids=str)
def test_logsumexp_weights(axis, return_sign):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((3, 4))  # mixed signs: some sums are negative
    out = yaad.logsumexp(yaad.tensor(a), axis=axis, b=yaad.tensor(b), return_sign=return_sign)
    with np.errstate(invalid="ignore"):
        expected = sp.logsumexp(a, axis=axis, b=b, return_sign=return_sign)
    if return_sign:
        for o, e in zip(out, expected):
            assert_like_numpy(o, e, exact=False)
        assert not out[1].requires_grad
        gradcheck(lambda x, w: yaad.logsumexp(x, axis=axis, b=w, return_sign=True)[0], (a, b))
        gradgradcheck(lambda x, w: yaad.logsumexp(x, axis=axis, b=w, return_sign=True)[0],
                      (a, b))
    else:
        assert_like_numpy(out, expected, exact=False)


def test_logsumexp_weights_broadcast_and_positive():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4))
    b = rng.uniform(0.5, 2.0, (4,))
    out = yaad.logsumexp(a, axis=1, b=b)
    assert_like_numpy(out, sp.logsumexp(a, axis=1, b=b), exact=False)
    gradcheck(lambda x, w: yaad.logsumexp(x, axis=1, b=w), (a, b))
    gradgradcheck(lambda x, w: yaad.logsumexp(x, axis=1, b=w), (a, b))
    check_jvp(lambda x, w: yaad.logsumexp(x, axis=1, b=w), [a, b])


def test_logsumexp_complex_return_sign():
    z = _x(np.complex128, (2, 3))
    lse, sgn = yaad.logsumexp(yaad.tensor(z), axis=1, return_sign=True)
    e_lse, e_sgn = sp.logsumexp(z, axis=1, return_sign=True)
    assert_like_numpy(lse, e_lse, exact=False)
    assert_like_numpy(sgn, e_sgn, exact=False)
    gradcheck(lambda x: yaad.logsumexp(x, axis=1, return_sign=True), z)


def test_gradient_values():
    x = np.array([1.0, 2.0, 3.0])
    s = np.exp(x) / np.exp(x).sum()
    t = yaad.tensor(x, requires_grad=True)
    yaad.logsumexp(t).backward()
    np.testing.assert_allclose(t.grad, s)
    t = yaad.tensor(x, requires_grad=True)
    yaad.log_softmax(t)[0].backward()
    np.testing.assert_allclose(t.grad, [1 - s[0], -s[1], -s[2]])
    t = yaad.tensor(x, requires_grad=True)
    yaad.softmax(t)[2].backward()
    np.testing.assert_allclose(t.grad, s[2] * (np.eye(3)[2] - s))


def test_tensor_methods():
    x = _x(np.float64)
    t = yaad.tensor(x)
    np.testing.assert_allclose(t.logsumexp(axis=1).data, sp.logsumexp(x, axis=1))
    np.testing.assert_allclose(t.softmax(axis=2).data, sp.softmax(x, axis=2))
    np.testing.assert_allclose(t.log_softmax(axis=0).data, sp.log_softmax(x, axis=0))


# ---- every option of every loss, against PyTorch --------------------------------------------

W4 = np.array([1.0, 2.0, 0.5, 3.0])
LOSS_CONFIGS = [
    ("mse_loss", "regression", {}), ("mse_loss", "regression", {"reduction": "sum"}),
    ("mse_loss", "regression", {"reduction": "none"}),
    ("l1_loss", "regression", {}), ("l1_loss", "regression", {"reduction": "sum"}),
    ("l1_loss", "regression", {"reduction": "none"}),
    ("nll_loss", "classes", {}), ("nll_loss", "classes", {"weight": W4}),
    ("nll_loss", "classes", {"ignore_index": 1}), ("nll_loss", "classes", {"reduction": "sum"}),
    ("nll_loss", "classes", {"reduction": "none"}),
    ("nll_loss", "classes_nd", {"weight": W4, "ignore_index": 2}),
    ("cross_entropy", "classes", {}), ("cross_entropy", "classes", {"weight": W4}),
    ("cross_entropy", "classes", {"ignore_index": 3}),
    ("cross_entropy", "classes", {"reduction": "sum"}),
    ("cross_entropy", "classes", {"reduction": "none"}),
    ("cross_entropy", "classes", {"label_smoothing": 0.2}),
    ("cross_entropy", "classes_nd", {"label_smoothing": 0.3, "reduction": "none"}),
    ("cross_entropy", "classes", {"weight": W4, "ignore_index": 0, "label_smoothing": 0.1}),
    ("cross_entropy", "probs", {}), ("cross_entropy", "probs", {"label_smoothing": 0.25}),
    ("cross_entropy", "probs", {"weight": W4, "reduction": "sum"}),
    ("cross_entropy", "probs", {"weight": W4, "label_smoothing": 0.1}),
    ("binary_cross_entropy", "probabilities", {}),
    ("binary_cross_entropy", "probabilities", {"weight": np.array([0.5, 1.0, 2.0])}),
    ("binary_cross_entropy", "probabilities", {"reduction": "sum"}),
    ("binary_cross_entropy", "probabilities", {"reduction": "none"}),
    ("binary_cross_entropy_with_logits", "logits", {}),
    ("binary_cross_entropy_with_logits", "logits", {"weight": np.array([0.5, 1.0, 2.0])}),
    ("binary_cross_entropy_with_logits", "logits", {"pos_weight": np.array([3.0, 0.2, 1.0])}),
    ("binary_cross_entropy_with_logits", "logits", {"reduction": "sum"}),
    ("binary_cross_entropy_with_logits", "logits", {"reduction": "none"}),
]


def _loss_data(kind):
    r = np.random.default_rng(5)
    if kind == "regression":
        return r.standard_normal((5, 3)), r.standard_normal((5, 3))
    if kind == "classes":
        return r.standard_normal((6, 4)), np.array([0, 3, 1, 1, 2, 3])
    if kind == "classes_nd":
        return r.standard_normal((5, 4, 3)), r.integers(0, 4, (5, 3))
    if kind == "probs":
        p = r.uniform(0.1, 1.0, (6, 4))
        return r.standard_normal((6, 4)), p / p.sum(1, keepdims=True)
    if kind == "probabilities":
        return r.uniform(0.05, 0.95, (5, 3)), r.uniform(0, 1, (5, 3))
    return r.standard_normal((5, 3)) * 2, r.uniform(0, 1, (5, 3))  # logits


@pytest.mark.parametrize("name, kind, kw", LOSS_CONFIGS,
                         ids=[f"{n}-{k}-{'-'.join(kw) or 'default'}" for n, k, kw in
                              LOSS_CONFIGS])
def test_loss_option_matches_torch(name, kind, kw):
    import torch

    F = yaad.nn.functional
    x, t = _loss_data(kind)
    tx = torch.tensor(x, requires_grad=True)
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tout = getattr(torch.nn.functional, name)(tx, torch.tensor(t), **tkw)
    w = np.random.default_rng(6).standard_normal(tuple(tout.shape))
    (tout * torch.tensor(w)).sum().backward()
    yx = yaad.tensor(x, requires_grad=True)
    yout = getattr(F, name)(yx, t, **kw)
    yaad.sum(yout * w).backward()
    assert yout.shape == tuple(tout.shape)
    np.testing.assert_allclose(yout.data, tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(yx.grad, tx.grad.numpy(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("name", sorted({n for n, _, _ in LOSS_CONFIGS}))
def test_every_loss_option_has_a_torch_reference(name):
    import inspect

    params = inspect.signature(getattr(yaad.nn.functional, name)).parameters
    options = {k: p.default for k, p in params.items() if k not in ("input", "target")}
    alone = set()
    for n, _, kw in LOSS_CONFIGS:
        if n == name and len(kw) == 1:
            alone |= set(kw)
    assert alone >= set(options), f"{name}: options without a PyTorch reference of their own: " \
        f"{sorted(set(options) - alone)}"
