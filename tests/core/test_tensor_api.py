"""The Tensor API (issue 2): attributes, conversions, autograd mechanics with PyTorch's
meaning (accumulation, hooks, retain_grad, retain_graph, autograd.grad), grad mode per
thread, making tensors, and the engine on a deep graph and a long training loop."""

from __future__ import annotations

import gc
import sys
import threading
import traceback
import tracemalloc
import weakref

import numpy as np
import pytest

import yaad
from tests.support.shape_checks import assert_like, rand
from yaad import autograd

F32, C128 = np.float32, np.complex128


# ---- attributes and conversions ----------------------------------------------------------

def test_attributes():
    x = rand((2, 3, 4))
    t = yaad.tensor(x, requires_grad=True)
    assert isinstance(t.data, np.ndarray) and t.data is not x  # yaad.tensor copies
    np.testing.assert_array_equal(t.data, x)
    assert t.grad is None and t.requires_grad and t.is_leaf and t.grad_fn is None
    assert (t.shape, t.ndim, t.size, t.dtype) == ((2, 3, 4), 3, 24, np.float64)
    assert len(t) == 2
    assert_like(t.T, x.T)
    assert_like(t.mT, np.swapaxes(x, -1, -2))
    y = t * 2
    assert not y.is_leaf and y.grad_fn.name == "multiply" and y.requires_grad


def test_real_imag_are_differentiable():
    z = yaad.tensor([3 + 4j, 1 - 2j], requires_grad=True)
    assert_like(z.real, np.array([3.0, 1.0]))
    assert_like(z.imag, np.array([4.0, -2.0]))
    (z.real * 2 + z.imag * 3).sum().backward()
    np.testing.assert_array_equal(z.grad, [2 + 3j, 2 + 3j])
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    (x.real + x.imag).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])
    assert x.grad.dtype == np.float64


def test_numpy_item_detach_and_python_conversions():
    x = rand((3,))
    t = yaad.tensor(x, requires_grad=True)
    assert t.numpy() is t.data
    d = t.detach()
    assert d.data is t.data and not d.requires_grad and d.is_leaf
    s = t.sum()
    assert s.item() == pytest.approx(x.sum()) and isinstance(s.item(), float)
    assert float(s) == pytest.approx(x.sum())
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        t.item()
    assert int(yaad.tensor(7)) == 7 and [10, 20, 30][yaad.tensor(1)] == 20
    assert bool(yaad.tensor(1.0)) and not bool(yaad.tensor(0.0))
    assert complex(yaad.tensor(1 + 2j)) == 1 + 2j
    with pytest.raises(TypeError, match="len"):
        len(yaad.tensor(1.0))
    with pytest.raises(TypeError, match="iteration"):
        iter(yaad.tensor(1.0)).__next__()
    assert [r.item() for r in yaad.tensor([1.0, 2.0])] == [1.0, 2.0]
    assert t.tolist() == x.tolist()


