"""A module called with other parameters: :func:`functional_call` and
:func:`stack_module_state` (torch.func's), for per-example gradients and ensembles with
:func:`yaad.func.vmap` and :func:`yaad.func.grad`.

A module reads its parameters as attributes (``self.weight``); :func:`functional_call`
puts the given tensors in their place for one call and puts the module's own back
afterwards, so the transforms see the parameters as arguments.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..core.tensor import Tensor
from ..ops.shape import stack
from .module import Module


def _slots(module: Module) -> dict[str, tuple[Module, str, Any]]:
    """Every parameter and buffer: dotted name -> (owning module, attribute, value)."""
    found: dict[str, tuple[Module, str, Any]] = {}
    for prefix, m in module.named_modules(remove_duplicate=False):
        for registry in (m._parameters, m._buffers):
            for name, value in registry.items():
                if value is not None:
                    found.setdefault(f"{prefix}.{name}" if prefix else name, (m, name, value))
    return found


def functional_call(module: Module,
                    parameter_and_buffer_dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]],
                    args: Any = (), kwargs: Mapping[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module`` with some of its parameters and buffers replaced
    (torch.func.functional_call).

    Parameters
    ----------
    module : Module
    parameter_and_buffer_dicts : dict, or a sequence of dicts
        Dotted names (as :meth:`Module.named_parameters` gives them: ``"0.weight"``) to
        tensors or arrays used in their place for this call; several dicts are merged
        (a name in two of them is an error).
    args : tuple or a single argument
        The positional arguments of the call.
    kwargs : dict, optional
        Its keyword arguments.
    tie_weights : bool
        A parameter registered under several names (tied weights) is replaced under all
        of them when one name is given.
    strict : bool
        Every parameter and buffer must be given.

    Returns
    -------
    object
        What the module returns. The module's own parameters are back in place
        afterwards, even when the call raised. (The module is changed for the duration of
        the call: do not call it from another thread meanwhile.)

    Examples
    --------
    Per-example gradients of a model:

    >>> import numpy as np, yaad
    >>> from yaad.nn import Linear, functional_call
    >>> model = Linear(3, 1)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> def loss(params, x, y):
    ...     return ((functional_call(model, params, (x,)) - y) ** 2).sum()
    >>> X, Y = np.ones((5, 3)), np.zeros((5, 1))
    >>> grads = yaad.func.vmap(yaad.func.grad(loss), in_axes=(None, 0, 0))(params, X, Y)
    >>> grads["weight"].shape
    (5, 1, 3)
    """
    dicts = ([parameter_and_buffer_dicts] if isinstance(parameter_and_buffer_dicts, Mapping)
             else list(parameter_and_buffer_dicts))
    given: dict[str, Any] = {}
    for d in dicts:
        for name, value in d.items():
            if name in given:
                raise ValueError(f"functional_call: '{name}' appears in more than one dict")
            given[name] = value
    slots = _slots(module)
    unknown = sorted(set(given) - set(slots))
    if unknown:
        raise ValueError(f"functional_call: {unknown} are not parameters or buffers of the "
                         f"{type(module).__name__} (it has {sorted(slots)})")
    replace = {name: given[name] for name in given}
    if tie_weights:  # the other names of a given parameter's object
        by_object = {id(slots[name][2]): value for name, value in given.items()}
        for name, (_, _, value) in slots.items():
            if name not in replace and id(value) in by_object:
                replace[name] = by_object[id(value)]
    if strict and set(replace) != set(slots):
        missing = sorted(set(slots) - set(replace))
        raise ValueError(f"functional_call(strict=True): missing {missing}")
    saved = []
    try:
        for name, value in replace.items():
            owner, attribute, _ = slots[name]
            saved.append((owner, attribute, owner.__dict__[attribute]))
            owner.__dict__[attribute] = value  # (read by forward as self.<attribute>)
        call_args = args if isinstance(args, tuple) else (args,)
        return module(*call_args, **(kwargs or {}))
    finally:
        for owner, attribute, value in reversed(saved):
            owner.__dict__[attribute] = value


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """The parameters and buffers of several models of one architecture, each stacked
    along a new first axis (torch.func.stack_module_state), for an ensemble run by
    ``vmap(..., in_axes=(0, 0, None))`` over :func:`functional_call`.

    Parameters
    ----------
    models : sequence of Module
        Models with the same parameter names and shapes.

    Returns
    -------
    params : dict
        Dotted name -> stacked tensor, a new leaf that requires grad (detached from the
        models' own parameters).
    buffers : dict
        Dotted name -> stacked tensor.
    """
    if not models:
        raise ValueError("stack_module_state: expected at least one model")
    names = [[n for n, _ in m.named_parameters()] for m in models]
    if any(n != names[0] for n in names):
        raise ValueError("stack_module_state: the models have different parameters "
                         f"({names[0]} and others)")
    params = {}
    for name, first in models[0].named_parameters():
        leaf = stack([dict(m.named_parameters())[name].detach() for m in models])
        params[name] = leaf.detach().requires_grad_(first.requires_grad)
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers
