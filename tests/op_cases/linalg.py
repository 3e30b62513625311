"""Rows of ``yaad.linalg`` (numpy.linalg and scipy.linalg made differentiable)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import yaad
from tests.op_cases.fixed import abs2, away, cases, cplx, herm, real, same, well
from tests.op_cases.products import draw_matmul, draw_tensordot
from tests.op_cases.reductions import INDICES
from tests.op_cases.table import Second, Variant, case, other_dtype
from tests.support import linalg_inputs as li
from tests.support.strategies import (
    C64,
    C128,
    F32,
    F64,
    SMALL,
    Call,
    axes,
    axis,
    broadcastable_shapes,
    shapes,
    values,
)

Z = 0.5 + 0.5j

L = yaad.linalg

# ---- inputs of the variants (tests/linalg/test_linalg.py, test_linalg_spectral.py) ---------
# (functions of (rng, batch, complex); li: tests/support/linalg_inputs.py)


def _gen(n=3):
    return lambda r, b, c: (li.general(r, b, n, c),)


def _right_half_plane(r, b, c):
    """Eigenvalues with positive real parts: away from the branch cut of logm and sqrtm."""
    return (0.5 * li.rand(r, b + (3, 3), c) + 3 * np.eye(3),)


def _tall(r, b, c):
    return (li.rand(r, b + (4, 3), c),)


def _wide(r, b, c):
    return (li.rand(r, b + (3, 4), c),)


def _h(n):
    return lambda r, b, c: (li.hermitian(r, b, n, c),)


def _g(shape):
    return lambda r, b, c: (li.rand(r, b + shape, c),)


def _lstsq_ref(a, b):
    """numpy.linalg.lstsq's x, looped over a batch."""
    vec = b.ndim == 1
    batch = np.broadcast_shapes(a.shape[:-2], () if vec else b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = b if vec else np.broadcast_to(b, batch + b.shape[-2:])
    out = [np.linalg.lstsq(a[i], b if vec else b[i], rcond=None)[0] for i in np.ndindex(*batch)]
    return np.array(out).reshape(batch + out[0].shape)


def projector(v):
    """The projector onto the columns of ``v`` (orthonormal): v v^H."""
    return v @ li.mH(v)


def svd_reconstruct(u, s, vh, k):
    """The rank-``k`` part of an SVD, u s vh."""
    return (u[..., :k] * yaad.expand_dims(s[..., :k], -2)) @ vh[..., :k, :]


# ---- JAX's functions, where the op's name does not find them (second-order rows) ----------


def _jax_block_upper(a, e):
    import jax.numpy as jnp

    return jnp.block([[a, e], [jnp.zeros_like(a), a]])


def _jax_slogdet(a):
    import jax.numpy as jnp

    return tuple(jnp.linalg.slogdet(a))


def _jax_lstsq(a, b):
    import jax.numpy as jnp

    return jnp.linalg.lstsq(a, b)[0]


def _jax_eig(a):
    # the cases take the eigenvalues; their second derivatives need the eigenvectors'
    # first ones, which JAX computes on request only
    import jax

    return jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)


def _jax_solve_sylvester(a, b, q):  # a x + x b = q, as one linear system in vec(x)
    import jax.numpy as jnp

    m, n = q.shape
    k = jnp.kron(jnp.eye(n), a) + jnp.kron(b.T, jnp.eye(m))
    return jnp.linalg.solve(k, q.reshape(-1, order="F")).reshape((m, n), order="F")


def resolvent_case(hermitian):
    """The second-order cases' resolvent (shifts - M)^{-1} g with its spectral basis taken
    from M's current value (as the rules of eigh and svd pass it), so that finite
    differences see a consistent op."""
    def make(fn):
        def f(m, shifts, g):
            if hermitian:
                m = herm(m)
                w, v = np.linalg.eigh(m.data if isinstance(m, yaad.Tensor) else m)
                basis = (v, w)
            else:
                u, s, vh = np.linalg.svd(m.data if isinstance(m, yaad.Tensor) else m,
                                         full_matrices=False)
                basis = (u, s, np.conj(vh.T))
            return fn(m, shifts, g, *basis, n=max(m.shape), name="test")
        return f
    return make

# ---- linear algebra ----------------------------------------------------------------------------


try:
    import scipy.linalg as sla
except ImportError:  # pragma: no cover - scipy is a dependency
    sla = None


def _batch(data) -> tuple:
    return data.draw(shapes(max_dims=2, min_side=1, max_side=2))


def _square(data, dtype, n_min=1, n_max=3, shift=True, batch=True):
    """A batch of square matrices; ``shift`` adds a spread diagonal (well conditioned,
    eigenvalues apart)."""
    n = data.draw(st.integers(n_min, n_max))
    a = data.draw(values(dtype, (_batch(data) if batch else ()) + (n, n), SMALL))
    if shift:
        a = a + np.diag(np.arange(1, n + 1) * 2.5).astype(dtype)
    return a


def _herm(a):
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _yherm(a):
    return (a + yaad.conj(yaad.swapaxes(a, -1, -2))) / 2


def _gaps(w, tol=0.05) -> bool:
    w = np.sort_complex(np.asarray(w).reshape(-1, np.shape(w)[-1])) if np.iscomplexobj(
        w) else np.sort(np.asarray(w).reshape(-1, np.shape(w)[-1]))
    if w.shape[-1] < 2:
        return True
    d = np.abs(w[:, None, :] - w[:, :, None]) + np.eye(w.shape[-1]) * 1e9
    return bool(np.all(d > tol))


def _abs2(x):
    """|x|^2, computed the same way for arrays and tensors."""
    return yaad.real(x * yaad.conj(x))


def _sq(dtype_draw=None, **kw):
    return lambda data, dtype: Call((_square(data, dtype, **kw),))


def _la(name):
    return lambda *a, **k: getattr(np.linalg, name)(*a, **k)


case("linalg.det", _la("det"), _sq(shift=False),
     second=lambda fn: same(fn, (well(3),), (well(2, True),)),
     variants={
         "det": Variant(L.det, _gen(), np.linalg.det, second=True, float32=True)})
