"""The recorded graph: nodes, and the version counters that guard their saved values.

A :class:`Node` is one recorded call of an op (made by :mod:`yaad.op`, run by
:mod:`yaad.engine`). In-place changes of an array's memory are counted in
:mod:`yaad.core.versions` (:func:`mark_modified`, re-exported here); a node notes the
clock when it is made, and backward refuses a saved value whose memory changed (or whose
tensor was detached in place) afterwards (:func:`check_saved`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .edges import next_functions
from .errors import error
from .versions import _detached, _modified, clock, mark_detached, mark_modified, version_of

__all__ = ["Node", "ShapeDtype", "shape_dtype", "NodeExtra", "UNARY", "clock", "record_node",
           "new_node", "extra_of", "check_saved", "mark_modified", "mark_detached", "version_of"]

try:  # Cython's pure-Python mode: the compiled build reads Node's decorators below
    import cython  # type: ignore[import-untyped, unused-ignore]
except ImportError:
    from ._pure_cython import cython

ndarray = np.ndarray
UNARY = object()  # Node.e1 of a node with one input (neither a Node nor a tuple: no edge)

# A C type in the compiled build (graph.pxd): a node that keeps an input's shape and dtype
# makes one per call (indexing, reshape: see op._kept), through :func:`shape_dtype`.
@cython.cclass
class ShapeDtype:
    """Shape and dtype of an input whose value the rules do not need (saves memory)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __repr__(self) -> str:
        return f"ShapeDtype(shape={self.shape}, dtype={self.dtype})"


# A C type in the compiled build (graph.pxd), freeing a long chain iteratively (trashcan).
@cython.trashcan(True)
@cython.cclass
class Node:
    """One recorded call of an op: what backward needs to run its rules."""

    # op: the Op. args: the saved inputs (arrays), or a ShapeDtype / None for inputs whose
    # values the rules do not read (None: same shape and dtype as the output). kw: None
    # when empty. ans: the saved output (None when not saved). parents: per input, the
    # edge its gradient goes along (a Node, a (Node, output index) pair, a leaf Tensor),
    # or None; in slots e0, e1 (UNARY for one input) or more (3+ inputs), not a tuple: one
    # object less per node for the garbage collector (W8, docs/performance.md). epoch: the
    # clock when recorded. extra: None, or a NodeExtra. visit, count, acc: the engine's
    # bookkeeping in a pass (its id, the consumers still to deliver, the gradient so far).
    __slots__ = ("op", "args", "kw", "ans", "e0", "e1", "more", "epoch", "extra", "visit",
                 "count", "acc", "__weakref__")
    op: Any  # the Op
    args: Any
    kw: dict[str, Any] | None
    ans: Any
    more: tuple[Any, ...] | None
    epoch: int
    extra: NodeExtra | None
    visit: int
    count: int
    acc: Any

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"

    @property
    def name(self) -> str:
        return str(self.op.name)

    @property
    def parents(self) -> tuple[Any, ...]:
        if self.more is not None:
            return self.more
        return (self.e0,) if self.e1 is UNARY else (self.e0, self.e1)

    @parents.setter
    def parents(self, edges: tuple[Any, ...]) -> None:
        n = len(edges)
        self.e0, self.e1, self.more = ((edges[0], UNARY, None) if n == 1 else (*edges, None)
                                       if n == 2 else (None, None, tuple(edges)))

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """PyTorch's view of the edges (see :func:`yaad.core.edges.next_functions`)."""
        return next_functions(self)


def shape_dtype(shape: tuple[int, ...], dtype: np.dtype[Any]) -> ShapeDtype:
    """``ShapeDtype(shape, dtype)``, made without a call of ``__init__`` (the op call's)."""
    sd = ShapeDtype.__new__(ShapeDtype)
    sd.shape = shape
    sd.dtype = dtype
    return sd


def record_node(op: Any, args: tuple[Any, ...], kw: dict[str, Any] | None, ans: Any,
                e0: Any, e1: Any = UNARY, more: tuple[Any, ...] | None = None) -> Node:
    """A node recorded now, the one constructor: its edges ``e0`` and ``e1`` (``UNARY``
    for one input), or ``more`` for three inputs or more."""
    node = Node.__new__(Node)
    node.op = op
    node.args = args
    node.kw = kw
    node.ans = ans
    node.e0 = e0
    node.e1 = e1
    node.more = more
    node.epoch = clock[0]
    node.extra = None
    node.visit = 0
    return node


def new_node(op: Any, args: tuple[Any, ...], kw: dict[str, Any] | None, ans: Any,
             parents: tuple[Any, ...]) -> Node:
    """:func:`record_node` with the edges as one sequence (any number of inputs)."""
    n = len(parents)
    if n == 1:
        return record_node(op, args, kw, ans, parents[0])
    if n == 2:
        return record_node(op, args, kw, ans, parents[0], parents[1])
    return record_node(op, args, kw, ans, None, None, tuple(parents))


class NodeExtra:
    """Hooks, retained gradients and forward-mode duals of a node."""

    __slots__ = ("hooks", "retained", "duals")

    def __init__(self) -> None:
        self.hooks: dict[int, list[Any]] | None = None
        self.retained: dict[int, Any] | None = None
        self.duals: Any = None


def extra_of(node: Node) -> NodeExtra:
    """The node's :class:`NodeExtra`, made on first use."""
    extra = node.extra
    if extra is None:
        extra = node.extra = NodeExtra()
    return extra


def check_saved(node: Node) -> None:
    """Raise if a value saved by ``node`` was modified in place after it was saved."""
    saved = list(node.args)
    ans = node.ans
    saved.extend(ans if isinstance(ans, tuple) else (ans,))
    for k, a in enumerate(saved):
        if not isinstance(a, ndarray):
            continue
        root = a.base if isinstance(a.base, ndarray) else a
        entry = _modified.get(id(root))
        if entry is not None and entry[2]() is root and entry[1] > node.epoch:
            what = f"input {k}" if k < len(node.args) else "its output"
            raise error("inplace-saved", what=what, name=node.op.name, shape=a.shape,
                        dtype=a.dtype, version=entry[0])
        gone = _detached.get(id(root)) if _detached else None
        if gone is not None and gone[1]() is root and gone[0] > node.epoch:
            what = f"input {k}" if k < len(node.args) else "its output"
            raise error("detached-saved", what=what, name=node.op.name)
