"""``yaad.func.vmap``: its arguments, its composition with the other transforms (in both
orders, nested), per-example gradients against ``torch.func`` and Python loops, chunks,
and the fall-back for ops without a batching rule. Every op is batched against a loop in
``test_vmap_ops.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import yaad
from yaad.func import BatchingWarning, grad, hessian, jacfwd, jacrev, jvp, value_and_grad, vjp, vmap

rng = np.random.default_rng(7)


def loop(f, *args, in_axes=0):
    """The reference: f on each example, the results stacked (axis 0)."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes)])
            for b in range(n)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def close(a, b, tol=1e-12):
    a, b = np.asarray(getattr(a, "data", a)), np.asarray(getattr(b, "data", b))
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---- arguments ------------------------------------------------------------------------


def f_mixed(x, w):
    return yaad.tanh(x @ w) * yaad.sum(x)


def test_in_axes_int_none_and_per_argument():
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    close(vmap(f_mixed, in_axes=(0, None))(x, w), loop(f_mixed, x, w, in_axes=(0, None)))
    close(vmap(f_mixed, in_axes=(1, None))(x.T.copy(), w), loop(f_mixed, x, w, in_axes=(0, None)))
    ws = rng.standard_normal((5, 3, 2))
    close(vmap(f_mixed, in_axes=(None, 0))(x[0], ws), loop(f_mixed, x[0], ws, in_axes=(None, 0)))
    close(vmap(f_mixed, in_axes=[-2, None])(x, w), loop(f_mixed, x, w, in_axes=(0, None)))


def test_pytrees_in_and_out():
    params = {"w": rng.standard_normal((3, 2)), "b": [rng.standard_normal(2)]}
    xs = rng.standard_normal((4, 3))

    def f(p, x):
        y = x @ p["w"] + p["b"][0]
        return {"y": y, "pair": (yaad.sum(y), x)}

    out = vmap(f, in_axes=({"w": None, "b": [None]}, 0))(params, xs)
    for k in range(4):
        want = f(params, xs[k])
        close(out["y"][k], want["y"])
        close(out["pair"][0][k], want["pair"][0])
        close(out["pair"][1][k], xs[k])
    out = vmap(f, in_axes=(None, 0), out_axes={"y": 1, "pair": (0, -1)})(params, xs)
    assert out["y"].shape == (2, 4) and out["pair"][1].shape == (3, 4)
    close(out["y"], np.stack([f(params, x)["y"] for x in xs], axis=1))


def test_out_axes_and_unbatched_outputs():
    x = rng.standard_normal((4, 2, 3))
    close(vmap(lambda a: a * 2, out_axes=2)(x), np.moveaxis(x * 2, 0, 2))
    close(vmap(lambda a: a * 2, out_axes=-1)(x), np.moveaxis(x * 2, 0, -1))
    # an output that does not depend on the example is broadcast, or returned once
    out = vmap(lambda a: (a, np.ones(2)), out_axes=(0, None))(x)
    assert out[1].shape == (2,) and out[0].shape == x.shape
    close(vmap(lambda a: np.ones(2))(x), np.ones((4, 2)))
    with pytest.raises(ValueError, match="out_axes is None for output 0"):
        vmap(lambda a: a, out_axes=None)(x)


def test_arrays_in_arrays_out_and_tensors_in_tensors_out():
    x = rng.standard_normal((3, 2))
    assert type(vmap(yaad.sin)(x)) is np.ndarray
    t = vmap(yaad.sin)(yaad.tensor(x))
    assert type(t) is yaad.Tensor and t.shape == (3, 2)


def test_bad_axes_and_sizes_are_named():
    x, y = np.ones((3, 2)), np.ones((4, 2))
    with pytest.raises(ValueError, match="input 0 has 3 along axis 0, input 1 has 4"):
        vmap(yaad.add)(x, y)
    with pytest.raises(ValueError, match="no input is mapped"):
        vmap(yaad.add, in_axes=None)(x, y)
    with pytest.raises(ValueError, match="axis 2 for input 0"):
        vmap(yaad.sin, in_axes=2)(x)
    with pytest.raises(ValueError, match="does not match the structure of the inputs"):
        vmap(yaad.add, in_axes=(0,))(x, x)
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        vmap(yaad.sin, chunk_size=0)


