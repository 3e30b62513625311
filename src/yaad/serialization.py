"""``yaad.save`` / ``yaad.load``: tensors, arrays and nested state dicts as ``.npz`` files.

A file is a NumPy ``.npz`` archive: one entry per array (``a0``, ``a1``, ...) and an entry
``__yaad__`` holding the structure as JSON (dicts, lists, tuples, numbers, strings, None,
and references to the arrays). Nothing is ever unpickled: arrays are read with
``allow_pickle=False`` and object arrays are refused when saving.

A round trip keeps every array's shape (0-d and empty included), dtype, bytes and, for a
tensor, ``requires_grad``; a NumPy scalar comes back as a NumPy scalar of its dtype. A
tensor or array held twice (tied weights) is stored once and loads as one object, as with
``torch.load``. Tensors and arrays sharing memory (a tensor and views of it, saved
together) keep sharing it, as ``torch.load`` keeps a storage: the bytes they reach are
stored once (a uint8 entry), each as its dtype, shape, strides and byte offset there
(format version 2; a file without views is still version 1), and a view read back is
checked to lie inside those bytes. Another
library's array (PyTorch, JAX, CuPy, Dask, ...) is refused, naming it: convert it first.

Types, as ``torch.save``/``torch.load`` keep them: an :class:`~yaad.nn.Parameter` loads
as a Parameter, an ``OrderedDict`` as an ``OrderedDict``, a namedtuple as an instance of
its class. The class is found by its module and qualified name among the modules already
imported (``load`` imports nothing and calls no constructor: the instance is made as
``tuple.__new__`` makes it), and must still have the saved fields; otherwise ``load``
raises :class:`SerializationError` saying which module to import. ``save`` refuses a
namedtuple whose class cannot be found by its name (made inside a function: define it at
module level, or save ``tuple(x)``). Any other subclass of ``dict``,
``list`` or ``tuple`` is saved as its base type.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import tempfile
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy as np

from .core.backend import backend_name, is_foreign
from .core.tensor import Tensor
from .nn.module import Parameter

_HEADER = "__yaad__"
_FORMAT = "yaad-npz"
_VERSION = 2  # (2: views sharing memory; a file without them is written as version 1)


class SerializationError(ValueError):
    """A file that :func:`yaad.load` cannot read: corrupt, truncated, or not a yaad file."""


def _foreign(obj: Any) -> bool:
    """Whether ``obj`` is another library's array (or tensor): one NumPy could convert."""
    return is_foreign(obj) or hasattr(obj, "__dlpack__") or hasattr(obj, "__array__")


def _leaves(obj: Any, out: list[Any]) -> list[Any]:
    """The tensors and arrays in ``obj`` (containers walked as :func:`_encode` walks them)."""
    if isinstance(obj, (Tensor, np.ndarray)):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _leaves(v, out)
    elif isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, out)
    return out


def _memory_of(a: Any) -> Any:
    """The array that owns ``a``'s memory (NumPy's ``base``: views of views point to it)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _bounds(shape: Any, strides: Any, itemsize: int, offset: int) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` that an array of ``shape`` and ``strides`` starting at byte
    ``offset`` reaches (``(offset, offset)`` when it is empty)."""
    if any(n == 0 for n in shape):
        return offset, offset
    lo = offset + sum(min(0, st * (n - 1)) for n, st in zip(shape, strides))
    hi = offset + sum(max(0, st * (n - 1)) for n, st in zip(shape, strides)) + itemsize
    return lo, hi


