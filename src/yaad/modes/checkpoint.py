"""``yaad.checkpoint``: trade compute for memory by recomputing a segment in backward.

``checkpoint(f, *args)`` runs ``f`` on fresh copies of its inputs, keeps only its
outputs' values, and records one node in place of its operations. Backward recomputes
``f``, backpropagates through the recomputed graph and drops it. Only the segment's
inputs are kept between forward and backward, not its intermediate activations. (As
PyTorch's ``use_reentrant=False``: ``f`` runs with recording on, so it may itself call
``autograd.grad`` or ``backward``.)

Tensors that ``f`` uses without receiving them as arguments (the weights of a layer it
closes over) are found during the forward run and get their gradients too.
"""

from __future__ import annotations

from typing import Any, Callable, cast

from ..core.engine import run_backward
from ..core.grad_mode import enable_grad, state
from ..core.graph import clock
from ..core.op import Op
from ..core.tensor import Tensor, make_tensor
from ..function import Function, FunctionCtx
from .registry import register_mode, run_modes

__all__ = ["checkpoint"]



def checkpoint(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``f(*args, **kwargs)`` without keeping its activations for backward.

    Parameters
    ----------
    f : callable
        Returns a tensor or a tuple of tensors. It must compute the same thing when called
        again (no randomness that changes between calls): backward calls it once more.
    *args
        Its arguments. Gradients flow to tensor arguments and to tensors that ``f`` uses
        from outside (closures, module parameters) that require grad.
    **kwargs
        Its arguments. Gradients flow to tensor arguments and to tensors that ``f`` uses
        from outside (closures, module parameters) that require grad.

    Returns
    -------
    Tensor or tuple of Tensor
        What ``f`` returns, recorded as one operation named ``checkpoint``.

    Notes
    -----
    Second derivatives through a checkpoint work (the recomputation is then recorded),
    at the cost of a backward pass that also visits the graph before the segment.
    In forward mode (inside ``yaad.func.jvp``) and under ``no_grad`` it just calls ``f``.

    Examples
    --------
    >>> h = x
    >>> for layer in layers:
    ...     h = yaad.checkpoint(layer, h)
    >>> loss(h).backward()
    """
    if not state.enabled or state.levels:
        return f(*args, **kwargs)
    return _Segment(f, args, kwargs).run(args)


class _Segment:
    """One checkpointed call: what backward needs to recompute it."""

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self.f = f
        self.kwargs = kwargs
        self.slots = [k for k, a in enumerate(args)
                      if isinstance(a, Tensor) and a.requires_grad]
        # Arguments without gradient are kept as they are; the others come back from the
        # saved arrays in backward.
        self.args = tuple(None if k in self.slots else a for k, a in enumerate(args))
        # id(tensor as f uses it) -> (that tensor, node input)
        self.closures: dict[int, tuple[Any, Any]] = {}
        # the segment hook that was active around this one
        self.hook: Callable[..., Any] | None = None
        self.outputs: Any = None
        self.meta: list[Any] = []
        self.where: list[int] = []  # positions of the tensors among f's outputs
        self.fresh: list[Any] = []  # the copies of the inputs that the forward run uses
        self.start = 0  # nodes recorded from now on belong to the forward run

    def _collect(self, args: tuple[Any, ...], kw: dict[Any, Any]) -> tuple[Any, ...]:
        # The segment hook during the forward run: a tensor that requires grad and was
        # recorded before the run (or is a leaf other than the inputs' copies) comes
        # from outside the segment.
        eff_args, eff_kw = self.hook(args, kw) if self.hook is not None else (args, kw)
        for raw, eff in zip((*args, *kw.values()), (*eff_args, *eff_kw.values())):
            if isinstance(eff, Tensor) and eff.requires_grad and self._outside(eff):
                self.closures.setdefault(id(raw), (raw, eff))
        return eff_args, eff_kw

    def _outside(self, t: Tensor) -> bool:
        node = t._node
        if node is None:
            return not any(t is c for c in self.fresh)
        node = node[0] if type(node) is tuple else node
        return bool(node.epoch < self.start)

    def run(self, args: tuple[Any, ...]) -> Any:
        call = [_leaf(a.data) if k in self.slots else a for k, a in enumerate(args)]
        self.fresh = [call[k] for k in self.slots]
        clock[0] += 1  # (a node's epoch is the clock when it was recorded)
        self.start = clock[0]
        out = _with_hook(self._collect, self, lambda: _grad_call(self.f, call,
                                                                  self.kwargs))
        self.fresh = []
        outs = out if isinstance(out, tuple) else (out,)
        if not isinstance(out, (tuple, Tensor)) and isinstance(out, (list, dict)):
            raise TypeError(f"checkpoint: f must return a tensor, or a tuple of tensors and "
                            f"other values; it returned a {type(out).__name__} (return a "
                            f"tuple)")
        # Values that are not tensors (numbers, strings, None) come back as f returned them.
        self.where = [k for k, o in enumerate(outs) if isinstance(o, Tensor)]
        tensors = [outs[k] for k in self.where]
        inputs = [args[k] for k in self.slots] + [eff for _, eff in self.closures.values()]
        if not inputs or not tensors:
            return out
        self.meta = [(o.shape, o.dtype) for o in tensors]
        self.outputs = (tuple(o.data for o in tensors) if isinstance(out, tuple)
                        else out.data)
        try:
            res = _Checkpoint.apply(self, *inputs)
        finally:
            self.outputs = None
        if not isinstance(out, tuple):
            return res
        full = list(outs)
        for k, r in zip(self.where, res if isinstance(res, tuple) else (res,)):
            full[k] = r
        return tuple(full)

    def backward(self, saved: tuple[Any, ...], grads: tuple[Any, ...]) -> tuple[Any, ...]:
        """Recompute ``f`` on the saved inputs and backpropagate ``grads`` through it."""
        create = state.enabled  # the engine records backward only under create_graph
        inputs = list(saved) if create else [_leaf(a) for a in saved]
        call = list(self.args)
        for k, t in zip(self.slots, inputs):
            call[k] = t
        substitute = {}
        for (raw, eff), t in zip(self.closures.values(), inputs[len(self.slots):]):
            substitute[id(raw)] = substitute[id(eff)] = t

        def hook(args: tuple[Any, ...], kw: dict[Any, Any]) -> tuple[Any, ...]:
            args = tuple(substitute.get(id(a), a) if isinstance(a, Tensor) else a
                         for a in args)
            kw = {k: substitute.get(id(v), v) if isinstance(v, Tensor) else v
                  for k, v in kw.items()}
            return outer(args, kw) if outer is not None else (args, kw)

        outer = state.segment
        out = _with_hook(hook, None, lambda: _grad_call(self.f, call, self.kwargs))
        outs = out if isinstance(out, tuple) else (out,)
        outs = tuple(outs[k] if k < len(outs) else None for k in self.where)
        if [(getattr(o, "shape", None), getattr(o, "dtype", None)) for o in outs] != self.meta:
            raise RuntimeError(
                "checkpoint: recomputing f in backward gave outputs of other shapes or "
                "dtypes than the forward run; f must compute the same thing every call")
        roots = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not roots:
            return (None,) * len(inputs)
        return tuple(cast("list[Any]",  # a list when capturing
                          run_backward([o for o, _ in roots], [g for _, g in roots], create,
                                       create, inputs, capture=True, allow_unused=True)))


def _leaf(a: Any) -> Tensor:
    return make_tensor(a, requires_grad=True)


def _grad_call(f: Callable[..., Any], args: list[Any], kwargs: dict[Any, Any]) -> Any:
    with enable_grad():
        return f(*args, **kwargs)


def _with_hook(hook: Callable[..., Any], segment: _Segment | None, body: Callable[..., Any]) -> Any:
    """Run ``body`` with ``hook`` seeing the arguments of every op (see :func:`_interpret`)."""
    prev = state.segment
    if segment is not None:
        segment.hook = prev
    state.segment = hook
    state.refresh()
    try:
        return body()
    finally:
        state.segment = prev
        state.refresh()
        if segment is not None:
            segment.hook = None


class _Checkpoint(Function):
    """The node standing for a checkpointed segment."""

    _save_outputs = False

    @staticmethod
    def forward(ctx: FunctionCtx, segment: _Segment, *arrays: Any) -> Any:
        ctx.segment = segment
        ctx.save_for_backward(*arrays)
        return segment.outputs

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple[Any, ...]:
        return (None, *ctx.segment.backward(ctx.saved_tensors, grads))


_Checkpoint.__name__ = "checkpoint"


def _interpret(op: Op, args: tuple[Any, ...], kw: dict[str, Any], k: int) -> Any:
    """The mode's interpreter (see ``yaad.modes.MODES``): the hook of the innermost segment
    (``state.segment``) sees, and may substitute, the arguments of every op."""
    segment = state.segment
    if segment is not None:
        args, kw = segment(args, kw)
    return run_modes(op, args, kw, k)


register_mode("checkpoint", _interpret, order=50, switch="segment")