def test_inside_a_tensor_shows_one_example():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, len=len(x),
                    np_shape=np.shape(x), rows=[r.shape for r in x])
        return yaad.zeros_like(x) + yaad.zeros(x.shape) + x

    x = rng.standard_normal((5, 2, 3))
    close(vmap(f, in_axes=1)(x), np.moveaxis(x, 1, 0))
    assert seen == {"shape": (5, 3), "ndim": 2, "size": 15, "len": 5, "np_shape": (5, 3),
                    "rows": [(3,)] * 5}


def test_values_cannot_be_read_inside():
    x = np.array([-1.0, 2.0])
    for f in (lambda a: a if a > 0 else -a, lambda a: float(a), lambda a: a.item(),
              lambda a: np.asarray(a), lambda a: a.numpy(), lambda a: np.allclose(a, 0),
              lambda a: a.data):
        with pytest.raises(TypeError, match="inside vmap: its value differs"):
            vmap(f)(x)

    def set_data(a):  # (one value for every example: refused as reading one is)
        a.data = np.zeros(2)
        return a

    with pytest.raises(TypeError, match=r"setting \.data of a tensor inside vmap: its value"):
        vmap(set_data)(x)
    with pytest.raises(RuntimeError, match="use yaad.func.grad"):
        vmap(lambda a: a.sum().backward())(yaad.tensor(np.ones((2, 2)), requires_grad=True))


def test_a_batched_tensor_that_escapes_is_refused():
    kept = []
    vmap(lambda a: kept.append(a * 2) or a)(np.ones((3, 2)))
    with pytest.raises(RuntimeError, match="batched by a vmap that has returned"):
        yaad.sin(kept[0])


def test_copies_and_detach_keep_the_batch():
    x = rng.standard_normal((3, 2))
    out = vmap(lambda a: (yaad.tensor(a), a.detach() * 2, yaad.tensor(a, dtype=np.float32)))(x)
    close(out[0], x)
    close(out[1], 2 * x)
    assert out[2].dtype == np.float32


def test_random_draws_inside_follow_randomness():
    x = np.zeros((3, 2))
    # refused by default (a loop would draw different numbers for each example)
    for f in (lambda a: a + yaad.randn(2), lambda a: a + yaad.rand(2),
              lambda a: yaad.nn.functional.dropout(a + 1.0, 0.5),
              lambda a: a + yaad.randn(2, seed=np.random.default_rng(0))):
        with pytest.raises(RuntimeError, match="inside vmap draws random numbers.*"
                                               "randomness='different'"):
            vmap(f)(x)
    with pytest.raises(ValueError, match="randomness='other'; use one of"):
        vmap(yaad.sin, randomness="other")
    # a fixed seed draws the same numbers on every call, as a loop would: allowed
    close(vmap(lambda a: a + yaad.randn(2, seed=1))(x),
          np.broadcast_to(np.random.default_rng(1).standard_normal(2), (3, 2)))
    # "same": one draw for every example; "different": one each
    same = vmap(lambda a: a + yaad.randn(2), randomness="same")(x)
    close(same, np.broadcast_to(same[0], (3, 2)))
    diff = vmap(lambda a: a + yaad.randn(2), randomness="different")(x)
    assert diff.shape == (3, 2) and len({tuple(r) for r in diff}) == 3
    # dropout: a mask per example, of 0 and 1 / (1 - p), the kept values scaled
    out = vmap(lambda a: yaad.nn.functional.dropout(a, 0.5), randomness="different")(
        np.ones((50, 8)))
    assert set(np.unique(out)) <= {0.0, 2.0} and len({tuple(r) for r in out}) > 1
    same = vmap(lambda a: yaad.nn.functional.dropout(a, 0.5), randomness="same")(
        np.ones((5, 8)))
    close(same, np.broadcast_to(same[0], (5, 8)))
    # nested: each level as it says
    y = np.zeros((3, 4))
    inner_diff = vmap(vmap(lambda a: a + yaad.rand(), randomness="different"),
                      randomness="same")(y)
    close(inner_diff, np.broadcast_to(inner_diff[0], (3, 4)))
    assert len(set(inner_diff[0])) == 4
    outer_diff = vmap(vmap(lambda a: a + yaad.rand(), randomness="same"),
                      randomness="different")(y)
    close(outer_diff, np.broadcast_to(outer_diff[:, :1], (3, 4)))
    assert len(set(outer_diff[:, 0])) == 3
    # a transform's own batch (jacfwd's tangents) draws once: f is evaluated once
    j = jacfwd(lambda a: a * yaad.randn(2, seed=3))(np.ones(2))
    close(j, np.diag(np.random.default_rng(3).standard_normal(2)))
    assert jacfwd(lambda a: a * yaad.randn(2))(np.ones(2)).shape == (2, 2)


