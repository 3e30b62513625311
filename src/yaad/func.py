"""``yaad.func``: function transforms in the shapes of ``torch.func`` and JAX.

``grad``, ``value_and_grad``, ``vjp``, ``jacrev`` (reverse mode), ``jvp``, ``jacfwd``,
``linearize`` (forward mode), ``hessian`` and ``hvp`` (forward over reverse). They take
plain NumPy arrays, Python scalars or tensors, nested in tuples, lists and dicts (a
minimal pytree), and they compose: ``grad(grad(f))``, ``jacfwd(jacrev(f))``,
``jvp(grad(f), ...)``.

Arrays in, arrays out: when no input is a tensor, results come back as NumPy arrays (0-d
results as NumPy scalars). With tensor inputs, results are tensors, and they stay linked
to the inputs' graph when an enclosing computation differentiates through them.

Each transform differentiates with respect to its own arguments only: an input is
aliased by an identity op, so a variable of an enclosing transform captured by ``f`` is a
constant for the inner one (no perturbation confusion).

Complex numbers follow yaad's convention: for a real ``f`` of ``z = x + iy``, ``grad``
gives ``df/dx + 1j df/dy``. ``jacrev``/``jacfwd`` of a complex-valued function of
complex inputs need ``holomorphic=True`` (then they return ``df/dz``).
"""

from __future__ import annotations

import linecache
import math
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence, cast

import numpy as np

from .core.backend import (
    BackendError,
    backend_name,
    dtype_kind,
    is_complex,
    is_foreign,
    is_inexact,
    namespace,
)
from .core.engine import run_backward
from .core.grad_mode import enable_grad, state
from .core.graph import Node
from .core.levels import alias, strip_level, tangent_of, with_tangent
from .core.tensor import Tensor, make_tensor
from .modes import batch as batch_mode
from .modes import batched_values as batching
from .modes.forward import forward_level
from .ops.elementwise import conj
from .ops.shape import astype, concatenate, moveaxis, reshape

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "hvp",
           "linearize"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


# ---- a minimal pytree: nested tuples, lists and dicts --------------------------------


def _flatten(tree: Any, leaves: list[Any]) -> Any:
    """Append the leaves of ``tree`` to ``leaves``; return its structure."""
    if isinstance(tree, (tuple, list)):
        return (type(tree), None, tuple(_flatten(c, leaves) for c in tree))
    if isinstance(tree, dict):
        keys = list(tree)
        if type(tree) is not OrderedDict:  # (an OrderedDict's order is part of it, as in JAX)
            try:
                keys = sorted(tree)
            except TypeError:
                pass
        return (type(tree), keys, tuple(_flatten(tree[k], leaves) for k in keys))
    leaves.append(tree)
    return None


def _tree_flatten(tree: Any) -> tuple[list[Any], Any]:
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves)


def _unflatten(structure: Any, leaves: Iterator[Any]) -> Any:
    if structure is None:
        return next(leaves)
    kind, keys, children = structure
    values = [_unflatten(c, leaves) for c in children]
    if kind is dict or kind is OrderedDict:
        return kind(zip(keys, values))
    if issubclass(kind, dict):  # another mapping type: its own, if it is built from pairs
        try:
            return kind(zip(keys, values))
        except TypeError:
            return dict(zip(keys, values))
    if kind is tuple or kind is list:
        return kind(values)
    if hasattr(kind, "_make"):  # a namedtuple
        return kind._make(values)
    return kind(values)


def _tree_unflatten(structure: Any, leaves: Sequence[Any]) -> Any:
    return _unflatten(structure, iter(leaves))


# ---- inputs and outputs ----------------------------------------------------------------


def _as_float_tensor(x: Any, fname: str, what: str) -> Tensor:
    """``x`` as a floating point or complex tensor (Python ints become float64)."""
    if state.tracer is not None:  # an array argument of a compiled function
        x = state.tracer.unwatch(x)
    if isinstance(x, Tensor) or is_foreign(x):  # (another library's array is kept)
        if not is_inexact(x._data if isinstance(x, Tensor) else x):
            raise TypeError(f"{fname}: {what} is a tensor of dtype {x.dtype}; only floating "
                            f"point and complex inputs can be differentiated. Convert it "
                            f"first, e.g. yaad.astype(x, float). (see docs/errors.md#integer-grad)")
        return x if isinstance(x, Tensor) else make_tensor(x)
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{fname}: {what} is a bool; only floating point and complex inputs "
                        f"can be differentiated.")
    if isinstance(x, int):
        x = float(x)
    a = np.asarray(x)
    if a.dtype.kind not in "fc":
        raise TypeError(f"{fname}: {what} has dtype {a.dtype}; only floating point and "
                        f"complex inputs can be differentiated. Convert it first, e.g. "
                        f"np.asarray(x, dtype=float). (see docs/errors.md#integer-grad)")
    return make_tensor(a)


def _active_tangents(x: Any) -> dict[Any, Any]:
    tans = getattr(x, "_tangents", None) if isinstance(x, Tensor) else None
    if not tans:
        return {}
    levels = state.levels
    return {lv: t for lv, t in tans.items() if lv in levels}


def _detached(x: Tensor) -> Tensor:
    """``x`` cut from the graph, keeping its active forward-mode tangents."""
    return make_tensor(x._data, tangents=_active_tangents(x))


# The leaves a reverse transform made for its inputs, once its function has been
# evaluated: from then on they are constants to every other computation. (A vjp_fn whose
# cotangent an enclosing transform differentiates records a graph that reaches them.)
_spent_leaves: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()  # by id


def _reaches_variable(tensors: Sequence[Any], own: set[Any]) -> bool:
    """Whether the graph of ``tensors`` reaches a tensor requiring grad that is neither in
    ``own`` (ids of nodes and leaves) nor a spent leaf of a transform."""
    stack = [t._node if t._node is not None else t for t in tensors
             if isinstance(t, Tensor) and t.requires_grad]
    seen = set()
    while stack:
        edge = stack.pop()
        if type(edge) is tuple:
            edge = edge[0]
        key = id(edge)
        if key in own or key in seen:
            continue
        seen.add(key)
        if type(edge) is not Node:
            if _spent_leaves.get(id(edge)) is not edge:
                return True  # a leaf of an enclosing computation
            continue
        stack.extend(p for p in edge.parents if p is not None)
    return False


