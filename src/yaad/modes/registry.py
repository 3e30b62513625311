"""The modes of an op call (vmap, forward mode, compile tracing, checkpoint, anomaly
detection), dispatched as a stack of interpreters, as in JAX's Autodidax.

While a mode is on (``state.modes_on``), every op call goes through the interpreters that
the modes registered, innermost first, in the order of :data:`MODES`: each is
``interpret(op, args, kw, k)`` and either handles the call or passes it on with
``run_modes(op, args, kw, k)``; after the last one the call is recorded as usual (by
``yaad.op.apply``, which ``yaad.op`` sets here: it sits above this module).
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.grad_mode import state

MODES = (
    "substitute",  # yaad.modes.substitute: a solver's closure replaces captured tensors
    "vmap",  # yaad.batch_mode: a batched argument goes first
    "forward",  # yaad.forward_mode: an argument carries a tangent
    "trace",  # yaad.compiled.tape: yaad.compile is recording
    "checkpoint",  # yaad.checkpoint: sees (and may substitute) every argument
    "anomaly",  # yaad.anomaly: notes where each recorded op was called
)
_interpreters: list = []  # (position in MODES, interpret), in that order
_final: Callable = None  # type: ignore[assignment]  # yaad.op.apply


def set_final(apply: Callable) -> None:
    """Set the ordinary call (``yaad.op.apply``), run after the last interpreter."""
    global _final
    _final = apply


def register_mode(name: str, interpret: Callable) -> None:
    """Add the interpreter of mode ``name`` (one of :data:`MODES`) to the op call."""
    entry = (MODES.index(name), interpret)
    _interpreters[:] = sorted([e for e in _interpreters if e[0] != entry[0]] + [entry],
                              key=lambda e: e[0])


def run_modes(op: Any, args: tuple, kw: dict, k: int = 0) -> Any:
    """``op`` on its arguments through the mode interpreters from the ``k``-th on; after
    the last, the ordinary call (with the modes off while it runs)."""
    if k < len(_interpreters):
        return _interpreters[k][1](op, args, kw, k + 1)
    state.modes_on = False
    try:
        return _final(op, args, kw)
    finally:
        state.refresh()