def test_results_of_different_shapes_per_example_are_refused():
    x = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]])
    for f in (yaad.nonzero, lambda a: a[a > 0.5]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BatchingWarning)
            with pytest.raises(ValueError, match="gives results of different shapes for "
                                                 r"different examples \(\(2,"):
                vmap(f)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BatchingWarning)
        got = vmap(yaad.nonzero)(np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 1.0]]))
    close(got[0], np.array([[0, 2], [0, 2]]))


def test_in_place_changes_keep_each_example():
    x, y = rng.standard_normal((2, 4)), rng.standard_normal(2)

    def f(a, b):
        a = a * 1.0
        a += b
        a[0] = a[0] * 3
        return a

    close(vmap(f, in_axes=(1, None))(x, y), loop(f, x.T, y, in_axes=(0, None)))
    with pytest.raises(ValueError, match="has no batch axis"):
        vmap(lambda v: yaad.zeros(2).__setitem__(0, v))(np.ones(3))


# ---- composition --------------------------------------------------------------------------


def test_nested_vmaps_against_loops():
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5))

    def f(u, v):
        return yaad.sum(yaad.sin(u) * v) + u @ v

    inner = vmap(f, in_axes=(0, 0))
    close(vmap(inner, in_axes=(0, None))(a, b),
          np.stack([loop(f, a[i], b) for i in range(3)]))
    # the inner map over an axis other than the outer one, and three levels
    close(vmap(vmap(f, in_axes=(1, None)), in_axes=(0, None))(a, b[:, 0]),
          np.stack([loop(f, a[i].T, b[:, 0], in_axes=(0, None)) for i in range(3)]))
    c = rng.standard_normal((2, 3, 4, 5))
    close(vmap(vmap(vmap(yaad.cumsum)))(c), np.cumsum(c, axis=-1))


def mlp_loss(params, x, y):
    w1, b1, w2 = params
    h = yaad.tanh(x @ w1 + b1)
    return yaad.mean((h @ w2 - y) ** 2)


