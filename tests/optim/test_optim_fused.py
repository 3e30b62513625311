"""``Adam(fused=True)`` / ``AdamW(fused=True)``: the numba kernel gives the same bits as the
NumPy update, follows PyTorch, and a compiled training step (``yaad.compile`` of the loss,
``.backward()``, the fused update) follows eager training and PyTorch's."""

import importlib.util

import numpy as np
import pytest

import yaad
from tests.optim.test_optim import CONFIGS as OPTIM_CONFIGS
from yaad import optim

pytest.importorskip("numba")  # (in the test extra: the fused kernel's own dependency)

# Every Adam/AdamW option, alone and combined: test_optim's configurations.
CONFIGS = [(name, kw) for name, kw in OPTIM_CONFIGS if name in ("Adam", "AdamW")]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CONFIGS)]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(5, 7), (7,), (1,), (3, 1, 2)]


def gradients(rng, shapes, dtype, step):
    """Gradients with the values that flip the kernel's decisions: zeros of both signs,
    a subnormal, a huge value; a NaN and an inf in the last steps."""
    out = []
    for s in shapes:
        g = rng.standard_normal(s)
        if np.dtype(dtype).kind == "c":
            g = g + 1j * rng.standard_normal(s)
        g = g.astype(dtype)
        flat = g.reshape(-1)
        if flat.size > 4:
            flat[:4] = [0.0, -0.0, np.finfo(dtype).tiny / 4, 1e30]
            if step >= 4:
                flat[4] = np.nan if step == 4 else np.inf
        out.append(g)
    return out


def trajectory(name, kw, dtype, fused, steps=6):
    rng = np.random.default_rng(1)
    inits = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [yaad.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(optim, name)(params, **kw, fused=fused)
    path = []
    for step in range(steps):
        for p, g in zip(params, gradients(rng, SHAPES, dtype, step)):
            p.grad = g
        if step == 3:
            opt.param_groups[0]["lr"] *= 0.5  # (a scheduler's change)
        opt.step()
        path.append([p.data.copy() for p in params])
    return path, opt.state_dict()


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")  # (1e30 ** 2 in float32)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_fused_gives_the_same_bits(name, kw, dtype):
    plain, plain_state = trajectory(name, kw, dtype, fused=None)
    fused, fused_state = trajectory(name, kw, dtype, fused=True)
    for a, b in zip(plain, fused):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype == dtype
            np.testing.assert_array_equal(x, y)  # (NaN where NaN)
    assert plain_state["state"].keys() == fused_state["state"].keys()
    for i, s in plain_state["state"].items():
        assert list(s) == list(fused_state["state"][i])  # PyTorch's layout, same order
        for k, v in s.items():
            np.testing.assert_array_equal(v, fused_state["state"][i][k])
    assert fused_state["param_groups"][0]["fused"] is True


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_fused_follows_torch(name, kw, dtype):
    import torch

    rng = np.random.default_rng(2)
    inits = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(20)]
    params = [yaad.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(optim, name)(params, **kw, fused=True)
    tparams = [torch.tensor(a, requires_grad=True) for a in inits]
    topt = getattr(torch.optim, name)(tparams, **kw)
    # float32: the two differ in the order of the last operations (PyTorch divides m by
    # the denominator, then scales), a few ulps of the update per step, and a rounding
    # of the parameter that may then differ by an ulp (6e-8 near 1): 20 steps stay within
    # 1e-6 absolute; float64: as tests/optim/test_optim.py.
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for gs in grads:
        for p, tp, g in zip(params, tparams, gs):
            p.grad, tp.grad = g, torch.tensor(g)
        opt.step()
        topt.step()
        for p, tp in zip(params, tparams):
            assert p.dtype == dtype
            np.testing.assert_allclose(p.data, tp.detach().numpy(), **tol)


def test_non_contiguous_and_float16_take_the_numpy_update():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 4))
    results = []
    for fused in (None, True):
        a = yaad.tensor(base.copy(), requires_grad=True)
        a.data = a.data.T  # (a non-contiguous parameter)
        h = yaad.tensor(base[0].astype(np.float16), requires_grad=True)
        opt = optim.Adam([a, h], lr=0.1, fused=fused)
        for k in range(4):
            a.grad = np.cos(base.T * (k + 1))
            h.grad = np.sin(base[0] * (k + 1)).astype(np.float16)
            opt.step()
        results.append((a.data.copy(), h.data.copy()))
    for x, y in zip(*results):
        np.testing.assert_array_equal(x, y)
    assert results[1][1].dtype == np.float16


