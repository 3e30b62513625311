"""yaad.compile and every way a tensor's value reaches Python (design decision 14).

A value leaves a tensor for Python through a protocol: ``float()``, ``__index__`` (in a
slice, a shape, an axis, a count), ``copy``/``pickle``, iteration, printing, the buffer
and array protocols. Each goes through one gate that a recording sees: a guard (the
replay computes it again and follows the recorded path only for the same bits), a tape
value (the replay passes the new value to the op), or an eager fall-back with a
``CompileWarning`` naming the line. Each case is recorded on one input (twice: recording,
verifying) and replayed on inputs that change what Python reads; value and gradients must
be eager yaad's (itself tested against PyTorch), and, where short, NumPy's.
"""

from __future__ import annotations

import copy
import functools
import pickle
import warnings

import numpy as np
import pytest

import yaad as Y
from yaad import CompileWarning


def _leaf(a):
    a = np.asarray(a)
    return Y.tensor(a, requires_grad=a.dtype.kind == "f")


def _run(fn, arrays):
    """Value and gradients of ``fn`` on fresh tensors (the float ones require grad), or
    the exception's type."""
    xs = [_leaf(a) for a in arrays]
    try:
        out = fn(*xs)
        value = np.array(out.data if isinstance(out, Y.Tensor) else out)
        grads = None
        if isinstance(out, Y.Tensor) and out.requires_grad:
            Y.sum(out * np.linspace(1.0, 2.0, out.size).reshape(out.shape)).backward()
            grads = [None if x.grad is None else np.array(x.grad) for x in xs]
    except Exception as e:
        return ("raise", type(e)), None
    return value, grads


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    if a is None or b is None:
        return a is b
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def check(fn, recorded, replays, numpy=None):
    """``compile(fn)`` gives eager yaad's value and gradients on ``recorded`` (twice) and
    on each of ``replays``; ``numpy(*arrays)``, when given, is the value's second oracle.
    A call that does not replay must warn. Returns the compiled function."""
    c = Y.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for arrays in [recorded, recorded, *replays]:
            want = _run(fn, arrays)
            got = _run(c, arrays)
            assert _same(got[0], want[0]), (arrays, got[0], want[0])
            assert _same(got[1], want[1]), (arrays, got[1], want[1])
            if numpy is not None:
                np.testing.assert_array_equal(got[0], numpy(*arrays))
    if c.stats["eager"]:
        assert any(issubclass(w.category, CompileWarning) for w in caught), c.stats
    return c


# ---- a 0-d integer tensor where NumPy reads a Python integer -----------------------------------

X12 = np.arange(12.0) - 4.5
X33 = np.arange(9.0).reshape(3, 3) ** 1.5
I = [np.array(k) for k in range(5)]

