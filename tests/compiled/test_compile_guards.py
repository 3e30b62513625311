"""yaad.compile never replays a wrong answer: the regression tests of issue 10.

Each program is recorded on one input and replayed on others chosen to flip what it
decides from values; the value and every gradient must be eager yaad's (the oracle: the
same program run without compile), and a call must either replay or run eagerly with a
CompileWarning. Expected values are also written out where they are short.
"""

from __future__ import annotations

import ast
import functools
import operator
import pathlib
import types
import warnings

import numpy as np
import pytest

import yaad
from yaad import CompileWarning

Y = yaad


def _call(fn, arrays):
    """Value and gradients of ``fn`` on fresh leaves (or the exception it raises)."""
    xs = [Y.tensor(np.array(a, dtype=float), requires_grad=True) for a in arrays]
    try:
        out = fn(*xs)
    except Exception as e:
        return ("raise", type(e))
    value = out.data if isinstance(out, Y.Tensor) else out
    if not (isinstance(out, Y.Tensor) and out.requires_grad):
        return (np.array(value), None)
    try:
        out.backward()
    except Exception as e:
        return (np.array(value), ("raise", type(e)))
    return (np.array(value), [None if x.grad is None else np.array(x.grad) for x in xs])


def _same(a, b) -> bool:
    if isinstance(a, tuple) and a and isinstance(a[0], str):
        return a == b
    if isinstance(b, tuple) and b and isinstance(b[0], str):
        return False
    if a is None or b is None:
        return a is b
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
        return False
    return a.dtype.kind not in "fc" or np.array_equal(np.signbit(a.real), np.signbit(b.real))


def check(fn, recorded, replays, replay=None):
    """``compile(fn)`` equals ``fn`` on ``recorded`` (twice: recording and verifying), then
    on each of ``replays``; ``replay``: whether the calls must replay (True), must run
    eagerly with a warning (False), or either (None). Returns the compiled function."""
    c = Y.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for arrays in [recorded, recorded, *replays]:
            want = _call(fn, arrays)
            got = _call(c, arrays)
            assert _same(got[0], want[0]), (arrays, got, want)
            assert _same(got[1], want[1]), (arrays, got, want)
    warned = [w for w in caught if issubclass(w.category, CompileWarning)]
    if replay is True:
        assert c.stats["replayed"] >= 1 and c.stats["eager"] == 0 and not warned, c.stats
    elif replay is False:
        assert c.stats["replayed"] == 0 and c.stats["eager"] >= 1 and warned, c.stats
    if c.stats["eager"]:
        assert warned, "an eager fall-back must warn"
    return c


NAN = float("nan")


# ---- ops and rules that decide from values: replayed, deciding again -------------------------

# name: (fn, recorded input, replay inputs, (value, gradient) on the last replay input,
# worked out by hand; ("raise", type) where eager raises). The kinds of issue 10.
KINDS = {
    "sort": (lambda x: (Y.sort(x) * np.arange(3.0)).sum(),
             [3.0, 1, 2], [[1.0, 2, 3], [2.0, 3, 1]], (0 * 1 + 1 * 2 + 2 * 3, [1, 2, 0])),
    "argmax index": (lambda x: x[Y.argmax(x)] * 2, [3.0, 1, 2], [[1.0, 2, 3], [2.0, 3, 1]],
                     (6, [0, 2, 0])),
    "argmax method index": (lambda x: x[x.argmax()] * 2, [3.0, 1, 2], [[1.0, 2, 3]],
                            (6, [0, 0, 2])),
    "take argmax": (lambda x: Y.take(x, Y.argmax(x)) * 2, [3.0, 1, 2], [[1.0, 2, 3]],
                    (6, [0, 0, 2])),
    "nonzero index": (lambda x: Y.sum(x[Y.nonzero(x > 0)]), [3.0, -1, 2],
                      [[-1.0, -2, 3], [1.0, 2, -3]], (3, [1, 1, 0])),
    "mask and its length": (lambda x: (lambda m: m.sum() / len(m))(x[x > 0]), [3.0, -1, 2],
                            [[-1.0, -2, 3], [1.0, 2, -3]], (1.5, [0.5, 0.5, 0])),
    "searchsorted": (lambda x: x[Y.searchsorted(x, 1.5)] * 1.0, [0.0, 1, 2],
                     [[0.0, 1, 1], [2.0, 3, 4]], (2, [1, 0, 0])),
    "nanmean": (lambda x: Y.nanmean(x), [1.0, 2, 3], [[1.0, NAN, 3]], (2, [0.5, 0, 0.5])),
    # log(1 - 0.5 e^3 + 1) of a negative number; JAX's gradient there is 0 too
    "logsumexp b<0": (lambda x: Y.logsumexp(x, b=np.array([1.0, -0.5, 1.0])), [0.0, 1, 2],
                      [[0.0, 3, 0]], (NAN, [0, 0, 0])),
    "logsumexp sign": (lambda x: Y.logsumexp(x, b=np.array([1.0, -0.5, 1.0]),
                                             return_sign=True)[1] * x.sum(),
                       [0.0, 1, 2], [[0.0, 3, 0]], (-3, [-1, -1, -1])),
    "vector_norm ord=inf": (lambda x: Y.linalg.vector_norm(x, ord=np.inf), [3.0, -1, 2],
                            [[1.0, -3, 3], [1.0, 2, -3]], (3, [0, 0, -1])),
    # a tie: the gradient is shared, as in PyTorch
    "norm ord=inf": (lambda x: Y.linalg.norm(x, ord=np.inf), [3.0, -1, 2],
                     [[1.0, 2, -3], [1.0, -3, 3]], (3, [0, -0.5, 0.5])),
    "max with nan": (lambda x: Y.max(x), [3.0, 1, 2], [[1.0, NAN, 3]], (NAN, [0, 1, 0])),
    "amax with nan": (lambda x: Y.amax(x), [3.0, 1, 2], [[3.0, 1, 3], [1.0, NAN, 3]],
                      (NAN, [0, 1, 0])),
    "norm at zero": (lambda x: Y.linalg.norm(x), [3.0, 1, 2], [[0.0, 0, 0]], (0, [0, 0, 0])),
    # 2I: a gauge-invariant loss has a gradient there (0), a gauge-dependent one raises
    "eigh degenerate": (lambda x: Y.linalg.eigh(Y.reshape(x, (2, 2))
                                                + Y.reshape(x, (2, 2)).mT)[1].sum(),
                        [1.0, 2, 3, 4], [[1.0, 0, 0, 1]], (2, [0, 0, 0, 0])),
    "eigh degenerate GaugeError": (
        lambda x: Y.linalg.eigh(Y.reshape(x, (2, 2)) + Y.reshape(x, (2, 2)).mT)[1][0, 1],
        [1.0, 2, 3, 4], [[1.0, 0, 0, 1]], (0, ("raise", Y.linalg.GaugeError))),
    "matrix_rank": (lambda x: x.sum() * Y.linalg.matrix_rank(Y.reshape(x, (2, 2))),
                    [1.0, 2, 3, 4], [[1.0, 2, 2, 4]], (9, [1, 1, 1, 1])),
    # d det / dA is the cofactor matrix, finite at a singular A
    "det singular": (lambda x: Y.linalg.det(Y.reshape(x, (2, 2))), [1.0, 2, 3, 4],
                     [[0.0, 0, 0, 0], [1.0, 2, 2, 4]], (0, [4, -2, -2, 1])),
    "empty prod": (lambda x: Y.sum(Y.prod(Y.reshape(x, (2, 0)), axis=-1)), [], [[]],
                   (2, [])),
}


