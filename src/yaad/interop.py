"""autoray, quimb and cotengra on yaad tensors, out of the box.

autoray (and so quimb and cotengra, which dispatch through it) finds a library by the
module its array class comes from, ``yaad``, and calls yaad's function of the asked name:
``do("tensordot", x, y)`` is ``yaad.tensordot(x, y)``. Where autoray means something
else than the NumPy function of that name, or a name yaad does not have, this module
tells autoray what to call:

- ``linalg.svd``: the reduced SVD (``full_matrices=False``), as autoray asks of every
  library (yaad's ``linalg.svd`` is NumPy's, full by default);
- ``to_numpy``: the values, detached from the graph (autoray asks for values; a plain
  ``np.asarray`` of a tensor that requires grad refuses, since the gradient would be lost);
- ``random.*``: tensors made from NumPy's random numbers;

and it gives quimb's ``TNOptimizer`` a ``"yaad"`` autodiff backend
(:class:`TNOptimizerHandler`). It registers with autoray when autoray is imported and
with quimb when ``quimb.tensor.optimize`` is, whichever comes first, yaad or they (an
import hook, which removes itself once both are done): nothing to call by hand, and
``import yaad`` imports neither. :func:`register` does it at once.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import threading
import warnings
from typing import Any, Callable

import numpy as np

from .core.tensor import Tensor
from .creation import tensor
from .linalg import svd

__all__ = ["TNOptimizerHandler", "register"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


# ---- what autoray calls ------------------------------------------------------------------

def _reduced_svd(x: Any, full_matrices: bool = False, **kwargs: Any) -> Any:
    return svd(x, full_matrices=full_matrices, **kwargs)


def _values(x: Any) -> np.ndarray:
    """autoray's ``to_numpy``: the values of ``x`` as a NumPy array, without its graph."""
    return np.asarray(x.detach() if isinstance(x, Tensor) else x)


def _random(name: str) -> Callable[..., Any]:
    """``random.<name>`` for autoray: NumPy's, its array made a tensor (no gradient)."""
    def draw(*args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        value = getattr(np.random, name)(*args, **kwargs)
        if dtype is not None:
            value = np.asarray(value).astype(dtype)
        return tensor(value) if isinstance(value, np.ndarray) else value

    draw.__name__ = name
    return draw


_RANDOM = ("normal", "uniform", "standard_normal", "random", "rand", "randn", "randint",
           "choice", "permutation", "seed")


def _register_autoray(autoray: Any) -> None:
    autoray.register_function("yaad", "linalg.svd", _reduced_svd)
    autoray.register_function("yaad", "to_numpy", _values)
    for name in _RANDOM:
        autoray.register_function("yaad", f"random.{name}", _random(name))


# ---- quimb's TNOptimizer -----------------------------------------------------------------

class TNOptimizerHandler:
    """The ``"yaad"`` autodiff backend of quimb's ``TNOptimizer``
    (``TNOptimizer(..., autodiff_backend="yaad")``).

    quimb hands it the loss as a function of the network's arrays (a pytree of NumPy
    arrays) and asks for the loss and its gradient as NumPy values. Gradients follow
    yaad's (PyTorch's) complex convention, ``dL/dx + i dL/dy``, which is what quimb's
    PyTorch backend hands over too.

    Parameters
    ----------
    device : None or "cpu"
        Where the arrays live: yaad's tensors are NumPy's here.
    dtype : str or dtype, optional
        Cast the arrays to this dtype first.
    """

    def __init__(self, device: Any = None, dtype: Any = None) -> None:
        if device not in (None, "cpu"):
            raise ValueError(f"TNOptimizer(autodiff_backend='yaad'): device={device!r} is not "
                             "available; yaad's tensors hold NumPy arrays (device='cpu')")
        self.dtype = None if dtype is None else np.dtype(dtype)
        self._fn: Callable[[Any], Any] | None = None

    def to_variable(self, x: Any) -> Tensor:
        return tensor(_values(x), dtype=self.dtype, requires_grad=True)

    def to_constant(self, x: Any) -> Tensor:
        return tensor(_values(x), dtype=self.dtype)

    def setup_fn(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    def value(self, arrays: Any) -> Any:
        from autoray import tree_map

        assert self._fn is not None, "setup_fn first"
        return _values(self._fn(tree_map(self.to_constant, arrays)))

    def value_and_grad(self, arrays: Any) -> tuple[Any, Any]:
        from autoray import tree_map

        assert self._fn is not None, "setup_fn first"
        variables = tree_map(self.to_variable, arrays)
        loss = self._fn(variables)
        loss.backward()

        def gradient(v: Tensor) -> np.ndarray:
            if v.grad is None:  # (the loss does not depend on it)
                return np.zeros(v.shape, dtype=v.dtype)
            return np.asarray(v.grad)

        return _values(loss), tree_map(gradient, variables)


def _register_quimb(optimize: Any) -> None:
    optimize._BACKEND_HANDLERS.setdefault("yaad", TNOptimizerHandler)


# ---- when: now, or when the library is imported -------------------------------------------

_REGISTRATIONS: dict[str, Callable[[Any], None]] = {
    "autoray": _register_autoray,
    "quimb.tensor.optimize": _register_quimb,
}
_done: set[str] = set()
_lock = threading.RLock()


def _run(name: str, module: Any) -> None:
    with _lock:
        if name in _done:
            return
        _done.add(name)
    try:
        _REGISTRATIONS[name](module)
    except Exception as exc:  # (a changed API must not break the user's import)
        warnings.warn(f"yaad could not register itself with {name} ({type(exc).__name__}: "
                      f"{exc}); yaad tensors may not work there", RuntimeWarning, stacklevel=2)


class _Loader(importlib.abc.Loader):
    """A module's own loader, followed by yaad's registration with that module."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader, self._name = loader, name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _run(self._name, module)
        _unwatch_when_done()

    def __getattr__(self, attr: str) -> Any:  # (get_data, is_package, resource readers...)
        return getattr(self._loader, attr)


class _Watcher(importlib.abc.MetaPathFinder):
    """On ``sys.meta_path`` while a library yaad registers with is not imported yet: it
    finds the library's spec with the finders after it and wraps the loader."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _REGISTRATIONS or fullname in _done:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


def _unwatch_when_done() -> None:
    if all(n in _done for n in _REGISTRATIONS):
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Watcher)]


def register() -> None:
    """Register yaad with autoray and quimb now (importing them), rather than when they
    are first imported. Idempotent.

    Examples
    --------
    >>> import yaad.interop
    >>> yaad.interop.register()
    """
    for name in _REGISTRATIONS:
        _run(name, importlib.import_module(name))
    _unwatch_when_done()


def _watch() -> None:
    """At ``import yaad``: register with what is imported already, watch for the rest."""
    for name in _REGISTRATIONS:
        if name in sys.modules:
            _run(name, sys.modules[name])
    if not all(n in _done for n in _REGISTRATIONS) and not any(
            isinstance(f, _Watcher) for f in sys.meta_path):
        sys.meta_path.insert(0, _Watcher())


_watch()
