"""Random programs of views and in-place changes, run in PyTorch and in yaad.

Each program makes a base tensor from a leaf ``x`` (real, or complex in one program of
three), then takes views of it and of its views (indexing, slicing, ``.T``, ``reshape``,
new axes, ``.real`` and ``.imag``), changes tensors in place (operators, ``setitem``,
``zero_``, ``copy_``, with numbers or with tensors that depend on a second, real leaf
``s``), computes out-of-place results from them, and ends with a weighted sum of every
tensor made (its real part). The values of all tensors and the gradients of both leaves
must agree with PyTorch 2.13's, or both libraries must raise (a value saved for backward
and changed in place afterwards).

A tensor used as the operand of an in-place change is cloned on the PyTorch side only:
PyTorch refuses operands that overlap the tensor they are written into
(``b[1:] = b[:-1]``), where yaad follows NumPy and reads the operand in full before
writing (docs/pytorch-map.md, ``overlapping-writes``); with the clone, PyTorch computes
that meaning. A tensor copied into itself (``t.copy_(v)`` with ``v`` the same memory) is
left as it is in yaad, without a new version, where PyTorch writes it again and bumps the
version: the PyTorch side leaves that copy out.

``YAAD_FUZZ_PROGRAMS=N`` (``make fuzz``) runs N programs instead of 300;
``YAAD_FUZZ_SEED`` moves the first seed.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch

import yaad

FIRST_SEED = int(os.environ.get("YAAD_FUZZ_SEED", "0"))
PROGRAMS = int(os.environ.get("YAAD_FUZZ_PROGRAMS", "0") or 0) or 300
SETITEM_INDICES = [(0,), (slice(0, 2),), (Ellipsis, -1), (slice(None, None, 2),)]


def _views(shape: tuple, cplx: bool) -> list:
    """The views that can be taken of a tensor: (name, index or None)."""
    out = [("new axis", (None,))]
    if shape and 0 not in shape:
        n = shape[0]
        out += [("element", (n - 1,)), ("slice", (slice(1, n),)),
                ("step", (slice(None, None, 2),)), ("last axis", (Ellipsis, 0)),
                ("reshape", None)]
    if len(shape) == 2:
        out.append(("T", None))
    if cplx:
        out += [("real", None), ("imag", None)]
    return out


def _fits(s: tuple, target: tuple) -> bool:
    """Whether an operand of shape ``s`` broadcasts to ``target``."""
    return len(s) <= len(target) and all(a in (1, b) for a, b in zip(s[::-1], target[::-1]))


def make_program(seed: int) -> tuple[bool, list]:
    """A program: whether x is complex, and a list of steps, each a tuple (kind, k, ...)
    on the k-th tensor made so far (0 is the base)."""
    rng = random.Random(seed)
    cplx = seed % 3 == 2
    made = [((3, 4), cplx)]  # (shape, complex) of each tensor
    steps = []
    for _ in range(rng.randint(3, 9)):
        k = rng.randrange(len(made))
        shape, c = made[k]
        # An operand may be real for a complex tensor, not the other way round.
        kind = rng.choice(["view", "view", "inplace", "inplace", "setitem", "outofplace"])
        if kind == "view":
            name, idx = rng.choice(_views(shape, c))
            new = (shape[::-1] if name == "T" else (int(np.prod(shape)),)
                   if name == "reshape" else shape if name in ("real", "imag")
                   else np.empty(shape)[idx].shape)
            steps.append(("view", k, name, idx))
            made.append((new, c and name not in ("real", "imag")))
        elif kind == "inplace" or 0 in shape or not shape:
            op = rng.choice(["add_ s", "mul_ s", "add_ c", "mul_ c", "sub_ t", "zero_",
                             "copy_ t", "iadd t", "imul c"])
            other = None
            if op.endswith(" t"):
                fits = [j for j, (s, cj) in enumerate(made) if _fits(s, shape)
                        and (c or not cj)]
                other = rng.choice(fits) if fits else None
                if other is None:
                    op = "add_ s"
            steps.append(("inplace", k, op, other, round(rng.uniform(0.5, 2.0), 3)))
        elif kind == "setitem":
            idx = rng.choice(SETITEM_INDICES)
            target = np.empty(shape)[idx].shape
            fits = [j for j, (s, cj) in enumerate(made) if _fits(s, target) and (c or not cj)]
            steps.append(("setitem", k, idx, rng.choice(fits + [None]),
                          round(rng.uniform(0.5, 2.0), 3)))
        else:
            steps.append(("outofplace", k,
                          rng.choice(["times c", "times c", "sin", "times s", "square"])))
            made.append((shape, c))
    return cplx, steps


class _Torch:
    """The PyTorch side of a program."""

    sin = staticmethod(torch.sin)

    def __init__(self, cplx: bool) -> None:
        self.x = torch.tensor(_x0(cplx), requires_grad=True)
        self.s = torch.tensor(0.75, dtype=torch.float64, requires_grad=True)

    def operand(self, t):
        return t.clone()  # (see the module docstring)

    @staticmethod
    def same_memory(t, u):
        """Whether ``t.copy_(u)`` copies a tensor into itself (a no-op in yaad, a version
        bump in PyTorch; see the module docstring)."""
        return (t.data_ptr() == u.data_ptr() and t.shape == u.shape
                and t.stride() == u.stride() and t.dtype == u.dtype)

    def weighted(self, t, w):
        return (t * torch.tensor(w)).sum().real

    @staticmethod
    def numpy(t):
        return None if t is None else t.detach().resolve_conj().numpy().copy()


class _Yaad:
    """The yaad side of a program."""

    sin = staticmethod(yaad.sin)

    def __init__(self, cplx: bool) -> None:
        self.x = yaad.tensor(_x0(cplx), requires_grad=True)
        self.s = yaad.tensor(0.75, requires_grad=True)

    def operand(self, t):
        return t

    @staticmethod
    def same_memory(t, u):
        return False  # (yaad's copy_ tells by itself)

    def weighted(self, t, w):
        return yaad.real((t * w).sum())

    @staticmethod
    def numpy(t):
        return None if t is None else np.array(t.data if isinstance(t, yaad.Tensor) else t,
                                               copy=True)


def _x0(cplx: bool) -> np.ndarray:
    x = np.arange(1.0, 13.0).reshape(3, 4) / 7
    return x * (1 - 0.5j) + 0.25j if cplx else x


def _view(t, name, idx):
    return (t.T if name == "T" else t.reshape(-1) if name == "reshape" else t.real
            if name == "real" else t.imag if name == "imag" else t[idx])


def _complex(t) -> bool:
    return t.dtype in (torch.complex128, np.complex128)


def run(cplx: bool, steps: list, lib) -> tuple:
    """Run a program; (values of every tensor, gradients of x and s)."""
    x, s = lib.x, lib.s
    ts = [x * 1]
    for step in steps:
        kind, k = step[0], step[1]
        t = ts[k]
        if kind == "view":
            ts.append(_view(t, step[2], step[3]))
        elif kind == "outofplace":
            op = step[2]
            ts.append(t * 1.5 if op == "times c" else lib.sin(t) if op == "sin"
                      else t * s if op == "times s" else t * t)
        elif kind == "inplace":
            op, other, c = step[2], step[3], step[4]
            u = lib.operand(ts[other]) if other is not None else None
            if op == "add_ s":
                t.add_(s * c)
            elif op == "mul_ s":
                t.mul_(s * c)
            elif op == "add_ c":
                t.add_(c)
            elif op == "mul_ c":
                t.mul_(c)
            elif op == "sub_ t":
                t.sub_(u)
            elif op == "zero_":
                t.zero_()
            elif op == "copy_ t":
                if not lib.same_memory(t, ts[other]):
                    t.copy_(u)
            elif op == "iadd t":
                t += u
            else:
                t *= c
        else:  # setitem
            idx, other, c = step[2], step[3], step[4]
            if _complex(t):  # (a real value into a complex tensor: PyTorch 2.13 fails
                c = c + 0.5j  # in backward, on a check of the gradient's dtype)
            t[idx] = s * c if other is None else lib.operand(ts[other]) * c
    rng = np.random.default_rng(7)
    loss = 0
    for t in ts:
        w = rng.standard_normal(tuple(t.shape))
        if _complex(t):
            w = w + 1j * rng.standard_normal(w.shape)
        loss = loss + lib.weighted(t, w)
    loss.backward()
    return [lib.numpy(t) for t in ts], [lib.numpy(x.grad), lib.numpy(s.grad)]


def outcome(cplx: bool, steps: list, lib) -> tuple:
    """("ok", run's result) or ("raised", the message of its RuntimeError)."""
    try:
        return "ok", run(cplx, steps, lib(cplx))
    except RuntimeError as e:
        return "raised", str(e)


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + PROGRAMS))
def test_fuzz_views_program(seed):
    cplx, steps = make_program(seed)
    where = f"program {seed} (complex: {cplx}) {steps}"
    t_kind, t_out = outcome(cplx, steps, _Torch)
    y_kind, y_out = outcome(cplx, steps, _Yaad)
    assert t_kind == y_kind, f"{where}: torch {t_kind}, yaad {y_kind}: {t_out} / {y_out}"
    if t_kind == "raised":
        assert "in-place" in y_out, y_out
        return
    (tv, tg), (yv, yg) = t_out, y_out
    for k, (a, b) in enumerate(zip(tv, yv)):
        assert a.shape == b.shape and a.dtype == b.dtype, \
            f"{where}: tensor {k} is {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{where}: value of tensor {k}")
    for name, a, b in zip("xs", tg, yg):
        assert (a is None) == (b is None), f"{where}: gradient of {name}: {a} vs {b}"
        if a is not None:
            assert a.dtype == b.dtype, f"{where}: gradient of {name}: {a.dtype} vs {b.dtype}"
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{where}: gradient of {name}")
