"""Switches shared by the reliability tests (issue 7), imported by them.

It only reads the environment. ``YAAD_FUZZ_PROGRAMS=N`` (``make fuzz`` sets 5000) turns on
the long variants: N random programs, more hypothesis examples per op, the 100,000-step
memory run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

FUZZ_PROGRAMS = int(os.environ.get("YAAD_FUZZ_PROGRAMS", "0") or 0)
LONG = FUZZ_PROGRAMS > 0

# A test marked ``long_only`` runs only in the long (fuzz) run.
long_only = pytest.mark.skipif(not LONG, reason="long variant: set YAAD_FUZZ_PROGRAMS "
                                                "(make fuzz) to run it")


def scaled(normal: int, long: int) -> int:
    """``normal`` in the ordinary run, ``long`` in the fuzz run."""
    return long if LONG else normal


def fuzz_settings(normal: int, long: int, **kw) -> settings:
    """Hypothesis settings: deterministic and small in CI, random and large in ``make fuzz``."""
    return settings(max_examples=scaled(normal, long), deadline=None, derandomize=not LONG,
                    database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large],
                    **kw)
