"""Strong zeros: below a selecting op (``where``, indexing), an elementwise op's rule may
meet an inf or a NaN in the branch not taken, where its gradient is zero; 0 * inf must be
0 there. One implementation for the engine and compiled backward passes (inlined, called
or fused).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.backend import namespace
from ..core.lazy import is_lazy
from ..core.op import Op, apply
from ..core.tensor import Tensor


def _strong_zero(g: Any, gi: Any) -> Any:
    # A VJP is linear in g, and an elementwise op's is elementwise: where g is 0, gi is 0
    # unless the rule met an inf or a nan there. One sum tells whether there is any.
    # (no errstate around the sum: it would double the cost of the common case; an inf and
    # a -inf in gi make it warn, once) A lazy gi is not looked at: the mask is computed
    # with the rest.
    if type(gi) is not np.ndarray and not is_lazy(gi):
        xp = namespace(gi)
        if xp is not np:  # (another library's array, e.g. forward mode's tangents on one)
            if bool(xp.all(xp.isfinite(gi))):
                return gi
            return xp.where((g == 0) & ~xp.isfinite(gi), xp.zeros_like(gi), gi)
    if not is_lazy(gi) and np.isfinite(gi.sum() if type(gi) is np.ndarray else np.sum(gi)):
        return gi
    with np.errstate(invalid="ignore"):
        return np.where((g == 0) & ~np.isfinite(gi), 0, gi)


def _strong_zero_vjp(G: Any, ans: Any, g: Any, gi: Any) -> Any:
    from .elementwise import isfinite, where

    return where((g == 0) & ~isfinite(gi), 0, G)


def _strong_zero_jvp(t: Any, ans: Any, g: Any, gi: Any) -> Any:
    from .elementwise import isfinite, where

    return where((g == 0) & ~isfinite(gi), 0, t)


# (an op, not in the registry: under create_graph it is differentiated, selecting as
# `where` does, and a compiled tape records it as one call)
STRONG_ZERO = Op(forward=_strong_zero, name="strong_zero", vjps=(None, _strong_zero_vjp),
                 jvps=(None, _strong_zero_jvp), save_args=True, save_ans=False, nout=1,
                 variadic=False, elementwise=False, selects=True, linear=False)


def strong_zero(g: Any, gi: Any) -> Any:
    """``gi``, the result of an elementwise op's rule for the gradient ``g``, with exact
    zeros where ``g`` is zero and ``gi`` is not finite (0 * inf and 0 * nan in a branch
    that a selecting op did not take). A finite ``gi`` is kept as it is: under
    create_graph, a ``g`` that is zero by accident (it depends on the inputs) must keep
    its derivatives."""
    if isinstance(g, Tensor) or isinstance(gi, Tensor):
        # (the result depends on g only through where it is zero: no gradient for g)
        return apply(STRONG_ZERO, (g.detach() if isinstance(g, Tensor) else g, gi), {})
    return _strong_zero(g, gi)


STRONG_ZERO.fn = strong_zero
STRONG_ZERO.batch = "broadcast"  # (elementwise: vmap runs it on the whole batch)
