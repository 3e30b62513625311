"""Recorded arrays handed to Python while recording.

A compiled function's array arguments, and the gradients that ``autograd.grad`` or a
``yaad.func`` transform returns inside it, are NumPy arrays in eager mode. While
recording, Python gets a :class:`Watched` array instead: passing it to yaad functions
(with tensors) or returning it is recorded; everything that reads its values (NumPy
functions and ufuncs, operators, ``np.asarray``, methods, iteration, printing, pickling)
makes the call run eagerly, with a warning naming the line; ``bool()``, ``float()``,
``int()``, ``complex()`` and ``operator.index()`` are guards, as on a tensor. It is not
an ndarray subclass on purpose: NumPy converts a subclass to a plain array in C
(``np.asarray``, ``np.array``, the buffer protocol) without a hook, so a subclass could
be read unseen. ``isinstance(w, np.ndarray)`` is True, as in eager mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# NumPy functions that read only shapes and dtypes.
_SHAPE_ONLY = frozenset({"shape", "ndim", "size", "result_type", "iscomplexobj",
                         "isrealobj", "can_cast", "min_scalar_type", "common_type"})


class Watched:
    """A recorded array (slot ``slot`` of recorder ``rec``) seen by Python (see the module
    docstring). ``array`` is the value eager mode would hand out."""

    __slots__ = ("array", "slot", "rec", "__weakref__")
    __array_priority__ = -1000.0  # below Tensor's: tensors handle mixed operations
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, array: Any, slot: int, rec: Any) -> None:
        object.__setattr__(self, "array", array)
        object.__setattr__(self, "slot", slot)
        object.__setattr__(self, "rec", rec)

    @property
    def __class__(self) -> type:  # isinstance(w, np.ndarray) as in eager mode
        return type(self.array)

    def _read(self, what: str) -> Any:
        self.rec.escape(f"{what} of an array the recording handed to Python (an array "
                        f"argument, or a gradient)")
        return self.array

    # ---- what does not read values ----

    @property
    def shape(self) -> tuple:
        return np.shape(self.array)

    @property
    def ndim(self) -> int:
        return np.ndim(self.array)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def size(self) -> int:
        return np.size(self.array)

    @property
    def itemsize(self) -> int:
        return self.array.itemsize

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    def __len__(self) -> int:
        return len(self.array)

    # ---- guards ----

    def _guard(self, kind: str, convert: Any) -> Any:
        self.rec.guard_slot(self.slot, kind)
        return convert(self.array)

    def __bool__(self) -> bool:
        return self._guard("bool", bool)

    def __float__(self) -> float:
        return self._guard("float", float)

    def __int__(self) -> int:
        return self._guard("int", int)

    def __complex__(self) -> complex:
        return self._guard("complex", complex)

    def __index__(self) -> int:
        import operator

        return self._guard("index", operator.index)

    # ---- everything else reads the values ----

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = np.asarray(self._read("np.asarray (or another conversion)"))
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from ..core.tensor import Tensor

        if any(isinstance(x, Tensor) for x in inputs):
            return NotImplemented  # the tensor's method records it
        self._read(f"numpy.{ufunc.__name__}")
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from ..core.tensor import Tensor

        if any(issubclass(t, Tensor) for t in types):
            return NotImplemented
        if func.__name__ not in _SHAPE_ONLY:
            self._read(f"numpy.{func.__name__}")
        return func(*_plain(args), **_plain(kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._read(f".{name}"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._read(f"setting .{name}"), name, value)

    def __getitem__(self, idx: Any) -> Any:
        return self._read("indexing")[_plain(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._read("writing into")[_plain(idx)] = _plain(value)

    def __iter__(self) -> Any:
        return iter(self._read("iterating over"))

    def __contains__(self, x: Any) -> bool:
        return _plain(x) in self._read("'in'")

    def __repr__(self) -> str:
        return repr(self._read("repr()"))

    def __str__(self) -> str:
        return str(self._read("str()"))

    def __format__(self, spec: str) -> str:
        return format(self._read("format()"), spec)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self._read("pickling or copying").__reduce_ex__(protocol)

    def __copy__(self) -> Any:
        return self._read("copying").copy()

    def __deepcopy__(self, memo: Any) -> Any:
        return self._read("copying").copy()


def _operator(name: str) -> Any:
    def op(self: Watched, *others: Any) -> Any:
        from ..core.tensor import Tensor

        if any(isinstance(o, Tensor) for o in others):
            return NotImplemented
        return getattr(self._read(f"the operator {name}"), name)(*_plain(others))

    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
              "lshift", "rshift", "and", "xor", "or"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(Watched, _form.format(_name), _operator(_form.format(_name)))
for _name in ("__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__", "__neg__",
              "__pos__", "__abs__", "__invert__", "__round__", "__trunc__", "__floor__",
              "__ceil__"):
    setattr(Watched, _name, _operator(_name))


def _plain(x: Any) -> Any:
    """``x`` with :class:`Watched` arrays replaced by their arrays (through tuples, lists
    and dicts)."""
    t = type(x)
    if t is Watched:
        return x.array
    if t is tuple or t is list:
        return t([_plain(v) for v in x])
    if t is dict:
        return {k: _plain(v) for k, v in x.items()}
    return x


plain = _plain
