"""``yaad.optimize.minimize``: SciPy's optimisers driven by yaad gradients.

The parameters may be an array, a tensor, a number, or a (nested) dict/list/tuple of
them, real or complex. SciPy sees one flat float64 vector: complex entries as (real,
imaginary) pairs, whose gradient is exactly yaad's ``dL/dx + 1j dL/dy`` split in two.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy  # (scipy.optimize is imported where first used)

from .autograd import grad as _grad
from .core.arguments import no_derivative
from .core.grad_mode import enable_grad, no_grad, state
from .core.tensor import Tensor
from .implicit import Closure

# Methods that use a Hessian-vector product, and those that need the whole Hessian.
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS = {"dogleg", "trust-exact"}
_NO_GRADIENT = {"nelder-mead", "powell", "cobyla", "cobyqa"}


class _Layout:
    """How the leaves of a parameter structure map to a flat real vector."""

    def __init__(self, x0: Any) -> None:
        self.leaves: list[tuple[tuple[int, ...], np.dtype, str]] = []  # shape, dtype, kind
        self.tree = self._scan(x0)
        sizes = [int(np.prod(s)) * (2 if d.kind == "c" else 1) for s, d, _ in self.leaves]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.size = int(self.offsets[-1])

    def _scan(self, x: Any) -> Any:
        if isinstance(x, dict):
            return {k: self._scan(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(self._scan(v) for v in x)
        kind = ("tensor" if isinstance(x, Tensor) else "array" if isinstance(x, np.ndarray)
                else "scalar")
        a = np.asarray(x.data if isinstance(x, Tensor) else x)
        if a.dtype.kind not in "fc":
            if a.dtype.kind not in "biu":
                raise TypeError(f"minimize: x0 has a leaf of dtype {a.dtype}; parameters "
                                f"must be numbers (real or complex)")
            a = a.astype(np.float64)
        self.leaves.append((a.shape, a.dtype, kind))
        return len(self.leaves) - 1

    def flatten(self, values: list[Any]) -> np.ndarray:
        """Leaf arrays (or None for zeros) -> the flat float64 vector."""
        out = np.zeros(self.size)
        for i, v in enumerate(values):
            if v is None:
                continue
            v = np.asarray(v.data if isinstance(v, Tensor) else v)
            if v.dtype.kind == "c":
                v = np.stack([v.real, v.imag], axis=-1)
            out[self.offsets[i]:self.offsets[i + 1]] = v.reshape(-1)
        return out

    def split(self, vec: np.ndarray) -> list[np.ndarray]:
        """The flat vector -> leaf arrays in their dtypes."""
        leaves = []
        for i, (shape, dtype, _) in enumerate(self.leaves):
            chunk = vec[self.offsets[i]:self.offsets[i + 1]]
            if dtype.kind == "c":
                pairs = chunk.reshape(shape + (2,))
                leaves.append((pairs[..., 0] + 1j * pairs[..., 1]).astype(dtype))
            else:
                leaves.append(chunk.reshape(shape).astype(dtype))
        return leaves

    def build(self, leaves: list[Any], as_input: bool = False) -> Any:
        """The structure of x0 with ``leaves`` in place; ``as_input``: of the original kinds
        (tensor, array, Python number), else as given."""
        def fill(node: Any) -> Any:
            if isinstance(node, dict):
                return {k: fill(v) for k, v in node.items()}
            if isinstance(node, (list, tuple)):
                return type(node)(fill(v) for v in node)
            leaf = leaves[node]
            if not as_input:
                return leaf
            kind = self.leaves[node][2]
            return Tensor(leaf) if kind == "tensor" else leaf.item() if kind == "scalar" else leaf

        return fill(self.tree)


def _scalar_loss(value: Any) -> Any:
    data = value.data if isinstance(value, Tensor) else np.asarray(value)
    if data.size != 1 or data.dtype.kind not in "fiub":
        raise ValueError(f"minimize: the objective must return a real scalar, got shape "
                         f"{data.shape} and dtype {data.dtype}; reduce it (e.g. .sum()) or "
                         f"take .real")
    return value


@no_derivative("x0", "args", why="the result is SciPy's, not recorded: for the "
               "derivative of a minimizer, solve its gradient with yaad.func.root")
def minimize(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (), method: str = "L-BFGS-B",
             bounds: Any = None, constraints: Any = (), tol: float | None = None,
             callback: Callable[[Any], Any] | None = None, options: dict[str, Any] | None = None
             ) -> scipy.optimize.OptimizeResult:
    """Minimise a real scalar function of real or complex parameters with SciPy.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args)`` returning a real scalar (a yaad tensor); ``x`` has the structure
        of ``x0`` with tensors as leaves.
    x0 : array_like, Tensor, number, or dict/list/tuple of them
        The starting point (not modified). Integer leaves are treated as float64.
    args : tuple
        Extra arguments for ``fun``.
    method : str
        Any method of ``scipy.optimize.minimize``. Gradients come from yaad; methods that
        use Hessian-vector products (Newton-CG, trust-ncg, trust-krylov, trust-constr)
        or whole Hessians (dogleg, trust-exact) get them by differentiating twice.
    bounds : optional
        Passed to SciPy. They refer to the flat real vector: leaves in order, each
        flattened, complex entries as (real, imaginary) pairs.
    constraints : optional
        Passed to SciPy. They refer to the flat real vector: leaves in order, each
        flattened, complex entries as (real, imaginary) pairs.
    tol : float or None, optional
        Passed to SciPy. They refer to the flat real vector: leaves in order, each
        flattened, complex entries as (real, imaginary) pairs.
    options : dict or None, optional
        Passed to SciPy. They refer to the flat real vector: leaves in order, each
        flattened, complex entries as (real, imaginary) pairs.
    callback : callable, optional
        Called as ``callback(x)`` after each iteration, ``x`` in the structure of ``x0``;
        raise ``StopIteration`` to stop early.

    Returns
    -------
    scipy.optimize.OptimizeResult
        SciPy's result; ``x`` (and ``jac``, when present) in the structure, kinds and
        dtypes of ``x0``.
    """
    layout = _Layout(x0)
    start = layout.flatten(_leaf_values(x0))
    name = method.lower() if isinstance(method, str) else ""

    def tensors(vec: np.ndarray, requires_grad: bool) -> list[Tensor]:
        return [Tensor(a, requires_grad=requires_grad) for a in layout.split(vec)]

    closure = Closure(fun, "optimize.minimize")

    def refuse_captured() -> None:
        if not closure.found:
            return
        t = closure.captured[0]
        raise TypeError(
            f"optimize.minimize: fun uses a tensor that requires grad from outside "
            f"(shape {tuple(t.shape)}, {t.dtype}), but minimize has no derivative with "
            f"respect to it (the result is SciPy's, not recorded), so its gradient would "
            f"be lost. Detach it inside fun (t.detach()) if no gradient is wanted; for "
            f"the derivative of a minimizer, solve its gradient with yaad.implicit.root. "
            f"(see docs/errors.md#no-derivative)")

    # every call of fun is checked (a tensor used only on a branch taken later too), where
    # a gradient is being recorded
    watching = state.enabled
    if watching:
        closure.discover(layout.build(tensors(start, False)), *args)
        refuse_captured()

    def loss_of(leaves: list[Tensor]) -> Any:
        body: Callable[[], Any] = lambda: _scalar_loss(  # noqa: E731
            fun(layout.build(leaves), *args))
        if not watching:
            with enable_grad():
                return body()
        loss = closure.watch(body, known=leaves)
        refuse_captured()
        return loss

    def value_and_grad(vec: np.ndarray) -> tuple[float, np.ndarray]:
        leaves = tensors(vec, True)
        loss = loss_of(leaves)
        with enable_grad():
            if not (isinstance(loss, Tensor) and loss.requires_grad):
                return float(np.real(_data(loss))), np.zeros(layout.size)
            grads = _grad(loss, leaves, allow_unused=True)
        return float(loss.data), layout.flatten(list(grads))

    def value(vec: np.ndarray) -> float:
        body: Callable[[], Any] = lambda: _scalar_loss(  # noqa: E731
            fun(layout.build(tensors(vec, False)), *args))
        if watching:
            loss = closure.watch(body)
            refuse_captured()
        else:
            with no_grad():
                loss = body()
        return float(np.real(_data(loss)))

    def hessp(vec: np.ndarray, p: np.ndarray) -> np.ndarray:
        leaves = tensors(vec, True)
        loss = loss_of(leaves)
        with enable_grad():
            if not (isinstance(loss, Tensor) and loss.requires_grad):
                return np.zeros(layout.size)
            grads = _grad(loss, leaves, create_graph=True, allow_unused=True)
            # <gradient, p> over the real pairs = sum Re(conj(g) * p) per leaf.
            inner: float | Tensor = 0.0
            for g, d in zip(grads, layout.split(p)):
                if g is not None and isinstance(g, Tensor):
                    inner = inner + ((g.conj() * d).real if d.dtype.kind == "c"
                                     else g * d).sum()
            if not isinstance(inner, Tensor) or not inner.requires_grad:
                return np.zeros(layout.size)
            return layout.flatten(list(_grad(inner, leaves, allow_unused=True)))

    def hess(vec: np.ndarray) -> np.ndarray:
        return np.stack([hessp(vec, e) for e in np.eye(layout.size)], axis=1)

    kwargs: dict[str, Any] = {}
    if name in _NO_GRADIENT:
        objective: Callable[[np.ndarray], Any] = value
    else:
        objective = value_and_grad
        kwargs["jac"] = True
        if name in _HESSP:
            kwargs["hessp"] = hessp
        elif name in _HESS:
            kwargs["hess"] = hess
    if callback is not None:
        def wrapped(intermediate_result: scipy.optimize.OptimizeResult) -> None:
            callback(layout.build(layout.split(intermediate_result.x), as_input=True))

        kwargs["callback"] = wrapped
    if constraints:
        kwargs["constraints"] = constraints
    result = scipy.optimize.minimize(objective, start, method=method, bounds=bounds, tol=tol,
                                     options=options, **kwargs)
    result.x = layout.build(layout.split(np.asarray(result.x)), as_input=True)
    jac = result.get("jac")
    if jac is not None and np.shape(jac) == (layout.size,):
        result.jac = layout.build(layout.split(np.asarray(jac)), as_input=True)
    return result


def _data(x: Any) -> Any:
    return x.data if isinstance(x, Tensor) else np.asarray(x)


def _leaf_values(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [v for k in x for v in _leaf_values(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _leaf_values(item)]
    return [_data(x)]


__all__ = ["minimize"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