def test_repr():
    assert repr(yaad.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(yaad.tensor([1.0, 2.0], requires_grad=True)) == \
        "tensor([1., 2.], requires_grad=True)"
    assert repr(yaad.tensor([1.0], dtype=F32)) == "tensor([1.], dtype=float32)"
    t = yaad.tensor([1.0], requires_grad=True) * 2
    assert repr(t) == "tensor([2.], grad_fn=<multiply>)"
    assert f"{yaad.tensor(2.5):.2f}" == "2.50"


def test_integer_and_boolean_tensors_cannot_require_grad():
    for data in ([1, 2], [True, False]):
        with pytest.raises(TypeError, match="floating point and complex"):
            yaad.tensor(data, requires_grad=True)
        with pytest.raises(TypeError, match="floating point and complex"):
            yaad.tensor(data).requires_grad_()
    t = yaad.tensor([1, 2], dtype=np.float32, requires_grad=True)
    assert t.dtype == F32 and t.requires_grad


def test_requires_grad_flag():
    t = yaad.tensor([1.0, 2.0])
    assert not t.requires_grad and (t * 2).grad_fn is None
    assert t.requires_grad_() is t and t.requires_grad
    y = t * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    t.requires_grad_(False)
    assert not (t * 2).requires_grad


def test_grad_setter_checks_the_shape():
    t = yaad.tensor([1.0, 2.0], requires_grad=True)
    t.grad = np.ones(2)
    with pytest.raises(ValueError, match="shape"):
        t.grad = np.ones(3)
    t.grad = None
    assert t.grad is None


def test_numpy_named_methods():
    x = rand((2, 3, 4))
    t = yaad.tensor(x, requires_grad=True)
    assert_like(t.reshape(4, 6), x.reshape(4, 6))
    assert_like(t.reshape((4, 6)), x.reshape((4, 6)))
    assert_like(t.reshape(shape=(6, 4)), x.reshape((6, 4)))
    assert_like(t.transpose(), x.transpose())
    assert_like(t.transpose(1, 0, 2), x.transpose(1, 0, 2))
    assert_like(t.transpose((2, 0, 1)), x.transpose((2, 0, 1)))
    assert_like(t.swapaxes(0, 2), x.swapaxes(0, 2))
    assert_like(t.flatten(), x.flatten())
    assert_like(t.ravel(), x.ravel())
    assert_like(t.squeeze(), x.squeeze())
    assert_like(t.astype(F32), x.astype(F32))
    assert_like(t.clip(-0.5, 0.5), x.clip(-0.5, 0.5))
    assert_like(t.round(1), x.round(1))
    assert_like(t.diagonal(0, 1, 2), x.diagonal(0, 1, 2))
    assert_like(t.trace(), x.trace())
    assert_like(t.repeat(2, axis=1), x.repeat(2, axis=1))
    assert_like(t.take([0, 2], axis=2), x.take([0, 2], axis=2))
    assert_like(t.conj(), x.conj())
    z = rand((2,), C128)
    assert_like(yaad.tensor(z).conj(), z.conj())
    assert t.dim() == 3 and t.numel() == 24
    c = t.copy()
    assert c.data is not t.data and c.requires_grad
    assert t.clone().grad_fn.name == "copy"


def test_operators_keep_float32_and_python_scalars_weak():
    x = yaad.tensor(rand((3,), F32), requires_grad=True)
    for y in (x * 2.0, 2.0 * x, x / 3, 1 - x, x ** 2, -x, abs(x), x @ x, x // 1.0, x % 0.7):
        assert y.dtype == F32
    (x * 2.5 + 1).sum().backward()
    assert x.grad.dtype == F32
    np.testing.assert_array_equal(x.grad, np.full(3, 2.5, dtype=F32))


def test_comparisons_carry_no_gradient():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    for c in (x > 0, x >= 0, x < 0, x <= 0, x == x, x != 0):
        assert c.dtype == bool and not c.requires_grad


# ---- backward, accumulation, hooks --------------------------------------------------------

def test_grad_accumulates_across_backward_calls():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad, [2 + 3, 4 + 3])


def test_backward_of_non_scalar_needs_a_gradient():
    x = yaad.tensor(rand((2, 3)), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"shape \(2, 3\)"):
        y.backward()
    y.backward(np.ones((2, 3)) * 0.5)
    np.testing.assert_array_equal(x.grad, np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).backward(np.ones(3))


def test_backward_of_complex_output_needs_a_gradient():
    z = yaad.tensor(1 + 1j, requires_grad=True)
    with pytest.raises(RuntimeError, match="complex"):
        (z * z).backward()


def test_second_backward_through_a_freed_graph_raises():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    y = (yaad.sin(x) * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    y = (yaad.sin(x) * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.copy()
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * first)


def test_backward_without_anything_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        yaad.tensor([1.0]).sum().backward()


def test_retain_grad_on_a_non_leaf():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    other = x * 2
    (h * h + other).sum().backward()
    np.testing.assert_array_equal(h.grad, 2 * h.data)
    with pytest.warns(UserWarning, match="not a leaf"):  # as PyTorch
        assert other.grad is None
    np.testing.assert_array_equal(x.grad, 3 * 2 * h.data + 2)


def test_hooks_see_and_replace_gradients():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    seen = []
    handle = h.register_hook(lambda g: seen.append(g.copy()))
    h.register_hook(lambda g: g * 10)  # replaces h's gradient
    x.register_hook(lambda g: g + 1)  # replaces the leaf's gradient
    h.sum().backward()
    np.testing.assert_array_equal(seen[0], [1, 1])
    np.testing.assert_array_equal(x.grad, [31, 31])
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad, [4, 4])
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="does not require grad"):
        yaad.tensor([1.0]).register_hook(print)


