"""Shared fixtures: seeded random arrays (the functions are in ``support.arrays``)."""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import random_array


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator seeded with 0: each test draws the same numbers every run."""
    return np.random.default_rng(0)


@pytest.fixture
def arr(rng):
    """``arr(shape, dtype=float64, low=-1, high=1, imag=(-1, 1))``: see random_array."""
    return lambda shape, dtype=np.float64, low=-1.0, high=1.0, imag=(-1.0, 1.0): random_array(
        rng, shape, dtype, low, high, imag)
