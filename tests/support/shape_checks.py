"""Checks shared by the shape, indexing, reduction and Tensor-method tests: seeded random
arrays, a forward-mode check against central differences, NumPy-likeness."""

from __future__ import annotations

import numpy as np
import pytest

import yaad


def rand(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def check_jvp(f, xs, seed=1, eps=1e-6, rtol=1e-6, atol=1e-8):
    """yaad.func.jvp of ``f`` at ``xs`` against a central difference along random tangents."""
    jvp = pytest.importorskip("yaad.func").jvp
    xs = tuple(np.asarray(x) for x in xs)
    ts = tuple(rand(x.shape, x.dtype, seed + k) for k, x in enumerate(xs))
    _, tangent = jvp(f, xs, ts)

    def value(sign):
        out = f(*(yaad.tensor(x + sign * eps * t) for x, t in zip(xs, ts)))
        return out.data if isinstance(out, yaad.Tensor) else out

    numeric = (value(1) - value(-1)) / (2 * eps)
    tangent = tangent.data if isinstance(tangent, yaad.Tensor) else tangent
    np.testing.assert_allclose(tangent, numeric, rtol=rtol, atol=atol)


def assert_like(actual, expected):
    """Same shape, dtype and values as NumPy's result."""
    a = actual.data if isinstance(actual, yaad.Tensor) else np.asarray(actual)
    assert a.shape == np.shape(expected)
    assert a.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(a, expected)
