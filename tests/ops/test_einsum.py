"""einsum: every NumPy subscript form against numpy.einsum, gradients and second
derivatives against finite differences (real and complex), forward mode, paths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yaad
from tests.support.arrays import assert_like_numpy, check_jvp, random_array
from yaad.ops import products
from yaad.testing import gradcheck, gradgradcheck

FORMS = [
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("ij,jk", (3, 4), (4, 5)),                   # implicit output
    ("ba", (2, 3)),                              # implicit: transposed to "ab"
    ("Ba,ab", (2, 3), (3, 4)),                   # implicit: upper case sorts first
    ("ii->", (3, 3)),
    ("ii", (3, 3)),
    ("ii->i", (3, 3)),
    ("bii->b", (2, 3, 3)),
    ("...ii->...", (2, 2, 3, 3)),
    ("...ii->...i", (2, 3, 3)),
    ("iij->j", (3, 3, 2)),
    ("iji->j", (3, 2, 3)),
    ("iii->i", (3, 3, 3)),
    ("ij->", (2, 3)),
    ("ij->j", (2, 3)),
    ("ij->ji", (2, 3)),
    ("i,i", (4,), (4,)),
    ("i,j", (2,), (3,)),
    ("i,j->ij", (2,), (3,)),
    ("ij,ij->ij", (2, 3), (2, 3)),
    ("ij,jk->ijk", (2, 3), (3, 4)),
    ("ij,kl->", (2, 3), (3, 2)),
    ("ij,j->i", (6, 6), (6,)),
    ("...i,...i", (5, 1, 4), (3, 4)),            # ellipses broadcast
    ("...ij,...jk->...ik", (2, 3, 4), (4, 2)),
    ("i...,i...->...", (3, 2), (3, 2)),
    ("ij,jk->ik", (2, 1), (3, 4)),               # a length-1 label broadcasts
    ("ij,ij->i", (2, 1), (2, 3)),
    ("bij,bji->", (4, 3, 3), (4, 3, 3)),          # W6
    ("ab,aic->bic", (3, 3), (3, 2, 3)),           # W7
    ("bsc,bsd->cd", (3, 2, 4), (3, 2, 4)),
    ("ii,ij->j", (3, 3), (3, 2)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    ("ab,bc,cd,de->ae", (2, 3), (3, 4), (4, 5), (5, 2)),
    ("ab,bc,ca->", (3, 4), (4, 2), (2, 3)),
    ("ii,jj,ij->", (3, 3), (2, 2), (3, 2)),
    ("i,i,i->", (3,), (3,), (3,)),
    ("bij,bjk->bik", (3, 8, 9), (3, 9, 7)),      # the matmul path
    ("jbi,kjb->ikb", (9, 3, 8), (7, 9, 3)),
    ("abc,cbd->da", (5, 4, 6), (6, 4, 7)),
    ("xayb,bzay->xyz", (2, 4, 3, 5), (5, 3, 4, 3)),
]
IDS = [f[0] for f in FORMS]


def _inputs(form, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [random_array(rng, s, dtype) for s in form[1:]]


def _f(subscripts, **kw):
    return lambda *xs: yaad.einsum(subscripts, *xs, **kw)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_values_like_numpy(form, dtype):
    xs = _inputs(form, dtype)
    expected = np.einsum(form[0], *xs)
    out = yaad.einsum(form[0], *[yaad.tensor(x, requires_grad=True) for x in xs])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_like_numpy(out, expected, exact=False, rtol=tol, atol=tol)
    assert_like_numpy(yaad.einsum(form[0], *xs), expected, exact=False, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_gradients(form, dtype):
    gradcheck(_f(form[0]), _inputs(form, dtype))


@pytest.mark.parametrize("form", [f for f in FORMS if len(f) > 2], ids=lambda f: f[0])
def test_gradients_mixed_real_and_complex(form):
    xs = _inputs(form, np.float64)
    xs[0] = _inputs(form, np.complex128, seed=1)[0]
    gradcheck(_f(form[0]), xs)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_second_derivatives(form, dtype):
    gradgradcheck(_f(form[0]), _inputs(form, dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_forward_mode(form, dtype):
    check_jvp(_f(form[0]), _inputs(form, dtype))


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_float32_stays_float32(form):
    xs = _inputs(form, np.float32)
    ts = [yaad.tensor(x, requires_grad=True) for x in xs]
    out = yaad.einsum(form[0], *ts)
    assert out.dtype == np.float32
    yaad.sum(out).backward()
    ref = [yaad.tensor(x.astype(np.float64), requires_grad=True) for x in xs]
    yaad.sum(yaad.einsum(form[0], *ref)).backward()
    for t, r in zip(ts, ref):
        assert t.grad.dtype == np.float32
        np.testing.assert_allclose(t.grad, r.grad, rtol=1e-4, atol=1e-4)


def test_trace_gradient_is_the_identity():
    a = yaad.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    yaad.einsum("ii->", a).backward()
    np.testing.assert_array_equal(a.grad, np.eye(3))
    b = yaad.tensor(np.ones((2, 3, 3)), requires_grad=True)
    yaad.einsum("bii->b", b).backward(np.array([2.0, 3.0]))
    np.testing.assert_array_equal(b.grad, [2 * np.eye(3), 3 * np.eye(3)])


def test_batched_trace_gradients_are_transposes(rng):
    a, b = rng.standard_normal((5, 4, 4)), rng.standard_normal((5, 4, 4))
    ta, tb = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
    loss = yaad.einsum("bij,bji->", ta, tb)
    np.testing.assert_allclose(loss.data, np.sum(np.trace(a @ b, axis1=1, axis2=2)))
    loss.backward()
    np.testing.assert_allclose(ta.grad, b.transpose(0, 2, 1))
    np.testing.assert_allclose(tb.grad, a.transpose(0, 2, 1))


def test_mps_norm_chain():
    # <psi|psi> of a small matrix product state, contracted site by site (W7's loop).
    rng = np.random.default_rng(3)
    shapes = [(1, 2, 3), (3, 2, 3), (3, 2, 1)]
    sites = [rng.standard_normal(s) for s in shapes]

    def norm(*xs):
        env = np.ones((1, 1))
        for a in xs:
            t = yaad.einsum("ab,asc->bsc", env, a)
            env = yaad.einsum("bsc,bsd->cd", t, a)
        return yaad.sum(env)

    psi = np.einsum("asb,btc,cud->stu", *sites).ravel()
    np.testing.assert_allclose(norm(*sites), psi @ psi)
    gradcheck(norm, sites)
    gradgradcheck(norm, sites)


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", "auto", "dp",
                                      ("greedy", 10**6), "path"])
def test_optimize_accepts_what_numpy_accepts(optimize, rng):
    xs = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 5), (5, 2))]
    subs = "ab,bc,cd,de->ae"
    if optimize == "path":
        optimize = np.einsum_path(subs, *xs, optimize="optimal")[0]  # ['einsum_path', ...]
    out = yaad.einsum(subs, *xs, optimize=optimize)
    np.testing.assert_allclose(out, np.einsum(subs, *xs))
    gradcheck(_f(subs, optimize=optimize), xs)


def test_paths_are_cached(rng):
    xs = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 5))]
    yaad.einsum("ab,bc,cd->ad", *xs)
    before = products._plan.cache_info()
    yaad.einsum("ab,bc,cd->ad", *xs)
    after = products._plan.cache_info()
    assert after.hits == before.hits + 1 and after.misses == before.misses


def test_backward_of_a_chain_reuses_the_forward_intermediates(rng):
    # Three operands are contracted pairwise: the graph has two einsum nodes, not one.
    xs = [yaad.tensor(rng.standard_normal(s), requires_grad=True)
          for s in ((2, 3), (3, 4), (4, 5))]
    out = yaad.einsum("ab,bc,cd->ad", *xs)
    node = out.grad_fn
    parents = [p for p in node.parents if p is not None]
    assert any(getattr(p, "op", None) is not None and p.op.name == "einsum" for p in parents)


def test_interleaved_sublist_form(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    ta, tb = yaad.tensor(a, requires_grad=True), yaad.tensor(b, requires_grad=True)
    np.testing.assert_allclose(yaad.einsum(ta, [0, 1], tb, [1, 2], [0, 2]).data, a @ b)
    np.testing.assert_allclose(yaad.einsum(ta, [0, 1], tb, [1, 2]).data,
                               np.einsum(a, [0, 1], b, [1, 2]))
    c = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(yaad.einsum(c, [Ellipsis, 0, 0], [Ellipsis]),
                               np.einsum(c, [Ellipsis, 0, 0], [Ellipsis]))
    gradcheck(lambda x, y: yaad.einsum(x, [0, 1], y, [1, 2], [2, 0]), (a, b))


def test_numpy_einsum_dispatches_to_yaad(rng):
    a = yaad.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    out = np.einsum("ii->", a)
    assert isinstance(out, yaad.Tensor)
    out.backward()
    np.testing.assert_array_equal(a.grad, np.eye(3))


def test_dtype_and_casting(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    t = yaad.tensor(a, requires_grad=True)
    out = yaad.einsum("ij->i", t, dtype=np.float64)
    assert_like_numpy(out, np.einsum("ij->i", a, dtype=np.float64), exact=False)
    yaad.sum(out).backward()
    assert t.grad.dtype == np.float32
    with pytest.raises(TypeError, match="einsum.*cast"):
        yaad.einsum("ij->i", yaad.tensor(rng.standard_normal((2, 2))), dtype=np.float32)


@pytest.mark.parametrize("args, match", [
    (("ij,jk->ik", (2, 3)), "operands"),
    (("ij,jk->ik", (2, 3), (4, 5)), "label 'j'"),
    (("ijk->", (2, 3)), "dimensions"),
    (("ii->", (2, 3)), "label 'i'"),
    (("ij->k", (2, 3)), "output label 'k'"),
    (("ij->ii", (2, 3)), "twice"),
    (("...ij->ij", (4, 2, 3)), r"'\.\.\.'"),
    (("i$->", (2, 3)), "invalid"),
    (("ij->i->j", (2, 3)), "malformed"),
])
def test_errors_name_einsum_and_the_problem(args, match):
    subs, *shapes = args
    with pytest.raises(ValueError, match=match) as info:
        yaad.einsum(subs, *[yaad.tensor(np.ones(s), requires_grad=True) for s in shapes])
    assert str(info.value).startswith("einsum")


def test_out_is_refused():
    with pytest.raises(TypeError, match="out="):
        yaad.einsum("i->", np.ones(3), out=np.zeros(()))


# ---- random expressions --------------------------------------------------------------

SIZES = {"a": 2, "b": 3, "c": 1, "d": 2, "e": 3}


@st.composite
def expressions(draw):
    """Random subscripts of 1 to 3 operands over a small alphabet (repeats allowed)."""
    n = draw(st.integers(1, 3))
    terms = [draw(st.text("abcde", min_size=0, max_size=3)) for _ in range(n)]
    labels = sorted(set("".join(terms)))
    out = draw(st.permutations(labels)) if labels else []
    out = "".join(out[:draw(st.integers(0, len(out)))])
    complex_ = draw(st.booleans())
    return ",".join(terms) + "->" + out, complex_


@settings(max_examples=40, deadline=None)
@given(expressions())
def test_random_expressions(expr):
    subscripts, complex_ = expr
    rng = np.random.default_rng(len(subscripts))
    dtype = np.complex128 if complex_ else np.float64
    xs = [random_array(rng, tuple(SIZES[c] for c in term), dtype)
          for term in subscripts.split("->")[0].split(",")]
    np.testing.assert_allclose(yaad.einsum(subscripts, *xs), np.einsum(subscripts, *xs),
                               rtol=1e-12, atol=1e-12)
    gradcheck(_f(subscripts), xs)
