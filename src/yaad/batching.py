"""Batching: the mode behind ``yaad.func.vmap`` (an interpreter of the mode stack).

A vmap opens a *batch level* (numbered with forward mode's levels, see ``grad_mode``). A
tensor batched at a level holds every example in its data and keeps, in its ``_tangents``
under that level, a :class:`BatchAxis`: the position of the batch axis in its data. Such a
tensor presents itself as one example (:class:`BatchedTensor`: ``shape``, ``ndim`` and
``len`` leave the batch axes out), so the function under vmap is written for one example.

An op called with a batched argument comes here first (``op.run_modes``): the
innermost batch level among its arguments is taken off them (:func:`strip`: the batch
axis becomes an ordinary axis, visible to the op), the op's batching rule runs on the
whole batch, and its result is marked at that level again (:func:`mark`). Rules are
written with yaad's ops, so lower batch levels, forward mode and recording for reverse
mode apply to what they do. Batching goes before forward mode: a forward-mode tangent
is carried into the same layout as its value (a batch axis in the same place), which
keeps the saved values of a recorded node and their tangents consistent.

Rules (``yaad.op(batch=...)``, ``f.defbatch``): ``rule(dims, *args, **kw) -> (out,
out_dim)``, or one of the strategies below by name. A rule may return NotImplemented;
an op without a rule runs once per example (:func:`_loop`), with a warning.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import sys
import warnings
from typing import Any, Callable, Iterator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from .grad_mode import new_level, state
from .levels import with_tangent
from .op import Op, register_mode, run_modes
from .tensor import Tensor, make_tensor, ndim_of, presenters, shape_of


def _shape_ops():
    # (imported when first used: the ops modules import this one for its helpers)
    from .ops import shape

    return shape


def moveaxis(x, source, destination):
    return _shape_ops().moveaxis(x, source, destination)


def reshape(x, shape):
    return _shape_ops().reshape(x, shape)


def broadcast_to(x, shape):
    return _shape_ops().broadcast_to(x, shape)


def expand_dims(x, axis):
    return _shape_ops().expand_dims(x, axis)


class BatchingWarning(UserWarning):
    """vmap runs an op once per example: the op has no batching rule (see ``yaad.op``)."""


class BatchAxis:
    """The entry of a batched tensor's ``_tangents`` at a batch level: where the batch
    axis of that level lies in the tensor's data."""

    __slots__ = ("axis",)

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def __repr__(self) -> str:
        return f"BatchAxis({self.axis})"


def _hidden(x: Tensor) -> list:
    """The positions (in ``x._data``) of the batch axes of ``x``."""
    return [v.axis for v in x._tangents.values() if type(v) is BatchAxis]


def _escaped(what: str) -> RuntimeError:
    return RuntimeError(
        f"{what} a tensor batched by a vmap that has returned (it was stored outside the "
        f"function, or returned inside a container vmap does not look into). Return it "
        f"from the vmapped function instead.")


_data_slot = Tensor._data  # the slot holding a tensor's array


