"""The numba kernel of ``Adam(..., fused=True)``: one loop over a parameter's elements.

Imported only when a fused optimizer first steps (importing numba takes a while); the
kernel is compiled once per dtype and cached on disk. It performs, element by element,
the same operations in the same order and in the parameter's dtype as the NumPy update
of :class:`yaad.optim.Adam` (every scalar is rounded to that dtype first, as NumPy does
with a Python float and a float32 array), so the two give the same bits
(``tests/optim/test_optim_fused.py``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def adam(x, g, m, v, vmax, s):
    """Update ``x`` (and the moments ``m``, ``v``, ``vmax``) in place from ``g``; all 1-D
    of one dtype. ``s``: the scalars, in that dtype (one array: each argument costs the
    call time): the L2 penalty added to the gradient (0: none), the factor of decoupled
    weight decay (1: none), ``1 - beta1``, ``beta2``, ``1 - beta2``, the root of the
    second bias correction, ``eps``, the step size. ``vmax`` of size 0: no AMSGrad."""
    wd, decay, one_b1, b2, one_b2, root, eps, step = s[0], s[1], s[2], s[3], s[4], s[5], \
        s[6], s[7]
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
