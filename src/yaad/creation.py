"""Making tensors: from data, and NumPy's constructors with ``requires_grad``."""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .core.backend import (
    backend_name,
    implements,
    is_foreign,
    move,
    namespace,
    namespace_for,
    native_dtype,
    target_name,
)
from .core.op import op, registry
from .core.tensor import Tensor
from .modes.batched_values import batch_axes, draw
from .ops.elementwise import floor
from .ops.shape import astype, broadcast_to, concatenate, expand_dims, getitem, moveaxis

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "identity", "arange", "linspace", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand", "randn", "to"]


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """Make a tensor from data (always a copy, like ``torch.tensor`` and ``numpy.array``).

    Parameters
    ----------
    data : array_like
        Numbers, nested lists, an array, or a tensor (its data is copied, detached).
        Another library's array (CuPy, Dask, any array API array) is copied by that
        library and stays of its type (see docs/backends.md).
    requires_grad : bool, optional
        Record operations on it, so that gradients with respect to it can be computed.
        Only floating point and complex dtypes can require grad.
    dtype : data-type, optional
        The NumPy dtype; by default NumPy's choice (float64 for Python floats).

    Returns
    -------
    Tensor
    """
    if isinstance(data, Tensor):
        if batch_axes(data):
            return _batched_copy(data, requires_grad, dtype)
        data = data.data
    if is_foreign(data):  # copied by its own library, where it lives
        xp = namespace(data)
        return Tensor(xp.asarray(data, dtype=native_dtype(xp, dtype), copy=True),
                      requires_grad=requires_grad)
    try:
        array = np.array(data, dtype=dtype, copy=True)
    except TypeError as e:
        if "requires grad" not in str(e):
            raise
        raise TypeError(f"tensor: {e} To build a tensor from tensors and keep the gradient, "
                        f"use yaad.stack or yaad.concatenate.") from None
    return Tensor(array, requires_grad=requires_grad)


def as_tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Make a tensor sharing memory with ``data`` where possible (no copy).

    Parameters
    ----------
    data : array_like or Tensor
        A tensor is returned as is, or cast (recorded, like ``astype``) to ``dtype``.
    dtype : data-type, optional
    requires_grad : bool, optional
        For new tensors (not for a tensor passed in).

    Returns
    -------
    Tensor
    """
    if isinstance(data, Tensor):
        if dtype is None or data.dtype == dtype:
            return data
        from .ops.shape import astype

        converted: Tensor = astype(data, dtype)
        return converted
    if is_foreign(data):
        xp = namespace(data)
        data = data if dtype is None else xp.asarray(data, dtype=native_dtype(xp, dtype))
        return Tensor(data, requires_grad=requires_grad)
    return Tensor(np.asarray(data, dtype=dtype), requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """Make a tensor that shares memory with a NumPy array.

    Parameters
    ----------
    array : numpy.ndarray

    Returns
    -------
    Tensor
        A leaf that does not require grad; changes to either show in both.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return Tensor(array)


