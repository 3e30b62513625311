"""Rows of the shape and indexing functions: reshapes, transposes, joins and splits,
rearrangements, indexing and scatters (``yaad/ops/shape.py`` and the composites on it)."""

from __future__ import annotations

import math

import hypothesis.extra.numpy as npst
import numpy as np
from hypothesis import strategies as st

import yaad
from tests.op_cases.fixed import cases, cplx, real, same
from tests.op_cases.products import draw_trace
from tests.op_cases.table import CASES, Case, Second, available, case, one, other_dtype, resolve
from tests.support.strategies import (
    ALL,
    Call,
    axes,
    axis,
    index_expressions,
    shapes,
    values,
)

IDX = np.array([0, 2, 0])

# ---- JAX's functions, where the op's name does not find them (second-order rows) ----------


def _jax_scatter_add(v, idx, shape):
    import jax.numpy as jnp

    return jnp.zeros(shape, v.dtype).at[idx].add(v)


def _jax_index_put(a, v, idx):
    import jax.numpy as jnp

    return a.at[idx].set(v.astype(jnp.result_type(a, v)) if a.dtype.kind == "c"
                         else v.real.astype(a.dtype))


def _jax_repeat_sum(g, repeats, axis, n):  # the sums of consecutive runs (repeat's VJP)
    import jax.numpy as jnp

    return jnp.add.reduceat(g, jnp.arange(0, repeats * n, repeats), axis=axis)


def _jax_diag_embed(d, shape, offset=0, axis1=0, axis2=1):
    import jax.numpy as jnp

    out = jnp.zeros(shape, d.dtype)
    i = jnp.arange(d.shape[-1])
    return out.at[i + max(-offset, 0), i + max(offset, 0)].set(d)


def _jax_concatenate(*xs, axis=0):
    import jax.numpy as jnp

    return jnp.concatenate(xs, axis=axis)


def _jax_stack(*xs, axis=0):
    import jax.numpy as jnp

    return jnp.stack(xs, axis=axis)

# ---- shapes and indexing -----------------------------------------------------------------


def _factorizations(data, shape):
    n = math.prod(shape)
    dims = []
    rest = n
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1]
        d = data.draw(st.sampled_from(divisors))
        dims.append(d)
        rest = rest // d if d else rest
    if rest != 1 or not dims or data.draw(st.booleans()):
        dims.append(rest)
    if n and data.draw(st.booleans()):
        dims[data.draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


def _draw_reshape(data, shape):
    new = _factorizations(data, shape)
    if math.prod(shape) == 0 and -1 in new:
        new = tuple(0 if d == -1 else d for d in new)
    return (new,), {}


def _draw_transpose(data, shape):
    if data.draw(st.booleans()):
        return (), {}
    perm = data.draw(st.permutations(range(len(shape))))
    return (tuple(p - len(shape) if data.draw(st.booleans()) else p for p in perm),), {}


def _draw_two_axes(data, shape):
    n = len(shape)
    return (data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))), {}


def _draw_moveaxis(data, shape):
    n = len(shape)
    k = data.draw(st.integers(1, n))
    src = data.draw(st.permutations(range(n)))[:k]
    dst = data.draw(st.permutations(range(n)))[:k]
    if k == 1 and data.draw(st.booleans()):
        return (src[0], dst[0] - n), {}
    return (tuple(src), tuple(dst)), {}


def _draw_expand_dims(data, shape):
    n = len(shape) + data.draw(st.integers(1, 2))
    ax = data.draw(st.lists(st.integers(0, n - 1), min_size=n - len(shape),
                            max_size=n - len(shape), unique=True))
    return ((ax[0] if len(ax) == 1 else tuple(ax)),), {}


def _draw_squeeze(data, shape):
    ones = [i for i, s in enumerate(shape) if s == 1]
    if not ones or data.draw(st.booleans()):
        return (), {}
    chosen = data.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    return (), {"axis": chosen[0] if len(chosen) == 1 else tuple(chosen)}


