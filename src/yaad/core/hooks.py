"""What happens to a gradient on its arrival at a tensor: the tensor's hooks run on it
(``register_hook``), and it is accumulated into ``.grad`` (a leaf's, or a non-leaf's
after ``retain_grad``).

The functions taking ``self`` are bound to :class:`~yaad.tensor.Tensor` as methods by
``methods.install``; the engine calls the others when a gradient reaches a tensor.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from .backend import is_foreign, namespace
from .grad_mode import state
from .graph import Node, extra_of
from .tensor import Tensor

ndarray = np.ndarray


def retain_grad(self: Tensor) -> None:
    """Keep :attr:`grad` for this non-leaf tensor after backward (leaves always do)."""
    if state.tracer is not None:
        state.tracer.read(self, "retain_grad")
    node = self._node
    if node is None:
        return
    node, index = node if isinstance(node, tuple) else (node, 0)
    extra: Any = extra_of(node)  # (op.NodeExtra is not annotated)
    if extra.retained is None:
        extra.retained = {}
    extra.retained[index] = weakref.ref(self)


def retains_grad(self: Tensor) -> bool:
    """Whether :meth:`retain_grad` was called on this non-leaf tensor."""
    node = self._node
    if node is None:
        return False
    node, index = node if isinstance(node, tuple) else (node, 0)
    retained = node.extra.retained if node.extra is not None else None
    ref = retained.get(index) if retained else None
    return ref is not None and ref() is self


def register_hook(self: Tensor, fn: Callable[[Any], Any]) -> HookHandle:
    """Call ``fn(grad)`` when this tensor's gradient is computed.

    ``fn`` may return a replacement gradient. Returns a handle with ``remove()``.
    """
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that does not require grad")
    if state.tracer is not None:
        state.tracer.read(self, "hook")
    node = self._node
    if node is None:
        hooks = getattr(self, "_hooks", None)
        if hooks is None:
            hooks = self._hooks = []
        hooks.append(fn)
        return HookHandle(hooks, fn)
    node, index = node if isinstance(node, tuple) else (node, 0)
    extra: Any = extra_of(node)  # (op.NodeExtra is not annotated)
    if extra.hooks is None:
        extra.hooks = {}
    hooks = extra.hooks.setdefault(index, [])
    hooks.append(fn)
    return HookHandle(hooks, fn)


class HookHandle:
    """Returned by :meth:`Tensor.register_hook`; ``remove()`` takes the hook away."""

    def __init__(self, hooks: list[Callable[[Any], Any]], fn: Callable[[Any], Any]) -> None:
        self.hooks = hooks
        self.fn = fn

    def remove(self) -> None:
        if self.fn in self.hooks:
            self.hooks.remove(self.fn)


def dense(g: Any) -> Any:
    """``g`` as users see it: a lazy structured gradient (ScaledIdentity) made an array."""
    if g is None or isinstance(g, (np.ndarray, np.generic, Tensor)) or is_foreign(g):
        return g
    return np.asarray(g)


def run_hooks(hooks: list[Any], g: Any) -> Any:
    g = dense(g)
    for fn in hooks:
        r = fn(g)
        if r is not None:
            g = r
    return g


def node_hooks(node: Node, g: Any) -> Any:
    """Run the tensor hooks of ``node``'s outputs on ``g`` (a list for several outputs)
    and fill the ``.grad`` of retained ones; returns the (maybe replaced) gradient."""
    multi = node.op.nout != 1
    extra = node.extra
    if extra is None:
        return g
    if extra.hooks:
        for k, hooks in extra.hooks.items():
            if multi:
                if g is not None and g[k] is not None:
                    g[k] = run_hooks(hooks, g[k])
            elif g is not None:
                g = run_hooks(hooks, g)
    if extra.retained:
        for k, ref in extra.retained.items():
            t = ref()
            gk = dense((g[k] if g is not None else None) if multi else g)
            if t is not None and gk is not None:
                prev = getattr(t, "_grad", None)
                t._grad = gk.copy() if prev is None else accumulate_grad(prev, gk, False)
    return g


def own(g: Any, sole: bool = False) -> Any:
    """``g``, copied unless the caller knows nothing else holds it (``sole``: its reference
    count, taken by the caller) and it is no view: a leaf's .grad must not alias."""
    if isinstance(g, Tensor):
        return g
    if not isinstance(g, np.ndarray):
        if is_foreign(g):  # (another library's array: copied by that library)
            return namespace(g).asarray(g, copy=True)
        return np.asarray(g).copy()
    return g if sole and g.base is None else g.copy()


def accumulate_grad(prev: Any, g: Any, create_graph: bool) -> Any:
    """``prev + g`` as a tensor's new ``.grad``: added into ``prev`` in place where it is
    an array of the same shape and dtype (as PyTorch does, so that a reference to
    ``x.grad`` sees the sum), except under create_graph (then a new, recorded sum)."""
    if prev is None:
        return own(g)
    if (not create_graph and type(prev) is ndarray and prev.flags.writeable
            and isinstance(g, ndarray) and prev.shape == g.shape and prev.dtype == g.dtype):
        prev += g
        return prev
    return prev + g
