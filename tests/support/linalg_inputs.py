"""Inputs for the yaad.linalg tests: well-conditioned random matrices, real and complex.

Functions whose gradient is defined for Hermitian perturbations only (``eigh``,
``cholesky``, ``svd(hermitian=True)``) are checked through :func:`herm` applied inside the
tested function, so finite differences move along Hermitian directions.
"""

from __future__ import annotations

import numpy as np

import yaad

BATCHES = [(), (3, 4)]
COMPLEX = [False, True]


def rand(rng, shape, c=False):
    """Standard normal entries, complex when ``c``."""
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if c else x


def general(rng, batch, n, c=False):
    """Well-conditioned square matrices: random plus ``n`` times the identity."""
    return rand(rng, batch + (n, n), c) + n * np.eye(n)


def hermitian(rng, batch, n, c=False):
    """Random Hermitian matrices (distinct eigenvalues with probability one)."""
    x = rand(rng, batch + (n, n), c)
    return x + np.conj(np.swapaxes(x, -1, -2))


def posdef(rng, batch, n, c=False):
    """Hermitian positive-definite matrices, ``x x^H + n I``."""
    x = rand(rng, batch + (n, n), c)
    return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)


def unitary(rng, n, c=False):
    """A random orthogonal (unitary) matrix."""
    return np.linalg.qr(rand(rng, (n, n), c))[0]


def mH(a):
    """Conjugate transpose of the last two axes, for arrays and tensors."""
    return yaad.conj(yaad.swapaxes(a, -1, -2))


def herm(a):
    """The Hermitian part, for arrays and tensors."""
    return (a + mH(a)) / 2


def abs2(x):
    """``|x|^2``, invariant under the phase of x (for eigenvector losses)."""
    return yaad.real(x * yaad.conj(x))


def data(x):
    """The array of a tensor (or the array)."""
    return x.data if isinstance(x, yaad.Tensor) else np.asarray(x)
