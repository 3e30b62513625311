"""Decisions taken from reference counts (reusing an array nothing else holds), in the
build under test: pure Python or compiled (Cython holds fewer references than the
interpreter, so a threshold right for one build is wrong for the other). Each decision is
checked both ways: a held array is never written or aliased (a threshold too high), and
a free one is reused (a threshold too low loses the saving silently).
"""

import gc
import weakref

import numpy as np
import pytest

import yaad
from yaad.compiled import codegen
from yaad.core import engine
from yaad.ops.shape import getitem

N = 100_000  # above IN_PLACE_SIZE and POOL_MIN


@pytest.fixture
def multiplies(monkeypatch):
    """The engine's in-place products: for each, whether it wrote into its first input."""
    calls = []

    def spy(a, b, out=None):
        calls.append(out is a)
        return np.multiply(a, b, out=out)

    monkeypatch.setattr(engine, "multiply", spy)
    return calls


def test_a_fresh_derivative_is_multiplied_in_place(multiplies):
    x0 = np.random.default_rng(0).uniform(-2, 2, N)
    x = yaad.tensor(x0, requires_grad=True)
    yaad.sin(x).sum().backward()
    assert multiplies == [True]  # cos(x) is a temporary: written into
    np.testing.assert_allclose(x.grad, np.cos(x0), rtol=1e-15)


def test_a_saved_value_as_derivative_is_not_written(multiplies):
    # exp's derivative is its saved output: the product must be a new array
    x0 = np.random.default_rng(1).uniform(-2, 2, N)
    x = yaad.tensor(x0, requires_grad=True)
    y = yaad.exp(x)
    (y * 3.0).sum().backward(retain_graph=True)
    assert multiplies == []
    np.testing.assert_array_equal(y.data, np.exp(x0))
    first = x.grad.copy()
    x.grad = None
    (y * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, first)
    np.testing.assert_allclose(first, 3 * np.exp(x0), rtol=1e-15)


def test_divide_writes_only_its_own_temporary():
    rng = np.random.default_rng(2)
    a0, b0 = rng.uniform(1, 2, N), rng.uniform(1, 2, N)
    a = yaad.tensor(a0, requires_grad=True)
    b = yaad.tensor(b0, requires_grad=True)
    q = a / b
    loss = (q * q).sum()
    for _ in range(2):  # the saved quotient and divisor survive the first pass
        a.grad = b.grad = None
        loss.backward(retain_graph=True)
        np.testing.assert_allclose(a.grad, 2 * a0 / b0**2, rtol=1e-13)
        np.testing.assert_allclose(b.grad, -2 * a0**2 / b0**3, rtol=1e-13)
    np.testing.assert_array_equal(q.data, a0 / b0)
    np.testing.assert_array_equal(b.data, b0)


def test_a_held_leaf_gradient_is_copied_and_a_fresh_one_kept():
    held = []

    def keep(g):
        held.append(g)
        return g

    x = yaad.tensor(np.ones(4), requires_grad=True)
    x.register_hook(keep)  # the hook's list holds the gradient: x.grad is a copy
    (x * 2.0).sum().backward()
    assert not np.shares_memory(x.grad, held[0])
    x.grad += 1.0
    np.testing.assert_array_equal(held[0], [2.0] * 4)

    made = []
    y = yaad.tensor(np.ones(4), requires_grad=True)
    y.register_hook(lambda g: made.append(weakref.ref(g)) or g)  # a weak reference only
    (y * 2.0).sum().backward()
    assert made[0]() is y.grad  # nothing else held it: kept, not copied


@pytest.fixture
def adds_into(monkeypatch):
    """Indexing's gradient added in place into a pending one: the id of each array written
    so (an id: a reference kept here would make the next one held)."""
    written = []
    into = getitem.op.adds_into

    def spy(acc, *args):
        written.append(id(acc))
        return into(acc, *args)

    monkeypatch.setattr(getitem.op, "adds_into", spy)
    return written


