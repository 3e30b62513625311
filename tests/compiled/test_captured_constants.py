"""A large constant captured by a compiled function, changed in place between calls, gives
the new value: as a NumPy array (compared bit for bit with its recorded copy before each
call) and as a tensor sharing the array's memory (read by reference on every replay: how
the benchmarks give W5's 16 MiB H to yaad).

The oracle is the hand-written gradient of W5's loss, Re(psi^H H psi) / Re(psi^H psi) for a
Hermitian H: value L and gradient 2 (H psi - L psi) / (psi^H psi) (yaad's convention for a
complex input, dL/dRe + 1j dL/dIm); and eager yaad on the same program.
"""

from __future__ import annotations

import numpy as np
import pytest

import yaad

N = 96  # H is 96 x 96 complex: 147 KiB, above the 64 KiB of the inline compare


def _hermitian(rng):
    m = rng.standard_normal((N, N)) + 1j * rng.standard_normal((N, N))
    return (m + m.conj().T) / 2


def _oracle(H, psi):
    hpsi = H @ psi
    den = np.vdot(psi, psi).real
    loss = np.vdot(psi, hpsi).real / den
    return loss, 2 * (hpsi - loss * psi) / den


def _value_and_grad(fn, psi):
    x = yaad.tensor(psi, requires_grad=True)
    out = fn(x)
    out.backward()
    return float(out.data), np.array(x.grad)


def _changes(H_np):
    """In-place changes that keep H Hermitian: a diagonal entry, a pair of entries, all."""
    def diagonal():
        H_np[3, 3] += 0.5

    def pair():
        H_np[1, 7] += 0.25 - 0.125j
        H_np[7, 1] = np.conj(H_np[1, 7])

    def everything():
        np.multiply(H_np, -2.0, out=H_np)

    return [diagonal, pair, everything]


def _captures(H_np):
    """(name, loss) pairs that capture H in the ways the benchmarks and users do."""
    consts = {"H": H_np}
    H_t = yaad.as_tensor(H_np)  # shares H_np's memory

    def numpy_in_closure(psi):
        return yaad.real(yaad.vdot(psi, H_np @ psi)) / yaad.real(yaad.vdot(psi, psi))

    def numpy_in_dict(psi):
        return yaad.real(yaad.vdot(psi, consts["H"] @ psi)) / yaad.real(yaad.vdot(psi, psi))

    def tensor_sharing_memory(psi):
        return yaad.real(yaad.vdot(psi, H_t @ psi)) / yaad.real(yaad.vdot(psi, psi))

    return [("numpy_in_closure", numpy_in_closure), ("numpy_in_dict", numpy_in_dict),
            ("tensor_sharing_memory", tensor_sharing_memory)]


@pytest.mark.parametrize("capture", ["numpy_in_closure", "numpy_in_dict",
                                     "tensor_sharing_memory"])
def test_a_large_captured_constant_changed_in_place_gives_the_new_value(capture):
    rng = np.random.default_rng(5)
    H_np = _hermitian(rng)
    fn = dict(_captures(H_np))[capture]
    compiled = yaad.compile(fn)
    psis = [rng.standard_normal(N) + 1j * rng.standard_normal(N) for _ in range(3)]
    for change in [lambda: None, *_changes(H_np)]:
        change()
        for psi in psis:
            want_value, want_grad = _oracle(H_np, psi)
            got_value, got_grad = _value_and_grad(compiled, psi)
            eager_value, eager_grad = _value_and_grad(fn, psi)
            np.testing.assert_allclose(got_value, want_value, rtol=1e-12)
            np.testing.assert_allclose(got_grad, want_grad, rtol=1e-10, atol=1e-14)
            assert got_value == eager_value
            np.testing.assert_array_equal(got_grad, eager_grad)
    calls, changes = 3 * 4, 4  # (the first "change" changes nothing)
    if capture == "tensor_sharing_memory":
        # read by reference: one recording (and its verifying call), then every call
        # replays it on the current value
        assert compiled.stats == {"replayed": calls - 2, "recorded": 2, "eager": 0}
    else:
        # compared bit for bit: each change is seen before the replay, and records again
        assert compiled.stats == {"replayed": calls - 2 * changes,
                                  "recorded": 2 * changes, "eager": 0}


