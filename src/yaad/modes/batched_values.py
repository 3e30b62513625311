"""Batching: the batched values of ``yaad.func.vmap``, below the ops.

A vmap opens a *batch level* (numbered with forward mode's levels, see ``grad_mode``). A
tensor batched at a level holds every example in its data and keeps, in its ``_tangents``
under that level, a :class:`BatchAxis`: the position of the batch axis in its data. Such a
tensor presents itself as one example (:class:`BatchedTensor`: ``shape``, ``ndim`` and
``len`` leave the batch axes out), so the function under vmap is written for one example.

This module holds what the ops need to declare how vmap runs them, and imports no op:
the batched values, the active levels, :func:`mark`, :func:`draw`, :func:`per_example`
and the small helpers of the rules that read shapes (:func:`size_of`,
:func:`example_shape`). The helpers that move the batch axis with shape ops (``front``,
``aligned``, ``columns``, ``flat_examples``) are in ``ops/shape.py``; vmap's interpreter
(its mode: the dispatch of an op call to its batching rule, the loop over the examples,
the strategies) is ``batch_mode.py``, above the ops.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import types
import warnings
from typing import Any, Callable, Iterator, NoReturn, Sequence, TypeVar, cast

import numpy as np

from ..core.grad_mode import state
from ..core.levels import with_tangent
from ..core.presentation import shape_of
from ..core.tensor import Tensor, make_tensor, presenters


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


def _hidden(x: Tensor) -> list[int]:
    """The positions (in ``x._data``) of the batch axes of ``x``."""
    return [v.axis for v in x._tangents.values() if type(v) is BatchAxis]


def escaped_error(what: str) -> RuntimeError:
    """The error for a batched tensor used after its vmap returned."""
    return RuntimeError(
        f"{what} a tensor batched by a vmap that has returned (it was stored outside the "
        f"function, or returned inside a container vmap does not look into). Return it "
        f"from the vmapped function instead.")


# the slot holding a tensor's array (read from the class's namespace: mypy takes the
# attribute Tensor._data for the array the slot holds)
_data_slot: types.MemberDescriptorType = vars(Tensor)["_data"]


class BatchedTensor(Tensor):
    """A tensor inside :func:`yaad.func.vmap`: it shows the shape of one example.

    Its data hold the whole batch. What needs one example's values (``item``, ``bool``,
    conversion to NumPy) is refused: inside vmap a value differs from example to example.
    So is any use after its vmap has returned (it escaped, kept somewhere).
    """

    __slots__ = ()

    @property
    def _data(self) -> np.ndarray:
        """The whole batch (for yaad's machinery, while the vmap runs)."""
        for lv, v in self._tangents.items():
            if type(v) is BatchAxis and lv not in batch_sizes:
                raise escaped_error("this is")
        data: np.ndarray = _data_slot.__get__(self)
        return data

    @_data.setter
    def _data(self, value: Any) -> None:
        _data_slot.__set__(self, value)

    @property
    def data(self) -> np.ndarray:
        return self._value(".data")

    @data.setter
    def data(self, value: Any) -> None:
        self._value("setting .data")

    def _all_values(self) -> np.ndarray:
        """Every example's values at once, for decisions that must hold for each of them
        (a check; the choice between two exact ways to compute)."""
        return self._data

    def _stand_in(self) -> np.ndarray:
        """An array of one example's shape and dtype, without values (for NumPy functions
        that read only those)."""
        return np.broadcast_to(np.zeros((), self.dtype), self.shape)

    @property
    def shape(self) -> tuple[int, ...]:
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

    def _value(self, what: str) -> NoReturn:
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

batch_sizes: dict[int, int] = {}  # batch level -> batch size, while the level is active
own_levels: set[int] = set()  # levels of a transform's own batch (jacrev's cotangents, jacfwd's)
randomness_of: dict[int, str] = {}  # batch level -> what a random draw does (see draw)
RANDOMNESS = ("error", "same", "different")


def active_levels() -> list[int]:
    """The batch levels active in this thread, outermost first."""
    return [lv for lv in state.levels if lv in batch_sizes]


def draw(sample: Callable[[tuple[int, ...]], Any], shape: tuple[int, ...], what: str) -> Any:
    """Random numbers of one example's ``shape``, ``sample(shape)`` an array of them; inside
    vmap, as each active level's ``randomness`` says: ``"error"`` refuses (a loop over the
    examples would draw different numbers for each, one batched call cannot know which);
    ``"same"`` draws once for every example; ``"different"`` draws a batch of them (a
    tensor batched at that level). Outside vmap: ``sample(shape)``. A recording of
    ``yaad.compile`` cannot replay a draw (two recordings may draw the same numbers, a
    small mask often): the call runs eagerly."""
    if state.tracer is not None:
        state.tracer.escape(f"random numbers drawn by {what}")
    if not batch_sizes:
        return sample(shape)
    levels = active_levels()
    refused = [lv for lv in levels if randomness_of[lv] == "error"]
    if refused:
        raise RuntimeError(
            f"{what} inside vmap draws random numbers, and vmap was not told whether each "
            f"example gets its own: pass vmap(..., randomness='different') (one draw per "
            f"example, as a loop would) or randomness='same' (one draw for all), or draw "
            f"outside and pass the numbers in. (see docs/errors.md#vmap-random)")
    own = [lv for lv in levels if randomness_of[lv] == "different"]
    out = sample(tuple(batch_sizes[lv] for lv in own) + tuple(shape))
    for lv in own:
        out = mark(out, lv, 0)
    return out


# ---- the layout of a batched tensor ------------------------------------------------------

def batch_axes(x: Any) -> dict[int, int]:
    """``{level: axis in x._data}`` for the batch levels ``x`` carries (its own value)."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    if not tans:
        return {}
    return {lv: v.axis for lv, v in tans.items() if type(v) is BatchAxis}


def all_examples(x: Tensor) -> Any:
    """The array of a batched tensor with every example's values (its batch axes in
    place, as :func:`batch_axes` gives them)."""
    return x._data


def involves(x: Any, level: int) -> bool:
    """Whether ``x`` or one of its forward-mode tangents is batched at ``level``."""
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    if not tans:
        return False
    if level in tans:
        return type(tans[level]) is BatchAxis or involves(tans[level], level)
    return any(type(v) is not BatchAxis and involves(v, level) for v in tans.values())


def visible_axis(x: Tensor, level: int) -> int:
    """The position of the batch axis of ``level`` among the axes of ``x`` not hidden by
    another batch level."""
    p: int = x._tangents[level].axis
    return p - sum(1 for lv, v in x._tangents.items()
                   if lv != level and type(v) is BatchAxis and v.axis < p)


def _absolute(x: Any, q: int) -> int:
    """The position in ``x._data`` of axis ``q`` among the axes not hidden."""
    hidden: Sequence[int] = _hidden(x) if getattr(x, "_tangents", None) else ()
    k = -1
    for i in range(np.ndim(x._data if isinstance(x, Tensor) else x)):
        if i not in hidden:
            k += 1
            if k == q:
                return i
    raise AssertionError(f"batching: axis {q} out of range")


def with_tangents(x: Tensor, tangents: dict[int, Any]) -> Tensor:
    """``x`` (the same data and node) carrying ``tangents`` instead of its own."""
    return make_tensor(x._data, x._node, x.requires_grad, tangents)


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


def like(g: Any, x: Any) -> Any:
    """``g``, an array laid out as the recorded arrays of ``x`` (a gradient, a new array of
    the same shape), with the batch axes of ``x``."""
    axes = batch_axes(x)
    for level, p in sorted(axes.items(), key=lambda item: -item[1]):
        g = mark(g, level, p)
    return g


# ---- the innermost batch level of a call ---------------------------------------------------

def innermost_level(args: tuple[Any, ...], kw: dict[str, Any]) -> int | None:
    """The innermost batch level carried by an argument's value (tuples and lists of
    arguments, such as an index, are looked into)."""
    top = None
    for a in (*args, *kw.values()) if kw else args:
        if isinstance(a, Tensor):
            tans = getattr(a, "_tangents", None)
            if tans:
                for lv, v in tans.items():
                    if type(v) is BatchAxis:
                        if lv not in batch_sizes:
                            raise escaped_error("an op was given")
                        if top is None or lv > top:
                            top = lv
        elif type(a) in (tuple, list) and a:
            lv = innermost_level(a, {})
            if lv is not None and (top is None or lv > top):
                top = lv
    return top


_warned: set[str] = set()


def warn_once(name: str, why: str) -> None:
    """A :class:`BatchingWarning` that ``name`` runs once per example (once per name)."""
    if name in _warned:
        return
    _warned.add(name)
    frame: types.FrameType | None = sys._getframe(1)  # the first caller outside yaad
    depth = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("yaad."):
        frame, depth = frame.f_back, depth + 1
    warnings.warn(f"vmap: '{name}' {why}: it runs once per example (a Python loop, "
                  f"slower than one call on the batch). See docs/transforms.md#vmap.",
                  BatchingWarning, stacklevel=depth)


F = TypeVar("F", bound=Callable[..., Any])


def per_example(*names: str) -> Callable[[F], F]:
    """Decorator for a function that reads the values of its arguments ``names`` (all of
    them when none is named) in Python: inside vmap, with one of those batched, it runs
    once per example (with a :class:`BatchingWarning`) instead of reading the batch as one
    value."""
    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            if state.batching is None:
                return fn(*args, **kw)
            bound = signature.bind(*args, **kw).arguments
            read = [bound[n] for n in names if n in bound] if names else list(bound.values())
            level = innermost_level(tuple(read), {})
            if level is None:
                return fn(*args, **kw)
            warn_once(fn.__name__, "reads values in Python")
            return _run_per_example(fn, level, args, kw)

        wrapper.__dict__["batch"] = "per_example"  # (as an op's batch=: how vmap runs it)
        return cast(F, wrapper)

    return decorate


# vmap's loop over the examples, ``run(fn, level, args, kw)``: the interpreter registers it
# (yaad.batch_mode, above the ops: the loop stacks its results with a shape op). A batch
# level is opened only there, so it is registered whenever per_example needs it.
_run_per_example: Callable[..., Any] = None  # type: ignore[assignment]


def register_per_example(run: Callable[..., Any]) -> None:
    """Set the loop that runs a :func:`per_example` function once per example."""
    global _run_per_example
    _run_per_example = run


# ---- helpers of the rules ------------------------------------------------------------------

def size_of(args: tuple[Any, ...], dims: tuple[int | None, ...]) -> int:
    """The batch size, from the first batched argument."""
    for a, d in zip(args, dims):
        if d is not None:
            return shape_of(a)[d]
    raise ValueError("batching: no batched argument")


def example_shape(x: Any, d: int | None) -> tuple[int, ...]:
    """The shape of one example of ``x`` (batch axis ``d``, None: not batched)."""
    shape = shape_of(x)
    return shape if d is None else shape[:d] + shape[d + 1:]