def test_groups_with_and_without_fused():
    rng = np.random.default_rng(4)
    inits = [rng.standard_normal(3), rng.standard_normal(3)]
    runs = []
    for groups in ([{"params": [0], "fused": True}, {"params": [1]}], [{"params": [0, 1]}]):
        ps = [yaad.tensor(a.copy(), requires_grad=True) for a in inits]
        opt = optim.Adam([{**g, "params": [ps[i] for i in g["params"]]} for g in groups],
                         lr=0.1)
        for _ in range(3):
            for p in ps:
                p.grad = np.sin(p.data) + 1.0
            opt.step()
        runs.append([p.data.copy() for p in ps])
    assert opt.param_groups[0]["fused"] is False
    np.testing.assert_array_equal(runs[0], runs[1])


def test_fused_without_numba_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else real(name, *a))
    p = yaad.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ImportError, match=r"Adam\(fused=True\) needs numba"):
        optim.Adam([p], fused=True)
    with pytest.raises(ImportError, match=r"AdamW\(fused=True\) needs numba"):
        optim.AdamW([p], fused=True)
    optim.Adam([p], fused=False)  # (the default needs nothing)


# ---- a compiled training step ----------------------------------------------------------

def mlp_data(dtype, n=16, d=6, h=12, k=4):
    rng = np.random.default_rng(5)
    params = [rng.standard_normal((d, h)) / np.sqrt(d), rng.standard_normal(h) * 0.1,
              rng.standard_normal((h, k)) / np.sqrt(h), rng.standard_normal(k) * 0.1]
    batches = [(rng.standard_normal((n, d)), rng.integers(0, k, n)) for _ in range(5)]
    return ([p.astype(dtype) for p in params],
            [(x.astype(dtype), labels) for x, labels in batches])


def mlp_loss(lib, params, x, labels):
    W1, b1, W2, b2 = params
    h = lib.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    logp = z - lib.logsumexp(z, -1, keepdims=True)
    return -logp[np.arange(len(labels)), labels].mean()


def train_yaad(dtype, compiled, steps=20):
    inits, batches = mlp_data(dtype)
    ps = [yaad.tensor(a.copy(), requires_grad=True) for a in inits]
    opt = optim.Adam(ps, lr=0.01, fused=compiled)
    # (a batch is an argument: the compiled function replays it; labels as a tensor
    # index flow through the replay)
    f = lambda x, labels, *p: mlp_loss(yaad, p, x, labels)
    if compiled:
        f = yaad.compile(f)
    losses = []
    for t in range(steps):
        x, labels = batches[t % len(batches)]
        opt.zero_grad()
        loss = f(yaad.tensor(x), yaad.tensor(labels), *ps)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, [p.data.copy() for p in ps], f


def train_torch(dtype, steps=20):
    import torch

    inits, batches = mlp_data(dtype)
    ps = [torch.tensor(a, requires_grad=True) for a in inits]
    opt = torch.optim.Adam(ps, lr=0.01)
    losses = []
    for t in range(steps):
        x, labels = batches[t % len(batches)]
        opt.zero_grad()
        loss = mlp_loss(torch, ps, torch.tensor(x), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in ps]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_training_follows_eager_and_torch(dtype):
    eager_losses, eager_params, _ = train_yaad(dtype, compiled=False)
    losses, params, f = train_yaad(dtype, compiled=True)
    assert f.stats["replayed"] >= 15  # (the steps ran compiled, not eagerly)
    torch_losses, torch_params = train_torch(dtype)
    # float32: roundings of a different order in the compiled replay, PyTorch's kernels and
    # its Adam, compounded over 20 steps of lr 0.01 (each a relative 1e-7 of the step)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(losses, eager_losses, **tol)
    np.testing.assert_allclose(losses, torch_losses, **tol)
    assert losses[-1] < losses[0] * 0.9  # (it trains)
    for p, e, t in zip(params, eager_params, torch_params):
        assert p.dtype == dtype
        np.testing.assert_allclose(p, e, **tol)
        np.testing.assert_allclose(p, t, **tol)
