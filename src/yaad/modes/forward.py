"""Forward mode: an op called on a tensor that carries a tangent (inside ``yaad.func.jvp``,
``jacfwd``, ``hvp``) computes the output's tangent with the op's JVP rules.

A mode (see ``yaad.modes.MODES``): its interpreter takes an op call when an argument carries
the tangent of an active level, runs the op on the primal values (lower levels handled
by the same dispatch), then sums the JVP rules of the inputs with tangents.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator

import numpy as np

from ..core.backend import is_inexact
from ..core.grad_mode import new_level, state
from ..core.gradients import cast_gradient
from ..core.graph import extra_of
from ..core.levels import strip_level, tangent_of, top_level, with_tangent
from ..core.op import Op, apply
from ..core.tensor import Tensor
from ..core.views import note_views
from ..ops.shape import broadcast_to
from ..ops.strong_zero import strong_zero
from .registry import register_mode, run_modes


@contextlib.contextmanager
def forward_level() -> Iterator[int]:
    """A new forward-mode level, innermost while the block runs."""
    level = new_level()
    state.levels = state.levels + (level,)
    state.refresh()
    try:
        yield level
    finally:
        state.levels = tuple(lv for lv in state.levels if lv != level)
        state.refresh()


def _interpret(op: Op, args: tuple[Any, ...], kw: dict[str, Any], k: int) -> Any:
    levels = state.levels
    if levels:
        top = top_level(args, kw, levels)
        if top is not None:
            return _apply_forward_mode(op, args, kw, top)
    return run_modes(op, args, kw, k)


def _apply_forward_mode(op: Op, args: tuple[Any, ...], kw: dict[str, Any], level: int) -> Any:
    """Apply ``op`` to dual numbers: the primal (handling lower levels recursively),
    then the output's tangent at ``level`` as the sum of the inputs' JVP rules."""
    if kw:
        for k, v in kw.items():
            if tangent_of(v, level) is not None:
                raise TypeError(f"{op.name}: keyword argument {k}= carries a forward-mode "
                                "tangent; keyword arguments are not differentiated. Pass "
                                "it positionally.")
        base_kw = {k: strip_level(v, level) for k, v in kw.items()}
    else:
        base_kw = kw
    base_args = tuple([strip_level(a, level) for a in args])
    out = apply(op, base_args, base_kw)
    vjps = op.vjps
    tangents = []
    for i, a in enumerate(args):
        t = tangent_of(a, level)
        if t is not None and (op.variadic or (i < len(vjps) and vjps[i] is not None)):
            tangents.append((i, t))
    if not tangents:
        return out
    multi = op.nout != 1
    if _plain(base_args, out, tangents, multi):
        # Nothing else differentiates the tangent (no lower level, no reverse recording):
        # run the rules on the arrays, without the cost of tensors.
        rule_out = tuple(o._data for o in out) if multi else out._data
        rule_args = tuple([a._data if isinstance(a, Tensor) else a for a in base_args])
        rule_kw = {k: v._data if isinstance(v, Tensor) else v for k, v in base_kw.items()}
        tangents = [(i, t._data if isinstance(t, Tensor) else t) for i, t in tangents]
    else:
        rule_out, rule_args, rule_kw = out, base_args, base_kw
    total = _sum_contributions(op, tangents, rule_out, rule_args, rule_kw, multi, False)
    if op.elementwise and not multi and total is not None and _not_finite(total):
        # A zero tangent contributes 0, also where the partial is infinite (gammainc's in x
        # at 0 for a < 1: inf * 0 was NaN where reverse mode gives the limit), as in
        # PyTorch's forward AD and JAX; a finite contribution is kept as it is. (One check
        # of the sum; the contributions again only where it is not finite.)
        total = _sum_contributions(op, tangents, rule_out, rule_args, rule_kw, multi, True)
    if total is None:
        return out
    out_tangents: dict[int, Any] | tuple[dict[int, Any] | None, ...]
    if not multi:
        if not is_inexact(out._data):
            return out
        out = with_tangent(out, level, _fit_tangent(total, out))
        node, out_tangents = out._node, out._tangents
    else:
        out = tuple(o if tt is None or not is_inexact(o._data)
                    else with_tangent(o, level, _fit_tangent(tt, o))
                    for o, tt in zip(out, total))
        node = next((o._node[0] for o in out if o._node is not None), None)
        out_tangents = tuple(getattr(o, "_tangents", None) for o in out)
    if node is not None:
        # A backward pass through this node while the level is active (hvp, jacfwd of
        # jacrev) must see the saved values with their tangents: keep the dual inputs.
        extra_of(node).duals = (args, out_tangents)
    if not op.save_args:  # (the views apply() noted are of the stripped copies)
        note_views(op, args, kw, out, state.enabled)
    return out


def _sum_contributions(op: Op, tangents: list[Any], rule_out: Any, rule_args: tuple[Any, ...],
                       rule_kw: dict[str, Any], multi: bool, strong: bool) -> Any:
    """The sum of the inputs' JVP rules (``strong``: each with exact zeros where its tangent
    is zero and the rule gave an inf or a NaN)."""
    total = None
    for i, t in tangents:
        contrib = _jvp_rule(op, i, t, rule_out, rule_args, rule_kw)
        if contrib is None:
            continue
        if strong:
            contrib = strong_zero(t, contrib)
        if total is None:
            total = contrib
        elif multi:
            total = tuple(b if a is None else a if b is None else a + b
                          for a, b in zip(total, contrib))
        else:
            total = total + contrib
    return total


def _not_finite(c: Any) -> bool:
    """Whether a tangent may hold an inf or a NaN (one sum; True where it cannot be read
    cheaply, as a lazy array: strong_zero then decides)."""
    if isinstance(c, Tensor):
        c = c._data
    if type(c) is np.ndarray:
        c = c.sum()
    if isinstance(c, float):  # (np.float64 too; math's test is the cheap one)
        return not math.isfinite(c)
    if isinstance(c, (np.floating, np.complexfloating, complex)):
        return not np.isfinite(c)
    return True


def _plain(base_args: tuple[Any, ...], out: Any, tangents: list[Any], multi: bool) -> bool:
    """Whether the JVP rules may run on plain arrays: no argument, output or tangent
    carries a tangent of another level, and nothing is recorded for reverse mode."""
    rec = state.enabled
    for o in out if multi else (out,):
        if getattr(o, "_tangents", None) or (rec and o.requires_grad):
            return False
    for a in base_args:
        if isinstance(a, Tensor) and getattr(a, "_tangents", None):
            return False
    for _, t in tangents:
        if isinstance(t, Tensor) and (getattr(t, "_tangents", None) or
                                      (rec and t.requires_grad)):
            return False
    return True


def _fit_tangent(t: Any, out: Tensor) -> Any:
    """The tangent ``t`` with the shape and dtype of ``out`` (real part for a real output)."""
    shape = out.shape
    tdt = getattr(t, "dtype", None)
    if tdt is None:  # a Python number
        t = np.asarray(t)
        tdt = t.dtype
    if t.shape != shape:
        t = broadcast_to(t, shape)
    dt = out.dtype
    if tdt != dt:
        t = cast_gradient(t, dt)
    return t


def _jvp_rule(op: Op, i: int, t: Any, out: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """The tangent of the output of ``op`` due to the tangent ``t`` of input ``i``."""
    jvps = op.jvps
    if op.variadic:
        rule = jvps[0] if jvps else None
        if rule is not None:
            return rule(i, t, out, *args, **kw)
    else:
        rule = jvps[i] if i < len(jvps) else None
        if rule is not None:
            return rule(t, out, *args, **kw)
    lin = op.linear
    fn = op.fn
    if fn is not None and (lin is True or (lin and i in lin)):
        # Linear in input i with the others held fixed (multiply, matmul, einsum,
        # reshape): the tangent goes through the op itself in place of input i.
        new_args = list(args)
        new_args[i] = t
        return fn(*new_args, **kw)
    raise NotImplementedError(
        f"{op.name}: no JVP rule for input {i}, so forward mode (jvp, jacfwd, hessian, "
        f"hvp) cannot go through it. Declare one with {op.name}.defjvp(...) (or "
        f"yaad.core.op(..., jvp=...)), or use reverse mode (vjp, jacrev). "
        f"(see docs/errors.md#no-jvp-rule)")


register_mode("forward", _interpret, order=30, switch="levels")