def test_a_captured_tensor_whose_data_is_rebound_or_written_gives_the_new_value():
    rng = np.random.default_rng(6)
    H_t = yaad.tensor(_hermitian(rng))

    def fn(psi):
        return yaad.real(yaad.vdot(psi, H_t @ psi)) / yaad.real(yaad.vdot(psi, psi))

    compiled = yaad.compile(fn)
    psi = rng.standard_normal(N) + 1j * rng.standard_normal(N)
    for change in [lambda: None,
                   lambda: H_t.data.__setitem__((2, 2), H_t.data[2, 2] + 1.0),  # written
                   lambda: setattr(H_t, "data", _hermitian(rng))]:               # rebound
        change()
        for _ in range(2):
            want_value, want_grad = _oracle(np.array(H_t.data), psi)
            got_value, got_grad = _value_and_grad(compiled, psi)
            np.testing.assert_allclose(got_value, want_value, rtol=1e-12)
            np.testing.assert_allclose(got_grad, want_grad, rtol=1e-10, atol=1e-14)


# ---- captured index arrays of a gathered loss ------------------------------------------
#
# The gradient of -mean(log_softmax(z)[rows, labels]) for the seed 1 of .backward() is a
# constant (-1/n at each (row, label)), which the compiled backward computes once; it holds
# while the index arrays have their recorded bits, which the backward checks itself: the
# arrays may be watched by the state check (a closure), or not at all (another module's
# global, read by reference on every replay), and they may change between the call and
# its .backward(). Oracle: the hand-written gradient (softmax(z) - onehot(labels)) / n for
# the labels in force when the gradient is computed, and eager yaad.

def _ce_oracle(z, rows, labels):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    g = np.zeros_like(z)
    np.add.at(g, (rows, labels), -1.0 / len(rows))
    np.add.at(g, rows, p[rows] / len(rows))
    return g


def _index_captures(rows, labels):
    import types

    other = types.ModuleType("other_module")  # its globals are not watched
    other.ROWS, other.LABELS = rows, labels
    exec("def index():\n    return ROWS, LABELS\n", other.__dict__)
    held = {"rows": rows, "labels": labels}

    def in_closure(z):
        return -yaad.mean(yaad.log_softmax(z, axis=-1)[held["rows"], held["labels"]])

    def in_another_module(z):
        return -yaad.mean(yaad.log_softmax(z, axis=-1)[other.index()])

    return {"in_closure": in_closure, "in_another_module": in_another_module}


def _index_changes(labels):
    """In-place changes of the labels: by NumPy on the array, through a view, by a ufunc
    writing into it (each keeps them in 0..9)."""
    def element():
        labels[3] = (labels[3] + 1) % 10

    def view():
        v = labels[::2]
        v[...] = (v + 3) % 10

    def ufunc():
        np.remainder(labels + 7, 10, out=labels)

    return [element, view, ufunc]


@pytest.mark.parametrize("capture", ["in_closure", "in_another_module"])
@pytest.mark.parametrize("when", ["between_calls", "before_backward"])
def test_captured_index_arrays_changed_in_place_give_the_new_gradient(capture, when):
    rng = np.random.default_rng(7)
    rows, labels = np.arange(12), rng.integers(0, 10, 12)
    fn = _index_captures(rows, labels)[capture]
    compiled = yaad.compile(fn)
    z = rng.standard_normal((12, 10))

    def grads(f, change):
        x = yaad.tensor(z, requires_grad=True)
        out = f(x)
        if when == "before_backward":
            change()
        out.backward()
        return np.array(x.grad)

    for _ in range(3):  # recorded twice, then replayed
        np.testing.assert_array_equal(grads(compiled, lambda: None), grads(fn, lambda: None))
    for change in _index_changes(labels):
        if when == "between_calls":
            change()
            got = grads(compiled, lambda: None)
            np.testing.assert_allclose(got, _ce_oracle(z, rows, labels), rtol=1e-12,
                                       atol=1e-15)
            np.testing.assert_array_equal(got, grads(fn, lambda: None))
        else:
            # the same change made after the compiled call and after the eager one
            saved = labels.copy()
            got = grads(compiled, change)
            labels[...] = saved
            want = grads(fn, change)
            np.testing.assert_allclose(got, _ce_oracle(z, rows, labels), rtol=1e-12,
                                       atol=1e-15)
            np.testing.assert_array_equal(got, want)
    assert compiled.stats["eager"] == 0