@pytest.mark.parametrize("name", list(KINDS))
def test_value_dependent_ops_and_rules_are_decided_again(name):
    fn, recorded, replays, _ = KINDS[name]
    check(fn, [recorded], [[r] for r in replays], replay=True)


@pytest.mark.parametrize("name", list(KINDS))
def test_kinds_give_their_expected_values(name):
    """The last replay of each kind against its value worked out by hand (not only
    against eager yaad; to rounding: the cofactors of det come from an LU)."""
    fn, recorded, replays, (value, grad) = KINDS[name]
    c = Y.compile(fn)
    for _ in range(2):
        c(Y.tensor(recorded, requires_grad=True))
    x = Y.tensor(replays[-1], requires_grad=True)
    with np.errstate(all="ignore"):
        out = c(x)
        assert c.stats["replayed"] == 1, c.stats
        np.testing.assert_allclose(out.data, value, rtol=1e-12, atol=1e-14)
        if isinstance(grad, tuple):
            with pytest.raises(grad[1]):
                out.backward()
            return
        out.backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad, np.array(grad, dtype=float), rtol=1e-12, atol=1e-14)


def test_a_rule_that_reads_values_is_called_on_replay():
    def fwd(x):
        return x * 2

    def vjp(g, ans, x):  # reads a value: the replay must call it, not repeat its result
        return g * (3.0 if float(np.sum(x)) > 0 else -3.0)

    op = Y.op(fwd, vjp=vjp, name="test_reads_values")
    check(lambda x: Y.sum(op(x)), [[1.0, 2.0]], [[[-1.0, -2.0]], [[5.0, 1.0]]], replay=True)


def test_value_dependent_output_shape_is_guarded():
    c = check(lambda x: Y.sum(x[x > 0] ** 2), [[1.0, -1, 2]],
              [[[1.0, 2, 3]], [[-1.0, -1, -1]], [[4.0, -5, 6]]])
    assert c.stats["eager"] == 0


@pytest.mark.parametrize("seed", [None, 1.0, 2.5])
def test_shape_guards_of_the_backward_hold_for_the_implicit_seed(seed):
    """A gradient whose shape depends on a mask argument: ``scatter_add`` broadcasts
    ``v`` (one value) to the selected places, so its gradient, the selection of ``g``,
    sums over them. Recorded where one place is selected, replayed where two are: the
    backward's shape guard must hold in the branch for the implicit seed 1 too (it was
    dropped there, and ``v.grad`` came out with two entries, found by the compile fuzzer)."""
    weights = Y.tensor([1.0, 2.0, 4.0])
    fn = lambda v, mask: Y.sum(Y.scatter_add(v, mask, (3,)) * weights)  # noqa: E731
    compiled = Y.compile(fn)
    masks = [[True, False, False]] * 2 + [[True, True, False], [False, True, True],
                                          [False, False, False], [True, False, False]]
    for mask in masks:
        mask = np.array(mask)
        grads = []
        for f in (compiled, fn):
            v = Y.tensor([1.5], requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CompileWarning)
                out = f(v, mask)
            out.backward() if seed is None else out.backward(Y.tensor(seed))
            grads.append(v.grad)
        expected = (1.0 if seed is None else seed) * np.array([[1.0, 2.0, 4.0]]) @ mask
        for g in grads:
            assert g.shape == (1,) and g.dtype == np.float64
            np.testing.assert_array_equal(g, expected)


