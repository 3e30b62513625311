"""yaad.nn: modules, layers, functional forms, losses and initialisers."""

import numpy as np
import pytest

import yaad
import yaad.nn.functional as F
from yaad import nn
from yaad.testing import gradcheck, gradgradcheck

rng = np.random.default_rng(0)


def _grads(loss, params):
    for p in params:
        p.grad = None
    loss.backward()
    return [p.grad for p in params]


# ---- Module mechanics ----------------------------------------------------------------

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.scale = nn.Parameter(np.ones(4))
        self.body = nn.Sequential(nn.Tanh(), nn.Linear(4, 2))
        self.shared = self.fc1  # registered twice, counted once
        self.register_buffer("running", np.zeros(2))
        self.register_buffer("scratch", np.zeros(2), persistent=False)

    def forward(self, x):
        return self.body(self.fc1(x) * self.scale) + self.running


def test_registration_order_and_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "body.1.weight", "body.1.bias"]
    assert len(list(net.parameters())) == 5
    assert [n for n, _ in net.named_children()] == ["fc1", "body", "shared"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "body", "body.0", "body.1"]
    # as PyTorch: own parameters and buffers first, shared modules under every name
    assert list(net.state_dict()) == ["scale", "running", "fc1.weight", "fc1.bias",
                                      "body.1.weight", "body.1.bias", "shared.weight",
                                      "shared.bias"]
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]


def test_assignment_rules():
    net = Net()
    with pytest.raises(TypeError, match="parameter 'scale'"):
        net.scale = yaad.tensor([1.0])
    net.scale = None
    assert "scale" not in [n for n, _ in net.named_parameters()]
    del net.fc1
    assert not hasattr(net, "fc1")

    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.zeros(2))

    with pytest.raises(AttributeError, match="super"):
        Bad()


def test_parameter():
    p = nn.Parameter(np.arange(3.0))
    assert p.requires_grad and p.is_leaf and isinstance(p, yaad.Tensor)
    assert "Parameter containing" in repr(p)
    with pytest.raises(TypeError):
        nn.Parameter(np.arange(3))
    assert not nn.Parameter(np.arange(3), requires_grad=False).requires_grad


def test_forward_backward_zero_grad_train_eval():
    net = Net()
    x = yaad.tensor(rng.standard_normal((5, 3)))
    out = net(x)
    assert out.shape == (5, 2)
    out.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_state_dict_roundtrip_and_errors():
    a, b = Net(), Net()
    b.running[...] = 7.0
    x = rng.standard_normal((2, 3))
    sd = a.state_dict()
    assert isinstance(sd["fc1.weight"], np.ndarray)
    assert np.shares_memory(sd["fc1.weight"], a.fc1.weight.data)
    keys = b.load_state_dict({k: v.copy() for k, v in sd.items()})
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    np.testing.assert_array_equal(a(x).data, b(x).data)
    before = b.fc1.weight.data.copy()
    with pytest.raises(KeyError, match="missing keys"):
        b.load_state_dict({"scale": np.zeros(4)})
    with pytest.raises(KeyError, match="unexpected keys"):
        b.load_state_dict({**sd, "extra": np.zeros(1)})
    np.testing.assert_array_equal(b.fc1.weight.data, before)  # nothing half-loaded
    bad = dict(sd, **{"fc1.weight": np.zeros((3, 3))})
    with pytest.raises(ValueError, match="shape"):
        b.load_state_dict(bad)
    with pytest.raises(ValueError, match="complex"):
        b.load_state_dict(dict(sd, scale=np.ones(4) * 1j))
    keys = b.load_state_dict({"scale": np.full(4, 2.0)}, strict=False)
    assert "fc1.weight" in keys.missing_keys
    np.testing.assert_array_equal(b.scale.data, 2.0)