# name: (fn(x, i), x, recorded i, replayed i's, NumPy's value)
INTEGER_ARGS = {
    "slice stop from argmax": (lambda x, i: x[:Y.argmax(x * i) + 1], np.array([1.0, 5, 2, 0]),
                               I[1], [I[1], -I[1], I[0]],
                               lambda x, i: x[:np.argmax(x * i) + 1]),
    "slice start": (lambda x, i: x[i:], X12, I[1], [I[3], I[0]], lambda x, i: x[int(i):]),
    "slice step": (lambda x, i: x[::i], X12, I[1], [I[2], I[3]], lambda x, i: x[::int(i)]),
    "slice in a tuple": (lambda x, i: x[1:i, i:], X33, I[2], [I[3], I[1]],
                         lambda x, i: x[1:int(i), int(i):]),
    "reshape": (lambda x, i: Y.reshape(x, (i, -1)), X12, I[2], [I[3], I[4]],
                lambda x, i: x.reshape(int(i), -1)),
    "reshape method": (lambda x, i: x.reshape(i, -1) * 1.0, X12, I[2], [I[3], I[4]],
                       lambda x, i: x.reshape(int(i), -1)),
    "broadcast_to": (lambda x, i: Y.broadcast_to(x[:3], (i, 3)), X12, I[2], [I[3], I[1]],
                     lambda x, i: np.broadcast_to(x[:3], (int(i), 3))),
    "expand_dims": (lambda x, i: Y.expand_dims(x, i), X33, I[0], [I[2], I[1]],
                    lambda x, i: np.expand_dims(x, int(i))),
    "sum axis": (lambda x, i: Y.sum(x, axis=i), X33, I[0], [I[1]],
                 lambda x, i: np.sum(x, axis=int(i))),
    # the same shape for every axis: only the values tell the recordings apart
    "cumsum axis": (lambda x, i: Y.cumsum(x, axis=i), X33, I[0], [I[1], I[0]],
                    lambda x, i: np.cumsum(x, axis=int(i))),
    "transpose axes": (lambda x, i: Y.transpose(x, (i, 1 - i)), X33, I[0], [I[1]],
                       lambda x, i: np.transpose(x, (int(i), 1 - int(i)))),
    "tril k": (lambda x, i: Y.tril(x, k=i - 1), X33, I[0], [I[1], I[2]],
               lambda x, i: np.tril(x, k=int(i) - 1)),
    "roll count": (lambda x, i: Y.roll(x, i), X12, I[1], [I[3], I[0]],
                   lambda x, i: np.roll(x, int(i))),
    "repeat count": (lambda x, i: Y.repeat(x, i), X12[:3], I[1], [I[2], I[0]],
                     lambda x, i: np.repeat(x, int(i))),
    "tile count": (lambda x, i: Y.tile(x, i), X12[:3], I[1], [I[2], I[3]],
                   lambda x, i: np.tile(x, int(i))),
    "diff n": (lambda x, i: Y.diff(x, n=i), X12 ** 2, I[1], [I[2], I[3]],
               lambda x, i: np.diff(x, n=int(i))),
    "moveaxis": (lambda x, i: Y.moveaxis(x, i, 0), X33[:2], I[0], [I[1]],
                 lambda x, i: np.moveaxis(x, int(i), 0)),
    "python list index": (lambda x, i: [x, x * 2, x * 3][i], X12, I[0], [I[2], I[1]],
                          lambda x, i: x * (int(i) + 1)),
    "range count": (lambda x, i: sum((x * k for k in range(i)), x), X12, I[1], [I[3]],
                    lambda x, i: x * (1 + sum(range(int(i))))),
}


@pytest.mark.parametrize("name", list(INTEGER_ARGS))
def test_an_integer_tensor_read_as_a_python_integer_is_decided_again(name):
    fn, x, recorded, replays, numpy = INTEGER_ARGS[name]
    check(fn, [x, recorded], [[x, i] for i in replays], numpy)


def test_each_integer_read_is_a_path_of_its_own_kept_for_later_calls():
    c = Y.compile(lambda x, i: Y.sum(x[i:] * 2.0))
    x = Y.tensor(X12)
    for k in (1, 1, 2, 2, 1, 2, 1):
        assert float(c(x, Y.tensor(np.array(k)))) == 2.0 * X12[k:].sum()
    assert c.stats == {"replayed": 3, "recorded": 4, "eager": 0}


# ---- copies: copy.copy shares the value (recorded), deepcopy and pickle hand it out -------

def _pickled(t):
    return pickle.loads(pickle.dumps(t))


COPIES = {
    # (a new leaf sharing x's data: its gradient goes nowhere the caller sees)
    "copy.copy of a leaf": (lambda x: copy.copy(x) * 2, True),
    "a new leaf made inside": (lambda x: x.detach().requires_grad_() * 2, True),
    "copy.copy of a result": (lambda x: copy.copy(x * 3) * 2, True),
    "copy.deepcopy": (lambda x: copy.deepcopy(x.detach()) * x, False),
    "copy.deepcopy of a result": (lambda x: copy.deepcopy((x * 3).detach()) * x, False),
    "pickle round trip": (lambda x: _pickled(x.detach()) * x, False),
    "__getstate__": (lambda x: x * x.__getstate__()[1]["_data"][0], False),
    "__reduce_ex__": (lambda x: x * x.detach().__reduce_ex__(4)[2][1]["_data"][0], False),
}