case("linalg.slogdet", lambda a: tuple(np.linalg.slogdet(a)), _sq(),
     call=lambda a: tuple(yaad.linalg.slogdet(a)), covers=("linalg.slogdet",),
     second=Second(
         lambda fn: same(fn, (well(3),), (well(2, True),)),
         jax=_jax_slogdet),
     variants={
         "slogdet.logabsdet": Variant(
             lambda a: L.slogdet(a).logabsdet,
             _gen(),
             lambda a: np.linalg.slogdet(a).logabsdet,
             second=True,
             float32=True),
         "slogdet.sign": Variant(
             lambda a: L.slogdet(a).sign,
             _gen(),
             lambda a: np.linalg.slogdet(a).sign,
             second=True)})
case("linalg.inv", _la("inv"), _sq(),
     second=lambda fn: same(fn, (well(3),), (well(2, True),)),
     variants={
         "inv": Variant(L.inv, _gen(), np.linalg.inv, second=True, float32=True)})
case("linalg.matrix_power", _la("matrix_power"), lambda data, dtype: Call(
    (_square(data, dtype), data.draw(st.sampled_from([-2, -1, 1, 2, 3])))), exact=False,
    note="n = 0 gives a constant (the identity): see test_gradient_semantics",
     variants={
         "matrix_power.3": Variant(
             lambda a: L.matrix_power(a, 3),
             _gen(),
             lambda a: np.linalg.matrix_power(a, 3)),
         "matrix_power.-2": Variant(
             lambda a: L.matrix_power(a, -2),
             _gen(),
             lambda a: np.linalg.matrix_power(a, -2),
             second=True)})


def _draw_solve(data, dtype):
    a = _square(data, dtype)
    n = a.shape[-1]
    if data.draw(st.booleans()):
        b = data.draw(values(other_dtype(data, dtype, False), (n,)))
    else:
        b = data.draw(values(other_dtype(data, dtype, False), a.shape[:-2] + (n, data.draw(
            st.integers(1, 2)))))
    return Call((a, b))


case("linalg.solve", _la("solve"), _draw_solve,
     second=lambda fn: same(fn, (well(3), real(3, 2)), (well(2, True), cplx(2)[:, None])),
     variants={
         "solve": Variant(
             L.solve,
             lambda r, b, c: (li.general(r, b, 3, c), li.rand(r, b + (3, 2), c)),
             np.linalg.solve,
             second=True,
             float32=True),
         "solve.vector": Variant(
             L.solve,
             lambda r, b, c: (li.general(r, b, 3, c), li.rand(r, (3,), c)),
             np.linalg.solve)})
case("linalg.cholesky", lambda a, upper=False: np.linalg.cholesky(_herm(a), upper=upper),
     lambda data, dtype: Call((_square(data, dtype),), {"upper": data.draw(st.booleans())}),
     call=lambda a, upper=False: yaad.linalg.cholesky(_yherm(a), upper=upper),
     covers=("linalg.cholesky",), note="Hermitian part of the input: the op reads one triangle",
     second=lambda fn: cases(
         (lambda a: fn(herm(a) + 3 * np.eye(3)), (real(3, 3),)),
         (lambda a: fn(herm(a) + 3 * np.eye(2)), (cplx(2, 2),))),
     variants={
         "cholesky": Variant(
             lambda a: L.cholesky(li.herm(a)),
             lambda r, b, c: (li.posdef(r, b, 3, c),),
             np.linalg.cholesky,
             second=True,
             float32=True),
         "cholesky.upper": Variant(
             lambda a: L.cholesky(li.herm(a), upper=True),
             lambda r, b, c: (li.posdef(r, b, 3, c),),
             lambda a: np.linalg.cholesky(a, upper=True))})


def _eigh_ok(call):
    return _gaps(np.linalg.eigvalsh(_herm(call.args[0])))


case("linalg.eigh", lambda a: (lambda r: (r[0], _abs2(r[1])))(np.linalg.eigh(_herm(a))),
     _sq(), call=lambda a: (lambda r: (r[0], _abs2(r[1])))(yaad.linalg.eigh(_yherm(a))),
     ok=_eigh_ok, exact=False, covers=("linalg.eigh",),
     note="|eigenvectors|^2: invariant to the gauge",
     second=Second(
         lambda fn: cases(
             (lambda a: (lambda w, v: (w, abs2(v)))(*fn(herm(a))), (real(3, 3),)),
             (lambda a: (lambda w, v: (w, abs2(v)))(*fn(herm(a))), (cplx(3, 3),))),
         jax="jax.numpy.linalg.eigh"),
     variants={
         "eigh.eigenvalues": Variant(
             lambda a: L.eigh(li.herm(a)).eigenvalues,
             _h(3),
             lambda a: np.linalg.eigh(a).eigenvalues,
             second=True,
             spectral=True),
         "eigh.eigenvectors": Variant(
             lambda a: li.abs2(L.eigh(li.herm(a)).eigenvectors),
             _h(3),
             lambda a: li.abs2(np.linalg.eigh(a).eigenvectors),
             second=True,
             float32=True,
             spectral=True),
         "eigh.UPLO=U": Variant(
             lambda a: li.abs2(L.eigh(li.herm(a), "U").eigenvectors),
             _h(3),
             lambda a: li.abs2(np.linalg.eigh(a, "U").eigenvectors),
             spectral=True),
         "eigh.projector": Variant(
             lambda a: projector(L.eigh(li.herm(a)).eigenvectors[..., :2]),
             _h(3),
             second=True,
             spectral=True)})
case("linalg.eigvalsh", lambda a: np.linalg.eigvalsh(_herm(a)), _sq(),
     call=lambda a: yaad.linalg.eigvalsh(_yherm(a)), ok=_eigh_ok, exact=False,
     variants={
         "eigvalsh": Variant(
             lambda a: L.eigvalsh(li.herm(a)),
             _h(3),
             np.linalg.eigvalsh,
             spectral=True)})