def test_load_state_dict_bumps_version():
    lin = nn.Linear(2, 2)
    x = yaad.tensor(np.ones((1, 2)), requires_grad=True)
    y = (x @ lin.weight).sum()
    lin.load_state_dict({k: np.zeros_like(v) for k, v in lin.state_dict().items()})
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()


def test_to_float32_keeps_float32_gradients():
    net = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.LayerNorm(4), nn.Linear(4, 2)).float()
    assert all(p.dtype == np.float32 for p in net.parameters())
    x = yaad.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    out = net(x)
    assert out.dtype == np.float32
    out.sum().backward()
    assert all(p.grad.dtype == np.float32 for p in net.parameters())
    c = nn.Linear(2, 2, dtype=np.complex128).float()
    assert c.weight.dtype == np.complex64


def test_sequential_and_modulelist():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    seq.append(nn.Sigmoid())
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear", "Sigmoid"]
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(list(ml.parameters())) == 6 and len(ml[1:]) == 2
    text = repr(seq)
    assert "(0): Linear(in_features=2, out_features=3, bias=True)" in text


# ---- layers --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_linear_values_and_gradients(dtype):
    lin = nn.Linear(3, 2, dtype=dtype, generator=np.random.default_rng(1))
    assert lin.weight.dtype == dtype and lin.bias.dtype == dtype
    x = rng.standard_normal((4, 3)) + (1j * rng.standard_normal((4, 3)) if dtype is np.complex128
                                       else 0)
    out = lin(yaad.tensor(x))
    np.testing.assert_allclose(out.data, x @ lin.weight.data.T + lin.bias.data)
    gradcheck(lambda x, w, b: F.linear(x, w, b),
              [x, lin.weight.data.copy(), lin.bias.data.copy()])


def test_linear_batched_and_init_bounds():
    lin = nn.Linear(16, 5)
    assert np.all(np.abs(lin.weight.data) <= 1 / 4) and np.all(np.abs(lin.bias.data) <= 1 / 4)
    x = rng.standard_normal((2, 3, 16))
    assert lin(yaad.tensor(x)).shape == (2, 3, 5)
    assert nn.Linear(2, 3, bias=False).bias is None


def test_complex_linear_trains():
    # A complex least-squares fit by plain gradient descent: the gradient needs no conj.
    target = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    x = rng.standard_normal((20, 2)) + 1j * rng.standard_normal((20, 2))
    y = x @ target.T
    lin = nn.Linear(2, 3, bias=False, dtype=np.complex128)
    for _ in range(300):
        lin.zero_grad()
        F.mse_loss(lin(yaad.tensor(x)), y).backward()
        with yaad.no_grad():
            lin.weight -= 0.1 * lin.weight.grad
    np.testing.assert_allclose(lin.weight.data, target, atol=1e-6)


def test_embedding():
    emb = nn.Embedding(5, 3, padding_idx=0, generator=np.random.default_rng(0))
    np.testing.assert_array_equal(emb.weight.data[0], 0)
    idx = np.array([[1, 0, 1], [4, 0, 2]])
    out = emb(idx)
    np.testing.assert_array_equal(out.data, emb.weight.data[idx])
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad[:, 0], [0, 2, 1, 0, 1])  # row 0: padding
    with pytest.raises(IndexError, match="embedding"):
        emb(np.array([5]))
    with pytest.raises(TypeError, match="integers"):
        emb(np.array([1.0]))