@pytest.mark.parametrize("name", list(COPIES))
def test_copies_are_recorded_or_run_eagerly(name):
    fn, replays = COPIES[name]
    a, b = np.array([1.0, 5, 2]), np.array([-3.0, 0.5, 7])
    c = check(fn, [a], [[b], [a]], numpy=None)
    if replays:
        assert c.stats["replayed"] >= 1 and c.stats["eager"] == 0, c.stats
    else:
        assert c.stats["replayed"] == 0 and c.stats["eager"] >= 1, c.stats


# ---- state reached through the class of an object ---------------------------------------

class Scaled:
    scale = 2.0
    table = {"shift": 1.0}

    def __call__(self, x):
        return x * self.scale + self.table["shift"]


class Scaled3(Scaled):
    pass


def test_class_attributes_read_through_an_instance_are_watched():
    m = Scaled3()
    c = Y.compile(m)
    x = Y.tensor([1.0, 2.0])
    changes = [lambda: setattr(Scaled, "scale", 3.0),  # on the base class
               lambda: Scaled.table.update(shift=5.0),  # an item of a class attribute
               lambda: setattr(Scaled3, "scale", 7.0),  # shadowing the base's
               lambda: setattr(m, "__class__", Scaled)]  # another class
    try:
        for change in [lambda: None, *changes]:
            change()
            for _ in range(3):
                np.testing.assert_array_equal(c(x).data, m(x).data)
    finally:
        Scaled.scale, Scaled.table = 2.0, {"shift": 1.0}
    assert c.stats["replayed"] >= 5 and c.stats["eager"] == 0, c.stats


def test_attributes_of_a_class_named_by_the_function_are_watched():
    c = Y.compile(lambda x: x * Scaled.scale)
    x = Y.tensor([1.0, 2.0])
    try:
        for value in (2.0, 2.0, 4.0, 4.0):
            Scaled.scale = value
            np.testing.assert_array_equal(c(x).data, [value, 2 * value])
    finally:
        Scaled.scale = 2.0


def _scaled_by_class(x):
    return x * Scaled.scale


# Where a function that reads a class attribute may be kept (the compile fuzzer keeps its
# steps as (description, lambda) tuples in a list): each is walked by the state check.
HOLDERS = {
    "a lambda in a tuple in a list": lambda: [("step", lambda x: x * Scaled.scale)],
    "a helper in a tuple": lambda: ("step", _scaled_by_class),
    "a helper in a frozenset": lambda: frozenset([_scaled_by_class]),
    "a helper in a set": lambda: {_scaled_by_class},
    "a partial's arguments": lambda: functools.partial(lambda fs, x: fs[0](x),
                                                       (_scaled_by_class,)),
}


@pytest.mark.parametrize("name", list(HOLDERS))
def test_a_class_attribute_read_by_a_function_kept_in_a_container_is_watched(name):
    held = HOLDERS[name]()

    def fn(x):
        if isinstance(held, functools.partial):
            return held(x)
        step = next(iter(held))
        f = step[1] if isinstance(step, tuple) else step
        if isinstance(held, tuple):
            f = held[1]
        return f(x)

    c = Y.compile(fn)
    x = Y.tensor([1.0, 2.0])
    try:
        for value in (2.0, 2.0, -0.5, -0.5, 3.0, 2.0):
            Scaled.scale = value
            np.testing.assert_array_equal(c(x).data, [value, 2 * value])
    finally:
        Scaled.scale = 2.0


# ---- a tensor without an array value -------------------------------------------------------

