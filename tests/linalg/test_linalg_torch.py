"""yaad.linalg against torch.linalg (skipped without torch): values and gradients of
``sum Re(conj(w) * f(a))`` for random cotangents ``w``, batched, real and complex.

Both libraries use the same complex convention (``z.grad = dL/dRe z + 1j dL/dIm z``)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import yaad
from tests.support.linalg_inputs import COMPLEX, abs2, general, herm, posdef, rand

L = yaad.linalg
T = torch.linalg


def _tabs2(x):
    return (x * x.conj()).real


def _therm(a):
    return (a + a.mH) / 2


B = (3, 2)
# name: (yaad function, torch function, inputs(rng, complex))
CASES = {
    "det": (L.det, T.det, lambda r, c: (general(r, B, 3, c),)),
    "slogdet": (lambda a: L.slogdet(a).logabsdet, lambda a: T.slogdet(a).logabsdet,
                lambda r, c: (general(r, B, 3, c),)),
    "slogdet.sign": (lambda a: L.slogdet(a).sign, lambda a: T.slogdet(a).sign,
                     lambda r, c: (general(r, B, 3, c),)),
    "inv": (L.inv, T.inv, lambda r, c: (general(r, B, 3, c),)),
    "solve": (L.solve, T.solve, lambda r, c: (general(r, B, 3, c), rand(r, B + (3, 2), c))),
    "pinv": (L.pinv, T.pinv, lambda r, c: (rand(r, B + (4, 3), c),)),
    "lstsq": (lambda a, b: L.lstsq(a, b)[0], lambda a, b: T.lstsq(a, b, driver="gelsd")[0],
              lambda r, c: (rand(r, B + (5, 3), c), rand(r, B + (5, 2), c))),
    "cholesky": (lambda a: L.cholesky(herm(a)), lambda a: T.cholesky(_therm(a)),
                 lambda r, c: (posdef(r, B, 3, c),)),
    "solve_triangular": (lambda a, b: L.solve_triangular(a, b, lower=True),
                         lambda a, b: T.solve_triangular(a, b, upper=False),
                         lambda r, c: (general(r, B, 3, c), rand(r, B + (3, 2), c))),
    "eigh": (lambda a: L.eigh(herm(a)).eigenvalues, lambda a: T.eigh(_therm(a)).eigenvalues,
             lambda r, c: (rand(r, B + (4, 4), c),)),
    "eigh.vectors": (lambda a: abs2(L.eigh(herm(a)).eigenvectors),
                     lambda a: _tabs2(T.eigh(_therm(a)).eigenvectors),
                     lambda r, c: (rand(r, B + (4, 4), c),)),
    "eigvalsh": (lambda a: L.eigvalsh(herm(a)), lambda a: T.eigvalsh(_therm(a)),
                 lambda r, c: (rand(r, B + (4, 4), c),)),
    "eig": (lambda a: L.eig(a).eigenvalues, lambda a: T.eig(a).eigenvalues,
            lambda r, c: (general(r, B, 3, c),)),
    "svd.S": (lambda a: L.svd(a, full_matrices=False).S, lambda a: T.svd(a, False).S,
              lambda r, c: (rand(r, B + (4, 3), c),)),
    "svd.U": (lambda a: abs2(L.svd(a, full_matrices=False).U),
              lambda a: _tabs2(T.svd(a, False).U), lambda r, c: (rand(r, B + (4, 3), c),)),
    "svd.UVh": (lambda a: (lambda r: r.U @ r.Vh)(L.svd(a, full_matrices=False)),
                lambda a: (lambda r: r.U @ r.Vh)(T.svd(a, False)),
                lambda r, c: (rand(r, B + (3, 5), c),)),
    "svdvals": (L.svdvals, T.svdvals, lambda r, c: (rand(r, B + (3, 4), c),)),
    "qr.Q": (lambda a: L.qr(a).Q, lambda a: T.qr(a).Q, lambda r, c: (rand(r, B + (4, 3), c),)),
    "qr.R": (lambda a: L.qr(a).R, lambda a: T.qr(a).R, lambda r, c: (rand(r, B + (3, 4), c),)),
    "expm": (L.expm, T.matrix_exp, lambda r, c: (general(r, B, 3, c) / 3,)),
    "matrix_power": (lambda a: L.matrix_power(a, -3), lambda a: T.matrix_power(a, -3),
                     lambda r, c: (general(r, B, 3, c),)),
    "vector_norm": (lambda x: L.vector_norm(x, axis=-1, ord=3),
                    lambda x: T.vector_norm(x, dim=-1, ord=3),
                    lambda r, c: (rand(r, B + (4,), c),)),
    **{f"matrix_norm.{o}": (lambda x, o=o: L.matrix_norm(x, ord=o),
                            lambda x, o=o: T.matrix_norm(x, ord=o),
                            lambda r, c: (rand(r, B + (4, 3), c),))
       for o in ("fro", "nuc", 2, -2, 1, np.inf)},
    "cross": (L.cross, T.cross, lambda r, c: (rand(r, B + (3,), c), rand(r, B + (3,), c))),
    "vecdot": (L.vecdot, T.vecdot, lambda r, c: (rand(r, B + (3,), c), rand(r, B + (3,), c))),
    "multi_dot": (lambda *xs: L.multi_dot(xs), lambda *xs: T.multi_dot(xs),
                  lambda r, c: (rand(r, (2, 3), c), rand(r, (3, 4), c), rand(r, (4, 2), c))),
}


def _cotangents(rng, outs):
    ws = []
    for o in outs:
        w = rng.standard_normal(o.shape)
        if np.iscomplexobj(o):
            w = w + 1j * rng.standard_normal(o.shape)
        ws.append(w)
    return ws


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("c", COMPLEX)
def test_values_and_gradients_equal_torch(name, c):
    f, tf, build = CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name} {c}".encode()))
    inputs = build(rng, c)
    ys = [yaad.tensor(x, requires_grad=True) for x in inputs]
    out = f(*ys)
    (w,) = _cotangents(rng, [out.data])
    yaad.real(out * np.conj(w)).sum().backward()
    ts = [torch.tensor(x, requires_grad=True) for x in inputs]
    tout = tf(*ts)
    (tout * torch.tensor(np.conj(w))).real.sum().backward()
    np.testing.assert_allclose(out.data, tout.detach().resolve_conj().numpy(), rtol=1e-9,
                               atol=1e-11)
    for y, t in zip(ys, ts):
        if t.grad is None:  # torch records no dependence (the sign of a real det)
            assert y.grad is None or not np.any(y.grad)
        else:
            np.testing.assert_allclose(y.grad, t.grad.resolve_conj().numpy(), rtol=1e-7,
                                       atol=1e-9)


def test_norm_at_zero_is_finite_where_torch_agrees():
    x = yaad.tensor(np.zeros(3), requires_grad=True)
    t = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    L.vector_norm(x).backward()
    T.vector_norm(t).backward()
    np.testing.assert_array_equal(x.grad, t.grad.numpy())
