"""Derivatives of derivatives: backward(create_graph=True) and autograd.grad, any order."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from yaad.testing import gradgradcheck

rng = np.random.default_rng(3)


def test_backward_create_graph_then_grad_of_grad():
    x = yaad.tensor([0.5, 1.5], requires_grad=True)
    y = yaad.sum(x ** 3)
    y.backward(create_graph=True)
    g = x.grad
    assert isinstance(g, yaad.Tensor) and g.requires_grad
    np.testing.assert_allclose(g.data, 3 * x.data ** 2)
    (h,) = yaad.autograd.grad(yaad.sum(g), x)
    np.testing.assert_allclose(h, 6 * x.data)


def test_fourth_derivative_of_a_polynomial():
    x = yaad.tensor(1.3, requires_grad=True)
    d = x ** 5
    expected = [5 * 1.3 ** 4, 20 * 1.3 ** 3, 60 * 1.3 ** 2, 120 * 1.3]
    for order, value in enumerate(expected, start=1):
        (d,) = yaad.autograd.grad(d, x, create_graph=True)
        assert d.item() == pytest.approx(value), f"order {order}"
    (d,) = yaad.autograd.grad(d, x)  # the fifth, without recording
    assert d == pytest.approx(120.0)


def test_first_order_gradients_are_plain_arrays():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    yaad.sum(yaad.exp(x) * x).backward()
    assert type(x.grad) is np.ndarray
    (g,) = yaad.autograd.grad(yaad.sum(yaad.exp(x)), x)
    assert type(g) is np.ndarray


def test_create_graph_through_broadcasting_and_dtype_projection():
    # the engine's reduction over broadcast axes and its real projection are recorded too
    w = yaad.tensor(rng.standard_normal(3), requires_grad=True)
    x = yaad.tensor(rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3)))
    loss = yaad.sum(yaad.abs(x * w) ** 2)
    (g,) = yaad.autograd.grad(loss, w, create_graph=True)
    assert g.dtype == np.float64 and g.shape == (3,)
    (h,) = yaad.autograd.grad(yaad.sum(g * g), w)
    a = np.sum(np.abs(x.data) ** 2, axis=0)  # loss = sum_j a_j w_j^2, g = 2 a w
    np.testing.assert_allclose(g.data, 2 * a * w.data)
    np.testing.assert_allclose(h, 8 * a * a * w.data)


def test_complex_second_derivative():
    # L = |z|^4, grad = 4|z|^2 z; the gradient of Re(conj(v) grad) matches finite differences
    assert gradgradcheck(lambda z: yaad.abs(z) ** 4, [np.array([1.0 + 2.0j, -0.5j])])
    z = yaad.tensor(np.array([1.0 + 2.0j]), requires_grad=True)
    (g,) = yaad.autograd.grad(yaad.sum(yaad.abs(z) ** 4), z, create_graph=True)
    np.testing.assert_allclose(g.data, 4 * 5 * z.data)


def test_float32_stays_float32_at_second_order():
    x = yaad.tensor(np.array([0.5, 1.0], dtype=np.float32), requires_grad=True)
    (g,) = yaad.autograd.grad(yaad.sum(yaad.tanh(x) * x), x, create_graph=True)
    (h,) = yaad.autograd.grad(yaad.sum(g), x)
    assert g.dtype == np.float32 and h.dtype == np.float32


def test_grad_of_intermediate_with_create_graph():
    x = yaad.tensor([0.3, 0.8], requires_grad=True)
    h = yaad.sin(x)
    y = yaad.sum(h * h * x)
    (gh,) = yaad.autograd.grad(y, h, create_graph=True)  # 2 h x, a function of x
    (gx,) = yaad.autograd.grad(yaad.sum(gh), x)
    s, c = np.sin(x.data), np.cos(x.data)
    np.testing.assert_allclose(gx, 2 * c * x.data + 2 * s)


def test_gradient_penalty_pattern():
    # a loss that contains a gradient (WGAN-GP style): d/dw |d/dx f(x, w)|^2
    w = yaad.tensor([0.7, -0.2], requires_grad=True)
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    f = yaad.sum(yaad.tanh(x * w))
    (gx,) = yaad.autograd.grad(f, x, create_graph=True)
    penalty = yaad.sum(gx * gx)
    penalty.backward()
    t = np.tanh(x.data * w.data)
    # gx = w (1 - t^2); d/dw gx^2 = 2 gx (1 - t^2 + w * (-2 t (1 - t^2) x))
    gxd = w.data * (1 - t * t)
    expected = 2 * gxd * ((1 - t * t) - 2 * w.data * t * (1 - t * t) * x.data)
    np.testing.assert_allclose(w.grad, expected)


@pytest.mark.parametrize("f", [
    lambda a, b: yaad.sum(yaad.tanh(a @ b) ** 2, axis=0),
    lambda a, b: yaad.exp(a[:, :2]) * yaad.log1p(b * b)[:2, :],
    lambda a, b: yaad.trace(a @ b @ (a @ b)) * yaad.mean(b),
], ids=["mlp", "slices", "trace"])
def test_composite_second_derivatives(f):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    assert gradgradcheck(f, [a, b], check_forward_ad=True)


def test_retain_graph_default_follows_create_graph():
    x = yaad.tensor([1.0], requires_grad=True)
    y = yaad.sum(yaad.exp(x))
    yaad.autograd.grad(y, x, create_graph=True)
    (g,) = yaad.autograd.grad(y, x)  # the graph was retained
    np.testing.assert_allclose(g, np.exp(1.0))
    with pytest.raises(RuntimeError, match="retain_graph"):
        yaad.autograd.grad(y, x)