def test_a_sparse_tensor_argument_or_closure_is_an_object_of_the_state():
    sp = pytest.importorskip("scipy.sparse")
    h = sp.random(5, 5, density=0.4, random_state=0, format="csr")
    H = Y.sparse.asarray(h)
    x = np.linspace(-1.0, 1.0, 5)
    closure = Y.compile(lambda v: Y.sum((H @ v) ** 2))
    argument = Y.compile(lambda A, v: Y.sum((A @ v) ** 2))
    for k in range(6):
        if k == 3:
            h.data *= 2.0  # in place: seen by the state check (an array, by its bits)
        want = np.sum((h @ x) ** 2)
        for c, args in ((closure, ()), (argument, (H,))):
            v = Y.tensor(x, requires_grad=True)
            out = c(*args, v)
            out.backward()
            np.testing.assert_allclose(float(out), want, rtol=1e-13)
            np.testing.assert_allclose(v.grad, 2 * h.T @ (h @ x), rtol=1e-13)
    assert closure.stats["replayed"] == 2 and argument.stats["replayed"] == 2


# ---- the warnings filters and NumPy's error state decide which branch runs ------------------

def _log_or_seven(x):
    try:
        return Y.log(x) * 1.0
    except (RuntimeWarning, FloatingPointError):
        return x * 0.0 + 7.0


def _inside_filter(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return _log_or_seven(x)


def _inside_errstate(x):
    with np.errstate(invalid="raise", divide="raise"):
        return _log_or_seven(x)


POS, NEG = np.array([1.0, 2.0]), np.array([-1.0, 2.0])


@pytest.mark.parametrize("fn", [_inside_filter, _inside_errstate])
def test_a_filter_or_error_state_set_inside_decides_as_in_eager_mode(fn):
    c = Y.compile(fn)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for x in (POS, POS, NEG, POS, NEG):
            np.testing.assert_array_equal(c(Y.tensor(x)).data, fn(Y.tensor(x)).data)


@pytest.mark.parametrize("fn", [_inside_filter, _inside_errstate])
def test_a_filter_or_error_state_set_inside_decides_on_another_librarys_arrays(fn):
    # The replay on another library's arrays called each op outside the state the function
    # set (log(0) gave -inf where eager mode took the except branch: 7).
    import array_api_strict as xps

    c = Y.compile(fn)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for x, want in ((POS, np.log(POS)), (POS, np.log(POS)), ([3.0, 4.0], np.log([3.0, 4.0])),
                        (NEG, [7.0, 7.0]), ([0.0, 1.0], [7.0, 7.0]), ([-0.0, 2.0], [7.0, 7.0]),
                        ([5.0, 6.0], np.log([5.0, 6.0]))):
            a = xps.asarray(np.asarray(x, dtype=float))
            got = c(Y.tensor(a)).data
            assert type(got) is type(a)
            np.testing.assert_array_equal(np.asarray(got), want)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(fn(Y.tensor(a)).data))
    # (the replay that raises runs eagerly from then on, as on NumPy's arrays)
    assert c.stats["replayed"] == 1 and c.stats["eager"] == 4, c.stats


class _ErrorFilter(warnings.catch_warnings):
    def __enter__(self):
        super().__enter__()
        warnings.simplefilter("error", RuntimeWarning)


OUTSIDE = {
    "warnings filter": _ErrorFilter,
    "error state": lambda: np.errstate(invalid="raise", divide="raise"),
}


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_the_callers_filter_and_error_state_are_part_of_the_signature(name):
    c = Y.compile(_log_or_seven)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(3):  # recorded (twice) and replayed in the default state
            np.testing.assert_array_equal(c(Y.tensor(NEG)).data, [np.nan, np.log(2.0)])
        with OUTSIDE[name]():
            np.testing.assert_array_equal(c(Y.tensor(NEG)).data, [7.0, 7.0])
        for _ in range(2):  # the default state's recording still replays
            np.testing.assert_array_equal(c(Y.tensor(NEG)).data, [np.nan, np.log(2.0)])
    assert c.stats["replayed"] == 3, c.stats
    assert not [w for w in caught if issubclass(w.category, CompileWarning)
                and "replay failed" in str(w.message)]


