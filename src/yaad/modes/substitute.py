"""The substitution mode: a hook that sees, and may replace, the arguments of every op
before any other mode interprets the call.

The solvers (``yaad.func.fixed_point``, ``root``, ``yaad.sparse.linalg``) re-run a user's
function with the tensors it captured (a closure over parameters) replaced by others:
fresh leaves for a gradient, tensors carrying forward-mode tangents for a tangent. The
replacement must come first, so that vmap and forward mode see the tensors that are
actually used (a tangent carried by a substitute is then propagated, and one carried by
the replaced tensor is not).
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.grad_mode import state
from .registry import register_mode, run_modes

__all__ = ["with_substitute"]


def with_substitute(hook: Callable[..., Any], body: Callable[[], Any]) -> Any:
    """Run ``body()`` with ``hook(args, kw) -> (args, kw)`` applied to the arguments of
    every op it calls (after the hook of an enclosing call, which ``hook`` may chain to
    through ``state.substitute`` read before this call)."""
    prev = state.substitute
    state.substitute = hook
    state.refresh()
    try:
        return body()
    finally:
        state.substitute = prev
        state.refresh()


def _interpret(op: Any, args: tuple[Any, ...], kw: dict[str, Any], k: int) -> Any:
    hook = state.substitute
    if hook is not None:
        args, kw = hook(args, kw)
    return run_modes(op, args, kw, k)


register_mode("substitute", _interpret, order=10, switch="substitute")
