"""How a tensor presents itself as an array to Python and NumPy: its array attributes
(``shape``, ``dtype``, ...), the conversions (``item``, ``tolist``, ``float(t)``,
``np.asarray(t)``, ...) and its printing (``repr``, Jupyter's ``_repr_html_``).

:class:`ArrayFace` is a base class of :class:`yaad.tensor.Tensor`, which adds what a
tensor is for autograd (its node, ``requires_grad``, ``.grad``). Every point here that
reads the value tells a recording of ``yaad.compile`` (``state.tracer``) what Python saw:
a guard, or a reason to run eagerly.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterator

import numpy as np

from .backend import describe, is_foreign, item
from .frames import called_from_user, user_frames
from .grad_mode import state


def read_value(t: Any, kind: str) -> None:
    """The one gate from a tensor's value to Python (``float``, ``item``, ``__index__``,
    ...): tell a recording of ``yaad.compile`` (a guard, or a reason to run eagerly), and,
    while a transform of ``yaad.func`` evaluates its function, remember a conversion of a
    tensor that depends on the traced inputs (it requires grad, or carries an active
    forward-mode tangent) with the user's line, so that the transform can name it when
    the function's output turns out not to depend on its inputs."""
    if state.tracer is not None:
        state.tracer.read(t, kind)
    seen = state.conversions
    if seen is not None and (t.requires_grad or _has_tangent(t)) and called_from_user(
            __file__):  # (yaad's own conversions, inside its functions, are not the user's)
        seen.append((kind, user_frames()))


def warn_cut(t: Any, kind: str) -> None:
    """PyTorch's warning for ``float(t)`` of a tensor that requires grad, made by the
    user's code (and for ``complex(t)``, where PyTorch is silent): the number carries no
    gradient, so whatever is computed from it is cut from the graph without a word.
    ``int(t)`` (an integer has no derivative), ``t.item()`` and ``t.detach()`` say so
    explicitly and do not warn, as in PyTorch."""
    if called_from_user(__file__):
        warnings.warn(
            f"{kind}() of a tensor that requires grad (shape {t.shape}, {t.dtype}): the "
            f"Python number carries no gradient, so what is computed from it is cut from "
            f"the graph. Call t.detach() (or t.item()) first to mean a constant, or keep "
            f"it a tensor.", UserWarning, stacklevel=3)


def _has_tangent(t: Any) -> bool:
    tans = getattr(t, "_tangents", None) if state.levels else None
    return bool(tans and any(lv in state.levels for lv in tans))


