"""Per-thread autograd state: grad mode, the level stack, and the switches of the modes."""

from __future__ import annotations

import functools
import inspect
import itertools
import operator
import threading
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    # Class attributes are the per-thread defaults. The modes add their own switches (see
    # add_switch): this class names none of them.
    enabled = True  # record operations for reverse mode
    modes_on = False  # some mode's switch is on (see refresh)
    levels: tuple[Any, ...] = ()  # active forward-mode and vmap levels, innermost last
    depth = 0  # backward passes running in this thread (a rule or hook calling backward)
    # While a transform (yaad.func) evaluates its function: the conversions to Python of
    # tensors that depend on the traced inputs, (kind, frames), see core.presentation
    conversions: list[Any] | None = None

    def refresh(self) -> None:
        """Recompute ``modes_on`` (after a mode's switch changed): true when any is set."""
        self.modes_on = any(_switches(self))


# The per-thread switches the modes added (modes.registry.register_mode), as one getter of
# all of them, which refresh() reads.
_switch_names: list[str] = []
_switches: Callable[[_State], tuple[Any, ...]] = lambda st: ()
_RESERVED = frozenset(("enabled", "modes_on", "depth", "refresh", "conversions"))


def add_switch(name: str, default: Any = None) -> None:
    """Add a per-thread switch ``state.<name>`` (``default`` in every thread until set);
    ``state.modes_on`` is true while any switch is set (truthy), once ``refresh()`` has
    run. A name already an attribute (``levels``) keeps its default."""
    if name in _RESERVED or not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"add_switch: {name!r} cannot be a mode's switch")
    if name in _switch_names:
        return
    if not hasattr(_State, name):
        setattr(_State, name, default)
    _switch_names.append(name)
    _set_getter()


def remove_switch(name: str) -> None:
    """Remove the switch ``name`` (see :func:`add_switch`); ``levels`` stays an attribute."""
    if name in _switch_names:
        _switch_names.remove(name)
        if name != "levels":
            delattr(_State, name)
            state.__dict__.pop(name, None)  # (this thread's; other threads keep theirs)
        _set_getter()
    state.refresh()


def _set_getter() -> None:
    global _switches
    if len(_switch_names) == 1:
        one = operator.attrgetter(_switch_names[0])
        _switches = lambda st: (one(st),)
    else:
        _switches = operator.attrgetter(*_switch_names) if _switch_names else (lambda st: ())


state = _State()


class _Engine:
    """The engine's entry points, for rules below it that run a backward pass of their
    own (``linalg.eigh`` reads a loss's curvature across a degenerate level); set by
    ``yaad.autograd`` when it is imported."""

    run_backward: Callable[..., Any]


engine = _Engine()

# Levels of forward mode and of vmap, numbered in the order they are entered (one counter:
# a tensor keys its tangents and batch axes by level).
new_level = itertools.count(1).__next__


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
    manager (restored on exit) and as a decorator (also of generator and coroutine
    functions: the mode holds whenever their code runs, and not between their steps).

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
        state.enabled = self.prev  # used as a decorator: do not change the mode now
        decorated: F = _decorate(fn, self.mode)
        return decorated


class _GradModeContext:
    mode = True

    def __new__(cls, fn: Callable[..., Any] | None = None) -> Any:
        self = super().__new__(cls)
        if fn is None:
            return self
        return _decorate(fn, cls.mode)  # bare @no_grad, or no_grad(fn)

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev

    def __call__(self, fn: F) -> F:
        decorated: F = _decorate(fn, self.mode)
        return decorated


class no_grad(_GradModeContext):
    """Context manager and decorator that stops recording operations (this thread only).

    As a decorator it may be written ``@no_grad()`` or ``@no_grad``, and it also covers
    generator and coroutine functions (their code runs without recording, and the
    caller's mode is back between their steps).

    Examples
    --------
    >>> with yaad.no_grad():
    ...     w -= 0.1 * w.grad
    """

    mode = False


class enable_grad(_GradModeContext):
    """Context manager and decorator that turns recording back on inside :func:`no_grad`
    (written and working as :class:`no_grad`)."""

    mode = True


class _Mode:
    """Set the grad mode on entry and put the previous one back on exit."""

    __slots__ = ("mode", "prev")

    def __init__(self, mode: bool) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev


def _decorate(fn: Any, mode: bool) -> Any:
    """``fn`` running under grad mode ``mode``: a function for the whole call; a generator
    or coroutine function for each of its steps (the mode is the caller's in between)."""
    if inspect.isclass(fn):
        raise TypeError(f"cannot decorate the class {fn.__name__} with a grad mode: "
                        f"decorate its methods instead")
    if not callable(fn):
        raise TypeError(f"a grad mode decorates a function, not a {type(fn).__name__}")
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Any:
            return (yield from _stepped(fn(*args, **kwargs), mode))

        return generator
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def coroutine(*args: Any, **kwargs: Any) -> Any:
            return await _Awaiting(fn(*args, **kwargs), mode)

        return coroutine

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _Mode(mode):
            return fn(*args, **kwargs)

    return wrapper


def _stepped(inner: Any, mode: bool) -> Any:
    """A generator running ``inner`` (a generator or a coroutine) one step at a time, each
    step under grad mode ``mode``; what it yields and receives passes through."""
    value, error = None, None
    while True:
        with _Mode(mode):
            try:
                out = inner.send(value) if error is None else inner.throw(error)
            except StopIteration as stop:
                return stop.value
        try:
            value, error = (yield out), None
        except GeneratorExit:
            with _Mode(mode):
                inner.close()
            raise
        except BaseException as e:  # noqa: BLE001  (thrown in: passed to inner)
            value, error = None, e


class _Awaiting:
    """An awaitable that runs a coroutine step by step under a grad mode."""

    __slots__ = ("coro", "mode")

    def __init__(self, coro: Any, mode: bool) -> None:
        self.coro = coro
        self.mode = mode

    def __await__(self) -> Any:
        return _stepped(self.coro, self.mode)


def on_fresh_stack(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a new thread that starts with this thread's autograd state (a
    backward pass nested in many others goes on there, on a fresh stack)."""
    saved = dict(state.__dict__)
    box: dict[str, Any] = {}

    def body() -> None:
        state.__dict__.update(saved)
        state.depth += 1  # (so that fn goes on here)
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001  (re-raised in the calling thread)
            box["error"] = e

    worker = threading.Thread(target=body, name="yaad-reentrant-backward")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


_STACK_LEVELS = 40  # nested backward passes per thread
_running = 0  # backward passes running (all threads)


def run_pass(create_graph: bool, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` as a backward pass: recording is off during it (on under
    ``create_graph``, which records the pass).

    A pass nested in others (a rule or hook calling backward) is counted per thread, and
    goes on in a fresh thread every few levels, so that deep reentrance is not limited by
    the recursion limit (PyTorch runs 2,000 levels; it uses threads too). ``_running``
    (passes running in any thread) spares the per-thread count, which is slow to reach,
    when no other pass runs.
    """
    global _running
    nested = _running
    if nested:
        depth = state.depth
        if depth and not depth % _STACK_LEVELS:
            return on_fresh_stack(run_pass, create_graph, fn, *args)
        state.depth = depth + 1
    prev_mode = state.enabled
    state.enabled = bool(create_graph)
    _running += 1
    try:
        return fn(*args)
    finally:
        _running -= 1
        state.enabled = prev_mode
        if nested:
            state.depth = depth