def test_layer_norm():
    x = rng.standard_normal((4, 5)) * 3 + 1
    ln = nn.LayerNorm(5)
    out = ln(yaad.tensor(x)).data
    np.testing.assert_allclose(out.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(out.var(-1), 1, rtol=1e-4)
    w, b = rng.standard_normal(5), rng.standard_normal(5)
    gradcheck(lambda x, w, b: F.layer_norm(x, 5, w, b), [x, w, b])
    gradgradcheck(lambda x: F.layer_norm(x, (5,)), [x[:2]])
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(yaad.tensor(x), (4,))


def test_dropout():
    x = yaad.tensor(np.ones((200, 50)), requires_grad=True)
    drop = nn.Dropout(0.25, generator=3)
    out = drop(x)
    kept = out.data != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(out.data[kept], 1 / 0.75)
    out.sum().backward()
    np.testing.assert_allclose(x.grad, out.data)  # gradient: the same mask and scale
    again = nn.Dropout(0.25, generator=3)(x)
    np.testing.assert_array_equal(again.data, out.data)  # seeded: reproducible
    drop.eval()
    assert drop(x) is x
    assert np.all(F.dropout(x, 1.0).data == 0)
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


ACTIVATIONS = [
    (F.relu, np.maximum),
    (F.tanh, None),
    (F.sigmoid, None),
    (lambda x: F.gelu(x), None),
    (lambda x: F.gelu(x, approximate="tanh"), None),
    (lambda x: F.softplus(x, beta=2.0, threshold=5.0), None),
    (lambda x: F.softmax(x, dim=-1), None),
    (lambda x: F.log_softmax(x, dim=0), None),
]


@pytest.mark.parametrize("fn", [a for a, _ in ACTIVATIONS])
def test_activation_gradients(fn):
    x = rng.standard_normal((3, 4)) + 0.05  # away from the kink of relu
    gradcheck(fn, [x])
    if fn is not F.relu:
        gradgradcheck(fn, [x])


def test_activation_modules_match_functions():
    x = rng.standard_normal((3, 4))
    pairs = [(nn.ReLU(), F.relu(x)), (nn.Tanh(), np.tanh(x)), (nn.Sigmoid(), 1 / (1 + np.exp(-x))),
             (nn.GELU("tanh"), F.gelu(x, "tanh")), (nn.Softplus(beta=2), F.softplus(x, 2)),
             (nn.Softmax(dim=0), F.softmax(x, 0)), (nn.LogSoftmax(), F.log_softmax(x, -1)),
             (nn.Identity(), x)]
    for module, expected in pairs:
        np.testing.assert_allclose(module(x), expected, rtol=1e-12)


def test_softmax_is_stable():
    x = yaad.tensor(np.array([[1000.0, 0.0, -1000.0]]), requires_grad=True)
    out = F.log_softmax(x, dim=1)
    np.testing.assert_allclose(out.data, [[0.0, -1000.0, -2000.0]])
    out[0, 0].backward()
    assert np.all(np.isfinite(x.grad))


# ---- losses --------------------------------------------------------------------------

LOGITS = rng.standard_normal((6, 4))
LABELS = np.array([0, 3, 1, 1, 2, 3])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"weight": np.array([1.0, 2.0, 0.5, 3.0])},
                                {"ignore_index": 1}, {"label_smoothing": 0.2},
                                {"weight": np.array([1.0, 2.0, 0.5, 3.0]), "ignore_index": 3,
                                 "label_smoothing": 0.1}])
def test_cross_entropy_gradients(reduction, kw):
    gradcheck(lambda x: F.cross_entropy(x, LABELS, reduction=reduction, **kw), [LOGITS])


def test_cross_entropy_reference_values():
    logp = LOGITS - np.log(np.exp(LOGITS).sum(1, keepdims=True))
    nll = -logp[np.arange(6), LABELS]
    np.testing.assert_allclose(F.cross_entropy(LOGITS, LABELS), nll.mean())
    w = np.array([1.0, 2.0, 0.5, 3.0])
    np.testing.assert_allclose(F.cross_entropy(LOGITS, LABELS, weight=w),
                               (w[LABELS] * nll).sum() / w[LABELS].sum())
    keep = LABELS != 1
    np.testing.assert_allclose(F.cross_entropy(LOGITS, LABELS, ignore_index=1),
                               nll[keep].mean())
    np.testing.assert_allclose(F.nll_loss(logp, LABELS, reduction="sum"), nll.sum())
    probs = np.exp(logp)
    np.testing.assert_allclose(F.cross_entropy(LOGITS, probs), -(probs * logp).sum(1).mean())


