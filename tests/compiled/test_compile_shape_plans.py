"""yaad.compile's replays do the shape logic of tensordot, moveaxis, stack, concatenate and
astype once, at recording: a replay makes only the C-level NumPy calls for the recorded
shapes (``codegen._TEMPLATES``).

Each program is compiled with the NumPy replay (``fused=False``) and called on new
inputs of the same shapes; every value and gradient is compared with eager yaad (the same
bits: the replay makes the calls NumPy's own functions end in) and with PyTorch (an
independent oracle, to 1e-12 of the largest entry), dtypes and shapes exactly. A profile
of the replays counts the calls of NumPy's Python-level functions: none.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import yaad as Y

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(30)


class Torch:
    """The vocabulary of the programs below, from PyTorch."""

    cos = staticmethod(torch.cos)
    sin = staticmethod(torch.sin)
    exp = staticmethod(torch.exp)
    real = staticmethod(torch.real)
    conj = staticmethod(torch.conj)
    moveaxis = staticmethod(torch.moveaxis)

    @staticmethod
    def tensordot(a, b, axes=2):
        return torch.tensordot(a, b, dims=axes)

    @staticmethod
    def stack(xs, axis=0):
        return torch.stack(list(xs), dim=axis)

    @staticmethod
    def concatenate(xs, axis=0):
        if axis is None:
            return torch.cat([x.reshape(-1) for x in xs])
        return torch.cat(list(xs), dim=axis)

    @staticmethod
    def astype(x, dtype):
        return x.to(torch.from_numpy(np.empty(0, dtype)).dtype)

    @staticmethod
    def sum(x):
        return x.sum()


def _contractions(xp, a, b):
    t1 = xp.tensordot(a, b, axes=([1, 2], [1, 0]))      # (3, 2)
    t2 = xp.tensordot(a, b, 1)                           # (3, 4, 4, 2)
    t3 = xp.tensordot(a, b, axes=([-1], [0]))            # (3, 4, 4, 2)
    t4 = xp.tensordot(a[0, 0], b[:, 0, 0], axes=0)       # (5, 5): an outer product
    t5 = xp.tensordot(a, a, axes=3)                      # (): everything contracted
    return (xp.sum(t1 * t1) + xp.sum(t2 * t3) + xp.sum(xp.cos(t4)) + t5
            + xp.sum(xp.tensordot(b, a, axes=([0, 1], [2, 1])) ** 2))


def _moves_and_joins(xp, a, b):
    x = a[:2, :3]                                                  # (2, 3, 5)
    m1 = xp.moveaxis(x, (0, 1), (-1, 0))                           # (3, 5, 2)
    m2 = xp.moveaxis(x, -1, 0)                                     # (5, 2, 3)
    m3 = xp.moveaxis(x, 1, 1)                                      # unchanged
    s0 = xp.stack([a[0, 0, 0], a[1, 2, 3], b[4, 3, 1]])            # 0-d items: (3,)
    s1 = xp.stack([m1[0], m1[1] * 2], axis=-1)                     # (5, 2, 2)
    s2 = xp.stack([m2[0], m2[1], m2[2]], axis=1)                   # (2, 3, 3)
    c1 = xp.concatenate([m1, m1 * 3], axis=1)                      # (3, 10, 2)
    c2 = xp.concatenate([x, m3], axis=None)                        # (60,)
    z = xp.astype(s1, complex) * xp.exp(1j * xp.astype(s1, float))
    return (xp.sum(m1 * m1) + xp.sum(xp.cos(m2)) + xp.sum(s0 * s0) + xp.sum(s2 ** 3)
            + xp.sum(xp.sin(c1)) + xp.sum(c2 * c2) + xp.sum(xp.real(z * xp.conj(z))))


def _gates(xp, theta, psi0):
    # W13's way of writing a circuit, 3 qubits: per gate index the angles, stack the gate,
    # tensordot it into the state and move the axis back; CNOTs on two axes.
    cnot = np.eye(4, dtype=complex)[[0, 1, 3, 2]].reshape(2, 2, 2, 2)
    if xp is Torch:
        cnot = torch.from_numpy(cnot)
    psi = psi0
    for q in range(3):
        half = theta[q, 0] / 2
        co, si = xp.cos(half), xp.sin(half)
        ry = xp.astype(xp.stack([xp.stack([co, -si]), xp.stack([si, co])]), complex)
        psi = xp.moveaxis(xp.tensordot(ry, psi, axes=([1], [q])), 0, q)
        e = xp.exp(-1j * theta[q, 1])
        rz = xp.stack([xp.stack([e, 0 * e]), xp.stack([0 * e, xp.conj(e)])])
        psi = xp.moveaxis(xp.tensordot(rz, psi, axes=([1], [q])), 0, q)
    for a, b in ((0, 1), (1, 2), (2, 0)):
        psi = xp.moveaxis(xp.tensordot(cnot, psi, axes=([2, 3], [a, b])), (0, 1), (a, b))
    return xp.sum(xp.real(psi * xp.conj(psi)) * xp.cos(xp.real(psi)))


PROGRAMS = {
    "tensordot": (_contractions, [(3, 4, 5), (5, 4, 2)]),
    "moveaxis, stack, concatenate, astype": (_moves_and_joins, [(3, 4, 5), (5, 4, 2)]),
    "a circuit of tensordot gates": (_gates, [(3, 2), "psi"]),
}


def _inputs(shapes):
    out = []
    for s in shapes:
        if s == "psi":
            psi = RNG.standard_normal((2, 2, 2)) + 1j * RNG.standard_normal((2, 2, 2))
            out.append(psi / np.linalg.norm(psi))
        else:
            out.append(RNG.standard_normal(s))
    return out


def _yaad_call(fn, arrays):
    ts = [Y.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    loss = fn(*ts)
    loss.backward()
    return loss.data, [t.grad for t in ts if t.requires_grad]


def _torch_call(fn, arrays):
    ts = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    loss = fn(Torch, *ts)
    loss.backward()
    return loss.detach().numpy(), [t.grad.numpy() for t in ts if t.requires_grad]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_replays_equal_eager_and_pytorch(name):
    prog, shapes = PROGRAMS[name]
    compiled = Y.compile(lambda *xs: prog(Y, *xs), fused=False)
    for _ in range(4):  # record, verify, replay on new inputs
        arrays = _inputs(shapes)
        value, grads = _yaad_call(compiled, arrays)
        eager_value, eager_grads = _yaad_call(lambda *xs: prog(Y, *xs), arrays)
        torch_value, torch_grads = _torch_call(prog, arrays)
        assert np.array_equal(value, eager_value)
        assert np.asarray(value).dtype == np.asarray(torch_value).dtype == np.float64
        np.testing.assert_allclose(value, torch_value, rtol=1e-12)
        assert len(grads) == len(torch_grads)
        for g, ge, gt in zip(grads, eager_grads, torch_grads):
            assert g.shape == gt.shape and g.dtype == gt.dtype == np.float64
            np.testing.assert_allclose(g, ge, rtol=0, atol=1e-13 * np.abs(ge).max())
            np.testing.assert_allclose(g, gt, rtol=0, atol=1e-12 * np.abs(gt).max())
    assert compiled.stats["replayed"] >= 2


# The Python-level functions whose work a replay does at recording: NumPy's (files and
# names) and the forwards of yaad's ops for them (the lambdas of yaad/ops/shape.py).
SHAPE_LOGIC = {("numeric.py", "tensordot"), ("numeric.py", "moveaxis"),
               ("numeric.py", "normalize_axis_tuple"), ("shape_base.py", "stack"),
               ("products.py", "_tensordot"), ("products.py", "_tensordot_axes"),
               ("shape.py", "_astype"), ("shape.py", "<lambda>")}


def _python_calls(fn):
    """(file name, function name) of the Python functions called (at any depth) while
    ``fn()`` runs."""
    seen = set()

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            seen.add((code.co_filename.replace("\\", "/").rsplit("/", 1)[-1], code.co_name))

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_replay_calls_no_shape_logic(name):
    prog, shapes = PROGRAMS[name]
    compiled = Y.compile(lambda *xs: prog(Y, *xs), fused=False)
    for _ in range(3):  # record, verify, replay
        _yaad_call(compiled, _inputs(shapes))
    calls = _python_calls(lambda: _yaad_call(compiled, _inputs(shapes)))
    assert compiled.stats["replayed"] >= 2
    eager = _python_calls(lambda: _yaad_call(lambda *xs: prog(Y, *xs), _inputs(shapes)))
    assert SHAPE_LOGIC & eager  # (eager mode calls them: the check sees them)
    assert not SHAPE_LOGIC & calls, sorted(SHAPE_LOGIC & calls)
