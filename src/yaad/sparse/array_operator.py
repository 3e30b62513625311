"""An operator as the solvers of ``yaad.sparse.linalg`` use it: products with arrays, its
adjoint, and the VJP with respect to the tensors it depends on.

It sits below both :mod:`yaad.sparse.tensor` (``SparseTensor.scipy_operator`` wraps a
matrix-free tensor in it) and :mod:`yaad.sparse.linalg` (every solver runs on one).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse.linalg as spla

from ..core.grad_mode import enable_grad, no_grad
from ..implicit import Closure, data_of, leaf, local, vjp_of


class ArrayOperator:
    """An operator as the solvers use it: products on arrays (no graph), its adjoint, the
    tensors it depends on, and the VJP of ``theta -> A(theta) V``.

    ``s`` is a :class:`~yaad.sparse.SparseTensor` (anything with ``@``, ``shape``,
    ``dtype``, ``mH`` and ``to_scipy``); ``name`` names the solver in errors.
    """

    def __init__(self, s: Any, name: str) -> None:
        self.name = name
        self.s = s
        self.shape: tuple[int, ...] = s.shape
        self.dtype = s.dtype
        self.closure = Closure(lambda v: self.s @ v, name)
        self.closure.discover(np.zeros(self.shape[1], self.dtype))
        self.inputs = self.closure.captured
        # Whether the user gave the operator as a yaad tensor: the results are then tensors
        # (set by the solvers; a SciPy operator in, arrays out).
        self.given_tensor = False
        self._adjoint_graph: tuple[Any, Any] | None = None

    def square(self) -> int:
        n, m = self.shape
        if n != m:
            raise ValueError(f"{self.name}: the operator must be square, not {self.shape}")
        return n

    def mv(self, v: np.ndarray) -> np.ndarray:
        """``A v`` for arrays ``(n,)`` or ``(n, m)``; every product is checked for a tensor
        requiring grad that the first one (at zeros) did not use: refused, as its gradient
        would be lost."""
        out = self.closure.watch(lambda: self.s @ v)
        if self.closure.grew:
            t = self.closure.captured[-1]
            raise TypeError(
                f"{self.name}: the operator uses a tensor that requires grad (shape "
                f"{tuple(t.shape)}, {t.dtype}) in a product with some vectors but not in its "
                f"first one (at zeros), so the solver's result would miss its gradient. "
                f"Make the operator use it on every product (a branch on the vector's "
                f"values: yaad.where), or detach it if no gradient is wanted")
        return np.asarray(data_of(out))

    def rmv(self, u: np.ndarray) -> np.ndarray:
        """``A^H u`` for arrays ``(n,)`` or ``(n, m)``."""
        try:
            adj = self.s.mH
        except NotImplementedError:  # a function without rmatvec: the VJP of matvec
            if np.ndim(u) == 2:
                return np.stack([self.rmv(u[:, j]) for j in range(u.shape[1])], axis=1)
            if self._adjoint_graph is None:
                x = leaf(np.zeros(self.shape[1], np.result_type(self.dtype, u.dtype)))
                with enable_grad():
                    self._adjoint_graph = (x, self.s @ x)
            x, y = self._adjoint_graph
            return np.asarray(vjp_of([y], [x], [u], True, False)[0])
        with no_grad():
            return np.asarray(data_of(adj @ u))

    def scipy(self, dtype: Any = None) -> spla.LinearOperator:
        """A SciPy LinearOperator over arrays."""
        dt = np.result_type(self.dtype, dtype if dtype is not None else self.dtype)
        return spla.LinearOperator(self.shape, matvec=self.mv, rmatvec=self.rmv,
                                   matmat=self.mv, rmatmat=self.rmv, dtype=dt)

    def sparse(self) -> Any:
        """The SciPy sparse matrix of the current values, or None (matrix-free)."""
        try:
            return self.s.to_scipy()
        except (TypeError, NotImplementedError):
            return None

    def vjp(self, v: np.ndarray, ybar: np.ndarray, inputs: tuple[Any, ...]) -> list[Any]:
        """The gradients of ``inputs`` (the captured tensors, as arrays) for
        ``Re <ybar, A(theta) v>``."""
        leaves = [leaf(a) for a in inputs]
        y = self.closure.call(lambda: self.s @ v, leaves)
        return vjp_of([y], leaves, [ybar], False, False)

    def vjp_recorded(self, v: Any, ybar: Any, inputs: tuple[Any, ...]) -> list[Any]:
        """:meth:`vjp` as yaad operations (``create_graph=True``): differentiable in ``v``,
        ``ybar`` and the inputs (tensors linked into the graph)."""
        with enable_grad():
            locals_ = [local(a) for a in inputs]
            y = self.closure.call(lambda: self.s @ v, locals_)
            return vjp_of([y], locals_, [ybar], True, True)

    def check_hermitian(self) -> None:
        """Raise if random probes show that the operator is not Hermitian."""
        n = self.square()
        rng = np.random.default_rng(0)
        u, v = rng.standard_normal((2, n))
        if self.dtype.kind == "c":
            u = u + 1j * rng.standard_normal(n)
            v = v + 1j * rng.standard_normal(n)
        au, av = self.mv(u), self.mv(v)
        left, right = np.vdot(u, av), np.vdot(au, v)
        scale = np.linalg.norm(au) * np.linalg.norm(v) + np.linalg.norm(av) * np.linalg.norm(u)
        if abs(left - right) > 1e-10 * scale:
            raise ValueError(
                f"{self.name}: the operator is not Hermitian: for random vectors u, v, "
                f"<u, A v> = {left:.6g} but <A u, v> = {right:.6g}. Use "
                f"yaad.sparse.linalg.eigs for a general operator, or symmetrize it "
                f"((A + A^H) / 2).")