def _draw_broadcast_to(data, shape):
    target = data.draw(npst.broadcastable_shapes(shape, max_dims=4, max_side=3))
    # the target must hold the input: broadcast the two shapes
    return (np.broadcast_shapes(shape, target),), {}


case("reshape", np.reshape, one(shapes(), _draw_reshape),
     second=lambda fn: cases(
         (lambda a: fn(a, (3, 2)), (real(2, 3),)),
         (lambda a: fn(a, (-1,)), (cplx(2, 3),))))
case("ravel", np.ravel, one(shapes(), lambda data, s: ((), {})))
case("transpose", np.transpose, one(shapes(), _draw_transpose),
     second=lambda fn: cases(
         (lambda a: fn(a, (1, 0, 2)), (real(2, 3, 2),)),
         (lambda a: fn(a), (cplx(2, 3),))))
case("swapaxes", np.swapaxes, one(shapes(min_dims=1), _draw_two_axes),
     second=lambda fn: cases(
         (lambda a: fn(a, 0, 1), (real(2, 3, 2),)),
         (lambda a: fn(a, -1, 0), (cplx(2, 3),))))
case("matrix_transpose", lambda a: np.swapaxes(a, -1, -2),
     one(shapes(min_dims=2), lambda data, s: ((), {})))
case("moveaxis", np.moveaxis, one(shapes(min_dims=1), _draw_moveaxis),
     second=lambda fn: cases((lambda a: fn(a, 0, -1), (cplx(2, 3, 2),))))
case("expand_dims", np.expand_dims, one(shapes(), _draw_expand_dims),
     second=lambda fn: cases(
         (lambda a: fn(a, 1), (real(2, 3),)),
         (lambda a: fn(a, 0), (cplx(3),))))
case("squeeze", np.squeeze, one(shapes(max_side=2), _draw_squeeze),
     second=lambda fn: cases(
         (lambda a: fn(a, 1), (real(2, 1, 3),)),
         (lambda a: fn(a, 0), (cplx(1, 3),))))
case("broadcast_to", np.broadcast_to, one(shapes(), _draw_broadcast_to),
     second=lambda fn: cases(
         (lambda a: fn(a, (2, 3)), (real(3),)),
         (lambda a: fn(a, (2, 3)), (cplx(1, 3),))))
case("astype", lambda a, dtype: a.astype(dtype),
     one(shapes(), lambda data, s: ((data.draw(st.sampled_from(ALL)),), {})),
     second=Second(
         lambda fn: cases(
             (lambda a: fn(a, np.complex128), (real(2, 3),)),
             (lambda a: fn(a, np.complex128), (cplx(2, 3),))),
         jax=lambda a, dtype: a.astype(dtype)))
case("copy", np.copy, one(shapes(), lambda data, s: ((), {})),
     second=Second(
         lambda fn: same(fn, (real(2, 3),), (cplx(2, 3),)),
         jax="jax.numpy.copy"))
case("func.alias", np.copy, one(shapes(), lambda data, s: ((), {})),
     second=Second(
         lambda fn: same(fn, (real(2, 3),), (cplx(2, 3),)),
         jax=lambda x: x))


def _draw_getitem(data, dtype):
    s = data.draw(shapes(min_dims=1))
    return Call((data.draw(values(dtype, s)), data.draw(index_expressions(s))))


case("getitem", lambda a, idx: a[idx], _draw_getitem,
     second=Second(
         lambda fn: cases(
             (lambda a: fn(a, (slice(None), IDX)), (real(2, 3),)),
             (lambda a: fn(a, (0, slice(1, None))), (cplx(2, 3),))),
         jax=lambda a, idx: a[idx]))


def _draw_scatter_add(data, dtype):
    s = data.draw(shapes(min_dims=1))
    idx = data.draw(index_expressions(s))
    target = np.zeros(s)[idx].shape
    return Call((data.draw(values(dtype, target)), idx, s))


def _scatter_add_ref(values_, idx, shape):
    out = np.zeros(shape, dtype=values_.dtype)
    np.add.at(out, idx, values_)
    return out