@pytest.mark.parametrize("read", [
    lambda x, a: Y.sum(x) + (1.0 if Y.argwhere(a).size else -1.0),
    lambda x, a: Y.sum(x) * len(Y.nonzero(a)[0]),
    lambda x, a: Y.sum(x) * a[a > 0].shape[0],
], ids=["argwhere size", "len of nonzero", "shape of a mask's selection"])
def test_a_shape_read_by_python_alone_is_guarded(read):
    """An op whose output's shape depends on values, the output used by Python only
    (its shape read): the shape guard stays though nothing else needs the output (it was
    removed as dead code with the op, and a replay kept the recorded branch: found by the
    compile fuzzer, ``argwhere`` of an input then ``if o.size``)."""
    compiled = Y.compile(read)
    for a in [[0.0, 0, 0], [0.0, 0, 0], [0.0, 1, 2], [0.0, 1, 2], [3.0, 0, 0], [0.0, 0, 0]]:
        got, want = [], []
        for f, out in ((compiled, got), (read, want)):
            x = Y.tensor([1.0, 2.0], requires_grad=True)
            y = f(x, Y.tensor(a))
            y.backward()
            out += [y.item(), x.grad.tolist()]
        assert got == want


def test_an_outside_tensor_read_by_python_alone_is_watched():
    """A captured tensor that no op reads, only Python (its shape, dtype and
    requires_grad): a new value of another shape, or requires_grad switched, records again
    (the replay kept the first shape's number)."""
    w = Y.tensor(np.ones(3))

    def f(x):
        return Y.sum(x) * w.shape[0] * (2.0 if w.requires_grad else 1.0)

    compiled = Y.compile(f)
    for k in range(7):
        if k == 2:
            w.data = np.ones(5)
        if k == 4:
            w.requires_grad_(True)
        x = Y.tensor([1.0, 2.0], requires_grad=True)
        want = 3.0 * (3 if k < 2 else 5) * (2 if k >= 4 else 1)
        got = compiled(x)
        got.backward()
        assert got.item() == want and x.grad.tolist() == [want / 3.0] * 2
    assert compiled.stats["replayed"] == 1 and compiled.stats["recorded"] == 6


def test_the_engines_fallback_backward_has_the_recorded_constants():
    """When a replayed backward cannot run (a rule raises), the engine's path recomputes
    the recording eagerly; the constant arrays that recorded rules computed with are part
    of it (they were missing: KeyError where eager mode raises the rule's TypeError;
    found by the compile fuzzer)."""
    def f(v, x):
        loss = Y.logsumexp(v, b=np.array([0.7, -0.7])) + Y.real(Y.sum(Y.gamma(x)))
        gv, gx = Y.autograd.grad(loss, [v, x], create_graph=True)
        return loss + Y.sum(gv * gv) + Y.sum(Y.real(gx * Y.conj(gx)))

    compiled = Y.compile(f)
    for v in ([-0.3, -0.4], [-0.3, -0.4], [0.0, 0.0]):
        for fn in (compiled, f):
            xs = [Y.tensor(v, requires_grad=True), Y.tensor(np.zeros(0, complex),
                                                            requires_grad=True)]
            with pytest.raises(TypeError, match="digamma"):
                fn(*xs).backward()


def test_a_rule_that_raises_on_arrays_raises_on_replay():
    """At first order the engine gives rules arrays; the recording runs them on tensors,
    which have methods that arrays lack (``g.exp()``). A rule that raises on the arrays
    is called on replay, not inlined, so the replay raises as eager mode does (it
    returned a gradient instead)."""
    twice = Y.extend.op(lambda x: x * 2.0, vjp=lambda g, ans, x: g.exp() * 0 + 2 * g,
                        name="test_tensor_method_in_rule")
    compiled = Y.compile(lambda a: Y.sum(twice(a)))
    for x in (0.5, 0.5, 0.7, 1.0):
        for fn in (compiled, lambda a: Y.sum(twice(a))):
            a = Y.tensor(x, requires_grad=True)
            with pytest.raises(AttributeError, match="exp"):
                fn(a).backward()
    # under create_graph the rule gets tensors, in both modes
    a = Y.tensor(0.5, requires_grad=True)
    (g,) = Y.autograd.grad(compiled(a), [a], create_graph=True)
    assert float(g) == 2.0


