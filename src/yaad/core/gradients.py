"""The gradient bookkeeping, written once for the engine and for compiled backward passes.

The root gradient of ``backward()`` (the checks of its outputs and inputs are in
:mod:`yaad.targets`); what a rule gets (the saved values, as tensors in the graph under
``create_graph`` or forward mode: :func:`saved_as_tensors`); calling an op's VJP rules
(through :mod:`yaad.ops.strong_zero`, an op, where a gradient that was selected away
meets an inf or a NaN in a branch not taken); reducing a rule's result over broadcast
axes and casting it to the input's dtype (the real part for a real input). No rule,
built-in or a user's, does any of this itself.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import numpy as np

from ..ops.elementwise import real
from ..ops.reductions import sum as _sum
from ..ops.shape import astype, reshape
from ..ops.strong_zero import strong_zero
from .backend import (
    BackendError,
    ComputeRefused,
    backend_name,
    check_same_backend,
    computing_refused,
    dtype_kind,
    is_complex,
    is_foreign,
    no_implementation,
    ones_like,
)
from .errors import error
from .higher_order import saved_as_tensors
from .tensor import Tensor, make_tensor

if TYPE_CHECKING:  # (types only: nothing here runs)
    from .graph import Node

    class GradientCheck(Protocol):
        """What sees every rule's result in a checked pass (``detect_anomaly``)."""

        def check_gradient(self, node: Node, i: int, result: Any) -> None: ...


def unbroadcast(g: Any, shape: tuple[int, ...], where: Any = "") -> Any:
    """Sum ``g`` over the axes that broadcasting added to reach ``shape``.

    ``where`` names the gradient in an error: a string, or ``(op name, input position,
    the op's inputs)``, formatted only when there is an error."""
    numpy = type(g) is np.ndarray  # (first-order backward: NumPy's own calls, no dispatch)
    gshape = g.shape if numpy else np.shape(g)
    if gshape == shape:
        return g
    n = len(shape)
    lead = len(gshape) - n
    if lead < 0:
        raise error("rule-shape", where=_where(where), got=gshape, shape=shape)
    axes = list(range(lead))
    for k in range(n):  # (a loop, no generators: it runs for every broadcast operand)
        s = shape[k]
        if s != gshape[lead + k]:
            if s != 1:
                raise error("rule-shape", where=_where(where), got=gshape, shape=shape)
            axes.append(lead + k)
    if axes:
        g = g.sum(axis=tuple(axes)) if numpy else _sum(g, axis=tuple(axes))
    if numpy:  # (an ndarray or a NumPy scalar: both have shape and reshape)
        return g if g.shape == shape else g.reshape(shape)
    return g if np.shape(g) == shape else reshape(g, shape)


def _where(where: Any) -> str:
    if isinstance(where, str):
        return where
    name, k, args = where
    return f"the gradient of '{name}' for input {_position(k, args)}"


def _position(k: Any, args: Sequence[Any]) -> Any:
    """The input position ``k`` (as given), or, for ``(ref,)``, the position of the input
    ``ref`` among ``args`` (the engine knows the input, not its position)."""
    if type(k) is not tuple:
        return k
    for i, a in enumerate(args):
        if a is k[0]:
            return i
    return "?"


def cast_gradient(g: Any, dtype: Any) -> Any:
    """Cast a gradient to an input's dtype: the real part for a real input."""
    gdt = getattr(g, "dtype", None)
    if gdt is None:
        return np.asarray(g, dtype=dtype)
    if (gdt.kind == "c" and dtype.kind != "c" if isinstance(gdt, np.dtype) else
            dtype_kind(gdt) == "c" and dtype_kind(dtype) != "c"):
        g = g.real if isinstance(g, (np.ndarray, np.generic)) else real(g)
        if g.dtype == dtype:
            return g
    return g.astype(dtype) if isinstance(g, (np.ndarray, np.generic)) else astype(g, dtype)


def fit_gradient(g: Any, ref: Any, name: str, k: Any, out_grad: Any = None,
                 args: Sequence[Any] = ()) -> Any:
    """The result ``g`` of the rule of op ``name`` for its input ``k`` (whose value, or
    shape and dtype, is ``ref``), reduced over broadcast axes and cast to ``ref``'s dtype.

    ``out_grad`` is the gradient the rule received and ``args`` the op's inputs: a rule's
    result may have more axes than its input where broadcasting gave them (the output's or
    another input's), never more than all of them. ``k`` may be ``(ref,)``: the position
    of ``ref`` in ``args``, looked up only for an error.
    """
    if type(g) is not np.ndarray:
        if isinstance(g, (tuple, list)):
            raise error("rule-sequence", name=name, k=_position(k, args),
                        type=type(g).__name__, shape=ref.shape)
        if not hasattr(g, "shape"):
            g = np.asarray(g)
    shape = ref.shape
    if g.shape != shape:
        if out_grad is not None and g.ndim > len(getattr(out_grad, "shape", ())):
            outs = out_grad if isinstance(out_grad, tuple) else (out_grad,)
            most = max([len(o.shape) for o in outs if hasattr(o, "shape")]
                       + [len(a.shape) for a in args if hasattr(a, "shape")] + [len(shape)])
            if g.ndim > most:
                raise error("rule-axes", where=_where((name, k, args)), shape=g.shape,
                            most=most)
        g = unbroadcast(g, shape, (name, k, args))
    dtype = ref.dtype
    gdt = g.dtype
    if gdt is not dtype and gdt != dtype:
        g = cast_gradient(g, dtype)
    return g


