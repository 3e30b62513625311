"""yaad.compile: replayed results equal eager ones, and never a wrong replay.

Every test compares a compiled function with the same function run eagerly, over several
calls (the first records, the second verifies, later ones replay), and checks through
``stats`` that the replay really happened where it should.
"""

from __future__ import annotations

import random
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yaad
from yaad import CompileWarning

RNG = np.random.default_rng(0)


def leaf(a, dtype=None):
    return yaad.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def run(fn, *arrays, dtype=None):
    """Call ``fn`` on fresh leaves made from ``arrays``; backward; the value and grads."""
    xs = [leaf(a, dtype) for a in arrays]
    out = fn(*xs)
    out.backward()
    return out.data, [x.grad for x in xs]


def assert_same(fn, compiled, arrays_list, dtype=None, rtol=1e-12, scaled=False):
    """Values and gradients of ``compiled`` equal ``fn``'s to ``rtol`` (``scaled``: of each
    gradient's largest entry, where a fused kernel's libm, 1 ulp off NumPy's, meets a
    cancellation that leaves a tiny entry)."""
    for arrays in arrays_list:
        v0, g0 = run(fn, *arrays, dtype=dtype)
        v1, g1 = run(compiled, *arrays, dtype=dtype)
        np.testing.assert_allclose(v1, v0, rtol=rtol, atol=0)
        assert np.asarray(v1).dtype == np.asarray(v0).dtype
        for a, b in zip(g1, g0):
            atol = rtol * float(np.max(np.abs(b))) if scaled and b.size else 1e-300
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
            assert a.dtype == b.dtype


def new_inputs(*shapes, n=4):
    return [[RNG.standard_normal(s) for s in shapes] for _ in range(n)]


# ---- replaying: values and gradients equal eager mode ------------------------------------

def w1(x1, x2):
    return yaad.trace(x1 @ x2)


def mlp(w1_, b1, w2, b2):
    x = np.linspace(-1, 1, 15).reshape(5, 3)
    h = yaad.tanh(x @ w1_ + b1)
    logp = yaad.log_softmax(h @ w2 + b2, axis=-1)
    return -yaad.mean(logp[np.arange(5), np.array([0, 1, 2, 1, 0])])


def chain(a, b):
    y = np.linspace(0.1, 0.4, 4)
    for _ in range(5):
        y = yaad.sin(y) * a + yaad.cos(y) * b
    return yaad.sum(y)


def batched_trace(a, b):
    return yaad.sum(yaad.diagonal(a @ b, axis1=1, axis2=2))


def elementwise(x):
    return yaad.sum(yaad.exp(yaad.sin(x)) * x ** 2 / (1 + x ** 2))


CASES = [
    (w1, [(3, 3), (3, 3)]),
    (lambda x1, x2: yaad.trace(x1 @ x2, axis1=-2, axis2=-1).sum(), [(2, 3, 4), (2, 4, 3)]),
    (mlp, [(3, 4), (4,), (4, 3), (3,)]),
    (chain, [(4,), (4,)]),
    (batched_trace, [(3, 2, 2), (3, 2, 2)]),
    (elementwise, [(6,)]),
    (lambda a, b: yaad.einsum("bij,bji->", a, b), [(3, 2, 2), (3, 2, 2)]),
    (lambda x: (x * x.detach()).sum(), [(3,)]),
    (lambda x, b: yaad.sum((x + b) ** 2), [(2, 3), (3,)]),
    (lambda x: yaad.linalg.eigh(x + x.T)[0].sum() + yaad.linalg.eigh(x + x.T)[1][0, 0] ** 2,
     [(4, 4)]),
    (lambda x: yaad.trace(yaad.linalg.inv(x @ x.T + yaad.eye(3))), [(3, 3)]),
]


