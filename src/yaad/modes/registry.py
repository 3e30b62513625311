"""The modes of an op call (vmap, forward mode, compile tracing, checkpoint, anomaly
detection, a solver's substitution), dispatched as a chain of interpreters, as in JAX's
Autodidax.

A mode registers itself, in its own module, with one call of :func:`register_mode`: its
name, its place in the chain, its per-thread switch (``state.<switch>``, added to the
grad-mode state; ``state.modes_on`` is true while any mode's switch is set), its
interpreter of an op call and, if it has one, its hook on the backward call. Nothing
else names the mode: not the grad-mode state, not the op call, not the engine.

While a mode is on (``state.modes_on``), every op call goes through the registered
interpreters in the order of their ``order`` (:data:`MODES` lists the names in that
order): each is ``interpret(op, args, kw, k)`` and either handles the call or passes it
on with ``run_modes(op, args, kw, k)``; after the last one the call is recorded as usual
(by ``yaad.op.apply``, which ``yaad.op`` sets here: it sits above this module). A
``backward()`` or ``autograd.grad`` call goes through the backward hooks the same way
(see :func:`register_mode`).

The built-in modes and their places: substitute 10 (a solver's closure replaces captured
tensors), vmap 20 (a batched argument goes first), forward 30 (an argument carries a
tangent), trace 40 (``yaad.compile`` is recording), checkpoint 50 (sees, and may
substitute, every argument), anomaly 60 (notes where each recorded op was called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

from ..core.grad_mode import add_switch, remove_switch, state

if TYPE_CHECKING:
    from ..core.tensor import Tensor

__all__ = ["BackwardCall", "MODES", "register_mode", "remove_mode", "run_modes", "set_final"]


class _Mode(NamedTuple):
    order: float
    name: str
    interpret: Callable[..., Any]
    switch: str
    backward: Callable[..., Any] | None


# A backward call as the backward hooks see it: (outputs, grad_outputs, retain_graph,
# create_graph, inputs, capture, allow_unused), the arguments of engine.run_backward.
BackwardCall = tuple["Sequence[Tensor]", "Sequence[Any]", "bool | None", bool, Any, bool, bool]

_modes: list[_Mode] = []  # in order
MODES: list[str] = []  # the names of the registered modes, in order
_interpreters: list[Callable[..., Any]] = []  # their interpreters, in order
backward_hooks: list[Callable[..., Any]] = []  # their backward hooks, in order
_final: Callable[..., Any] = None  # type: ignore[assignment]  # yaad.op.apply


def set_final(apply: Callable[..., Any]) -> None:
    """Set the ordinary call (``yaad.op.apply``), run after the last interpreter."""
    global _final
    _final = apply


def register_mode(name: str, interpret: Callable[..., Any], *, order: float, switch: str,
                  default: Any = None, backward: Callable[..., Any] | None = None) -> None:
    """Add mode ``name`` to the op call (again: replace it).

    Parameters
    ----------
    name : str
        The mode's name (in :data:`MODES`).
    interpret : callable
        ``interpret(op, args, kw, k)``: handle the op call, or pass it on with
        ``run_modes(op, args, kw, k)``.
    order : float
        The place in the chain: interpreters with a lower order see the call first (the
        built-in places are in the module's docstring).
    switch : str
        The name of the mode's per-thread switch, ``state.<switch>``: the mode sets it
        (anything truthy) and calls ``state.refresh()`` on entry, and puts the previous
        value back (and refreshes) on exit.
    default : object, optional
        The switch's value in every thread until set (off: falsy).
    backward : callable, optional
        ``backward(call, check, k)``, run when ``backward()`` or ``autograd.grad`` is
        called while a mode is on: ``call`` is the tuple ``(outputs, grad_outputs,
        retain_graph, create_graph, inputs, capture, allow_unused)`` and ``check`` the
        checker of each rule's result (or None); it handles the call, or passes it on
        with ``yaad.core.engine.run_backward(*call, check=check, hook=k)``.
    """
    add_switch(switch, default)
    mode = _Mode(order, name, interpret, switch, backward)
    _modes[:] = sorted([m for m in _modes if m.name != name] + [mode], key=lambda m: m.order)
    _rebuild()


def remove_mode(name: str) -> None:
    """Remove mode ``name`` and its switch (what :func:`register_mode` added)."""
    for m in _modes:
        if m.name == name:
            _modes.remove(m)
            if all(other.switch != m.switch for other in _modes):
                remove_switch(m.switch)
            break
    _rebuild()


def _rebuild() -> None:
    MODES[:] = [m.name for m in _modes]
    _interpreters[:] = [m.interpret for m in _modes]
    backward_hooks[:] = [m.backward for m in _modes if m.backward is not None]


def run_modes(op: Any, args: tuple[Any, ...], kw: dict[str, Any], k: int = 0) -> Any:
    """``op`` on its arguments through the mode interpreters from the ``k``-th on; after
    the last, the ordinary call (with the modes off while it runs)."""
    if k < len(_interpreters):
        return _interpreters[k](op, args, kw, k + 1)
    st = state
    on = st.modes_on
    st.modes_on = False
    try:
        return _final(op, args, kw)
    finally:
        st.modes_on = on  # (the modes inside are nested: the switches are as they were)