def test_backward_inputs_limits_accumulation():
    x = yaad.tensor([1.0], requires_grad=True)
    w = yaad.tensor([2.0], requires_grad=True)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad == 1.0


def test_autograd_grad():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    u = yaad.tensor([5.0], requires_grad=True)
    y = x ** 3
    (g,) = autograd.grad(y, x, grad_outputs=np.array([1.0, 0.5]), retain_graph=True)
    np.testing.assert_array_equal(g, [3.0, 0.5 * 12.0])
    assert x.grad is None  # grad does not touch .grad
    with pytest.raises(RuntimeError, match="allow_unused"):
        autograd.grad(y.sum(), [x, u], retain_graph=True)
    gx, gu = autograd.grad(y.sum(), [x, u], allow_unused=True, create_graph=True)
    assert gu is None and isinstance(gx, yaad.Tensor) and gx.requires_grad
    (gg,) = autograd.grad(gx.sum(), x)
    np.testing.assert_array_equal(gg, 6 * x.data)
    h = x * 2
    (gh,) = autograd.grad((h * h).sum(), h)  # with respect to an intermediate tensor
    np.testing.assert_array_equal(gh, 2 * h.data)
    a, b = autograd.grad([(x * 2).sum(), (x * 3).sum()], [x, x])
    np.testing.assert_array_equal(a, [5.0, 5.0])
    np.testing.assert_array_equal(b, a)


def test_autograd_grad_after_freeing_raises():
    x = yaad.tensor([1.0], requires_grad=True)
    y = yaad.exp(x).sum()
    autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        autograd.grad(y, x)


# ---- grad mode ----------------------------------------------------------------------------

def test_grad_mode_context_managers_and_decorators():
    x = yaad.tensor([1.0], requires_grad=True)
    assert yaad.is_grad_enabled()
    with yaad.no_grad():
        assert not yaad.is_grad_enabled()
        assert not (x * 2).requires_grad
        with yaad.enable_grad():
            assert (x * 2).requires_grad
        assert not yaad.is_grad_enabled()
    assert yaad.is_grad_enabled()
    with yaad.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert yaad.is_grad_enabled()

    @yaad.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and yaad.is_grad_enabled()
    yaad.set_grad_enabled(False)
    try:
        assert not yaad.is_grad_enabled()
    finally:
        yaad.set_grad_enabled(True)
    assert yaad.is_grad_enabled()


def test_grad_mode_is_per_thread():
    x = yaad.tensor([1.0], requires_grad=True)
    inside, go_on = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with yaad.no_grad():
            inside.set()
            go_on.wait(5)
            seen["worker"] = (x * 2).requires_grad

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    seen["main"] = (x * 2).requires_grad  # the worker is inside no_grad right now
    go_on.set()
    thread.join()
    assert seen == {"main": True, "worker": False}


# ---- making tensors ---------------------------------------------------------------------

def test_tensor_constructor():
    data = [[1.0, 2.0], [3.0, 4.0]]
    t = yaad.tensor(data, dtype=F32)
    assert t.dtype == F32 and t.shape == (2, 2)
    assert yaad.tensor(1).dtype == np.int64 and yaad.tensor(1.5).shape == ()
    src = yaad.tensor([1.0], requires_grad=True) * 2
    copy = yaad.tensor(src)
    assert copy.is_leaf and not copy.requires_grad and copy.data is not src.data
    arr = np.arange(3.0)
    assert yaad.as_tensor(arr).data is arr and yaad.from_numpy(arr).data is arr
    assert yaad.as_tensor(t) is t
    with pytest.raises(TypeError, match="ndarray"):
        yaad.from_numpy([1.0])
    stacked = yaad.tensor([src, src])  # (tensors inside a list: a differentiable stack)
    assert stacked.shape == (2, 1) and stacked.grad_fn.name == "stack"
    leaf = yaad.tensor([1.0, 2.0], requires_grad=True)
    cast = yaad.as_tensor(leaf, dtype=F32)
    assert cast.dtype == F32 and cast.grad_fn.name == "astype"
    cast.sum().backward()
    assert leaf.grad.dtype == np.float64
    np.testing.assert_array_equal(leaf.grad, [1.0, 1.0])


