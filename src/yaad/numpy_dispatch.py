"""NumPy calls on tensors (``np.sin(t)``, ``np.einsum(..., t)``) go to the yaad op.

A NumPy function that yaad has no op for raises ``TypeError`` naming it, unless it is a
function whose result carries no gradient (shapes, tests, indices), which runs on the data.
"""

from __future__ import annotations

from typing import Any

from .tensor import Tensor

# Ufunc methods that are reductions or scans with a yaad name.
_UFUNC_METHODS = {
    ("add", "reduce"): "sum",
    ("multiply", "reduce"): "prod",
    ("maximum", "reduce"): "amax",
    ("minimum", "reduce"): "amin",
    ("add", "accumulate"): "cumsum",
    ("multiply", "accumulate"): "cumprod",
    ("logaddexp", "reduce"): "logsumexp",
}

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
    "ascontiguousarray", "asfortranarray",
}


def _data(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, (list, tuple)):
        return type(x)(_data(v) for v in x)
    if isinstance(x, dict):
        return {k: _data(v) for k, v in x.items()}
    return x


def _yaad_function(name: str, module: str) -> Any:
    import yaad

    ns = yaad
    if module.startswith("numpy.linalg"):
        ns = getattr(yaad, "linalg", None)
    elif module.startswith("numpy.fft"):
        ns = getattr(yaad, "fft", None)
    if ns is None:
        return None
    fn = getattr(ns, name, None)
    return fn if callable(fn) else None


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Handle ``Tensor.__array_ufunc__``."""
    if kwargs.get("out") is not None:
        raise TypeError(f"numpy.{ufunc.__name__}: out= is not supported on tensors; use the "
                        f"result, or an in-place operator such as +=")
    kwargs.pop("out", None)
    name = ufunc.__name__
    if method == "__call__":
        fn = _yaad_function(name, "numpy")
    else:
        target = _UFUNC_METHODS.get((name, method))
        fn = _yaad_function(target, "numpy") if target else None
    if fn is None:
        raise TypeError(
            f"numpy.{name}" + ("" if method == "__call__" else f".{method}") +
            " has no yaad op, so it cannot be applied to a tensor without losing the "
            "gradient. Use t.detach().numpy() if no gradient is needed.")
    return fn(*inputs, **kwargs)


def array_function(func: Any, args: tuple, kwargs: dict) -> Any:
    """Handle ``Tensor.__array_function__``."""
    name = func.__name__
    module = getattr(func, "__module__", "numpy") or "numpy"
    fn = _yaad_function(name, module)
    if fn is not None:
        return fn(*args, **kwargs)
    if name in NONDIFF:
        return func(*_data(args), **_data(kwargs))
    raise TypeError(
        f"{module}.{name} has no yaad op, so it cannot be applied to a tensor without "
        f"losing the gradient. Use t.detach().numpy() if no gradient is needed, or "
        f"declare the op with yaad.op (see docs/custom-ops.md).")
