"""Engine bookkeeping: gradient ownership at the leaves."""

import numpy as np
import pytest

import yaad


def test_leaf_gradients_never_alias_each_other_or_the_given_gradient():
    x = yaad.tensor(np.ones(3), requires_grad=True)
    y = yaad.tensor(np.ones(3), requires_grad=True)
    (x + y).sum().backward()
    assert not np.shares_memory(x.grad, y.grad)
    x.grad[0] = 5.0
    np.testing.assert_array_equal(y.grad, [1.0, 1.0, 1.0])

    given = np.arange(3.0)
    z = yaad.tensor(np.ones(3), requires_grad=True)
    (z + 0.0).backward(given)
    assert not np.shares_memory(z.grad, given)
    z.grad *= 0
    np.testing.assert_array_equal(given, [0.0, 1.0, 2.0])


def test_a_fresh_leaf_gradient_is_used_without_a_copy_and_a_held_one_is_copied():
    ids, held = [], []

    def vjp(g, ans, x):
        r = g * 3.0
        ids.append(id(r))
        if hold:
            held.append(r)
        return r

    triple = yaad.op(lambda x: x * 3.0, vjp=vjp, name="triple_for_engine_test")
    hold = False
    x = yaad.tensor(np.ones(4), requires_grad=True)
    triple(x).backward(np.ones(4))
    assert id(x.grad) == ids[0]  # the same object: no copy

    hold = True
    y = yaad.tensor(np.ones(4), requires_grad=True)
    triple(y).backward(np.ones(4))
    assert not np.shares_memory(y.grad, held[0])
    np.testing.assert_array_equal(y.grad, held[0])


def test_autograd_grad_runs_only_the_nodes_that_lead_to_its_inputs():
    calls = []

    def vjp(g, ans, x):
        calls.append(1)
        return g * 2.0

    double = yaad.op(lambda x: x * 2.0, vjp=vjp, name="double_for_pruning_test")
    a = yaad.tensor(np.ones(3), requires_grad=True)
    b = yaad.tensor(np.ones(3), requires_grad=True)
    loss = (double(double(a)) * b).sum()
    (gb,) = yaad.autograd.grad(loss, [b], retain_graph=True)
    np.testing.assert_array_equal(gb, [4.0, 4.0, 4.0])
    assert calls == []  # the branch through `a` was not run
    (ga,) = yaad.autograd.grad(loss, [a])
    np.testing.assert_array_equal(ga, [4.0, 4.0, 4.0])
    assert len(calls) == 2
    assert a.grad is None and b.grad is None


def test_the_real_part_of_a_real_tensor_is_a_view_not_the_same_array():
    x = yaad.tensor(np.ones(3), requires_grad=True)
    h = x * 2.0
    r = h.real
    assert r.data is not h.data and np.shares_memory(r.data, h.data)
    r += 1.0  # written through h (in PyTorch, h.real is h itself)
    np.testing.assert_array_equal(h.data, [3.0, 3.0, 3.0])
    (h * r).sum().backward()  # sum((2x + 1)^2)
    np.testing.assert_array_equal(x.grad, [12.0, 12.0, 12.0])


def test_large_temporaries_reused_in_backward_leave_saved_values_intact():
    # Above 65536 elements the backward multiplies into fresh temporaries (W4's memory);
    # saved values must never be written: two backward passes give the same gradient.
    rng = np.random.default_rng(3)
    x0 = rng.uniform(0.5, 1.5, 100_000)
    x = yaad.tensor(x0, requires_grad=True)
    e = yaad.exp(yaad.sin(x))
    loss = yaad.sum(e * x**2 / (1 + x**2) + e * e + yaad.cos(x) / x)
    loss.backward(retain_graph=True)
    first = x.grad.copy()
    x.grad = None
    loss.backward()
    s, c, ex = np.sin(x0), np.cos(x0), np.exp(np.sin(x0))
    q = x0**2 / (1 + x0**2)
    expected = (ex * c * q + ex * 2 * x0 / (1 + x0**2) ** 2 + 2 * ex * ex * c
                - s / x0 - c / x0**2)
    np.testing.assert_allclose(first, expected, rtol=1e-10)
    np.testing.assert_allclose(x.grad, expected, rtol=1e-10)
    np.testing.assert_array_equal(e.data, ex)


def test_a_product_keeps_only_what_its_needed_rule_reads():
    # x * c with only x requiring grad keeps c, not x (PyTorch saves the same), so x's
    # memory is released and an in-place change of x does not spoil the backward.
    import gc
    import weakref

    w = yaad.tensor([1.0, 2.0], requires_grad=True)
    c = np.array([3.0, 4.0])
    a = w * 1
    alive = weakref.ref(a.data)
    b = a * c
    assert b.grad_fn.args[0] is None and b.grad_fn.args[1] is c
    u = yaad.tensor([5.0, 6.0], requires_grad=True)
    both = a * u  # both inputs require grad: both are kept
    assert both.grad_fn.args[0] is a.data and both.grad_fn.args[1] is u.data
    del a, both
    gc.collect()
    assert alive() is None
    b.sum().backward()
    np.testing.assert_array_equal(w.grad, c)


def test_a_graph_without_saved_arrays_runs_backward_again():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    y = yaad.sum(-x[::-1].reshape(2, 1) + 1)  # negative, add, getitem, reshape, sum
    for _ in range(3):
        (g,) = yaad.autograd.grad(y, x)
        np.testing.assert_array_equal(g, [-1.0, -1.0])


def test_grad_accumulates_into_the_same_array_except_under_create_graph():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad is first
    np.testing.assert_array_equal(first, [5.0, 5.0])
    (x * x).sum().backward(create_graph=True)  # a recorded sum: a new tensor
    assert isinstance(x.grad, yaad.Tensor) and x.grad.requires_grad
    np.testing.assert_array_equal(first, [5.0, 5.0])
    np.testing.assert_array_equal(x.grad.data, [7.0, 9.0])


def test_reentrant_backward_deeper_than_the_recursion_limit():
    import sys

    class Deep(yaad.Function):
        @staticmethod
        def forward(ctx, x):
            with yaad.enable_grad():
                ctx.x = yaad.tensor(x, requires_grad=True) - 1
            return ctx.x.data.copy()

        @staticmethod
        def backward(ctx, g):
            if ctx.x.item() >= 0:
                with yaad.enable_grad(), yaad.no_grad(), yaad.enable_grad():
                    Deep.apply(ctx.x).sum().backward()
            return g

    depth = sys.getrecursionlimit()  # each level takes several Python frames
    v = yaad.tensor(float(depth), requires_grad=True)
    with pytest.warns(UserWarning, match="anomaly"), yaad.detect_anomaly():
        Deep.apply(v).sum().backward()  # the mode travels to the fresh threads too
    assert v.grad == 1.0


def test_autograd_grad_stops_at_an_intermediate_input_without_running_it():
    calls = []
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    a = yaad.exp(x)
    a.register_hook(lambda g: calls.append("a") or g * 10)
    x.register_hook(lambda g: calls.append("x"))
    (ga,) = yaad.autograd.grad(yaad.sum(a * a), a)
    assert calls == ["a"]  # the hook on the input runs, and nothing beyond it
    np.testing.assert_allclose(ga, 20 * np.exp([1.0, 2.0]))
    assert a.grad_fn.args is not None  # exp did not run: its saved values are still there