def _resolvent_call(m, shifts, g):
    # The spectral basis comes from the current value of m, as the rules of eigh pass it.
    from yaad.linalg.spectral import resolvent
    w, v = yaad.linalg.eigh(_yherm(m.detach() if isinstance(m, yaad.Tensor) else m))
    return resolvent(_yherm(m), shifts, g, v, w, n=w.shape[-1], name="fuzz")


def _resolvent_ref(m, shifts, g):
    h = _herm(m)
    eye = np.eye(h.shape[-1])
    return np.stack([np.linalg.solve(x * eye - h, g[..., i]) for i, x in enumerate(shifts)], -1)


def _draw_resolvent(data, dtype):
    m = _square(data, dtype, batch=False)
    t = data.draw(st.integers(1, 2))
    shifts = np.array(data.draw(st.lists(st.sampled_from([-2.0, 1.25, 3.75, 6.25, 11.0]),
                                         min_size=t, max_size=t)))
    return Call((m, shifts, data.draw(values(dtype, (m.shape[-1], t), SMALL))))


def _resolvent_ok(call):
    w = np.linalg.eigvalsh(_herm(call.args[0]))
    return bool(np.min(np.abs(call.args[1][:, None] - w[None, :])) > 0.3)


case("linalg.spectral.resolvent", _resolvent_ref, _draw_resolvent, call=_resolvent_call,
     ok=_resolvent_ok, exact=False, covers=("linalg.resolvent",),
     note="(shift - M)^-1 g by a spectral basis of M (the tails of eigh and svd)",
     second=Second(
         lambda fn: [
(resolvent_case(True)(fn), (real(3, 3), np.array([2.5, -3.0]), real(3, 2)), {}),
(resolvent_case(True)(fn), (cplx(2, 2), np.array([1.5]), cplx(2, 1)), {}),
(resolvent_case(False)(fn), (real(3, 2), np.array([2.0, -1.5]), real(5, 2)), {}),
(resolvent_case(False)(fn), (cplx(2, 3), np.array([1.8]), cplx(5, 1)), {})],
         no_jax="a helper of the eigh and svd rules; JAX has no such function"))


def _eig_ok(call):
    # LAPACK orders the eigenvalues of an exactly triangular matrix differently from those
    # of its neighbours (a discontinuity of numpy.linalg.eig itself): keep off-diagonals
    a = np.asarray(call.args[0])
    off = ~np.eye(a.shape[-1], dtype=bool)
    return _gaps(np.linalg.eigvals(a), 0.1) and bool(np.all(np.abs(a[..., off]) > 0.05))


def _complex(x):
    return x.astype(np.result_type(x.dtype, np.complex64))


case("linalg.eig", lambda a: (lambda r: (_complex(r[0]), _abs2(r[1])))(np.linalg.eig(a)),
     _sq(shift=True), call=lambda a: (lambda r: (r[0], _abs2(r[1])))(yaad.linalg.eig(a)),
     ok=_eig_ok, covers=("linalg.eig",), exact=False,
     note="yaad returns complex eigenvalues always (documented); |v|^2 is gauge-invariant",
     second=Second(
         lambda fn: cases(
             (lambda a: fn(a)[0], (real(3, 3),)),
             (lambda a: fn(a)[0], (cplx(2, 2),))),
         jax=_jax_eig),
     variants={
         "eig.eigenvalues": Variant(
             lambda a: L.eig(a).eigenvalues,
             lambda r, b, c: (li.general(r, b, 3, c),),
             second=True,
             float32=True,
             spectral=True),
         "eig.eigenvectors": Variant(
             lambda a: li.abs2(L.eig(a).eigenvectors),
             lambda r, b, c: (li.general(r, b, 3, c),),
             lambda a: li.abs2(np.linalg.eig(a).eigenvectors),
             second=True,
             spectral=True)})
case("linalg.eigvals", lambda a: _complex(np.linalg.eigvals(a)), _sq(), ok=_eig_ok,
     exact=False,
     variants={
         "eigvals": Variant(L.eigvals, lambda r, b, c: (li.general(r, b, 3, c),), spectral=True)})


def _rect(data, dtype, tall=None, batch=True):
    m, n = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    if tall is not None and (m < n) == tall:
        m, n = n, m
    a = data.draw(values(dtype, (_batch(data) if batch else ()) + (m, n), SMALL))
    k = min(m, n)
    spread = np.zeros((m, n))
    spread[np.arange(k), np.arange(k)] = np.arange(1, k + 1) * 2.0
    return a + spread.astype(dtype)


def _svd_ok(call):
    s = np.linalg.svd(call.args[0], compute_uv=False)
    return _gaps(s, 0.05) and bool(np.all(s > 0.05))


def _svd_post(r):
    u, s, vh = r
    k = s.shape[-1]
    return _abs2(u[..., :, :k]), s, _abs2(vh[..., :k, :])