def _export(x: Any, array_mode: bool) -> Any:
    """A result as the caller expects it: an array (0-d: a NumPy scalar) when the inputs
    were arrays and nothing outside needs the result's graph or tangents, else a tensor.
    (While yaad.compile records, the array is handed out watched.)"""
    rec = state.tracer
    if rec is not None:
        x = rec.unwatch(x)
    if isinstance(x, Tensor):
        if not array_mode or _active_tangents(x) or (
                x.requires_grad and _reaches_variable([x], set())):
            return x
        x = x._data
    elif not array_mode:
        return Tensor(x)  # (another library's array is kept as it is)
    if is_foreign(x):
        return x
    out = np.asarray(x)
    out = out[()] if out.ndim == 0 else out
    return out if rec is None else rec.hand_out(out, x)


def _array_mode(leaves: Sequence[Any]) -> bool:
    return not any(isinstance(x, Tensor) for x in leaves)


def _argnums(argnums: int | Sequence[int], nargs: int,
             fname: str) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer))
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else tuple(argnums)
    if not nums:
        raise ValueError(f"{fname}: argnums is empty; give at least one argument index")
    out = []
    for n in nums:
        if not isinstance(n, (int, np.integer)) or not -nargs <= n < nargs:
            raise ValueError(f"{fname}: argnums={argnums!r} does not index the "
                             f"{nargs} positional argument(s) of the call")
        out.append(int(n) % nargs)
    return tuple(out), single


def _bind(f: Callable[..., Any], args: tuple[Any, ...],
          nums: tuple[int, ...]) -> Callable[..., Any]:
    """``f`` as a function of the arguments at ``nums`` only, the others fixed."""
    def g(*diff: Any) -> Any:
        full = list(args)
        for n, d in zip(nums, diff):
            full[n] = d
        return f(*full)

    return g


def _split_aux(out: Any, fname: str) -> tuple[Any, ...]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{fname}: with has_aux=True the function must return a pair "
                        f"(output, aux), got {type(out).__name__}")
    return out[0], out[1]


def _check_outputs(leaves: Sequence[Any], fname: str) -> None:
    """Raise unless every output of the function is a tensor: a Python number, a NumPy
    array or scalar (``float(y)``, ``y.item()``, ``y.tolist()``, ``np.asarray(y)``) is a
    value read out of the computation, cut off from the inputs, and differentiating it
    would give zeros without a word (PyTorch's torch.func raises too). A tensor that does
    not depend on the inputs (a constant, ``y.detach()``) is fine: its derivative is 0."""
    for k, o in enumerate(leaves):
        if isinstance(o, Tensor):
            continue
        which = "the function's output" if len(leaves) == 1 else f"output {k} of the function"
        kind = type(o).__name__ if not hasattr(o, "dtype") else (
            f"{type(o).__module__.split('.')[0]}.{type(o).__name__} of dtype {o.dtype}")
        raise TypeError(
            f"{fname}: {which} is a {kind}, not a tensor: a value taken out of the "
            f"computation (float(y), y.item(), y.tolist(), np.asarray(y), math functions) "
            f"is cut off from the inputs, so its derivative would be lost. Return the tensor "
            f"itself (yaad/NumPy functions on tensors give tensors); for a constant output, "
            f"return yaad.tensor(value) (its derivative is zero). "
            f"(see docs/errors.md#output-not-a-tensor)")


@contextmanager
def _watched_conversions() -> Iterator[list[Any]]:
    """The conversions to Python values (``float(t)``, ``t.item()``, ``t.tolist()``,
    ``int(t)``, ``t.__index__()``, ...) of tensors that depend on the traced inputs, made
    while the body runs (see ``core.presentation.read_value``); a nested transform's count
    for the enclosing one too."""
    outer = state.conversions
    seen: list[Any] = []
    state.conversions = seen
    try:
        yield seen
    finally:
        state.conversions = outer
        if outer is not None:
            outer.extend(seen)


_CONVERSION = {"float": "float(t)", "int": "int(t)", "complex": "complex(t)",
               "item": "t.item()", "tolist": "t.tolist()", "index": "t.__index__() (an "
               "index, a slice, a shape or a count)", "bool": "bool(t) (an if or while on "
               "it)", "numpy": "t.numpy()"}


def _refuse_cut_gradient(seen: list[Any], fname: str) -> None:
    """Raise: the function's output does not depend on its inputs, and it converted a
    tensor that did to a Python value (``seen``), the likely cut."""
    kind, frames = seen[0]
    where = ""
    if frames:
        filename, line, function = frames[0]
        code = linecache.getline(filename, line).strip()
        where = f" at {filename}, line {line}, in {function}" + (f": `{code}`" if code else "")
    more = f" (and {len(seen) - 1} more)" if len(seen) > 1 else ""
    raise TypeError(
        f"{fname}: the function's output does not depend on its inputs, and the function "
        f"converted a tensor computed from them to a Python value: "
        f"{_CONVERSION.get(kind, kind)}{where}{more}. That conversion cuts the gradient "
        f"(it would be zeros without a word; JAX raises there too). Keep the value a "
        f"tensor (yaad and NumPy functions on tensors give tensors), or, if a constant is "
        f"meant, convert t.detach() (a constant output gives zeros). "
        f"(see docs/errors.md#output-not-a-tensor)")


def _reaches_inputs(tensors: Sequence[Any], own: set[Any]) -> bool:
    """Whether the graph of ``tensors`` reaches one of ``own`` (ids of nodes and leaves)."""
    stack = [t._node if t._node is not None else t for t in tensors
             if isinstance(t, Tensor) and t.requires_grad]
    seen = set()
    while stack:
        edge = stack.pop()
        if type(edge) is tuple:
            edge = edge[0]
        key = id(edge)
        if key in own:
            return True
        if key in seen:
            continue
        seen.add(key)
        if type(edge) is Node:
            stack.extend(p for p in edge.parents if p is not None)
    return False


def _zeros(like: Any) -> np.ndarray:
    data = like._data if isinstance(like, Tensor) else like
    if is_foreign(data):
        return namespace(data).zeros(data.shape, dtype=data.dtype)  # type: ignore[no-any-return]
    return np.zeros(np.shape(like), dtype=_dtype(like))


def _ones(like: Any) -> Any:
    data = like._data if isinstance(like, Tensor) else like
    if is_foreign(data):
        return namespace(data).ones(data.shape, dtype=data.dtype)
    return np.ones(np.shape(like), dtype=_dtype(like))


