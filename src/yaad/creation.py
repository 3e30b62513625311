"""Making tensors: from data, and NumPy's constructors with ``requires_grad``."""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

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
from .modes.batched_values import all_examples, batch_axes, draw, like
from .ops.elementwise import floor
from .ops.public_names import with_keyword_hints
from .ops.shape import (
    astype,
    broadcast_to,
    concatenate,
    expand_dims,
    getitem,
    moveaxis,
    reshape,
    stack,
)

__all__ = ["tensor", "array", "asarray", "as_tensor", "from_numpy", "zeros", "ones", "full",
           "empty", "eye", "identity", "arange", "linspace", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand", "randn", "to"]


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """Make a tensor from data (always a copy, like ``torch.tensor`` and ``numpy.array``).

    Parameters
    ----------
    data : array_like
        Numbers, nested lists, an array, or a tensor (its data is copied, detached).
        Nested lists and tuples holding tensors (``[[a, b], [b, -a]]``) are stacked as
        :func:`array` stacks them: differentiable in the tensors.
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
    elif isinstance(data, (list, tuple)) and _holds_tensor(data):
        return _leaf_if_asked(_stacked(data, dtype, "tensor"), requires_grad, "tensor")
    if is_foreign(data):  # copied by its own library, where it lives
        xp = namespace(data)
        return Tensor(xp.asarray(data, dtype=native_dtype(xp, dtype), copy=True),
                      requires_grad=requires_grad)
    array = np.array(data, dtype=dtype, copy=True)
    return Tensor(array, requires_grad=requires_grad)


def array(object: Any, dtype: Any = None, *, copy: bool | None = True,  # noqa: A002
          order: str = "K", subok: bool = False, ndmin: int = 0, like: Any = None,
          requires_grad: bool = False) -> Tensor:
    """An array as a tensor (numpy.array), differentiable in the tensors it is made of.

    Unlike :func:`tensor` (PyTorch's copy, cut from the graph), a tensor passed in stays
    connected: ``array(t)`` is a recorded copy, and nested lists or tuples of tensors
    (and numbers), e.g. a Hamiltonian ``array([[a, b], [b, -a]])`` from parameters
    ``a`` and ``b``, are stacked by recorded ops, so reverse mode, forward mode, vmap and
    compile follow them (as ``jax.numpy.array`` does).

    Parameters
    ----------
    object : array_like, Tensor, or nested sequence holding tensors
    dtype : data-type, optional
        By default NumPy's choice for the same nesting of arrays (tensors count as
        arrays of their dtype).
    copy : bool or None
        True: always a new tensor. None: a tensor passed in of the right dtype is returned
        as is. False: never copy (ValueError where a copy is needed).
    order : {"K", "A", "C", "F"}
        The memory layout, for data that is not a tensor.
    subok : bool
        Accepted for NumPy's signature (a tensor is the result either way).
    ndmin : int
        The least number of dimensions (ones are prepended).
    like : array, optional
        An array of another library (CuPy, Dask, an array API array): the result is
        made by that library (see docs/backends.md).
    requires_grad : bool
        Make the result a leaf that requires grad. A result recorded from tensors that
        require grad is refused (it is already differentiated through them).

    Returns
    -------
    Tensor
    """
    if isinstance(object, Tensor):
        out = _from_tensor(object, dtype, copy, "array")
    elif isinstance(object, (list, tuple)) and _holds_tensor(object):
        if copy is False:
            raise ValueError("array: copy=False, but a nested sequence of tensors is "
                             "always copied into a new tensor; use copy=None or True")
        out = _stacked(object, dtype, "array")
    elif is_foreign(like) or is_foreign(object):
        xp = namespace(like if is_foreign(like) else object)
        out = Tensor(xp.asarray(object, dtype=native_dtype(xp, dtype), copy=copy))
    else:
        out = Tensor(np.array(object, dtype=dtype, copy=copy, order=order,  # type: ignore[call-overload]
                              subok=subok))  # (order: a str, not a Literal)
    if out.ndim < ndmin:
        out = reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return _leaf_if_asked(out, requires_grad, "array")


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, device: Any = None,
            copy: bool | None = None, like: Any = None, requires_grad: bool = False) -> Tensor:
    """An array as a tensor without copying where possible (numpy.asarray; also the array
    API's ``asarray(obj, /, *, dtype=None, device=None, copy=None)``).

    A tensor of the right dtype is returned as is; a cast is recorded (``astype``); nested
    sequences holding tensors are stacked as :func:`array` stacks them (differentiable).

    Parameters
    ----------
    a : array_like, Tensor, or nested sequence holding tensors
    dtype : data-type, optional
    order : {"K", "A", "C", "F"}, optional
        For data that is not a tensor.
    device : None, "cpu", or another backend's device, optional
        Another backend (``"cuda"``, a CuPy device) moves the result there, recorded as
        :func:`yaad.to` records it.
    copy : bool or None
        None: copy only where needed. True: always. False: never (ValueError where
        needed).
    like : array, optional
        As in :func:`array`.
    requires_grad : bool
        As in :func:`array`.

    Returns
    -------
    Tensor
    """
    out = array(a, dtype, copy=copy, order="K" if order is None else order, like=like,
                requires_grad=requires_grad)
    if device is not None and device != "cpu" and target_name(device) != backend_name(out):
        if copy is False:
            raise ValueError(f"asarray: copy=False, but device={device!r} needs a copy")
        out = to(out, device)
    return out


def _from_tensor(t: Tensor, dtype: Any, copy: bool | None, name: str) -> Tensor:
    """``t`` as ``array``/``asarray`` give it back: itself, or a recorded cast or copy."""
    same = dtype is None or t.dtype == dtype
    if same and not copy:
        return t
    if copy is False:
        raise ValueError(f"{name}: copy=False, but casting {t.dtype} to {dtype} needs a "
                         f"copy; use copy=None")
    converted: Tensor = astype(t, t.dtype if dtype is None else dtype, copy=True)
    return converted


def _leaf_if_asked(out: Tensor, requires_grad: bool, name: str) -> Tensor:
    if not requires_grad or out.requires_grad and out.is_leaf:
        return out
    if out.requires_grad or getattr(out, "_tangents", None):
        raise ValueError(f"{name}: requires_grad=True makes a leaf, but the result is "
                         f"recorded from tensors that require grad (it is differentiated "
                         f"through them already); drop requires_grad, or pass detached "
                         f"tensors (t.detach())")
    return out.requires_grad_(True)


def _holds_tensor(data: Any) -> bool:
    if isinstance(data, Tensor):
        return True
    return isinstance(data, (list, tuple)) and any(_holds_tensor(e) for e in data)


def _skeleton(data: Any) -> Any:
    """``data`` with each tensor replaced by a stand-in of its shape and dtype (no value is
    read: NumPy then finds the result's shape and dtype, and refuses ragged nesting)."""
    if isinstance(data, Tensor):
        return np.broadcast_to(np.zeros((), np.dtype(data.dtype)), data.shape)
    if isinstance(data, (list, tuple)):
        return [_skeleton(e) for e in data]
    return data


def _stacked(data: Sequence[Any], dtype: Any, name: str) -> Tensor:
    """A nested sequence holding tensors, as one tensor built by recorded stacks."""
    try:
        like = np.array(_skeleton(data), dtype=dtype)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name}: cannot build an array from this nested sequence of "
                         f"tensors and numbers: {e}") from None
    if like.dtype.hasobject:
        raise TypeError(f"{name}: the nested sequence holds objects that are neither "
                        f"numbers nor tensors")
    stacked: Tensor = _stack_nested(data, like.dtype)
    return stacked


def _stack_nested(data: Any, dtype: np.dtype) -> Any:
    if isinstance(data, Tensor):
        return data if data.dtype == dtype else astype(data, dtype)
    if isinstance(data, (list, tuple)) and _holds_tensor(data):
        return stack([_stack_nested(e, dtype) for e in data])
    return np.asarray(data, dtype=dtype)


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
    start : array_like or Tensor
        The ends (broadcast together). Tensors among them are differentiated: the result
        is recorded as NumPy computes it, ``start + arange(num) * (stop - start) / div``
        with the last sample exactly ``stop`` (``div`` is ``num - 1``, or ``num`` without
        the endpoint), so values equal NumPy's bit for bit.
    stop : array_like or Tensor
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
        if name == "full_like" and (args or "fill_value" in kwargs):
            fill = args[0] if args else kwargs["fill_value"]
            if isinstance(fill, Tensor):  # NumPy takes an array: its values, broadcast
                return _full_like_tensor(a, fill, requires_grad, **{
                    k: v for k, v in kwargs.items() if k != "fill_value"})
        batched = bool(batch_axes(a))
        if batched and ("shape" in kwargs or requires_grad):
            # a new shape, or a leaf (which has no batch axis): one example's, shared
            batched = False
            data = a._stand_in()
        elif batched:
            data = all_examples(a)
        else:
            data = a.data if isinstance(a, Tensor) else a
        if is_foreign(data):  # made by the array's own library
            xp = namespace(data)
            if "dtype" in kwargs:
                kwargs["dtype"] = native_dtype(xp, kwargs["dtype"])
            return Tensor(getattr(xp, name)(data, *args, **kwargs), requires_grad=requires_grad)
        out = Tensor(np_fn(data, *args, **kwargs), requires_grad=requires_grad)
        if batched:
            # inside vmap: batched as ``a`` is, as in torch.func (an in-place write of one
            # example's values into it then works)
            batched_out: Tensor = like(out, a)
            return batched_out
        return out

    make.__name__ = name
    make.__doc__ = f"numpy.{name} of an array or tensor, as a tensor (no gradient link)."
    return make


def _full_like_tensor(a: Any, fill: Tensor, requires_grad: bool, dtype: Any = None,
                      order: Any = "K", subok: Any = True, shape: Any = None) -> Tensor:
    """``full_like(a, fill)`` for a tensor ``fill``: ``fill`` broadcast to the shape and cast
    to the dtype (NumPy's unsafe cast), differentiable in ``fill``."""
    like_ = zeros_like(a, dtype=dtype, shape=shape)
    out: Tensor = astype(broadcast_to(fill, like_.shape) + like_, like_.dtype, copy=True)
    return out.requires_grad_(True) if requires_grad and not out.requires_grad else out


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
# NumPy arrays (tests/array_api/test_backend_array_api.py checks its derivatives, both modes).
del registry["to"]


def _is_dtype(x: Any) -> bool:
    """Whether ``x`` names a dtype (np.float32, float, "float32", torch.float32), not a
    backend."""
    if isinstance(x, str):
        if x.split(":")[0].lower() in ("numpy", "cpu", "cupy", "cuda", "gpu", "dask"):
            return False
        try:
            np.dtype(x)
        except TypeError:
            return False
        return True
    return isinstance(x, (type, np.dtype)) or type(x).__name__ == "dtype"


def _numpy_dtype(dtype: Any) -> Any:
    if type(dtype).__name__ == "dtype" and type(dtype).__module__ == "torch":
        return np.dtype(str(dtype).removeprefix("torch."))  # (torch.float32 -> float32)
    return dtype


def to(x: Any, backend: Any = None, dtype: Any = None, *, device: Any = None) -> Any:
    """The tensor (or array) on another backend: ``t.to("cupy")``, ``t.to("numpy")``; or
    cast, as PyTorch's ``t.to(dtype)`` does.

    The move is recorded: the gradient flows back to the original backend. Nothing moves
    between backends without such an explicit call.

    Parameters
    ----------
    x : Tensor or array
    backend : str or module, or a dtype
        ``"numpy"`` (or ``"cpu"``), ``"cupy"`` (or ``"cuda"``, ``"cuda:1"``, ``"gpu"``),
        ``"dask"``, or an array API module such as ``array_api_strict``. A CuPy array is
        copied from its device; a Dask array is computed. A dtype here (``np.float32``,
        ``"float32"``, ``torch.float32``) casts, as ``dtype=`` does.
    dtype : dtype, optional
        Cast to it (``x.astype(dtype)``, recorded), after the move.
    device : str or module, optional
        PyTorch's name for ``backend``: ``t.to(device="cuda")``.

    Returns
    -------
    Tensor or array
        ``x`` itself when it is already there (and of that dtype).
    """
    if device is not None:
        if backend is not None:
            raise TypeError(f"to: give the backend once, as backend= or device= (got "
                            f"{backend!r} and device={device!r})")
        backend = device
    if backend is not None and _is_dtype(backend):
        if dtype is not None:
            raise TypeError(f"to: two dtypes given ({backend!r} and dtype={dtype!r})")
        backend, dtype = None, backend
    if backend is not None:
        x = _move(x, backend)
    if dtype is not None:
        dtype = np.dtype(_numpy_dtype(dtype))
        if x.dtype != dtype:
            x = astype(x, dtype)
    return x


def _move(x: Any, backend: Any) -> Any:
    target, source = target_name(backend), backend_name(x)  # (no value read)
    if target == source:
        return x
    if target == "cupy" and type(backend).__name__ == "Device":  # a cupy.cuda.Device
        target = f"cuda:{backend.id}"
    elif isinstance(backend, str) and backend.startswith("cuda:"):
        target = backend
    return _to(x, target, source)


with_keyword_hints(globals(), __all__)  # (dim= answered with axis=, as the ops do)