@pytest.mark.parametrize("fn,shapes", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_replay_equals_eager(fn, shapes):
    c = yaad.compile(fn)
    assert_same(fn, c, new_inputs(*shapes), rtol=1e-10)
    assert c.stats["replayed"] >= 2 and c.stats["eager"] == 0


def test_w1_gradients_and_no_matrix_product_in_backward():
    c = yaad.compile(w1)
    a, b = RNG.standard_normal((2, 5, 5))
    for _ in range(3):
        x1, x2 = leaf(a), leaf(b)
        loss = c(x1, x2)
        loss.backward()
        np.testing.assert_allclose(loss.data, np.trace(a @ b), rtol=1e-12)
        np.testing.assert_allclose(x1.grad, b.T, rtol=1e-14)
        np.testing.assert_allclose(x2.grad, a.T, rtol=1e-14)
    end = next(iter(c._trees.values())).root.end
    assert "@" not in end.bwd.__source__  # trace(a @ b) differentiated as a scaled identity


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_stays_float32(dtype):
    fn = mlp
    c = yaad.compile(fn)
    assert_same(fn, c, new_inputs((3, 4), (4,), (4, 3), (3,)), dtype=dtype,
                rtol=1e-6 if dtype == np.float32 else 1e-10)


def test_complex_gradient_convention():
    c = yaad.compile(lambda z: yaad.sum(yaad.abs(z) ** 2))
    for _ in range(3):
        z = yaad.tensor(np.array([3 + 4j]), requires_grad=True)
        c(z).backward()
        np.testing.assert_allclose(z.grad, [6 + 8j])
    assert c.stats["replayed"] == 1


def test_complex_expectation_value():
    h = RNG.standard_normal((5, 5)) + 1j * RNG.standard_normal((5, 5))
    h = h + h.conj().T

    def energy(psi):
        return yaad.real(yaad.vdot(psi, h @ psi)) / yaad.real(yaad.vdot(psi, psi))

    c = yaad.compile(energy)
    cases = [[RNG.standard_normal(5) + 1j * RNG.standard_normal(5)] for _ in range(4)]
    assert_same(energy, c, cases, rtol=1e-10)
    psi = cases[-1][0]
    hpsi = h @ psi
    den = np.vdot(psi, psi).real
    e = np.vdot(psi, hpsi).real / den
    x = leaf(psi)
    c(x).backward()
    np.testing.assert_allclose(x.grad, 2 * (hpsi - e * psi) / den, rtol=1e-10)


def test_accumulates_like_eager():
    c = yaad.compile(lambda x: (x ** 3).sum())
    x = leaf([1.0, 2.0])
    for k in range(1, 5):
        c(x).backward()
        np.testing.assert_allclose(x.grad, k * 3 * x.data ** 2)


def test_gradients_are_fresh_arrays():
    c = yaad.compile(lambda x, y: (x + y).sum())
    for _ in range(3):
        x, y = leaf(np.ones(3)), leaf(np.ones(3))
        c(x, y).backward()
        x.grad[0] = 5.0
        assert y.grad[0] == 1.0 and x.grad.flags.writeable


def test_second_backward_needs_retain_graph():
    c = yaad.compile(lambda x: (x * x).sum())
    x = leaf([1.0, 2.0])
    for _ in range(2):
        c(x)
    loss = c(x)
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad, 4 * x.data)
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()


def test_backward_with_gradient_and_hooks():
    c = yaad.compile(lambda x: x * 2)
    seen = []
    for _ in range(3):
        x = leaf([1.0, 2.0])
        x.register_hook(lambda g: seen.append(g.copy()))
        c(x).backward(np.array([1.0, 10.0]))
        np.testing.assert_allclose(x.grad, [2.0, 20.0])
    assert len(seen) == 3


def test_compiled_output_inside_a_larger_graph():
    c = yaad.compile(lambda x: yaad.sin(x) * x)
    for _ in range(3):
        x = leaf([0.5, 1.5])
        y = yaad.exp(c(x * 2)).sum()
        y.backward()
        u = 2 * x.data
        np.testing.assert_allclose(x.grad, 2 * np.exp(np.sin(u) * u) * (np.cos(u) * u
                                                                       + np.sin(u)))


def test_several_outputs():
    c = yaad.compile(lambda x: (x.sum(), (x * x).sum(), x.shape))
    for _ in range(3):
        x = leaf([1.0, 2.0, 3.0])
        a, b, shape = c(x)
        (a + 2 * b).backward()
        np.testing.assert_allclose(x.grad, 1 + 4 * x.data)
        assert shape == (3,)


def test_closed_over_tensor_updated_in_place():
    w = leaf([1.0, -1.0])
    c = yaad.compile(lambda x: yaad.sum(yaad.tanh(x * w)))
    x = yaad.tensor([0.3, 0.7])
    for _ in range(5):
        w.grad = None
        loss = c(x)
        loss.backward()
        expect = np.tanh(x.data * w.data)
        np.testing.assert_allclose(loss.data, expect.sum(), rtol=1e-14)
        np.testing.assert_allclose(w.grad, (1 - expect ** 2) * x.data, rtol=1e-14)
        with yaad.no_grad():
            w -= 0.5 * w.grad
    assert c.stats["replayed"] == 3


