"""A user-defined operator: ``logdet`` of a positive definite matrix, via its Cholesky.

The walk-through is docs/custom-ops.md. The operator is declared the way every built-in
yaad op is: a forward on arrays, a VJP rule and a JVP rule written with yaad functions
(so second derivatives come for free), checked against finite differences.

    python examples/custom_op.py
"""

from __future__ import annotations

import numpy as np

import yaad
from yaad.extend import op
from yaad.testing import gradcheck, gradgradcheck


# 1. The forward, on arrays: log det A = 2 sum(log(diag(L))) with A = L L^H.
#    Batched over leading axes; real symmetric or complex Hermitian A.
def _logdet(a):
    chol = np.linalg.cholesky(a)
    return 2 * np.sum(np.log(np.real(np.diagonal(chol, axis1=-2, axis2=-1))), axis=-1)


# 2. The VJP rule. d logdet = tr(A^-1 dA), so the gradient is g * conj(A^-T), which is
#    g * A^-1 for a Hermitian A. `ans` (the output) is not needed; `g` has its shape.
def _logdet_vjp(g, ans, a):
    return g[..., None, None] * yaad.linalg.inv(a)


# 3. The JVP rule: the tangent of the output for a tangent t of A is tr(A^-1 t).
def _logdet_jvp(t, ans, a):
    return yaad.sum(yaad.linalg.inv(a).mT * t, axis=(-2, -1))


# 4. The declaration. save_ans=False: the rules do not read the output, so it is not kept.
logdet = op(_logdet, name="logdet", vjp=_logdet_vjp, jvp=_logdet_jvp, save_ans=False,
            batch="broadcast")
logdet.__doc__ = """log(det(a)) of positive definite matrices (batched), via Cholesky."""


def hermitian(x):
    """(x + x^H) / 2: the checks perturb all entries, the op reads only the lower triangle."""
    return (x + yaad.conj(yaad.swapaxes(x, -1, -2))) / 2


def positive_definite(rng, n, batch=(), complex_=False):
    m = rng.standard_normal(batch + (n, n))
    if complex_:
        m = m + 1j * rng.standard_normal(batch + (n, n))
    return m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)


def main() -> dict:
    rng = np.random.default_rng(0)
    a = positive_definite(rng, 4)
    z = positive_definite(rng, 3, batch=(2,), complex_=True)

    # The value agrees with NumPy's slogdet.
    sign, expected = np.linalg.slogdet(a)
    assert sign == 1 and np.isclose(logdet(a), expected)

    # The gradient (reverse mode), the tangent (forward mode) and the second derivatives
    # against central finite differences, for real and for batched complex inputs.
    f = lambda x: logdet(hermitian(x))  # noqa: E731
    for x in (a, z):
        assert gradcheck(f, [x], check_forward_ad=True)
        assert gradgradcheck(f, [x], check_forward_ad=True)

    # It composes with everything else: a gradient, a Hessian-vector product.
    x = yaad.tensor(a, requires_grad=True)
    logdet(x).backward()
    v = rng.standard_normal(a.shape)
    _, hv = yaad.func.hvp(f, (a,), (v + v.T,))
    # d/dA tr(A^-1 dA) along V: -A^-1 V A^-1
    inv = np.linalg.inv(a)
    assert np.allclose(hv, -inv @ (v + v.T) @ inv)

    print("logdet:", logdet(a), "(numpy:", expected, ")")
    print("gradient equals inv(A):", np.allclose(x.grad, inv))
    print("gradcheck and gradgradcheck passed, real and complex (batched)")
    return {"logdet": logdet(a), "grad": x.grad, "inv": inv}


if __name__ == "__main__":
    main()