case("linalg.svd", lambda a, full_matrices=True: _svd_post(np.linalg.svd(a, full_matrices)),
     lambda data, dtype: Call((_rect(data, dtype),), {"full_matrices": data.draw(st.booleans())}),
     call=lambda a, full_matrices=True: _svd_post(yaad.linalg.svd(a, full_matrices)),
     ok=_svd_ok, covers=("linalg.svd",), exact=False,
     note="|U|^2, |Vh|^2 on the first min(m, n) vectors",
     second=Second(
         lambda fn: cases(
             (lambda a: (lambda u, s, vh: (s, abs2(u), abs2(vh)))(*fn(a, False)),
              (real(3, 2),)),
             (lambda a: (lambda u, s, vh: (s, abs2(u), abs2(vh)))(*fn(a, False)),
              (cplx(2, 2),))),
         jax="jax.numpy.linalg.svd"),
     variants={
         "svd.S": Variant(
             lambda a: L.svd(a).S,
             _g((4, 3)),
             lambda a: np.linalg.svd(a).S,
             second=True,
             spectral=True),
         "svd.U": Variant(
             lambda a: li.abs2(L.svd(a, full_matrices=False).U),
             _g((4, 3)),
             lambda a: li.abs2(np.linalg.svd(a, full_matrices=False).U),
             second=True,
             float32=True,
             spectral=True),
         "svd.Vh": Variant(
             lambda a: li.abs2(L.svd(a, full_matrices=False).Vh),
             _g((4, 3)),
             lambda a: li.abs2(np.linalg.svd(a, full_matrices=False).Vh),
             spectral=True),
         "svd.wide": Variant(
             lambda a: li.abs2(L.svd(a, full_matrices=False).Vh),
             _g((2, 4)),
             lambda a: li.abs2(np.linalg.svd(a, full_matrices=False).Vh),
             second=True,
             spectral=True),
         "svd.U.Vh": Variant(
             lambda a: (lambda r: r.U @ r.Vh)(L.svd(a, full_matrices=False)),
             _g((4, 3)),
             spectral=True),
         "svd.full.reconstruct": Variant(
             lambda a: svd_reconstruct(*L.svd(a), 3),
             _g((4, 3)),
             second=True,
             spectral=True),
         "svd.full.complement": Variant(
             lambda a: projector(L.svd(a).U[..., 3:]),
             _g((5, 3)),
             spectral=True),
         "svd.full.wide.complement": Variant(
             lambda a: projector(li.mH(L.svd(a).Vh[..., 2:, :])),
             _g((2, 4)),
             spectral=True),
         "svd.hermitian": Variant(
             lambda a: li.abs2(L.svd(li.herm(a), hermitian=True).U),
             _h(3),
             lambda a: li.abs2(np.linalg.svd(a, hermitian=True).U),
             spectral=True),
         "svd.compute_uv=False": Variant(
             lambda a: L.svd(a, compute_uv=False),
             _g((3, 4)),
             lambda a: np.linalg.svd(a, compute_uv=False),
             spectral=True)})
case("linalg.svdvals", lambda a: np.linalg.svd(a, compute_uv=False),
     lambda data, dtype: Call((_rect(data, dtype),)), ok=_svd_ok, exact=False,
     variants={
         "svdvals": Variant(L.svdvals, _g((4, 3)), np.linalg.svdvals, spectral=True)})
case("linalg.pinv", _la("pinv"), lambda data, dtype: Call((_rect(data, dtype),)), ok=_svd_ok,
     exact=False,
     second=lambda fn: same(fn, (real(3, 2),), (cplx(2, 3),)),
     variants={
         "pinv.tall": Variant(L.pinv, _tall, np.linalg.pinv, second=True, float32=True),
         "pinv.wide": Variant(L.pinv, _wide, np.linalg.pinv),
         # eigenvalues away from 0 (the Hermitian part of _gen() can be nearly singular there)
         "pinv.hermitian": Variant(
             lambda a: L.pinv(li.herm(a), hermitian=True),
             lambda r, b, c: (li.posdef(r, b, 3, c),),
             lambda a: np.linalg.pinv(li.herm(a), hermitian=True))})
case("linalg.cond", _la("cond"), lambda data, dtype: Call((_rect(data, dtype),)), ok=_svd_ok,
     exact=False,
     variants={
         "cond": Variant(L.cond, _gen(), np.linalg.cond),
         "cond.fro": Variant(
             lambda a: L.cond(a, "fro"),
             _gen(),
             lambda a: np.linalg.cond(a, "fro"))})
case("linalg.matrix_rank", _la("matrix_rank"), lambda data, dtype: Call((_rect(data, dtype),)),
     grad="none", covers=("linalg.matrix_rank",), no_rule=INDICES)


def _draw_qr(data, dtype):
    mode = data.draw(st.sampled_from(["reduced", "complete", "r"]))
    a = _rect(data, dtype, tall=mode != "complete")
    return Call((a,), {"mode": mode})


def _full_rank(call):
    return bool(np.all(np.linalg.svd(call.args[0], compute_uv=False) > 0.05))


def _qr_ok(call):
    # Householder QR jumps (a sign) where a column is already zero below the diagonal;
    # for complex input also where a column with nothing below its diagonal (the last
    # of a square matrix, a 1x1) has a real diagonal entry: LAPACK reflects it to -|a|
    # as soon as its imaginary part is not exactly 0.
    a = np.asarray(call.args[0])
    m, n = a.shape[-2:]
    below = np.tril(np.ones((m, n), dtype=bool), -1)
    ok = _full_rank(call) and bool(np.all(np.abs(a[..., below]) > 0.05))
    if ok and np.iscomplexobj(a) and n >= m:
        ok = bool(np.all(np.abs(a[..., m - 1, m - 1].imag) > 0.05))
    return ok


case("linalg.qr", lambda a, mode="reduced": (np.linalg.qr(a, mode),) if mode == "r" else tuple(
     np.linalg.qr(a, mode)), _draw_qr, ok=_qr_ok,
     call=lambda a, mode="reduced": (yaad.linalg.qr(a, mode),) if mode == "r" else tuple(
         yaad.linalg.qr(a, mode)), covers=("linalg.qr",),
     second=lambda fn: same(fn, (real(3, 3),), (cplx(3, 2),)),
     variants={
         "qr.Q": Variant(
             lambda a: L.qr(a).Q,
             _g((4, 3)),
             lambda a: np.linalg.qr(a).Q,
             second=True,
             float32=True,
             spectral=True),
         "qr.R": Variant(
             lambda a: L.qr(a).R,
             _g((4, 3)),
             lambda a: np.linalg.qr(a).R,
             second=True,
             spectral=True),
         "qr.square": Variant(
             lambda a: L.qr(a).Q,
             _g((3, 3)),
             lambda a: np.linalg.qr(a).Q,
             spectral=True),
         "qr.wide.Q": Variant(
             lambda a: L.qr(a).Q,
             _g((2, 4)),
             lambda a: np.linalg.qr(a).Q,
             spectral=True),
         "qr.wide.R": Variant(
             lambda a: L.qr(a).R,
             _g((2, 4)),
             lambda a: np.linalg.qr(a).R,
             second=True,
             spectral=True),
         "qr.complete.R": Variant(
             lambda a: L.qr(a, "complete").R,
             _g((4, 2)),
             lambda a: np.linalg.qr(a, "complete").R,
             spectral=True),
         "qr.complete.complement": Variant(
             lambda a: projector(L.qr(a, "complete").Q[..., 2:]),
             _g((4, 2)),
             spectral=True),
         "qr.r": Variant(
             lambda a: L.qr(a, "r"),
             _g((4, 3)),
             lambda a: np.linalg.qr(a, "r"),
             spectral=True)})