def test_no_grad_call():
    c = yaad.compile(lambda x: (x * x).sum())
    x = leaf([1.0, 2.0])
    with yaad.no_grad():
        for _ in range(3):
            out = c(x)
            assert not out.requires_grad and out.grad_fn is None
            assert float(out.data) == 5.0
    out = c(x)
    assert out.requires_grad


def test_duplicate_inputs_are_not_confused():
    c = yaad.compile(lambda x, y: (x * y).sum())
    x = leaf([1.0, 2.0])
    for _ in range(3):
        assert float(c(x, x).data) == 5.0
    y = leaf([3.0, 4.0])
    for _ in range(3):
        assert float(c(x, y).data) == 11.0


def test_arrays_and_python_values_as_arguments():
    c = yaad.compile(lambda x, a, scale, flags: (x * a * scale).sum() if flags["on"] else x)
    x = leaf([1.0, 2.0])
    for scale in (1.0, 2.0, 1.0, 2.0, 2.0, 2.0):
        a = RNG.standard_normal(2)
        out = c(x, a, scale, {"on": True})
        np.testing.assert_allclose(out.data, (x.data * a * scale).sum(), rtol=1e-14)
    assert c(x, a, 1.0, {"on": False}) is x


def test_decorator_with_options():
    @yaad.compile(verify=False)
    def f(x):
        return (x * x).sum()

    x = leaf([1.0, 2.0])
    f(x)
    f(x)
    assert f.stats == {"replayed": 1, "recorded": 1, "eager": 0}


# ---- gradients computed inside the function -------------------------------------------------

def test_value_and_grad_compiled():
    def loss(w, x):
        return yaad.sum(yaad.tanh(x @ w) ** 2)

    vg = yaad.func.value_and_grad(loss)
    c = yaad.compile(vg)
    x = RNG.standard_normal((4, 3))
    for _ in range(4):
        w = RNG.standard_normal((3, 2))
        v, g = c(w, x)
        v0, g0 = vg(w, x)
        assert type(v) is type(v0) and type(g) is type(g0)
        np.testing.assert_allclose(v, v0, rtol=1e-14)
        np.testing.assert_allclose(g, g0, rtol=1e-14)
    assert c.stats["replayed"] == 2


def test_value_and_grad_several_arguments_and_tensors():
    def loss(a, b):
        return yaad.sum(yaad.sin(a) * b)

    vg = yaad.func.value_and_grad(loss, argnums=(0, 1))
    c = yaad.compile(vg)
    for _ in range(4):
        a, b = RNG.standard_normal((2, 3))
        v, (ga, gb) = c(yaad.tensor(a), yaad.tensor(b))
        np.testing.assert_allclose(v.data, np.sum(np.sin(a) * b), rtol=1e-14)
        np.testing.assert_allclose(ga.data, np.cos(a) * b, rtol=1e-14)
        np.testing.assert_allclose(gb.data, np.sin(a), rtol=1e-14)
    assert c.stats["replayed"] == 2


def test_autograd_grad_inside():
    def f(x):
        y = (x ** 3).sum()
        (g,) = yaad.autograd.grad(y, x)
        return g

    c = yaad.compile(f)
    for _ in range(4):
        x = leaf(RNG.standard_normal(3))
        np.testing.assert_allclose(c(x), 3 * x.data ** 2, rtol=1e-14)
    assert c.stats["replayed"] == 2


def test_backward_inside_accumulates_into_inputs():
    def step(w, x):
        loss = yaad.sum((x @ w) ** 2)
        loss.backward()
        return loss

    c = yaad.compile(step)
    x = RNG.standard_normal((4, 3))
    w = leaf(RNG.standard_normal(3))
    for k in range(1, 5):
        c(w, x)
        np.testing.assert_allclose(w.grad, k * 2 * x.T @ (x @ w.data), rtol=1e-12)
    assert c.stats["replayed"] == 2


def test_second_derivatives_through_compiled_function():
    c = yaad.compile(lambda x: (x ** 3).sum())
    for _ in range(3):
        x = leaf([1.0, 2.0])
        (g,) = yaad.autograd.grad(c(x), x, create_graph=True)
        (h,) = yaad.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(h, 6 * x.data)


