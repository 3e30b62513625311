"""The array API's inspection namespace (``__array_namespace_info__``), devices and
DLPack."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.backend import backend_name
from ..core.tensor import Tensor
from . import _dtypes as d

CPU = "cpu"  # the device of a tensor whose data is a NumPy array


def check_device(device: Any, name: str) -> None:
    """Refuse a device other than the CPU (where the data of NumPy-backed tensors is)."""
    if device is not None and device != CPU:
        raise ValueError(f"{name}: device={device!r}; yaad's array API namespace makes "
                         f"NumPy-backed tensors on 'cpu' (move a tensor with "
                         f"t.to_device(...) or yaad.to)")


def device_of(x: Any) -> Any:
    """The device of a tensor: ``"cpu"`` for NumPy data, else its library's device."""
    if backend_name(x) == "numpy":
        return CPU
    import array_api_compat

    return array_api_compat.device(x.data if isinstance(x, Tensor) else x)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """A tensor over the memory of an object with ``__dlpack__`` (numpy.from_dlpack).

    A tensor is returned as it is (connected to its graph), or copied with ``copy=True``.

    Returns
    -------
    Tensor
    """
    check_device(device, "from_dlpack")
    if isinstance(x, Tensor):
        from ..ops.shape import copy as copy_op

        return copy_op(x) if copy else x
    return Tensor(np.from_dlpack(x, copy=copy))


_DTYPE_NAMES = {
    "bool": ("bool",), "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"), "complex floating": ("complex64", "complex128"),
}
_DTYPE_NAMES["integral"] = _DTYPE_NAMES["signed integer"] + _DTYPE_NAMES["unsigned integer"]
_DTYPE_NAMES["numeric"] = (_DTYPE_NAMES["integral"] + _DTYPE_NAMES["real floating"]
                           + _DTYPE_NAMES["complex floating"])


class Info:
    """What the namespace supports (the array API's inspection object)."""

    __module__ = "yaad.array_api"

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes (``nonzero``, ``unique_*``) work;
        at most 64 dimensions (NumPy's)."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self) -> Any:
        """``"cpu"``."""
        return CPU

    def devices(self) -> list[Any]:
        """``["cpu"]``."""
        return [CPU]

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        """float64, complex128, int64 (integral and indexing)."""
        check_device(device, "default_dtypes")
        return {"real floating": d.float64, "complex floating": d.complex128,
                "integral": d.int64, "indexing": d.int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, Any]:
        """The dtypes, by name, of a kind (a kind name, a tuple of them) or all."""
        check_device(device, "dtypes")
        if kind is None:
            names = _DTYPE_NAMES["bool"] + _DTYPE_NAMES["numeric"]
        elif isinstance(kind, tuple):
            names = tuple(n for k in kind for n in self.dtypes(kind=k))
        elif kind in _DTYPE_NAMES:
            names = _DTYPE_NAMES[kind]
        else:
            raise ValueError(f"dtypes: unknown kind {kind!r}; one of {sorted(_DTYPE_NAMES)}")
        return {n: getattr(d, n) for n in names}


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The inspection object (capabilities, devices, dtypes)."""
    return _INFO