def test_indexing_adds_into_a_pending_gradient_only_when_nothing_holds_it(adds_into):
    x0 = np.random.default_rng(4).uniform(-2, 2, 5)
    for leaf in (False, True):  # the pending gradient of a node, of a leaf
        x = yaad.tensor(x0, requires_grad=True)
        c = x if leaf else yaad.cos(x)
        loss = c[0] * 1.0
        for i in range(1, 5):
            loss = loss + c[i] * (i + 1.0)
        adds_into.clear()
        loss.backward()
        assert len(adds_into) == 4  # the first scatter made it, the others add into it
        d = np.ones(5) if leaf else -np.sin(x0)
        np.testing.assert_allclose(x.grad, np.arange(1.0, 6.0) * d, rtol=1e-15)

    held = []
    x = yaad.tensor(x0, requires_grad=True)
    c = yaad.cos(x)
    a = c + 0.0  # (add's rule passes its gradient on: c's pending gradient is held's array)
    a.register_hook(lambda g: held.append(g) or g)
    w = np.arange(5.0)
    adds_into.clear()
    (c[1] * 7.0 + c[3] * 5.0 + (a * w).sum()).backward()  # (a's branch runs first)
    assert id(held[0]) not in adds_into and len(adds_into) == 1
    np.testing.assert_array_equal(held[0], w)
    np.testing.assert_allclose(x.grad, -np.sin(x0) * (w + [0, 7, 0, 5, 0]), rtol=1e-15)


def test_indexing_added_in_place_keeps_the_order_of_the_leaves_hooks(monkeypatch):
    def order():
        a = yaad.tensor(np.ones(3), requires_grad=True)
        b = yaad.tensor(np.ones(3), requires_grad=True)
        seen = []
        a.register_hook(lambda g: seen.append("a") or g)
        b.register_hook(lambda g: seen.append("b") or g)
        (a[2] * 3.0 + b.sum() + a[0] * 1.0 + a[1] * 2.0).backward()
        np.testing.assert_array_equal(a.grad, [1.0, 2.0, 3.0])
        return seen

    added = order()
    monkeypatch.setattr(getitem.op, "adds_into", None)  # every gradient by the rule
    assert added == order()


def test_in_place_change_of_memory_held_elsewhere_is_refused():
    # (the ops save nothing: held's one other holder is this test's variable)
    held = np.arange(4.0)
    alias = yaad.op(lambda a: held[::-1], vjp=lambda g, ans, a: 0.0 * g,
                    name="alias_for_refcount_test", save_args=False, save_ans=False)
    x = yaad.tensor(np.arange(4.0), requires_grad=True)
    y = alias(x * 1.0)  # a view of held's memory
    with pytest.raises(RuntimeError, match="shares its memory"):
        y += 1.0
    np.testing.assert_array_equal(held, np.arange(4.0))

    reverse_copy = yaad.op(lambda a: (a * 2.0)[::-1], vjp=lambda g, ans, a: 2.0 * g[::-1],
                           name="reverse_temporary_for_refcount_test", save_args=False,
                           save_ans=False)
    z = reverse_copy(x)  # a view of a temporary nothing else holds: its own memory
    z += 1.0
    z.sum().backward()
    np.testing.assert_array_equal(z.data, [7.0, 5.0, 3.0, 1.0])
    np.testing.assert_array_equal(x.grad, [2.0] * 4)


def test_a_pooled_buffer_is_reused_only_when_nothing_holds_it():
    pool = [None]
    a = np.ones(N)
    first = codegen.pooled(np.add, pool, a, 1.0)
    second = codegen.pooled(np.add, pool, a, 2.0)  # first is held here: a new array
    assert second is not first
    np.testing.assert_array_equal(first, 2.0)
    seen = weakref.ref(second)
    del first, second
    gc.collect()
    third = codegen.pooled(np.add, pool, a, 3.0)
    assert third is seen()  # free: written into
    np.testing.assert_array_equal(third, 4.0)
    assert codegen.free_buffer(pool) is None  # third is held


def test_compiled_gradients_held_by_the_caller_are_not_overwritten():
    f = yaad.compile(lambda x: (yaad.sin(x) * x).sum())
    rng = np.random.default_rng(3)
    grads, inputs = [], []
    for _ in range(4):
        x0 = rng.uniform(-1, 1, N)
        x = yaad.tensor(x0, requires_grad=True)
        f(x).backward()
        grads.append(x.grad)  # held: the next calls must not write it
        inputs.append(x0)
    for x0, g in zip(inputs, grads):
        np.testing.assert_allclose(g, np.cos(x0) * x0 + np.sin(x0), rtol=1e-13)