def test_gradcheck_and_gradgradcheck_on_compiled():
    c = yaad.compile(lambda x, y: yaad.sin(x) * yaad.exp(y))
    x, y = RNG.standard_normal((2, 3))
    with warnings.catch_warnings():
        # Finite differences call it with arrays: yaad functions on arrays only are NumPy,
        # which a recording cannot see, so those calls run eagerly (with a warning).
        warnings.simplefilter("ignore", CompileWarning)
        for _ in range(3):
            assert yaad.testing.gradcheck(c, (x, y))
        assert yaad.testing.gradgradcheck(c, (x, y))
    assert c.stats["replayed"] >= 1


def test_strong_zeros_where_a_branch_is_nan():
    def f(x):
        return yaad.where(x > 0, yaad.sqrt(x), 0.0).sum()

    c = yaad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(f, c, [[np.array([4.0, -1.0, 0.25])] for _ in range(4)])
        _, (g,) = run(c, np.array([4.0, -1.0, 0.25]))
    np.testing.assert_allclose(g, [0.25, 0.0, 1.0])


def test_strong_zeros_stop_at_an_op_that_is_not_elementwise():
    # corrcoef of a constant row is 0/0; clip's mask gives a zero gradient there, and the
    # sums, products and divisions below it give NaN in eager mode (strong zeros pass
    # through elementwise ops only): the replay must give the same NaN, not a zero
    def f(x):
        return yaad.sum(yaad.corrcoef(x))

    c = yaad.compile(f)
    calls = [[RNG.standard_normal((3, 5))] for _ in range(2)] + [[np.full((3, 5), -0.0)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(f, c, calls)
        _, (g,) = run(c, np.full((3, 5), -0.0))
    assert np.isnan(g).all() and c.stats["replayed"] >= 1


# ---- guards: branches, loops, shapes, dtypes ------------------------------------------------

def test_branch_on_a_comparison_alternating():
    c = yaad.compile(lambda x: x if x.sum() > 0 else -x)
    for k in range(8):
        sign = 1 if k % 2 == 0 else -1
        x = leaf(RNG.random(3) * sign)
        y = c(x)
        (y * y * y).sum().backward()
        np.testing.assert_allclose(y.data, sign * x.data)
        np.testing.assert_allclose(x.grad, 3 * sign * x.data ** 2)
    assert c.stats["recorded"] == 4 and c.stats["replayed"] == 4


def test_loop_with_value_dependent_trip_count():
    def f(x):
        y = x
        while y.sum() < 10:
            y = y * 2
        return y.sum()

    c = yaad.compile(f)
    for start in (1.0, 3.0, 1.0, 3.0, 1.0, 3.0, 0.6, 0.6, 0.6):
        x = leaf([start, start])
        loss = c(x)
        loss.backward()
        k = 0
        while 2 * start * 2 ** k < 10:
            k += 1
        np.testing.assert_allclose(loss.data, 2 * start * 2 ** k)
        np.testing.assert_allclose(x.grad, [2.0 ** k, 2.0 ** k])
    assert c.stats["replayed"] >= 3


def test_int_and_index_guards():
    def f(x, n):
        return x[int(n)] * x.sum()

    c = yaad.compile(f)
    x = leaf([1.0, 2.0, 3.0])
    for k in (0, 2, 0, 2, 0, 2):
        n = yaad.tensor(k)
        np.testing.assert_allclose(c(x, n).data, x.data[k] * 6.0)


def test_shape_and_dtype_changes():
    c = yaad.compile(lambda x: (x * x).sum())
    for n, dt in [(2, np.float64), (3, np.float64), (2, np.float32)] * 3:
        x = leaf(np.arange(n), dt)
        loss = c(x)
        loss.backward()
        assert loss.dtype == dt and x.grad.dtype == dt
        np.testing.assert_allclose(x.grad, 2 * x.data)
    assert c.stats["replayed"] >= 3


def test_rebinding_a_global_number_re_records():
    c = yaad.compile(_scaled)
    x = leaf([1.0, 2.0])
    global SCALE
    for s in (1.0, 2.0, 3.0, 2.0):
        SCALE = s
        for _ in range(3):
            np.testing.assert_allclose(c(x).data, 3.0 * s)


SCALE = 1.0


def _scaled(x):
    return x.sum() * SCALE


def test_module_train_eval_mode_is_part_of_the_signature():
    class Twice(yaad.nn.Module):
        def forward(self, x):
            return x * 2 if self.training else x

    m = Twice()
    c = yaad.compile(m)
    x = leaf([1.0])
    for mode in (True, False, True, False):
        m.train(mode)
        for _ in range(3):
            assert c(x).data[0] == (2.0 if mode else 1.0)


def test_float_guard_falls_back_after_max_recordings():
    c = yaad.compile(lambda x: x * (1.0 if float(x.sum()) > 0 else -1.0), max_recordings=3)
    with pytest.warns(CompileWarning, match="recorded 4 times"):
        for k in range(8):
            x = leaf([k + 0.5])
            np.testing.assert_allclose(c(x).data, x.data)
    assert c.stats["eager"] >= 3


# ---- what cannot be replayed: eager mode, with a warning ---------------------------------

def _escapes(fn, *arrays):
    c = yaad.compile(fn)
    with pytest.warns(CompileWarning):
        outs = [c(*[leaf(a * (k + 1)) for a in arrays]) for k in range(3)]
    assert c.stats["replayed"] == 0
    return c, outs


def test_numpy_on_data_runs_eagerly():
    c, outs = _escapes(lambda x: x * float(np.sum(x.data)), np.ones(2))
    for k, out in enumerate(outs):
        np.testing.assert_allclose(out.data, (k + 1) * 2 * (k + 1) * np.ones(2))
    assert "x.data" in c.explain()[0] and "test_compile.py" in c.explain()[0]


@pytest.mark.parametrize("convert", [
    lambda x: x.numpy() * 2,
    lambda x: np.asarray(x.detach()) * 2,
    lambda x: np.array(x.tolist()) * 2,
    lambda x: yaad.tensor(x).data * 2,
])
def test_conversions_to_numpy_run_eagerly(convert):
    def f(x):
        return x * yaad.tensor(convert(x)).sum()

    _, outs = _escapes(f, np.ones(2))
    for k, out in enumerate(outs):
        np.testing.assert_allclose(out.data, (k + 1) * np.ones(2) * 4 * (k + 1))


def test_random_numbers_run_eagerly():
    def f(x):
        return x * np.random.rand()

    def g(x):
        return x * random.random()

    def h(x):
        return x * yaad.randn(2)

    for fn in (f, g, h):
        c = yaad.compile(fn)
        with pytest.warns(CompileWarning, match="random"):
            values = [c(leaf([1.0, 1.0])).data for _ in range(4)]
        assert len({float(v[0]) for v in values}) == 4


def test_random_generator_in_the_state_runs_eagerly():
    gen = np.random.default_rng(1)
    c = yaad.compile(lambda x: x * gen.standard_normal())
    with pytest.warns(CompileWarning, match="changes what it reads"):
        values = [float(c(leaf([1.0])).data[0]) for _ in range(4)]
    assert len(set(values)) == 4


def _draws(fn, compiled, seed, calls=6):
    """``fn``'s values over ``calls`` calls, each sequence from the same seeds."""
    yaad.nn.init.manual_seed(seed)
    gen = np.random.default_rng(seed)
    f = yaad.compile(fn(gen)) if compiled else fn(gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        return [f(leaf([1.0, 2.0])).data.tolist() for _ in range(calls)]


@pytest.mark.parametrize("fn", [
    lambda gen: lambda x: yaad.nn.functional.dropout(x, 0.5),
    lambda gen: yaad.nn.Dropout(0.5, generator=gen),
    lambda gen: lambda x: x * (gen.random(2) < 0.5),
    lambda gen: lambda x: x * gen.integers(0, 2),
    lambda gen: lambda x: x * (yaad.rand(2, seed=gen) < 0.5),
], ids=["dropout", "Dropout-module", "generator-mask", "generator-integers", "rand-seed-gen"])
def test_a_random_draw_is_never_baked_into_a_recording(fn):
    # Two recordings that drew the same numbers (a 2-element mask: one time in four)
    # replayed that draw on every later call; each seed's calls match eager mode's.
    for seed in range(12):
        assert _draws(fn, True, seed) == _draws(fn, False, seed), seed


def test_hooks_and_retain_grad_inside_run_eagerly():
    def hooked(x):
        y = x * 2
        y.register_hook(lambda g: g * 10)
        return y.sum()

    def retained(x):
        y = x * 2
        y.retain_grad()
        return (y * y).sum(), y

    c = yaad.compile(hooked)
    with pytest.warns(CompileWarning, match="hook"):
        for _ in range(3):
            x = leaf([1.0, 2.0])
            c(x).backward()
            np.testing.assert_allclose(x.grad, [20.0, 20.0])
    c = yaad.compile(retained)
    with pytest.warns(CompileWarning, match="retain_grad"):
        for _ in range(3):
            x = leaf([1.0, 2.0])
            loss, y = c(x)
            loss.backward()
            np.testing.assert_allclose(y.grad, 2 * y.data)


def test_in_place_on_inputs_runs_eagerly():
    def f(x):
        x += 1
        return x * 2

    c = yaad.compile(f)
    x = yaad.tensor([1.0, 2.0])
    with pytest.warns(CompileWarning, match="in-place"):
        for k in range(1, 4):
            out = c(x)
            np.testing.assert_allclose(x.data, [1.0 + k, 2.0 + k])
            np.testing.assert_allclose(out.data, 2 * x.data)


def test_in_place_on_intermediate_runs_eagerly():
    def f(x):
        y = x * 2
        y[0] = 0.0
        return y.sum()

    c = yaad.compile(f)
    with pytest.warns(CompileWarning):
        for _ in range(3):
            x = leaf([1.0, 2.0, 3.0])
            c(x).backward()
            np.testing.assert_allclose(x.grad, [0.0, 2.0, 2.0])


def test_errors_propagate_and_nothing_is_cached():
    c = yaad.compile(lambda x, y: x @ y)
    with pytest.raises(ValueError):
        c(leaf(np.ones((2, 3))), leaf(np.ones((2, 3))))
    assert c.stats["replayed"] == 0
    out = c(leaf(np.ones((2, 3))), leaf(np.ones((3, 2))))
    np.testing.assert_allclose(out.data, 3 * np.ones((2, 2)))


def test_value_dependent_error_at_replay_raises_like_eager():
    c = yaad.compile(lambda a: yaad.sum(1 / a))
    for _ in range(3):
        c(leaf([1.0, 2.0]))
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            c(leaf([1.0, 0.0]))


def test_unhashable_argument_runs_eagerly():
    c = yaad.compile(lambda x, opts: x * opts.k)

    class Opts:
        __hash__ = None
        k = 2.0

    with pytest.warns(CompileWarning, match="hashable"):
        assert float(c(leaf([1.0]), Opts()).data[0]) == 2.0


# ---- against PyTorch, and random programs ----------------------------------------------------

def test_mlp_gradients_match_torch():
    import torch
    params = [RNG.standard_normal(s) for s in [(3, 4), (4,), (4, 3), (3,)]]
    c = yaad.compile(mlp)
    for _ in range(3):
        _, grads = run(c, *params)
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    x = torch.tensor(np.linspace(-1, 1, 15).reshape(5, 3))
    h = torch.tanh(x @ tp[0] + tp[1])
    logp = torch.log_softmax(h @ tp[2] + tp[3], dim=-1)
    (-logp[torch.arange(5), torch.tensor([0, 1, 2, 1, 0])].mean()).backward()
    for g, t in zip(grads, tp):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10)


UNARY = [yaad.sin, yaad.cos, yaad.tanh, yaad.exp, lambda x: x * x, lambda x: -x,
         lambda x: x / (1 + x * x), yaad.abs, lambda x: yaad.maximum(x, 0.1)]


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.integers(0, len(UNARY) - 1), min_size=1, max_size=6),
       n=st.integers(1, 4), seed=st.integers(0, 1000))
