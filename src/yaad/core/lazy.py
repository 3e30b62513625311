"""Lazy arrays (Dask): telling them apart, and computing values and gradients in one pass.

A tensor over a ``dask.array.Array`` records as any tensor does, and its forward values
and its gradients are Dask graphs: nothing is computed until the user asks.
:func:`compute` asks once for several of them, so that the forward pass the loss and the
gradients share runs once. The engine uses :func:`is_lazy` to leave such arrays alone
where it would otherwise read their values (a check for a NaN, a conversion to NumPy).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .tensor import Tensor


def is_lazy(x: Any) -> bool:
    """Whether ``x`` is a Dask array (its values are computed only when asked for).

    Parameters
    ----------
    x : object

    Returns
    -------
    bool
        False without importing Dask when Dask has not been imported.
    """
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(x, module.Array)


def compute(*values: Any) -> tuple[Any, ...]:
    """The values of tensors and arrays, the Dask ones computed together in one pass.

    Parameters
    ----------
    *values : Tensor or array
        Typically a loss and the gradients of its inputs (``x.grad``) after
        ``loss.backward()`` on tensors over ``dask.array`` arrays. The graphs are merged
        and computed by one ``dask.compute`` call (on the active ``dask.distributed``
        client, if any), so the forward pass they share runs once.

    Returns
    -------
    tuple
        One value per argument: a tensor is replaced by its array, a Dask array by its
        computed NumPy array (a NumPy scalar for a 0-d one, as ``dask.compute`` gives);
        anything else (a NumPy array) is returned as it is.

    Examples
    --------
    >>> import numpy as np, yaad
    >>> x = yaad.tensor(np.arange(3.0), requires_grad=True)
    >>> loss = (x ** 2).sum()
    >>> loss.backward()
    >>> yaad.compute(loss, x.grad)
    (array(5.), array([0., 2., 4.]))
    """
    arrays = [v.data if isinstance(v, Tensor) else v for v in values]
    lazy = [k for k, a in enumerate(arrays) if is_lazy(a)]
    if lazy:
        for k, a in zip(lazy, _dask("dask").compute(*(arrays[k] for k in lazy))):
            arrays[k] = a
    return tuple(arrays)


def _dask(name: str) -> Any:
    """A Dask module, imported when first needed (Dask is an optional dependency)."""
    return importlib.import_module(name)