# ---- every attribute and protocol of Tensor, classified ----------------------------------------
# A value reaches Python through a *guard* (computed again on a replay, compared bit for
# bit), makes the call run *eagerly* (a CompileWarning names the line), or does not leave
# the tape: an op (*recorded*), or something that reads no value (*no value*: shapes,
# dtypes, autograd metadata, object machinery). The machinery's private fields are
# covered by test_compile_guards.test_only_the_machinery_reads_the_private_value. A new
# attribute fails test_every_attribute_of_a_tensor_is_classified until it is placed here.

GUARD = {"__bool__", "__float__", "__int__", "__complex__", "__index__", "item",
         "__format__"}
EAGER = {"data", "numpy", "tolist", "__array__", "__repr__", "__str__", "_repr_html_",
         "__getstate__", "__reduce__", "__reduce_ex__", "__deepcopy__", "grad",
         "register_hook", "retain_grad", "__dlpack__"}
NO_VALUE = {"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "__len__", "dim", "numel",
            "requires_grad", "requires_grad_", "is_leaf", "grad_fn", "retains_grad",
            "backward", "_run_backward", "__hash__", "__class__", "__delattr__", "__dir__",
            "__doc__", "__getattribute__", "__init__", "__init_subclass__", "__new__",
            "__setattr__", "__sizeof__", "__slots__", "__subclasshook__", "__weakref__",
            "__module__", "__annotations__", "__array_priority__", "_version", "_producer",
            "__array_namespace__", "device", "__dlpack_device__",
            "__slotnames__"}  # (copyreg caches it on the class once a tensor is pickled)
PRIVATE = {"_data", "_grad", "_hooks", "_node", "_tangents", "_base", "_views"}
RECORDED_PROTOCOLS = {"__getitem__", "__setitem__", "__iter__", "__copy__", "__array_ufunc__",
                      "__array_function__", "T", "mT", "mH", "real", "imag", "conj",
                      "copy", "copy_", "fill", "fill_", "zero_", "reshape", "view",
                      "transpose", "norm", "float", "double", "to", "detach", "detach_",
                      "to_device"}
# (names of the array API that other work adds to Tensor: classified ahead)
LATER = {"__array_namespace__", "device", "to_device", "__dlpack__", "__dlpack_device__"}


def _recorded_methods() -> set:
    from yaad.bindings import tensor_methods as tm

    names = set(tm.METHOD_NAMES) | set(tm._ALIASES) | set(tm._INPLACE)
    for op, _ in tm._OPERATORS:
        names |= {f"__{op}__", f"__r{op}__", f"__i{op}__"}
    names |= {"__neg__", "__pos__", "__abs__", "__eq__", "__ne__", "__lt__", "__le__",
              "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__",
              "__rxor__", "__invert__"}
    return names | RECORDED_PROTOCOLS


def test_every_attribute_of_a_tensor_is_classified():
    from yaad.compiled.program import CompiledTensor

    classes = [GUARD, EAGER, NO_VALUE, PRIVATE, _recorded_methods()]
    for i, a in enumerate(classes):
        for b in classes[i + 1:]:
            assert not a & b, a & b
    known = set().union(*classes)
    for cls in (Y.Tensor, CompiledTensor):  # (a compiled function's outputs)
        names = set(dir(cls))
        assert names <= known, sorted(names - known)
    assert known - set(dir(Y.Tensor)) <= LATER, sorted(known - set(dir(Y.Tensor)) - LATER)


# One function per guard and eager read, recorded on one value and called on others.
def _grad_read(x):
    return x * (1.0 if x.grad is None else 2.0)


