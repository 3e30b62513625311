"""Calls drawn from the op table (tests.op_cases.CASES) made on tensors, and their
results compared with NumPy's: shared by the fuzz, coverage and gradient-semantics tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

import yaad
from tests.support.strategies import Call

if TYPE_CHECKING:
    from tests.op_cases import Case


def as_inputs(case: Case, call: Call) -> list:
    """The call's arguments as tensors (requiring grad where differentiable)."""
    pos = set(case.diff_positions(call))
    return [yaad.tensor(a, requires_grad=i in pos)
            if isinstance(a, np.ndarray) and i not in case.nondiff else a
            for i, a in enumerate(call.args)]


def outputs(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def assert_same_forward(case: Case, got, expected, single: bool = False) -> None:
    """yaad's result equals NumPy's: same structure, shape, dtype and values (to rounding
    for ``exact=False`` cases: single precision when an input is, ``single``)."""
    got, expected = outputs(got), outputs(expected)
    assert len(got) == len(expected), f"{case.path}: {len(got)} outputs, NumPy {len(expected)}"
    for g, e in zip(got, expected):
        gd = g.data if isinstance(g, yaad.Tensor) else g
        e = np.asarray(e)
        assert np.shape(gd) == e.shape, f"{case.path}: shape {np.shape(gd)} != NumPy {e.shape}"
        assert gd.dtype == e.dtype, f"{case.path}: dtype {gd.dtype} != NumPy {e.dtype}"
        if case.exact:
            np.testing.assert_array_equal(gd, e, err_msg=case.path, strict=False)
        else:
            tol = 2e-5 if single or e.dtype in (np.float32, np.complex64) else 1e-12
            np.testing.assert_allclose(gd, e, rtol=tol, atol=tol, err_msg=case.path)


def draw_call(case: Case, data, dtypes=None) -> Call:
    dtype = data.draw(st.sampled_from(dtypes or case.dtypes), label="dtype")
    call = case.draw(data, dtype)
    note(f"call: {case.path}(*{call.args!r}, **{call.kwargs!r})")
    return call