def _draw_lstsq(data, dtype):
    a = _rect(data, dtype, tall=True, batch=False)
    m = a.shape[0]
    bshape = data.draw(st.sampled_from([(m,), (m, 2)]))
    return Call((a, data.draw(values(dtype, bshape))), {"rcond": None})


case("linalg.lstsq", lambda a, b, rcond=None: np.linalg.lstsq(a, b, rcond=rcond)[0],
     _draw_lstsq, ok=_full_rank, exact=False,
     call=lambda a, b, rcond=None: yaad.linalg.lstsq(a, b, rcond=rcond)[0],
     covers=("linalg.lstsq",), note="the solution; residuals and s in test_linalg",
     second=Second(
         lambda fn: same(fn, (real(4, 3), real(4, 2)), (cplx(4, 2), cplx(4, 2))),
         jax=_jax_lstsq),
     variants={
         "lstsq.x": Variant(
             lambda a, b: L.lstsq(a, b)[0],
             lambda r, b, c: (li.rand(r, b + (5, 3), c), li.rand(r, b + (5, 2), c)),
             _lstsq_ref,
             second=True,
             float32=True),
         "lstsq.x.vector": Variant(
             lambda a, b: L.lstsq(a, b)[0],
             lambda r, b, c: (li.rand(r, b + (5, 3), c), li.rand(r, (5,), c)),
             _lstsq_ref),
         "lstsq.x.wide": Variant(
             lambda a, b: L.lstsq(a, b)[0],
             lambda r, b, c: (li.rand(r, b + (2, 4), c), li.rand(r, b + (2, 3), c)),
             _lstsq_ref),
         "lstsq.residuals": Variant(
             lambda a, b: L.lstsq(a, b)[1],
             lambda r, b, c: (li.rand(r, (5, 3), c), li.rand(r, (5, 2), c)),
             lambda a, b: np.linalg.lstsq(a, b)[1],
             batched=False),
         "lstsq.s": Variant(
             lambda a, b: L.lstsq(a, b)[3],
             lambda r, b, c: (li.rand(r, (5, 3), c), li.rand(r, (5,), c)),
             lambda a, b: np.linalg.lstsq(a, b)[3],
             batched=False)})


def _norm_ok(call):
    x = np.asarray(call.args[0])
    v = np.sort(np.abs(x).ravel())
    return bool(np.all(v > 0.05)) and (v.size < 2 or bool(np.all(np.diff(v) > 0.01)))


def _draw_vector_norm(data, dtype):
    s = data.draw(shapes(min_side=1))
    kw = {"axis": data.draw(axes(len(s))), "keepdims": data.draw(st.booleans()),
          "ord": data.draw(st.sampled_from([2, 1, np.inf, -np.inf, 3, 0.5, -1]))}
    return Call((data.draw(values(dtype, s)),), kw)


def _draw_matrix_norm(data, dtype):
    kw = {"keepdims": data.draw(st.booleans()),
          "ord": data.draw(st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]))}
    return Call((_rect(data, dtype),), kw)


def _matrix_norm_ok(call):
    a = call.args[0]
    return (_svd_ok(call) and _gaps(np.sum(np.abs(a), axis=-1), 0.02)
            and _gaps(np.sum(np.abs(a), axis=-2), 0.02) and bool(np.all(np.abs(a) > 0.02)))


def _draw_norm(data, dtype):
    if data.draw(st.booleans()):
        s = data.draw(shapes(min_side=1))
        kw = {"ord": None, "axis": data.draw(st.one_of(st.none(), axis(len(s), False)))
              if len(s) else None, "keepdims": data.draw(st.booleans())}
        if len(s) == 1 or isinstance(kw["axis"], int):
            kw["ord"] = data.draw(st.sampled_from([None, 2, 1, np.inf, -np.inf, 3]))
        return Call((data.draw(values(dtype, s)),), kw)
    a = _rect(data, dtype)
    return Call((a,), {"ord": data.draw(st.sampled_from([None, "fro", "nuc", 1, 2, np.inf])),
                       "axis": (-2, -1), "keepdims": data.draw(st.booleans())})


case("linalg.vector_norm", _la("vector_norm"), _draw_vector_norm, ok=_norm_ok, exact=False,
     covers=("linalg.vector_norm",),
     second=lambda fn: same(fn, (away(2, 3),), (cplx(3, center=Z),)),
     variants={
         "vector_norm": Variant(
             L.vector_norm,
             lambda r, b, c: (li.rand(r, b + (3,), c),),
             np.linalg.vector_norm,
             second=True,
             float32=True),
         "vector_norm.axis.keepdims": Variant(
             lambda x: L.vector_norm(x, axis=(0, -1), keepdims=True),
             lambda r, b, c: (li.rand(r, b + (2, 3), c),),
             lambda x: np.linalg.vector_norm(x, axis=(0, -1), keepdims=True)),
         "vector_norm.1": Variant(
             lambda x: L.vector_norm(x, axis=-1, ord=1),
             lambda r, b, c: (li.rand(r, b + (3,), c),),
             lambda x: np.linalg.vector_norm(x, axis=-1, ord=1)),
         "vector_norm.3": Variant(
             lambda x: L.vector_norm(x, axis=-1, ord=3),
             lambda r, b, c: (li.rand(r, b + (3,), c),),
             lambda x: np.linalg.vector_norm(x, axis=-1, ord=3)),
         "vector_norm.0.5": Variant(
             lambda x: L.vector_norm(x, axis=-1, ord=0.5),
             lambda r, b, c: (li.rand(r, b + (3,), c),),
             lambda x: np.linalg.vector_norm(x, axis=-1, ord=0.5)),
         "vector_norm.inf": Variant(
             lambda x: L.vector_norm(x, axis=-1, ord=np.inf),
             lambda r, b, c: (li.rand(r, b + (3,), c),),
             lambda x: np.linalg.vector_norm(x, axis=-1, ord=np.inf),
             second=True),
         "vector_norm.-inf": Variant(
             lambda x: L.vector_norm(x, axis=-1, ord=-np.inf),
             lambda r, b, c: (li.rand(r, b + (3,), c),),
             lambda x: np.linalg.vector_norm(x, axis=-1, ord=-np.inf))})