READS = {
    "__bool__": lambda x: x * 2 if x.sum() > 0 else x * 3,
    "__float__": lambda x: x * float(x.sum()),
    "__int__": lambda x: x * int(x.sum()),
    "__complex__": lambda x: x * complex(x.sum()).real,
    "__index__": lambda x: x * [1.0, 2.0, 3.0, 4.0][(x.sum() > 0).astype(np.int64)],
    "item": lambda x: x * x.sum().item(),
    "__format__": lambda x: x * float(f"{x.sum():.3f}"),
    "data": lambda x: x * x.data[0],
    "numpy": lambda x: x * x.numpy()[0],
    "tolist": lambda x: x * x.tolist()[0],
    "__array__": lambda x: x * np.asarray(x.detach())[0],
    "__repr__": lambda x: x * len(repr(x)),
    "__str__": lambda x: x * len(str(x)),
    "_repr_html_": lambda x: x * len(x._repr_html_()),
    "__getstate__": lambda x: x * x.detach().__getstate__()[1]["_data"][0],
    "__reduce__": lambda x: x * x.detach().__reduce_ex__(2)[2][1]["_data"][0],
    "__reduce_ex__": lambda x: x * pickle.loads(pickle.dumps(x.detach())).sum(),
    "__deepcopy__": lambda x: x * copy.deepcopy(x.detach()).sum(),
    "grad": _grad_read,
    "register_hook": lambda x: (x.register_hook(lambda g: g), x * 2)[1],
    "retain_grad": lambda x: (lambda y: (y.retain_grad(), y * 2)[1])(x * 1),
    "__dlpack__": lambda x: x * np.from_dlpack(x.detach())[0],
}


@pytest.mark.parametrize("name", sorted(GUARD | EAGER))
def test_each_read_is_a_guard_or_runs_eagerly(name):
    if not hasattr(Y.Tensor, name):
        assert name in LATER
        return
    fn = READS[name]
    a, b = np.array([1.0, -2, 3]), np.array([-1.0, -2, 0.5])
    c = check(fn, [a], [[b], [a], [b], [b]])
    if name in GUARD:
        assert c.stats["eager"] == 0 and c.stats["replayed"] >= 1, c.stats
    else:
        assert c.stats["replayed"] == 0 and c.stats["eager"] >= 1, c.stats


def test_watched_arrays_classify_each_protocol():
    """Arrays Python gets while recording (compiled/watched.py): each attribute of their
    class reads no value, is a guard, or runs eagerly (through Watched._read)."""
    from yaad.compiled.watched import Watched

    no_value = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "__len__",
                "__class__", "__init__", "__slots__", "__module__", "__doc__", "__hash__",
                "__array_priority__", "array", "slot", "rec", "__weakref__", "_read",
                "_guard"}
    guards = {"__bool__", "__float__", "__int__", "__complex__", "__index__"}
    names = set(vars(Watched))
    eager = names - no_value - guards
    a = np.array([1.0, 2.0])
    for name in sorted(eager):
        seen: list = []
        w = Watched(a, 0, type("R", (), {"escape": lambda self, what, seen=seen:
                                         seen.append(what)})())
        member = getattr(Watched, name)
        try:
            if name in ("__getattr__", "__setattr__"):
                member(w, "T") if name == "__getattr__" else member(w, "flags", None)
            elif name in ("__getitem__", "__contains__"):
                member(w, 0)
            elif name == "__setitem__":
                member(w, 0, 1.0)
            elif name == "__array_ufunc__":
                member(w, np.sin, "__call__", w)
            elif name == "__array_function__":
                member(w, np.sum, (Watched,), (w,), {})
            elif name == "__deepcopy__":
                member(w, {})
            elif name == "__format__":
                member(w, "")
            elif name == "__reduce_ex__":
                member(w, 4)
            elif name in ("__iter__", "__repr__", "__str__", "__copy__", "__array__",
                          "__neg__", "__pos__", "__abs__", "__invert__", "__round__",
                          "__trunc__", "__floor__", "__ceil__"):
                member(w)
            else:
                member(w, 1.0)
        except (TypeError, ValueError, AttributeError):
            pass
        assert seen, f"Watched.{name} reads the array without the gate"
