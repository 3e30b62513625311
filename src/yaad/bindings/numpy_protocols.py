"""NumPy calls on tensors (``np.sin(t)``, ``np.einsum(..., t)``) go to the yaad op.

- A ufunc call goes to the yaad function of the same name; ``dtype=`` casts the inputs
  first; other ufunc keywords (``where=``, ``casting=``...) raise ``TypeError``.
- Ufunc methods that are reductions or scans map to yaad functions
  (``np.add.reduce`` -> ``sum``, ``np.multiply.accumulate`` -> ``cumprod``, ... with the
  ufunc's default ``axis=0``); ``outer`` broadcasts the ufunc over all pairs.
- A NumPy function goes to the yaad function of the same name (in ``yaad``,
  ``yaad.linalg``, ``yaad.fft``); one whose result carries no gradient (shapes, tests,
  indices) runs on the data; any other raises ``TypeError`` naming it, never silently
  drops the gradient.
- ``out=`` raises ``TypeError``: results are new tensors (use an in-place operator).
"""

from __future__ import annotations

from typing import Any

from .. import creation, fft, linalg, serialization
from ..core.presentation import ndim_of
from ..core.tensor import Tensor
from ..ops import (
    composed,
    convolution,
    elementwise,
    nn,
    products,
    reductions,
    sets,
    shape,
    special_pairs,
)
from ..ops.shape import astype, reshape

# Ufunc methods that are reductions or scans with a yaad name.
_UFUNC_METHODS = {
    ("add", "reduce"): "sum",
    ("multiply", "reduce"): "prod",
    ("maximum", "reduce"): "max",
    ("minimum", "reduce"): "min",
    ("logical_and", "reduce"): "all",
    ("logical_or", "reduce"): "any",
    ("add", "accumulate"): "cumsum",
    ("multiply", "accumulate"): "cumprod",
    ("logaddexp", "reduce"): "logsumexp",
}

# Ufuncs whose yaad function has another name.
_UFUNC_ALIASES = {"fabs": "absolute", "conjugate": "conj", "true_divide": "divide"}

# NumPy functions whose results carry no gradient: they run on the data.
NONDIFF = {
    "shape", "ndim", "size", "iscomplexobj", "isrealobj", "isscalar", "result_type",
    "can_cast", "min_scalar_type", "may_share_memory", "shares_memory", "array_equal",
    "array_equiv", "allclose", "count_nonzero", "argmax", "argmin", "argsort", "argwhere",
    "nonzero", "flatnonzero", "searchsorted", "digitize", "histogram", "histogram_bin_edges",
    "bincount", "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
    "lexsort", "argpartition", "nanargmax", "nanargmin", "all", "any", "isin", "in1d",
    "array_repr", "array_str", "array2string", "ndenumerate", "ndindex", "save", "savez",
    "savez_compressed", "savetxt", "zeros_like", "ones_like", "empty_like", "full_like",
    "isclose", "isfinite", "isnan", "isinf", "isneginf", "isposinf", "iscomplex", "isreal",
    "signbit", "busday_count", "is_busday", "packbits", "unpackbits",
    "ravel_multi_index", "unravel_index", "tril_indices_from", "triu_indices_from",
    "diag_indices_from", "mask_indices", "common_type", "asarray", "asanyarray", "array",
    "ascontiguousarray", "asfortranarray", "sometrue", "alltrue",
}


# NumPy's writers, which share names with yaad's own (yaad.save writes yaad's format).
_FILES = {"save", "savez", "savez_compressed", "savetxt"}


# Those of NONDIFF that read only shapes and dtypes (not values: a compiled function's
# recording need not see them).
_META = {"shape", "ndim", "size", "iscomplexobj", "isrealobj", "isscalar", "result_type",
         "can_cast", "min_scalar_type", "may_share_memory", "shares_memory", "common_type",
         "zeros_like", "ones_like", "empty_like", "tril_indices_from", "triu_indices_from",
         "diag_indices_from"}


def _data(x: Any, meta: bool = False) -> Any:
    if isinstance(x, Tensor):
        if meta:  # (inside vmap, one example's shape: a stand-in without values)
            stand_in = getattr(x, "_stand_in", None)
            return stand_in() if stand_in is not None else x._data
        return x.data
    if isinstance(x, (list, tuple)):
        return type(x)(_data(v, meta) for v in x)
    if isinstance(x, dict):
        return {k: _data(v, meta) for k, v in x.items()}
    return x


_functions: dict = {}  # NumPy name -> yaad function, as the package exports them


