"""The public names of an ops module, for its ``__all__``."""

import functools
import inspect
from typing import Any, Callable

from ..core.errors import TORCH_KEYWORDS, keyword_hint


def exported(namespace: dict) -> list[str]:
    """Public names of an ops module: its ops and the functions it defines (for ``__all__``).

    End each ops module with ``__all__ = exported(globals())``. The plain functions among
    them that take ``axis=`` are given PyTorch's keywords' message
    (:func:`with_keyword_hints`).
    """
    module = namespace["__name__"]
    names = []
    for name, value in namespace.items():
        if name.startswith("_") or not callable(value) or isinstance(value, type):
            continue
        if hasattr(value, "op") or getattr(value, "__module__", None) == module:
            names.append(name)
    with_keyword_hints(namespace, names)
    return names


def with_keyword_hints(namespace: dict, names: list[str]) -> None:
    """Replace each plain function of ``names`` that takes ``axis=`` by one that answers
    PyTorch's ``dim=``/``keepdim=`` with NumPy's name (an op's call does it already, in
    ``core.errors.with_op_name``); anything else passes through untouched."""
    for name in names:
        fn = namespace[name]
        if hasattr(fn, "op") or getattr(fn, "_keyword_hints", False):
            continue
        try:
            parameters = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if "axis" in parameters and not any(
                p.kind == p.VAR_KEYWORD for p in parameters.values()):
            namespace[name] = _hinted(fn)


def _hinted(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if not kwargs.keys() & TORCH_KEYWORDS.keys():
                raise
            message = keyword_hint(str(e), fn.__name__)
            if message == str(e):
                raise
            raise TypeError(f"{fn.__name__}: {message}") from None

    call._keyword_hints = True  # type: ignore[attr-defined]
    return call
