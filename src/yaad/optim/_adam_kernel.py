"""The numba kernel of ``Adam(..., fused=True)``: one loop over a parameter's elements.

Imported only when a fused optimizer first steps (importing numba takes a while); the
kernel is compiled once per dtype and cached on disk. It performs, element by element,
the same operations in the same order and in the parameter's dtype as the NumPy update
of :class:`yaad.optim.Adam` (every scalar is rounded to that dtype first, as NumPy does
with a Python float and a float32 array), so the two give the same bits
(``tests/test_optim_fused.py``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def adam(x, g, m, v, vmax, wd, decay, one_b1, b2, one_b2, root, eps, step):
    """Update ``x`` (and the moments ``m``, ``v``, ``vmax``) in place from ``g``; all 1-D
    of one dtype, the scalars of that dtype. ``wd``: the L2 penalty added to the gradient
    (0: none); ``decay``: the factor of decoupled weight decay (1: none); ``vmax`` of
    size 0: no AMSGrad."""
    ams = vmax.size > 0
    for k in range(x.size):
        xk = x[k]
        if decay != 1:
            xk = xk * decay
        gk = g[k]
        if wd != 0:
            gk = gk + wd * xk
        mk = m[k] + one_b1 * (gk - m[k])
        vk = v[k] * b2 + one_b2 * gk * gk
        m[k] = mk
        v[k] = vk
        if ams:
            vm = vmax[k]
            if not (vm >= vk or vm != vm):
                vm = vk
            vmax[k] = vm
            vk = vm
        x[k] = xk - step * mk / (np.sqrt(vk) / root + eps)

