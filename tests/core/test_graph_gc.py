"""The recorded graph and Python's garbage collection (issue 16, W8).

A graph has no reference cycles of its own, so reference counting frees it as soon as the
last tensor leading to it goes (the cyclic collector is not needed); it puts one object
per recorded op under the collector's watch (the node: its edges are slots, not a tuple);
and cycles that a user makes through the graph (a hook that closes over a tensor of the
graph, a gradient kept with ``create_graph``) are still collected. The oracle is Python
itself: ``weakref`` (dead or alive) and ``gc.get_objects``.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import yaad
from yaad.core.graph import Node


@pytest.fixture
def no_collector():
    """The cyclic collector off for the test (restored after)."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _chain(x, steps):
    y = x
    for _ in range(steps):
        y = y * 0.999 + 0.001
    return y


def test_a_graph_is_freed_by_reference_counting_after_backward(no_collector):
    x = yaad.tensor(np.array([0.5]), requires_grad=True)
    for retain in (False, True):
        y = _chain(x, 200)
        mid = y._node
        for _ in range(100):
            mid = mid.parents[0]  # a node halfway down the chain
        node, mid_ref, out = weakref.ref(mid), weakref.ref(y._node), weakref.ref(y)
        loss = yaad.sum(y)
        loss.backward(retain_graph=retain)
        del y, mid, loss
        assert node() is None and mid_ref() is None and out() is None
    np.testing.assert_allclose(x.grad, 2 * 0.999 ** 200)


def test_a_graph_is_freed_without_backward(no_collector):
    x = yaad.tensor(np.ones((2, 3)), requires_grad=True)
    w = yaad.tensor(np.ones((3, 2)), requires_grad=True)
    y = yaad.sum(yaad.concatenate([yaad.sin(x @ w), yaad.exp(x @ w), x @ w], axis=0))
    refs = [weakref.ref(y), weakref.ref(y._node), weakref.ref(y._node.parents[0])]
    del y
    assert all(r() is None for r in refs)


def test_one_tracked_object_per_recorded_op():
    x = yaad.tensor(np.array([0.5]), requires_grad=True)
    _chain(x, 10)  # (warm: caches of the first call)
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    y = _chain(x, 1000)
    gc.collect()  # (lets CPython untrack the tuples of untracked objects: saved args)
    new = [o for o in gc.get_objects() if id(o) not in before]
    nodes = [o for o in new if type(o) is Node]
    assert len(nodes) == 2000
    assert len(new) <= 2000 + 10, {type(o).__name__ for o in new if type(o) is not Node}
    assert type(y._node.parents[0]) is Node and y._node.parents[1] is None


def test_parents_of_one_two_and_many_inputs():
    x = yaad.tensor(np.ones(3), requires_grad=True)
    c = yaad.tensor(np.ones(3))  # no gradient: its edge is None
    one = yaad.sin(x)
    two = x * c
    many = yaad.stack([x, c, one])
    assert one._node.parents == (x,)
    assert two._node.parents == (x, None)
    assert many._node.parents == (x, None, one._node)
    # the setter keeps the arity (func.py cuts and restores edges this way)
    for t in (one, two, many):
        saved = t._node.parents
        t._node.parents = (None,) * len(saved)
        assert t._node.parents == (None,) * len(saved)
        t._node.parents = saved
        assert t._node.parents == saved
    yaad.sum(many).backward()
    np.testing.assert_allclose(x.grad, 1 + np.cos(1.0))


def _collected(make):
    """Whether the objects ``make()`` returns weak references to are collected once
    unreachable (by the cyclic collector: they are in a cycle)."""
    gc.collect()
    refs = make()
    gc.collect()
    return [r() is None for r in refs]


def test_a_hook_on_a_leaf_closing_over_the_graph_is_collected():
    def make():
        x = yaad.tensor(np.array([1.0, 2.0]), requires_grad=True)
        y = _chain(x, 50)
        x.register_hook(lambda g: g + 0 * y.data)  # x -> hook -> y -> nodes -> x
        yaad.sum(y).backward(retain_graph=True)
        return [weakref.ref(x), weakref.ref(y), weakref.ref(y._node)]

    assert _collected(make) == [True, True, True]


def test_a_hook_on_a_tensor_of_the_graph_closing_over_itself_is_collected():
    def make():
        x = yaad.tensor(np.array([1.0, 2.0]), requires_grad=True)
        y = _chain(x, 50)
        y.register_hook(lambda g: g * float(y.data[0] != 0))  # y -> node -> hook -> y
        yaad.sum(y * y).backward()
        return [weakref.ref(x), weakref.ref(y), weakref.ref(y._node)]

    assert _collected(make) == [True, True, True]


def test_a_gradient_kept_with_create_graph_is_collected():
    def make():
        x = yaad.tensor(np.array([1.0, 2.0]), requires_grad=True)
        y = yaad.sum(yaad.sin(_chain(x, 20)) ** 2)
        y.backward(create_graph=True)  # x.grad's graph leads back to x
        assert x.grad.requires_grad
        return [weakref.ref(x), weakref.ref(x.grad), weakref.ref(x.grad._node)]

    assert _collected(make) == [True, True, True]