case("linalg.matrix_norm", _la("matrix_norm"), _draw_matrix_norm, ok=_matrix_norm_ok,
     exact=False,
     variants={
         **{f"matrix_norm.{o}": Variant(lambda x, o=o: L.matrix_norm(x, ord=o), _tall,
                                        lambda x, o=o: np.linalg.matrix_norm(x, ord=o),
                                        second=o == "nuc", float32=o in ("nuc", 2))
            for o in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf)},
         "matrix_norm.keepdims": Variant(
             lambda x: L.matrix_norm(x, ord="nuc", keepdims=True),
             _tall,
             lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True))})
case("linalg.norm", _la("norm"), _draw_norm,
     ok=lambda c: _norm_ok(c) if c.kwargs["axis"] != (-2, -1) else _matrix_norm_ok(c),
     exact=False,
     variants={
         "norm": Variant(L.norm, lambda r, b, c: (li.rand(r, b + (2, 3), c),), np.linalg.norm),
         "norm.axis": Variant(
             lambda x: L.norm(x, ord=3, axis=0),
             lambda r, b, c: (li.rand(r, b + (2, 3), c),),
             lambda x: np.linalg.norm(x, ord=3, axis=0)),
         "norm.axes.keepdims": Variant(
             lambda x: L.norm(x, ord="nuc", axis=(0, -1), keepdims=True),
             lambda r, b, c: (li.rand(r, b + (2, 3), c),),
             lambda x: np.linalg.norm(x, ord="nuc", axis=(0, -1), keepdims=True)),
         "norm.matrix.ord": Variant(
             lambda x: L.norm(x, ord=1),
             lambda r, b, c: (li.rand(r, (3, 2), c),),
             lambda x: np.linalg.norm(x, ord=1),
             batched=False)})


def _draw_cross(data, dtype):
    sa, sb = data.draw(broadcastable_shapes(2, max_dims=2, min_side=1))
    return Call((data.draw(values(dtype, sa + (3,))), data.draw(values(dtype, sb + (3,)))))


case("linalg.cross", _la("cross"), _draw_cross,
     second=lambda fn: same(fn, (real(3), real(2, 3)), (cplx(3), real(3))),
     variants={
         "cross": Variant(
             L.cross,
             lambda r, b, c: (li.rand(r, b + (3,), c), li.rand(r, (3,), c)),
             np.linalg.cross,
             second=True,
             float32=True)})


def _draw_vecdot(data, dtype):
    sa, sb = data.draw(broadcastable_shapes(2, max_dims=2, min_side=1))
    k = data.draw(st.integers(1, 3))
    return Call((data.draw(values(dtype, sa + (k,))), data.draw(values(dtype, sb + (k,)))))


case("linalg.vecdot", _la("vecdot"), _draw_vecdot, exact=False,
     variants={
         "vecdot": Variant(
             L.vecdot,
             lambda r, b, c: (li.rand(r, b + (2, 3), c), li.rand(r, (3,), c)),
             np.linalg.vecdot)})
case("linalg.outer", _la("outer"), lambda data, dtype: Call(tuple(data.draw(values(
    dtype, (data.draw(st.integers(1, 3)),))) for _ in range(2))),
     variants={
         "outer": Variant(
             L.outer,
             lambda r, b, c: (li.rand(r, (3,), c), li.rand(r, (2,), c)),
             np.linalg.outer,
             batched=False)})
case("linalg.trace", _la("trace"), lambda data, dtype: Call((data.draw(values(dtype, data.draw(
    shapes(min_dims=2)))),), {"offset": data.draw(st.integers(-2, 2))}),
     variants={
         "trace": Variant(
             lambda a: L.trace(a, offset=1),
             lambda r, b, c: (li.rand(r, b + (3, 4), c),),
             lambda a: np.linalg.trace(a, offset=1))})
case("linalg.diagonal", _la("diagonal"), lambda data, dtype: Call((data.draw(values(
    dtype, data.draw(shapes(min_dims=2)))),), {"offset": data.draw(st.integers(-2, 2))}),
     variants={
         "diagonal": Variant(
             lambda a: L.diagonal(a, offset=-1),
             lambda r, b, c: (li.rand(r, b + (4, 3), c),),
             lambda a: np.linalg.diagonal(a, offset=-1))})
case("linalg.matmul", _la("matmul"), draw_matmul,
     variants={
         "matmul": Variant(
             L.matmul,
             lambda r, b, c: (li.rand(r, b + (2, 3), c), li.rand(r, (3, 2), c)),
             np.linalg.matmul)})

case("linalg.matrix_transpose", _la("matrix_transpose"), lambda data, dtype: Call((data.draw(
    values(dtype, data.draw(shapes(min_dims=2)))),)),
     variants={
         "matrix_transpose": Variant(
             L.matrix_transpose,
             lambda r, b, c: (li.rand(r, b + (2, 3), c),),
             np.linalg.matrix_transpose)})
case("linalg.tensordot", lambda a, b, axes=2: np.linalg.tensordot(a, b, axes=axes),
     draw_tensordot, exact=False,
     variants={
         "tensordot": Variant(
             lambda x, y: L.tensordot(x, y, axes=([0, 2], [1, 0])),
             lambda r, b, c: (li.rand(r, (2, 3, 4), c), li.rand(r, (4, 2, 3), c)),
             lambda x, y: np.linalg.tensordot(x, y, axes=([0, 2], [1, 0])),
             batched=False)})