def torch_mlp_loss(params, x, y):
    w1, b1, w2 = params
    return torch.mean((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2)


def mlp_data(n=6):
    params = (rng.standard_normal((3, 8)), rng.standard_normal(8), rng.standard_normal((8, 2)))
    return params, rng.standard_normal((n, 3)), rng.standard_normal((n, 2))


def test_per_example_gradients_match_torch_func_and_a_loop():
    params, xs, ys = mlp_data()
    got = vmap(grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    tparams = tuple(torch.tensor(p) for p in params)
    want = torch.func.vmap(torch.func.grad(torch_mlp_loss), in_dims=(None, 0, 0))(
        tparams, torch.tensor(xs), torch.tensor(ys))
    for g, w in zip(got, want):
        close(g, w.numpy(), 1e-12)
    by_loop = [grad(mlp_loss)(params, x, y) for x, y in zip(xs, ys)]
    for k in range(3):
        close(got[k], np.stack([g[k] for g in by_loop]))
    # the same with the data closed over instead of passed
    closed = vmap(lambda x, y: grad(lambda p: mlp_loss(p, x, y))(params))(xs, ys)
    for g, w in zip(closed, got):
        close(g, w)


def test_value_and_grad_and_vjp_inside_vmap():
    params, xs, ys = mlp_data()
    values, grads = vmap(value_and_grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    close(values, loop(lambda x, y: mlp_loss(params, x, y), xs, ys))
    cots = rng.standard_normal((6, 2))

    def vjp_of(x, c):
        return vjp(lambda w: yaad.tanh(x @ w), params[0][:, :2])[1](c)[0]

    close(vmap(vjp_of)(xs, cots), loop(vjp_of, xs, cots))


def test_grad_of_vmap_matches_the_sum_of_per_example_gradients():
    params, xs, ys = mlp_data()

    def total(p):
        return yaad.sum(vmap(mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))

    got = grad(total)(params)
    tparams = tuple(torch.tensor(p) for p in params)
    want = torch.func.grad(lambda p: torch.func.vmap(torch_mlp_loss, in_dims=(None, 0, 0))(
        p, torch.tensor(xs), torch.tensor(ys)).sum())(tparams)
    for g, w in zip(got, want):
        close(g, w.numpy())
    # and through backward(): the leaf gets the gradient of the whole batch
    w1 = yaad.tensor(params[0], requires_grad=True)
    yaad.sum(vmap(mlp_loss, in_axes=((None, None, None), 0, 0))((w1,) + params[1:], xs, ys)
             ).backward()
    close(w1.grad, want[0].numpy())


def test_vmap_of_jvp_and_jvp_of_vmap():
    x, t = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))

    def f(a):
        return yaad.sin(a) * yaad.sum(a * a)

    def pushed(a, u):
        return jvp(f, (a,), (u,))

    got = vmap(pushed)(x, t)
    want = loop(pushed, x, t)
    close(got[0], want[0])
    close(got[1], want[1])
    close(vmap(pushed, in_axes=(None, 0))(x[0], t)[1], loop(pushed, x[0], t, in_axes=(None, 0))[1])
    y, ty = jvp(vmap(f, in_axes=1), (x.T.copy(),), (t.T.copy(),))
    close(ty, want[1])


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian"])
def test_vmap_of_jacobians_matches_torch_func(transform):
    xs = rng.standard_normal((4, 3))
    w = rng.standard_normal((3, 3))
    tw = torch.tensor(w)

    def f(x):
        return yaad.sum(yaad.tanh(w @ x) * x) if transform == "hessian" else yaad.tanh(w @ x) * x

    def tf(x):
        return (torch.tanh(tw @ x) * x).sum() if transform == "hessian" else torch.tanh(tw @ x) * x

    ours = {"jacrev": jacrev, "jacfwd": jacfwd, "hessian": hessian}[transform]
    theirs = getattr(torch.func, transform)
    close(vmap(ours(f))(xs), torch.func.vmap(theirs(tf))(torch.tensor(xs)).numpy(), 1e-12)
    # and the other way round: the Jacobian of a vmapped function (block diagonal)
    if transform != "hessian":
        close(ours(vmap(f))(xs), theirs(torch.func.vmap(tf))(torch.tensor(xs)).numpy(), 1e-12)
    else:
        close(hessian(lambda a: yaad.sum(vmap(f)(a)))(xs),
              torch.func.hessian(lambda a: torch.func.vmap(tf)(a).sum())(
                  torch.tensor(xs)).numpy(), 1e-12)


def test_dtypes_complex_and_negative_axes_match_torch_func():
    # float32 stays float32; complex stays complex; the same shapes for negative axes
    x32 = rng.standard_normal((4, 3)).astype(np.float32)  # 3 examples along the last axis
    w32 = rng.standard_normal((4, 4)).astype(np.float32)
    tw32 = torch.tensor(w32)

    def f(a):
        return yaad.tanh(w32 @ a) * a

    got = vmap(jacrev(f), in_axes=-1, out_axes=-1)(x32)
    want = torch.func.vmap(torch.func.jacrev(lambda a: torch.tanh(tw32 @ a) * a),
                           in_dims=-1, out_dims=-1)(torch.tensor(x32)).numpy()
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape == (4, 4, 3)
    close(got, want, 1e-5)
    # complex: values of a holomorphic map, and per-example gradients of a real loss of
    # complex parameters (the same convention as PyTorch: dL/dx + 1j dL/dy)
    z = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    c = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    tc = torch.tensor(c)
    got = vmap(lambda u: yaad.exp(u) * c + yaad.conj(u) * u, in_axes=1, out_axes=-1)(z.T.copy())
    want = torch.func.vmap(lambda u: torch.exp(u) * tc + torch.conj(u) * u, in_dims=1,
                           out_dims=-1)(torch.tensor(z.T.copy())).numpy()
    assert got.dtype == want.dtype == np.complex128
    close(got, want)

    def loss(p, u):
        return yaad.sum(yaad.abs(p * u - 1.0) ** 2)

    def tloss(p, u):
        return (torch.abs(p * u - 1.0) ** 2).sum()

    got = vmap(grad(loss), in_axes=(None, 0))(c, z)
    want = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0))(tc, torch.tensor(z))
    assert got.dtype == np.complex128 and got.shape == (4, 3)
    close(got, want.numpy())


