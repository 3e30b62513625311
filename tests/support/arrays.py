"""Seeded random arrays of any dtype, a NumPy-likeness check, forward mode against
central differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import yaad


def random_array(rng: np.random.Generator, shape: tuple, dtype: Any = np.float64,
                 low: float = -1.0, high: float = 1.0, imag: tuple = (-1.0, 1.0)) -> np.ndarray:
    """Uniform on ``[low, high)`` in ``dtype``; complex dtypes draw imaginary parts in ``imag``."""
    dtype = np.dtype(dtype)
    x = rng.uniform(low, high, shape)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(*imag, shape)
    return np.asarray(x, dtype=dtype)


def assert_like_numpy(actual: Any, expected: Any, exact: bool = True, rtol: float = 1e-12,
                      atol: float = 0.0) -> None:
    """``actual`` (a tensor or array) has ``expected``'s shape, dtype and values.

    With ``exact`` the values must be identical (NaN equal to NaN), else close.
    """
    a = actual.data if isinstance(actual, yaad.Tensor) else np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != {e.dtype}"
    if exact:
        np.testing.assert_array_equal(a, e)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def check_jvp(f, inputs, seed: int = 0, eps: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-7) -> None:
    """Forward mode (``yaad.func.jvp``) against a central difference along a random tangent.

    ``inputs`` are float64 / complex128 arrays; the difference ``(f(x + e t) - f(x - e t))
    / 2e`` is taken along a real ``e``, so it checks non-holomorphic functions too.
    """
    func = pytest.importorskip("yaad.func")
    r = np.random.default_rng(seed)
    tangents = [random_array(r, np.shape(x), np.asarray(x).dtype) for x in inputs]
    _, tangent_out = func.jvp(f, tuple(inputs), tuple(tangents))
    up = f(*[x + eps * t for x, t in zip(inputs, tangents)])
    down = f(*[x - eps * t for x, t in zip(inputs, tangents)])
    np.testing.assert_allclose(np.asarray(tangent_out), (up - down) / (2 * eps), rtol=rtol,
                               atol=atol)
