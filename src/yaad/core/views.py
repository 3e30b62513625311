"""Views: tensors that share memory with another tensor, and how each was made.

An op that saves no input may return a view of one (``reshape``, ``getitem``, ``real``);
the op call notes it (:func:`note_view`), so that in-place changes (``methods.py``) keep
both sides right: a change of the parent gives the view a new history (PyTorch's
rebase), and a change of the view is written through the parent.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import numpy as np

from .tensor import Tensor

ndarray = np.ndarray


class View(NamedTuple):
    """How a tensor that shares memory with another (its parent) was made from it: the
    op, its arguments, the parent's position among them, the output index (None for a
    single output) and whether recording was on (made by :func:`note_view`).

    In-place changes use it (see ``methods``): a change of the parent gives the view a
    new history (PyTorch's rebase), and a change of the view is written through the
    parent."""

    parent: Tensor
    op: Any  # the Op
    args: tuple[Any, ...]
    kw: dict[str, Any]
    i: int
    k: int | None
    grad_mode: bool

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy (pickle, deepcopy) of a view has memory of its own: it is no view.
        return (type(None), ())

    def replay(self, parent: Any) -> Any:
        """The view made again from ``parent`` (a tensor or an array)."""
        args = list(self.args)
        args[self.i] = parent
        out = self.op.fn(*args, **self.kw)
        return out if self.k is None else out[self.k]


_tuple_new = tuple.__new__


class _Views(list["weakref.ref[Tensor]"]):
    """A tensor's ``_views``: weak references to the views made of it (not copied)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Views, ())


def _root(a: Any) -> Any:
    base = getattr(a, "base", None)
    return base if isinstance(base, ndarray) else a


def note_view(op: Any, args: tuple[Any, ...], kw: dict[str, Any], out: Tensor, k: int | None,
              grad_mode: bool) -> None:
    """If output ``k`` of ``op`` (``out``) shares memory with a tensor argument, record
    it as a view of that tensor (a :class:`View`, and a weak reference in the tensor's
    ``_views``), so that in-place changes of either side keep both right. (Called for
    ops that save no input, the only ones that return views; NumPy's ``base`` is the
    array that owns the memory.)"""
    root = out._data.base
    if not isinstance(root, ndarray):
        return
    a = args[0]  # (nearly always the one viewed)
    i: int | None = 0
    if not (isinstance(a, Tensor) and (a._data is root or a._data.base is root)):
        i = _viewed(args, root)
        if i is None:
            return
        a = args[i]
    out._base = _tuple_new(View, (a, op, args, kw, i, k, grad_mode))
    try:
        views = a._views
    except AttributeError:
        views = a._views = _Views()
    n = len(views)
    if n >= 32 and not n & (n - 1):  # now and then, drop the dead ones
        views[:] = [r for r in views if r() is not None]
    views.append(weakref.ref(out))


def _viewed(args: tuple[Any, ...], root: Any) -> int | None:
    """The position of the tensor among ``args`` whose memory ``root`` is, else None
    (apart from note_view: a generator there would make ``root`` a cell on every call)."""
    for j, b in enumerate(args):
        if isinstance(b, Tensor) and (b._data is root or b._data.base is root):
            return j
    return None


def note_views(op: Any, args: tuple[Any, ...], kw: dict[str, Any], out: Any,
               grad_mode: bool) -> None:
    """:func:`note_view` for each output of a call of ``op``."""
    if isinstance(out, tuple):
        for k, o in enumerate(out):
            if getattr(o._data, "base", None) is not None:
                note_view(op, args, kw, o, k, grad_mode)
    elif getattr(out._data, "base", None) is not None:
        note_view(op, args, kw, out, None, grad_mode)
