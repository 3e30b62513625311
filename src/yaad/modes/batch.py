"""Batching mode: the interpreter behind ``yaad.func.vmap`` (a mode of the op call).

The batched values, the levels and what the ops declare are in ``batching.py`` (below the
ops); this module runs them. An op called with a batched argument comes here first
(``modes.run_modes``): the innermost batch level among its arguments is taken off them
(:func:`strip`: the batch axis becomes an ordinary axis, visible to the op), the op's
batching rule runs on the whole batch, and its result is marked at that level again
(``batching.mark``). Rules are written with yaad's ops, so lower batch levels, forward
mode and recording for reverse mode apply to what they do. Batching goes before forward
mode: a forward-mode tangent is carried into the same layout as its value (a batch axis
in the same place), which keeps the saved values of a recorded node and their tangents
consistent.

Rules (``yaad.op(batch=...)``, ``f.defbatch``): ``rule(dims, *args, **kw) -> (out,
out_dim)``, or one of the strategies below by name. A rule may return NotImplemented;
an op without a rule runs once per example (:func:`_loop`), with a warning.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from types import NotImplementedType
from typing import Any, Callable, Iterator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..core.grad_mode import new_level, state
from ..core.op import Op
from ..core.presentation import ndim_of, shape_of
from ..core.tensor import Tensor, make_tensor
from ..ops.shape import (
    aligned,
    broadcast_to,
    expand_dims,
    flat_examples,
    front,
    getitem,
    moveaxis,
    reshape,
    stack,
)
from .batched_values import (
    BatchAxis,
    active_levels,
    batch_axes,
    batch_sizes,
    escaped_error,
    innermost_level,
    involves,
    like,
    mark,
    own_levels,
    randomness_of,
    register_per_example,
    visible_axis,
    warn_once,
    with_tangents,
)
from .registry import register_mode, run_modes

# What a batching rule ``rule(dims, *args, **kw)`` returns: the op's result on the whole
# batch and the position of the batch axis in it (a tuple of them for several outputs),
# or NotImplemented where it declines (vmap then runs the op once per example).
Batched = tuple[Any, Any] | NotImplementedType
BatchRule = Callable[..., Batched]

# ---- levels ----------------------------------------------------------------------------

@contextlib.contextmanager
def batch_level(size: int, own: bool = False, randomness: str = "error") -> Iterator[int]:
    """A new batch level of ``size`` examples, innermost while the block runs.

    ``own``: the level batches a transform's own unit vectors (jacfwd's tangents), which
    reach no function value: a function differentiated inside it needs no copy of its
    inputs per example (see :func:`expand`), and draws its random numbers once.
    ``randomness``: see :func:`draw`."""
    level = new_level()
    batch_sizes[level] = size
    randomness_of[level] = "same" if own else randomness
    if own:
        own_levels.add(level)
    prev = state.batching
    state.levels = state.levels + (level,)
    state.batching = _dispatch
    state.refresh()
    try:
        yield level
    finally:
        state.levels = tuple(lv for lv in state.levels if lv != level)
        state.batching = prev
        state.refresh()
        del batch_sizes[level], randomness_of[level]
        own_levels.discard(level)


# ---- the layout of a batched tensor ------------------------------------------------------

def strip(x: Any, level: int, size: int, q: int | None = None) -> tuple[Any, int]:
    """``x`` without the batch level ``level``: its batch axis made an ordinary axis at
    position ``q`` (default: where it is; 0 when ``x`` is not batched there, which
    broadcasts it), its forward-mode tangents carried into the same layout. Returns the
    tensor (an array for an array) and the position of the axis."""
    tans: dict[int, Any] | None = (getattr(x, "_tangents", None) if isinstance(x, Tensor)
                                   else None)
    marker = tans.get(level) if tans else None
    if tans and type(marker) is BatchAxis:
        p = visible_axis(x, level)
        out = with_tangents(x, _carried(tans, level, size, p))
        if q is not None and q != p:
            out = moveaxis(out, p, q)
        return out, p if q is None else q
    q = 0 if q is None else q
    shape = tuple(shape_of(x))
    shape = shape[:q] + (size,) + shape[q:]
    if tans and any(involves(v, level) for v in tans.values() if type(v) is not BatchAxis):
        # the value is the same for every example, a tangent is not: broadcast the value
        base = with_tangents(x, {lv: v for lv, v in tans.items()
                            if type(v) is BatchAxis or not involves(v, level)})
        out = broadcast_to(expand_dims(base, q), shape)
        carried = dict(out._tangents) if getattr(out, "_tangents", None) else {}
        for lv, v in tans.items():
            if type(v) is not BatchAxis and involves(v, level):
                carried[lv] = strip(v, level, size, q)[0]
        return with_tangents(out, carried), q
    return broadcast_to(expand_dims(x, q), shape), q


def _carried(tans: dict[int, Any], level: int, size: int, p: int) -> dict[int, Any]:
    """The entries of ``tans`` without ``level``; forward-mode tangents (of active
    levels) with the batch axis at ``p``, as their value's."""
    levels = state.levels
    out = {}
    for lv, v in tans.items():
        if lv == level:
            continue
        if type(v) is BatchAxis:
            out[lv] = v
        elif lv in levels:
            out[lv] = strip(v, level, size, p)[0]
    return out