case("scatter_add", _scatter_add_ref, _draw_scatter_add,
     second=Second(
         lambda fn: cases(
             (lambda v: fn(v, (slice(None), IDX), (2, 4)),
   (real(2, 3),)),
             (lambda v: fn(v, (slice(None), IDX), (2, 4)),
              (cplx(2, 3),))),
         jax=_jax_scatter_add))


def _draw_index_put(data, dtype):
    s = data.draw(shapes(min_dims=1))
    # repeated integer indices make the put ambiguous: basic indices and masks only
    idx = data.draw(st.one_of(npst.basic_indices(s), npst.arrays(np.bool_, s)))
    target = np.zeros(s)[idx].shape
    vshape = data.draw(npst.broadcastable_shapes(target, max_dims=len(target), min_side=0))
    vdt = other_dtype(data, dtype, np.dtype(dtype).kind != "c")
    return Call((data.draw(values(dtype, s)), data.draw(values(vdt, vshape)), idx))


def _index_put_ref(a, v, idx):
    out = a.copy()
    out[idx] = v
    return out


case("index_put", _index_put_ref, _draw_index_put,
     second=Second(
         lambda fn: cases(
             (lambda a, v: fn(a, v, (slice(None), np.array([1, 3]))),
   (real(2, 4), cplx(2, 2)))),
         jax=_jax_index_put))

# ---- joins and splits --------------------------------------------------------------------


def _draw_join(min_n=1, max_n=3, same_shape=False, min_dims=1):
    def draw(data, dtype):
        base = list(data.draw(shapes(min_dims=min_dims)))
        nd = len(base)
        ax = data.draw(st.integers(-nd, nd - 1)) if nd else 0
        arrs = []
        for _ in range(data.draw(st.integers(min_n, max_n))):
            s = list(base)
            if nd and not same_shape:
                s[ax] = data.draw(st.integers(0, 3))
            arrs.append(data.draw(values(other_dtype(data, dtype, False), tuple(s))))
        if same_shape:
            ax = data.draw(st.integers(-nd - 1, nd))
        return Call(tuple(arrs), {"axis": ax})

    return draw


def _draw_join_none(data, dtype):
    arrs = [data.draw(values(dtype, data.draw(shapes()))) for _ in range(data.draw(
        st.integers(1, 3)))]
    return Call(tuple(arrs), {"axis": None})


case("concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _draw_join(),
     call=lambda *xs, axis=0: yaad.concatenate(list(xs), axis=axis), covers=("concatenate",),
     second=Second(
         lambda fn: cases((lambda a, b: fn(a, b, axis=1), (real(2, 3), cplx(2, 2)))),
         jax=_jax_concatenate))
CASES["concatenate(axis=None)"] = Case(
    "concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _draw_join_none,
    call=lambda *xs, axis=0: yaad.concatenate(list(xs), axis=axis))
case("stack", lambda *xs, axis=0: np.stack(xs, axis=axis), _draw_join(same_shape=True,
                                                                       min_dims=0),
     call=lambda *xs, axis=0: yaad.stack(list(xs), axis=axis), covers=("stack",),
     second=Second(
         lambda fn: cases(
             (lambda a, b: fn(a, b, axis=1), (real(2, 3), real(2, 3))),
             (lambda a, b: fn(a, b, axis=-1), (cplx(2, 3), real(2, 3)))),
         jax=_jax_stack))
for _name in ("hstack", "vstack", "dstack", "column_stack"):
    case(_name, (lambda f: lambda *xs: f(xs))(getattr(np, _name)),
         lambda data, dtype: Call(tuple(data.draw(values(dtype, sh)) for sh in data.draw(
             st.sampled_from([((2,), (2,)), ((2, 3), (2, 3)), ((1, 2), (1, 2), (1, 2)),
                              ((3,), (3,)), ((2, 1, 2), (2, 1, 2))])))),
         call=(lambda f: lambda *xs: f(list(xs)))(resolve(_name)) if available(_name) else None)