def _shared_memory(obj: Any, arrays: list[np.ndarray]) -> dict[int, tuple[int, int]]:
    """Tensors and arrays of ``obj`` that share memory (a tensor and a view of it): the
    bytes they reach in their memory are stored once, as a uint8 array appended to
    ``arrays``; returns id(object) -> (that entry, the byte address where it starts)."""
    groups: dict[int, dict[int, np.ndarray]] = {}
    for leaf in _leaves(obj, []):
        data = leaf.data if isinstance(leaf, Tensor) else leaf
        if isinstance(data, np.ndarray) and not data.dtype.hasobject and data.dtype.kind != "V":
            groups.setdefault(id(_memory_of(data)), {})[id(leaf)] = data
    shared: dict[int, tuple[int, int]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        root = _memory_of(next(iter(members.values())))
        if not (root.flags.c_contiguous or root.flags.f_contiguous):
            continue  # (memory NumPy cannot hand out as bytes: each stored on its own)
        base = root.__array_interface__["data"][0]
        spans = [_bounds(d.shape, d.strides, d.itemsize,
                         d.__array_interface__["data"][0] - base) for d in members.values()]
        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        memory = root.reshape(-1, order="A").view(np.uint8) if root.size else np.zeros(0, np.uint8)
        arrays.append(np.array(memory[lo:hi]))
        for key in members:
            shared[key] = (len(arrays) - 1, base + lo)
    return shared


def _encode(obj: Any, arrays: list[np.ndarray], where: str, seen: dict[int, dict[str, Any]],
            shared: dict[int, tuple[int, int]] | None = None) -> Any:
    """The JSON structure of ``obj``; arrays are appended to ``arrays``. A tensor or array
    met again (``seen``: its id to its entry) refers to the same entry, so that it loads
    as one object (tied weights stay tied). One of ``shared`` (tensors and arrays sharing
    memory) is an entry ``view``: its dtype, shape, strides and byte offset in the bytes
    stored once for all of them, so that they load sharing memory again."""
    shared = {} if shared is None else shared
    if isinstance(obj, (Tensor, np.ndarray)) and id(obj) in seen:
        ref: dict[str, Any] = dict(seen[id(obj)])
        if isinstance(obj, Tensor):
            ref["tensor"] = bool(obj.requires_grad)
            if isinstance(obj, Parameter):
                ref["parameter"] = True
        return ref
    if isinstance(obj, (Tensor, np.ndarray)) and id(obj) in shared:
        viewed = obj.data if isinstance(obj, Tensor) else obj
        entry, start = shared[id(obj)]
        view: dict[str, Any] = {
            "view": entry, "dtype": viewed.dtype.str, "shape": list(viewed.shape),
            "strides": list(viewed.strides),
            "offset": viewed.__array_interface__["data"][0] - start,
            "object": len(seen)}  # (two equal views of one tensor load as two objects)
        seen[id(obj)] = dict(view)
        if isinstance(obj, Tensor):
            view["tensor"] = bool(obj.requires_grad)
            if isinstance(obj, Parameter):
                view["parameter"] = True
        return view
    if isinstance(obj, (Tensor, np.ndarray, np.generic)):
        data = obj.data if isinstance(obj, Tensor) else obj
        if is_foreign(data):
            raise TypeError(f"yaad.save: {where} is a tensor on backend {backend_name(data)} "
                            f"(shape {tuple(data.shape)}); only NumPy-backed tensors are "
                            f"saved. Move it first: t.to('numpy') (see docs/backends.md).")
        if data.dtype.hasobject or data.dtype.kind == "V":
            raise TypeError(f"yaad.save: {where} is an array of dtype {data.dtype}; only "
                            f"numeric, boolean and string arrays can be saved (no pickling)")
        # (np.ascontiguousarray would turn a 0-d array into shape (1,))
        arrays.append(np.array(data, order="C", copy=not data.flags.c_contiguous)
                      if isinstance(data, np.ndarray) else np.asarray(data))
        node: dict[str, Any] = {"array": len(arrays) - 1}
        if not isinstance(obj, np.generic):
            seen[id(obj)] = {"array": len(arrays) - 1}
        if isinstance(obj, Tensor):
            node["tensor"] = bool(obj.requires_grad)
            if isinstance(obj, Parameter):
                node["parameter"] = True
        elif isinstance(obj, np.generic):
            node["scalar"] = True
        return node
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, (complex, np.complexfloating)):
        return {"complex": [obj.real, obj.imag]}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays, f"{where}[{i}]", seen, shared) for i, v in enumerate(obj)]
        fields = getattr(type(obj), "_fields", None)
        if isinstance(obj, tuple) and isinstance(fields, tuple) and all(
                isinstance(f, str) for f in fields) and len(fields) == len(obj):
            cls = type(obj)
            if _find(cls.__module__, cls.__qualname__) is not cls:
                raise TypeError(
                    f"yaad.save: {where} is a namedtuple of class {cls.__qualname__}, which "
                    f"cannot be found by its name in module {cls.__module__} (made inside a "
                    f"function, or renamed), so yaad.load could not rebuild it: define the "
                    f"class at module level, or save tuple(x) or x._asdict()")
            return {"namedtuple": {"module": cls.__module__, "name": cls.__qualname__,
                                   "fields": list(fields), "items": items}}
        return {"list" if isinstance(obj, list) else "tuple": items}
    if isinstance(obj, dict):
        keys = []
        for k in obj:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"yaad.save: {where} has a key {k!r} of type "
                                f"{type(k).__name__}; keys must be str or int")
            keys.append(k)
        kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
        return {kind: [[k, _encode(obj[k], arrays, f"{where}[{k!r}]", seen, shared)]
                       for k in keys]}
    if _foreign(obj):
        kind = f"{type(obj).__module__.split('.')[0]}.{type(obj).__name__}"
        raise TypeError(f"yaad.save: {where} is another library's array ({kind}); yaad saves "
                        f"its own tensors and NumPy arrays only. Convert it first: "
                        f"np.asarray(x) or yaad.tensor(x) (it then loads back as that)")
    raise TypeError(f"yaad.save: {where} is a {type(obj).__name__}, which cannot be saved "
                    f"without pickling; save tensors, arrays, numbers, strings, None and "
                    f"dicts/lists/tuples of them (e.g. model.state_dict())")


