"""yaad.fft: ``numpy.fft``, differentiable (reverse and forward mode, any order).

Same names, signatures and results as NumPy (bit for bit: the n-dimensional transforms
are the same sequence of one-dimensional ones), batched over the axes not transformed,
float32 kept float32 (complex64). ``numpy.fft.f(t)`` on a tensor calls ``yaad.fft.f``.

Four ops carry the rules: ``fft``, ``ifft`` (complex to complex), ``rfft`` (real to
half-spectrum) and ``irfft`` (half-spectrum to real). Every other function is composed of
them. Each transform is linear, so its JVP is the transform of the tangent, and its VJP is
the adjoint transform:

- ``fft`` and ``ifft``: the other one with the "dual" normalisation (``backward`` <->
  ``forward``, ``ortho`` itself), then the adjoint of ``n=``'s resizing of the input
  (cropping where the input was zero-padded, zero-padding where it was cropped).
- ``rfft``: keeps the first ``n//2 + 1`` rows of the DFT, so its adjoint zero-pads the
  cotangent to ``n``, applies the adjoint DFT and keeps the real part (the input is real).
- ``irfft``: each interior frequency ``k`` stands for itself and its mirror ``n - k``, so
  the adjoint is ``rfft`` of the cotangent weighted by 2 there and by 1 at frequency 0
  and, for even ``n``, at the Nyquist frequency ``n/2`` (whose imaginary parts, like that
  of frequency 0, ``irfft`` ignores: their gradient is real).
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Sequence, TypeVar

import numpy as np

from .core.op import op
from .core.tensor import Tensor
from .ops.elementwise import conj, real, reciprocal
from .ops.shape import _no_out, getitem, pad, roll

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
    "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


_Norm = Literal["backward", "ortho", "forward"] | None

# The normalisation of the adjoint transform: backward (1 on the way forward, 1/n back)
# and forward (1/n forward, 1 back) swap; ortho is unitary.
_DUAL = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _dual(norm: str | None) -> str:
    try:
        return _DUAL[norm]
    except (KeyError, TypeError):
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or '
                         f'"forward".') from None


def _fit(x: Any, axis: int, m: int) -> Any:
    """``x`` cropped, or zero-padded at the end, to length ``m`` along ``axis``: the adjoint
    of the resizing to ``n`` that a transform applies to its input."""
    k = x.shape[axis]
    if k == m:
        return x
    ax = axis % len(x.shape)
    if k > m:
        return getitem(x, (slice(None),) * ax + (slice(0, m),))
    widths = [(0, 0)] * len(x.shape)
    widths[ax] = (0, m - k)
    return pad(x, widths)


_F = TypeVar("_F", bound=Callable[..., Any])


def _params(text: str) -> Callable[[_F], _F]:
    """Append the shared parameter section ``text`` to the decorated function's docstring."""
    def decorate(f: _F) -> _F:
        f.__doc__ = (f.__doc__ or "") + text
        return f

    return decorate


def _length(a: Any, n: int | None, axis: int) -> int:
    return a.shape[axis] if n is None else n


# ---- the four ops ------------------------------------------------------------------------


def _fft(a: np.ndarray, n: int | None = None, axis: int = -1, norm: _Norm = None,
         out: None = None) -> np.ndarray:
    _no_out("fft.fft", out)
    return np.fft.fft(a, n, axis, norm)


def _ifft(a: np.ndarray, n: int | None = None, axis: int = -1, norm: _Norm = None,
          out: None = None) -> np.ndarray:
    _no_out("fft.ifft", out)
    return np.fft.ifft(a, n, axis, norm)


def _rfft(a: np.ndarray, n: int | None = None, axis: int = -1, norm: _Norm = None,
          out: None = None) -> np.ndarray:
    _no_out("fft.rfft", out)
    return np.fft.rfft(a, n, axis, norm)


def _irfft(a: np.ndarray, n: int | None = None, axis: int = -1, norm: _Norm = None,
           out: None = None) -> np.ndarray:
    _no_out("fft.irfft", out)
    return np.fft.irfft(a, n, axis, norm)


def _fft_vjp(g: Any, ans: Any, a: Any, n: int | None = None, axis: int = -1,
             norm: str | None = None, out: None = None) -> Any:
    return _fit(ifft(g, None, axis, _dual(norm)), axis, a.shape[axis])


def _ifft_vjp(g: Any, ans: Any, a: Any, n: int | None = None, axis: int = -1,
              norm: str | None = None, out: None = None) -> Any:
    return _fit(fft(g, None, axis, _dual(norm)), axis, a.shape[axis])


