"""logm and sqrtm at their branch cut (the closed negative real axis) against SciPy.

SciPy's values there are the principal ones (``logm(-I) = i pi I``). Where the function has
no derivative, yaad's backward and forward mode raise ``LinAlgError`` naming the op and the
eigenvalue: an eigenvalue 0; a complex matrix with an eigenvalue on the cut; a real matrix
with a repeated negative eigenvalue, which a real perturbation splits into a complex pair on
both sides of the cut (shown here with SciPy: the difference quotient in that direction
grows as 1/h). Before, all of these returned a finite gradient without a word. Where the
derivative exists (a simple negative eigenvalue of a real matrix, a complex matrix off the
cut, the shifted ``a + 1j eps I``), the gradient is checked against SciPy's central
differences.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

import yaad
from yaad import linalg as L

rng = np.random.default_rng(11)
V = rng.standard_normal((3, 3))
VC = V + 1j * rng.standard_normal((3, 3))
W = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))  # the loss's weights
J = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # a rotation generator

FUNCTIONS = {"logm": sla.logm, "sqrtm": sla.sqrtm}


def _similar(d, v=V):
    return v @ np.diag(d) @ np.linalg.inv(v)


# (label, matrix, a real direction in which SciPy's value jumps or blows up, the eigenvalue
# the message names)
NOT_DIFFERENTIABLE = [
    ("-I", -np.eye(3), J, "repeated eigenvalue -1"),
    ("repeated negative, diagonalisable", _similar([-2.0, -2.0, 3.0]),
     V @ J @ np.linalg.inv(V), "repeated eigenvalue -2"),
    ("negative Jordan block", np.array([[-2.0, 1.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 1.0]]),
     np.array([[0.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), "repeated eigenvalue -2"),
    ("complex, on the cut", _similar([-1.0, 2.0, 3j], VC), 1j * np.eye(3), "eigenvalue -1"),
    ("singular", _similar([0.0, 2.0, 3.0]), np.eye(3), "eigenvalue 0"),
]


def _loss(f, a):
    return np.real(np.sum(W * f(a)))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("case", NOT_DIFFERENTIABLE, ids=[c[0] for c in NOT_DIFFERENTIABLE])
def test_no_derivative_on_the_cut_raises(case, name):
    label, a, direction, eigenvalue = case
    f = FUNCTIONS[name]
    # the oracle: SciPy's one-sided difference quotients in the direction do not settle (a
    # jump or an infinite slope: growing as 1/h or 1/sqrt(h)) or differ from each other
    q = [(_loss(f, a + h * direction) - _loss(f, a)) / h for h in (1e-4, 1e-6, 1e-8)]
    qm = [(_loss(f, a) - _loss(f, a - h * direction)) / h for h in (1e-4, 1e-6, 1e-8)]
    assert abs(q[2]) > 30 * (1 + abs(q[0])) or abs(q[2] - qm[2]) > 1, (label, name, q, qm)
    # yaad: SciPy's value, then an error in backward and in forward mode
    t = yaad.tensor(a, requires_grad=True)
    out = getattr(L, name)(t)
    np.testing.assert_allclose(out.detach().numpy(), f(a), rtol=1e-10, atol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match=f"linalg.{name}: .*{eigenvalue}"):
        yaad.real(yaad.sum(out * W)).backward()
    with pytest.raises(np.linalg.LinAlgError, match=f"linalg.{name}: .*branch cut"):
        yaad.func.jvp(getattr(L, name), (a,), (direction.astype(a.dtype),))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_batched_and_float32_name_the_matrix(name):
    a = np.stack([_similar([1.0, 2.0, 3.0]), -np.eye(3)]).astype(np.float32)
    t = yaad.tensor(a, requires_grad=True)
    out = getattr(L, name)(t)
    assert out.dtype == np.complex64
    with pytest.raises(np.linalg.LinAlgError, match=r"at batch index \(1,\)"):
        yaad.real(yaad.sum(out)).backward()


# where the derivative exists: the gradient against SciPy's central differences (in the
# real and imaginary part of each entry of a complex matrix)
DIFFERENTIABLE = [
    ("real, simple negative eigenvalue", _similar([-1.0, 2.0, 3.0])),
    ("real, two distinct negative eigenvalues", _similar([-1.0, -2.5, 3.0])),
    ("complex, off the cut", _similar([-1.0 + 0.5j, 2.0, 3j], VC)),
    ("complex, just above the cut", _similar([-1.0 + 1e-3j, -1.0 + 2e-3j, 2.0], VC)),
    ("-I shifted by 1j eps", -np.eye(3) + 1e-3j * np.eye(3)),
]


def _fd_gradient(f, a, h=1e-6):
    g = np.zeros(a.shape, dtype=a.dtype)
    units = (1.0,) if a.dtype.kind == "f" else (1.0, 1j)
    for idx in np.ndindex(a.shape):
        for u in units:
            e = np.zeros_like(a)
            e[idx] = h * u
            g[idx] += u * (_loss(f, a + e) - _loss(f, a - e)) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_gradient_off_the_cut(case, name):
    label, a = case
    f = FUNCTIONS[name]
    t = yaad.tensor(a, requires_grad=True)
    out = getattr(L, name)(t)
    np.testing.assert_allclose(out.detach().numpy(), f(a), rtol=1e-10, atol=1e-12)
    yaad.real(yaad.sum(out * W)).backward()
    assert t.grad.dtype == a.dtype and t.grad.shape == a.shape
    want = _fd_gradient(f, a)
    np.testing.assert_allclose(t.grad, want, rtol=1e-5, atol=1e-5 * np.abs(want).max(),
                               err_msg=f"{name}: {label}")
    # forward mode in a random direction
    d = rng.standard_normal(a.shape).astype(a.dtype)
    _, tangent = yaad.func.jvp(lambda m: yaad.real(yaad.sum(getattr(L, name)(m) * W)),
                               (a,), (d,))
    h = 1e-6
    np.testing.assert_allclose(tangent, (_loss(f, a + h * d) - _loss(f, a - h * d)) / (2 * h),
                               rtol=1e-5)


def test_the_shift_picks_scipys_side_of_the_cut():
    # the advice of the message: a + 1j eps I, whose value tends to SciPy's at a
    for name, f in FUNCTIONS.items():
        a = -np.eye(3)
        shifted = getattr(L, name)(a + 1e-9j * np.eye(3))
        np.testing.assert_allclose(shifted, f(a), atol=1e-8)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_second_order_and_batches_with_negative_eigenvalues(name):
    # real matrices with simple negative eigenvalues, and complex pairs just below the cut
    # (the turn stays between them and the cut): gradients and second derivatives against
    # finite differences, batched
    from yaad.testing import gradcheck, gradgradcheck

    a = np.stack([_similar([-1.0, -2.5, 3.0]),
                  _similar([-1.0, 2.0, 3.0], rng.standard_normal((3, 3))),
                  np.array([[-2.0, 0.05, 0.0], [-0.05, -2.0, 0.0], [0.0, 0.0, -0.5]])])
    f = getattr(L, name)
    assert gradcheck(f, [a])
    assert gradgradcheck(f, [a])


def test_sqrtm_of_a_real_schur_form_with_a_negative_eigenvalue():
    # SciPy 1.17's sqrtm returned a wrong root for a real matrix already in real Schur form
    # with a negative eigenvalue (its square was off by 0.5 here); the oracle: the principal
    # root from the eigendecomposition (np.sqrt of the eigenvalues, +i for -1)
    a = np.array([[1.0, 0.5, 0.0], [-0.5, 1.0, 0.0], [0.0, 0.0, -1.0]])
    b = np.array([[-2.0, 0.5, 0.0], [-0.5, -2.0, 0.0], [0.0, 0.0, -0.5]])
    for m in (a, b, np.stack([b, a])):
        w, v = np.linalg.eig(m)
        want = v @ (np.sqrt(w.astype(complex))[..., :, None] * np.linalg.inv(v))
        got = L.sqrtm(m)
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_allclose(got @ got, m, atol=1e-12)