# ---- dispatch --------------------------------------------------------------------------

def _dispatch(op: Op, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """``op`` on its arguments when one is batched (else NotImplemented)."""
    level = innermost_level(args, kw)
    if level is None:
        return NotImplemented
    size = batch_sizes[level]
    new_args, dims = [], []
    for a in args:
        s, d = _strip_arg(a, level, size)
        new_args.append(s)
        dims.append(d)
    kw_dims = {}
    if kw:
        kw = dict(kw)
        for k, v in kw.items():
            s, d = _strip_arg(v, level, size)
            if d is not None:
                kw[k], kw_dims[k] = s, d
    out: Batched = NotImplemented
    rule = rule_of(op)
    if rule is not None and not kw_dims:
        out = rule(tuple(dims), *new_args, **kw)
    if out is NotImplemented:
        warn_once(op.name, "has no batching rule for these arguments" if rule else
                   "has no batching rule (see yaad.op(batch=...))")
        out = _loop(_function(op), op.name, new_args, dims, kw, kw_dims, size)
    return _mark_tree(*out, level)


def _strip_arg(a: Any, level: int, size: int) -> tuple[Any, Any]:
    """An argument without ``level`` and its batch axis (None: not batched; a list of
    them for a tuple or list holding batched tensors)."""
    if isinstance(a, Tensor):
        return strip(a, level, size) if involves(a, level) else (a, None)
    if type(a) in (tuple, list) and a and innermost_level(a, {}) is not None:
        parts = [_strip_arg(e, level, size) for e in a]
        if all(d is None for _, d in parts):
            return a, None
        return type(a)(s for s, _ in parts), [d for _, d in parts]
    return a, None


def _loop(fn: Callable[..., Any], name: str, args: list[Any], dims: list[Any],
          kw: dict[str, Any], kw_dims: dict[str, Any], size: int) -> tuple[Any, Any]:
    """``fn`` once per example, the results stacked (batch axis 0)."""
    if size == 0:
        raise ValueError(f"vmap: '{name}' runs once per example, and an empty batch gives "
                         f"no example to learn its result's shape from")
    results = []
    for b in range(size):
        a_b = [_example(a, d, b) for a, d in zip(args, dims)]
        kw_b = {k: _example(v, kw_dims.get(k), b) for k, v in kw.items()}
        results.append(fn(*a_b, **kw_b))
    return _stacked(results, name), _zeros_like_tree(results[0])


def _stacked(results: list[Any], name: str) -> Any:
    first = results[0]
    if isinstance(first, (tuple, list)):
        parts = [_stacked([r[k] for r in results], name) for k in range(len(first))]
        return first._make(parts) if hasattr(first, "_make") else type(first)(parts)
    shapes = [shape_of(r) for r in results]
    for b, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise ValueError(
                f"vmap: '{name}' gives results of different shapes for different examples "
                f"({shapes[0]} for example 0, {shape} for example {b}), which one batched "
                f"tensor cannot hold. Call it outside vmap, or use a form of fixed shape "
                f"(a mask with yaad.where instead of indices or a boolean index).")
    return stack(results)


def _zeros_like_tree(out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return tuple(_zeros_like_tree(o) for o in out)
    return 0


def _example(a: Any, d: Any, b: int) -> Any:
    if d is None:
        return a
    if isinstance(d, list):
        return type(a)(_example(e, de, b) for e, de in zip(a, d))
    return getitem(a, (slice(None),) * d + (b,))


def _mark_tree(out: Any, dims: Any, level: int) -> Any:
    if isinstance(out, (tuple, list)):
        parts = [_mark_tree(o, d, level) for o, d in zip(out, dims)]
        return out._make(parts) if hasattr(out, "_make") else type(out)(parts)
    return out if dims is None else mark(out, level, dims)


def _run_per_example(fn: Callable[..., Any], level: int, args: tuple[Any, ...],
                     kw: dict[str, Any]) -> Any:
    """A :func:`~yaad.batching.per_example` function once per example of ``level``."""
    size = batch_sizes[level]
    new_args, dims = zip(*[_strip_arg(a, level, size) for a in args]) if args else ((), ())
    kw_dims = {}
    kw = dict(kw)
    for k, v in kw.items():
        kw[k], kw_dims[k] = _strip_arg(v, level, size)
    out, out_dims = _loop(fn, fn.__name__, list(new_args), list(dims), kw, kw_dims, size)
    return _mark_tree(out, out_dims, level)


# ---- rules -----------------------------------------------------------------------------

def rule_of(op: Op) -> BatchRule | None:
    """The batching rule of ``op`` as a function ``(dims, *args, **kw)``, or None."""
    rule = op.batch
    if rule is None and op.elementwise:
        rule = "broadcast"
    if isinstance(rule, str):
        try:
            strategy = STRATEGIES[rule]
        except KeyError:
            raise ValueError(f"{op.name}: batch={rule!r} is not a batching strategy; "
                             f"use one of {sorted(STRATEGIES)} or a rule") from None
        return functools.partial(strategy, op)
    return rule


def _broadcast(op: Op, dims: tuple[Any, ...], *args: Any, **kw: Any) -> Batched:
    """The op broadcasts over leading axes (elementwise functions; matrix functions of
    stacks with the same number of core axes in every argument): batch axis in front."""
    if any(type(d) is list for d in dims):
        return NotImplemented  # type: ignore[no-any-return]  # (mypy#18914: typed Any)
    return _function(op)(*aligned(args, dims), **kw), (0 if op.nout == 1 else (0,) * op.nout)


@functools.cache
def _signature(forward: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(forward)


def bind(op: Op, args: tuple[Any, ...], kw: dict[str, Any]) -> inspect.BoundArguments:
    """The arguments of a call of ``op`` by name (its forward's signature), defaults in."""
    ba = _signature(op.forward).bind(*args, **kw)
    ba.apply_defaults()
    return ba


def _call(op: Op, ba: inspect.BoundArguments) -> Any:
    return _function(op)(*ba.args, **ba.kwargs)


def _function(op: Op) -> Callable[..., Any]:
    """The function of ``op`` that vmap calls (on the whole batch, or per example)."""
    fn = op.fn
    if fn is None:  # (an op made with Op(), not op(): a Function's, say)
        raise TypeError(
            f"vmap: '{op.name}' has no batching rule, and no function of its own to run "
            f"once per example (a yaad.autograd.Function, or an op made with Op()). Call it "
            f"outside vmap, or write it as an op with a batching rule: yaad.op(..., "
            f"batch=...) (see docs/transforms.md#vmap).")
    return fn


def _reduce(op: Op, dims: tuple[Any, ...], x: Any, *rest: Any, **kw: Any) -> Batched:
    """A reduction over ``axis`` (None: all axes; an int or a tuple), the first argument
    batched, the others not: the batch axis goes in front and the axes shift by one."""
    if any(d is not None for d in dims[1:]):
        return NotImplemented  # type: ignore[no-any-return]  # (mypy#18914: typed Any)
    ba = bind(op, (front(x, dims[0]), *rest), kw)
    nd = ndim_of(x) - 1
    axis = ba.arguments["axis"]
    if axis is None:
        ba.arguments["axis"] = tuple(range(1, nd + 1))
    elif isinstance(axis, (int, np.integer)):
        ba.arguments["axis"] = normalize_axis_index(int(axis), nd) + 1
    else:
        ba.arguments["axis"] = tuple(a + 1 for a in normalize_axis_tuple(axis, nd))
    return _call(op, ba), 0


def _scan(op: Op, dims: tuple[Any, ...], x: Any, *rest: Any, **kw: Any) -> Batched:
    """An op along one ``axis``, where None means along the flattened input (cumsum,
    argsort; argmax with ``keepdims``): the batch axis in front, each example flattened
    for None."""
    if any(d is not None for d in dims[1:]):
        return NotImplemented  # type: ignore[no-any-return]  # (mypy#18914: typed Any)
    x = front(x, dims[0])
    shape = shape_of(x)
    ba = bind(op, (x, *rest), kw)
    axis = ba.arguments["axis"]
    if axis is None:
        ba.arguments[next(iter(ba.arguments))] = flat_examples(x, 0)
        ba.arguments["axis"] = 1
        out = _call(op, ba)
        if ba.arguments.get("keepdims"):
            out = reshape(out, shape[:1] + (1,) * (len(shape) - 1))
        return out, 0
    ba.arguments["axis"] = normalize_axis_index(axis, len(shape) - 1) + 1
    return _call(op, ba), 0


def _per_example(op: Op, dims: tuple[Any, ...], *args: Any, **kw: Any) -> Batched:
    """Once per example, by design (the shape of the result follows the values; or there
    is no routine for a batch, as for scipy.linalg.solve_sylvester)."""
    warn_once(op.name, "is declared per example (its result's shape follows the values)")
    size = next(_size_in(a, d) for a, d in zip(args, dims) if d is not None)
    return _loop(_function(op), op.name, list(args), list(dims), kw, {}, size)


def _size_in(a: Any, d: Any) -> int:
    if type(d) is list:
        return next(_size_in(e, de) for e, de in zip(a, d) if de is not None)
    n: int = shape_of(a)[d]
    return n


STRATEGIES: dict[str, Callable[..., Batched]] = {"broadcast": _broadcast, "reduce": _reduce,
                                   "scan": _scan, "per_example": _per_example}


# ---- reverse mode inside vmap (yaad.func's vjp, grad, jacrev) -----------------------------

def expand(x: Tensor) -> Tensor:
    """``x`` batched at every active batch level (broadcast where it is not).

    The recorded graph of a function evaluated inside vmap holds the whole batch; an input
    made batched this way gets its gradient per example instead of summed over them."""
    for level in active_levels():
        if level not in batch_axes(x) and level not in own_levels:
            x = mark(strip(x, level, batch_sizes[level], 0)[0], level, 0)
    return x


def root(out: Tensor, cotangent: Any) -> tuple[Tensor, Any]:
    """An output of a recorded function and its cotangent, ready for the backward pass:
    the output's batch axes (axes of the recorded arrays) made ordinary ones, and the
    cotangent laid out the same way (broadcast where it is not batched)."""
    axes = batch_axes(out)
    if not axes:
        return out, cotangent
    cur = out
    for level in sorted(axes, reverse=True):
        if level not in batch_sizes:
            raise escaped_error("a vjp function was given the output of")
        q = visible_axis(cur, level)
        cotangent = strip(cotangent, level, batch_sizes[level], q)[0]
        cur = with_tangents(cur, {lv: v for lv, v in cur._tangents.items()
                             if lv != level and type(v) is BatchAxis})
    return make_tensor(out._data, out._node, out.requires_grad), cotangent


def conform(result: Any, target: Tensor) -> Any:
    """``result`` laid out as ``target`` (the same batch axes in the same places), to be
    written into it in place."""
    if not batch_axes(result) and not batch_axes(target):
        return result
    aligned = like(root(target, result)[1], target)
    if set(batch_axes(aligned)) != set(batch_axes(target)):
        raise ValueError(
            "vmap: an in-place change would make a tensor differ from example to example, "
            "but it has no batch axis to hold that (it was not given to vmap as batched, "
            "or was made inside without one). Write the result to a new tensor instead.")
    return aligned


def _interpret(op: Op, args: tuple[Any, ...], kw: dict[str, Any], k: int) -> Any:
    """vmap's mode (see ``yaad.modes.MODES``): a call with a batched argument is batched."""
    if state.batching is not None:
        out = state.batching(op, args, kw)
        if out is not NotImplemented:
            return out
    return run_modes(op, args, kw, k)


register_mode("vmap", _interpret, order=20, switch="batching")
register_per_example(_run_per_example)