def test_yaads_functions_are_code_to_the_state_check():
    """yaad's functions are code, not state, in every build: the compiled build makes the
    functions of its hot modules (the ops among them) Cython functions, which the state
    check took for data, one comparison each per call (W1 compiled: 220 per call through
    the benchmark's namespace, 2.6x slower than the pure-Python build)."""
    from yaad.compiled.state import watch

    def conds(functions):
        space = types.SimpleNamespace(**functions)
        check = watch(lambda x: space.sum(space.exp(x)), [])
        return len(check.conds)

    yaad_ops = {"sum": Y.sum, "exp": Y.exp, "matmul": Y.matmul, "einsum": Y.einsum}
    plain = {name: (lambda *a, **k: None) for name in yaad_ops}
    assert conds(yaad_ops) == conds(plain)


def test_strong_zeros_are_the_engines():
    """Below a selecting op, a rule's inf or NaN where the gradient is zero becomes 0, and
    a finite result keeps its bits (-0.0 here), in the replay as in eager mode (one
    implementation: yaad.ops.strong_zero)."""
    fn = lambda x: Y.sum(Y.where(x > 1, Y.sqrt(x) * -2.0, 0.0))  # noqa: E731
    with np.errstate(invalid="ignore", divide="ignore"):
        check(fn, [[4.0, 0.25, 9.0]], [[[4.0, 0.25, -1.0]], [[0.0, 0.25, 4.0]]], replay=True)
        x = Y.tensor([4.0, 0.25, -1.0], requires_grad=True)
        fn(x).backward()
    assert list(x.grad) == [-0.5, 0.0, 0.0] and list(np.signbit(x.grad)) == [True, True, False]


def test_strong_zeros_in_second_derivatives_inside_a_compiled_function():
    def fn(x):
        y = Y.sum(Y.where(x > 0, Y.sqrt(x) ** 3, 0.0))
        (g,) = Y.autograd.grad(y, [x], create_graph=True)
        return Y.sum(g)

    with np.errstate(invalid="ignore"):
        c = check(fn, [[-1.0, 4.0]], [[[4.0, -1.0]], [[-1.0, 9.0]]])
        x = Y.tensor([-1.0, 4.0], requires_grad=True)
        c(x).backward()
    np.testing.assert_allclose(x.grad, [0.0, 0.75 / 2.0])  # d2/dx2 x^1.5 at 4; 0 at -1


def test_paths_of_each_value_dependent_shape_are_kept():
    """A mask whose length goes back and forth records each length once (and verifies
    it), then replays both."""
    fn = KINDS["mask and its length"][0]
    two, one = [3.0, -1, 2], [-1.0, -2, 3]
    c = check(fn, [two], [[one], [one], [two], [one], [two], [one]], replay=True)
    assert c.stats == {"replayed": 4, "recorded": 4, "eager": 0}


# ---- what Python reads from values: guards compared bit for bit ------------------------------

def test_guards_tell_negative_zero_from_zero_and_nan_equals_nan():
    fn = lambda x: x / float(x[0])  # noqa: E731  (+inf or -inf)
    c = Y.compile(fn)
    with np.errstate(divide="ignore", invalid="ignore"):
        outs = [c(Y.tensor(np.array([z, 1.0]))).data for z in (0.0, 0.0, -0.0, -0.0, 0.0)]
    assert [o[1] for o in outs] == [np.inf, np.inf, -np.inf, -np.inf, np.inf]
    c = Y.compile(lambda x: x[1] * (1.0 if float(x[0]) != float(x[0]) else 2.0))
    for _ in range(4):
        assert float(c(Y.tensor([NAN, 1.0])).data) == 1.0
    assert c.stats["replayed"] == 2


def test_python_number_arguments_are_told_apart_by_bits():
    c = Y.compile(lambda x, s: x / s)
    with np.errstate(divide="ignore"):
        for s in (0.0, -0.0, 0.0, -0.0):
            assert float(c(Y.tensor([1.0]), s).data[0]) == np.copysign(np.inf, s)


def _set_data(x):
    y = x * 2
    y.data = np.ones(3)
    return y


# The rows of docs/compile.md's table "What Python reads from a value", each on inputs
# that keep and that flip what it reads.
GUARD_READS = {
    "bool": lambda x: x * (2.0 if x.sum() > 0 else -1.0),
    "float": lambda x: x * float(x[0]),
    "int": lambda x: x * int(x[0] > 0),
    "complex": lambda x: x * complex(x[0]).real,
    "item": lambda x: x * x[0].item(),
    "operator.index": lambda x: x * [1.0, 2.0, 3.0][operator.index(Y.argmax(x))],
    "format of a 0-d tensor": lambda x: x * float(f"{x.sum():.0f}"),
}
SHAPE_READS = {
    "iteration": lambda x: sum(t * t for t in x),
    "len": lambda x: x * len(x),
    "shape and dtype": lambda x: x * x.shape[0] * (1.0 if x.dtype == np.float64 else 2.0),
}
FLIPS = [[[-1.0, 2, 3]], [[-0.0, 2, -3]], [[0.0, 2, -3]], [[3.0, 2, 1]], [[1.0, -2, 3]]]


@pytest.mark.parametrize("read", list(GUARD_READS.values()), ids=list(GUARD_READS))
def test_reading_a_scalar_is_a_guard(read):
    c = check(lambda x: Y.sum(read(x)), [[1.0, -2, 3]], FLIPS, replay=True)
    assert c.stats["recorded"] >= 3  # (a flipped outcome is a new path)