def test_cross_entropy_shapes_and_errors():
    x = rng.standard_normal((2, 3, 4, 5))  # (N, C, d1, d2)
    t = rng.integers(0, 3, (2, 4, 5))
    gradcheck(lambda x: F.cross_entropy(x, t), [x])
    assert F.cross_entropy(x, t, reduction="none").shape == (2, 4, 5)
    gradcheck(lambda x: F.cross_entropy(x, np.array(2)), [x[0, :, 0, 0]])  # unbatched
    probs = rng.dirichlet(np.ones(3), 2)
    gradcheck(lambda x: F.cross_entropy(x, probs, label_smoothing=0.3), [x[:, :, 0, 0]])
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        F.cross_entropy(LOGITS, np.array([0, 1, 2, 3, 4, 0]))
    with pytest.raises(ValueError, match="target must have shape"):
        F.cross_entropy(LOGITS, LABELS[:3])
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(LOGITS, LABELS, reduction="avg")


def test_regression_losses():
    x, y = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(F.mse_loss(x, y), ((x - y) ** 2).mean())
    np.testing.assert_allclose(F.l1_loss(x, y, reduction="sum"), np.abs(x - y).sum())
    gradcheck(lambda x: F.mse_loss(x, y), [x])
    gradgradcheck(lambda x: F.mse_loss(x, y, reduction="sum"), [x])
    z = x + 1j * y
    np.testing.assert_allclose(F.mse_loss(z, 0 * z), (np.abs(z) ** 2).mean())
    gradcheck(lambda z: F.mse_loss(z, y, reduction="sum"), [z])
    with pytest.raises(ValueError, match="shape"):
        F.mse_loss(x, y[:2])


def test_binary_cross_entropy():
    p = rng.uniform(0.05, 0.95, (4, 3))
    t = rng.integers(0, 2, (4, 3)).astype(float)
    w = rng.uniform(0.5, 2, (3,))
    expected = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(F.binary_cross_entropy(p, t), expected.mean())
    gradcheck(lambda p: F.binary_cross_entropy(p, t, weight=w), [p])
    logits = np.log(p / (1 - p))
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(logits, t), expected.mean())
    gradcheck(lambda x: F.binary_cross_entropy_with_logits(x, t, pos_weight=w), [logits])
    # log clamped at -100 as PyTorch does: finite at 0 and 1
    edge = yaad.tensor(np.array([0.0, 1.0]), requires_grad=True)
    loss = F.binary_cross_entropy(edge, np.array([1.0, 0.0]), reduction="sum")
    assert loss.item() == 200.0
    with pytest.raises(ValueError, match="probabilities"):
        F.binary_cross_entropy(np.array([1.5]), np.array([1.0]))


def test_loss_modules():
    assert np.allclose(nn.CrossEntropyLoss(label_smoothing=0.1)(LOGITS, LABELS),
                       F.cross_entropy(LOGITS, LABELS, label_smoothing=0.1))
    assert np.allclose(nn.MSELoss(reduction="sum")(LOGITS, 0 * LOGITS), (LOGITS ** 2).sum())
    w = np.ones(4)
    assert np.allclose(nn.NLLLoss(w)(LOGITS, LABELS), F.nll_loss(LOGITS, LABELS))


# ---- initialisers --------------------------------------------------------------------