def _rfft_vjp(g: Any, ans: Any, a: Any, n: int | None = None, axis: int = -1,
              norm: str | None = None, out: None = None) -> Any:
    m = a.shape[axis]
    return _fit(real(ifft(g, _length(a, n, axis), axis, _dual(norm))), axis, m)


def _irfft_vjp(g: Any, ans: Any, a: Any, n: int | None = None, axis: int = -1,
               norm: str | None = None, out: None = None) -> Any:
    m = a.shape[axis]
    n = 2 * (m - 1) if n is None else n
    h = n // 2 + 1
    w = np.ones(h, dtype=np.result_type(g.dtype, np.float32))
    w[1:(n + 1) // 2] = 2  # the frequencies that stand for themselves and their mirrors
    ax = axis % len(a.shape)
    w = w.reshape((h,) + (1,) * (len(a.shape) - 1 - ax))
    return _fit(rfft(g, n, axis, _dual(norm)) * w, axis, m)


def _transform(forward: Callable[..., np.ndarray], name: str, vjp: Callable[..., Any],
               doc: str) -> Callable[..., Tensor]:
    f = op(forward, name=name, save_args=False, save_ans=False, linear=True, vjp=vjp,
           batch="scan")
    f.__name__ = f.__qualname__ = name.removeprefix("fft.")
    f.__doc__ = doc
    return f


_PARAMS = """
Parameters
----------
a : array_like or Tensor
n : int, optional
    Length of the transform along ``axis``: the input is cropped or zero-padded to it.
axis : int, optional
    The axis transformed (default: the last one); the others are a batch.
norm : {"backward", "ortho", "forward"} or None, optional
    Which direction is scaled by 1/n: None (the default) or "backward", the inverse;
    "forward", this one; "ortho", both by 1/sqrt(n).
out : None
    Not supported (results are new tensors).
"""

fft = _transform(_fft, "fft.fft", _fft_vjp,
                 "One-dimensional discrete Fourier transform (numpy.fft.fft).\n" + _PARAMS)
ifft = _transform(_ifft, "fft.ifft", _ifft_vjp,
                  "One-dimensional inverse discrete Fourier transform (numpy.fft.ifft).\n"
                  + _PARAMS)
rfft = _transform(_rfft, "fft.rfft", _rfft_vjp,
                  "One-dimensional DFT of a real input: the n//2 + 1 non-negative "
                  "frequencies (numpy.fft.rfft).\n" + _PARAMS)
irfft = _transform(_irfft, "fft.irfft", _irfft_vjp,
                   "Inverse of rfft: a real signal of length n (default 2 * (m - 1)) from "
                   "its half-spectrum (numpy.fft.irfft).\n" + _PARAMS)


# ---- composed: Hermitian, n-dimensional, frequencies and shifts ------------------------


@_params(_PARAMS)
def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None,
         out: None = None) -> Any:
    """DFT of a signal with Hermitian symmetry, given by its first half (numpy.fft.hfft):
    a real spectrum of length n (default 2 * (m - 1)).
    """
    _no_out("fft.hfft", out)
    return irfft(conj(a), n, axis, _dual(norm))


@_params(_PARAMS)
def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None,
          out: None = None) -> Any:
    """Inverse of hfft: the first n//2 + 1 entries of the inverse DFT of a real signal
    (numpy.fft.ihfft).
    """
    _no_out("fft.ihfft", out)
    return conj(rfft(a, n, axis, _dual(norm)))


def _shape_and_axes(a: Any, s: Sequence[int] | None, axes: Sequence[int] | None,
                    inverse_real: bool = False) -> tuple[list[int], list[int]]:
    """NumPy's ``s`` and ``axes`` conventions of the n-dimensional transforms."""
    shape = np.shape(a)
    given = s is not None
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(len(shape)))
    axes = list(axes)
    s = [shape[ax] for ax in axes] if s is None else list(s)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if inverse_real and not given:
        s[-1] = 2 * (shape[axes[-1]] - 1)
    s = [shape[ax] if k is None or k == -1 else k for k, ax in zip(s, axes)]
    return s, axes


_ND_PARAMS = """
Parameters
----------
a : array_like or Tensor
s : sequence of ints, optional
    Lengths of the transforms along ``axes`` (the input is cropped or zero-padded).
axes : sequence of ints, optional
    The axes transformed (default: all, or the last ``len(s)``); the others are a batch.
norm : {"backward", "ortho", "forward"}, optional
out : None
    Not supported (results are new tensors).
"""