def _draw_split(data, dtype):
    s = data.draw(shapes(min_dims=1, min_side=1, max_side=4))
    ax = data.draw(st.integers(-len(s), len(s) - 1))
    n = s[ax]
    how = data.draw(st.one_of(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]),
                              st.lists(st.integers(0, n), max_size=3).map(sorted)))
    return Call((data.draw(values(dtype, s)), how), {"axis": ax})


case("split", np.split, _draw_split)
case("array_split", np.array_split, _draw_split)

# ---- rearranging -----------------------------------------------------------------------------


def _draw_flip(data, shape):
    return (), {"axis": data.draw(axes(len(shape)))}


def _draw_roll(data, shape):
    nd = len(shape)
    if nd and data.draw(st.booleans()):
        ax = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3))
        return (tuple(data.draw(st.integers(-4, 4)) for _ in ax),), {"axis": tuple(ax)}
    return (data.draw(st.integers(-4, 4)),), {"axis": data.draw(axis(nd))}


def _draw_rot90(data, shape):
    a, b = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2,
                              unique=True))
    return (data.draw(st.integers(-2, 5)),), {"axes": (a, b)}


def _draw_tile(data, shape):
    return (tuple(data.draw(st.lists(st.integers(0, 2), max_size=4))),), {}


def _draw_repeat(data, shape):
    nd = len(shape)
    ax = data.draw(axis(nd))
    n = math.prod(shape) if ax is None else shape[ax]
    reps = data.draw(st.one_of(st.integers(0, 3), npst.arrays(np.int64, (n,), elements=st.integers(
        0, 3)), npst.arrays(np.int64, (1,), elements=st.integers(0, 3))))
    return (reps,), {"axis": ax}


def _draw_pad(data, shape):
    nd = len(shape)
    width = data.draw(st.one_of(st.integers(0, 2), st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=nd, max_size=nd).map(tuple)))
    kw = {}
    if data.draw(st.booleans()):
        kw["constant_values"] = data.draw(st.floats(-2, 2))
    return (width,), kw


def _draw_diff(data, shape):
    nd = len(shape)
    kw = {"n": data.draw(st.integers(0, 2)), "axis": data.draw(st.integers(-nd, nd - 1))}
    return (), kw


case("flip", np.flip, one(shapes(), _draw_flip),
     second=lambda fn: cases((lambda a: fn(a, 1), (cplx(2, 3),))))
case("fliplr", np.fliplr, one(shapes(min_dims=2), lambda d, s: ((), {})))
case("flipud", np.flipud, one(shapes(min_dims=1), lambda d, s: ((), {})))
case("rot90", np.rot90, one(shapes(min_dims=2), _draw_rot90))
case("roll", np.roll, one(shapes(), _draw_roll),
     second=lambda fn: cases(
         (lambda a: fn(a, 1, 1), (real(2, 3),)),
         (lambda a: fn(a, -2, 0), (cplx(3, 2),))))
case("tile", np.tile, one(shapes(), _draw_tile),
     second=lambda fn: cases(
         (lambda a: fn(a, (2, 1)), (real(2, 3),)),
         (lambda a: fn(a, (1, 2)), (cplx(2, 3),))))
case("repeat", np.repeat, one(shapes(), _draw_repeat), covers=("repeat", "repeat_sum"),
     second={"repeat": lambda fn: cases((lambda a: fn(a, 2, 1), (real(2, 3),)),
                                        (lambda a: fn(a, 3, 0), (cplx(2, 3),))),
             "repeat_sum": Second(
                 lambda fn: cases((lambda g: fn(g, 2, 1, 3), (real(2, 6),)),
                                  (lambda g: fn(g, 3, 0, 2), (cplx(6, 2),))),
                 jax=_jax_repeat_sum)})
case("pad", np.pad, one(shapes(), _draw_pad), covers=("pad",),
     second=lambda fn: cases((lambda a: fn(a, ((1, 0), (0, 2))), (cplx(2, 3),))))