def save(obj: Any, f: str | os.PathLike[str] | BinaryIO) -> None:
    """Save tensors, arrays and nested containers of them to an ``.npz`` file.

    Parameters
    ----------
    obj : Tensor, ndarray, dict, list, tuple, number, str or None
        For instance ``model.state_dict()`` or ``optimizer.state_dict()``; dict keys
        must be strings or integers. Tensors must hold NumPy arrays.
    f : str, path or binary file
        The destination, used as given (no suffix is added). A path is written
        atomically: an existing file is replaced only once the new one is complete.

    Raises
    ------
    TypeError
        For an object that cannot be stored without pickling, or another library's array
        (PyTorch, JAX, CuPy, Dask: convert it first).
    """
    arrays: list[np.ndarray] = []
    shared = _shared_memory(obj, arrays)
    tree = _encode(obj, arrays, "the object", {}, shared)
    header = json.dumps({"format": _FORMAT, "version": _VERSION if shared else 1,
                         "tree": tree})
    entries = {f"a{i}": a for i, a in enumerate(arrays)}
    entries[_HEADER] = np.array(header)
    if not isinstance(f, (str, os.PathLike)):
        np.savez(f, allow_pickle=False, **entries)
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".yaad-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, allow_pickle=False, **entries)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _decode(node: Any, arrays: Any, name: str, made: dict[tuple[Any, ...], Any]) -> Any:
    """The object of the structure entry ``node``; ``made`` holds the tensors and arrays
    loaded so far by entry, so that one saved twice loads as one object."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, dict) and len(node) >= 1:
        if "array" in node:
            key = f"a{node['array']}"
            if key not in arrays:
                raise SerializationError(f"yaad.load: {name} refers to a missing array "
                                         f"entry {key!r}; the file is corrupt")
            a = arrays[key]
            if node.get("scalar") is True:
                if a.ndim:
                    raise ValueError(f"the scalar entry {key!r} has shape {a.shape}")
                return a[()]
            if "tensor" in node and not isinstance(node["tensor"], bool):
                raise ValueError(f"the tensor flag {node['tensor']!r} is not a bool")
            parameter = node.get("parameter", False)
            if not isinstance(parameter, bool) or (parameter and "tensor" not in node):
                raise ValueError(f"the parameter flag {parameter!r} is not a tensor's bool")
            kind = (key, node.get("tensor"), parameter)
            if kind not in made:
                made[kind] = a if "tensor" not in node else (Parameter if parameter else Tensor)(
                    a, requires_grad=node["tensor"])
            return made[kind]
        if "view" in node:
            return _view(node, arrays, name, made)
        if "complex" in node:
            re, im = node["complex"]
            return complex(re, im)
        if "list" in node:
            return [_decode(v, arrays, name, made) for v in node["list"]]
        if "tuple" in node:
            return tuple(_decode(v, arrays, name, made) for v in node["tuple"])
        if "dict" in node:
            return {k: _decode(v, arrays, name, made) for k, v in node["dict"]}
        if "odict" in node:
            return collections.OrderedDict(
                (k, _decode(v, arrays, name, made)) for k, v in node["odict"])
        if "namedtuple" in node:
            entry = node["namedtuple"]
            cls = _namedtuple_class(entry["module"], entry["name"], entry["fields"], name)
            items = [_decode(v, arrays, name, made) for v in entry["items"]]
            if len(items) != len(cls._fields):
                raise ValueError(f"namedtuple {entry['name']!r} has {len(items)} items for "
                                 f"{len(cls._fields)} fields")
            return tuple.__new__(cls, items)  # (as namedtuple's _make: no constructor runs)
    raise SerializationError(f"yaad.load: {name} has an unreadable structure entry "
                             f"{str(node)[:80]!r}; the file is corrupt")


def _tensor_flags(node: dict[str, Any]) -> tuple[Any, bool]:
    if "tensor" in node and not isinstance(node["tensor"], bool):
        raise ValueError(f"the tensor flag {node['tensor']!r} is not a bool")
    parameter = node.get("parameter", False)
    if not isinstance(parameter, bool) or (parameter and "tensor" not in node):
        raise ValueError(f"the parameter flag {parameter!r} is not a tensor's bool")
    return node.get("tensor"), parameter


def _view(node: dict[str, Any], arrays: Any, name: str, made: dict[tuple[Any, ...], Any]) -> Any:
    """An array (or tensor) in memory it shares with others: a view of the bytes stored
    once, checked to lie inside them (a tampered entry cannot reach other memory)."""
    key = f"a{node['view']}"
    if key not in arrays:
        raise SerializationError(f"yaad.load: {name} refers to a missing array entry "
                                 f"{key!r}; the file is corrupt")
    memory = arrays[key]
    if memory.dtype != np.uint8 or memory.ndim != 1:
        raise ValueError(f"the memory entry {key!r} is not bytes")
    if not isinstance(node["dtype"], str):
        raise ValueError(f"the view's dtype {node['dtype']!r} is not a dtype's name")
    dtype = np.dtype(node["dtype"])
    if dtype.hasobject or dtype.kind == "V":
        raise ValueError(f"the view's dtype {node['dtype']!r} is not one yaad saves")
    shape, strides, offset = node["shape"], node["strides"], node["offset"]
    if not (isinstance(shape, list) and isinstance(strides, list) and len(shape) == len(strides)
            and all(type(v) is int for v in (*shape, *strides, offset))
            and all(n >= 0 for n in shape)):
        raise ValueError("a view's shape, strides and offset must be integers")
    lo, hi = _bounds(shape, strides, dtype.itemsize, offset)
    if lo < 0 or hi > memory.size or not 0 <= offset <= memory.size:
        raise ValueError(f"a view reaches bytes [{lo}, {hi}) outside its memory entry "
                         f"{key!r} of {memory.size} bytes")
    tensor, parameter = _tensor_flags(node)
    obj = node.get("object")
    if obj is not None and type(obj) is not int:
        raise ValueError(f"a view's object number {obj!r} is not an integer")
    kind = (key, dtype.str, tuple(shape), tuple(strides), offset, tensor, parameter, obj)
    if kind not in made:
        # (memory is the base of every view of it: one version counter for all)
        a = np.ndarray(tuple(shape), dtype, buffer=memory, offset=offset, strides=tuple(strides))
        made[kind] = a if tensor is None else (Parameter if parameter else Tensor)(
            a, requires_grad=tensor)
    return made[kind]


def _namedtuple_class(module: Any, qualname: Any, fields: Any, name: str) -> Any:
    """The namedtuple class ``module.qualname`` with ``fields``, among the modules already
    imported (nothing is imported: a file cannot make ``load`` run a module's code)."""
    if not (isinstance(module, str) and isinstance(qualname, str) and isinstance(fields, list)
            and all(isinstance(f, str) for f in fields)):
        raise ValueError("a namedtuple entry without a module, name and field names")
    cls = _find(module, qualname)
    if not (isinstance(cls, type) and issubclass(cls, tuple)
            and getattr(cls, "_fields", None) == tuple(fields)):
        raise SerializationError(
            f"yaad.load: {name} holds a namedtuple {module}.{qualname} with fields "
            f"{tuple(fields)}, and no such class is loaded: import {module} (with that "
            f"class and fields) before yaad.load. load imports nothing itself, so that a "
            f"file cannot run code.")
    return cls


def _find(module: str, qualname: str) -> Any:
    """``module.qualname`` if ``module`` is imported (None otherwise: nothing is imported)."""
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if obj is not None and part != "<locals>" else None
    return obj


def load(f: str | os.PathLike[str] | BinaryIO) -> Any:
    """Load what :func:`save` wrote, without unpickling anything.

    Parameters
    ----------
    f : str, path or binary file
        The file.

    Returns
    -------
    The saved object: arrays come back as NumPy arrays, tensors as tensors (with their
    ``requires_grad``; a Parameter as a Parameter), NumPy scalars as NumPy scalars,
    containers (``OrderedDict`` and namedtuples included: see the module's notes) and
    numbers as they were; shapes, dtypes and bytes unchanged.

    Raises
    ------
    FileNotFoundError
        If the path does not exist.
    SerializationError
        (a ``ValueError``) If the file is corrupt, truncated, or not written by
        :func:`save`, or holds a namedtuple whose class is not loaded; the message names
        the file.
    """
    name = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else repr(
        getattr(f, "name", f))
    if isinstance(f, (str, os.PathLike)) and not os.path.exists(f):
        raise FileNotFoundError(f"yaad.load: no such file {name}")
    try:
        archive = np.load(f, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise SerializationError(f"yaad.load: {name} is a single .npy array, not a file "
                                     f"written by yaad.save; read it with numpy.load")
        with archive:
            if _HEADER not in archive.files:
                raise SerializationError(f"yaad.load: {name} is a NumPy archive but not one "
                                         f"written by yaad.save (no {_HEADER!r} entry); read "
                                         f"it with numpy.load")
            arrays = {k: archive[k] for k in archive.files}
    except SerializationError:
        raise
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        raise SerializationError(
            f"yaad.load: cannot read {name}: it is corrupt, truncated, or not a file written "
            f"by yaad.save ({type(e).__name__}: {e})") from e
    # A tampered header may hold anything JSON can: wrong types, wrong arities, nesting
    # deeper than Python's recursion limit. Every such failure names the file.
    try:
        header = json.loads(str(arrays.pop(_HEADER)))
        if header.get("format") != _FORMAT:
            raise ValueError(f"unknown format {header.get('format')!r}")
        if header.get("version", 0) > _VERSION:
            raise ValueError(f"format version {header['version']} is newer than this yaad "
                             f"reads ({_VERSION})")
        return _decode(header["tree"], arrays, name, {})
    except SerializationError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, IndexError,
            RecursionError) as e:
        raise SerializationError(f"yaad.load: {name} has an unreadable header "
                                 f"({type(e).__name__}: {str(e)[:200]}); the file is corrupt "
                                 f"or was not written by yaad.save") from None


__all__ = ["save", "load", "SerializationError"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
