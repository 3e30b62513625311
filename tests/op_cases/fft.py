"""Rows of ``yaad.fft`` (numpy.fft)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.op_cases.fixed import cases, cplx, real
from tests.op_cases.table import case
from tests.support.strategies import (
    REAL,
    Call,
    axes,
    axis,
    shapes,
    values,
)

# ---- numpy.fft ---------------------------------------------------------------------------

NORMS = (None, "backward", "ortho", "forward")


def _draw_fft_1d(data, dtype):
    s = data.draw(shapes(min_dims=1, min_side=1, max_side=4))
    kw = {"axis": data.draw(axis(len(s), allow_none=False)),
          "norm": data.draw(st.sampled_from(NORMS))}
    n = data.draw(st.one_of(st.none(), st.integers(1, 6)))
    if n is not None:
        kw["n"] = n
    return Call((data.draw(values(dtype, s)),), kw)


def _draw_fft_nd(two=False):
    def draw(data, dtype):
        shape = data.draw(shapes(min_dims=2 if two else 1, min_side=1, max_side=3))
        nd = len(shape)
        kw = {"norm": data.draw(st.sampled_from(NORMS))}
        k = 2 if two else data.draw(st.integers(1, nd))
        ax = data.draw(st.permutations(range(nd)))[:k]
        if two or data.draw(st.booleans()):
            kw["axes"] = tuple(a - nd * data.draw(st.integers(0, 1)) for a in ax)
        elif k != nd:
            kw["axes"] = tuple(ax)
        if data.draw(st.booleans()):
            kw["s"] = tuple(data.draw(st.integers(1, 4)) for _ in range(k))
            kw.setdefault("axes", tuple(range(-k, 0)))
        return Call((data.draw(values(dtype, shape)),), kw)

    return draw


def _fft_ref(name):
    return lambda a, **kw: getattr(np.fft, name)(a, **kw)


# The second-order cases: n pads or crops, the Hermitian weighting of irfft.
_SECOND = {
    "fft": lambda fn: cases((lambda a: fn(a, 5, 0, "ortho"), (cplx(3, 2),)),
                            (lambda a: fn(a, 2), (real(2, 3),))),
    "ifft": lambda fn: cases((lambda a: fn(a, None, -1, "forward"), (cplx(2, 3),))),
    "rfft": lambda fn: cases((lambda a: fn(a, 6), (real(2, 5),)),
                             (lambda a: fn(a, 3, 0, "ortho"), (real(4, 2),))),
}
for _name in ("fft", "ifft", "hfft"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_1d, second=_SECOND.get(_name))
case("fft.irfft", _fft_ref("irfft"), _draw_fft_1d,
     note="complex and real input: the imaginary parts of frequency 0 and n/2 are ignored",
     second=lambda fn: cases(
         (lambda a: fn(a), (cplx(2, 4),)),
         (lambda a: fn(a, 5, 0, "ortho"), (cplx(2, 2),)),
         (lambda a: fn(a, 3), (real(2, 4),))))
for _name in ("rfft", "ihfft"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_1d, dtypes=REAL, second=_SECOND.get(_name))
for _name in ("fftn", "ifftn", "irfftn"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_nd())
case("fft.rfftn", _fft_ref("rfftn"), _draw_fft_nd(), dtypes=REAL)
for _name in ("fft2", "ifft2", "irfft2"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fft_nd(two=True))
case("fft.rfft2", _fft_ref("rfft2"), _draw_fft_nd(two=True), dtypes=REAL)


def _draw_fftshift(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    ax = data.draw(st.one_of(st.none(), axis(len(shape), allow_none=False), axes(len(shape)
                                                                                  ).filter(
        lambda a: isinstance(a, tuple))))
    return Call((data.draw(values(dtype, shape)),), {"axes": ax})


for _name in ("fftshift", "ifftshift"):
    case(f"fft.{_name}", _fft_ref(_name), _draw_fftshift)