def _numpy_names() -> dict:
    """The yaad functions by name, as ``yaad`` exports them (see ``yaad/__init__.py``)."""
    if not _functions:
        for module in (creation, elementwise, shape, reductions, products, nn, composed, sets):
            _functions.update((name, getattr(module, name)) for name in module.__all__)
        _functions.update(
            abs=elementwise.abs, pow=elementwise.pow, round=elementwise.round,
            sum=reductions.sum, convolve=convolution.convolve,
            correlate=convolution.correlate, fresnel=special_pairs.fresnel,
            sici=special_pairs.sici, vecdot=linalg.vecdot, load=serialization.load,
            save=serialization.save)
    return _functions


def _yaad_function(name: str, module: str) -> Any:
    if module.startswith("numpy.linalg"):
        fn = getattr(linalg, name, None)
    elif module.startswith("numpy.fft"):
        fn = getattr(fft, name, None)
    else:
        fn = _numpy_names().get(name)
    return fn if callable(fn) else None


def _no_yaad_op(what: str) -> TypeError:
    return TypeError(
        f"{what} has no yaad op, so it cannot be applied to a tensor without losing the "
        f"gradient. Use t.detach().numpy() if no gradient is needed, or declare the op "
        f"with yaad.op. (see docs/errors.md#no-yaad-op)")


def _check_out(what: str, kwargs: dict) -> None:
    out = kwargs.pop("out", None)
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise TypeError(f"{what}: out= is not supported on tensors (results are new tensors); "
                        f"use the result, or an in-place operator such as += "
                        f"(see docs/errors.md#out-argument)")


# ufunc -> its yaad function, for calls without keywords (filled by array_ufunc)
_ufunc_calls: dict[Any, Any] = {}


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Handle ``Tensor.__array_ufunc__`` (see the module docstring).

    Parameters
    ----------
    ufunc : numpy.ufunc
    method : str
        '__call__', 'reduce', 'accumulate', 'outer', ...
    inputs : tuple
    kwargs : dict

    Returns
    -------
    Tensor
    """
    if method == "__call__" and not kwargs:  # (``array + tensor``: the usual call)
        fn = _ufunc_calls.get(ufunc)
        if fn is not None:
            return fn(*inputs)
    name = _UFUNC_ALIASES.get(ufunc.__name__, ufunc.__name__)
    what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    _check_out(what, kwargs)
    if method == "__call__" or method == "outer":
        fn = _yaad_function(name, "numpy")
        if fn is None:
            raise _no_yaad_op(what)
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"{what}: keyword arguments {sorted(kwargs)} are not supported "
                            f"on tensors")
        if dtype is not None:
            inputs = _cast_tensors(inputs, dtype)
        if method == "outer":
            inputs = _outer_operands(inputs)
        elif dtype is None:
            _ufunc_calls[ufunc] = fn  # (the same call next time, without the look-ups)
        return fn(*inputs)
    target = _UFUNC_METHODS.get((ufunc.__name__, method))
    fn = _yaad_function(target, "numpy") if target else None
    if fn is None:
        raise _no_yaad_op(what)
    kwargs.setdefault("axis", 0)  # the default of ufunc.reduce and ufunc.accumulate
    return fn(*inputs, **kwargs)


def _cast_tensors(inputs: tuple, dtype: Any) -> tuple:
    """The tensors among ``inputs`` cast to ``dtype`` (apart from array_ufunc: a generator
    there would make ``dtype`` a cell on every call)."""
    return tuple([astype(x, dtype) if isinstance(x, Tensor) else x for x in inputs])


def _outer_operands(inputs: tuple) -> tuple:
    """Reshape the operands of ``ufunc.outer`` so that broadcasting pairs all entries."""
    out, trailing = [], sum(_ndim(x) for x in inputs)
    for x in inputs:
        trailing -= _ndim(x)
        if isinstance(x, Tensor) or hasattr(x, "shape"):
            x = reshape(x, tuple(x.shape) + (1,) * trailing)
        out.append(x)
    return tuple(out)


def _ndim(x: Any) -> int:
    return ndim_of(x)


def array_function(func: Any, args: tuple, kwargs: dict) -> Any:
    """Handle ``Tensor.__array_function__`` (see the module docstring).

    Parameters
    ----------
    func : callable
        The NumPy function called.
    args : tuple
    kwargs : dict

    Returns
    -------
    Any
        The yaad function's result, or NumPy's result on the data for functions whose
        results carry no gradient.
    """
    name = func.__name__
    module = getattr(func, "__module__", "numpy") or "numpy"
    _check_out(f"{module}.{name}", kwargs)
    if name == "where" and len(args) == 1 and not kwargs:
        name = "nonzero"  # np.where(condition) is np.nonzero(condition)
    if name in _FILES:  # numpy.save(path, t): the data, not yaad.save's format
        return func(*_data(args), **_data(kwargs))
    fn = _yaad_function(name, module)
    if fn is not None:
        return fn(*args, **kwargs)
    if name in NONDIFF:
        meta = name in _META
        return func(*_data(args, meta), **_data(kwargs, meta))
    raise _no_yaad_op(f"{module}.{name}")