@pytest.mark.parametrize("read", list(SHAPE_READS.values()), ids=list(SHAPE_READS))
def test_reading_shapes_is_recorded(read):
    c = check(lambda x: Y.sum(read(x)), [[1.0, -2, 3]], FLIPS, replay=True)
    assert c.stats["recorded"] == 2


WHOLE_READS = {
    "repr": lambda x: x * len(repr(x)),
    "str": lambda x: x * len(str(x)),
    "format": lambda x: x * len(format(x, "")),
    "data.nonzero": lambda x: x[x.data.nonzero()].sum(),
    "data.tobytes": lambda x: x * x.data.tobytes()[7],
    "memoryview": lambda x: x * memoryview(x.data)[0],
    "numpy": lambda x: x * x.numpy()[0],
    "np.asarray": lambda x: x * np.asarray(x.detach())[0],
    "tolist": lambda x: x * x.tolist()[0],
    "tensor(x).data": lambda x: x * Y.tensor(x).data[0],
    "print": lambda x: x * (print(x) or 1.0),
    "grad": lambda x: x * (1.0 if x.grad is None else 2.0),
    "assigning data": _set_data,
}


@pytest.mark.parametrize("read", list(WHOLE_READS.values()), ids=list(WHOLE_READS))
def test_reading_a_whole_value_runs_eagerly(read):
    check(lambda x: Y.sum(read(x)), [[1.0, 0, 2]], [[[3.0, 2, 2]], [[0.0, 2, 2]]],
          replay=False)


def test_no_module_is_trusted_by_name():
    """Code in a module named like yaad's own reads values like anyone else's."""
    mod = types.ModuleType("yaad.ops.sneaky")
    exec("import numpy as np\ndef f(x):\n    return x * float(np.sum(x.data))\n", vars(mod))
    check(mod.f, [[1.0, 2.0]], [[[3.0, 4.0]]], replay=False)
    # the warning names the user's line and the yaad function that read the value
    c = Y.compile(lambda x: mod.f(x) * 2)
    with pytest.warns(CompileWarning, match=r"test_compile_guards\.py:\d+, inside "
                                            r"yaad\.ops\.sneaky\.f"):
        c(Y.tensor([1.0, 2.0]))


def test_nothing_is_patched_while_recording():
    seen = {}

    def f(x):
        seen["tensor"] = dict(vars(Y.Tensor))
        seen["rng"] = np.random.default_rng
        return x * 2

    before = dict(vars(Y.Tensor))
    rng = np.random.default_rng
    Y.compile(f)(Y.tensor([1.0]))
    assert seen["tensor"] == before and seen["rng"] is rng


# ---- state that is not an argument ----------------------------------------------------------