def call_rule(op: Any, i: int, g: Any, ans: Any, args: Sequence[Any],
              kw: dict[str, Any]) -> Any:
    """The result of ``op``'s VJP rule for its input ``i`` (a variadic op has one rule,
    told the input's position)."""
    if op.variadic:
        return op.vjps[0](i, g, ans, *args, **kw)
    return op.vjps[i](g, ans, *args, **kw)


def rule_gradients(op: Any, g: Any, ans: Any, args: Sequence[Any], kw: dict[str, Any],
                   wanted: Sequence[bool], zero: Callable[..., Any] | None = None) -> list[Any]:
    """The results of ``op``'s VJP rules for the inputs marked in ``wanted`` (None for
    the others); for an elementwise op whose gradient was selected away in places, each
    through ``zero`` (:func:`yaad.ops.strong_zero.strong_zero`)."""
    if zero is None:
        return [call_rule(op, i, g, ans, args, kw) if w else None
                for i, w in enumerate(wanted)]
    grads: list[Any] = []
    with np.errstate(all="ignore"):
        for i, w in enumerate(wanted):
            gi = call_rule(op, i, g, ans, args, kw) if w else None
            grads.append(gi if gi is None or gi is g else zero(g, gi))
    return grads


def node_gradients(node: Node, g: Any, strong: bool, create_graph: bool,
                   check: GradientCheck | None = None) -> list[Any]:
    """What the rules of ``node`` send to each of its inputs for its gradient ``g`` (a
    list for several outputs), fitted to the inputs; None where an input has no parent
    or no gradient.

    ``strong``: the gradient was selected away in places (see ``Op.selects``); ``check``:
    the active ``detect_anomaly()``, which sees every rule's result.
    """
    op = node.op
    parents = node.parents
    if g is not None and op.nout != 1:
        g = None if all(x is None for x in g) else tuple(g)
    if g is None:
        return [None] * len(parents)
    saved = node.args
    extra = node.extra
    if create_graph or (extra is not None and extra.duals is not None):
        args, ans = saved_as_tensors(node)
    else:
        args, ans = saved, node.ans
    first = next(x for x in g if x is not None) if type(g) is tuple else g
    rules = _foreign_rules if is_foreign(first) else rule_gradients
    grads = rules(op, g, ans, args, node.kw or {}, [p is not None for p in parents],
                  strong_zero if strong and op.elementwise else None)
    for i, gi in enumerate(grads):
        if gi is not None:
            if check is not None:
                check.check_gradient(node, i, gi)
            if saved[i] is not None:
                grads[i] = fit_gradient(gi, saved[i], op.name, i, g, saved)
    return grads


def _foreign_rules(op: Any, *args: Any) -> list[Any]:
    """:func:`rule_gradients` on another library's arrays: a rule written for NumPy only
    (a NumPy method, or reading a Dask array's values) raises naming the op and the
    backend instead of failing inside the rule or computing a Dask array."""
    g = args[0]
    library = backend_name(next(x for x in g if x is not None) if type(g) is tuple else g)
    try:
        with computing_refused(library):
            return rule_gradients(op, *args)
    except BackendError:
        raise
    except ComputeRefused:
        cause = "its rule reads the values of the arrays"
    except (AttributeError, TypeError, NotImplementedError) as e:
        cause = f"its rule is written for NumPy arrays: {type(e).__name__}: {e}"
    raise no_implementation(f"{op.name} (its gradient)", library, cause) from None


@functools.lru_cache(maxsize=64)
def unit(dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """The gradient of a one-element output with respect to itself: a read-only 1
    (shared between calls; rules never write into their gradient)."""
    one = np.ones(shape, dtype=dtype)
    one.flags.writeable = False
    return one


def root_gradient(t: Tensor, g: Any, k: int, create_graph: bool = False) -> Any:
    """The gradient that output ``k`` of a backward call starts with: ``g`` checked
    against the output's shape and backend, or 1 for a real scalar when ``g`` is None."""
    data = t._data
    if g is None:
        if data.size != 1:
            raise error("non-scalar-backward", k=k, shape=t.shape)
        foreign = type(data) is not np.ndarray and is_foreign(data)
        if is_complex(data) if foreign else data.dtype.kind == "c":
            raise error("complex-backward", k=k, dtype=t.dtype)
        g = ones_like(data) if foreign else unit(data.dtype, data.shape)
    else:
        if isinstance(g, Tensor) and not create_graph and not getattr(g, "_tangents", None):
            g = g._data  # (a batched cotangent stays a tensor: its data are not its value)
        if np.shape(g) != t.shape:
            raise error("root-shape", k=k, got=np.shape(g), shape=t.shape)
        check_same_backend(g._data if isinstance(g, Tensor) else g, data,
                           f"backward: the gradient for output {k}", "gradient=")
        if not isinstance(g, (np.ndarray, Tensor)) and not is_foreign(g):
            g = np.asarray(g, dtype=t.dtype)
    if create_graph and not isinstance(g, Tensor):
        g = make_tensor(g)
    return g