class ArrayFace:
    """The array side of a tensor (a base class of ``Tensor``; see the module docstring)."""

    __slots__ = ()
    _data: np.ndarray
    _node: Any
    requires_grad: bool

    def _producer(self) -> Any:
        node = self._node
        return node[0] if isinstance(node, tuple) else node

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, as a tuple."""
        return self._data.shape

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    @property
    def size(self) -> int:
        """The number of elements."""
        return self._data.size

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype."""
        return self._data.dtype

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the data."""
        return self._data.nbytes

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (shared, not copied)."""
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "numpy")
        if is_foreign(self._data):
            raise TypeError(f"numpy(): this tensor's data is not a NumPy array "
                            f"({describe(self._data)}); move it first: t.to('numpy')")
        return self._data

    def tolist(self) -> Any:
        """The data as nested Python lists."""
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "tolist")
        if not hasattr(self._data, "tolist"):  # (the array API has no tolist)
            raise TypeError(f"tolist(): this tensor's data has no lists "
                            f"({describe(self._data)}); move it first: t.to('numpy').tolist()")
        return self._data.tolist()

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "item")
        if self._data.size != 1:
            raise ValueError(f"item(): only a one-element tensor can be converted to a "
                             f"Python scalar; this one has shape {self.shape}")
        return item(self._data)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        n: int = self._data.shape[0]
        return n

    def __iter__(self) -> Iterator[Any]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self._data.shape[0]):
            yield self[i]  # type: ignore[index]  # (bound by methods.install)

    def __bool__(self) -> bool:
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "bool")
        return bool(self._data)

    def __float__(self) -> float:
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "float")
        if self.requires_grad:
            warn_cut(self, "float")
        return float(self._data)

    def __int__(self) -> int:
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "int")
        return int(self._data)

    def __complex__(self) -> complex:
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "complex")
        if self.requires_grad:
            warn_cut(self, "complex")
        return complex(self._data)

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        if state.tracer is not None or state.conversions is not None:
            read_value(self, "index")
        return self._data.__index__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if state.tracer is not None:
            state.tracer.read(self, "array")
        if self.requires_grad and state.enabled:
            raise TypeError(
                "cannot convert a tensor that requires grad to a NumPy array implicitly: "
                "the gradient would be lost. Use t.detach().numpy() (or t.numpy()) if that "
                "is what you want; to build an array from tensors (np.array([...]), np.r_, "
                "np.c_), use yaad.stack or yaad.concatenate; for A @ t with a SciPy sparse "
                "matrix or LinearOperator A, write yaad.matmul(A, t) or wrap A with "
                "yaad.sparse.asarray(A).")
        if _has_tangent(self):
            raise TypeError(
                "cannot convert a tensor that carries a forward-mode tangent (inside "
                "yaad.func.jvp, jacfwd or hvp) to a NumPy array: the tangent would be lost. "
                "To build an array from tensors (np.array([...]), np.r_, np.c_), use "
                "yaad.stack or yaad.concatenate.")
        data = np.asarray(self._data)
        if dtype is not None and data.dtype != dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    def __repr__(self) -> str:
        if state.tracer is not None:
            state.tracer.read(self, "repr")
        prefix = "tensor("
        extras = []
        if is_foreign(self._data):  # not computed (Dask) nor moved (CuPy) to be shown
            body = f"<{describe(self._data)}>"
        else:
            body = np.array2string(np.asarray(self._data), separator=", ", prefix=prefix)
            if self._data.dtype not in (np.float64, np.int64, np.bool_, np.complex128):
                extras.append(f"dtype={self._data.dtype}")
        node = self._producer()
        if node is not None:
            extras.append(f"grad_fn=<{node.op.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return prefix + body + "".join(", " + e for e in extras) + ")"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """Jupyter's view: the values, then the shape, the dtype and what made the tensor."""
        import html

        node = self._producer()
        made = (f"grad_fn=&lt;{html.escape(node.op.name)}&gt;" if node is not None else
                "requires_grad=True" if self.requires_grad else "no gradient")
        return (f"<pre>{html.escape(repr(self))}</pre><small>shape {self.shape}, "
                f"{self.dtype}, {made}</small>")

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return repr(self)

    # ---- copies ----------------------------------------------------------------------
    # pickle, copy.deepcopy and copy.copy reach the value through ``__reduce_ex__``, which
    # reads the state here: a copy made so holds the value itself, which a recording
    # would keep as a constant. ``copy.copy`` shares the value and the history instead.

    def __getstate__(self) -> Any:
        if state.tracer is not None:
            state.tracer.read(self, "pickle")
        return default_state(self)

    def __copy__(self) -> Any:
        """A new tensor object with the same data array (shared) and history."""
        cls = type(self)
        new = cls.__new__(cls)
        own = default_state(self)
        # (own: (None, slots) or a dict)
        dict_part, slots = own if isinstance(own, tuple) else (own, None)
        for part in (dict_part, slots):
            for name, value in (part or {}).items():
                object.__setattr__(new, name, value)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """A new tensor with copies of the value and the state; a computed tensor (one
        with a ``grad_fn``) raises, as in PyTorch: its copy would hold a copy of its graph,
        whose backward reaches copies of the leaves, never the user's."""
        import copy

        if self._producer() is not None:
            raise RuntimeError(
                "copy.deepcopy of a computed tensor (grad_fn="
                f"<{self._producer().op.name}>): only leaves can be deep-copied, as in "
                "PyTorch; the copy would carry a copy of the graph, and gradients through it "
                "would never reach the original leaves. Use t.clone() for a copy that stays "
                "differentiable, or t.detach().clone() for a constant.")
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        own = self.__getstate__()  # (a recording sees the read there)
        dict_part, slots = own if isinstance(own, tuple) else (own, None)
        for part in (dict_part, slots):
            for name, value in (part or {}).items():
                object.__setattr__(new, name, copy.deepcopy(value, memo))
        return new


def default_state(obj: Any) -> Any:
    """What Python 3.11's ``object.__getstate__`` returns for ``obj``, on Python 3.10 too:
    the instance dict (``None`` when empty), or ``(dict or None, {slot: value})`` when
    slots are set."""
    builtin = getattr(object, "__getstate__", None)  # (new in Python 3.11)
    return builtin(obj) if builtin is not None else state_of_slots(obj)


def state_of_slots(obj: Any) -> Any:
    """``object.__getstate__(obj)`` as Python 3.11 computes it, read from the instance
    dict and the ``__slots__`` of the classes (for Python 3.10, which lacks it)."""
    own = getattr(obj, "__dict__", None) or None
    slots: dict[str, Any] = {}
    for cls in type(obj).__mro__:
        names = cls.__dict__.get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name in ("__dict__", "__weakref__") or name in slots:
                continue
            stored = f"_{cls.__name__.lstrip('_')}{name}" if (
                name.startswith("__") and not name.endswith("__")) else name
            try:
                slots[stored] = object.__getattribute__(obj, stored)
            except AttributeError:
                pass
    return (own, slots) if slots else own


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of a tensor (one example's inside vmap), an array or anything NumPy reads
    as one (no value is read: a compiled function's recording need not see it)."""
    return x.shape if isinstance(x, ArrayFace) else np.shape(x)


def ndim_of(x: Any) -> int:
    """The number of dimensions (see :func:`shape_of`)."""
    return x.ndim if isinstance(x, ArrayFace) else np.ndim(x)


def dtype_of(x: Any) -> np.dtype:
    """The dtype (see :func:`shape_of`)."""
    if isinstance(x, ArrayFace):
        return x._data.dtype
    dtype: np.dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    return dtype