def test_jacobians_of_several_inputs_outputs_and_complex():
    a, b = rng.standard_normal(3), rng.standard_normal((2, 3))

    def f(x, m):
        return {"u": m @ yaad.exp(x), "v": yaad.sum(x) * m}

    for jac in (jacrev, jacfwd):
        j = jac(f, argnums=(0, 1))(a, b)
        ta, tb = torch.tensor(a), torch.tensor(b)
        tj = torch.func.jacrev(lambda x, m: {"u": m @ torch.exp(x), "v": x.sum() * m},
                               argnums=(0, 1))(ta, tb)
        for k in ("u", "v"):
            for i in range(2):
                close(j[k][i], tj[k][i].numpy())
    z = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    close(jacrev(lambda z: z * z, holomorphic=True)(z), np.diag(2 * z))
    close(jacfwd(lambda z: z * z, holomorphic=True)(z), np.diag(2 * z))
    re = jacrev(lambda z: yaad.abs(z) ** 2)(z)
    close(re, np.diag(2 * z))  # rows are gradients: d|z|^2/dx + 1j d|z|^2/dy
    close(jacfwd(lambda z: yaad.abs(z) ** 2)(z), np.diag(2 * z))


def test_chunks_give_the_same_result():
    x = rng.standard_normal((7, 3))
    f = vmap(lambda a: (yaad.cumsum(a), yaad.sum(a)), chunk_size=3)
    got = f(x)
    close(got[0], np.cumsum(x, axis=1))
    close(got[1], x.sum(1))
    close(vmap(lambda a: a * 2, out_axes=1, chunk_size=2)(x), 2 * x.T)
    w = rng.standard_normal((3, 3))
    close(jacrev(lambda a: yaad.tanh(w @ a), chunk_size=2)(x[0]),
          jacrev(lambda a: yaad.tanh(w @ a))(x[0]))
    close(jacfwd(lambda a: yaad.tanh(w @ a), chunk_size=2)(x[0]),
          jacrev(lambda a: yaad.tanh(w @ a))(x[0]))


# ---- ops without a rule, and declared rules ---------------------------------------------


