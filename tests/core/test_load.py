"""Nothing lost under load (issue 7): threads, long training loops, dropped graphs,
create_graph loops, and large elementwise chains.

Memory is measured with ``tracemalloc`` (NumPy reports its array buffers to it). A leak is
the growth of traced memory from the end of one window of steps to the end of the next:
a leak of one object per step shows as tens of bytes times the window. (The first window
also fills bounded interpreter caches, such as CPython's type-attribute cache, which keeps
up to 4096 attribute-name strings; those do not grow further.)
"""

from __future__ import annotations

import gc
import sys
import threading
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest

import yaad
from tests.support.reliability import long_only

# ---- threads -----------------------------------------------------------------------------


def _run_threads(target, n: int) -> list:
    """Run ``target(k, barrier)`` in ``n`` threads at once; return the exceptions raised."""
    barrier = threading.Barrier(n)
    errors: list = []

    def wrap(k):
        try:
            target(k, barrier)
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        threads = [threading.Thread(target=wrap, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    return errors


def test_threads_differentiating_their_own_graphs_get_correct_gradients():
    def work(k, barrier):
        rng = np.random.default_rng(k)
        a0, w0 = rng.standard_normal(5), rng.standard_normal((5, 5))
        barrier.wait()
        for it in range(60):
            a = yaad.tensor(a0 + it, requires_grad=True)
            w = yaad.tensor(w0, requires_grad=True)
            h = yaad.sin(a) * (k + 1)
            loss = (yaad.tanh(w @ h) ** 2).sum() + (a * a).sum() * 0.5
            loss.backward()
            # analytic: t = tanh(w h); dL/dh = w^T (2 t (1 - t^2)); h = (k+1) sin(a)
            hv = np.sin(a0 + it) * (k + 1)
            t = np.tanh(w0 @ hv)
            gt = 2 * t * (1 - t * t)
            np.testing.assert_allclose(w.grad, np.outer(gt, hv), rtol=1e-10)
            np.testing.assert_allclose(a.grad, (w0.T @ gt) * (k + 1) * np.cos(a0 + it)
                                       + (a0 + it), rtol=1e-10)
            # second order in the same thread
            (ga,) = yaad.autograd.grad((a ** 3).sum(), a, create_graph=True)
            (gga,) = yaad.autograd.grad(ga.sum(), a)
            np.testing.assert_allclose(gga, 6 * (a0 + it), rtol=1e-12)

    errors = _run_threads(work, 8)
    assert not errors, errors[0]


def test_no_grad_in_one_thread_does_not_affect_another():
    entered, checked = threading.Event(), threading.Event()
    seen = {}

    def quiet(k, barrier):
        with yaad.no_grad():
            entered.set()
            assert checked.wait(30)
            x = yaad.tensor([1.0], requires_grad=True)
            seen["quiet"] = (yaad.is_grad_enabled(), (x * 2).requires_grad)
        yaad.set_grad_enabled(False)  # the function form, never restored in this thread

    def busy(k, barrier):
        assert entered.wait(30)
        x = yaad.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        seen["busy"] = (yaad.is_grad_enabled(), y.requires_grad)
        y.backward()
        seen["grad"] = x.grad.copy()
        checked.set()

    errors = _run_threads(lambda k, b: (quiet if k == 0 else busy)(k, b), 2)
    assert not errors, errors[0]
    assert seen["quiet"] == (False, False)
    assert seen["busy"] == (True, True)
    np.testing.assert_array_equal(seen["grad"], [2.0, 4.0])
    assert yaad.is_grad_enabled()  # nor the main thread


def test_in_place_updates_in_one_thread_do_not_trip_the_version_check_of_another():
    def work(k, barrier):
        barrier.wait()
        for _ in range(200):
            if k % 2:  # parameter updates: in-place, under no_grad
                p = yaad.tensor(np.ones(4), requires_grad=True)
                with yaad.no_grad():
                    for _ in range(5):
                        p -= 0.1
            else:  # graphs whose saved values nobody touches
                x = yaad.tensor(np.full(4, 0.5), requires_grad=True)
                yaad.sin(yaad.exp(x)).sum().backward()
                np.testing.assert_allclose(x.grad, np.cos(np.exp(0.5)) * np.exp(0.5))

    errors = _run_threads(work, 6)
    assert not errors, errors[0]


# ---- memory: training loops ------------------------------------------------------------------


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((16, 4)), rng.standard_normal((16, 1))
    params = [yaad.tensor(rng.standard_normal((4, 8)) * 0.5, requires_grad=True),
              yaad.tensor(np.zeros(8), requires_grad=True),
              yaad.tensor(rng.standard_normal((8, 1)) * 0.5, requires_grad=True)]
    return data, params


def _train_step(data, params):
    (x, y), (w1, b1, w2) = data, params
    loss = yaad.mean((yaad.tanh(x @ w1 + b1) @ w2 - y) ** 2)
    loss.backward()
    with yaad.no_grad():
        for p in params:
            p -= 0.05 * p.grad
            p.grad = None
    return loss


_NUMPY = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)


def growth_bytes(step, warmup: int, window: int) -> tuple[int, int]:
    """Growth of traced memory (all of it, and NumPy's array buffers alone) over the second
    of two windows of ``window`` calls of ``step``, after an untraced warm-up: a leak of b
    bytes per call shows as ``b * window``."""
    for _ in range(warmup):
        step()
    gc.collect()
    tracemalloc.start()
    try:
        kept = []
        for _ in range(2):
            for _ in range(window):
                step()
            gc.collect()
            snap = tracemalloc.take_snapshot()
            kept.append((sum(t.size for t in snap.traces),
                         sum(t.size for t in snap.filter_traces([_NUMPY]).traces)))
        return kept[1][0] - kept[0][0], kept[1][1] - kept[0][1]
    finally:
        tracemalloc.stop()


def assert_flat(grew: tuple, window: int) -> None:
    total, arrays = grew
    assert arrays <= 0, f"NumPy buffers grew by {arrays} bytes over {window} steps"
    # one leaked object per step would be >= 16 * window bytes; the slack is for bounded
    # interpreter caches (see the module docstring)
    assert total < 16 * window, f"memory grew by {total} bytes over {window} steps"


def _training_holds_memory_flat(steps: int) -> None:
    data, params = _mlp()
    losses = [_train_step(data, params).item(), None]  # first and latest only

    def step():
        losses[1] = _train_step(data, params).item()

    window = steps // 8
    assert_flat(growth_bytes(step, steps - 2 * window - 1, window), window)
    assert losses[1] < 0.5 * losses[0]  # it did train


def test_20000_training_steps_hold_memory_flat():
    _training_holds_memory_flat(20_000)


@long_only
def test_fuzz_100000_training_steps_hold_memory_flat():
    _training_holds_memory_flat(100_000)


def test_a_graph_dropped_without_backward_is_freed_without_the_garbage_collector():
    gc.disable()
    try:
        x = yaad.tensor(np.linspace(0.1, 1.0, 50), requires_grad=True)
        y = (yaad.exp(yaad.sin(x)) * x ** 2 / (1 + x ** 2)).sum()
        node = weakref.ref(y.grad_fn)
        saved = [weakref.ref(a) for n in _nodes(y) for a in n.args if isinstance(a, np.ndarray)
                 and a is not x.data]
        assert saved  # the graph did save arrays
        del y
        assert node() is None, "the graph outlived its output: a reference cycle"
        assert all(s() is None for s in saved), "saved arrays outlived the graph"
    finally:
        gc.enable()


def _nodes(t):
    """The nodes of ``t``'s graph (iteratively)."""
    out, stack, seen = [], [t.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or not hasattr(n, "parents"):
            continue
        seen.add(id(n))
        out.append(n)
        for p in n.parents:
            stack.append(p[0] if isinstance(p, tuple) else p)
    return out


@pytest.mark.parametrize("style", ["autograd.grad", "backward"])
def test_create_graph_loops_do_not_leak(style):
    x = yaad.tensor(np.linspace(0.1, 1.0, 20), requires_grad=True)

    def step():
        loss = (yaad.sin(x) * x).sum()
        if style == "autograd.grad":
            (g,) = yaad.autograd.grad(loss, x, create_graph=True)
        else:
            loss.backward(create_graph=True)
            g = x.grad
            x.grad = None  # as a user does: the graph of the old grad goes with it
        (g * g).sum().backward()
        x.grad = None

    gc.disable()  # the PyTorch bug: graphs kept alive by reference cycles until gc runs
    try:
        grew = growth_bytes(step, 200, 1000)
        ref = weakref.ref(_last_node(x))
    finally:
        gc.enable()
    assert_flat(grew, 1000)
    assert ref() is None


def _last_node(x):
    (g,) = yaad.autograd.grad((yaad.sin(x) * x).sum(), x, create_graph=True)
    return g.grad_fn


# ---- scale: a large elementwise chain within 1.45x the NumPy floor's peak ---------------------


def _w4_yaad(x0):
    x = yaad.Tensor(x0, requires_grad=True)
    loss = yaad.sum(yaad.exp(yaad.sin(x)) * x ** 2 / (1 + x ** 2))
    loss.backward()
    return loss.item(), x.grad


def _w4_floor(x):
    """The hand-written forward and backward of the same loss: the benchmarks' W4 floor."""
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # benchmarks/ is a top-level package of the repository
        sys.path.insert(0, root)
    from benchmarks.workloads import _w4_floor as floor

    loss, (grad,) = floor((x,), None)
    return loss, grad


def peak_bytes(fn, x0) -> tuple:
    """The peak of traced memory while ``fn(x0)`` runs, above what was allocated before."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = fn(x0)
        return tracemalloc.get_traced_memory()[1] - base, out
    finally:
        tracemalloc.stop()


# README.md and docs/performance.md quote W4's peak memory as 1.4x the floor's (tracemalloc
# counts the same NumPy buffers whatever the machine, so the ratio is stable: 1.396 at 1e6
# elements, 1.400 at 3e6). 1.45 is that claim, rounded.
W4_PEAK_BOUND = 1.45


def _chain_within_the_quoted_bound(n: int) -> float:
    x0 = np.random.default_rng(0).standard_normal(n)
    floor, (lf, gf) = peak_bytes(_w4_floor, x0)
    ours, (ly, gy) = peak_bytes(_w4_yaad, x0)
    np.testing.assert_allclose(ly, lf, rtol=1e-12)
    np.testing.assert_allclose(gy, gf, rtol=1e-9, atol=1e-14)
    assert ours <= W4_PEAK_BOUND * floor, (f"peak {ours / 2**20:.0f} MiB, floor "
                                           f"{floor / 2**20:.0f} MiB: over the 1.4x quoted")
    return ours / floor


def test_elementwise_chain_of_a_million_within_the_quoted_memory_bound():
    ratio = _chain_within_the_quoted_bound(1_000_000)
    assert ratio >= 1.0  # the floor is a floor: yaad keeps at least what it needs


@long_only
def test_fuzz_elementwise_chain_of_ten_million_within_the_quoted_memory_bound():
    _chain_within_the_quoted_bound(10_000_000)


def test_the_leak_check_catches_a_leak():
    # Guards the measurement: one small array kept per step must fail assert_flat.
    kept = []
    x = yaad.tensor(np.ones(3), requires_grad=True)

    def leaky():
        y = (x * 2).sum()
        y.backward()
        kept.append(x.grad.copy())
        x.grad = None

    with pytest.raises(AssertionError, match="grew"):
        assert_flat(growth_bytes(leaky, 10, 500), 500)
