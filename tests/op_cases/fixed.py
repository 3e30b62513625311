"""Inputs at fixed points: what a row's ``second=`` draws for
``tests/ops/test_registry_second_order.py`` (forward mode, HIPS autograd's order-2 protocol,
JAX).

A row's ``second`` is a function of the op's function ``fn`` (yaad's op, or JAX's twin)
returning ``[(f, inputs, options)]``; it draws its inputs when called, from ``rng``, which
``reseed(name)`` seeds from the op's name first. So yaad's op and its twin get the same
inputs, and an op's inputs do not depend on any other row.

The helpers are written with methods (``a.conj()``, ``a.swapaxes``), so that the cases run
on yaad tensors and on JAX arrays alike.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import numpy as np

rng = np.random.default_rng(20240611)


def reseed(name: str) -> None:
    """Seed ``rng`` for the cases of op ``name``."""
    global rng
    rng = np.random.default_rng(zlib.crc32(name.encode()))


def real(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def away(*shape: int, lo: float = 0.2, hi: float = 1.0) -> np.ndarray:
    """Real values with |x| in [lo, hi] and random signs (away from a kink at 0)."""
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def cplx(*shape: int, center: complex = 0j, scale: float = 0.4) -> np.ndarray:
    return center + scale * (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape))


def herm(a: Any) -> Any:
    """A Hermitian (symmetric) matrix made from ``a``, inside f: perturbations stay so."""
    return (a + a.conj().swapaxes(-1, -2)) / 2


def well(n: int, c: bool = False) -> np.ndarray:
    """A well-conditioned n x n matrix."""
    a = np.eye(n) * 2 + 0.3 * real(n, n)
    return a + 0.3j * real(n, n) if c else a


def abs2(v: Any) -> Any:
    return v * v.conj()


# ---- the cases of a row: [(f, inputs, options)] ---------------------------------------------


def cases(*entries: tuple) -> list[tuple]:
    """Explicit cases: (f, inputs) or (f, inputs, options)."""
    return [(e[0], e[1], e[2] if len(e) > 2 else {}) for e in entries]


def same(fn: Callable, *inputs_list: tuple, **opts: Any) -> list[tuple]:
    """The op called directly on each tuple of inputs."""
    return [(fn, inputs, opts) for inputs in inputs_list]


def on_interval(lo: float = -1.0, hi: float = 1.0, z: complex | None = None,
                **opts: Any) -> Callable:
    """The cases of an elementwise op of one input: reals in [lo, hi], and complex numbers
    around ``z`` when given."""

    def make(fn: Callable) -> list[tuple]:
        out = [(fn, (real(2, 3, lo=lo, hi=hi),), opts)]
        if z is not None:
            out.append((fn, (cplx(2, 3, center=z),), opts))
        return out

    return make
