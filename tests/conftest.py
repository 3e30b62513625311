"""Shared fixtures: seeded random arrays (the functions are in ``support.arrays``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tests.support.arrays import random_array
from tests.support.reliability import LONG

# Every hypothesis test draws the same examples on every run (a test that fails on one CI
# run and passes on the next tells nothing); `make fuzz` (YAAD_FUZZ_PROGRAMS) draws anew.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("default" if LONG else "deterministic")


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator seeded with 0: each test draws the same numbers every run."""
    return np.random.default_rng(0)


@pytest.fixture
def arr(rng):
    """``arr(shape, dtype=float64, low=-1, high=1, imag=(-1, 1))``: see random_array."""
    return lambda shape, dtype=np.float64, low=-1.0, high=1.0, imag=(-1.0, 1.0): random_array(
        rng, shape, dtype, low, high, imag)
