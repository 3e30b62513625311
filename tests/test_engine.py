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
    with pytest.raises(RuntimeError, match="shares its memory"):
        r += 1.0
    np.testing.assert_array_equal(h.data, [2.0, 2.0, 2.0])


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
