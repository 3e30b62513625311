"""Array backends: which library an array belongs to, and its array API namespace.

A tensor keeps the array it is given: a NumPy ``ndarray`` (the default, and the fast
path), or another library's array that speaks the Python array API standard or NumPy's
``__array_function__`` protocol (CuPy on a GPU, Dask on a cluster, ``array_api_strict``
in the tests). Nothing here converts an array; :func:`namespace` names the module whose
functions apply to it (``numpy`` itself for NumPy arrays, so that code written with the
array API's names costs nothing there).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from typing import Any, Callable

import numpy as np

__all__ = ["BackendError", "is_foreign", "namespace", "backend_name", "dtype_kind",
           "is_complex", "is_inexact", "native_dtype", "describe", "implements", "call",
           "no_implementation", "any_foreign", "ones_like", "check_same_backend",
           "target_name", "namespace_for", "move"]

_NUMPY_TYPES = (np.ndarray, np.generic)


def is_foreign(x: Any) -> bool:
    """Whether ``x`` is an array of another library than NumPy (CuPy, Dask,
    ``array_api_strict``, ...): one with ``__array_namespace__`` or
    ``__array_function__`` that is not a NumPy array or scalar (nor one of yaad's own
    array-like helpers)."""
    if isinstance(x, _NUMPY_TYPES):
        return False
    return _foreign_type(type(x))


_foreign_types: dict[type, bool] = {}  # type -> whether its instances are foreign arrays


def _foreign_type(cls: type) -> bool:
    known = _foreign_types.get(cls)
    if known is None:
        known = _foreign_types[cls] = cls.__module__.split(".")[0] != "yaad" and (
            hasattr(cls, "__array_namespace__") or hasattr(cls, "__array_function__"))
    return known


def backend_name(x: Any) -> str:
    """The library an array (or a tensor's array) belongs to, by its top-level module
    name: ``"numpy"``, ``"cupy"``, ``"dask"``, ``"array_api_strict"``, ..."""
    if isinstance(x, _NUMPY_TYPES):
        return "numpy"
    if not _foreign_type(type(x)):
        data = getattr(x, "_data", None)  # a tensor: its array's library
        return "numpy" if data is None else backend_name(data)
    return _library(type(x))


def _library(cls: type) -> str:
    return cls.__module__.split(".")[0]


def namespace(x: Any) -> Any:
    """The array API namespace of ``x``: the ``numpy`` module for NumPy arrays and
    scalars (and anything else NumPy reads as an array); for a tensor, its array's; for
    another library's array,
    its namespace through ``array-api-compat`` (e.g. ``array_api_compat.cupy``,
    ``array_api_compat.dask.array``), or its own ``__array_namespace__()``.

    Parameters
    ----------
    x : array

    Returns
    -------
    module
    """
    if isinstance(x, _NUMPY_TYPES):
        return np
    if not _foreign_type(type(x)):
        data = getattr(x, "_data", None)  # a tensor (a rule's argument): its array's
        return np if data is None else namespace(data)
    return _namespace_of_type(type(x), x)


_namespaces: dict[type, Any] = {}


def _namespace_of_type(cls: type, x: Any) -> Any:
    xp = _namespaces.get(cls)
    if xp is None:
        try:
            import array_api_compat
        except ImportError:
            if not hasattr(x, "__array_namespace__"):
                raise ImportError(
                    f"arrays of type {cls.__module__}.{cls.__name__} need the package "
                    f"array-api-compat (pip install array-api-compat)") from None
            xp = x.__array_namespace__()
        else:
            xp = array_api_compat.array_namespace(x)
        _namespaces[cls] = xp
    return xp


def dtype_kind(dtype: Any) -> str:
    """NumPy's one-letter kind of a dtype (``"f"``, ``"c"``, ``"i"``, ``"u"``, ``"b"``),
    also for another library's dtype objects (``array_api_strict.float64``)."""
    kind: str | None = getattr(dtype, "kind", None)
    if kind is not None:
        return kind
    known = _kinds.get(dtype)
    if known is None:
        known = _kinds[dtype] = _foreign_kind(dtype)
    return known


_kinds: dict[Any, str] = {}


def _foreign_kind(dtype: Any) -> str:
    xp = sys.modules[type(dtype).__module__.split(".")[0]]
    for kind, name in (("f", "real floating"), ("c", "complex floating"),
                       ("i", "signed integer"), ("u", "unsigned integer"), ("b", "bool")):
        if xp.isdtype(dtype, name):
            return kind
    return "O"


def is_complex(x: Any) -> bool:
    """Whether the array (or shape-and-dtype record) ``x`` has a complex dtype."""
    return dtype_kind(x.dtype) == "c"


def is_inexact(x: Any) -> bool:
    """Whether the array ``x`` has a real floating point or complex dtype."""
    return dtype_kind(x.dtype) in "fc"


def native_dtype(xp: Any, dtype: Any) -> Any:
    """``dtype`` (a NumPy dtype, a type such as ``float``, or a name) as namespace
    ``xp``'s own dtype (``array_api_strict.float64`` for ``np.float64``); None stays None."""
    if dtype is None or xp is np:
        return dtype
    try:
        name = np.dtype(dtype).name
    except TypeError:
        return dtype  # already one of the namespace's own
    return getattr(xp, name, dtype)


def item(x: Any) -> Any:
    """The one element of array ``x`` as a Python scalar, on any library (``.item()``
    where it has one; the array API has none, its 0-d arrays convert by ``float()``...)."""
    if hasattr(x, "item"):
        return x.item()
    convert = {"b": bool, "i": int, "u": int, "f": float, "c": complex}
    return convert[dtype_kind(x.dtype)](namespace(x).reshape(x, ()))


def describe(x: Any) -> str:
    """``shape, dtype, backend`` of a non-NumPy array, read without computing it or
    moving it (a Dask array stays lazy, a CuPy array stays on its device)."""
    shape = tuple(x.shape)
    dtype = getattr(x.dtype, "name", None) or str(x.dtype).rsplit(".", 1)[-1]
    text = f"shape={shape}, dtype={dtype}, backend={backend_name(x)}"
    device = getattr(x, "device", None)
    if device is not None and backend_name(x) == "cupy":
        text += f", device={device}"
    return text


def ones_like(x: Any) -> Any:
    """Ones of the shape and dtype of ``x``, an array of another library, in its library."""
    return namespace(x).ones(x.shape, dtype=x.dtype)


def check_same_backend(x: Any, like: Any, what: str, argument: str) -> None:
    """Raise :class:`BackendError` unless the array ``x`` (named ``what`` in the message)
    is of the library of ``like``; ``argument`` is what the user passes instead."""
    given, wanted = backend_name(x), backend_name(like)
    if given != wanted:
        raise BackendError(
            f"{what} is a {given} array, but a {wanted} one is needed; pass a {argument} "
            f"of the {wanted} backend (yaad moves nothing between backends implicitly)")


# ---- running an op on another library's arrays -------------------------------------------


class BackendError(TypeError):
    """An op met arrays of two libraries, or has no implementation for its arrays' one
    (yaad never moves an array to NumPy behind the user's back)."""


# op name -> its body written with the array API: ``fn(xp, *args, **kw)``, where ``xp`` is
# the namespace of the arrays (registered by the ops modules with :func:`implements`).
_implementations: dict[str, Callable[..., Any]] = {}

# NumPy's names of elementwise functions whose array API name differs.
_ARRAY_API_NAMES = {
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "power": "pow",
    "absolute": "abs", "conjugate": "conj", "true_divide": "divide", "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
}


_moves: set[str] = set()  # ops whose result is meant to be of another library


def implements(name: str, moves: bool = False) -> Callable[[Callable[..., Any]],
                                                          Callable[..., Any]]:
    """Register ``fn(xp, *args, **kw)``, the body of op ``name`` written with the array
    API namespace ``xp`` of its arrays, used when they are not NumPy's (a decorator). It
    raises ``NotImplementedError(why)`` for a case the namespace cannot do.
    ``moves``: the op moves its input to another library (its result is not checked)."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        _implementations[name] = fn
        if moves:
            _moves.add(name)
        return fn

    return register


def _elementwise_function(spec: Any, xp: Any, library: str) -> Callable[..., Any] | None:
    """The namespace's function of an elementwise op whose forward is a NumPy or SciPy
    ufunc (``np.sin`` -> ``xp.sin``, ``np.arcsin`` -> ``xp.asin``; on CuPy, a
    ``scipy.special`` function from ``cupyx.scipy.special``)."""
    forward = spec.forward
    if not isinstance(forward, np.ufunc):
        return None
    name = forward.__name__
    if getattr(np, name, None) is forward:
        fn = getattr(xp, _ARRAY_API_NAMES.get(name, name), None)
        if fn is not None:
            return fn  # type: ignore[no-any-return]
    if library == "cupy":
        import cupyx.scipy.special

        return getattr(cupyx.scipy.special, name, None)
    return None


def _library_of(spec: Any, arrays: Any) -> tuple[str, Any]:
    """The one library of the arrays among ``arrays`` that are not NumPy's, and one of
    them; raises if a NumPy array or another library's array is mixed in."""
    library = None
    first = None
    numpy_array = None
    for a in _arrays_in(arrays):
        if isinstance(a, np.ndarray):
            numpy_array = a
        elif is_foreign(a):
            lib = _library(type(a))
            if library is None:
                library, first = lib, a
            elif lib != library:
                raise _mixed(spec, first, a)
    if numpy_array is not None:
        raise _mixed(spec, numpy_array, first)
    return library or "numpy", first


def _arrays_in(values: Any) -> Any:
    for v in values:
        if type(v) in (tuple, list):
            yield from _arrays_in(v)
        else:
            yield v


def _mixed(spec: Any, a: Any, b: Any) -> BackendError:
    la, lb = backend_name(a), backend_name(b)
    return BackendError(
        f"yaad.{spec.name}: mixes arrays of two backends, {la} (shape {tuple(a.shape)}) and "
        f"{lb} (shape {tuple(b.shape)}); yaad moves nothing between them implicitly. Move "
        f"one explicitly first: t.to({lb!r}) or t.to({la!r}).")


def no_implementation(name: str, library: str, cause: str = "") -> BackendError:
    """The error for op ``name`` on arrays of ``library``, which it cannot run on."""
    why = f" ({cause})" if cause else ""
    return BackendError(
        f"no implementation of yaad.{name} for backend {library}{why}; yaad does not move "
        f"arrays to NumPy implicitly. Convert with t.to('numpy') (and back with "
        f"t.to({library!r}) where that backend has a constructor), or use ops that "
        f"{library} supports (see docs/backends.md).")


def call(spec: Any, arrays: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """The forward of op ``spec`` on ``arrays`` of which some belong to another library
    than NumPy: its array API body (see :func:`implements`) in their namespace, or its
    NumPy forward where that dispatches to the library (``np.exp`` on a Dask or CuPy
    array). A result that is not of the library (a silent conversion) raises
    :class:`BackendError`, as does a mix of libraries."""
    k = _INDEX_ARGUMENT.get(spec.name)  # (NumPy integers in an index are not data)
    library, first = _library_of(spec, arrays if k is None else arrays[:k] + arrays[k + 1:])
    xp = namespace(first)
    body = _implementations.get(spec.name)
    fn: Callable[..., Any] | None = None
    if body is None:
        fn = _elementwise_function(spec, xp, library)
    if body is not None:
        try:
            with computing_refused(library):
                ans = body(xp, *arrays, **kw)
        except ComputeRefused:
            raise no_implementation(spec.name, library, "it reads the values of the "
                                    "array") from None
        except (NotImplementedError, AttributeError) as e:  # (a case or function the
            raise no_implementation(spec.name, library, str(e)) from e  # library lacks)
    elif fn is not None:
        ans = fn(*arrays, **kw)
    else:
        try:
            with computing_refused(library):
                ans = spec.forward(*arrays, **kw)
        except ComputeRefused:
            raise no_implementation(spec.name, library, "its NumPy forward would compute "
                                    "the array") from None
        except (TypeError, ValueError, AttributeError) as e:
            # (CuPy refuses implicit conversion, NumPy finds no method, array_api_strict
            # refuses to convert or lacks a NumPy method)
            raise no_implementation(spec.name, library, f"{type(e).__name__}: {e}") from e
    if spec.name not in _moves and not _of_library(ans, library):
        raise no_implementation(spec.name, library)
    return ans


class ComputeRefused(Exception):
    """Code run under :func:`computing_refused` tried to compute a Dask array."""


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise ComputeRefused


def computing_refused(library: str) -> Any:
    """For ``library`` ``"dask"``, a context in which computing a Dask collection raises
    :class:`ComputeRefused` (a NumPy function that Dask does not implement would convert
    its input to NumPy, computing it); for other libraries, a context that does nothing."""
    if library != "dask":
        return contextlib.nullcontext()
    dask: Any = importlib.import_module("dask")
    stack = contextlib.ExitStack()
    stack.enter_context(dask.config.set(scheduler=_refuse))
    stack.enter_context(warnings.catch_warnings())
    # (Dask's warning that it falls back to NumPy: the fall-back is refused, and said so)
    warnings.filterwarnings("ignore", "The `numpy.* is not implemented by Dask", FutureWarning)
    return stack


# Ops with an index among their arguments (its position), which may hold NumPy arrays.
_INDEX_ARGUMENT = {"getitem": 1, "scatter_add": 1}


def _of_library(ans: Any, library: str) -> bool:
    if type(ans) in (tuple, list):
        return all(_of_library(a, library) for a in ans)
    if isinstance(ans, _NUMPY_TYPES):
        return False
    return not is_foreign(ans) or _library(type(ans)) == library


def any_foreign(values: tuple[Any, ...] | list[Any]) -> bool:
    """Whether any of ``values`` (or of a tuple or list among them) is another library's
    array."""
    for v in values:
        if type(v) in PLAIN_TYPES:
            continue
        if type(v) in (tuple, list):
            if any_foreign(v):
                return True
        elif is_foreign(v):
            return True
    return False


# Types that are never another library's array (checked first, cheaply).
PLAIN_TYPES = frozenset([np.ndarray, int, float, complex, bool, str, type(None), slice,
                    type(Ellipsis), *set(np.sctypeDict.values())])


# ---- explicit moves between libraries ----------------------------------------------------

_TARGETS = {"numpy": "numpy", "cpu": "numpy", "np": "numpy", "cupy": "cupy", "cuda": "cupy",
            "gpu": "cupy", "dask": "dask"}


def target_name(backend: Any) -> str:
    """The library a move or a creation goes to: ``"numpy"`` (also ``"cpu"``), ``"cupy"``
    (also ``"cuda"``, ``"cuda:1"``, ``"gpu"``), ``"dask"``, or a module (``numpy``,
    ``cupy``, ``array_api_strict``, an ``array_api_compat`` namespace) or its name."""
    if isinstance(backend, str):
        name = backend.split(":")[0].lower()
        return _TARGETS.get(name, name)
    module = getattr(backend, "__name__", None)
    if module is None:
        device_module = type(backend).__module__.split(".")[0]  # a cupy.cuda.Device
        if device_module == "cupy":
            return "cupy"
        raise TypeError(f"not a backend: {backend!r}; use 'numpy', 'cupy', 'dask' or a "
                        f"module such as array_api_strict")
    parts = module.split(".")
    if parts[0] == "array_api_compat" and len(parts) > 1:
        parts = parts[1:]
    return str(_TARGETS.get(parts[0], parts[0]))


def _import(library: str) -> Any:
    import importlib

    try:
        return importlib.import_module("dask.array" if library == "dask" else library)
    except ImportError:
        hint = (" (pip install cupy-cuda12x array-api-compat, with a CUDA GPU)"
                if library == "cupy" else "")
        raise BackendError(f"backend {library!r} is not installed{hint}") from None


def namespace_for(backend: Any) -> Any:
    """The array API namespace of a backend named as in :func:`target_name`."""
    library = target_name(backend)
    if library == "numpy":
        return np
    module = _import(library)
    try:
        import array_api_compat
    except ImportError:
        return module
    if library in ("cupy", "dask", "torch"):
        return array_api_compat.array_namespace(module.asarray([0]) if library != "dask"
                                                else module.zeros(1))
    return module


def move(x: Any, backend: Any) -> Any:
    """The array ``x`` as an array of ``backend`` (see :func:`target_name`): through host
    memory as a NumPy array (a CuPy array is copied from its device, a Dask array is
    computed). Only an explicit call moves data between libraries."""
    target = target_name(backend)
    source = backend_name(x)
    if target == source:
        return x
    if source == "cupy":
        host = x.get()
    elif source == "dask":
        host = np.asarray(x.compute())
    else:  # a copy: a view of the other library's memory would bypass its version counts
        host = np.array(x, copy=True)
    if target == "numpy":
        return host
    module = _import(target)
    if target == "cupy" and not isinstance(backend, str) and type(backend).__name__ == "Device":
        with backend:
            return module.asarray(host)
    if target == "cupy" and isinstance(backend, str) and ":" in backend:
        with module.cuda.Device(int(backend.split(":")[1])):
            return module.asarray(host)
    if target == "dask":
        return module.from_array(host)
    return module.asarray(host)
