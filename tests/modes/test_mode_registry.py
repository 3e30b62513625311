"""The mode registry is open: a mode is added in one file, by one ``register_mode`` call
(its switch, interpreter and backward hook), and the grad-mode state and the engine name
no mode.

``Log`` below is such a mode, written here only: a block under ``Log()`` notes the name
of every op it calls and every backward call.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import yaad
from yaad.core import grad_mode
from yaad.core.engine import run_backward
from yaad.core.grad_mode import state
from yaad.modes import registry
from yaad.modes.registry import MODES, register_mode, remove_mode, run_modes

SRC = Path(yaad.__file__).parent


class Log:
    """A mode: notes the op calls and backward calls of the block (innermost wins)."""

    def __init__(self) -> None:
        self.ops: list[str] = []
        self.backwards = 0

    def __enter__(self) -> Log:
        self.prev = state.op_log
        state.op_log = self
        state.refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        state.op_log = self.prev
        state.refresh()


def _interpret(op: Any, args: tuple[Any, ...], kw: dict[str, Any], k: int) -> Any:
    log = state.op_log
    if log is not None:
        log.ops.append(op.name)
    return run_modes(op, args, kw, k)


def _backward(call: tuple[Any, ...], check: Any, k: int) -> Any:
    log = state.op_log
    if log is not None:
        log.backwards += 1
    return run_backward(*call, check=check, hook=k)


@pytest.fixture
def log_mode() -> Any:
    before = list(MODES)
    register_mode("log", _interpret, order=35, switch="op_log", backward=_backward)
    yield
    remove_mode("log")
    assert MODES == before and not hasattr(state, "op_log")


def test_a_mode_in_one_file_sees_op_calls_and_backward(log_mode: Any) -> None:
    assert MODES.index("forward") < MODES.index("log") < MODES.index("trace")
    x = yaad.tensor([0.5, 1.5], requires_grad=True)
    assert not state.modes_on
    with Log() as log:
        assert state.modes_on
        y = yaad.sum(yaad.exp(yaad.sin(x)))
        y.backward()
    assert not state.modes_on and state.op_log is None
    assert log.ops == ["sin", "exp", "sum"] and log.backwards == 1
    # the mode only watched: the gradient is the analytic one
    xv = np.array([0.5, 1.5])
    np.testing.assert_allclose(x.grad, np.cos(xv) * np.exp(np.sin(xv)), rtol=1e-14)
    assert x.grad.dtype == np.float64


def test_a_mode_nests_with_forward_mode_and_compile(log_mode: Any) -> None:
    x = yaad.tensor([0.3, 0.7])
    with Log() as log:
        y, t = yaad.func.jvp(lambda a: yaad.tanh(a * a), (x,), (yaad.ones(2),))
    xv = np.array([0.3, 0.7])
    np.testing.assert_allclose(y.numpy(), np.tanh(xv * xv), rtol=1e-14)
    np.testing.assert_allclose(t.numpy(), 2 * xv / np.cosh(xv * xv) ** 2, rtol=1e-13)
    # forward mode (order 30) runs first and calls the ops on the primals through the rest
    # of the chain: the log sees the primal calls
    assert {"multiply", "tanh"} <= set(log.ops)
    with Log() as inner:
        f = yaad.compile(lambda a: yaad.sum(yaad.cos(a)))
        w = yaad.tensor([0.1, 0.2], requires_grad=True)
        out = f(w)
        out.backward()
    assert "cos" in inner.ops and inner.backwards >= 1
    np.testing.assert_allclose(w.grad, -np.sin([0.1, 0.2]), rtol=1e-14)


def test_the_state_and_the_engine_name_no_mode() -> None:
    """The switches are the modes' own (``levels``, the level stack, is core's)."""
    switches = set(grad_mode._switch_names) - {"levels"}
    assert {"tracer", "anomaly", "segment", "batching", "substitute"} <= switches
    tree = ast.parse((SRC / "core" / "grad_mode.py").read_text())
    state_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_State")
    fields = {t.id for n in state_class.body for t in (
        n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign)
        else []) if isinstance(t, ast.Name)}
    # (conversions: the gate of core.presentation, which the transforms read; not a mode)
    assert fields == {"enabled", "modes_on", "levels", "depth", "conversions"}
    # (from the file: in the compiled build run_backward is a Cython function, whose
    # source inspect cannot read)
    engine_tree = ast.parse((SRC / "core" / "engine.py").read_text())
    source = ast.unparse(next(n for n in engine_tree.body if isinstance(n, ast.FunctionDef)
                              and n.name == "run_backward"))
    named = sorted(s for s in switches if f"state.{s}" in source)
    assert named == [], f"run_backward names the modes' switches {named}"


def test_a_switch_cannot_take_a_core_field() -> None:
    for name in ("enabled", "modes_on", "depth", "refresh", "_x"):
        with pytest.raises(ValueError, match="cannot be a mode's switch"):
            register_mode("bad", _interpret, order=1, switch=name)
    assert "bad" not in registry.MODES