def _dtype(x: Any) -> np.dtype:
    dt = getattr(x, "dtype", None)
    return dt if dt is not None else np.asarray(x).dtype


# ---- reverse mode ------------------------------------------------------------------------


class _Reverse:
    """``f`` evaluated at ``primals`` (one positional argument each, pytrees allowed),
    ready for vector-Jacobian products."""

    def __init__(self, f: Callable[..., Any], primals: Sequence[Any], has_aux: bool,
                 fname: str) -> None:
        self.fname = fname
        leaves, self.in_tree = _tree_flatten(tuple(primals))
        self.array_mode = _array_mode(leaves)
        outer = state.enabled
        self.cut: list[Any] = []  # alias nodes linked to an enclosing graph
        self.fresh: list[Any] = []  # leaves made for inputs not linked to one
        with enable_grad(), _watched_conversions() as seen:
            self.inputs = [self._prepare(x, k, outer) for k, x in enumerate(leaves)]
            out = f(*_tree_unflatten(self.in_tree, self.inputs))
        _spent_leaves.update((id(t), t) for t in self.fresh)
        self.aux = None
        if has_aux:
            out, self.aux = _split_aux(out, fname)
        self.out = out
        self.out_leaves, self.out_tree = _tree_flatten(out)
        _check_outputs(self.out_leaves, fname)
        if seen and not _reaches_inputs(self.out_leaves, {
                id(t._node if t._node is not None else t) for t in self.inputs}):
            _refuse_cut_gradient(seen, fname)
        # Record the backward pass when an enclosing computation differentiates the
        # result: an input linked to an outer graph, or f closing over a tensor that
        # requires grad.
        self.create_graph = outer and (bool(self.cut) or self._external())

    def _prepare(self, x: Any, k: int, outer: bool) -> Tensor:
        t = _as_float_tensor(x, self.fname, f"input {k}")
        if t.requires_grad and outer:
            a = alias(t)
            self.cut.append(a._node)
            return batch_mode.expand(a)
        leaf = make_tensor(t._data, requires_grad=True)
        self.fresh.append(leaf)
        for level, tangent in _active_tangents(t).items():
            leaf = with_tangent(leaf, level, tangent)
        # Inside vmap, an input is given every batch axis (a copy per example), so that
        # its gradient is one per example, not their sum.
        return batch_mode.expand(leaf)

    def _external(self) -> bool:
        """Whether the outputs depend on a tensor requiring grad other than the inputs."""
        own = {id(t._node if t._node is not None else t) for t in self.inputs}
        return _reaches_variable(self.out_leaves, own)

    def check_cotangents(self, cotangents: Any) -> list[Any]:
        if self.out_tree is None and not isinstance(cotangents, (tuple, list, dict)):
            leaves = [cotangents]
        else:
            leaves, tree = _tree_flatten(cotangents)
            if tree != self.out_tree:
                raise ValueError(f"{self.fname}: the cotangents must have the structure of "
                                 f"the function's output")
        for k, (c, o) in enumerate(zip(leaves, self.out_leaves)):
            if np.shape(c) != np.shape(o):
                raise ValueError(f"{self.fname}: cotangent {k} has shape {np.shape(c)}, but "
                                 f"output {k} has shape {np.shape(o)}")
            if dtype_kind(_dtype(c)) == "c" and dtype_kind(_dtype(o)) != "c":
                raise TypeError(f"{self.fname}: cotangent {k} is complex, but output {k} is "
                                f"real ({_dtype(o)}); give a real cotangent")
        return leaves

    def linked(self, cot_leaves: Sequence[Any]) -> bool:
        """Whether the backward pass for these cotangents must be recorded: the function
        is linked to an enclosing graph, or a cotangent is differentiated by an enclosing
        transform (it requires grad, or carries a forward-mode tangent)."""
        if self.create_graph:
            return True
        for c in cot_leaves:
            if isinstance(c, Tensor) and ((c.requires_grad and state.enabled) or any(
                    not isinstance(t, batching.BatchAxis) for t in _active_tangents(c).values())):
                return True
        return False

    def pullback(self, cot_leaves: Sequence[Any], retain: bool,
                 create_graph: bool | None = None) -> list[Any]:
        """Gradients for every input leaf (zeros where the output does not depend on it).

        ``create_graph`` (default: whether the function is linked to an enclosing graph)
        records the backward pass, so the gradients can be differentiated again."""
        create = self.create_graph if create_graph is None else create_graph
        outs, cots = [], []
        for o, c in zip(self.out_leaves, cot_leaves):
            if isinstance(o, Tensor) and o.requires_grad:
                o, c = batch_mode.root(o, c)
                outs.append(o)
                cots.append(c)
        grads: list[Any] = [None] * len(self.inputs)
        if outs:
            # Cut the aliases from the enclosing graph meanwhile: the pass then stops at
            # the inputs instead of running (and freeing) the enclosing graph.
            saved = [n.parents for n in self.cut]
            for n in self.cut:
                n.parents = (None,) * len(n.parents)
            try:
                grads = cast("list[Any]",  # a list when capturing
                             run_backward(outs, cots, retain or create, create, self.inputs,
                                          capture=True, allow_unused=True))
            finally:
                for n, p in zip(self.cut, saved):
                    n.parents = p
        return [_zeros(x) if g is None else batching.like(g, x)
                for g, x in zip(grads, self.inputs)]

    def export(self, x: Any, keep_graph: bool | None = None) -> Any:
        keep = self.create_graph if keep_graph is None else keep_graph
        if isinstance(x, Tensor) and not keep and x.requires_grad:
            x = _detached(x)
        return _export(x, self.array_mode)

    def output(self) -> Any:
        return _tree_unflatten(self.out_tree, [self.export(o) for o in self.out_leaves])

    def aux_output(self) -> Any:
        leaves, tree = _tree_flatten(self.aux)
        return _tree_unflatten(tree, [self.export(a) for a in leaves])

    def gradients(self, grads: Sequence[Any], keep_graph: bool | None = None) -> tuple[Any, ...]:
        """One gradient per primal, each with the primal's structure."""
        out: tuple[Any, ...] = _tree_unflatten(self.in_tree,
                                               [self.export(g, keep_graph) for g in grads])
        return out


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """Evaluate ``f`` and return its vector-Jacobian product function.

    Parameters
    ----------
    f : callable
        A function of the primals returning an array, a tensor, or a pytree of them.
    *primals : array_like, Tensor or pytree
        The point, one positional argument of ``f`` each.
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; ``aux`` is returned as is, not differentiated.

    Returns
    -------
    tuple
        ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with ``has_aux``).
        ``vjp_fn(cotangents)`` takes cotangents with the structure of the output and
        returns a tuple with one gradient per primal: for ``L = Re(sum(conj(c) * f))``,
        ``dL/dx`` (``dL/dRe + 1j dL/dIm`` for a complex primal). It may be called
        several times.

    Examples
    --------
    >>> out, f_vjp = yaad.func.vjp(np.sin, np.array([0.0, 1.0]))
    >>> f_vjp(np.ones(2))
    (array([1.        , 0.54030231]),)
    """
    rev = _Reverse(f, primals, has_aux, "vjp")

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        # A cotangent that an enclosing transform differentiates (grad or jvp of vjp_fn,
        # HIPS autograd's second-order check) makes the pass recorded: the result is
        # linear in the cotangent, and that dependence must not be dropped.
        cots = rev.check_cotangents(cotangents)
        create = rev.linked(cots)
        return rev.gradients(rev.pullback(cots, retain=True, create_graph=create), create)

    if has_aux:
        return rev.output(), vjp_fn, rev.aux_output()
    return rev.output(), vjp_fn


