"""The op-case table (tests/op_cases.py) run on another array library's arrays, against
the same calls on NumPy arrays: used by tests/test_backend_array_api.py (array_api_strict)
and tests/test_backend_cupy.py (CuPy, where a GPU is present)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
from op_cases import ELEMENTWISE, row_function, row_inputs

import yaad
from support.strategies import resolve
from yaad.backend import BackendError


def cases() -> list[tuple[str, str]]:
    """(op name, dtype) for every row: float64, and complex128 where the row is defined."""
    return [(n, d) for n in sorted(ELEMENTWISE) for d in ("float64", "complex128")
            if d == "float64" or ELEMENTWISE[n].complex == "yes"]


def run(name: str, dtype: str, convert: Callable[[Any], Any]) -> tuple:
    """The value, the reverse-mode gradients (for a random cotangent) and the forward-mode
    derivative (all tangents one) of the row's op, on its inputs passed through
    ``convert`` (NumPy arrays to the library's; identity for NumPy)."""
    row = ELEMENTWISE[name]
    xs = row_inputs(row, dtype, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    conv = lambda v: convert(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    row = dataclasses.replace(row, params=tuple(conv(p) for p in row.params),
                              after=tuple(conv(p) for p in row.after))
    f = row_function(row, resolve(row.path or name))
    ts = [yaad.tensor(conv(x), requires_grad=True) for x in xs]
    with np.errstate(all="ignore"):
        out = f(*ts)
        out_dtype = np.dtype(str(out.dtype).rsplit(".", 1)[-1])
        cot = rng.standard_normal(out.shape) + (
            1j * rng.standard_normal(out.shape) if out_dtype.kind == "c" else 0)
        out.backward(gradient=conv(cot.astype(out_dtype)))
        tangents = tuple(conv(np.ones_like(x)) for x in xs)
        _, jvp_out = yaad.func.jvp(f, tuple(conv(x) for x in xs), tangents)
    return out.data, [t.grad for t in ts], jvp_out


def outcome(name: str, dtype: str, convert: Callable[[Any], Any],
            to_numpy: Callable[[Any], np.ndarray], rtol: float = 1e-12,
            atol: float = 1e-12) -> tuple[str, str]:
    """``("works", "")`` when the value and the derivatives equal NumPy's (``to_numpy``
    checks that each result is the library's array and brings it to the host), or
    ``("refuses", message)`` for a BackendError; any other outcome raises."""
    expected = run(name, dtype, lambda v: v)
    try:
        got = run(name, dtype, convert)
    except BackendError as e:
        return "refuses", str(e)
    pairs = [(got[0], expected[0]), *zip(got[1], expected[1]), (got[2], expected[2])]
    for g, e in pairs:
        g = to_numpy(g)
        assert g.shape == np.shape(e), (g.shape, np.shape(e))
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    return "works", ""


def summary(results: dict, library: str) -> str:
    """The counts of a table run, and the refusing cases."""
    works = sorted(c for c, r in results.items() if r == "works")
    refuses = sorted(c for c, r in results.items() if r == "refuses")
    return (f"{library}: {len(works)} op cases work, {len(refuses)} refuse clearly, of "
            f"{len(results)} ({len({n for n, _ in works})} ops work on float64 or "
            f"complex128)\nrefusing: " + " ".join(f"{n}[{d}]" for n, d in refuses))
