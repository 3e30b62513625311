"""``yaad.detect_anomaly``: find the forward operation behind a NaN or inf in backward.

While the mode is on, every recorded operation notes where the user's code called it
(the innermost frames outside yaad), and a backward pass run inside it checks what every
gradient rule returns (also for a graph recorded before, as in PyTorch). The first rule
that returns a NaN or an infinity raises, naming the operation, the input, and the line
of the forward call. It slows everything down: use it to debug.
"""

from __future__ import annotations

import functools
import linecache
import warnings
import weakref
from typing import Any, Callable, TypeVar

import numpy as np

from ..core.engine import run_backward
from ..core.frames import Frames as _Frames
from ..core.frames import user_frames
from ..core.grad_mode import state
from ..core.graph import Node
from ..core.op import Op
from ..core.tensor import Tensor
from .registry import BackwardCall, register_mode, run_modes

__all__ = ["detect_anomaly", "AnomalyError"]

F = TypeVar("F", bound=Callable[..., Any])

_where: weakref.WeakKeyDictionary[Node, _Frames] = weakref.WeakKeyDictionary()


class AnomalyError(RuntimeError):
    """A gradient rule produced a NaN or an infinity while :func:`detect_anomaly` was on."""

    def __str__(self) -> str:
        return f"{super().__str__()} (see docs/errors.md#anomaly)"


class detect_anomaly:
    """Context manager and decorator: on a NaN or inf in backward, raise naming the
    forward operation that produced it and where it was called.

    Parameters
    ----------
    check_nan : bool, optional
        Check the gradients (default). With False, only the forward call sites are
        recorded (they then appear in ``grad_fn`` reprs via :func:`forward_site`).

    Raises
    ------
    AnomalyError
        From ``backward()`` / ``autograd.grad`` when a rule returns a non-finite value.

    Examples
    --------
    >>> with yaad.detect_anomaly():
    ...     x = yaad.tensor([0.0], requires_grad=True)
    ...     yaad.sqrt(x).sum().backward()   # d sqrt(x)/dx = inf at 0
    Traceback (most recent call last):
    AnomalyError: detect_anomaly: the gradient of 'sqrt' for its input 0 contains inf ...
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._prev: list[Any] = []

    def __enter__(self) -> detect_anomaly:
        warnings.warn("anomaly detection is on: every operation notes where it was "
                      "called and backward checks every gradient, which is slow; use it "
                      "to debug", UserWarning, stacklevel=2)
        self._prev.append(state.anomaly)
        state.anomaly = self
        state.refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        state.anomaly = self._prev.pop()
        state.refresh()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def check_gradient(self, node: Node, i: int, result: Any) -> None:
        """Raise :class:`AnomalyError` if ``result``, the gradient that the rule of
        ``node`` gave its input ``i``, holds a NaN or an infinity (called by the engine
        for every rule of a backward pass run while the mode is on)."""
        data = result.data if isinstance(result, Tensor) else np.asarray(result)
        if data.dtype.kind in "fc" and not np.all(np.isfinite(data)):
            what = "nan" if np.any(np.isnan(data)) else "inf"
            name = node.name
            site = forward_site(node)
            raise AnomalyError(
                f"detect_anomaly: the gradient of '{name}' for its input {i} contains "
                f"{what} (shape {data.shape}). The forward call of '{name}' was made at "
                f"(most recent call last):\n"
                f"{site or '  (unknown: the forward ran outside detect_anomaly())'}")


def note_forward(out: Any) -> None:
    """Note where the user's code called the op that made ``out`` (while the mode is on)."""
    for o in out if isinstance(out, tuple) else (out,):
        edge = o._node if isinstance(o, Tensor) else None
        if edge is not None:
            node = edge[0] if type(edge) is tuple else edge
            break
    else:
        return
    if node not in _where:
        _where[node] = user_frames()


def forward_site(node: Any) -> str:
    """Where the forward call that recorded ``node`` (or a tensor's ``grad_fn``) was made,
    formatted like a traceback; empty if it was not recorded under :func:`detect_anomaly`."""
    frames = _where.get(node, ())
    lines = []
    for filename, lineno, func in reversed(frames):
        lines.append(f'  File "{filename}", line {lineno}, in {func}')
        code = linecache.getline(filename, lineno).strip()
        if code:
            lines.append(f"    {code}")
    return "\n".join(lines)


def _interpret(op: Op, args: tuple[Any, ...], kw: dict[str, Any], k: int) -> Any:
    """The mode's interpreter (see ``yaad.modes.MODES``): notes where each op was called."""
    out = run_modes(op, args, kw, k)
    if state.anomaly:
        note_forward(out)
    return out


def _backward(call: BackwardCall, check: Any, k: int) -> Any:
    """The mode's backward hook: with ``check_nan``, the engine checks every rule's result."""
    anomaly = state.anomaly
    if anomaly and anomaly.check_nan:
        check = anomaly
    return run_backward(*call, check=check, hook=k)


register_mode("anomaly", _interpret, order=60, switch="anomaly", default=False,
              backward=_backward)
