"""The inputs of ``autograd.grad`` (and of ``backward(inputs=...)``): the part of the graph
a backward pass runs for them, and the capture of their gradients; the checks of a
backward call's outputs and inputs.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from .errors import error
from .graph import Node
from .hooks import dense
from .tensor import Tensor

# The inputs of a pass by where their gradient arrives (the node that made an input, or
# the input itself for a leaf): their positions in ``inputs``.
Targets = dict["Node | Tensor", list[int]]


def _parent_nodes(node: Node) -> Iterator[Node]:
    for p in node.parents:
        tp = type(p)
        if tp is Node:
            yield p
        elif tp is tuple:
            yield p[0]


def leading_to(start: list[Node], targets: Targets) -> tuple[set[Node], set[Node]]:
    """The part of the graph that autograd.grad runs: the nodes on a path from ``start``
    to a target that lead further back to one (they run), and the target nodes that do
    not (stops: their gradient is taken as it arrives, and they are left alone, so that
    a pass nested in another one, as a checkpoint's, does not touch the outer pass's
    nodes)."""
    seen: set[Node] = set()
    order = []
    stack = [(n, False) for n in start]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((p, False) for p in _parent_nodes(node) if p not in seen)
    needed: set[Node] = set()
    stops: set[Node] = set()
    for node in order:  # every node after the nodes it depends on
        if any(p in targets if isinstance(p, Tensor) else
               (p[0] if type(p) is tuple else p) in needed or
               (p[0] if type(p) is tuple else p) in stops
               for p in node.parents if p is not None):
            needed.add(node)
        elif node in targets:
            stops.add(node)
    return needed, stops


def capture(node: Node, g: Any, ks: list[int], inputs: Sequence[Tensor],
            results: list[Any]) -> Any:
    """Record the gradient of intermediate inputs of autograd.grad; returns ``g``."""
    if node.op.nout != 1 and g is not None:
        g = list(g)
    for k in ks:
        edge = inputs[k]._node
        if type(edge) is tuple:
            results[k] = dense(g[edge[1]]) if g is not None else None
        else:
            results[k] = dense(g)
    return g


def check_output(t: Any, k: int) -> None:
    """Raise unless output ``k`` of a backward call is a tensor that requires grad."""
    if not isinstance(t, Tensor):
        raise error("output-not-tensor", k=k, type=type(t).__name__)
    if not t.requires_grad:
        raise error("no-grad-fn", k=k)


def check_inputs(inputs: Any, caller: str = "backward") -> tuple[Tensor, ...]:
    """The ``inputs=`` of a backward call (``caller``: backward or grad) as a non-empty
    tuple of tensors that require grad."""
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    if not inputs:
        raise error("empty-inputs", caller=caller)
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise error("input-not-tensor", k=k, type=type(t).__name__)
        if not t.requires_grad:
            raise error("input-without-grad", k=k)
    return tuple(inputs)


def check_unused(inputs: Sequence[Tensor], results: Sequence[Any],
                 allow_unused: bool) -> None:
    """Raise for an input that got no gradient, unless ``allow_unused``."""
    if allow_unused:
        return
    for k, t in enumerate(inputs):
        if results[k] is None:
            raise error("unused-input", k=k, shape=t.shape)
