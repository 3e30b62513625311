"""The op call's specialised one- and two-input paths build the node the general path builds.

``op.py`` records most calls through paths specialised by hand for one and two tensor
inputs, for one tensor input with more arguments that are not tensors (an index, a
shape: ``_call_first``), and for variadic ops (einsum's contractions, stack, concatenate:
``_call_variadic``) (the per-op overhead of benchmarks W3, W8 and W9), beside the
general ``op.apply``. For
every op of yaad that those paths serve, each call drawn from the op-case table runs both
ways, with every mix of tensor and plain operands: the outputs, the recorded nodes (field
by field) and the gradients of a random cotangent must be the same.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yaad
from tests.op_cases import CASES, Call, builtin_ops
from yaad.core.graph import Node, ShapeDtype
from yaad.core.op import _fast_arity, apply, registry

FAST = sorted(name for name, spec in builtin_ops().items() if _fast_arity(spec))
RAN: set = set()  # ops whose comparison ran (all, unless tests were deselected)
COMPARED: set = set()  # ops for which a call recorded a node on both paths
REFUSED: set = set()  # ops for which a call of the specialised arity raised on both paths
STATIC: set = set()  # ops of one input compared on calls with more arguments (_call_first)
# Ops whose NumPy/SciPy computation is not bit-reproducible from one call to the next:
# SciPy's logm picks its number of square roots from onenormest, a randomized estimate,
# so two calls on the same matrix may round differently (4 of 100 random 12x12 complex
# blocks did). Their outputs and gradients are compared to rounding, not bit for bit.
UNREPRODUCIBLE = {"linalg.logm"}


class _Recorder:
    """Stands as ``state.tracer`` (compile tracing's mode) to collect the op calls that a
    public function makes, so that ops reached only through a wrapper are covered too."""

    def __init__(self) -> None:
        self.calls: list = []

    def apply(self, spec, args, kw):
        self.calls.append((spec, args, kw))
        st_ = yaad.core.grad_mode.state
        prev = st_.tracer
        st_.tracer = None
        st_.refresh()
        try:
            return apply(spec, args, kw)
        finally:
            st_.tracer = prev
            st_.refresh()

    def read(self, tensor, what):
        pass


def _direct_cases() -> dict[str, list[str]]:
    """Op name -> the keys of the cases that call the op itself, positionally."""
    found: dict[str, list[str]] = {}
    for key, case in CASES.items():
        try:
            spec = getattr(case.fn, "op", None)
        except AttributeError:
            continue
        if spec is not None and case.call is None:
            found.setdefault(spec.name, []).append(key)
    return found


DIRECT = _direct_cases()


def _cases_reaching(name: str) -> list[str]:
    """Cases of wrappers around the op (``covers``, or any case when none says so)."""
    keys = [k for k, c in CASES.items() if name in c.covers or c.path.endswith(name)]
    return keys or sorted(CASES)


def _same_value(a, b, what: str) -> None:
    if a is None or b is None:
        assert a is None and b is None, what
    elif isinstance(a, ShapeDtype) or isinstance(b, ShapeDtype):
        assert isinstance(a, ShapeDtype) and isinstance(b, ShapeDtype), what
        assert (a.shape, a.dtype) == (b.shape, b.dtype), what
    elif isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        assert type(a) is type(b) and a.dtype == b.dtype, what
        np.testing.assert_array_equal(a, b, err_msg=what, strict=True)
    else:
        assert type(a) is type(b) and (a is b or a == b), what


def _same_node(fast: Node | None, general: Node | None, name: str) -> None:
    if fast is None or general is None:
        assert fast is None and general is None, f"{name}: a node on one path only"
        return
    assert fast.op is general.op, name
    assert len(fast.args) == len(general.args), name
    for k, (a, b) in enumerate(zip(fast.args, general.args)):
        _same_value(a, b, f"{name}: saved input {k}")
    assert fast.kw == general.kw, name
    _same_value(fast.ans, general.ans, f"{name}: saved output")
    assert len(fast.parents) == len(general.parents) and all(
        a is b for a, b in zip(fast.parents, general.parents)), f"{name}: parents"
    assert fast.epoch == general.epoch, name
    assert fast.extra is None and general.extra is None, name
    assert fast.visit == general.visit == 0, name


def _inputs(args: tuple, mix: tuple) -> tuple:
    """``args`` with the arrays in ``mix`` positions made tensors ("grad": requiring grad
    when floating point, "const": not requiring grad, "plain": left an array)."""
    out = []
    for a, how in zip(args, mix):
        if how == "plain" or not isinstance(a, np.ndarray):
            out.append(a)
        else:
            out.append(yaad.tensor(a, requires_grad=how == "grad" and a.dtype.kind in "fc"))
    return tuple(out)


def _run(fn, *args):
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001  (both paths must refuse alike)
        return None, type(e)


def _gradients(out, inputs: tuple, cotangent) -> list:
    wanted = [t for t in inputs if isinstance(t, yaad.Tensor) and t.requires_grad]
    if not wanted or not out.requires_grad:
        return []
    return yaad.autograd.grad(out, wanted, cotangent, allow_unused=True)


def check_paths(spec, args: tuple, rng: np.random.Generator, kw: dict | None = None) -> int:
    """Run ``spec`` on ``args`` (and keywords ``kw``) both ways for each mix of operands;
    the number of mixes that recorded a node."""
    kw = kw or {}
    recorded = 0
    hows = [("grad", "const", "plain") if isinstance(a, np.ndarray) else ("plain",)
            for a in args]
    for mix in itertools.product(*hows):
        if not any(isinstance(a, np.ndarray) and how != "plain" for a, how in zip(args, mix)):
            continue  # no tensor: plain NumPy, no path to compare
        inputs = _inputs(args, mix)
        fast, fast_error = _run(lambda *a: spec.fn(*a, **kw), *inputs)
        general, general_error = _run(apply, spec, inputs, dict(kw))
        where = f"{spec.name} on {mix}"
        assert fast_error == general_error, f"{where}: {fast_error} vs {general_error}"
        if fast_error is not None:
            REFUSED.add(spec.name)
            continue
        assert type(fast) is type(general), where
        same = _same_gradient if spec.name in UNREPRODUCIBLE else _same_value
        same(fast._data, general._data, f"{where}: output")
        assert fast.requires_grad == general.requires_grad, where
        assert (getattr(fast, "_base", None) is None) == (
            getattr(general, "_base", None) is None), f"{where}: view noted on one path"
        _same_node(fast._node, general._node, where)
        if fast._node is None:
            continue
        recorded += 1
        data = fast._data
        cot = rng.standard_normal(data.shape)
        if data.dtype.kind == "c":
            cot = cot + 1j * rng.standard_normal(data.shape)
        cot = cot.astype(data.dtype)
        with np.errstate(all="ignore"):
            g_fast = _gradients(fast, inputs, cot)
            g_general = _gradients(general, inputs, cot)
        for k, (a, b) in enumerate(zip(g_fast, g_general)):
            same(a, b, f"{where}: gradient {k}")
        # The engine runs a node's rules in its loop (the common case) or through
        # gradients.node_gradients (hooks, several outputs, create_graph, ...): a hook on
        # the output sends the same node the second way.
        hooked = spec.fn(*inputs, **kw)
        hooked.register_hook(lambda g: None)
        with np.errstate(all="ignore"):
            g_hooked = _gradients(hooked, inputs, cot)
        assert len(g_hooked) == len(g_fast), where
        for k, (a, b) in enumerate(zip(g_fast, g_hooked)):
            _same_gradient(a, b, f"{where}: gradient {k}, engine loop vs node_gradients")
    return recorded


def _same_gradient(a, b, what: str) -> None:
    """Equal shapes, dtypes and values up to rounding (the loop may use an op's NumPy
    derivative where node_gradients calls its VJP rule written with yaad functions)."""
    if a is None or b is None:
        assert a is None and b is None, what
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, what
    tol = 1e-5 if a.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def _calls_of(name: str, data) -> list:
    """Calls of op ``name`` drawn from the case table: the op's own case, else the calls
    that the cases of its wrappers make of it."""
    spec = registry[name]
    arity = _fast_arity(spec)
    if name in DIRECT:
        case = CASES[data.draw(st.sampled_from(sorted(DIRECT[name])))]
        dtype = data.draw(st.sampled_from(case.dtypes))
        call: Call = case.draw(data, dtype)
        # (a call with keyword arguments takes the general path: the first ``arity``
        # arguments alone, when valid, take the specialised one; an op of one input
        # called with more positional arguments takes _call_first)
        return _with_static(call.args, arity, bool(call.kwargs))
    calls = []
    for key in _cases_reaching(name):
        case = CASES[key]
        dtype = data.draw(st.sampled_from(case.dtypes))
        call = case.draw(data, dtype)
        recorder = _Recorder()
        state = yaad.core.grad_mode.state
        prev = state.tracer
        state.tracer = recorder
        state.refresh()
        try:
            with np.errstate(all="ignore"):
                case.fn(*[yaad.tensor(a) if isinstance(a, np.ndarray) else a
                          for a in call.args], **call.kwargs)
        except Exception:  # noqa: BLE001  (a call the wrapper refuses: no op call to take)
            pass
        finally:
            state.tracer = prev
            state.refresh()
        calls += [c for spec_, args, kw in recorder.calls if spec_ is spec
                  for c in _with_static(tuple(a._data if isinstance(a, yaad.Tensor) else a
                                              for a in args), arity, bool(kw))]
        if calls:
            break
    # (an op called only inside rules, as repeat's VJP calls repeat_sum: a plain vector)
    return calls or [tuple(np.linspace(0.5, 1.5, 3) for _ in range(arity))]


def _with_static(args: tuple, arity: int, keywords: bool) -> list:
    """The calls to compare for a call with positional ``args``: its first ``arity``
    arguments (the specialised arity), and, for an op of one input called with more
    positional arguments and no keywords, the whole call (``_call_first``)."""
    calls = [args[:arity]] if len(args) >= arity else []
    if arity == 1 and len(args) > 1 and not keywords:
        calls.append(args)
    return calls


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning",
                            "ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("name", FAST)
@settings(max_examples=3, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_specialised_paths_build_the_general_node(name, data):
    spec = registry[name]
    rng = np.random.default_rng(0)
    RAN.add(name)
    for args in _calls_of(name, data):
        if check_paths(spec, args, rng):
            COMPARED.add(name)
            if len(args) > _fast_arity(spec):
                STATIC.add(name)


def test_the_comparison_sees_a_difference():
    """A node that differs from the general one in a saved input fails the check."""
    x = yaad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    fast = yaad.sin(x)._node
    general = apply(yaad.sin.op, (x,), {})._node
    _same_node(fast, general, "sin")
    general.args = (np.array([1.0, 2.5]),)
    with pytest.raises(AssertionError):
        _same_node(fast, general, "sin")


def test_zz_every_specialised_op_was_compared():
    """Each op with a specialised path had a call that recorded a node (so the check above
    is not vacuous), from its own case or from a wrapper whose case calls it; or its
    specialised path takes no valid call (``reshape(x)`` without a shape: the declared
    rules are fewer than the arguments every call needs)."""
    missing = sorted(RAN - COMPARED - REFUSED)
    assert missing == [], f"ops with a specialised path but no node compared: {missing}"


def test_zz_calls_with_more_arguments_were_compared():
    """The one-input ops that take an index, a shape or axes were compared on such calls
    (``_call_first``), not only on calls of their one input."""
    if len(RAN) < len(FAST):
        pytest.skip("the comparisons were deselected")
    assert {"getitem", "reshape", "transpose", "moveaxis"} <= STATIC, sorted(STATIC)


def _variadic_calls() -> list:
    rng = np.random.default_rng(3)
    r = lambda *shape: rng.standard_normal(shape)
    c = lambda *shape: r(*shape) + 1j * r(*shape)
    return [
        ("einsum", ("ij,jk->ik", r(3, 4), r(4, 5)), {}),
        ("einsum", ("Zc,abc->abZ", c(2, 2), c(2, 2, 2)), {}),  # W9's gates
        ("einsum", ("ii->i", r(3, 3)), {}),  # a view of the operand
        ("einsum", ("i,i->", r(4).astype(np.float32), r(4).astype(np.float32)), {}),
        ("einsum", ("ij,jk,kl->il", r(2, 3), c(3, 4), r(4, 2)), {}),
        ("einsum", ("ij,j->i", np.arange(6).reshape(2, 3), np.arange(3)), {}),  # integers
        ("stack", (r(2, 3), c(2, 3)), {"axis": 1}),
        ("stack", (r(3), r(3)), {}),
        ("concatenate", (r(2, 3), r(1, 3)), {"axis": 0}),
        ("concatenate", (r(2, 3), r(2, 1)), {"axis": 1, "dtype": None}),
        ("stack", (r(2), r(3)), {}),  # refused alike
    ]


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("call", _variadic_calls(), ids=lambda c: f"{c[0]}-{c[1][0]}"
                         if isinstance(c[1][0], str) else c[0])
def test_variadic_path_builds_the_general_node(call):
    """Variadic ops of one output (``_call_variadic``) build the node, the output (a view
    where NumPy's is one) and the gradients ``apply`` does, keywords included."""
    name, args, kw = call
    spec = registry[name]
    assert spec.variadic and spec.nout == 1
    recorded = check_paths(spec, args, np.random.default_rng(0), kw)
    floating = all(not isinstance(a, np.ndarray) or a.dtype.kind in "fc" for a in args)
    refused = name == "stack" and args[0].shape != args[1].shape
    assert (recorded > 0) == (floating and not refused), name


def test_variadic_path_notes_views():
    """A contraction that NumPy returns as a view of its operand (a diagonal) is a view
    of the tensor on the variadic path too: an in-place change of the base is seen."""
    x = yaad.tensor(np.arange(9.0).reshape(3, 3))
    d = yaad.einsum("ii->i", x)
    assert np.shares_memory(d._data, x._data)
    x[1, 1] = 40.0
    np.testing.assert_array_equal(d.numpy(), [0.0, 40.0, 8.0])