def _maker(np_fn: Callable[..., np.ndarray], name: str) -> Callable[..., Tensor]:
    def make(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        like, device = kwargs.get("like"), kwargs.get("device")
        if is_foreign(like) or device not in (None, "cpu"):
            return Tensor(_made_by(name, args, kwargs), requires_grad=requires_grad)
        return Tensor(np_fn(*args, **kwargs), requires_grad=requires_grad)

    make.__name__ = name
    make.__doc__ = (f"numpy.{name} as a tensor; ``requires_grad=True`` makes it a leaf that "
                    f"records operations. ``like=`` an array of another library (CuPy, "
                    f"Dask, an array API array) or ``device=`` (``'cuda'``, a CuPy device) "
                    f"makes it with that library (see docs/backends.md).")
    return make


def _made_by(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``numpy.<name>(*args, **kwargs)`` made by the library of ``like=`` or ``device=``
    through its array API namespace."""
    kwargs = dict(kwargs)
    like, device = kwargs.pop("like", None), kwargs.pop("device", None)
    xp = namespace(like) if is_foreign(like) else namespace_for(device)
    if "dtype" in kwargs:
        kwargs["dtype"] = native_dtype(xp, kwargs["dtype"])
    fn: Callable[..., Any] = getattr(xp, name if name != "identity" else "eye")
    if name in ("eye", "identity"):  # numpy.eye(N, M=None, k=0, dtype=...)
        n, m, k = (*args, None, 0)[:3] if name == "eye" and len(args) < 3 else \
            tuple(args) if name == "eye" else (args[0], None, 0)
        kwargs.setdefault("k", k)
        args = (n, m)
    if device is not None and not isinstance(device, str):
        with device:  # a cupy.cuda.Device
            return fn(*args, **kwargs)
    return fn(*args, **kwargs)


zeros = _maker(np.zeros, "zeros")
ones = _maker(np.ones, "ones")
full = _maker(np.full, "full")
empty = _maker(np.empty, "empty")
eye = _maker(np.eye, "eye")
identity = _maker(np.identity, "identity")
arange = _maker(np.arange, "arange")


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None, requires_grad: bool = False) -> Any:
    """Evenly spaced numbers over an interval (numpy.linspace), differentiable in the ends.

    Parameters
    ----------
    start, stop : array_like or Tensor
        The ends (broadcast together). Tensors among them are differentiated: the result
        is recorded as NumPy computes it, ``start + arange(num) * (stop - start) / div``
        with the last sample exactly ``stop`` (``div`` is ``num - 1``, or ``num`` without
        the endpoint), so values equal NumPy's bit for bit.
    num : int
        The number of samples.
    endpoint : bool
        Whether ``stop`` is the last sample.
    retstep : bool
        Also return the spacing.
    dtype : data-type, optional
        An integer dtype floors the samples (no gradient).
    axis : int
        Where the samples go in the result, for array ends.
    device : None or "cpu"
        NumPy's array-API argument.
    requires_grad : bool
        Make the result a leaf that requires grad (for constant ends only).

    Returns
    -------
    Tensor, or (Tensor, step) with ``retstep``
    """
    if not (isinstance(start, Tensor) or isinstance(stop, Tensor)):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis,  # type: ignore[call-overload]
                          device=device)  # (retstep a bool, not a Literal)
        if retstep:
            return Tensor(out[0], requires_grad=requires_grad), out[1]
        return Tensor(out, requires_grad=requires_grad)
    if requires_grad:
        raise ValueError("linspace: requires_grad=True makes a leaf, but start or stop is a "
                         "tensor: the result is already differentiated through them")
    if device not in (None, "cpu"):
        raise ValueError(f"linspace: device must be None or 'cpu', got {device!r}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    data = [e.data if isinstance(e, Tensor) else e for e in (start, stop)]
    dt = np.result_type(*data, 1.0)  # NumPy's: the ends' type, made inexact
    start, stop = (astype(e, dt) if isinstance(e, Tensor) else np.asarray(e, dt)
                   for e in (start, stop))
    delta = stop - start
    r = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        zero = np.any((step.data if isinstance(step, Tensor) else step) == 0)
        y = r / div * delta if zero else r * step
    else:
        step = np.nan
        y = r * delta
    y = y + start
    if endpoint and num > 1:
        last = expand_dims(broadcast_to(stop, y.shape[1:]), 0)
        y = concatenate([getitem(y, slice(None, -1)), last])
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        if np.issubdtype(dtype, np.integer):
            y = floor(y)
        y = astype(y, dtype)
    return (y, step) if retstep else y


def _batched_copy(x: Tensor, requires_grad: bool, dtype: Any) -> Tensor:
    """``tensor(x)`` inside vmap: a copy of every example, cut from the graph."""
    from .ops.shape import astype

    if requires_grad:
        raise ValueError("tensor(x, requires_grad=True) inside vmap: a leaf cannot have a "
                         "batch axis; differentiate with yaad.func.grad inside the "
                         "vmapped function instead")
    copied: Tensor = astype(x.detach(), x.dtype if dtype is None else dtype, copy=True)
    return copied


def _like_maker(np_fn: Callable[..., np.ndarray], name: str) -> Callable[..., Tensor]:
    def make(a: Any, *args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        if batch_axes(a):  # inside vmap: the same for every example, of one example's shape
            data = a._stand_in()
        else:
            data = a.data if isinstance(a, Tensor) else a
        if is_foreign(data):  # made by the array's own library
            xp = namespace(data)
            if "dtype" in kwargs:
                kwargs["dtype"] = native_dtype(xp, kwargs["dtype"])
            return Tensor(getattr(xp, name)(data, *args, **kwargs), requires_grad=requires_grad)
        return Tensor(np_fn(data, *args, **kwargs), requires_grad=requires_grad)

    make.__name__ = name
    make.__doc__ = f"numpy.{name} of an array or tensor, as a tensor (no gradient link)."
    return make


zeros_like = _like_maker(np.zeros_like, "zeros_like")
ones_like = _like_maker(np.ones_like, "ones_like")
full_like = _like_maker(np.full_like, "full_like")
empty_like = _like_maker(np.empty_like, "empty_like")


def _sampled(method: str, shape: tuple[int, ...], seed: Any, dtype: Any, requires_grad: bool,
             name: str) -> Tensor:
    rng = np.random.default_rng(seed)

    def sample(s: tuple[int, ...]) -> np.ndarray:
        drawn: np.ndarray = getattr(rng, method)(s).astype(dtype, copy=False)
        return drawn

    if seed is not None and not isinstance(seed, (np.random.Generator,
                                                  np.random.BitGenerator)):
        return Tensor(sample(shape), requires_grad=requires_grad)  # the same numbers each call
    data = draw(sample, shape, name)  # inside vmap: as its randomness says
    if isinstance(data, Tensor):
        return data.requires_grad_(requires_grad) if requires_grad else data
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape: int, requires_grad: bool = False, seed: Any = None,
         dtype: Any = np.float64) -> Tensor:
    """Uniform [0, 1) samples of the given shape (``numpy.random.default_rng(seed)``).

    Inside :func:`yaad.func.vmap` a draw without a fixed seed follows vmap's
    ``randomness``: refused by default, or one draw for all examples, or one per example.
    """
    return _sampled("random", shape, seed, dtype, requires_grad, "yaad.rand")


def randn(*shape: int, requires_grad: bool = False, seed: Any = None,
          dtype: Any = np.float64) -> Tensor:
    """Standard normal samples of the given shape (``numpy.random.default_rng(seed)``).

    Inside :func:`yaad.func.vmap`: as :func:`rand`.
    """
    return _sampled("standard_normal", shape, seed, dtype, requires_grad, "yaad.randn")


# ---- explicit moves between backends -------------------------------------------------------

def _moved(x: Any, target: str, source: str) -> Any:
    return move(x, target)


_to: Callable[..., Any] = op(_moved, name="to", save_args=False, save_ans=False, linear=(0,),
         vjp=(lambda g, ans, x, target, source: _to(g, source, target), None, None))
implements("to", moves=True)(lambda xp, x, target, source: move(x, target))
# The identity on values between two backends: not among the ops the registry suites run on
# NumPy arrays (tests/test_backend_array_api.py checks its derivatives, both modes).
del registry["to"]


def to(x: Any, backend: Any) -> Any:
    """The tensor (or array) on another backend: ``t.to("cupy")``, ``t.to("numpy")``.

    The move is recorded: the gradient flows back to the original backend. Nothing moves
    between backends without such an explicit call.

    Parameters
    ----------
    x : Tensor or array
    backend : str or module
        ``"numpy"`` (or ``"cpu"``), ``"cupy"`` (or ``"cuda"``, ``"cuda:1"``, ``"gpu"``),
        ``"dask"``, or an array API module such as ``array_api_strict``. A CuPy array is
        copied from its device; a Dask array is computed.

    Returns
    -------
    Tensor or array
        ``x`` itself when it is already there.
    """
    target, source = target_name(backend), backend_name(x)  # (no value read)
    if target == source:
        return x
    if target == "cupy" and type(backend).__name__ == "Device":  # a cupy.cuda.Device
        target = f"cuda:{backend.id}"
    elif isinstance(backend, str) and backend.startswith("cuda:"):
        target = backend
    return _to(x, target, source)
