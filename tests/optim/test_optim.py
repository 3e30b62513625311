"""yaad.optim: update rules against PyTorch, complex parameters as real pairs, schedulers."""

import numpy as np
import pytest

import yaad
from yaad import optim

# Every option of every optimizer, alone (so that a bug in one cannot hide behind another)
# and in combinations; each trajectory is compared with PyTorch's
# (test_every_option_has_a_torch_reference keeps the list complete).
CONFIGS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.05, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9))),
    ("Adam", dict(lr=0.05, eps=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, betas=(0.7, 0.95))),
    ("AdamW", dict(lr=0.05, eps=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3)),
    ("AdamW", dict(lr=0.05, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.8)),
    ("RMSprop", dict(lr=0.01, eps=0.1)),
    ("RMSprop", dict(lr=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.1, eps=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CONFIGS)]

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 3))
TARGET = rng.standard_normal(3)


def real_loss(x, y, np_like=yaad):
    """A smooth non-quadratic loss of a (3,) and a (2, 3) parameter."""
    a, target = (A, TARGET) if np_like is yaad else (np_like.tensor(A), np_like.tensor(TARGET))
    r = x @ a - target
    return (r * r).sum() + (np_like.sin(y) * x).sum() + 0.1 * (y * y * y * y).sum()


def complex_loss(z):
    """A real loss of a complex (4,) parameter, not holomorphic."""
    return ((z * z.conj()).real ** 2).sum() + (z.real * 3.0).sum() - (z.imag * z.real).sum()


def objective(kw, loss_fn):
    """What the optimizer is given: the loss, or its negative when it maximizes (so that
    every configuration converges instead of overflowing)."""
    if not kw.get("maximize"):
        return loss_fn
    return lambda *args, **k: -loss_fn(*args, **k)


def run_yaad(name, kw, inits, loss_fn, steps=25):
    params = [yaad.tensor(v, requires_grad=True) for v in inits]
    opt = getattr(optim, name)(params, **kw)
    loss_fn = objective(kw, loss_fn)
    path = []
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(*params).backward()
        opt.step()
        path.append([p.data.copy() for p in params])
    return path


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_matches_torch_trajectory(name, kw):
    import torch
    inits = [rng.standard_normal(3), rng.standard_normal((2, 3))]
    path = run_yaad(name, kw, inits, real_loss)
    tparams = [torch.tensor(v, requires_grad=True) for v in inits]
    topt = getattr(torch.optim, name)(tparams, **kw)
    for step in path:
        topt.zero_grad()
        objective(kw, real_loss)(*tparams, np_like=torch).backward()
        topt.step()
        for mine, theirs in zip(step, tparams):
            np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted({name for name, _ in CONFIGS}))
