"""PyTorch's view of a node's edges, ``grad_fn.next_functions`` (what graph viewers read)."""

from __future__ import annotations

from typing import Any


class AccumulateGrad:
    """A leaf as an edge of :attr:`Node.next_functions` (PyTorch's name): ``variable``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def next_functions(node: Any) -> tuple[tuple[Any, int], ...]:
    """Per input of ``node``: ``(node, output index)``, an :class:`AccumulateGrad` for a
    leaf (its ``variable``), or ``(None, 0)`` for an input that needs no gradient."""
    out = []
    for p in node.parents:
        if type(p) is tuple:
            out.append((p[0], int(p[1])))
        elif p is None or hasattr(p, "op"):  # (a node)
            out.append((p, 0))
        else:
            out.append((AccumulateGrad(p), 0))
    return tuple(out)