class Scaler(Y.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = Y.nn.Parameter(np.array([1.0, 2.0]))
        self.scale = 2.0

    def forward(self, x):
        return (self.w * x).sum() * self.scale


def _agree(c, fn, x):
    for _ in range(2):
        want = _call(fn, [x])
        got = _call(c, [x])
        assert _same(got[0], want[0]) and _same(got[1], want[1]), (got, want)


def test_rebound_attribute_and_replaced_parameter_are_seen():
    m = Scaler()
    fn = lambda x: m(x)  # noqa: E731
    c = Y.compile(fn)
    _agree(c, fn, [1.0, 1.0])
    m.scale = 3.0  # a rebound attribute
    _agree(c, fn, [1.0, 1.0])
    m.load_state_dict({"w": np.array([5.0, 7.0])})  # a parameter replaced
    _agree(c, fn, [1.0, 1.0])
    m.w = Y.nn.Parameter(np.array([-1.0, 1.0]))
    _agree(c, fn, [1.0, 1.0])
    assert float(c(Y.tensor([1.0, 1.0])).data) == 0.0


def test_changed_dict_and_list_items_and_closure_cells_are_seen():
    cfg = {"k": 2.0}
    items = [Y.tensor([1.0, 1.0])]
    shift = 0.0

    def fn(x):
        return (x * cfg["k"] + items[0]).sum() + shift

    c = Y.compile(fn)
    _agree(c, fn, [1.0, 2.0])
    cfg["k"] = 5.0
    _agree(c, fn, [1.0, 2.0])
    items[0] = Y.tensor([10.0, 10.0])
    _agree(c, fn, [1.0, 2.0])
    shift = 100.0  # noqa: F841  (rebinds the closure cell)
    _agree(c, fn, [1.0, 2.0])
    assert float(c(Y.tensor([1.0, 2.0])).data) == 5.0 * 3 + 20 + 100


def test_captured_arrays_mutated_and_derived_with_numpy_are_seen():
    a = np.array([1.0, 2.0])

    def fn(x):
        b = a / np.linalg.norm(a)  # derived with NumPy: a constant of the recording
        return (x * b).sum() + (x * a).sum()

    c = Y.compile(fn)
    _agree(c, fn, [1.0, 1.0])
    a[0] = -3.0  # in place
    _agree(c, fn, [1.0, 1.0])
    want = (1 * (-3.0) + 2.0) / np.hypot(3.0, 2.0) + (-3.0 + 2.0)
    assert float(c(Y.tensor([1.0, 1.0])).data) == want


class _Holder:
    def __init__(self):
        self.scale = 2.0

    def apply(self, x):
        return (x * self.scale).sum()


def _state_cases():
    """(name, fn, change): ``fn`` reads 2.0 from some state; ``change()`` makes it 3.0."""
    def default(x, k=(2.0,)):
        return (x * k[0]).sum()

    def set_default():
        default.__defaults__ = ((3.0,),)

    w = np.array([2.0])
    holder = _Holder()
    members = {2.0}
    nested = ([2.0],)
    cfg = {"k": 1.0}
    return [
        ("default argument", default, set_default),
        ("partial's argument", functools.partial(lambda w, x: (x * w).sum(), w),
         lambda: w.__setitem__(0, 3.0)),
        ("bound method's object", holder.apply, lambda: setattr(holder, "scale", 3.0)),
        ("set member", lambda x: (x * max(members)).sum(),
         lambda: (members.clear(), members.add(3.0))),
        ("list in a tuple", lambda x: (x * nested[0][0]).sum(),
         lambda: nested[0].__setitem__(0, 3.0)),
        ("dict entry added", lambda x: (x * cfg.get("j", 2.0) * cfg["k"]).sum(),
         lambda: cfg.__setitem__("j", 3.0)),
    ]


@pytest.mark.parametrize("case", _state_cases(), ids=lambda c: c[0])
def test_each_kind_of_outside_state_is_watched(case):
    _, fn, change = case
    c = Y.compile(fn)
    for want in (6.0, 9.0):
        for _ in range(2):  # recorded (and verified), then replayed
            _agree(c, fn, [1.0, 2.0])
        assert float(c(Y.tensor([1.0, 2.0], requires_grad=True)).data) == want
        change()
    assert c.stats == {"replayed": 6, "recorded": 4, "eager": 0}


def test_helpers_and_globals_of_the_module_are_seen():
    global FACTOR
    fn = _uses_helper
    c = Y.compile(fn)
    for factor in (2.0, 3.0, 2.0):
        FACTOR = factor
        _agree(c, fn, [1.0, 2.0])
    assert float(c(Y.tensor([1.0, 2.0])).data) == 6.0


FACTOR = 2.0


def _helper(x):
    return x * FACTOR


def _uses_helper(x):
    return _helper(x).sum()


def test_a_function_that_changes_its_own_state_runs_eagerly():
    calls = []

    def fn(x):
        calls.append(1)
        return x.sum() * len(calls)

    c = Y.compile(fn)
    with pytest.warns(CompileWarning, match="changes what it reads"):
        values = [float(c(Y.tensor([1.0])).data) for _ in range(4)]
    assert values == [1.0, 2.0, 3.0, 4.0]


# ---- in-place changes between a call and its backward ---------------------------------------

def test_in_place_change_before_backward_raises_as_eagerly():
    def fn(x, w, c):
        return (x * w * c).sum()

    outcomes = []
    for f in (fn, Y.compile(fn)):
        for _ in range(3):
            x = Y.tensor([1.0, 2.0])  # requires no grad, but the backward reads it
            w = Y.tensor([3.0, 4.0], requires_grad=True)
            out = f(x, w, Y.tensor([1.0, 1.0]))
            x.add_(1.0)
            with pytest.raises(RuntimeError, match="modified by an in-place operation"):
                out.backward()
        outcomes.append(True)
    cap = Y.tensor([1.0, 2.0])
    g = lambda w: (w * cap).sum()  # noqa: E731
    c = Y.compile(g)
    for _ in range(3):
        w = Y.tensor([3.0, 4.0], requires_grad=True)
        out = c(w)
        cap.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            out.backward()
    assert c.stats["replayed"] == 1


# ---- arrays handed to Python -----------------------------------------------------------------

def test_array_arguments_read_by_numpy_run_eagerly_and_flow_otherwise():
    def uses(x, a):
        return (x * a).sum()

    def reads(x, a):
        return (x * np.asarray(a, dtype=float).sum()).sum()

    def views(x, a):
        return (x * memoryview(a)[0]).sum()

    x = Y.tensor([1.0, 2.0])
    c = Y.compile(uses)
    for k in range(4):
        assert float(c(x, np.array([k, 1.0])).data) == k + 2
    assert c.stats["replayed"] == 2
    for fn in (reads, views):
        c = Y.compile(fn)
        with pytest.warns(CompileWarning):
            for k in range(3):
                a = np.array([k, 1.0])
                assert float(c(x, a).data) == float(fn(x, a).data)
        assert c.stats["replayed"] == 0


def test_isinstance_of_an_array_argument_is_as_in_eager_mode():
    def fn(x, a):
        return x * (2.0 if isinstance(a, np.ndarray) else 3.0)

    c = Y.compile(fn)
    for _ in range(3):
        assert float(c(Y.tensor([1.0]), np.ones(1)).data[0]) == 2.0


def test_gradients_returned_inside_are_watched():
    def fn(x):
        (g,) = Y.autograd.grad((x ** 3).sum(), x)
        return g

    def computes(x):
        (g,) = Y.autograd.grad((x ** 3).sum(), x)
        return x * float(np.sum(g))

    c = Y.compile(fn)
    for k in range(4):
        x = Y.tensor([1.0 + k, 2.0], requires_grad=True)
        np.testing.assert_array_equal(c(x), 3 * x.data ** 2)
    assert c.stats["replayed"] == 2
    c = Y.compile(computes)
    with pytest.warns(CompileWarning):
        for k in range(3):
            x = Y.tensor([1.0 + k, 2.0], requires_grad=True)
            np.testing.assert_array_equal(c(x).data, computes(x).data)


def test_custom_function_inside_runs_eagerly():
    class Cube(Y.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    check(lambda x: Cube.apply(x).sum(), [[1.0, 2.0]], [[[3.0, -1.0]]], replay=False)


# ---- the code: one private field, read by the machinery only --------------------------------

SRC = pathlib.Path(yaad.__file__).parent
# The op call, the engine, the tensor (with its array face) and its methods, the
# transforms' conversions, vmap's batching mode and compile's own code move values
# without deciding anything from them: they read _data. Everything else (ops, rules, nn,
# optim, linalg) reads values through the public points, which a recording sees.
PRIVATE_OK = {"core/tensor.py", "core/presentation.py", "core/op.py", "core/levels.py",
              "core/views.py", "modes/forward.py", "core/engine.py", "core/gradients.py",
              "bindings/tensor_methods.py", "func.py", "modes/batched_values.py",
              "modes/batch.py", "bindings/numpy_protocols.py", "compile.py", "compiled"}


def test_only_the_machinery_reads_the_private_value():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.as_posix() in PRIVATE_OK or rel.parts[0] in PRIVATE_OK:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "_data":
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, offenders


def _written_in_place(x, v):
    y = x * 1
    y[:] = v * 2
    return (y * y).sum()


def _written_through_a_view(x, v):
    y = x * 1
    y[1:] *= v[1:]
    return (y * x).sum()


@pytest.mark.parametrize("fn, expected", [
    # d/dx sum((2v)^2) = 0, d/dv = 8v
    (_written_in_place, ([0.0, 0.0], [24.0, 32.0])),
    # y = [x0, x1 v1]: loss = x0^2 + x1^2 v1; d/dx = [2 x0, 2 x1 v1], d/dv = [0, x1^2]
    (_written_through_a_view, ([2.0, 16.0], [0.0, 4.0])),
])
def test_a_backward_after_an_in_place_change_while_recording_is_the_engines(fn, expected):
    """The recording call itself must not use slots from before the in-place change."""
    f = yaad.func.value_and_grad(fn, argnums=(0, 1))
    c = yaad.compile(f)
    x, v = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.warns(CompileWarning, match="in-place"):
        first = c(x, v)
    for value, grads in (first, c(x, v), f(x, v)):
        assert value == pytest.approx(float(fn(yaad.tensor(x), yaad.tensor(v))))
        np.testing.assert_array_equal(grads[0], expected[0])
        np.testing.assert_array_equal(grads[1], expected[1])


# ---- a transform's 0-d results follow the new values --------------------------------------
# A 0-d result is held as a NumPy scalar; the tensor a transform made from it was read as a
# constant of the recording, so a compiled VJP recorded (twice) with an all-zero cotangent
# replayed the h-gradient 0 for every later cotangent (found on a Dormand-Prince step).

_DP_A = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9]]