def _scalar_loss(out: Any, fname: str) -> Any:
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f"{fname}: the function must return a real scalar, but returned a "
                        f"{type(out).__name__}. For several outputs use yaad.func.jacrev or "
                        f"yaad.func.vjp; for an extra output use has_aux=True.")
    shape, dtype = np.shape(out), _dtype(out)
    if int(np.prod(shape)) != 1:
        raise TypeError(f"{fname}: the function must return a real scalar, but returned an "
                        f"array of shape {shape}. For the derivative of a non-scalar "
                        f"function use yaad.func.jacrev (the Jacobian) or yaad.func.vjp (a "
                        f"vector-Jacobian product), or reduce the output (e.g. .sum()). "
                        f"(see docs/errors.md#grad-non-scalar)")
    if dtype_kind(dtype) == "c":
        raise TypeError(f"{fname}: the function returned a complex value ({dtype}); the "
                        f"gradient is defined for real-valued functions only. Differentiate "
                        f"a real loss (abs(z)**2, z.real), or use yaad.func.vjp or "
                        f"yaad.func.jacrev(..., holomorphic=True). "
                        f"(see docs/errors.md#grad-non-scalar)")
    if dtype_kind(dtype) != "f":
        raise TypeError(f"{fname}: the function returned a value of dtype {dtype}; a "
                        f"gradient needs a real floating point output.")
    return out


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """A function returning both ``f(*args)`` and its gradient.

    Parameters
    ----------
    f : callable
        A real scalar-valued function (``((value, aux))`` with ``has_aux``).
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate with respect to.
    has_aux : bool, optional
        ``f`` returns ``(value, aux)``.

    Returns
    -------
    callable
        ``(*args) -> (value, gradient)``, or ``((value, aux), gradient)`` with
        ``has_aux``. The gradient has the structure of the argument (a tuple of them
        for a tuple ``argnums``); for a complex argument it is ``df/dx + 1j df/dy``.
    """
    def wrapper(*args: Any) -> tuple[Any, ...]:
        nums, single = _argnums(argnums, len(args), "grad")
        rev = _Reverse(_bind(f, args, nums), [args[n] for n in nums], has_aux, "grad")
        out = _scalar_loss(rev.out, "grad")
        grads = rev.gradients(rev.pullback([_ones(out)],
                                           retain=False))
        value = rev.export(out)
        g = grads[0] if single else grads
        return ((value, rev.aux_output()), g) if has_aux else (value, g)

    wrapper.__name__ = f"value_and_grad({getattr(f, '__name__', 'f')})"
    wrapper.__doc__ = f"Value and gradient of {getattr(f, '__name__', 'f')}."
    return wrapper


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a real scalar-valued function, as a function.

    Parameters
    ----------
    f : callable
        Returns a real scalar tensor (one element). A Python number or NumPy value
        (``float(y)``, ``y.item()``) is cut off from the inputs and raises.
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate with respect to.
    has_aux : bool, optional
        ``f`` returns ``(value, aux)``; the result is then ``(gradient, aux)``.

    Returns
    -------
    callable
        ``(*args) -> gradient``, with the structure of the argument (a tuple of them for a
        tuple ``argnums``). For a complex argument ``z = x + iy`` the gradient is
        ``df/dx + 1j df/dy`` (so ``z - lr * g`` descends).

    Raises
    ------
    TypeError
        If ``f`` returns a non-scalar or complex value (use :func:`jacrev` or
        :func:`vjp`), or something that is not a tensor.

    Examples
    --------
    >>> yaad.func.grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
    array([2., 4.])
    >>> yaad.func.grad(yaad.func.grad(lambda x: x ** 3))(2.0)
    12.0
    """
    vg = value_and_grad(f, argnums, has_aux)

    def wrapper(*args: Any) -> Any:
        value, g = vg(*args)
        return (g, value[1]) if has_aux else g

    wrapper.__name__ = f"grad({getattr(f, '__name__', 'f')})"
    wrapper.__doc__ = f"Gradient of {getattr(f, '__name__', 'f')}."
    return wrapper


# ---- forward mode ----------------------------------------------------------------------

def _tangent_for(t: Any, x: Tensor, k: int, fname: str) -> Any:
    """The tangent ``t`` checked against its primal ``x`` and cast to its dtype."""
    if np.shape(t) != x.shape:
        raise ValueError(f"{fname}: tangent {k} has shape {np.shape(t)}, but primal {k} has "
                         f"shape {x.shape}")
    if is_foreign(t) or is_foreign(x._data):
        return _foreign_tangent(t, x, k, fname)
    dt = _dtype(t)
    if dt.kind == "c" and x.dtype.kind != "c":
        raise TypeError(f"{fname}: tangent {k} is complex, but primal {k} is real "
                        f"({x.dtype}); a real input moves along real directions only")
    if dt.kind not in "fc" and dt.kind not in "iub":
        raise TypeError(f"{fname}: tangent {k} has dtype {dt}")
    if dt != x.dtype:
        if isinstance(t, Tensor):
            return astype(t, x.dtype)
        return np.asarray(t, dtype=x.dtype)
    return t if isinstance(t, (Tensor, np.ndarray)) else np.asarray(t)  # a Python scalar


def _foreign_tangent(t: Any, x: Tensor, k: int, fname: str) -> Any:
    """:func:`_tangent_for` where the primal or the tangent is another library's array."""
    data = t._data if isinstance(t, Tensor) else t
    if backend_name(data) != backend_name(x._data):
        raise TypeError(f"{fname}: tangent {k} is a {backend_name(data)} array, but primal "
                        f"{k} is a {backend_name(x._data)} one; pass both of one backend")
    if is_complex(data) and not is_complex(x._data):
        raise TypeError(f"{fname}: tangent {k} is complex, but primal {k} is real "
                        f"({x.dtype}); a real input moves along real directions only")
    return t if t.dtype == x.dtype else astype(t, x.dtype)


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """Jacobian-vector product of ``f`` in one forward pass (forward mode).

    Parameters
    ----------
    f : callable
        A function of ``len(primals)`` positional arguments.
    primals : tuple or list
        The point: arrays, scalars, tensors or pytrees of them.
    tangents : tuple or list
        The direction, with the structure, shapes and dtypes of ``primals``.
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; ``aux`` is returned without tangent.

    Returns
    -------
    tuple
        ``(output, tangent_out)`` (``(output, tangent_out, aux)`` with ``has_aux``),
        ``tangent_out`` with the structure of the output: the directional derivative
        ``d/de f(primals + e * tangents)`` at ``e = 0`` (for complex inputs, along the
        complex direction, so a holomorphic ``f`` gives ``f'(z) * t``).

    Raises
    ------
    NotImplementedError
        When ``f`` uses an op without a JVP rule (the message names it).

    Examples
    --------
    >>> yaad.func.jvp(np.sin, (np.array([0.0]),), (np.array([2.0]),))
    (array([0.]), array([2.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (or lists) with one entry "
                        "per positional argument of f, e.g. jvp(f, (x,), (v,))")
    p_leaves, p_tree = _tree_flatten(tuple(primals))
    t_leaves, t_tree = _tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise ValueError("jvp: the tangents must have the same structure as the primals")
    array_mode = _array_mode(p_leaves + t_leaves)
    with forward_level() as level:
        duals = []
        for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            x = _as_float_tensor(p, "jvp", f"primal {k}")
            duals.append(with_tangent(x, level, _tangent_for(t, x, k, "jvp")))
        with _watched_conversions() as seen:
            out = f(*_tree_unflatten(p_tree, duals))
        aux = None
        if has_aux:
            out, aux = _split_aux(out, "jvp")
        o_leaves, o_tree = _tree_flatten(out)
        _check_outputs(o_leaves, "jvp")
        outs, touts = [], []
        found = []
        for o in o_leaves:
            t = tangent_of(o, level)
            found.append(t)
            o = strip_level(o, level)
            outs.append(_export(o, array_mode))
            touts.append(_export(_zeros(o) if t is None else t, array_mode))
        if seen and all(t is None for t in found):
            _refuse_cut_gradient(seen, "jvp")
        if has_aux:
            a_leaves, a_tree = _tree_flatten(aux)
            aux = _tree_unflatten(a_tree, [_export(strip_level(a, level), array_mode)
                                           for a in a_leaves])
    result = (_tree_unflatten(o_tree, outs), _tree_unflatten(o_tree, touts))
    return result + (aux,) if has_aux else result


def linearize(f: Callable[..., Any], *primals: Any) -> tuple[Any, ...]:
    """Evaluate ``f`` and return its linear approximation at ``primals`` (JAX's shape).

    Parameters
    ----------
    f : callable
        A function of ``len(primals)`` positional arguments.
    *primals : array_like, Tensor or pytree
        The point.

    Returns
    -------
    tuple
        ``(output, f_jvp)``: ``f_jvp(*tangents)`` returns the Jacobian-vector product,
        with the structure of the output. Each call runs ``f`` once in forward mode (no
        graph is kept between calls).
    """
    out, _ = jvp(f, primals, tuple(_zeros_tree(p) for p in primals))

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: f_jvp takes {len(primals)} tangent(s), one per "
                            f"primal, got {len(tangents)}")
        return jvp(f, primals, tangents)[1]

    return out, f_jvp


def _zeros_tree(tree: Any) -> Any:
    leaves, structure = _tree_flatten(tree)
    return _tree_unflatten(structure, [_zeros(_as_float_tensor(x, "linearize", "a primal"))
                                       for x in leaves])


# ---- Jacobians ----------------------------------------------------------------------------


def _basis(shape: tuple[Any, ...], dtype: np.dtype, scale: complex = 1) -> np.ndarray:
    """The unit vectors of arrays of ``shape``, stacked: shape ``(n,) + shape``."""
    n = math.prod(shape)
    eye = np.eye(n, dtype=dtype)
    if scale != 1:
        np.fill_diagonal(eye, scale)
    return eye.reshape((n,) + shape)


def _block(rows: Any, lead: tuple[Any, ...], trail: tuple[Any, ...], rows_first: bool) -> Any:
    """Stacked Jacobian rows (``(n,) + trail``) or columns (``(n,) + lead``) as the block
    of shape ``lead + trail``."""
    if not rows_first:
        rows = moveaxis(rows, 0, -1) if isinstance(rows, Tensor) else np.moveaxis(rows, 0, -1)
    if isinstance(rows, Tensor):
        return reshape(rows, lead + trail)
    return np.reshape(rows, lead + trail)


def _complex_pair_error(fname: str) -> ValueError:
    return ValueError(
        f"{fname}: the function has complex inputs and complex outputs; its derivative is a "
        f"single complex matrix only if it is holomorphic. Pass holomorphic=True if it is, "
        f"or split the output into real and imaginary parts. (see docs/errors.md#holomorphic)")


def _jac_structure(out_tree: Any, in_tree: Any, single: bool, blocks: list[Any]) -> Any:
    """Nest ``blocks[j][i]`` (output leaf j, input leaf i) as output tree of input trees."""
    per_out = []
    for row in blocks:
        it = iter(row)
        per_arg = [_unflatten(sub, it) for sub in in_tree[2]]
        per_out.append(per_arg[0] if single else tuple(per_arg))
    return _tree_unflatten(out_tree, per_out)


def jacrev(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of ``f`` by reverse mode: one evaluation of ``f``, then the
    vector-Jacobian products of all unit cotangents at once (:func:`vmap`).

    Parameters
    ----------
    f : callable
        Returns an array, a tensor or a pytree of them.
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate with respect to.
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``.
    holomorphic : bool, optional
        ``f`` is holomorphic in its complex inputs: return ``df/dz``.
    chunk_size : int, optional
        Compute at most this many rows at a time (less memory, more passes).

    Returns
    -------
    callable
        ``(*args) -> jacobian``. For an output of shape ``S`` and an input of shape ``T``
        the block has shape ``S + T``; a pytree output gives the same tree of blocks, each
        a tuple over ``argnums`` when it is a tuple. For a real-valued output of complex
        inputs, rows are gradients (``dy/dRe + 1j dy/dIm``), as :func:`grad` gives.
    """
    def wrapper(*args: Any) -> Any:
        nums, single = _argnums(argnums, len(args), "jacrev")
        rev = _Reverse(_bind(f, args, nums), [args[n] for n in nums], has_aux, "jacrev")
        complex_in = any(is_complex(x) for x in rev.inputs)
        if holomorphic and not all(is_complex(x) for x in rev.inputs):
            raise TypeError("jacrev: holomorphic=True needs complex inputs")
        outs = rev.out_leaves
        _refuse_foreign([*rev.inputs, *outs], "jacrev", _JACOBIAN_ROWS)
        cot_zeros = [_zeros(o) for o in outs]
        blocks = []
        for j, o in enumerate(outs):
            o_shape, o_dt = np.shape(o), _dtype(o)
            cplx = dtype_kind(o_dt) == "c"
            if cplx and complex_in and not holomorphic:
                raise _complex_pair_error("jacrev")

            def pull(e: Any, j: int = j) -> Any:
                cots = list(cot_zeros)
                cots[j] = e
                return rev.pullback(cots, retain=True)

            pulled = _vmap(pull, 0, 0, chunk_size, own=True)
            rows = pulled(_basis(o_shape, o_dt))
            if cplx and not holomorphic:  # real inputs: J = vjp(e) + i vjp(ie)
                rows = [a + 1j * b for a, b in zip(rows, pulled(_basis(o_shape, o_dt, 1j)))]
            elif holomorphic:
                rows = [_conj(r) for r in rows]
            blocks.append([rev.export(_block(r, o_shape, x.shape, True))
                           for r, x in zip(rows, rev.inputs)])
        jac = _jac_structure(rev.out_tree, rev.in_tree, single, blocks)
        return (jac, rev.aux_output()) if has_aux else jac

    wrapper.__name__ = f"jacrev({getattr(f, '__name__', 'f')})"
    wrapper.__doc__ = f"Jacobian of {getattr(f, '__name__', 'f')} (reverse mode)."
    return wrapper


def _conj(x: Any) -> Any:
    if dtype_kind(_dtype(x)) != "c":
        return x
    if isinstance(x, Tensor):
        return conj(x)
    return np.conj(x)


def jacfwd(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of ``f`` by forward mode: the Jacobian-vector products of all unit
    tangents at once (:func:`vmap`).

    Same parameters and result layout as :func:`jacrev`; cheaper than it when the inputs
    have fewer entries than the outputs. Needs a JVP rule for every op ``f`` uses.
    """
    def wrapper(*args: Any) -> Any:
        nums, single = _argnums(argnums, len(args), "jacfwd")
        leaves, in_tree = _tree_flatten(tuple(args[n] for n in nums))
        xs = [_as_float_tensor(x, "jacfwd", f"input {k}") for k, x in enumerate(leaves)]
        _refuse_foreign(xs, "jacfwd", _JACOBIAN_ROWS)
        if holomorphic and not all(is_complex(x) for x in xs):
            raise TypeError("jacfwd: holomorphic=True needs complex inputs")
        array_mode = _array_mode(leaves)
        g = _bind(f, args, nums)
        zeros = [_zeros(x) for x in xs]
        primals = _tree_unflatten(in_tree, leaves)
        out = aux = None
        cols: list[Any] = []  # cols[i]: the output leaves' tangents for the unit vectors of input i

        def push(t: Any, i: int) -> tuple[Any, Any, Any]:
            tans = list(zeros)
            tans[i] = t
            res = jvp(g, primals, _tree_unflatten(in_tree, tans), has_aux=has_aux)
            return res[0], _tree_flatten(res[1])[0], res[2] if has_aux else None

        for i, x in enumerate(xs):
            if not x.size:
                cols.append(None)
                continue
            batched = _vmap(push, (0, None), (None, 0, None), chunk_size, own=True)
            out, t_leaves, aux = batched(_basis(x.shape, x.dtype), i)
            if is_complex(x) and not holomorphic:
                # real outputs: the gradient convention, dy/dRe + 1j dy/dIm
                t2 = batched(_basis(x.shape, x.dtype, 1j), i)[1]
                for o in t_leaves:
                    if dtype_kind(_dtype(o)) == "c":
                        raise _complex_pair_error("jacfwd")
                t_leaves = [a + 1j * b for a, b in zip(t_leaves, t2)]
            cols.append(t_leaves)
        if out is None:  # no input entries at all
            out = g(*primals)
            if has_aux:
                out, aux = _split_aux(out, "jacfwd")
        o_leaves, o_tree = _tree_flatten(out)
        blocks = []
        for j, o in enumerate(o_leaves):
            o_shape = np.shape(o)
            blocks.append([_export(np.zeros(o_shape + x.shape, _dtype(o)) if cols[i] is None
                                   else _block(cols[i][j], o_shape, x.shape, False),
                                   array_mode)
                           for i, x in enumerate(xs)])
        jac = _jac_structure(o_tree, in_tree, single, blocks)
        return (jac, aux) if has_aux else jac

    wrapper.__name__ = f"jacfwd({getattr(f, '__name__', 'f')})"
    wrapper.__doc__ = f"Jacobian of {getattr(f, '__name__', 'f')} (forward mode)."
    return wrapper


def hessian(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
            holomorphic: bool = False) -> Callable[..., Any]:
    """The Hessian of a real scalar function: ``jacfwd(jacrev(f))`` (forward over reverse).

    Parameters
    ----------
    f : callable
        Returns a real scalar (complex with ``holomorphic=True``).
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate with respect to.
    holomorphic : bool, optional
        ``f`` is holomorphic in complex inputs: return the complex second derivative.

    Returns
    -------
    callable
        ``(*args) -> hessian``, of shape ``T + T`` for an input of shape ``T`` (nested
        tuples of blocks for a tuple ``argnums``).

    Raises
    ------
    TypeError
        For complex inputs without ``holomorphic``: the Hessian of a real function of
        complex variables is a real 2n x 2n matrix, not a complex one. Use :func:`hvp`,
        or pass real and imaginary parts as separate real arguments.
    """
    inner = jacrev(f, argnums, holomorphic=holomorphic)
    outer = jacfwd(inner, argnums, holomorphic=holomorphic)

    def wrapper(*args: Any) -> Any:
        if not holomorphic:
            nums, _ = _argnums(argnums, len(args), "hessian")
            for n in nums:
                _refuse_foreign(_tree_flatten(args[n])[0], "hessian", _JACOBIAN_ROWS)
                for x in _tree_flatten(args[n])[0]:
                    if dtype_kind(_dtype(x)) == "c":
                        raise TypeError(
                            "hessian: an input is complex; the Hessian of a real function "
                            "of complex variables is a real 2n x 2n matrix, not a complex "
                            "one. Use yaad.func.hvp (complex Hessian-vector products), or "
                            "pass the real and imaginary parts as separate real arguments "
                            "(or holomorphic=True for a holomorphic function).")
        return outer(*args)

    wrapper.__name__ = f"hessian({getattr(f, '__name__', 'f')})"
    wrapper.__doc__ = f"Hessian of {getattr(f, '__name__', 'f')}."
    return wrapper


def hvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, ...]:
    """Hessian-vector product of a real scalar function, forward over reverse.

    Costs about one gradient evaluation in forward mode, without forming the Hessian.

    Parameters
    ----------
    f : callable
        A real scalar-valued function of ``len(primals)`` positional arguments.
    primals : tuple or list
        The point.
    tangents : tuple or list
        The vector, with the structure of ``primals``.

    Returns
    -------
    tuple
        ``(value, hvp)``: ``f(*primals)`` and the derivative of the gradient along the
        tangents, with the structure of ``primals`` (one entry, not a tuple, for a single
        primal). For complex primals both gradient and direction use yaad's convention
        (``dRe + 1j dIm``), so the result is ``H @ v`` in that encoding.
    """
    if not isinstance(primals, (tuple, list)):
        raise TypeError("hvp: primals and tangents must be tuples, e.g. hvp(f, (x,), (v,))")
    nums = 0 if len(primals) == 1 else tuple(range(len(primals)))

    def value_grad(*args: Any) -> tuple[Any, Any]:
        value, g = value_and_grad(f, nums)(*args)
        return g, value

    _, h, value = jvp(value_grad, primals, tangents, has_aux=True)
    return value, h

# ---- vmap ----------------------------------------------------------------------------------


def _axes_for(prefix: Any, structure: Any, what: str) -> list[Any]:
    """The axis of each leaf of a tree (``structure`` from ``_flatten``), from ``prefix``:
    an int or None for a whole subtree, or a container matching the tree's."""
    if prefix is None or isinstance(prefix, (int, np.integer)):
        return [None if prefix is None else int(prefix)] * _count_leaves(structure)
    keys: Any
    kind, keys, children = structure if structure is not None else (None, None, ())
    if kind is dict and isinstance(prefix, dict) and sorted(prefix, key=str) == sorted(
            keys, key=str):
        parts = [prefix[k] for k in keys]
    elif (kind is not None and kind is not dict and isinstance(prefix, (tuple, list))
          and len(prefix) == len(children)):
        parts = list(prefix)
    else:
        raise ValueError(f"vmap: {what}={prefix!r} does not match the structure of the "
                         f"{'inputs' if what == 'in_axes' else 'outputs'}: give an int or "
                         f"None, or a tuple, list or dict shaped like them")
    return [a for p, c in zip(parts, children) for a in _axes_for(p, c, what)]


def _count_leaves(structure: Any) -> int:
    return 1 if structure is None else sum(_count_leaves(c) for c in structure[2])


def vmap(func: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, *,
         randomness: str = "error", chunk_size: int | None = None, in_dims: Any = None,
         out_dims: Any = None) -> Callable[..., Any]:
    """Vectorize ``func`` over an axis of its inputs: ``func`` is written for one example
    and runs once on the whole batch.

    Inside, tensors look like one example (``x.shape`` leaves the batch axis out), and
    each op runs on the whole batch by its batching rule (an op without one runs once per
    example, with a :class:`BatchingWarning`). ``vmap`` composes with itself and with
    :func:`grad`, :func:`vjp`, :func:`jvp`, :func:`jacrev`, :func:`jacfwd` and
    :func:`hessian`, in any order: ``vmap(grad(loss), in_axes=(None, 0, 0))`` gives
    per-example gradients.

    Parameters
    ----------
    func : callable
        A function of one example; returns arrays, tensors, or pytrees of them.
    in_axes : int, None, or a tuple with one entry per positional argument
        The batch axis of each input (None: the same value for every example). An entry
        may itself be a tuple, list or dict matching the argument's structure.
    out_axes : int, None, or a pytree prefix of the output
        Where the batch axis goes in each output (None: the output must not depend on
        the example).
    randomness : {"error", "same", "different"}
        What a random draw inside does (``yaad.rand``, ``yaad.randn`` without a fixed
        seed, ``yaad.nn.functional.dropout``): raise (the default, as in torch.func), draw
        once for all examples, or draw for each example (as a loop would).
    chunk_size : int, optional
        Run at most this many examples at a time (less memory; the results are joined).
    in_dims : optional
        torch.func's names for ``in_axes`` and ``out_axes`` (the same meaning).
    out_dims : optional
        torch.func's names for ``in_axes`` and ``out_axes`` (the same meaning).

    Returns
    -------
    callable
        Takes the batched arguments; returns ``func``'s outputs with a batch axis.
        Arrays in, arrays out (as for the other transforms).

    Raises
    ------
    ValueError
        When the mapped axes have different lengths, or none is mapped.
    RuntimeError
        A random draw inside with ``randomness="error"``.

    Examples
    --------
    >>> yaad.func.vmap(lambda x: x @ x)(np.arange(6.0).reshape(2, 3))
    array([ 5., 50.])
    """
    if randomness not in batching.RANDOMNESS:
        raise ValueError(f"vmap: randomness={randomness!r}; use one of {batching.RANDOMNESS}")
    if in_dims is not None:
        if in_axes != 0:
            raise TypeError("vmap: give in_axes= or torch.func's in_dims=, not both")
        in_axes = in_dims
    if out_dims is not None:
        if out_axes != 0:
            raise TypeError("vmap: give out_axes= or torch.func's out_dims=, not both")
        out_axes = out_dims
    return _vmap(func, in_axes, out_axes, chunk_size, own=False, randomness=randomness)


def _vmap(func: Callable[..., Any], in_axes: Any, out_axes: Any, chunk_size: int | None,
          own: bool, randomness: str = "same") -> Callable[..., Any]:
    """:func:`vmap`; ``own``: the batch is a transform's own unit vectors (see
    ``batch_mode.batch_level``)."""
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                   or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")

    def wrapper(*args: Any) -> Any:
        leaves, tree = _tree_flatten(args)
        _refuse_foreign(leaves, "yaad.func.vmap", "Loop over the examples (each call runs "
                        "on {library}), write the function for the whole batch")
        axes = _axes_for(tuple(in_axes) if isinstance(in_axes, list) else in_axes, tree,
                         "in_axes")
        size, axes = _batch_size(leaves, axes)
        array_mode = _array_mode(leaves)
        if chunk_size is None or size <= chunk_size:
            return _vmapped(func, leaves, tree, axes, out_axes, size, array_mode, own,
                            randomness)
        parts = []
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            chunk = [x if a is None else x[(slice(None),) * a + (slice(start, stop),)]
                     for x, a in zip(leaves, axes)]
            parts.append(_vmapped(func, chunk, tree, axes, out_axes, stop - start, array_mode,
                                  own, randomness))
        return _join_chunks(parts, out_axes)

    wrapper.__name__ = f"vmap({getattr(func, '__name__', 'f')})"
    wrapper.__doc__ = f"{getattr(func, '__name__', 'f')} vectorized over a batch axis."
    return wrapper


def _batch_size(leaves: list[Any], axes: list[Any]) -> tuple[int, list[Any]]:
    """The common length of the mapped axes, and the axes made non-negative."""
    size: int | None
    first: Any  # (input, axis) of the first mapped axis
    norm: list[int | None]
    size, first, norm = None, None, []
    for k, (x, a) in enumerate(zip(leaves, axes)):
        if a is None:
            norm.append(None)
            continue
        shape = np.shape(x)
        if not -len(shape) <= a < len(shape):
            raise ValueError(f"vmap: in_axes gives axis {a} for input {k}, which has shape "
                             f"{shape}")
        a %= len(shape)
        norm.append(a)
        if size is None:
            size, first = shape[a], (k, a)
        elif shape[a] != size:
            raise ValueError(f"vmap: the mapped axes have different lengths: input "
                             f"{first[0]} has {size} along axis {first[1]}, input {k} has "
                             f"{shape[a]} along axis {a}")
    if size is None:
        raise ValueError("vmap: no input is mapped (in_axes is None for all of them); map "
                         "at least one")
    return size, norm


# (a Jacobian is built by vmap over unit vectors)
_JACOBIAN_ROWS = "Take the Jacobian's rows one at a time with yaad.func.vjp (it runs on {library})"


def _refuse_foreign(values: Sequence[Any], fname: str, hint: str) -> None:
    """Raise naming the library if one of ``values`` (tensors or arrays) is another
    library's array: vmap's batching rules run NumPy code, and it converts nothing.
    ``hint`` (with ``{library}``) says what to do instead."""
    for v in values:
        d = v._data if isinstance(v, Tensor) else v
        if is_foreign(d):
            library = backend_name(d)
            raise BackendError(
                f"{fname}: no batching for arrays of backend {library} (shape "
                f"{tuple(d.shape)}): vmap's batching rules run NumPy code. "
                f"{hint.format(library=library)}, or move the inputs with t.to('numpy') "
                f"(see docs/backends.md).")


def _vmapped(func: Callable[..., Any], leaves: list[Any], tree: Any, axes: list[Any],
             out_axes: Any, size: int, array_mode: bool, own: bool, randomness: str) -> Any:
    with batch_mode.batch_level(size, own, randomness) as level:
        inputs = [x if a is None else batching.mark(
            x if isinstance(x, Tensor) else make_tensor(np.asarray(x)), level, a)
            for x, a in zip(leaves, axes)]
        out = func(*_tree_unflatten(tree, inputs))
        o_leaves, o_tree = _tree_flatten(out)
        results = []
        for k, (o, a) in enumerate(zip(o_leaves, _axes_for(out_axes, o_tree, "out_axes"))):
            if _not_a_value(o):  # None or a string: the same object for every example
                results.append(o)
                continue
            if a is None:
                if batching.involves(o, level):
                    raise ValueError(f"vmap: out_axes is None for output {k}, but it differs "
                                     f"from example to example; give it an axis")
                results.append(o)
                continue
            nd = np.ndim(o) + 1
            if not -nd <= a < nd:
                raise ValueError(f"vmap: out_axes gives axis {a} for output {k}, which has "
                                 f"{nd} axes with the batch axis")
            results.append(batch_mode.strip(o, level, size, a % nd)[0])
    return _tree_unflatten(o_tree, [r if _not_a_value(r) else _export(r, array_mode)
                                    for r in results])


def _not_a_value(o: Any) -> bool:
    """An output of a vmapped function that is no array: returned as it is (JAX returns a
    None so; PyTorch refuses both, which breaks functions that return a label or None)."""
    return o is None or isinstance(o, (str, bytes))


def _join_chunks(parts: list[Any], out_axes: Any) -> Any:
    trees = [_tree_flatten(p) for p in parts]
    structure = trees[0][1]
    joined = []
    for k, a in enumerate(_axes_for(out_axes, structure, "out_axes")):
        pieces = [t[0][k] for t in trees]
        joined.append(pieces[0] if a is None or _not_a_value(pieces[0])
                      else concatenate(pieces, axis=a))
    return _tree_unflatten(structure, joined)


BatchingWarning = batching.BatchingWarning
__all__ += ["vmap", "BatchingWarning"]

from .implicit import ConvergenceError, fixed_point, root  # noqa: E402  (implicit diff.)

__all__ += ["fixed_point", "root", "ConvergenceError"]
