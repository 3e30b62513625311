"""Per-thread autograd state: grad mode and the forward-mode level stack."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    # Class attributes are the per-thread defaults.
    enabled = True  # record operations for reverse mode
    special = False  # something beyond plain recording is active (forward mode, tracing)
    levels: tuple = ()  # active forward-mode levels, innermost last
    tracer = None  # the recorder of yaad.compile, when one is recording
    anomaly = False  # yaad.detect_anomaly() is active
    segment = None  # yaad.checkpoint: called with the arguments of every op

    def refresh(self) -> None:
        self.special = (bool(self.levels) or self.tracer is not None or self.anomaly
                        or self.segment is not None)


state = _State()


def is_grad_enabled() -> bool:
    """Return whether operations are currently recorded for differentiation.

    Returns
    -------
    bool
        True unless inside :func:`no_grad` or ``set_grad_enabled(False)``.
    """
    return state.enabled


class set_grad_enabled:
    """Enable or disable gradient recording, for this thread.

    Works as a function call (the setting stays until changed), as a context
    manager (restored on exit) and as a decorator.

    Parameters
    ----------
    mode : bool
        True to record operations, False to stop recording.
    """

    def __init__(self, mode: bool) -> None:
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev

    def __call__(self, fn: F) -> F:
        mode = self.mode
        state.enabled = self.prev  # used as a decorator: do not change the mode now

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _GradModeContext:
    mode = True

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev

    def __call__(self, fn: F) -> F:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):
    """Context manager and decorator that stops recording operations (this thread only).

    Examples
    --------
    >>> with yaad.no_grad():
    ...     w -= 0.1 * w.grad
    """

    mode = False


class enable_grad(_GradModeContext):
    """Context manager and decorator that turns recording back on inside :func:`no_grad`."""

    mode = True