class BatchedTensor(Tensor):
    """A tensor inside :func:`yaad.func.vmap`: it shows the shape of one example.

    Its data hold the whole batch. What needs one example's values (``item``, ``bool``,
    conversion to NumPy) is refused: inside vmap a value differs from example to example.
    So is any use after its vmap has returned (it escaped, kept somewhere).
    """

    __slots__ = ()

    @property
    def _data(self) -> Any:
        """The whole batch (for yaad's machinery, while the vmap runs)."""
        for lv, v in self._tangents.items():
            if type(v) is BatchAxis and lv not in _sizes:
                raise _escaped("this is")
        return _data_slot.__get__(self)

    @_data.setter
    def _data(self, value: Any) -> None:
        _data_slot.__set__(self, value)

    @property
    def data(self) -> Any:
        return self._value(".data")

    def _all_values(self) -> np.ndarray:
        """Every example's values at once, for decisions that must hold for each of them
        (a check; the choice between two exact ways to compute)."""
        return self._data

    def _stand_in(self) -> np.ndarray:
        """An array of one example's shape and dtype, without values (for NumPy functions
        that read only those)."""
        return np.broadcast_to(np.zeros((), self.dtype), self.shape)

    @property
    def shape(self) -> tuple:
        """The shape of one example."""
        hidden = _hidden(self)
        return tuple(n for i, n in enumerate(self._data.shape) if i not in hidden)

    @property
    def ndim(self) -> int:
        """The number of dimensions of one example."""
        return self._data.ndim - len(_hidden(self))

    @property
    def size(self) -> int:
        """The number of elements of one example."""
        return math.prod(self.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.size

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def detach(self) -> Tensor:
        """A new tensor with the same examples, cut from the graph."""
        return make_tensor(self._data, tangents={
            lv: v for lv, v in self._tangents.items() if type(v) is BatchAxis})

    def _value(self, what: str) -> Any:
        raise TypeError(
            f"{what} of a tensor inside vmap: its value differs from example to example "
            f"(shape {self.shape} for each of them). Keep the computation in yaad "
            f"functions (yaad.where instead of an if on a value), or run it outside "
            f"vmap. (see docs/errors.md#vmap-value)")

    def item(self) -> Any:
        return self._value("item()")

    def tolist(self) -> Any:
        return self._value("tolist()")

    def numpy(self) -> Any:
        return self._value("numpy()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._value("conversion to a NumPy array")

    def __bool__(self) -> bool:
        return self._value("bool()")

    def __float__(self) -> float:
        return self._value("float()")

    def __int__(self) -> int:
        return self._value("int()")

    def __complex__(self) -> complex:
        return self._value("complex()")

    def __index__(self) -> int:
        return self._value("use as an index")

    def backward(self, *args: Any, **kw: Any) -> None:
        raise RuntimeError(
            "backward() inside vmap: use yaad.func.grad or yaad.func.vjp in the vmapped "
            "function (per-example gradients: vmap(grad(loss), in_axes=(None, 0, 0))), or "
            "call backward() on a result of vmap.")

    def __repr__(self) -> str:
        levels = {lv: v.axis for lv, v in self._tangents.items() if type(v) is BatchAxis}
        data = _data_slot.__get__(self)
        shape = tuple(n for i, n in enumerate(data.shape) if i not in levels.values())
        return (f"BatchedTensor(shape={shape}, dtype={data.dtype}, batch axes {levels} of "
                f"data shape {data.shape})")

    __str__ = __repr__


presenters[BatchAxis] = BatchedTensor

# ---- levels ----------------------------------------------------------------------------

_sizes: dict[int, int] = {}  # batch level -> batch size, while the level is active
_own: set = set()  # levels of a transform's own batch (jacrev's cotangents, jacfwd's tangents)
_randomness: dict[int, str] = {}  # batch level -> what a random draw does (see draw)
RANDOMNESS = ("error", "same", "different")


@contextlib.contextmanager
def batch_level(size: int, own: bool = False, randomness: str = "error") -> Iterator[int]:
    """A new batch level of ``size`` examples, innermost while the block runs.

    ``own``: the level batches a transform's own unit vectors (jacfwd's tangents), which
    reach no function value: a function differentiated inside it needs no copy of its
    inputs per example (see :func:`expand`), and draws its random numbers once.
    ``randomness``: see :func:`draw`."""
    level = new_level()
    _sizes[level] = size
    _randomness[level] = "same" if own else randomness
    if own:
        _own.add(level)
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
        del _sizes[level], _randomness[level]
        _own.discard(level)


def active_levels() -> list:
    """The batch levels active in this thread, outermost first."""
    return [lv for lv in state.levels if lv in _sizes]


def draw(sample: Callable[[tuple], Any], shape: tuple, what: str) -> Any:
    """Random numbers of one example's ``shape``, ``sample(shape)`` an array of them; inside
    vmap, as each active level's ``randomness`` says: ``"error"`` refuses (a loop over the
    examples would draw different numbers for each, one batched call cannot know which);
    ``"same"`` draws once for every example; ``"different"`` draws a batch of them (a
    tensor batched at that level). Outside vmap: ``sample(shape)``."""
    if not _sizes:
        return sample(shape)
    levels = active_levels()
    refused = [lv for lv in levels if _randomness[lv] == "error"]
    if refused:
        raise RuntimeError(
            f"{what} inside vmap draws random numbers, and vmap was not told whether each "
            f"example gets its own: pass vmap(..., randomness='different') (one draw per "
            f"example, as a loop would) or randomness='same' (one draw for all), or draw "
            f"outside and pass the numbers in. (see docs/errors.md#vmap-random)")
    own = [lv for lv in levels if _randomness[lv] == "different"]
    out = sample(tuple(_sizes[lv] for lv in own) + tuple(shape))
    for lv in own:
        out = mark(out, lv, 0)
    return out


# ---- the layout of a batched tensor ------------------------------------------------------

def batch_axes(x: Any) -> dict:
    """``{level: axis in x._data}`` for the batch levels ``x`` carries (its own value)."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    if not tans:
        return {}
    return {lv: v.axis for lv, v in tans.items() if type(v) is BatchAxis}


def involves(x: Any, level: int) -> bool:
    """Whether ``x`` or one of its forward-mode tangents is batched at ``level``."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    if not tans:
        return False
    if level in tans:
        return type(tans[level]) is BatchAxis or involves(tans[level], level)
    return any(type(v) is not BatchAxis and involves(v, level) for v in tans.values())


def _visible(x: Tensor, level: int) -> int:
    """The position of the batch axis of ``level`` among the axes of ``x`` not hidden by
    another batch level."""
    p = x._tangents[level].axis
    return p - sum(1 for lv, v in x._tangents.items()
                   if lv != level and type(v) is BatchAxis and v.axis < p)


def _absolute(x: Any, q: int) -> int:
    """The position in ``x._data`` of axis ``q`` among the axes not hidden."""
    hidden = _hidden(x) if getattr(x, "_tangents", None) else ()
    k = -1
    for i in range(np.ndim(x._data if isinstance(x, Tensor) else x)):
        if i not in hidden:
            k += 1
            if k == q:
                return i
    raise AssertionError(f"batching: axis {q} out of range")


def _replace(x: Tensor, tangents: dict) -> Tensor:
    return make_tensor(x._data, x._node, x.requires_grad, tangents)


def strip(x: Any, level: int, size: int, q: int | None = None) -> tuple[Any, int]:
    """``x`` without the batch level ``level``: its batch axis made an ordinary axis at
    position ``q`` (default: where it is; 0 when ``x`` is not batched there, which
    broadcasts it), its forward-mode tangents carried into the same layout. Returns the
    tensor (an array for an array) and the position of the axis."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    marker = tans.get(level) if tans else None
    if type(marker) is BatchAxis:
        p = _visible(x, level)
        out = _replace(x, _carried(tans, level, size, p))
        if q is not None and q != p:
            out = moveaxis(out, p, q)
        return out, p if q is None else q
    q = 0 if q is None else q
    shape = tuple(shape_of(x))
    shape = shape[:q] + (size,) + shape[q:]
    if tans and any(involves(v, level) for v in tans.values() if type(v) is not BatchAxis):
        # the value is the same for every example, a tangent is not: broadcast the value
        base = _replace(x, {lv: v for lv, v in tans.items()
                            if type(v) is BatchAxis or not involves(v, level)})
        out = broadcast_to(expand_dims(base, q), shape)
        carried = dict(out._tangents) if getattr(out, "_tangents", None) else {}
        for lv, v in tans.items():
            if type(v) is not BatchAxis and involves(v, level):
                carried[lv] = strip(v, level, size, q)[0]
        return _replace(out, carried), q
    return broadcast_to(expand_dims(x, q), shape), q


def _carried(tans: dict, level: int, size: int, p: int) -> dict:
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


def mark(x: Any, level: int, q: int) -> Tensor:
    """``x`` batched at ``level`` along its axis ``q`` (counted among the axes not hidden
    by other levels); its forward-mode tangents are marked the same way."""
    if not isinstance(x, Tensor):
        x = make_tensor(np.asarray(x))
    out = with_tangent(x, level, BatchAxis(_absolute(x, q)))  # aliases a leaf
    tans = out._tangents
    levels = state.levels
    for lv, v in tans.items():
        if lv != level and type(v) is not BatchAxis and lv in levels:
            tans[lv] = mark(v, level, q)
    return out


# ---- dispatch --------------------------------------------------------------------------

def _top(args: tuple, kw: dict) -> int | None:
    """The innermost batch level carried by an argument's value (tuples and lists of
    arguments, such as an index, are looked into)."""
    top = None
    for a in (*args, *kw.values()) if kw else args:
        if isinstance(a, Tensor):
            tans = getattr(a, "_tangents", None)
            if tans:
                for lv, v in tans.items():
                    if type(v) is BatchAxis:
                        if lv not in _sizes:
                            raise _escaped("an op was given")
                        if top is None or lv > top:
                            top = lv
        elif type(a) in (tuple, list) and a:
            lv = _top(a, {})
            if lv is not None and (top is None or lv > top):
                top = lv
    return top


def _dispatch(op: Op, args: tuple, kw: dict) -> Any:
    """``op`` on its arguments when one is batched (else NotImplemented)."""
    level = _top(args, kw)
    if level is None:
        return NotImplemented
    size = _sizes[level]
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
    out = NotImplemented
    rule = rule_of(op)
    if rule is not None and not kw_dims:
        out = rule(tuple(dims), *new_args, **kw)
    if out is NotImplemented:
        _warn_once(op.name, "has no batching rule for these arguments" if rule else
                   "has no batching rule (see yaad.op(batch=...))")
        out = _loop(op.fn, op.name, new_args, dims, kw, kw_dims, size)
    return _mark_tree(*out, level)


def _strip_arg(a: Any, level: int, size: int) -> tuple[Any, Any]:
    """An argument without ``level`` and its batch axis (None: not batched; a list of
    them for a tuple or list holding batched tensors)."""
    if isinstance(a, Tensor):
        return strip(a, level, size) if involves(a, level) else (a, None)
    if type(a) in (tuple, list) and a and _top(a, {}) is not None:
        parts = [_strip_arg(e, level, size) for e in a]
        if all(d is None for _, d in parts):
            return a, None
        return type(a)(s for s, _ in parts), [d for _, d in parts]
    return a, None


_warned: set = set()


def _warn_once(name: str, why: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    frame, depth = sys._getframe(1), 2  # point at the first caller outside yaad
    while frame is not None and frame.f_globals.get("__name__", "").startswith("yaad."):
        frame, depth = frame.f_back, depth + 1
    warnings.warn(f"vmap: '{name}' {why}: it runs once per example (a Python loop, "
                  f"slower than one call on the batch). See docs/transforms.md#vmap.",
                  BatchingWarning, stacklevel=depth)


def _loop(fn: Callable, name: str, args: list, dims: list, kw: dict, kw_dims: dict,
          size: int) -> tuple:
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


def _stacked(results: list, name: str) -> Any:
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
    return _shape_ops().stack(results)


def _zeros_like_tree(out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return tuple(_zeros_like_tree(o) for o in out)
    return 0


def _mark_tree(out: Any, dims: Any, level: int) -> Any:
    if isinstance(out, (tuple, list)):
        parts = [_mark_tree(o, d, level) for o, d in zip(out, dims)]
        return out._make(parts) if hasattr(out, "_make") else type(out)(parts)
    return out if dims is None else mark(out, level, dims)


def per_example(*names: str) -> Callable:
    """Decorator for a function that reads the values of its arguments ``names`` (all of
    them when none is named) in Python: inside vmap, with one of those batched, it runs
    once per example (with a :class:`BatchingWarning`) instead of reading the batch as one
    value."""
    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            if state.batching is None:
                return fn(*args, **kw)
            bound = signature.bind(*args, **kw).arguments
            read = [bound[n] for n in names if n in bound] if names else list(bound.values())
            level = _top(tuple(read), {})
            if level is None:
                return fn(*args, **kw)
            _warn_once(fn.__name__, "reads values in Python")
            size = _sizes[level]
            new_args, dims = zip(*[_strip_arg(a, level, size) for a in args]) if args else ((), ())
            kw_dims = {}
            kw = dict(kw)
            for k, v in kw.items():
                kw[k], kw_dims[k] = _strip_arg(v, level, size)
            out, out_dims = _loop(fn, fn.__name__, list(new_args), list(dims), kw, kw_dims,
                                  size)
            return _mark_tree(out, out_dims, level)

        wrapper.batch = "per_example"  # (as an op's batch=: how vmap runs it)
        return wrapper

    return decorate


def _example(a: Any, d: Any, b: int) -> Any:
    if d is None:
        return a
    if isinstance(d, list):
        return type(a)(_example(e, de, b) for e, de in zip(a, d))
    return _shape_ops().getitem(a, (slice(None),) * d + (b,))


# ---- rules -----------------------------------------------------------------------------

def rule_of(op: Op) -> Callable | None:
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


def size_of(args: tuple, dims: tuple) -> int:
    """The batch size, from the first batched argument."""
    for a, d in zip(args, dims):
        if d is not None:
            return shape_of(a)[d]
    raise ValueError("batching: no batched argument")


def front(x: Any, d: int | None) -> Any:
    """``x`` with its batch axis ``d`` moved to the front (unchanged when ``d`` is None)."""
    return x if d is None or d == 0 else moveaxis(x, d, 0)


def example_shape(x: Any, d: int | None) -> tuple:
    """The shape of one example of ``x`` (batch axis ``d``, None: not batched)."""
    shape = shape_of(x)
    return shape if d is None else shape[:d] + shape[d + 1:]


def flat_examples(x: Any, d: int) -> Any:
    """``x`` as a matrix with one flattened example per row (batch axis ``d``)."""
    x = front(x, d)
    shape = shape_of(x)
    return reshape(x, (shape[0], math.prod(shape[1:])))


def aligned(args: tuple, dims: tuple, ndim: int | None = None,
            cores: tuple | None = None) -> list:
    """The batched arguments with the batch axis in front and length-one axes after it,
    so that they broadcast against each other and against the arguments without batch
    axis over their leading axes (as NumPy's gufuncs do): ``cores[i]`` axes at the end of
    argument ``i`` are its own (default none); the others are padded to the most any
    argument has, or to ``ndim`` axes per example."""
    cores = cores or (0,) * len(args)
    lead = [ndim_of(a) - (d is not None) - c for a, d, c in zip(args, dims, cores)
            if isinstance(a, (Tensor, np.ndarray, np.generic))]
    top = max(lead, default=0) if ndim is None else ndim
    out = []
    for a, d, c in zip(args, dims, cores):
        if d is not None:
            a = front(a, d)
            shape = shape_of(a)
            k = len(shape) - 1 - c
            if k < top:
                a = reshape(a, shape[:1] + (1,) * (top - k) + shape[1:])
        out.append(a)
    return out


def columns(x: Any, d: int) -> tuple[Any, Callable]:
    """Batched ``x`` (each example a vector or a stack of columns, ``(n, ...)``) as one
    matrix of shape ``(n, -1)`` holding every example's columns, and the function that
    lays a result ``(m, -1)`` of it out as a batch again: ``back(y) -> (y, out_dim)``."""
    x = moveaxis(x, d, -1)
    shape = shape_of(x)

    def back(y: Any) -> tuple:
        return reshape(y, shape_of(y)[:1] + shape[1:]), len(shape) - 1

    return reshape(x, (shape[0], math.prod(shape[1:]))), back


def _broadcast(op: Op, dims: tuple, *args: Any, **kw: Any) -> tuple:
    """The op broadcasts over leading axes (elementwise functions; matrix functions of
    stacks with the same number of core axes in every argument): batch axis in front."""
    if any(type(d) is list for d in dims):
        return NotImplemented
    return op.fn(*aligned(args, dims), **kw), (0 if op.nout == 1 else (0,) * op.nout)


@functools.cache
def _signature(forward: Callable) -> inspect.Signature:
    return inspect.signature(forward)


def bind(op: Op, args: tuple, kw: dict) -> inspect.BoundArguments:
    """The arguments of a call of ``op`` by name (its forward's signature), defaults in."""
    ba = _signature(op.forward).bind(*args, **kw)
    ba.apply_defaults()
    return ba


def _call(op: Op, ba: inspect.BoundArguments) -> Any:
    return op.fn(*ba.args, **ba.kwargs)


def _reduce(op: Op, dims: tuple, x: Any, *rest: Any, **kw: Any) -> Any:
    """A reduction over ``axis`` (None: all axes; an int or a tuple), the first argument
    batched, the others not: the batch axis goes in front and the axes shift by one."""
    if any(d is not None for d in dims[1:]):
        return NotImplemented
    ba = bind(op, (front(x, dims[0]), *rest), kw)
    nd = ndim_of(x) - 1
    axis = ba.arguments["axis"]
    if axis is None:
        ba.arguments["axis"] = tuple(range(1, nd + 1))
    elif isinstance(axis, (int, np.integer)):
        ba.arguments["axis"] = normalize_axis_index(axis, nd) + 1
    else:
        ba.arguments["axis"] = tuple(a + 1 for a in normalize_axis_tuple(axis, nd))
    return _call(op, ba), 0


def _scan(op: Op, dims: tuple, x: Any, *rest: Any, **kw: Any) -> Any:
    """An op along one ``axis``, where None means along the flattened input (cumsum,
    argsort; argmax with ``keepdims``): the batch axis in front, each example flattened
    for None."""
    if any(d is not None for d in dims[1:]):
        return NotImplemented
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


def _per_example(op: Op, dims: tuple, *args: Any, **kw: Any) -> Any:
    """Once per example, by design (the shape of the result follows the values; or there
    is no routine for a batch, as for scipy.linalg.solve_sylvester)."""
    _warn_once(op.name, "is declared per example (its result's shape follows the values)")
    size = next(_size_in(a, d) for a, d in zip(args, dims) if d is not None)
    return _loop(op.fn, op.name, list(args), list(dims), kw, {}, size)


def _size_in(a: Any, d: Any) -> int:
    if type(d) is list:
        return next(_size_in(e, de) for e, de in zip(a, d) if de is not None)
    return shape_of(a)[d]


STRATEGIES: dict[str, Callable] = {"broadcast": _broadcast, "reduce": _reduce,
                                   "scan": _scan, "per_example": _per_example}


# ---- reverse mode inside vmap (yaad.func's vjp, grad, jacrev) -----------------------------

def expand(x: Tensor) -> Tensor:
    """``x`` batched at every active batch level (broadcast where it is not).

    The recorded graph of a function evaluated inside vmap holds the whole batch; an input
    made batched this way gets its gradient per example instead of summed over them."""
    for level in active_levels():
        if level not in batch_axes(x) and level not in _own:
            x = mark(strip(x, level, _sizes[level], 0)[0], level, 0)
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
        if level not in _sizes:
            raise _escaped("a vjp function was given the output of")
        q = _visible(cur, level)
        cotangent = strip(cotangent, level, _sizes[level], q)[0]
        cur = _replace(cur, {lv: v for lv, v in cur._tangents.items()
                             if lv != level and type(v) is BatchAxis})
    return make_tensor(out._data, out._node, out.requires_grad), cotangent


def like(g: Any, x: Any) -> Any:
    """The gradient ``g`` of the recorded arrays of ``x`` with the batch axes of ``x``."""
    axes = batch_axes(x)
    for level, p in sorted(axes.items(), key=lambda item: -item[1]):
        g = mark(g, level, p)
    return g


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


def _interpret(op: Op, args: tuple, kw: dict, k: int) -> Any:
    """vmap's mode (see ``yaad.op.MODES``): a call with a batched argument is batched."""
    if state.batching is not None:
        out = state.batching(op, args, kw)
        if out is not NotImplemented:
            return out
    return run_modes(op, args, kw, k)


register_mode("vmap", _interpret)