def test_random_elementwise_programs(ops, n, seed):
    def f(x, y):
        for k in ops:
            x = UNARY[k](x) + y
        return x.sum()

    c = yaad.compile(f)
    r = np.random.default_rng(seed)
    assert_same(f, c, [[r.standard_normal(n), r.standard_normal(n)] for _ in range(3)],
                rtol=1e-12, scaled=True)  # (ops=[5, 3, 2, 4, 2, 1], n=3, seed=159: 2e-10
    # relative on an entry 3e8 times smaller than the largest, 1e-20 absolute)


# ---- the fused backend (numba, optional) -------------------------------------------------

@pytest.fixture
def force_fusion(monkeypatch):
    import numba  # noqa: F401

    from yaad.compiled import fused

    monkeypatch.setattr(fused, "FORCE", [True])


def _fused_end(c):
    end = next(iter(c._trees.values())).root.end
    return end


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_unrolled_loop_is_rolled_back(force_fusion, dtype):
    c = yaad.compile(chain)
    assert_same(chain, c, new_inputs((4,), (4,)), dtype=dtype,
                rtol=1e-12 if dtype == np.float64 else 2e-5)
    end = _fused_end(c)
    assert end.fused_call and end.fused_bwd
    assert "for t" in end.fused_call[0].__source__  # 5 steps, one loop
    assert c.stats["replayed"] >= 2


