"""Special functions with two outputs: ``sici`` (sine and cosine integrals) and
``fresnel`` (Fresnel integrals), as in ``scipy.special`` and ``jax.scipy.special``.

Each output is holomorphic, with a closed-form derivative: the VJP sums ``g_k *
conj(d_k)`` over the outputs that receive a gradient, and the JVP is ``(t d_0, t d_1)``.
"""

from __future__ import annotations

import math

import scipy.special as sp

from ..core.op import op
from .elementwise import cos, sin, sinc, where


def _pair(fn, name: str, derivatives: tuple, doc: str):
    def vjp(g, ans, x):
        total = 0
        for gk, d in zip(g, derivatives):
            if gk is not None:
                total = total + gk * d(x).conjugate()
        return total

    f = op(fn, name=name, nout=2, save_ans=False, vjp=vjp, batch="broadcast",
           jvp=lambda t, ans, x: tuple(t * d(x) for d in derivatives))
    f.__doc__ = doc
    return f


def _cos_over_x(x):
    return cos(x) / where(x == 0, 1, x) + where(x == 0, float("inf"), 0)


sici = _pair(sp.sici, "sici", (lambda x: sinc(x / math.pi), _cos_over_x),
             """Sine and cosine integrals ``(Si(x), Ci(x))`` (scipy.special.sici),
differentiable: ``Si' = sin(x)/x``, ``Ci' = cos(x)/x``.

Parameters
----------
x : array_like or Tensor, real or complex

Returns
-------
si, ci : Tensor or ndarray
""")

fresnel = _pair(sp.fresnel, "fresnel", (lambda x: sin(0.5 * math.pi * x * x),
                                        lambda x: cos(0.5 * math.pi * x * x)),
                """Fresnel integrals ``(S(x), C(x))`` (scipy.special.fresnel),
differentiable: ``S' = sin(pi x^2 / 2)``, ``C' = cos(pi x^2 / 2)``.

Parameters
----------
x : array_like or Tensor, real or complex

Returns
-------
s, c : Tensor or ndarray
""")

__all__ = ["sici", "fresnel"]