def _draw_multi_dot(data, dtype):
    dims = [data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(3, 5)))]
    shapes_ = [(dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    if data.draw(st.booleans()):
        shapes_[0] = shapes_[0][1:]
    if data.draw(st.booleans()):
        shapes_[-1] = shapes_[-1][:1]
    return Call(tuple(data.draw(values(dtype, s)) for s in shapes_))


case("linalg.multi_dot", lambda *xs: np.linalg.multi_dot(xs), _draw_multi_dot, exact=False,
     call=lambda *xs: yaad.linalg.multi_dot(list(xs)),
     variants={
         "multi_dot": Variant(
             lambda *xs: L.multi_dot(xs),
             lambda r, b, c: (li.rand(r, (3,), c), li.rand(r, (3, 5), c), li.rand(r, (5, 2), c),
                              li.rand(r, (2, 4), c)),
             lambda *xs: np.linalg.multi_dot(xs),
             batched=False)})


def _draw_tensorinv(data, dtype):
    a = _square(data, dtype, 2, 3, batch=False)
    n = a.shape[0]
    out = {2: (2, 1), 3: (3, 1)}[n]
    return Call((a.reshape(out + (n,)),), {"ind": len(out)})


def _draw_tensorsolve(data, dtype):
    call = _draw_tensorinv(data, dtype)
    a = call.args[0]
    b = data.draw(values(dtype, a.shape[:call.kwargs["ind"]]))
    return Call((a, b))


case("linalg.tensorinv", _la("tensorinv"), _draw_tensorinv, exact=False,
     variants={
         "tensorinv": Variant(
             lambda a: L.tensorinv(a, ind=1),
             lambda r, b, c: (li.general(r, (), 4, c),),
             lambda a: np.linalg.tensorinv(a, ind=1),
             batched=False)})
case("linalg.tensorsolve", _la("tensorsolve"), _draw_tensorsolve, exact=False,
     variants={
         "tensorsolve": Variant(
             L.tensorsolve,
             lambda r, b, c: (li.general(r, (), 6, c).reshape(2, 3, 6),
                              li.rand(r, (2, 3), c)),
             np.linalg.tensorsolve,
             batched=False)})


def _near_identity(data, dtype):
    n = data.draw(st.integers(1, 3))
    return np.eye(n, dtype=dtype) + 0.3 * data.draw(values(dtype, _batch(data) + (n, n), SMALL))


def _scipy_matfunc(name):
    """SciPy's matrix function, batched, in the input's precision (SciPy computes single
    precision in double; yaad keeps float32 float32)."""

    def ref(a):
        f = getattr(sla, name)
        out = np.array([f(m) for m in a.reshape(-1, *a.shape[-2:])]).reshape(a.shape)
        if a.dtype.kind == "f" and np.iscomplexobj(out) and np.all(abs(out.imag) < 1e-5):
            out = out.real  # SciPy's logm of a real matrix with complex eigenvalues
        single = a.dtype in (F32, C64)
        kind = "c" if np.iscomplexobj(out) or a.dtype.kind == "c" else "f"
        return out.astype({("f", False): F64, ("f", True): F32, ("c", False): C128,
                           ("c", True): C64}[kind, single])

    return ref


case("linalg.expm", _scipy_matfunc("expm"), lambda data, dtype: Call((data.draw(values(
    dtype, _batch(data) + (data.draw(st.integers(1, 3)),) * 2, SMALL)),)), exact=False,
     second=Second(
         lambda fn: same(fn, (0.5 * real(3, 3),), (0.5 * cplx(2, 2),)),
         jax="jax.scipy.linalg.expm"),
     variants={
         "expm": Variant(
             L.expm,
             lambda r, b, c: (li.general(r, b, 3, c) / 3,),
             sla.expm,
             second=True,
             float32=True)})


def _draw_near_identity(data, dtype):
    return Call((_near_identity(data, dtype),))


case("linalg.logm", _scipy_matfunc("logm"), _draw_near_identity, exact=False,
     second=Second(lambda fn: cases((lambda a: fn(np.eye(3) + 0.3 * a), (real(3, 3),)),
                                    (lambda a: fn(np.eye(2) + 0.3 * a), (cplx(2, 2),))),
                   no_jax="jax.scipy.linalg has no logm"),
     # (SciPy's logm costs about a millisecond a matrix: a smaller batch)
     variants={"logm": Variant(L.logm, _right_half_plane, sla.logm, batched=[(), (2,)],
                               second=True, float32=True)})
case("linalg.sqrtm", _scipy_matfunc("sqrtm"), _draw_near_identity, exact=False,
     second=Second(lambda fn: cases((lambda a: fn(2 * np.eye(3) + 0.3 * a), (real(3, 3),)),
                                    (lambda a: fn(2 * np.eye(2) + 0.3 * a), (cplx(2, 2),))),
                   no_jax="jax.scipy.linalg.sqrtm has no derivative rule"),
     variants={"sqrtm": Variant(L.sqrtm, _right_half_plane, sla.sqrtm, second=True,
                                float32=True)})


def _draw_solve_triangular(data, dtype):
    a = _square(data, dtype, batch=False)
    n = a.shape[0]
    b = data.draw(values(dtype, data.draw(st.sampled_from([(n,), (n, 2)]))))
    kw = {"trans": data.draw(st.sampled_from([0, 1, 2])), "lower": data.draw(st.booleans()),
          "unit_diagonal": data.draw(st.booleans())}
    return Call((a, b), kw)


case("linalg.solve_triangular", lambda a, b, **kw: sla.solve_triangular(a, b, **kw),
     _draw_solve_triangular, exact=False,
     note="reads one triangle: the gradient for the other one is zero",
     second=Second(
         lambda fn: cases(
             (lambda a, b: fn(a, b, lower=True), (np.tril(well(3)), real(3, 2))),
             (lambda a, b: fn(a, b, lower=False), (np.triu(well(3, True)), cplx(3)))),
         jax="jax.scipy.linalg.solve_triangular"),
     variants={
         "solve_triangular.lower": Variant(
             lambda a, b: L.solve_triangular(a, b, lower=True),
             lambda r, b, c: (li.general(r, b, 3, c), li.rand(r, b + (3, 2), c)),
             lambda a, b: sla.solve_triangular(a, b, lower=True),
             second=True,
             float32=True),
         "solve_triangular.upper.T": Variant(
             lambda a, b: L.solve_triangular(a, b, trans="T"),
             lambda r, b, c: (li.general(r, b, 3, c), li.rand(r, b + (3, 2), c)),
             lambda a, b: sla.solve_triangular(a, b, trans="T"),
             second=True),
         "solve_triangular.lower.C.unit": Variant(
             lambda a, b: L.solve_triangular(a, b, trans=2, lower=True, unit_diagonal=True),
             lambda r, b, c: (li.general(r, b, 3, c), li.rand(r, b + (3, 2), c)),
             lambda a, b: sla.solve_triangular(a, b, trans=2, lower=True, unit_diagonal=True)),
         "solve_triangular.vector": Variant(
             lambda a, b: L.solve_triangular(a, b, trans=1, lower=True),
             lambda r, b, c: (li.general(r, b, 3, c), li.rand(r, (3,), c)),
             lambda a, b: sla.solve_triangular(a, b, trans=1, lower=True))})


def _draw_block_upper(data, dtype):
    n = data.draw(st.integers(1, 3))
    sa, se = data.draw(broadcastable_shapes(2, max_dims=2, min_side=1))
    return Call((data.draw(values(dtype, sa + (n, n))), data.draw(values(dtype, se + (n, n)))))


def _block_upper_ref(a, e):
    z = np.zeros(np.broadcast_shapes(a.shape, e.shape), np.result_type(a, e))
    a, e = a + z, e + z
    return np.concatenate([np.concatenate([a, e], -1), np.concatenate([z, a], -1)], -2)


case("linalg.matrix_functions.block_upper", _block_upper_ref, _draw_block_upper,
     second=Second(
         lambda fn: same(fn, (real(2, 2), cplx(2, 2))),
         jax=_jax_block_upper))


def _draw_sylvester(data, dtype):
    m, n = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    batch = data.draw(st.sampled_from([(), (2,)]))
    a = data.draw(values(dtype, batch + (m, m), SMALL)) + 3 * np.eye(m, dtype=dtype)
    b = data.draw(values(other_dtype(data, dtype, False), (n, n), SMALL)) + 2 * np.eye(n)
    q = data.draw(values(dtype, (m, n)))
    return Call((a, b.astype(np.result_type(b, dtype)), q))


def _sylvester_ref(a, b, q):
    # (promoted first: SciPy 1.17 gives a wrong x for a real `a` with complex eigenvalues
    # and a complex `b`; see test_regression_solve_sylvester_with_a_real_and_a_complex_matrix)
    a, b, q = (np.asarray(v, np.result_type(a, b, q)) for v in (a, b, q))
    return np.vectorize(sla.solve_sylvester, signature="(m,m),(n,n),(m,n)->(m,n)")(a, b, q)


case("linalg.solve_sylvester", _sylvester_ref, _draw_sylvester, exact=False,
     second=Second(
         lambda fn: same(fn,
             (well(3), well(2), real(3, 2)),
             (well(2, True), well(2), cplx(2, 2))),
         jax=_jax_solve_sylvester))


def _draw_lyapunov(data, dtype):
    n = data.draw(st.integers(1, 3))
    a = data.draw(values(dtype, (n, n), SMALL)) + 3 * np.eye(n, dtype=dtype)
    return Call((a, data.draw(values(dtype, (n, n)))))


case("linalg.solve_continuous_lyapunov", lambda a, q: sla.solve_continuous_lyapunov(a, q),
     _draw_lyapunov, exact=False)


def _draw_banded(data, dtype):
    n = data.draw(st.integers(1, 5))
    lower, upper = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    ab = data.draw(values(dtype, (lower + upper + 1, n), SMALL))
    ab[upper] += 4
    b = data.draw(values(dtype, data.draw(st.sampled_from([(n,), (n, 2)]))))
    return Call(((lower, upper), ab, b))


case("linalg.solve_banded", lambda lu, ab, b: sla.solve_banded(lu, ab, b), _draw_banded,
     exact=False, note="entries of ab outside the matrix are not read: zero gradient",
     second=Second(
         lambda fn: cases(
             (lambda ab, b: fn((1, 2), ab, b),
   (real(4, 5) + np.array([[0], [0], [4], [0]]), real(5, 2))),
             (lambda ab, b: fn((1, 0), ab, b),
              (cplx(2, 3) + np.array([[4], [0]]), cplx(3)))),
         no_jax="jax.scipy.linalg has no solve_banded"))


def _draw_polar(data, dtype):
    side = data.draw(st.sampled_from(["right", "left"]))
    return Call((_rect(data, dtype, batch=False),), {"side": side})


case("linalg.polar", lambda a, side="right": sla.polar(a, side), _draw_polar, ok=_svd_ok,
     exact=False)
case("linalg.schur", lambda a, output="real": sla.schur(a, output),
     lambda data, dtype: Call((_square(data, dtype, batch=False),), {"output": data.draw(
         st.sampled_from(["real", "complex"]))}), grad="none", nondiff=(0,),
     note="no gradient: the Schur vectors' phases and the eigenvalue order are gauge")


# Terms of other ops' rules whose value is 0 and whose derivative is not (a derivative the
# chain rule misses): finite differences of the value cannot check them; the tests named
# check them through the op whose rule uses them.
RULE_TERMS = {
    "linalg.eigh_level_curvature": "test_degenerate_spectra.py::test_second_derivatives_of_a_"
                                   "loss_curved_across_a_level",
    "linalg.eigh_level_term": "its third derivative raises (test_degenerate_spectra.py)",
    "linalg.eigh_split_guard": "test_degenerate_spectra.py::test_second_derivatives_of_a_"
                               "loss_curved_across_a_level",
}