def test_init_statistics_and_seeding():
    init = nn.init
    w = np.empty((400, 300))
    init.xavier_uniform_(w, generator=np.random.default_rng(0))
    bound = np.sqrt(6 / 700)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    init.xavier_normal_(w, gain=2.0)
    np.testing.assert_allclose(w.std(), 2 * np.sqrt(2 / 700), rtol=0.02)
    init.kaiming_normal_(w, nonlinearity="relu")
    np.testing.assert_allclose(w.std(), np.sqrt(2 / 300), rtol=0.02)
    init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    np.testing.assert_allclose(np.abs(w).max(), np.sqrt(6 / 400), rtol=0.01)
    c = np.empty((400, 300), dtype=complex)
    init.kaiming_normal_(c, nonlinearity="relu")
    np.testing.assert_allclose(np.mean(np.abs(c) ** 2), 2 / 300, rtol=0.02)
    np.testing.assert_allclose(np.var(c.real), np.var(c.imag), rtol=0.05)
    t = nn.Parameter(np.empty(3))
    assert init.zeros_(t) is t and np.all(t.data == 0)
    init.ones_(t)
    assert np.all(t.data == 1)
    init.manual_seed(5)
    a = nn.Linear(3, 3).weight.data.copy()
    init.manual_seed(5)
    np.testing.assert_array_equal(nn.Linear(3, 3).weight.data, a)
    assert init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError):
        init.fan_in_and_fan_out(np.empty(3))


# ---- against PyTorch -----------------------------------------------------------------