@pytest.mark.parametrize("make,expected", [
    (lambda: yaad.zeros((2, 3)), np.zeros((2, 3))),
    (lambda: yaad.ones(3, dtype=F32), np.ones(3, dtype=F32)),
    (lambda: yaad.full((2,), 1.5), np.full((2,), 1.5)),
    (lambda: yaad.eye(3, k=1), np.eye(3, k=1)),
    (lambda: yaad.identity(2), np.identity(2)),
    (lambda: yaad.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25)),
    (lambda: yaad.linspace(0, 1, 5), np.linspace(0, 1, 5)),
    (lambda: yaad.zeros_like(yaad.tensor([1.0, 2.0])), np.zeros(2)),
    (lambda: yaad.ones_like(np.zeros((2, 2), F32)), np.ones((2, 2), F32)),
    (lambda: yaad.full_like(yaad.tensor([1, 2]), 7), np.array([7, 7])),
    (lambda: yaad.rand(2, 3, seed=1), np.random.default_rng(1).random((2, 3))),
    (lambda: yaad.randn(4, seed=2, dtype=F32),
     np.random.default_rng(2).standard_normal(4).astype(F32)),
], ids=["zeros", "ones", "full", "eye", "identity", "arange", "linspace", "zeros_like",
        "ones_like", "full_like", "rand", "randn"])
def test_creation_functions(make, expected):
    t = make()
    assert isinstance(t, yaad.Tensor) and not t.requires_grad
    assert_like(t, expected)


def test_creation_with_requires_grad():
    w = yaad.zeros((2,), requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w + 1).sum().backward()
    np.testing.assert_array_equal(w.grad, [1.0, 1.0])
    with pytest.raises(TypeError):
        yaad.arange(3, requires_grad=True)


# ---- the engine at scale --------------------------------------------------------------------

def test_a_million_op_chain_runs_backward_iteratively():
    x = yaad.tensor(np.array([0.5]), requires_grad=True)
    enabled = gc.isenabled()
    gc.disable()  # Python's cyclic collector, not the engine, would dominate the build
    limit = sys.getrecursionlimit()
    try:
        y = x
        for _ in range(1_000_000):
            y = y + 1.0
        loss = y.sum()
        del y
        # Far below what a recursive walk of the chain would need.
        sys.setrecursionlimit(len(traceback.extract_stack()) + 100)
        loss.backward()
    finally:
        sys.setrecursionlimit(limit)
        if enabled:
            gc.enable()
    assert loss.item() == 1_000_000.5
    np.testing.assert_array_equal(x.grad, [1.0])


def test_a_long_training_loop_does_not_grow_memory():
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((16, 4)), rng.standard_normal(16)
    w = yaad.tensor(np.zeros(4), requires_grad=True)
    b = yaad.tensor(0.0, requires_grad=True)

    def step():
        loss = yaad.mean((yaad.tanh(xs @ w + b) - ys) ** 2)
        loss.backward()
        with yaad.no_grad():
            w.sub_(0.05 * w.grad)
            b.sub_(0.05 * b.grad)
        w.grad = b.grad = None
        return loss

    first = step()
    first_node = weakref.ref(first.grad_fn)
    del first
    assert first_node() is None  # the graph of a finished step is released
    tracemalloc.start()
    try:
        for _ in range(1000):
            step()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(9000):
            last = step()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 50_000, f"memory grew by {after - before} bytes over 9000 steps"
    assert last.item() < 1.0


def test_notebook_repr_shows_values_shape_dtype_and_grad_fn():
    x = yaad.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
    y = yaad.sin(x) * 2
    page = y._repr_html_()
    assert page.startswith("<pre>tensor([[") and "dtype=float32" in page
    assert "shape (2, 3), float32, grad_fn=&lt;multiply&gt;" in page
    assert "shape (2, 3), float32, requires_grad=True" in x._repr_html_()
    leaf = yaad.tensor(np.zeros(3, dtype=np.complex64))
    assert leaf._repr_html_().endswith("shape (3,), complex64, no gradient</small>")
    big = yaad.tensor(np.zeros(5000))
    assert "..." in big._repr_html_() and "shape (5000,)" in big._repr_html_()
