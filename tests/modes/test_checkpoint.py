"""yaad.checkpoint: same values and gradients, less memory held between forward and backward."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import yaad
from yaad.core.grad_mode import state

rng = np.random.default_rng(2)


def mlp_weights(depth, width):
    return [yaad.tensor(rng.standard_normal((width, width)) / np.sqrt(width),
                        requires_grad=True) for _ in range(depth)]


def block(h, ws):
    for w in ws:
        h = yaad.tanh(h @ w)
    return h


def forward(x, weights, segment, use_checkpoint):
    h = x
    for k in range(0, len(weights), segment):
        ws = weights[k:k + segment]
        h = yaad.checkpoint(block, h, ws) if use_checkpoint else block(h, ws)
    return yaad.sum(h * h)


def grads_of(weights):
    out = [w.grad for w in weights]
    for w in weights:
        w.grad = None
    return out


@pytest.mark.parametrize("segment", [1, 3])
def test_same_values_and_gradients(segment):
    weights = mlp_weights(6, 5)
    x = yaad.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    plain = forward(x, weights, segment, False)
    plain.backward()
    expected, gx = grads_of(weights), x.grad
    x.grad = None
    ck = forward(x, weights, segment, True)
    assert ck.item() == pytest.approx(plain.item(), rel=1e-14)
    ck.backward()
    for a, b in zip(grads_of(weights), expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(x.grad, gx, rtol=1e-12)


def test_gradients_reach_closed_over_tensors():
    # the weights are not arguments: they are found during the forward run
    w = yaad.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    b = yaad.tensor(rng.standard_normal(3), requires_grad=True)
    x = yaad.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    out = yaad.checkpoint(lambda h: yaad.sin(h @ w + b), x)
    assert out.grad_fn.name == "checkpoint"
    yaad.sum(out).backward()
    c = np.cos(x.data @ w.data + b.data)
    np.testing.assert_allclose(b.grad, c.sum(0))
    np.testing.assert_allclose(w.grad, x.data.T @ c)
    np.testing.assert_allclose(x.grad, c @ w.data.T)


def test_an_intermediate_from_outside_is_an_input_too():
    x = yaad.tensor([0.5, 1.0], requires_grad=True)
    outside = x * 3  # not a leaf: its gradient must continue to x
    y = yaad.checkpoint(lambda h: h * outside, yaad.tensor([2.0, 2.0], requires_grad=True))
    yaad.sum(y).backward()
    np.testing.assert_allclose(x.grad, [6.0, 6.0])


def test_several_outputs_kwargs_and_constants():
    a = yaad.tensor([1.0, 2.0], requires_grad=True)

    def f(x, scale, offset=0.0):
        return x * scale + offset, yaad.exp(x)

    p, q = yaad.checkpoint(f, a, 3.0, offset=1.0)
    np.testing.assert_allclose(p.data, [4.0, 7.0])
    yaad.sum(p + q).backward()
    np.testing.assert_allclose(a.grad, 3.0 + np.exp(a.data))


def test_only_one_output_used():
    a = yaad.tensor([1.0, 2.0], requires_grad=True)
    p, q = yaad.checkpoint(lambda x: (x * 2, x * x), a)
    yaad.sum(q).backward()
    np.testing.assert_allclose(a.grad, 2 * a.data)


def test_second_derivatives_through_a_checkpoint():
    x = yaad.tensor(rng.standard_normal(3), requires_grad=True)
    y = yaad.sum(yaad.checkpoint(lambda a: yaad.sin(a) * a, x))
    (g,) = yaad.autograd.grad(y, x, create_graph=True)
    (h,) = yaad.autograd.grad(yaad.sum(g), x)
    np.testing.assert_allclose(h, 2 * np.cos(x.data) - x.data * np.sin(x.data))


def test_nested_checkpoints():
    w = yaad.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = yaad.tensor(rng.standard_normal((2, 3)), requires_grad=True)

    def inner(h):
        return yaad.tanh(h @ w)

    def outer(h):
        return yaad.checkpoint(inner, yaad.checkpoint(inner, h))

    yaad.sum(yaad.checkpoint(outer, x)).backward()
    gw, gx = w.grad, x.grad
    w.grad = x.grad = None
    yaad.sum(inner(inner(x))).backward()
    np.testing.assert_allclose(gw, w.grad, rtol=1e-12)
    np.testing.assert_allclose(gx, x.grad, rtol=1e-12)


def test_plain_call_without_recording_or_in_forward_mode():
    x = yaad.tensor([1.0], requires_grad=True)
    with yaad.no_grad():
        y = yaad.checkpoint(yaad.exp, x)
    assert y.grad_fn is None
    _, t = yaad.func.jvp(lambda a: yaad.checkpoint(yaad.exp, a), (np.array([0.0]),),
                         (np.array([2.0]),))
    np.testing.assert_allclose(t, [2.0])
    assert yaad.checkpoint(yaad.exp, yaad.tensor([0.0])).grad_fn is None
    assert state.segment is None and not state.modes_on


def test_a_function_that_changes_between_calls_is_caught():
    calls = []

    def f(x):
        calls.append(1)
        return x[: len(calls)] * 2  # another shape the second time

    y = yaad.checkpoint(f, yaad.tensor([1.0, 2.0, 3.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="same thing"):
        yaad.sum(y).backward()


def test_values_that_are_not_tensors_come_back_as_returned():
    """As torch.utils.checkpoint (use_reentrant=False): numbers, strings and None among
    the outputs come back as f returned them (they raised TypeError); a dict or a list
    output raises (a deliberate difference, docs/pytorch-map.md)."""
    import torch
    from torch.utils.checkpoint import checkpoint as tcheckpoint

    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    assert yaad.checkpoint(lambda a: 3.0, x) == 3.0
    out = yaad.checkpoint(lambda a: (3, a.sin(), None, "s"), x)
    assert out[0] == 3 and out[2] is None and out[3] == "s"
    out[1].sum().backward()
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    tout = tcheckpoint(lambda a: (3, a.sin(), None, "s"), tx, use_reentrant=False)
    tout[1].sum().backward()
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-15)
    with pytest.raises(TypeError, match="checkpoint: .* dict .*tuple"):
        yaad.checkpoint(lambda a: {"y": a}, x)


def test_peak_memory_is_lower():
    depth, width, batch = 32, 16, 512
    weights = mlp_weights(depth, width)
    x = yaad.tensor(rng.standard_normal((batch, width)))

    def peak(use_checkpoint):
        tracemalloc.start()
        try:
            forward(x, weights, 8, use_checkpoint).backward()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            grads_of(weights)

    plain, ck = peak(False), peak(True)
    # 32 layers hold 32 activations of 64 KiB; 4 segments hold 4, plus one segment's
    # recomputation (8 layers) during backward
    assert ck < 0.6 * plain, (ck, plain)


def test_peak_memory_quoted_in_the_docs():
    # docs/transforms.md and README.md quote these peaks of forward + backward (tracemalloc
    # counts the same NumPy buffers on any machine): 64 layers, width 64, batch 1024.
    weights = mlp_weights(64, 64)
    x = yaad.tensor(rng.standard_normal((1024, 64)))

    def peak_mib(segment, use_checkpoint):
        tracemalloc.start()
        try:
            forward(x, weights, segment, use_checkpoint).backward()
            return tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
            grads_of(weights)

    quoted = {(4, False): 34.5, (4, True): 12.6, (8, True): 10.6}
    measured = {key: peak_mib(*key) for key in quoted}
    for key, mib in quoted.items():
        assert abs(measured[key] - mib) < 0.05 * mib, (key, measured[key], mib)