def test_an_op_without_a_rule_runs_per_example_with_one_warning():
    slow = yaad.op(lambda a, s: np.roll(a, 1) * s, name="test_vmap_slow",
                   vjp=(lambda g, ans, a, s: np.roll(g * s, -1), None))
    x = rng.standard_normal((4, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = vmap(lambda a: slow(a, 2.0))(x)
        again = vmap(lambda a: slow(a, 2.0))(x)
    named = [w for w in caught if issubclass(w.category, BatchingWarning)]
    assert len(named) == 1 and "'test_vmap_slow' has no batching rule" in str(named[0].message)
    assert named[0].filename == __file__  # points at the caller
    close(got, np.roll(x, 1, axis=1) * 2)
    close(again, got)
    # and its gradient per example, through the loop
    close(vmap(grad(lambda a: yaad.sum(slow(a, 2.0) ** 2)))(x), 8 * x)


def test_a_function_without_a_batching_rule_is_refused_by_name():
    # An autograd.Function's op has no public function for vmap's per-example loop (it
    # called None: "'NoneType' object is not callable"); PyTorch refuses it as well without
    # a vmap rule.
    class Cube(yaad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = yaad.tensor(rng.standard_normal((4, 3)))
    close(Cube.apply(x), x.data ** 3)  # (outside vmap it runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BatchingWarning)
        with pytest.raises(TypeError, match="vmap: 'Cube' has no batching rule, and no "
                                            "function of its own"):
            vmap(Cube.apply)(x)


def test_declared_rules_and_strategies():
    calls = []

    def rule(dims, a, s):
        calls.append(dims)
        return roll1(yaad.moveaxis(a, dims[0], 0), s, axis=-1), 0

    roll1 = yaad.op(lambda a, s, axis=-1: np.roll(a, 1, axis) * s, name="test_vmap_roll1",
                    batch=rule)
    x = rng.standard_normal((4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingWarning)
        close(vmap(lambda a: roll1(a, 2.0), in_axes=1)(x.T.copy()), np.roll(x, 1, axis=1) * 2)
        assert calls == [(1, None)]  # the batch axis where the caller put it
        square = yaad.op(np.square, name="test_vmap_square", batch="broadcast")
        close(vmap(square)(x), x ** 2)
        total = yaad.op(lambda a, axis=None: np.sum(a, axis=axis), name="test_vmap_total")
        total.defbatch("reduce")
        close(vmap(lambda a: total(a, axis=0))(x), x.sum(1))
    fallback = yaad.op(np.square, name="test_vmap_declines",
                       batch=lambda dims, a: NotImplemented)
    with pytest.warns(BatchingWarning, match="no batching rule for these arguments"):
        close(vmap(fallback)(x), x ** 2)
    bad = yaad.op(np.square, name="test_vmap_bad", batch="nonsense")
    with pytest.raises(ValueError, match="is not a batching strategy"):
        vmap(bad)(x)


# ---- valid inputs that crashed or came back changed ------------------------------------------


def test_softplus_and_embedding_with_batched_indices_against_torch():
    """Both read ``.data`` of their input (softplus for its threshold, embedding for its
    indices), which a tensor inside vmap refuses."""
    from torch.func import vmap as tvmap

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)) * 15  # on both sides of the threshold 20
    got = vmap(yaad.nn.functional.softplus)(yaad.tensor(x))
    np.testing.assert_allclose(got.numpy(), tvmap(torch.nn.functional.softplus)(
        torch.tensor(x)).numpy(), rtol=1e-14)
    w, idx = rng.standard_normal((5, 2)), np.array([[0, 1], [2, 4], [3, 3]])
    wy, wt = yaad.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    got = vmap(lambda i: yaad.nn.functional.embedding(i, wy, padding_idx=3))(yaad.tensor(idx))
    want = tvmap(lambda i: torch.nn.functional.embedding(i, wt, padding_idx=3))(
        torch.tensor(idx))
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert got.shape == (3, 2, 2)
    (got ** 2).sum().backward()
    (want ** 2).sum().backward()
    np.testing.assert_allclose(wy.grad, wt.grad.numpy(), rtol=1e-14)
    with pytest.raises(IndexError, match="embedding"):
        vmap(lambda i: yaad.nn.functional.embedding(i, wy))(yaad.tensor(idx + 1))


def test_zeros_like_of_a_batched_tensor_is_batched_as_in_torch():
    """zeros_like inside vmap came back unbatched, so writing one example's values into it
    raised; torch.func gives a batched tensor."""
    from torch.func import vmap as tvmap

    x = np.arange(12.0).reshape(4, 3)

    def f(lib):
        def body(v):
            z = lib.zeros_like(v)
            assert tuple(z.shape) == (3,)
            z[0] = v[1]
            return z + lib.ones_like(v)
        return body

    got = vmap(f(yaad))(yaad.tensor(x))
    want = tvmap(f(torch))(torch.tensor(x))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # a new shape stays one example's, the same for all (as before)
    assert vmap(lambda v: yaad.zeros_like(v, shape=(2,)))(yaad.tensor(x)).shape == (4, 2)


def test_outputs_that_are_none_strings_or_ordered_dicts():
    """None and strings come back as they are (JAX's None; torch.func refuses both); an
    OrderedDict keeps its type and order (torch.func's) where it came back as a sorted dict."""
    from collections import OrderedDict

    from torch.func import vmap as tvmap

    x = np.arange(10.0).reshape(5, 2)
    for chunk in (None, 2):
        out = vmap(lambda v: (2 * v, None, "label"), chunk_size=chunk)(yaad.tensor(x))
        assert out[1] is None and out[2] == "label"
        np.testing.assert_array_equal(out[0].numpy(), 2 * x)
    got = vmap(lambda v: OrderedDict(b=v, a=2 * v))(yaad.tensor(x))
    want = tvmap(lambda v: OrderedDict(b=v, a=2 * v))(torch.tensor(x))
    assert type(got) is type(want) is OrderedDict and list(got) == list(want) == ["b", "a"]
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())
    g = grad(lambda p: (p["w"] ** 2).sum())(OrderedDict(w=np.ones(2), v=np.ones(1)))
    assert type(g) is OrderedDict and list(g) == ["w", "v"]


def test_full_like_with_a_tensor_fill_value_as_numpy():
    """full_like(x, yaad.tensor(3.0)) crashed (numpy.copyto of a tensor). NumPy broadcasts
    an array fill value and casts it to the dtype; yaad does, differentiably in it."""
    for base, fill in ((np.ones(3), 3.0), (np.ones((2, 3), np.float32), [1.0, 2.0, 3.0]),
                       (np.ones(3, np.int64), 2.7)):
        f = yaad.tensor(fill)
        got = yaad.full_like(base, f)
        want = np.full_like(base, fill)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    f = yaad.tensor(3.0, requires_grad=True)
    yaad.sum(yaad.full_like(yaad.tensor(np.ones((2, 3))), f)).backward()
    assert f.grad == 6.0


@pytest.mark.parametrize("options", [{}, {"ignore_index": 2}, {"label_smoothing": 0.2},
                                     {"weight": "w", "reduction": "sum"}],
                         ids=["plain", "ignore_index", "label_smoothing", "weight"])
def test_cross_entropy_with_batched_class_targets_against_torch(options):
    """cross_entropy's class-index path read the targets' values (.data), which vmap
    refuses: the class is picked with take_along_axis on the (batched) targets."""
    from torch.func import grad as tgrad
    from torch.func import vmap as tvmap

    rng = np.random.default_rng(1)
    logits, target = rng.standard_normal((4, 3, 5)), rng.integers(0, 5, (4, 3))
    w = rng.uniform(0.5, 2.0, 5)
    ykw = {k: (yaad.tensor(w) if v == "w" else v) for k, v in options.items()}
    tkw = {k: (torch.tensor(w) if v == "w" else v) for k, v in options.items()}

    def yloss(z, t):
        return yaad.nn.functional.cross_entropy(z, t, **ykw)

    def tloss(z, t):
        return torch.nn.functional.cross_entropy(z, t, **tkw)

    got = vmap(yloss)(yaad.tensor(logits), yaad.tensor(target))
    want = tvmap(tloss)(torch.tensor(logits), torch.tensor(target))
    assert got.shape == (4,) and got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)
    got_g = vmap(grad(yloss))(yaad.tensor(logits), yaad.tensor(target))
    want_g = tvmap(tgrad(tloss))(torch.tensor(logits), torch.tensor(target))
    assert got_g.shape == (4, 3, 5)
    np.testing.assert_allclose(got_g.numpy(), want_g.numpy(), rtol=1e-12, atol=1e-15)
    with pytest.raises(IndexError, match="cross_entropy"):
        vmap(yloss)(yaad.tensor(logits), yaad.tensor(target + 1))