def test_mlp_matches_torch():
    import torch
    tnet = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.LayerNorm(8),
                               torch.nn.Linear(8, 8), torch.nn.Softplus(beta=2.0),
                               torch.nn.Linear(8, 3)).double()
    ynet = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 8),
                         nn.Softplus(beta=2.0), nn.Linear(8, 3))
    ynet.load_state_dict({k: v.detach().numpy().copy() for k, v in tnet.state_dict().items()})
    x = rng.standard_normal((7, 5))
    labels = rng.integers(0, 3, 7)
    tloss = torch.nn.functional.cross_entropy(tnet(torch.tensor(x)), torch.tensor(labels),
                                              label_smoothing=0.1)
    tloss.backward()
    yloss = F.cross_entropy(ynet(x), labels, label_smoothing=0.1)
    yloss.backward()
    np.testing.assert_allclose(yloss.item(), tloss.item(), rtol=1e-12)
    for (name, p), tp in zip(ynet.named_parameters(), tnet.parameters()):
        np.testing.assert_allclose(p.grad, tp.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_complex_linear_matches_torch():
    import torch
    tl = torch.nn.Linear(3, 2, dtype=torch.complex128)
    yl = nn.Linear(3, 2, dtype=np.complex128)
    yl.load_state_dict({k: v.detach().numpy().copy() for k, v in tl.state_dict().items()})
    x = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    tout = tl(torch.tensor(x))
    (tout.abs() ** 2).sum().backward()
    yout = yl(x)
    np.testing.assert_allclose(yout.data, tout.detach().numpy(), rtol=1e-12)
    (yout.real ** 2 + yout.imag ** 2).sum().backward()
    np.testing.assert_allclose(yl.weight.grad, tl.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(yl.bias.grad, tl.bias.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name,kw", [
    ("cross_entropy", {"weight": True, "ignore_index": 2, "label_smoothing": 0.15}),
    ("cross_entropy", {"reduction": "sum"}),
    ("nll_loss", {"weight": True, "reduction": "mean"}),
    ("nll_loss", {"ignore_index": 0, "reduction": "none"}),
])
def test_class_losses_match_torch(name, kw):
    import torch
    x = rng.standard_normal((5, 4, 3))
    t = rng.integers(0, 4, (5, 3))
    kw = dict(kw)
    w = rng.uniform(0.5, 2, 4) if kw.pop("weight", False) else None
    tx = torch.tensor(x, requires_grad=True)
    tout = getattr(torch.nn.functional, name)(
        tx, torch.tensor(t), weight=None if w is None else torch.tensor(w), **kw)
    tout.sum().backward()
    yx = yaad.tensor(x, requires_grad=True)
    yout = getattr(F, name)(yx, t, weight=w, **kw)
    yout.sum().backward()
    np.testing.assert_allclose(yout.data, tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(yx.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_other_layers_match_torch():
    import torch
    tF = torch.nn.functional
    x = rng.standard_normal((4, 6))
    p = rng.uniform(0.01, 0.99, (4, 6))
    t = rng.integers(0, 2, (4, 6)).astype(float)
    pw = rng.uniform(0.5, 2, 6)
    cases = [
        (lambda a: tF.gelu(a, approximate="tanh"), lambda a: F.gelu(a, approximate="tanh"), x),
        (lambda a: tF.softplus(a, beta=3, threshold=2), lambda a: F.softplus(a, 3, 2), x),
        (lambda a: tF.binary_cross_entropy(a, torch.tensor(t)),
         lambda a: F.binary_cross_entropy(a, t), p),
        (lambda a: tF.binary_cross_entropy_with_logits(a, torch.tensor(t),
                                                       pos_weight=torch.tensor(pw)),
         lambda a: F.binary_cross_entropy_with_logits(a, t, pos_weight=pw), x),
        (lambda a: tF.layer_norm(a, (6,)), lambda a: F.layer_norm(a, (6,)), x),
        (tF.relu, F.relu, x), (torch.tanh, F.tanh, x), (torch.sigmoid, F.sigmoid, x),
        (lambda a: tF.softmax(a, dim=0), lambda a: F.softmax(a, dim=0), x),
        (lambda a: tF.log_softmax(a, dim=1), lambda a: F.log_softmax(a, dim=1), x),
        (lambda a: tF.mse_loss(a, torch.tensor(p)), lambda a: F.mse_loss(a, p), x),
        (lambda a: tF.l1_loss(a, torch.tensor(p), reduction="sum"),
         lambda a: F.l1_loss(a, p, reduction="sum"), x),
        (lambda a: tF.embedding(torch.tensor([[1, 0], [3, 1]]), a, padding_idx=1),
         lambda a: F.embedding(np.array([[1, 0], [3, 1]]), a, padding_idx=1), x),
    ]
    for tfn, yfn, value in cases:
        tv = torch.tensor(value, requires_grad=True)
        tout = tfn(tv)
        (tout * torch.tensor(np.arange(tout.numel()).reshape(tout.shape) + 1.0)).sum().backward()
        yv = yaad.tensor(value, requires_grad=True)
        yout = yfn(yv)
        (yout * (np.arange(yout.size).reshape(yout.shape) + 1.0)).sum().backward()
        np.testing.assert_allclose(yout.data, tout.detach().numpy(), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(yv.grad, tv.grad.numpy(), rtol=1e-9, atol=1e-12)


F32_CASES = [
    lambda x: F.cross_entropy(x, np.array([0, 1, 2, 1]), label_smoothing=0.1, ignore_index=1,
                              weight=np.ones(3, np.float32)),
    lambda x: F.mse_loss(x, np.zeros((4, 3), np.float32)),
    lambda x: F.binary_cross_entropy(F.sigmoid(x), np.ones((4, 3), np.float32)),
    lambda x: F.binary_cross_entropy_with_logits(x, np.ones((4, 3), np.float32)),
    lambda x: F.layer_norm(x, 3).sum(),
    lambda x: F.gelu(x).sum() + F.softplus(x, 2.0).sum() + F.dropout(x, 0.3).sum(),
]


@pytest.mark.parametrize("fn", F32_CASES)
def test_float32_in_float32_out(fn):
    x = yaad.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    loss = fn(x)
    loss.backward()
    assert loss.dtype == np.float32 and x.grad.dtype == np.float32


def test_cross_entropy_second_derivatives():
    gradgradcheck(lambda x: F.cross_entropy(x, LABELS, label_smoothing=0.1), [LOGITS])
    gradgradcheck(lambda x: F.binary_cross_entropy_with_logits(x, (LOGITS > 0) * 1.0),
                  [LOGITS])
