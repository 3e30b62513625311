"""Levels: the tangents (forward mode) and batch axes (vmap) that a tensor carries.

Each ``jvp`` or ``vmap`` opens a level, a number (``grad_mode.new_level``); a tensor
carries its entry for each level in ``_tangents`` (a tangent, or vmap's ``BatchAxis``).
These helpers read and set them; the modes (``forward_mode.py``, ``batching.py``) decide
what an op call does with them.
"""

from __future__ import annotations

from typing import Any

from .grad_mode import state
from .op import op
from .tensor import Tensor, make_tensor

alias = op(lambda x: x, name="alias", vjp=lambda g, ans, x: g, linear=True,
           save_args=False, save_ans=False, elementwise=True)
alias.__doc__ = """The same value as a new tensor, recorded by an identity op.

A function of the alias can be differentiated with respect to the alias alone: the
transforms alias their inputs so that a nested transform does not confuse its variable
with an enclosing one."""


def top_level(args: tuple[Any, ...], kw: dict[str, Any], levels: tuple[Any, ...]) -> int | None:
    """The innermost active forward-mode level carried by an argument, or None.

    Tangents of levels that are no longer active (a dual number that escaped its
    ``jvp``) are ignored."""
    top = None
    for a in (*args, *kw.values()) if kw else args:
        if isinstance(a, Tensor):
            tans = getattr(a, "_tangents", None)
            if tans:
                for lv in tans:
                    if (top is None or lv > top) and lv in levels:
                        top = lv
    return top


def _copy_tensor(x: Tensor, tangents: dict[Any, Any] | None) -> Tensor:
    return make_tensor(x._data, x._node, x.requires_grad, tangents)


def strip_level(x: Any, level: int) -> Any:
    """The same value without its tangent at ``level`` (a new tensor sharing data and node)."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    if not tans or level not in tans:
        return x
    return _copy_tensor(x, {k: v for k, v in tans.items() if k != level})


def tangent_of(x: Any, level: int) -> Any:
    """The tangent of ``x`` at ``level``, or None."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    return tans.get(level) if tans else None


def with_tangent(x: Tensor, level: int, tangent: Any) -> Tensor:
    """A tensor equal to ``x`` (same data and node) carrying ``tangent`` at ``level``.

    A leaf that requires grad is first aliased by an identity op: the tensor returned is
    a different object, and operations on it must still reach the leaf's gradient.
    """
    if x._node is None and x.requires_grad and state.enabled:
        x = alias(x)
    old = getattr(x, "_tangents", None)
    tans = dict(old) if old else {}
    tans[level] = tangent
    return _copy_tensor(x, tans)