def test_vmap_of_grad_through_a_clone_changed_in_place_against_torch():
    """f clones its input and changes the clone in place (an indexing assignment and an
    augmented one); per-example gradients as torch.func's."""
    from torch.func import grad as tgrad
    from torch.func import vmap as tvmap

    def f(lib):
        def body(x):
            y = x.clone()
            y[0] = x[1] * x[2]
            y *= x
            return (y ** 2).sum()
        return body

    x = np.random.default_rng(2).standard_normal((4, 3))
    got = vmap(grad(f(yaad)))(yaad.tensor(x))
    want = tvmap(tgrad(f(torch)))(torch.tensor(x))
    assert got.shape == (4, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


def test_autograd_grad_inside_vmap_gives_each_examples_gradient():
    """autograd.grad of a per-example scalar inside vmap raised "output 0 has shape ();
    ... only for a scalar" (the whole batch's size was checked), and with a batched
    grad_outputs it gave an array of the batch's shape per example. PyTorch refuses
    autograd.grad inside vmap; the oracle is torch.func.vmap(torch.func.grad)."""
    from torch.func import grad as tgrad
    from torch.func import vmap as tvmap

    x = np.random.default_rng(3).standard_normal((4, 3))
    want = tvmap(tgrad(lambda v: (v ** 3).sum()))(torch.tensor(x)).numpy()
    xs = yaad.tensor(x, requires_grad=True)
    got = vmap(lambda v: yaad.autograd.grad((v ** 3).sum(), v)[0])(xs)
    assert got.shape == (4, 3)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
    got = vmap(lambda v: yaad.autograd.grad(v ** 3, v, grad_outputs=yaad.ones_like(v))[0])(xs)
    assert got.shape == (4, 3)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
    with pytest.raises(RuntimeError, match=r"shape \(3,\); a gradient can be created"):
        vmap(lambda v: yaad.autograd.grad(v ** 3, v)[0])(xs)
    w = yaad.tensor([1.0, 2.0, 3.0], requires_grad=True)  # one tensor for all examples
    with pytest.raises(ValueError, match="input 0 .* same tensor for every example"):
        vmap(lambda v: yaad.autograd.grad((v * w).sum(), w)[0])(xs)
