"""yaad.signal: ``scipy.signal``'s convolutions, differentiable.

``convolve`` and ``correlate`` (any number of dimensions, every mode and method) and
``fftconvolve`` (composed of ``yaad.fft``), real and complex, with gradients for both
inputs to any order.
"""

from __future__ import annotations

from .ops.convolution import fftconvolve
from .ops.convolution import signal_convolve as convolve
from .ops.convolution import signal_correlate as correlate

__all__ = ["convolve", "correlate", "fftconvolve"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


for _f, _name in ((convolve, "convolve"), (correlate, "correlate")):
    _f.__name__ = _f.__qualname__ = _name
