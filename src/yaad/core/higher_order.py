"""What a backward pass needs to be differentiated again: a node's saved values as tensors
linked into the graph, so that the rules applied to them are recorded (``create_graph``)
or carry forward-mode tangents (a backward pass inside ``jvp``: ``hvp``, ``jacfwd`` of
``jacrev``). A first-order backward never comes here: its rules see the saved arrays.
"""

from __future__ import annotations

from typing import Any

from .backend import is_inexact
from .grad_mode import state
from .graph import ShapeDtype
from .tensor import Tensor, make_tensor


def saved_as_tensors(node: Any) -> tuple[Any, Any]:
    """Saved values as tensors linked into the graph, so that rules applied to them are
    recorded (create_graph) or carry forward-mode tangents (a backward pass inside
    ``jvp``: hvp, jacfwd of jacrev). Returns the node's (args, ans)."""
    extra = node.extra
    duals = extra.duals if extra is not None else None
    if duals is not None and not state.enabled and not _active(duals):
        return node.args, node.ans  # the tangents belong to levels that have ended
    parents = node.parents
    args = []
    for i, a in enumerate(node.args):
        p = parents[i] if i < len(parents) else None
        d = duals[0][i] if duals is not None else None
        if isinstance(d, Tensor):
            args.append(d)
        elif p is None or a is None or isinstance(a, ShapeDtype):
            args.append(a)
        elif isinstance(p, Tensor):
            args.append(p)
        else:
            args.append(make_tensor(a, p, True))
    ans = node.ans
    tangents = duals[1] if duals is not None else None
    if isinstance(ans, tuple):
        ans = tuple(_output_tensor(a, (node, k), tangents[k] if tangents else None)
                    for k, a in enumerate(ans))
    elif ans is not None:
        ans = _output_tensor(ans, node, tangents)
    return args, ans


def _active(duals: tuple[Any, ...]) -> bool:
    """Whether any tangent kept for a node belongs to a forward-mode level still active."""
    levels = state.levels
    tangents = duals[1]
    for tans in tangents if isinstance(tangents, tuple) else (tangents,):
        if tans and any(lv in levels for lv in tans):
            return True
    return False


def _output_tensor(a: Any, edge: Any, tangents: dict[Any, Any] | None) -> Any:
    """A node's saved output as a tensor produced by that node (output ``edge``)."""
    if isinstance(a, ShapeDtype):
        return a
    kind = getattr(a.dtype, "kind", None)  # (another library's dtype has none)
    diff = kind in "fc" if kind is not None else is_inexact(a)
    t = make_tensor(a, edge if diff else None, diff, tangents)
    return t