def test_fused_gradient_seeds_and_retained_graph(force_fusion):
    def f(x):
        return yaad.sum(yaad.exp(yaad.sin(x)) * x ** 2 / (1 + x ** 2))

    c = yaad.compile(f)
    a = RNG.standard_normal(50)
    for _ in range(3):
        x = leaf(a)
        c(x).backward()
    expect = x.grad.copy()
    v0, (g0,) = run(f, a)
    np.testing.assert_allclose(expect, g0, rtol=1e-12)
    x = leaf(a)
    loss = c(x)
    loss.backward(retain_graph=True)          # the gradients the forward computed
    loss.backward(np.float64(2.0), retain_graph=True)  # recomputed, for another seed
    loss.backward()                            # recomputed again
    np.testing.assert_allclose(x.grad, 4 * g0, rtol=1e-12)
    assert _fused_end(c).fused_call


def test_fused_strong_zeros_and_branches_not_taken(force_fusion):
    def f(x):
        return yaad.where(x > 0, yaad.sqrt(x), 0.0).sum()

    c = yaad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(f, c, [[np.array([4.0, -1.0, 0.25])] for _ in range(3)])


def test_fused_strong_zeros_keep_the_engines_signs(force_fusion):
    def f(x):
        return yaad.where(x > 1, yaad.sqrt(x) * -2.0, 0.0).sum()

    c = yaad.compile(f)
    with np.errstate(invalid="ignore"):
        for _ in range(4):
            grads = []
            for fn in (f, c):
                x = leaf([4.0, 0.25, -1.0])
                fn(x).backward()
                grads.append(x.grad)
            np.testing.assert_array_equal(grads[1], grads[0])
            np.testing.assert_array_equal(np.signbit(grads[1]), [True, True, False])
    assert c.stats["replayed"] == 2 and _fused_end(c).fused_bwd is not None


