"""``yaad.extend``: everything needed to write your own differentiable operator.

User code that adds an operator imports from here, never from yaad's internal modules
(``yaad.op``, ``yaad.autograd``, ``yaad.ops.*``), which may move. The walk-through is
docs/custom-ops.md.

Two ways to declare an operator:

- `op` (as HIPS autograd's ``primitive`` with ``defvjp``/``defjvp``): a forward on
  NumPy arrays, one VJP rule and optionally one JVP rule per input, written with yaad
  functions so that second derivatives come for free.
- `Function` (PyTorch's ``torch.autograd.Function``): a subclass with static
  ``forward(ctx, ...)`` and ``backward(ctx, ...)``; ``ctx`` is a `FunctionCtx`
  (``save_for_backward``, ``mark_non_differentiable``, ``needs_input_grad``, ...);
  `once_differentiable` marks a ``backward`` written on plain arrays.

A function built on ops whose argument has no derivative (an initial guess, a
probability) declares it with `no_derivative` (or calls `refuse_grad`): a tensor that
requires grad passed there then raises, naming the argument.

An operator whose forward writes into an array it was given calls `mark_modified`
on that array, so that a backward that saved it refuses to use the changed value. Every
declared operator is in `registry` next to the built-ins.

>>> import numpy as np
>>> from yaad.extend import op
>>> cube = op(lambda x: x ** 3, name="cube_example", vjp=lambda g, ans, x: 3 * g * x * x)
>>> import yaad
>>> x = yaad.tensor([2.0], requires_grad=True)
>>> cube(x).sum().backward()
>>> x.grad
array([12.])
>>> del yaad.registry["cube_example"]
"""

from __future__ import annotations

from .core.arguments import no_derivative, refuse_grad
from .core.graph import mark_modified
from .core.op import Op, op, registry
from .function import Function, FunctionCtx, once_differentiable

__all__ = ["op", "Op", "registry", "Function", "FunctionCtx", "once_differentiable",
           "mark_modified", "refuse_grad", "no_derivative"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