def _lotka_volterra(stack, y, p):
    return stack([p[0] * y[0] - p[1] * y[0] * y[1], p[3] * y[0] * y[1] - p[2] * y[1]])


def _stages(stack, y, h, p, k1):
    """The first four stages of a Dormand-Prince step of Lotka-Volterra, stacked."""
    K = [k1]
    for row in _DP_A[1:]:
        acc = row[0] * K[0]
        for a, k in zip(row[1:], K[1:]):
            acc = acc + a * k
        K.append(_lotka_volterra(stack, y + h * acc, p))
    return stack(K)


def _step_vjp(y, h, p, k1, kb):
    _, back = Y.func.vjp(lambda y, h, p: _stages(Y.stack, y, h, p, k1), y, h, p)
    return back(kb)


def _torch_step_vjp(y, h, p, k1, kb):
    import torch

    y, h, p = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (y, h, p))
    out = _stages(torch.stack, y, h, p, torch.tensor(k1))
    return [g.numpy() for g in torch.autograd.grad(out, (y, h, p), torch.tensor(kb))]


@pytest.mark.parametrize("first", ["zeros", "negative zeros", "ones"])
def test_a_compiled_vjp_follows_the_cotangent_into_a_zero_d_gradient(first):
    y, h, p, k1 = np.array([1.0, 1.0]), np.array(0.1), np.array([1.5, 1, 3, 1.0]), np.ones(2)
    rng = np.random.default_rng(0)
    start = {"zeros": np.zeros((4, 2)), "negative zeros": np.full((4, 2), -0.0),
             "ones": np.ones((4, 2))}[first]
    cots = [start, start, np.ones((4, 2)), np.zeros((4, 2)), rng.standard_normal((4, 2)),
            np.where(rng.random((4, 2)) < 0.5, 0.0, rng.standard_normal((4, 2)))]
    c = Y.compile(_step_vjp)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for kb in cots:
            got = c(*(Y.tensor(a) for a in (y, h, p, k1, kb)))
            want = _torch_step_vjp(y, h, p, k1, kb)
            eager = _step_vjp(*(Y.tensor(a) for a in (y, h, p, k1, kb)))
            for g, w, e in zip(got, want, eager):
                assert g.shape == w.shape and g.dtype == w.dtype == np.float64
                np.testing.assert_allclose(g.data, w, rtol=1e-13, atol=1e-15)
                np.testing.assert_allclose(g.data, e.data, rtol=1e-14, atol=1e-15)
    assert c.stats["eager"] == 0 and c.stats["replayed"] >= 3


