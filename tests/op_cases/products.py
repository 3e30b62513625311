"""Rows of the products: matmul, trace, dot and its relatives, einsum, the
convolutions (``numpy`` and ``scipy.signal``) and yaad.sparse's matrix products."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import yaad
from tests.op_cases.fixed import cases, cplx, real, same
from tests.op_cases.table import Second, case, one, other_dtype
from tests.support.strategies import (
    Call,
    broadcastable_shapes,
    shapes,
    values,
)

# yaad.sparse's second-order rows: a fixed pattern with values (rows 0: cols 0, 2; 1: col 1;
# 2: cols 0, 2), and a constant matrix
SPARSE_PATTERN = yaad.sparse.tensor.Pattern(np.array([0, 2, 3, 5]), np.array([0, 2, 1, 0, 2]),
                                             (3, 3))
SPARSE_FIXED = SPARSE_PATTERN.matrix(np.arange(1.0, 6.0))

# ---- JAX's functions, where the op's name does not find them (second-order rows) ----------


def _jax_pattern(values, p):  # yaad.sparse's CSR pattern with values, as a dense matrix
    import jax.numpy as jnp

    dense = jnp.zeros(p.shape, values.dtype)
    return dense.at[np.asarray(p.rows), np.asarray(p.indices)].set(values)


def _jax_pattern_matmul(v, x, p):
    return _jax_pattern(v, p) @ x


def _jax_pattern_matmul_transposed(v, x, p):
    return _jax_pattern(v, p).T @ x


def _jax_operator_matmul(x, a):
    import jax.numpy as jnp

    return jnp.asarray(a.toarray()) @ x


def draw_matmul(data, dtype):
    n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
    kind = data.draw(st.sampled_from(["mm", "mv", "vm", "vv"]))
    ba, bb = data.draw(broadcastable_shapes(2, max_dims=2))
    a_shape = (k,) if kind in ("vm", "vv") else (*ba, n, k)
    b_shape = (k,) if kind in ("mv", "vv") else (*bb, k, m)
    a = data.draw(values(dtype, a_shape))
    b = data.draw(values(other_dtype(data, dtype, False), b_shape))
    return Call((a, b))


case("matmul", np.matmul, draw_matmul,
     second=lambda fn: same(fn,
         (real(2, 3), real(3, 2)),
         (cplx(2, 2, 3), cplx(3, 2)),
         (real(3), cplx(3, 2)),
         (cplx(2, 3), real(3))))


def draw_trace(data, shape):
    n = len(shape)
    a1, a2 = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    return (), {"offset": data.draw(st.integers(-2, 2)), "axis1": a1 - n * data.draw(
        st.integers(0, 1)), "axis2": a2}


case("trace", np.trace, one(shapes(min_dims=2), draw_trace),
     second=lambda fn: same(fn, (real(3, 3),), (cplx(2, 2),)))


# ---- products and einsum ----------------------------------------------------------------------


def _draw_vdot(data, dtype):
    sa = data.draw(shapes(max_dims=2))
    n = math.prod(sa)
    sb = data.draw(st.sampled_from([(n,), sa, (1, n)]))
    return Call((data.draw(values(dtype, sa)), data.draw(values(other_dtype(
        data, dtype, False), sb))))


def draw_tensordot(data, dtype):
    k = data.draw(st.integers(0, 2))
    contracted = tuple(data.draw(st.integers(1, 3)) for _ in range(k))
    fa = tuple(data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2))))
    fb = tuple(data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2))))
    a = data.draw(values(dtype, fa + contracted))
    b = data.draw(values(other_dtype(data, dtype, False), contracted + fb))
    if k and data.draw(st.booleans()):  # the pair form, with the axes of b permuted
        perm = data.draw(st.permutations(range(k)))
        b = np.moveaxis(b, list(range(k)), list(perm))
        axes_ = ([len(fa) + i for i in range(k)], [perm[i] for i in range(k)])
        return Call((a, b), {"axes": axes_})
    return Call((a, b), {"axes": k})


def _draw_two_any(data, dtype):
    sa, sb = data.draw(shapes(max_dims=2)), data.draw(shapes(max_dims=2))
    return Call((data.draw(values(dtype, sa)), data.draw(values(other_dtype(data, dtype, False),
                                                                 sb))))


def _draw_dot(data, dtype):
    kind = data.draw(st.integers(0, 3))
    k = data.draw(st.integers(1, 3))
    sa = [(), (k,), (2, k), (2, 2, k)][kind]
    sb = data.draw(st.sampled_from([(), (k,), (k, 2), (3, k, 2)])) if kind else data.draw(
        shapes(max_dims=2))
    return Call((data.draw(values(dtype, sa)), data.draw(values(dtype, sb))))


def _draw_inner(data, dtype):
    k = data.draw(st.integers(1, 3))
    sa = data.draw(st.sampled_from([(), (k,), (2, k), (2, 1, k)]))
    sb = data.draw(st.sampled_from([(), (k,), (3, k)]))
    return Call((data.draw(values(dtype, sa)), data.draw(values(dtype, sb))))


case("vdot", np.vdot, _draw_vdot,
     second=lambda fn: same(fn, (real(3), real(3)), (cplx(3), cplx(3))))
case("tensordot", np.tensordot, draw_tensordot, exact=False,
     second=lambda fn: cases((lambda a, b: fn(a, b, 1), (real(2, 3), cplx(3, 2)))))
case("dot", np.dot, _draw_dot, exact=False)
case("inner", np.inner, _draw_inner, exact=False)
case("outer", np.outer, _draw_two_any)
case("kron", np.kron, _draw_two_any)


@st.composite
def einsum_calls(draw, dtype, max_operands=3):
    """Random einsum subscripts (repeated labels, ellipses, implicit outputs) and operands."""
    labels = "abcd"
    size = {c: draw(st.integers(1, 3)) for c in labels}
    n = draw(st.integers(1, max_operands))
    ell = draw(st.booleans())
    batch = draw(shapes(max_dims=2, min_side=1, max_side=2)) if ell else ()
    terms, ops = [], []
    for _ in range(n):
        term = "".join(draw(st.lists(st.sampled_from(labels), max_size=3)))
        shape = tuple(size[c] for c in term)
        if ell:
            lead = batch[len(batch) - draw(st.integers(0, len(batch))):]
            lead = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in lead)
            shape = lead + shape
            term = "..." + term
        terms.append(term)
        ops.append(draw(values(dtype, shape)))
    used = sorted(set("".join(terms).replace(".", "")))
    if draw(st.booleans()):
        subs = ",".join(terms)
    else:
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        subs = ",".join(terms) + "->" + ("..." if ell else "") + out
    return Call((subs, *ops))


case("einsum", np.einsum, lambda data, dtype: data.draw(einsum_calls(dtype)), exact=False,
     covers=("einsum",),
     second=lambda fn: cases(
         (lambda a, b: fn("ij,jk->ik", a, b), (real(2, 3), cplx(3, 2))),
         (lambda a: fn("ii->", a), (real(3, 3),)),
         (lambda a, b: fn("bij,bji->", a, b), (real(2, 2, 3),
                                                           real(2, 3, 2)))))

# yaad.sparse: products of a fixed pattern with values (rows 0: cols 0, 2; 1: col 1;
# 2: cols 0, 2), of its transpose and of a constant SciPy matrix, with vectors or batches.
_SPARSE_INDPTR, _SPARSE_INDICES = np.array([0, 2, 3, 5]), np.array([0, 2, 1, 0, 2])


def _sparse_dense(v):
    m = np.zeros((3, 3), dtype=np.asarray(v).dtype)
    np.add.at(m, (np.repeat(np.arange(3), np.diff(_SPARSE_INDPTR)), _SPARSE_INDICES), v)
    return m


def _sparse_products(v, x):
    import scipy.sparse as sps

    s = yaad.sparse.csr_array((v, _SPARSE_INDICES, _SPARSE_INDPTR), shape=(3, 3))
    fixed = yaad.sparse.asarray(sps.csr_array(_sparse_dense(np.arange(1.0, 6.0))))
    return yaad.concatenate([s @ x, s.T @ x, fixed @ x, fixed.mH @ x])


def _sparse_products_ref(v, x):
    m, fixed = _sparse_dense(v), _sparse_dense(np.arange(1.0, 6.0))
    return np.concatenate([m @ x, m.T @ x, fixed @ x, fixed.T @ x])


case("sparse.csr_array", _sparse_products_ref, lambda data, dtype: Call((
    data.draw(values(dtype, (5,))),
    data.draw(values(dtype, data.draw(st.sampled_from([(3,), (3, 1), (3, 2)])))))),
    call=_sparse_products, exact=False,
    covers=("sparse.pattern_matmul", "sparse.pattern_matmul_transposed",
            "sparse.operator_matmul"),
    second={
        "sparse.pattern_matmul": Second(
            lambda fn: cases((lambda v, x: fn(v, x, SPARSE_PATTERN), (real(5), real(3))),
                             (lambda v, x: fn(v, x, SPARSE_PATTERN), (cplx(5), cplx(3, 2)))),
            jax=_jax_pattern_matmul),
        "sparse.pattern_matmul_transposed": Second(
            lambda fn: cases((lambda v, x: fn(v, x, SPARSE_PATTERN), (real(5), real(3, 2))),
                             (lambda v, x: fn(v, x, SPARSE_PATTERN), (cplx(5), real(3)))),
            jax=_jax_pattern_matmul_transposed),
        "sparse.operator_matmul": Second(
            lambda fn: cases((lambda x: fn(x, SPARSE_FIXED), (real(3),)),
                             (lambda x: fn(x, SPARSE_FIXED * (1 + 2j)), (cplx(3, 2),))),
            jax=_jax_operator_matmul)})


def _draw_convolve_1d(default):
    def draw(data, dtype):
        a = data.draw(values(dtype, (data.draw(st.integers(1, 5)),)))
        v = data.draw(values(other_dtype(data, dtype, False), (data.draw(st.integers(1, 5)),)))
        mode = data.draw(st.sampled_from([None, "full", "same", "valid"]))
        return Call((a, v), {} if mode is None else {"mode": mode})

    return draw


case("convolve", np.convolve, _draw_convolve_1d("full"),
     second=lambda fn: cases(
         (lambda a, v: fn(a, v, "same"), (real(5), cplx(3))),
         (lambda a, v: fn(a, v), (real(2), real(4)))))
case("correlate", np.correlate, _draw_convolve_1d("valid"),
     second=lambda fn: cases(
         (lambda a, v: fn(a, v, "full"), (cplx(4), cplx(3))),
         (lambda a, v: fn(a, v, "same"), (real(2), real(5)))))


def _draw_convolve_nd(data, dtype):
    nd = data.draw(st.integers(1, 2))
    a = data.draw(values(dtype, tuple(data.draw(st.integers(1, 4)) for _ in range(nd))))
    v = data.draw(values(other_dtype(data, dtype, False),
                         tuple(data.draw(st.integers(1, 3)) for _ in range(nd))))
    if data.draw(st.booleans()):
        a, v = v, a
    return Call((a, v), {"mode": data.draw(st.sampled_from(["full", "same", "valid"])),
                         "method": data.draw(st.sampled_from(["auto", "direct", "fft"]))})


def _scipy_signal(name):
    import scipy.signal as ssig

    return lambda *a, **kw: getattr(ssig, name)(*a, **kw)


case("signal.convolve", _scipy_signal("convolve"), _draw_convolve_nd,
     second=Second(
         lambda fn: cases(
             (lambda a, v: fn(a, v, "valid"), (real(3, 4),
                                               cplx(2, 2)))),
         jax="jax.scipy.signal.convolve"))
case("signal.correlate", _scipy_signal("correlate"), _draw_convolve_nd,
     second=Second(
         lambda fn: cases(
             (lambda a, v: fn(a, v, "same"), (cplx(3, 2),
                                              real(2, 3))),
             (lambda a, v: fn(a, v, "full"), (cplx(3, 3),
                                                         real(2, 2)))),
         jax="jax.scipy.signal.correlate",
         jax_skip={0: "JAX's correlate needs one input smaller in every dimension"}))


def _draw_fftconvolve(data, dtype):
    call = _draw_convolve_nd(data, dtype)
    kw = {"mode": call.kwargs["mode"]}
    if call.args[0].ndim == 2 and data.draw(st.booleans()):
        kw["axes"] = data.draw(st.sampled_from([0, 1, (0, 1), -1]))
        other = 1 - kw["axes"] % 2 if kw["axes"] != (0, 1) else None
        if other is not None:  # the other axis is a batch: lengths equal
            a, v = call.args
            v = np.repeat(v[(slice(None),) * other + (slice(0, 1),)], a.shape[other], other)
            return Call((a, v), kw)
    return Call(call.args, kw)


case("signal.fftconvolve", _scipy_signal("fftconvolve"), _draw_fftconvolve, exact=False)