def _n_dimensional(one_d: Any, name: str, summary: str) -> Any:
    """The n-dimensional form of a complex transform: the one-dimensional one along each
    axis, last first, as NumPy does."""
    def f(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None, out: None = None) -> Any:
        _no_out(f"fft.{name}", out)
        s, axes = _shape_and_axes(a, s, axes)
        for k in reversed(range(len(axes))):
            a = one_d(a, s[k], axes[k], norm)
        return a

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{summary} (numpy.fft.{name}).\n{_ND_PARAMS}"
    return f


fftn = _n_dimensional(fft, "fftn", "N-dimensional discrete Fourier transform")
ifftn = _n_dimensional(ifft, "ifftn", "N-dimensional inverse discrete Fourier transform")


@_params(_ND_PARAMS)
def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None, out: None = None) -> Any:
    """N-dimensional DFT of a real input: rfft along the last axis, fft along the others
    (numpy.fft.rfftn).
    """
    _no_out("fft.rfftn", out)
    s, axes = _shape_and_axes(a, s, axes)
    a = rfft(a, s[-1], axes[-1], norm)
    for k in range(len(axes) - 2, -1, -1):
        a = fft(a, s[k], axes[k], norm)
    return a


@_params(_ND_PARAMS)
def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None, out: None = None) -> Any:
    """Inverse of rfftn: ifft along all but the last axis, irfft along it
    (numpy.fft.irfftn).
    """
    _no_out("fft.irfftn", out)
    s, axes = _shape_and_axes(a, s, axes, inverse_real=True)
    for k in range(len(axes) - 1):
        a = ifft(a, s[k], axes[k], norm)
    return irfft(a, s[-1], axes[-1], norm)


def _two_dimensional(nd: Any, name: str, summary: str) -> Any:
    """The two-dimensional form of an n-dimensional transform: its ``axes`` default to
    the last two."""
    def f(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None, out: None = None) -> Any:
        _no_out(f"fft.{name}", out)
        return nd(a, s, axes, norm)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{summary} (numpy.fft.{name}): {nd.__name__} over ``axes``.\n{_ND_PARAMS}"
    return f


fft2 = _two_dimensional(fftn, "fft2", "Two-dimensional discrete Fourier transform")
ifft2 = _two_dimensional(ifftn, "ifft2", "Two-dimensional inverse discrete Fourier transform")
rfft2 = _two_dimensional(rfftn, "rfft2", "Two-dimensional DFT of a real input")
irfft2 = _two_dimensional(irfftn, "irfft2", "Inverse of rfft2")


def fftfreq(n: int, d: Any = 1.0, device: Any = None) -> Any:
    """Sample frequencies of fft for a window of length ``n`` and sample spacing ``d``
    (numpy.fft.fftfreq); differentiable in ``d`` when it is a tensor.

    Parameters
    ----------
    n : int
    d : float or Tensor, optional
    device : None or "cpu", optional

    Returns
    -------
    ndarray, or a Tensor when ``d`` is one
    """
    half = (n - 1) // 2 + 1
    k = np.concatenate([np.arange(0, half, dtype=int, device=device),
                        np.arange(-(n // 2), 0, dtype=int, device=device)])
    return k * reciprocal(n * d)


def rfftfreq(n: int, d: Any = 1.0, device: Any = None) -> Any:
    """Sample frequencies of rfft (numpy.fft.rfftfreq); differentiable in ``d``.

    Parameters
    ----------
    n : int
    d : float or Tensor, optional
    device : None or "cpu", optional

    Returns
    -------
    ndarray, or a Tensor when ``d`` is one
    """
    return np.arange(0, n // 2 + 1, dtype=int, device=device) * reciprocal(n * d)


def _shifts(x: Any, axes: Any, sign: int) -> tuple[Any, Any]:
    shape = np.shape(x)
    if axes is None:
        axes = tuple(range(len(shape)))
    if isinstance(axes, (int, np.integer)):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[ax] // 2) for ax in axes], axes


def fftshift(x: Any, axes: Any = None) -> Any:
    """Move the zero frequency to the centre (numpy.fft.fftshift): a roll of half of each
    axis (default: all).

    Parameters
    ----------
    x : array_like or Tensor
    axes : int or sequence of ints, optional

    Returns
    -------
    Tensor or ndarray
    """
    return roll(x, *_shifts(x, axes, 1))


def ifftshift(x: Any, axes: Any = None) -> Any:
    """Inverse of fftshift (numpy.fft.ifftshift).

    Parameters
    ----------
    x : array_like or Tensor
    axes : int or sequence of ints, optional

    Returns
    -------
    Tensor or ndarray
    """
    return roll(x, *_shifts(x, axes, -1))