@pytest.mark.parametrize("how", ["func.grad", "func.vjp", "value_and_grad"])
def test_a_transforms_zero_d_tensor_result_is_a_value_of_the_recording(how):
    def fn(x, h):
        if how == "func.grad":
            g = Y.func.grad(lambda h: (h * h * x).sum())(h)
        elif how == "func.vjp":
            g = Y.func.vjp(lambda h: h * h * x, h)[1](x * 0.0 + 1.0)[0]
        else:
            g = Y.func.value_and_grad(lambda h: (h * h * x).sum())(h)[1]
        return g * 2.0

    c = Y.compile(fn)
    for v in (0.0, 0.0, 1.0, -0.0, 2.5):
        x = Y.tensor([1.0, v])
        got = c(x, Y.tensor(0.3))
        assert got.shape == () and got.dtype == np.float64
        assert float(got.data) == 4 * 0.3 * (1.0 + v)  # d/dh sum(h^2 x) = 2 h sum(x)
    assert c.stats == {"replayed": 3, "recorded": 2, "eager": 0}


# ---- a backward pass inside vmap (jacrev, vmap of jacrev) --------------------------------
# The recorded backward called the rules on the values as the recording holds them, with
# vmap's batch axes, where eager mode hands them one example's: reshape's rule
# (reshape(g, a.shape)) crashed with "cannot reshape array of size 16 into shape (2,2,2)"
# on vmap(jacrev(field)) of a Lotka-Volterra field flattened by .reshape(-1), and on
# jacrev(field) alone. Such a backward runs eagerly, with a CompileWarning.

_LV = np.array([1.5, 1.0, 3.0, 1.0])


def _lv_field(y, t, p):
    return Y.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                    p[3] * y[0] * y[1] - p[2] * y[1]]).reshape(-1) * (1.0 + 0.0 * t)


def _lv_jacobian(y):
    """The analytic Jacobian d field / d y at the states ``y`` (..., 2)."""
    a, b, c, d = _LV
    u, v = y[..., 0], y[..., 1]
    return np.stack([np.stack([a - b * v, -b * u], -1), np.stack([d * v, d * u - c], -1)], -2)


def _lv_blocks(ys, ts, p):
    jac = Y.func.vmap(Y.func.jacrev(_lv_field, argnums=(0, 2)), in_dims=(0, 0, None))
    jy, jp = jac(ys, ts, p)
    return Y.sum(jy * jy) + Y.sum(jp), jy


def _lv_single(y, p):
    return Y.func.jacrev(_lv_field)(y, 0.0, p)


@pytest.mark.parametrize("case", ["vmap of jacrev", "jacrev"])
def test_a_backward_inside_vmap_runs_eagerly_with_the_eager_values(case):
    rng = np.random.default_rng(7)
    p = Y.tensor(_LV)
    fn = _lv_blocks if case == "vmap of jacrev" else _lv_single
    c = Y.compile(fn)
    sizes = [3, 3, 5, 1246] if case == "vmap of jacrev" else [None] * 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in sizes:  # new values each call, and new batch sizes
            y = rng.uniform(0.5, 2.0, (n, 2) if n else 2)
            if n:
                ts = Y.tensor(rng.uniform(0.0, 1.0, n))
                xs = [Y.tensor(y.copy(), requires_grad=True) for _ in range(2)]
                (loss, jy), (want, wjy) = c(xs[0], ts, p), fn(xs[1], ts, p)
                np.testing.assert_array_equal(jy.data, wjy.data)
                assert jy.shape == (n, 2, 2) and jy.dtype == np.float64
                np.testing.assert_allclose(jy.data, _lv_jacobian(y), rtol=1e-14, atol=1e-14)
                np.testing.assert_array_equal(loss.data, want.data)
                loss.backward()
                want.backward()
                # d/dy of sum(J * J) + sum(J_p), J_p = [[u, -uv, 0, 0], [0, 0, -v, uv]]
                # (sum u - v): the analytic oracle
                a, b, cc, d = _LV
                u, v = y[:, 0], y[:, 1]
                g = np.stack([2 * b * b * u + 2 * d * (d * u - cc) + 1.0,
                              2 * b * (b * v - a) + 2 * d * d * v - 1.0], -1)
                np.testing.assert_allclose(xs[0].grad, g, rtol=1e-13)
                np.testing.assert_allclose(xs[0].grad, xs[1].grad, rtol=0, atol=0)
            else:
                got = c(Y.tensor(y), p)
                assert got.shape == (2, 2) and got.dtype == np.float64
                np.testing.assert_allclose(got.data, _lv_jacobian(y), rtol=1e-14, atol=1e-14)
    warned = [w for w in caught if issubclass(w.category, CompileWarning)]
    assert warned and "backward pass inside vmap" in str(warned[0].message)
    assert c.stats["replayed"] == 0