def test_fused_falls_back_where_not_elementwise(force_fusion):
    c = yaad.compile(w1)
    assert_same(w1, c, new_inputs((3, 3), (3, 3)))
    assert not _fused_end(c).fused_call


def test_without_numba_everything_stays_python(monkeypatch):
    from yaad.compiled import fused

    monkeypatch.setattr(fused, "_numba", [None])
    monkeypatch.setattr(fused, "FORCE", [True])
    c = yaad.compile(chain)
    assert_same(chain, c, new_inputs((4,), (4,)))
    assert not _fused_end(c).fused_call


def test_module_argument_mode_and_many_signatures(monkeypatch):
    class Half(yaad.nn.Module):
        def forward(self, x):
            return x * 0.5 if self.training else x

    c = yaad.compile(lambda m, x: m(x).sum())
    m = Half()
    x = leaf([2.0])
    for mode in (True, False, True):
        m.train(mode)
        for _ in range(3):
            assert float(c(m, x).data) == (1.0 if mode else 2.0)
    monkeypatch.setattr(sys.modules["yaad.compile"], "MAX_SIGNATURES", 4)
    c = yaad.compile(lambda x, k: x * k)
    with pytest.warns(CompileWarning, match="signatures"):
        for k in range(10):
            assert float(c(x, k).data[0]) == 2.0 * k
    assert len(c._trees) + len(c._eager) <= 4


def test_recycled_gradient_arrays_never_overwrite_held_ones():
    c = yaad.compile(lambda a, b: (a * b).sum())
    n = 40_000  # large enough to be recycled
    a0, b0 = RNG.standard_normal((2, n))
    a, b = leaf(a0), leaf(b0)
    held = []
    for k in range(5):
        a.grad = b.grad = None
        with yaad.no_grad():
            b.data[...] = b0 * (k + 1)
        c(a, b).backward()
        np.testing.assert_allclose(a.grad, b0 * (k + 1))
        held.append(a.grad)
    for k, g in enumerate(held):
        np.testing.assert_allclose(g, b0 * (k + 1))
    assert len({id(g) for g in held}) == 5


