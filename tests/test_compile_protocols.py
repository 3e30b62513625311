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
