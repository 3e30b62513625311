"""Arguments of public functions that have no derivative (a solver's times or initial
guess, a probability, a seed): a tensor requiring grad passed there raises, naming the
argument, instead of losing its gradient without a word.

An op's positional argument without a VJP rule is checked when the op is called
(``core.op``); this module serves the functions built on ops, whose other arguments only
they know. The walking test (tests/core/test_argument_gradients.py) goes through the public
API and checks that each argument gets its gradient or raises.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar, cast

from .errors import error
from .grad_mode import state
from .tensor import Tensor

F = TypeVar("F", bound=Callable[..., Any])

_SEQUENCES = (list, tuple)


def _requiring_grad(value: Any) -> bool:
    """Whether ``value`` (or a tensor in a list, tuple or dict of them) requires grad."""
    if isinstance(value, Tensor):
        return value.requires_grad
    if type(value) in _SEQUENCES:
        return any(_requiring_grad(v) for v in value)
    if type(value) is dict:
        return any(_requiring_grad(v) for v in value.values())
    return False


def refuse_grad(name: str, why: str, **arguments: Any) -> None:
    """Raise if one of ``arguments`` (given as ``argument=value``) is a tensor that
    requires grad while gradients are recorded: ``name`` has no derivative with respect
    to it (``why`` says why), so its gradient would be lost without a word.

    The one check for the arguments of a public function that are not differentiated:
    times of a solver, initial guesses, probabilities, seeds. (An op's positional
    argument without a VJP rule is checked when the op is called.)
    """
    if not state.enabled:
        return
    for arg, value in arguments.items():
        if _requiring_grad(value):
            raise error("no-derivative", name=name, arg=arg, why=why)


def no_derivative(*args: str, why: str) -> Callable[[F], F]:
    """Decorate a public function whose arguments named ``args`` have no derivative: a
    tensor requiring grad passed there raises (:func:`refuse_grad`), naming it."""
    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        unknown = set(args) - set(signature.parameters)
        if unknown:
            raise TypeError(f"no_derivative: {fn.__name__} has no argument {sorted(unknown)}")
        name = f"{fn.__module__.replace('yaad.', '', 1)}.{fn.__name__}" if (
            fn.__module__.startswith("yaad.")) else fn.__name__

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            if state.enabled:
                bound = signature.bind_partial(*a, **kw).arguments
                refuse_grad(name, why, **{k: bound[k] for k in args if k in bound})
            return fn(*a, **kw)

        wrapper.no_derivative = args  # type: ignore[attr-defined]
        return cast(F, wrapper)

    return decorate