def test_training_loop_with_a_model_and_an_optimizer():
    r = np.random.default_rng(3)
    x, y = r.standard_normal((16, 5)), r.integers(0, 3, 16)
    models = [yaad.nn.Sequential(yaad.nn.Linear(5, 8), yaad.nn.Tanh(), yaad.nn.Linear(8, 3))
              for _ in range(2)]
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        with yaad.no_grad():
            q.data[...] = p.data
    opts = [yaad.optim.Adam(m.parameters(), lr=0.05) for m in models]
    # (the labels are read by NumPy inside cross_entropy: closed over, they are state that
    # the compiled function checks on every call; passed as an argument, it runs eagerly)
    steps = [yaad.compile(lambda x: yaad.nn.functional.cross_entropy(models[0](x), y)),
             lambda x: yaad.nn.functional.cross_entropy(models[1](x), y)]
    for _ in range(6):
        losses = []
        for step, opt in zip(steps, opts):
            opt.zero_grad()
            loss = step(x)
            loss.backward()
            opt.step()
            losses.append(float(loss.data))
        assert losses[0] == losses[1]
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_array_equal(p.data, q.data)
    assert steps[0].stats["replayed"] == 4


def test_dropout_in_training_mode_runs_eagerly_and_eval_mode_replays():
    model = yaad.nn.Sequential(yaad.nn.Linear(5, 8), yaad.nn.Dropout(0.5), yaad.nn.Linear(8, 3))
    c = yaad.compile(lambda x: model(x).sum())
    x = np.ones((4, 5))
    with pytest.warns(CompileWarning):
        values = {float(c(x).data) for _ in range(4)}
    assert len(values) == 4
    model.eval()
    values = {float(c(x).data) for _ in range(4)}
    assert len(values) == 1 and c.stats["replayed"] == 2


def test_closed_over_index_array_changed_in_place_is_seen():
    labels = np.array([0, 1, 2, 1])
    rows = np.arange(4)

    def nll(z):
        return -yaad.mean(yaad.log_softmax(z, axis=-1)[rows, labels])

    c = yaad.compile(nll)
    z0 = RNG.standard_normal((4, 3))
    for k in range(5):
        labels[...] = (np.arange(4) + k) % 3  # the state check sees the new bits
        for _ in range(3):
            v0, (g0,) = run(nll, z0)
            v1, (g1,) = run(c, z0)
            np.testing.assert_array_equal(v1, v0)
            np.testing.assert_array_equal(g1, g0)
    assert c.stats["replayed"] == 5 and c.stats["eager"] == 0


def test_python_looking_at_an_array_argument_is_a_guard():
    def f(x, n):
        out = x
        for _ in range(int(n)):
            out = out * 2
        return out.sum()

    c = yaad.compile(f)
    x = leaf([1.0, 2.0])
    for k in (1, 3, 1, 3, 1, 3):
        np.testing.assert_allclose(c(x, np.array(k)).data, 3.0 * 2 ** k)
    assert c.stats["replayed"] == 2 and c.stats["eager"] == 0


def test_the_last_signature_is_checked_as_the_others():
    # A call with the last replay's signature skips building it (Compiled._last, a
    # generated check); any difference (dtype, shape, requires_grad, a non-leaf, the same
    # tensor twice, another class, the grad mode, the floating-point state) takes the
    # general path and gives eager mode's result.
    f = lambda a, b: yaad.sum(yaad.tanh(a @ b) * a)  # noqa: E731
    c = yaad.compile(f)
    a, b = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))

    def check(x, y):
        got, want = c(x, y), f(x, y)
        assert np.array_equal(got.data, want.data) and got.dtype == want.dtype
        assert got.requires_grad == want.requires_grad

    for _ in range(3):
        check(leaf(a), leaf(b))
    assert c._last is not None and c.stats["replayed"] == 1
    calls = [(leaf(a, np.float32), leaf(b, np.float32)),
             (leaf(a[:2]), leaf(b)),
             (yaad.tensor(a), leaf(b)),
             (leaf(a) * 1.0, leaf(b))]
    x = leaf(a)
    calls.append((x, x))
    for args in calls:
        check(*args)
        check(*args)
        check(leaf(a), leaf(b))  # (back to the first signature: replayed)
    with yaad.no_grad():
        check(leaf(a), leaf(b))
    with np.errstate(over="raise"):
        check(leaf(a), leaf(b))
    replayed = c.stats["replayed"]
    check(leaf(a), leaf(b))
    assert c.stats["replayed"] == replayed + 1
