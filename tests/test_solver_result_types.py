"""Every solver of ``yaad.sparse.linalg``, ``yaad.integrate``, ``yaad.optimize`` and
``yaad.implicit`` returns yaad tensors when it is given yaad tensors, whether or not they
require grad (``eigsh`` of a SparseTensor returned NumPy arrays unless a tensor required
grad), and the values SciPy computes. The table below must name every public function of
those modules: a new solver without a case fails ``test_every_solver_has_a_case``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si
import scipy.optimize as so
import scipy.sparse as sps
import scipy.sparse.linalg as spla

import yaad
from yaad import implicit, integrate, optimize
from yaad.core.tensor import Tensor
from yaad.sparse import linalg as sl

H = np.diag(np.arange(1.0, 9.0)) + 0.1 * (np.eye(8, k=1) + np.eye(8, k=-1))
B = np.linspace(1.0, 2.0, 8)
C = 0.5

OPERATORS = {  # the forms of a yaad operator, none requiring grad
    "dense tensor": lambda: yaad.tensor(H),
    "SparseTensor": lambda: yaad.sparse.asarray(sps.csr_array(H)),
    "LinearOperator of a function": lambda: sl.LinearOperator((8, 8), lambda v: yaad.tensor(H) @ v),
}


def _eigsh_values(A):
    return sl.eigsh(A, k=2, which="LA", return_eigenvectors=False)


# name -> (call with yaad tensors, SciPy's values, does it take every operator form)
SPARSE = {
    "eigsh": (lambda A: sl.eigsh(A, k=2, which="LA")[0],
              lambda: spla.eigsh(H, k=2, which="LA")[0], True),
    "eigs": (lambda A: yaad.sort(yaad.real(sl.eigs(A, k=2, which="LR")[0])),
             lambda: np.sort(spla.eigs(H, k=2, which="LR")[0].real), True),
    "expm_multiply": (lambda A: sl.expm_multiply(A, yaad.tensor(B)),
                      lambda: spla.expm_multiply(H, B), True),
    "cg": (lambda A: sl.cg(A, yaad.tensor(B), rtol=1e-12)[0], lambda: np.linalg.solve(H, B), True),
    "minres": (lambda A: sl.minres(A, yaad.tensor(B), rtol=1e-12)[0],
               lambda: np.linalg.solve(H, B), True),
    "gmres": (lambda A: sl.gmres(A, yaad.tensor(B), rtol=1e-12)[0],
              lambda: np.linalg.solve(H, B), True),
    "spsolve": (lambda A: sl.spsolve(A, yaad.tensor(B)), lambda: np.linalg.solve(H, B), False),
}
_T = np.linspace(0.0, 1.0, 3)
OTHERS = {  # name -> (call with yaad tensors (none requiring grad), SciPy's values)
    "integrate.odeint": (lambda: integrate.odeint(lambda y, t, c: -c * y, yaad.tensor([1.0, 2.0]),
                                                  _T, yaad.tensor(C)),
                         lambda: si.odeint(lambda y, t: -C * y, [1.0, 2.0], _T, rtol=1e-12)),
    "integrate.solve_ivp": (lambda: integrate.solve_ivp(
        lambda t, y, c: -c * y, (0.0, 1.0), yaad.tensor([1.0, 2.0]), t_eval=_T,
        args=(yaad.tensor(C),)).y, lambda: np.exp(-C * _T) * np.array([[1.0], [2.0]])),
    "optimize.minimize": (lambda: optimize.minimize(
        lambda x, c: yaad.sum((x - c) ** 2), yaad.tensor([1.0, 2.0]), args=(yaad.tensor(C),)).x,
        lambda: so.minimize(lambda x: np.sum((x - C) ** 2), [1.0, 2.0]).x),
    "implicit.fixed_point": (lambda: implicit.fixed_point(
        lambda x, c: c * yaad.cos(x), yaad.tensor(1.0), yaad.tensor(C)),
        lambda: so.fixed_point(lambda x: C * np.cos(x), 1.0, xtol=1e-14)),
    "implicit.root": (lambda: implicit.root(lambda x, c: x ** 3 - c, yaad.tensor(1.0),
                                            yaad.tensor(C)),
                      lambda: so.brentq(lambda x: x ** 3 - C, 0.0, 1.0, xtol=1e-15)),
}
NOT_SOLVERS = {"sparse.linalg.LinearOperator", "sparse.linalg.aslinearoperator",
               "sparse.linalg.ConvergenceError", "sparse.linalg.GaugeError",
               "implicit.ConvergenceError"}


def test_every_solver_has_a_case():
    named = {f"sparse.linalg.{n}" for n in sl.__all__} | {
        f"{m.__name__.removeprefix('yaad.')}.{n}" for m in (integrate, optimize, implicit)
        for n in m.__all__}
    covered = {f"sparse.linalg.{n}" for n in SPARSE} | set(OTHERS) | NOT_SOLVERS
    assert named == covered


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for item in x for y in _leaves(item)]
    return [x]


@pytest.mark.parametrize("solver, form", [  # (spsolve takes a sparse matrix only)
    (s, f) for s in SPARSE for f in OPERATORS if SPARSE[s][2] or f == "SparseTensor"])
def test_sparse_solvers_return_tensors(solver, form):
    call, oracle, _ = SPARSE[solver]
    out = call(OPERATORS[form]())
    for leaf in _leaves(out):
        assert isinstance(leaf, Tensor), (solver, form, type(leaf))
        assert not leaf.requires_grad
    np.testing.assert_allclose(out.data, oracle(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("solver", ["eigsh", "eigs"])
def test_eigensolvers_return_all_outputs_as_tensors(solver):
    fn = sl.eigsh if solver == "eigsh" else sl.eigs
    for form in OPERATORS:
        w, v = fn(OPERATORS[form](), k=2)
        assert isinstance(w, Tensor) and isinstance(v, Tensor), form
        assert w.shape == (2,) and v.shape == (8, 2)
        assert w.dtype == (np.float64 if solver == "eigsh" else np.complex128)
    # SciPy's operators in, NumPy's arrays out (as yaad.sin(ndarray) gives an ndarray)
    w, v = fn(sps.csr_array(H), k=2)
    assert type(w) is np.ndarray and type(v) is np.ndarray


@pytest.mark.parametrize("solver", OTHERS)
def test_other_solvers_return_tensors(solver):
    call, oracle = OTHERS[solver]
    out = call()
    assert isinstance(out, Tensor), (solver, type(out))
    np.testing.assert_allclose(out.data, oracle(), rtol=1e-6, atol=1e-8)


# ---- plain arrays in, a function that uses a tensor requiring grad from outside ----------
#
# Every solver given NumPy arrays but a function (field, map, operator) that captures a
# tensor c requiring grad returns a tensor linked to c, whose gradient is the analytic one;
# minimize, which is not differentiated (its args= raise), raises naming fun. Before,
# minimize returned SciPy's arrays, cutting the gradient to c without a word.

_Y0 = np.array([1.0, 2.0])
_X_FIXED = so.fixed_point(lambda x: C * np.cos(x), 1.0, xtol=1e-14)
_OP4 = np.diag([1.0, 2.0, 3.0, 4.0]) + 0.3 * (np.eye(4, k=1) + np.eye(4, k=-1))

# name -> (result as a function of the captured c, d sum(result) / dc analytically)
CAPTURED = {
    "integrate.odeint": (lambda c: integrate.odeint(lambda y, t: -c * y, _Y0, _T, rtol=1e-11,
                                                    atol=1e-12)[-1],
                         -3.0 * np.exp(-C)),
    "integrate.solve_ivp": (lambda c: integrate.solve_ivp(
        lambda t, y: -c * y, (0.0, 1.0), _Y0, t_eval=_T, rtol=1e-11, atol=1e-12).y[:, -1],
        -3.0 * np.exp(-C)),
    "implicit.fixed_point": (lambda c: implicit.fixed_point(lambda x: c * yaad.cos(x),
                                                            np.array(1.0)),
                             np.cos(_X_FIXED) / (1 + C * np.sin(_X_FIXED))),
    "implicit.root": (lambda c: implicit.root(lambda x: x ** 3 - c, np.array(1.0)),
                      1 / (3 * C ** (2 / 3))),
    "sparse.linalg.cg": (lambda c: sl.cg(sl.LinearOperator((2, 2), lambda v: c * v + v), _Y0,
                                         rtol=1e-13)[0], -3.0 / (1 + C) ** 2),
    "sparse.linalg.minres": (lambda c: sl.minres(sl.LinearOperator((2, 2), lambda v: c * v + v),
                                                 _Y0, rtol=1e-13)[0], -3.0 / (1 + C) ** 2),
    "sparse.linalg.gmres": (lambda c: sl.gmres(sl.LinearOperator((2, 2), lambda v: c * v + v),
                                               _Y0, rtol=1e-13)[0], -3.0 / (1 + C) ** 2),
    "sparse.linalg.expm_multiply": (lambda c: sl.expm_multiply(
        sl.LinearOperator((2, 2), lambda v: c * v), _Y0), 3.0 * np.exp(C)),
    # the largest eigenvalue of c * OP4 is c * lambda_max(OP4)
    "sparse.linalg.eigsh": (lambda c: sl.eigsh(sl.LinearOperator(
        (4, 4), lambda v: c * (yaad.tensor(_OP4) @ v)), k=1, which="LA")[0],
        np.linalg.eigvalsh(_OP4)[-1]),
    "sparse.linalg.eigs": (lambda c: yaad.real(sl.eigs(sl.LinearOperator(
        (4, 4), lambda v: c * (yaad.tensor(_OP4) @ v)), k=1, which="LR")[0]),
        np.linalg.eigvalsh(_OP4)[-1]),
}


@pytest.mark.parametrize("solver", sorted(CAPTURED))
def test_a_captured_tensor_gets_its_gradient(solver):
    call, want = CAPTURED[solver]
    c = yaad.tensor(C, requires_grad=True)
    out = call(c)
    assert isinstance(out, Tensor) and out.requires_grad, (solver, type(out))
    yaad.sum(out).backward()
    assert c.grad.dtype == np.float64 and c.grad.shape == ()
    np.testing.assert_allclose(c.grad, want, rtol=1e-6, err_msg=solver)


def test_minimize_refuses_a_captured_tensor():
    c = yaad.tensor(C, requires_grad=True)
    with pytest.raises(TypeError, match="optimize.minimize: fun uses a tensor that requires "
                                        r"grad from outside \(shape \(\), float64\)"):
        optimize.minimize(lambda x: yaad.sum((x - c) ** 2), np.array([1.0, 2.0]))
    # detached, or with gradients off, it runs (SciPy's values)
    x = optimize.minimize(lambda x: yaad.sum((x - c.detach()) ** 2), np.array([1.0, 2.0])).x
    np.testing.assert_allclose(x, [C, C], atol=1e-6)
    with yaad.no_grad():
        x = optimize.minimize(lambda x: yaad.sum((x - c) ** 2), np.array([1.0, 2.0])).x
    np.testing.assert_allclose(x, [C, C], atol=1e-6)


def test_every_solver_has_a_captured_case():
    named = {f"sparse.linalg.{n}" for n in sl.__all__} | {
        f"{m.__name__.removeprefix('yaad.')}.{n}" for m in (integrate, optimize, implicit)
        for n in m.__all__}
    # (spsolve takes a sparse matrix, never a function)
    assert named == set(CAPTURED) | NOT_SOLVERS | {"optimize.minimize", "sparse.linalg.spsolve"}