case("diff", np.diff, one(shapes(min_dims=1), _draw_diff))
case("diagonal", np.diagonal, one(shapes(min_dims=2), draw_trace),
     second=lambda fn: cases(
         (lambda a: fn(a, 0, 1, 2), (real(2, 3, 3),)),
         (lambda a: fn(a, 1, 0, 1), (cplx(3, 3),))))
case("tril", np.tril, one(shapes(min_dims=2), lambda d, s: ((), {"k": d.draw(st.integers(
    -2, 2))})),
     second=lambda fn: cases(
         (lambda m: fn(m), (real(3, 3),)),
         (lambda m: fn(m, -1), (cplx(3, 3),))))
case("triu", np.triu, one(shapes(min_dims=2), lambda d, s: ((), {"k": d.draw(st.integers(
    -2, 2))})),
     second=lambda fn: cases((lambda m: fn(m, 1), (cplx(3, 3),))))
case("diag", np.diag, one(shapes(min_dims=1, max_dims=2), lambda d, s: ((), {"k": d.draw(
    st.integers(-2, 2))})))


def _draw_diag_embed(data, dtype):
    shape = data.draw(shapes(min_dims=2, max_dims=3, min_side=1))
    a1, a2 = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2,
                                unique=True))
    offset = data.draw(st.integers(-1, 1))
    dshape = np.diagonal(np.zeros(shape), offset, a1, a2).shape
    return Call((data.draw(values(dtype, dshape)), shape), {"offset": offset, "axis1": a1,
                                                       "axis2": a2})


def _diag_embed_ref(d, shape, offset=0, axis1=0, axis2=1):
    out = np.zeros(shape, dtype=d.dtype)
    idx = np.diagonal(np.arange(out.size).reshape(shape), offset, axis1, axis2)
    out.reshape(-1)[idx.reshape(-1)] = d.reshape(-1)
    return out


case("diag_embed", _diag_embed_ref, _draw_diag_embed,
     second=Second(
         lambda fn: cases(
             (lambda d: fn(d, (3, 3)), (real(3),)),
             (lambda d: fn(d, (3, 3)), (cplx(3),))),
         jax=_jax_diag_embed))


def _draw_take(data, dtype):
    s = data.draw(shapes(min_dims=0, min_side=1))
    ax = data.draw(axis(len(s)))
    n = math.prod(s) if ax is None else s[ax]
    idx = data.draw(st.one_of(st.integers(-n, n - 1), npst.arrays(
        np.int64, npst.array_shapes(min_dims=0, max_dims=2, max_side=3),
        elements=st.integers(-n, n - 1))))
    return Call((data.draw(values(dtype, s)), idx), {"axis": ax})


def _draw_take_along_axis(data, dtype):
    s = data.draw(shapes(min_dims=1, min_side=1))
    ax = data.draw(st.integers(-len(s), len(s) - 1))
    ishape = list(s)
    ishape[ax] = data.draw(st.integers(0, 4))
    idx = data.draw(npst.arrays(np.int64, tuple(ishape), elements=st.integers(0, s[ax] - 1)))
    return Call((data.draw(values(dtype, s)), idx), {"axis": ax})


case("take", np.take, _draw_take)
case("take_along_axis", np.take_along_axis, _draw_take_along_axis)


def _index_put_inplace(a, v, idx):
    # on a non-leaf copy: in-place on a leaf that requires grad is an error
    t = a * 1 if isinstance(a, yaad.Tensor) else a.copy()
    return yaad.index_put_(t, v, idx)


case("index_put_", _index_put_ref, _draw_index_put, call=_index_put_inplace,
     covers=("index_put_",),
     second=Second(
         lambda fn: cases(
             (lambda a, v: fn(a * 1.0, v, (0, slice(1, 3))),
   (real(2, 4), real(2))),
             (lambda a, v: fn(a * 1.0, v, (0, slice(1, 3))),
              (cplx(2, 4), cplx(2)))),
         jax=_jax_index_put))


def _draw_rollaxis(data, shape):
    n = len(shape)
    return (data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n))), {}


case("rollaxis", np.rollaxis, one(shapes(min_dims=1), _draw_rollaxis))
