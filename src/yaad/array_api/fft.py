"""The array API's FFT extension: yaad.fft's functions (the same ops; ``norm=None`` is
NumPy's spelling of the standard's default ``"backward"``), and ``fftfreq``/``rfftfreq``
with the standard's ``dtype=``."""

from __future__ import annotations

from typing import Any

from ..creation import asarray
from ..fft import (
    fft,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfftn,
    rfft,
    rfftn,
)
from ..fft import fftfreq as _fftfreq
from ..fft import rfftfreq as _rfftfreq
from ._info import check_device


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an FFT of length ``n`` (the array API's fftfreq).

    Returns
    -------
    Tensor
        float64 by default, else ``dtype`` (a real floating dtype).
    """
    check_device(device, "fftfreq")
    return asarray(_fftfreq(n, d), dtype=dtype)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an rfft of length ``n`` (the array API's rfftfreq).

    Returns
    -------
    Tensor
    """
    check_device(device, "rfftfreq")
    return asarray(_rfftfreq(n, d), dtype=dtype)


__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift",
           "ihfft", "irfft", "irfftn", "rfft", "rfftfreq", "rfftn"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
