"""yaad.fft against PyTorch (torch.fft) and JAX (jax.numpy.fft): gradients of
``L = sum Re(conj(w) * f(x))`` for random cotangents ``w``, real and complex inputs,
batched, with n/s cropping and padding, every norm, odd and even lengths.

The registry suites check values against NumPy (bit for bit), gradients against finite
differences, forward mode and second order. PyTorch shares yaad's complex convention;
JAX's gradient of a real function of a complex input is the conjugate.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import yaad
from yaad import fft as F

jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(11)


def _real(*shape):
    return rng.standard_normal(shape)


def _cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


# name, keyword arguments for yaad/NumPy, input, torch keyword names
CASES = [
    ("fft", {}, _cplx(3, 6)),
    ("fft", {"n": 9, "axis": 0, "norm": "ortho"}, _cplx(4, 2)),
    ("fft", {"n": 3, "norm": "forward"}, _real(2, 6)),
    ("ifft", {"n": 8}, _cplx(2, 5)),
    ("ifft", {"axis": 0, "norm": "ortho"}, _real(5, 3)),
    ("rfft", {}, _real(3, 6)),
    ("rfft", {"n": 7, "norm": "ortho"}, _real(2, 4)),
    ("rfft", {"n": 4, "axis": 0, "norm": "forward"}, _real(9, 2)),
    ("irfft", {}, _cplx(2, 5)),
    ("irfft", {"n": 9}, _cplx(3, 5)),
    ("irfft", {"n": 12, "norm": "ortho"}, _cplx(4)),
    ("irfft", {"n": 3, "axis": 0, "norm": "forward"}, _cplx(6, 2)),
    ("irfft", {"n": 7}, _real(2, 3)),
    ("hfft", {}, _cplx(2, 4)),
    ("hfft", {"n": 7, "norm": "ortho"}, _cplx(5)),
    ("ihfft", {}, _real(2, 7)),
    ("ihfft", {"n": 6, "norm": "forward"}, _real(9)),
    ("fftn", {}, _cplx(2, 3, 4)),
    ("fftn", {"s": (5, 2), "axes": (0, 2)}, _cplx(3, 2, 4)),
    ("ifftn", {"s": (4, 3), "axes": (-1, -2), "norm": "ortho"}, _real(2, 3, 5)),
    ("rfftn", {}, _real(3, 4, 5)),
    ("rfftn", {"s": (2, 6), "axes": (0, 1), "norm": "forward"}, _real(3, 4)),
    ("irfftn", {}, _cplx(3, 4)),
    ("irfftn", {"s": (4, 5), "axes": (1, 2)}, _cplx(2, 3, 3)),
    ("fft2", {"norm": "ortho"}, _cplx(2, 3, 4)),
    ("ifft2", {"s": (2, 5)}, _cplx(3, 4)),
    ("rfft2", {}, _real(2, 4, 6)),
    ("irfft2", {"s": (3, 7)}, _cplx(3, 4)),
    ("fftshift", {}, _cplx(3, 4)),
    ("ifftshift", {"axes": 1}, _real(3, 5)),
]

_TORCH_KW = {"n": "n", "axis": "dim", "norm": "norm", "s": "s", "axes": "dim"}
_JAX_KW = {"n": "n", "axis": "axis", "norm": "norm", "s": "s", "axes": "axes"}


def _ids():
    return [f"{k}-{name}-{'c' if np.iscomplexobj(x) else 'r'}{x.shape}"
            for k, (name, _, x) in enumerate(CASES)]


def _cotangent(y):
    r = np.random.default_rng(3)
    w = r.standard_normal(y.shape)
    return w + 1j * r.standard_normal(y.shape) if np.iscomplexobj(y) else w


def _yaad_value_and_grad(name, kw, x):
    t = yaad.tensor(x, requires_grad=True)
    y = getattr(F, name)(t, **kw)
    w = _cotangent(y.data)
    yaad.real(yaad.sum(y * np.conj(w))).backward()
    return y.data, w, t.grad


@pytest.mark.parametrize("name, kw, x", CASES, ids=_ids())
def test_against_torch(name, kw, x):
    y, w, g = _yaad_value_and_grad(name, kw, x)
    tx = torch.tensor(x, requires_grad=True)
    tkw = {_TORCH_KW[k]: v for k, v in kw.items()}
    ty = getattr(torch.fft, name)(tx, **tkw)
    np.testing.assert_allclose(y, ty.detach().resolve_conj().numpy(), rtol=1e-12, atol=1e-12)
    torch.real(torch.sum(ty * torch.tensor(np.conj(w)))).backward()
    np.testing.assert_allclose(g, tx.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, kw, x", CASES, ids=_ids())
def test_against_jax(name, kw, x):
    y, w, g = _yaad_value_and_grad(name, kw, x)
    jkw = {_JAX_KW[k]: v for k, v in kw.items()}
    f = getattr(jnp.fft, name)
    np.testing.assert_allclose(y, np.asarray(f(x, **jkw)), rtol=1e-12, atol=1e-12)
    jg = jax.grad(lambda v: jnp.real(jnp.sum(f(v, **jkw) * jnp.conj(w))))(x)
    np.testing.assert_allclose(g, np.conj(np.asarray(jg)), rtol=1e-10, atol=1e-12)


def test_irfft_gradient_weights_interior_frequencies_twice():
    # irfft(X, n)[j] = (1/n) (X_0 + 2 sum_k Re(X_k e^{2 pi i jk/n}) + X_{n/2} (-1)^j):
    # the gradient of sum(y) is 1 at frequency 0 (real), 0 elsewhere; that of y[0]
    # is 1/n at 0 and n/2, 2/n in between, and the imaginary parts of 0 and n/2 are
    # ignored (zero gradient).
    for n in (6, 7):
        x = yaad.tensor(_cplx(n // 2 + 1), requires_grad=True)
        F.irfft(x, n)[0].backward()
        expected = np.full(n // 2 + 1, 2.0 / n)
        expected[0] = 1.0 / n
        if n % 2 == 0:
            expected[-1] = 1.0 / n
        np.testing.assert_allclose(x.grad, expected, rtol=1e-14)


def test_float32_stays_single_precision():
    x = yaad.tensor(_real(2, 6).astype(np.float32), requires_grad=True)
    y = F.irfft(F.rfft(x) * F.rfft(x), 6)
    assert F.rfft(x).dtype == np.complex64 and y.dtype == np.float32
    yaad.sum(y).backward()
    assert x.grad.dtype == np.float32


def test_numpy_fft_on_tensors_dispatches_to_yaad_fft():
    x = yaad.tensor(_real(4, 6), requires_grad=True)
    z = yaad.tensor(_cplx(4, 4), requires_grad=True)
    a = np.fft.irfft2(np.fft.rfft2(x) * np.fft.fftshift(np.fft.fft2(z), axes=(0,)), (4, 6))
    b = F.irfft2(F.rfft2(x) * F.fftshift(F.fft2(z), axes=(0,)), (4, 6))
    assert isinstance(a, yaad.Tensor) and a.requires_grad
    np.testing.assert_array_equal(a.data, b.data)
    ga = yaad.autograd.grad(yaad.sum(a * a), [x, z])
    gb = yaad.autograd.grad(yaad.sum(b * b), [x, z])
    for u, v in zip(ga, gb):
        np.testing.assert_array_equal(u, v)


def test_fftfreq_is_differentiable_in_the_spacing():
    d = yaad.tensor(0.25, requires_grad=True)
    f = F.fftfreq(8, d)
    np.testing.assert_array_equal(f.data, np.fft.fftfreq(8, 0.25))
    np.testing.assert_array_equal(F.rfftfreq(9, 0.3), np.fft.rfftfreq(9, 0.3))
    np.testing.assert_array_equal(F.fftfreq(9), np.fft.fftfreq(9))
    assert isinstance(F.fftfreq(5, 0.1), np.ndarray)
    yaad.sum(f * f).backward()
    # sum_k (k / (n d))^2 has derivative -2 sum_k k^2 / (n^2 d^3)
    k = np.fft.fftfreq(8, 1 / 8)
    np.testing.assert_allclose(d.grad, -2 * np.sum(k ** 2) / (64 * 0.25 ** 3))


def test_parseval_gradient_with_ortho_norm():
    # ||fft(x, norm="ortho")||^2 = ||x||^2: the gradient is 2x, real and complex.
    for x in (_real(3, 5), _cplx(3, 5)):
        t = yaad.tensor(x, requires_grad=True)
        y = F.fftn(t, norm="ortho")
        yaad.sum(yaad.real(y * yaad.conj(y))).backward()
        np.testing.assert_allclose(t.grad, 2 * x, rtol=1e-12, atol=1e-13)


def test_bad_arguments_raise_like_numpy_naming_the_function():
    x = yaad.tensor(_real(4), requires_grad=True)
    with pytest.raises(ValueError, match="norm"):
        F.fft(x, norm="unitary")
    with pytest.raises(ValueError, match="fft.fft.*Invalid number of FFT data points"):
        F.fft(x, 0)
    with pytest.raises(TypeError, match="fft.rfft.*out="):
        F.rfft(x, out=np.empty(3, complex))
    with pytest.raises(ValueError, match="Shape and axes"):
        F.fftn(x, s=(2, 2), axes=(0,))
    with pytest.raises(TypeError, match="fft.rfft"):
        F.rfft(yaad.tensor(_cplx(4), requires_grad=True))


def test_hessian_through_a_spectral_filter():
    # f(x) = sum(irfft(rfft(x) * h)^3): the Hessian from yaad.func against JAX's.
    h = np.array([1.0, 0.5, 0.25, 0.0])

    def f(x):
        return yaad.sum(F.irfft(F.rfft(x) * h, 6) ** 3)

    def jf(x):
        return jnp.sum(jnp.fft.irfft(jnp.fft.rfft(x) * h, 6) ** 3)

    x = _real(6)
    np.testing.assert_allclose(yaad.func.hessian(f)(x), np.asarray(jax.hessian(jf)(x)),
                               rtol=1e-10, atol=1e-12)