def test_every_option_has_a_torch_reference(name):
    # Each keyword of the optimizer is set away from its default, alone, in some config.
    import inspect

    params = inspect.signature(getattr(optim, name)).parameters
    # (fused: the same bits as the default, in every config: tests/optim/test_optim_fused.py)
    options = {k: p.default for k, p in params.items()
               if k not in ("self", "params", "lr", "fused")}
    needs = {"dampening": {"momentum"}, "nesterov": {"momentum"}}
    alone = set()
    for n, kw in CONFIGS:
        changed = {k for k, v in kw.items() if k != "lr" and v != options.get(k)}
        alone |= {k for k in changed if n == name and changed - {k} <= needs.get(k, set())}
    assert alone >= set(options), (
        f"{name}: options without a PyTorch reference of their own: "
        f"{sorted(set(options) - alone)}")


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_complex_parameter_follows_real_pair(name, kw):
    z0 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    path_c = run_yaad(name, kw, [z0], complex_loss)
    path_r = run_yaad(name, kw, [z0.real.copy(), z0.imag.copy()],
                      lambda x, y: complex_loss(x + 1j * y))
    assert path_c[-1][0].dtype == np.complex128
    for (zc,), (x, y) in zip(path_c, path_r):
        np.testing.assert_allclose(zc.real, x, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(zc.imag, y, rtol=1e-13, atol=1e-15)
    assert not np.allclose(path_c[-1][0], z0)  # it moved


def test_complex_adam_matches_torch():
    import torch
    z0 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    path = run_yaad("Adam", dict(lr=0.1), [z0], complex_loss)
    tz = torch.tensor(z0, requires_grad=True)
    topt = torch.optim.Adam([tz], lr=0.1)
    for (zc,) in path:
        topt.zero_grad()
        complex_loss(tz).backward()
        topt.step()
        np.testing.assert_allclose(zc, tz.detach().numpy(), rtol=1e-10)


def test_float32_stays_float32():
    w = yaad.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w.dtype == np.float32 and opt.state[w]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(w.data, 0.9, rtol=1e-6)


def test_param_groups_zero_grad_and_closure():
    a = yaad.tensor(np.ones(2), requires_grad=True)
    b = yaad.tensor(np.ones(2), requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a + b * b).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 4.0
    np.testing.assert_allclose(a.data, 0.8)
    np.testing.assert_allclose(b.data, -1.0)
    opt.zero_grad(set_to_none=False)
    assert np.all(a.grad == 0)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    opt.step()  # no gradients: nothing changes
    np.testing.assert_allclose(a.data, 0.8)
    assert "Parameter Group 1" in repr(opt)


def test_step_bumps_version():
    w = yaad.tensor(np.ones(2), requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    pending = (w * w).sum()  # saved w before the step
    opt.step()
    with pytest.raises(RuntimeError, match="in-place"):
        pending.backward()


def test_errors():
    w = yaad.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([])
    with pytest.raises(TypeError, match="single tensor"):
        optim.Adam(w)
    with pytest.raises(ValueError, match="leaf"):
        optim.SGD([w * 2])
    with pytest.raises(ValueError, match="more than one group"):
        optim.SGD([w, w])
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([w], nesterov=True)
    with pytest.raises(ValueError, match="lr"):
        optim.Adam([w], lr=-1)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam([w], betas=(1.0, 0.9))


@pytest.mark.parametrize("name,kw", [c for c in CONFIGS if len(c[1]) >= 4])  # combinations
def test_state_dict_resume_is_exact(name, kw):
    z0 = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    full = run_yaad(name, kw, [z0], complex_loss, steps=10)[-1][0]
    z = yaad.tensor(z0, requires_grad=True)
    opt = getattr(optim, name)([z], **kw)
    for _ in range(5):
        opt.zero_grad()
        objective(kw, complex_loss)(z).backward()
        opt.step()
    saved = opt.state_dict()
    z2 = yaad.tensor(z.data, requires_grad=True)
    opt2 = getattr(optim, name)([z2], lr=123.0)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == kw["lr"]
    for _ in range(5):
        opt2.zero_grad()
        objective(kw, complex_loss)(z2).backward()
        opt2.step()
    np.testing.assert_array_equal(z2.data, full)
    with pytest.raises(ValueError, match="groups"):
        optim.SGD([z2, yaad.tensor(np.ones(1), requires_grad=True)]).load_state_dict(saved)


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01)),
]


@pytest.mark.parametrize("name,kw", SCHEDULERS)
def test_schedulers_match_torch(name, kw):
    import torch
    w = yaad.tensor(np.ones(1), requires_grad=True)
    opt = optim.SGD([w], lr=0.2)
    sched = getattr(optim, name)(opt, **kw)
    tw = torch.ones(1, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.2)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    for _ in range(8):
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)
        assert opt.param_groups[0]["lr"] == sched.get_last_lr()[0]
        opt.step()
        topt.step()
        sched.step()
        tsched.step()


def test_scheduler_values_and_state():
    w = yaad.tensor(np.ones(1), requires_grad=True)
    opt = optim.Adam([w], lr=1.0)
    sched = optim.LambdaLR(opt, lambda e: 1 / (1 + e))
    for _ in range(3):
        sched.step()
    assert sched.get_last_lr() == [0.25]
    state = sched.state_dict()
    assert state["last_epoch"] == 3 and "lr_lambda" not in state
    cos = optim.CosineAnnealingLR(optim.SGD([w], lr=1.0), T_max=4)
    values = []
    for _ in range(5):
        values.append(cos.get_last_lr()[0])
        cos.step()
    np.testing.assert_allclose(values, [1, (1 + np.cos(np.pi / 4)) / 2, 0.5,
                                        (1 + np.cos(3 * np.pi / 4)) / 2, 0], atol=1e-15)
    with pytest.raises(TypeError):
        optim.StepLR(object(), 2)


@pytest.mark.parametrize("name", sorted({name for name, _ in CONFIGS}))
def test_a_0d_parameter_matches_torch(name):
    """A scalar (0-d) parameter: its gradient was made 1-d (np.ascontiguousarray) and
    every optimizer's step failed on the broadcast."""
    import torch
    kw = [k for n, k in CONFIGS if n == name][-1]  # the combination of options
    s, ts = yaad.tensor(0.3, requires_grad=True), torch.tensor(0.3, dtype=torch.float64,
                                                               requires_grad=True)
    opt, topt = getattr(optim, name)([s], **kw), getattr(torch.optim, name)([ts], **kw)
    for lib, p, o in ((yaad, s, opt), (torch, ts, topt)):
        for _ in range(5):
            o.zero_grad()
            objective(kw, lambda p, lib=lib: (p - 1.0) ** 4 + lib.sin(p))(p).backward()
            o.step()
    assert s.shape == () and s.data.dtype == np.float64
    assert all(np.shape(v) == () for v in opt.state[s].values())
    np.testing.assert_allclose(s.data, ts.detach().numpy(), rtol=1e-12)
