"""Every differentiable op in ``yaad.registry``: second derivatives and forward mode.

For each op the table ``CASES`` gives inputs (real, and complex where the op is defined
there). Each case is checked three ways against central finite differences:

- reverse over reverse: the gradient computed with ``create_graph=True`` is differentiated
  again (``gradgradcheck``);
- forward over reverse: Jacobian-vector products of that gradient (the ``hvp`` path);
- forward mode: the op's own JVP rule (``gradcheck(..., check_forward_ad=True)``).

The op names come from a fresh interpreter (``import yaad`` and read the registry), so an
op added anywhere in the library shows up here, and one without a case fails
``test_every_op_has_a_case``: add its inputs to ``CASES``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import yaad
from yaad.op import registry
from yaad.testing import gradcheck, gradgradcheck


def _builtin_differentiable_ops() -> list[str]:
    # A fresh process: ops that tests declare for themselves are not the library's.
    code = ("import json, yaad; from yaad.op import registry; print(json.dumps(sorted("
            "n for n, s in registry.items() if any(v is not None for v in s.vjps))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


BUILTIN = _builtin_differentiable_ops()

rng = np.random.default_rng(20240611)


def real(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


def away(*shape, lo=0.2, hi=1.0):
    """Real values with |x| in [lo, hi] and random signs (away from a kink at 0)."""
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def cplx(*shape, center=0j, scale=0.4):
    return center + scale * (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape))


def herm(a):
    """A Hermitian (symmetric) matrix made from ``a``, inside f: perturbations stay so."""
    return (a + yaad.conj(yaad.swapaxes(a, -1, -2))) / 2


def well(n, c=False):
    """A well-conditioned n x n matrix."""
    a = np.eye(n) * 2 + 0.3 * real(n, n)
    return a + 0.3j * real(n, n) if c else a


def abs2(v):
    return v * yaad.conj(v)


# ---- case builders: each takes the op's function and returns [(f, inputs, options)] ---


def unary(lo=-1.0, hi=1.0, z=None, sample=None, **opts):
    """An elementwise op of one input: reals in [lo, hi] (or ``sample()``), and complex
    numbers around ``z`` when given."""
    def make(fn):
        x = sample() if sample is not None else real(2, 3, lo=lo, hi=hi)
        cases = [(fn, (x,), opts)]
        if z is not None:
            cases.append((fn, (cplx(2, 3, center=z),), opts))
        return cases

    return make


def binary(lo=-1.0, hi=1.0, lo2=None, hi2=None, z=None, z2=None, **opts):
    """An elementwise op of two inputs, broadcast (2, 3) with (3,)."""
    lo2 = lo if lo2 is None else lo2
    hi2 = hi if hi2 is None else hi2

    def make(fn):
        cases = [(fn, (real(2, 3, lo=lo, hi=hi), real(3, lo=lo2, hi=hi2)), opts)]
        if z is not None:
            cases.append((fn, (cplx(2, 3, center=z), cplx(3, center=z if z2 is None else z2)),
                          opts))
        return cases

    return make


def with_order(order, lo, hi):
    """An op ``fn(order, x)`` (Bessel functions, polygamma) with the order held fixed."""
    return lambda fn: [(lambda x: fn(order, x), (real(2, 3, lo=lo, hi=hi),), {})]


def separated():
    """Two inputs 0.3 apart everywhere (maximum, minimum: no ties)."""
    def make(fn):
        x = real(2, 3)
        return [(fn, (x, x + rng.choice([-0.3, 0.3], (2, 3))), {})]

    return make


def cases(*entries):
    """Explicit cases: (f_of_fn, inputs) or (f_of_fn, inputs, options)."""
    def make(fn):
        return [(e[0](fn), e[1], e[2] if len(e) > 2 else {}) for e in entries]

    return make


def same(*inputs_list, **opts):
    """The op called directly on each tuple of inputs."""
    return lambda fn: [(fn, inputs, opts) for inputs in inputs_list]


def resolvent_case(hermitian):
    """The resolvent (shifts - M)^{-1} g with its spectral basis taken from M's current value
    (as the rules of eigh and svd pass it), so that finite differences see a consistent op."""
    def make(fn):
        def f(m, shifts, g):
            if hermitian:
                m = herm(m)
                w, v = np.linalg.eigh(m.data if isinstance(m, yaad.Tensor) else m)
                basis = (v, w)
            else:
                u, s, vh = np.linalg.svd(m.data if isinstance(m, yaad.Tensor) else m,
                                         full_matrices=False)
                basis = (u, s, np.conj(vh.T))
            return fn(m, shifts, g, *basis, n=max(m.shape), name="test")
        return f
    return make


SPARSE_PATTERN = yaad.sparse.tensor.Pattern(np.array([0, 2, 3, 5]), np.array([0, 2, 1, 0, 2]),
                                             (3, 3))
SPARSE_FIXED = SPARSE_PATTERN.matrix(np.arange(1.0, 6.0))
IDX = np.array([0, 2, 0])
COND = np.array([[True, False, True], [False, True, False]])
Z = 0.5 + 0.5j

CASES = {
    # elementwise, one input
    "sin": unary(z=Z), "cos": unary(z=Z), "tan": unary(z=0.3 + 0.3j),
    "sinh": unary(z=Z), "cosh": unary(z=Z), "tanh": unary(z=0.3 + 0.3j),
    "arcsin": unary(-0.6, 0.6, z=0.2 + 0.2j), "arccos": unary(-0.6, 0.6, z=0.2 + 0.2j),
    "arctan": unary(z=0.3 + 0.3j), "arcsinh": unary(z=Z), "arccosh": unary(1.2, 2, z=1.5 + 0.5j),
    "arctanh": unary(-0.5, 0.5, z=0.2 + 0.2j),
    "exp": unary(z=Z), "exp2": unary(z=Z), "expm1": unary(z=Z),
    "log": unary(0.3, 2, z=1 + 0.5j), "log2": unary(0.3, 2, z=1 + 0.5j),
    "log10": unary(0.3, 2, z=1 + 0.5j), "log1p": unary(-0.5, 1, z=0.5 + 0.5j),
    "sqrt": unary(0.3, 2, z=1 + 0.5j), "cbrt": unary(0.3, 2), "square": unary(z=Z),
    "reciprocal": unary(sample=lambda: away(2, 3, lo=0.5, hi=1.5), z=1 + 0.5j),
    "negative": unary(z=Z), "positive": unary(z=Z),
    "deg2rad": unary(), "rad2deg": unary(), "radians": unary(), "degrees": unary(),
    "sinc": unary(z=Z), "erf": unary(z=0.3 + 0.3j), "erfc": unary(z=0.3 + 0.3j),
    "erfinv": unary(-0.5, 0.5), "erfcinv": unary(0.5, 1.5), "erfcx": unary(z=0.3 + 0.3j),
    "gamma": unary(0.5, 2.5), "gammaln": unary(0.5, 2.5), "digamma": unary(0.5, 2.5),
    "expit": unary(-2, 2), "logit": unary(0.2, 0.8),
    "j0": unary(0.5, 2), "j1": unary(0.5, 2), "y0": unary(0.5, 2), "y1": unary(0.5, 2),
    "i0": unary(), "i1": unary(), "i0e": unary(sample=lambda: away(2, 3)),
    "i1e": unary(sample=lambda: away(2, 3)),
    "relu": unary(sample=lambda: away(2, 3)), "softplus": unary(-2, 2),
    "absolute": unary(sample=lambda: away(2, 3), z=Z), "sign": unary(sample=lambda: away(2, 3),
                                                                       z=Z),
    "angle": unary(sample=lambda: away(2, 3), z=Z),
    "real": unary(z=Z), "imag": unary(z=Z), "conjugate": unary(z=Z),
    "floor": unary(0.1, 0.9), "ceil": unary(0.1, 0.9), "trunc": unary(0.1, 0.9),
    "rint": unary(0.1, 0.4), "fix": unary(0.1, 0.9),
    "round": cases((lambda fn: lambda x: fn(x, 1), (real(2, 3, lo=0.11, hi=0.14),))),
    # elementwise, two or more inputs
    "add": binary(z=Z), "subtract": binary(z=Z), "multiply": binary(z=Z),
    "divide": binary(lo2=0.5, hi2=1.5, z=Z, z2=1 + 0.5j),
    "power": lambda fn: binary(0.5, 2, -1, 1, z=1 + 0.5j, z2=0.5 + 0.2j)(fn) + [
        (lambda x: fn(x, 3), (real(2, 3),), {})],
    "float_power": binary(0.5, 2, -1, 1, z=1 + 0.5j, z2=0.5 + 0.2j),
    "arctan2": binary(0.3, 1, -1, 1), "hypot": binary(0.3, 1),
    "logaddexp": binary(), "logaddexp2": binary(),
    "mod": binary(0.1, 0.9, 1.2, 1.8), "fmod": binary(0.1, 0.9, 1.2, 1.8),
    "floor_divide": binary(0.1, 0.9, 1.2, 1.8),
    "maximum": separated(), "minimum": separated(), "fmax": separated(), "fmin": separated(),
    "xlogy": binary(0.5, 2), "xlog1py": binary(0.5, 2),
    "beta": binary(0.5, 2), "betaln": binary(0.5, 2),
    "jv": with_order(1.5, 0.5, 2), "yv": with_order(1.5, 0.5, 2),
    "iv": with_order(1.5, 0.5, 2), "ive": with_order(1.5, 0.5, 2),
    "polygamma": with_order(1, 0.5, 2),
    "yn": with_order(1, 0.5, 2), "expn": with_order(1, 0.5, 2),
    "zeta": with_order(2.5, 0.5, 2),
    "ndtr": unary(z=0.3 + 0.3j), "log_ndtr": unary(-3, 3, z=0.3 + 0.3j),
    "ndtri": unary(0.1, 0.9), "log_expit": unary(-2, 2),
    "rgamma": unary(0.5, 2.5), "loggamma": unary(0.5, 2.5), "gammasgn": unary(0.2, 0.8),
    "multigammaln": cases((lambda fn: lambda a: fn(a, 3), (real(2, 3, lo=1.5, hi=3),))),
    "factorial": unary(0.5, 2.5), "entr": unary(0.3, 2), "exp1": unary(0.3, 2, z=1 + 0.5j),
    "expi": unary(0.3, 2, z=1 + 0.5j), "spence": unary(0.3, 2, z=1 + 0.5j),
    "dawsn": unary(z=Z), "wofz": unary(z=Z),
    "sici": unary(0.3, 2, z=1 + 0.5j), "fresnel": unary(z=Z),
    "poch": binary(0.5, 2), "rel_entr": binary(0.5, 2), "kl_div": binary(0.5, 2),
    "owens_t": binary(), "boxcox": binary(0.5, 2, -1, 1), "boxcox1p": binary(0.5, 2, -1, 1),
    "gammainc": binary(0.5, 2), "gammaincc": binary(0.5, 2),
    "stdtr": binary(0.5, 3, 0.2, 2),
    "betainc": cases((lambda fn: fn, (real(2, 3, lo=0.5, hi=2), real(3, lo=0.5, hi=2),
                                      real(2, 3, lo=0.1, hi=0.9)))),
    "hyp1f1": cases((lambda fn: lambda x: fn(0.7, 1.3, x), (real(2, 3),)),
                    (lambda fn: lambda x: fn(0.7, 1.3, x), (cplx(2, 3, center=Z),))),
    "hyp2f1": cases((lambda fn: lambda z: fn(0.7, 1.3, 2.1, z), (real(2, 3, lo=-0.6, hi=0.6),)),
                    (lambda fn: lambda z: fn(0.7, 1.3, 2.1, z), (cplx(2, 3),))),
    # second order in the parameters would be third order of gammainc / betainc: x only
    "gammainc_da": cases((lambda fn: lambda x: fn(1, np.array([0.7, 1.5, 2.5]), x),
                          (real(2, 3, lo=0.5, hi=2),))),
    "betainc_dab": cases((lambda fn: lambda x: fn(1, 0, 1.5, np.array([0.7, 1.5, 2.5]), x),
                          (real(2, 3, lo=0.1, hi=0.9),))),
    "where": cases((lambda fn: lambda x, y: fn(COND, x, y), (real(2, 3), real(2, 3))),
                   (lambda fn: lambda x, y: fn(COND, x, y), (cplx(2, 3), cplx(3)))),
    "clip": same((real(2, 3), -0.4 + 0.02 * real(2, 3), 0.4 + 0.02 * real(3))),
    # shape and indexing
    "alias": same((real(2, 3),), (cplx(2, 3),)),
    "copy": same((real(2, 3),), (cplx(2, 3),)),
    "reshape": cases((lambda fn: lambda a: fn(a, (3, 2)), (real(2, 3),)),
                     (lambda fn: lambda a: fn(a, (-1,)), (cplx(2, 3),))),
    "transpose": cases((lambda fn: lambda a: fn(a, (1, 0, 2)), (real(2, 3, 2),)),
                       (lambda fn: lambda a: fn(a), (cplx(2, 3),))),
    "swapaxes": cases((lambda fn: lambda a: fn(a, 0, 1), (real(2, 3, 2),))),
    "moveaxis": cases((lambda fn: lambda a: fn(a, 0, -1), (cplx(2, 3, 2),))),
    "expand_dims": cases((lambda fn: lambda a: fn(a, 1), (real(2, 3),))),
    "squeeze": cases((lambda fn: lambda a: fn(a, 1), (real(2, 1, 3),))),
    "broadcast_to": cases((lambda fn: lambda a: fn(a, (2, 3)), (real(3),)),
                          (lambda fn: lambda a: fn(a, (2, 3)), (cplx(1, 3),))),
    "astype": cases((lambda fn: lambda a: fn(a, np.complex128), (real(2, 3),)),
                    (lambda fn: lambda a: fn(a, np.complex128), (cplx(2, 3),))),
    "getitem": cases((lambda fn: lambda a: fn(a, (slice(None), IDX)), (real(2, 3),)),
                     (lambda fn: lambda a: fn(a, (0, slice(1, None))), (cplx(2, 3),))),
    "scatter_add": cases((lambda fn: lambda v: fn(v, (slice(None), IDX), (2, 4)),
                          (real(2, 3),))),
    "index_put": cases((lambda fn: lambda a, v: fn(a, v, (slice(None), np.array([1, 3]))),
                        (real(2, 4), cplx(2, 2)))),
    "index_put_": cases((lambda fn: lambda a, v: fn(yaad.copy(a), v, (0, slice(1, 3))),
                         (real(2, 4), real(2)))),
    "concatenate": cases((lambda fn: lambda a, b: fn(a, b, axis=1), (real(2, 3), cplx(2, 2)))),
    "stack": cases((lambda fn: lambda a, b: fn(a, b, axis=1), (real(2, 3), real(2, 3)))),
    "flip": cases((lambda fn: lambda a: fn(a, 1), (cplx(2, 3),))),
    "roll": cases((lambda fn: lambda a: fn(a, 1, 1), (real(2, 3),))),
    "tile": cases((lambda fn: lambda a: fn(a, (2, 1)), (real(2, 3),))),
    "repeat": cases((lambda fn: lambda a: fn(a, 2, 1), (real(2, 3),))),
    "repeat_sum": cases((lambda fn: lambda g: fn(g, 2, 1, 3), (real(2, 6),))),
    "pad": cases((lambda fn: lambda a: fn(a, ((1, 0), (0, 2))), (cplx(2, 3),))),
    "diagonal": cases((lambda fn: lambda a: fn(a, 0, 1, 2), (real(2, 3, 3),))),
    "diag_embed": cases((lambda fn: lambda d: fn(d, (3, 3)), (real(3),))),
    "tril": cases((lambda fn: lambda m: fn(m), (real(3, 3),))),
    "triu": cases((lambda fn: lambda m: fn(m, 1), (cplx(3, 3),))),
    # reductions
    "sum": cases((lambda fn: lambda a: fn(a, axis=1), (real(2, 3),)),
                 (lambda fn: lambda a: fn(a), (cplx(2, 3),))),
    "mean": cases((lambda fn: lambda a: fn(a, axis=0, keepdims=True), (cplx(2, 3),))),
    "prod": cases((lambda fn: lambda a: fn(a, axis=1), (away(2, 3, lo=0.5, hi=1.5),)),
                  (lambda fn: lambda a: fn(a), (cplx(2, 2, center=1),))),
    "max": cases((lambda fn: lambda a: fn(a, axis=1), (real(2, 3),))),
    "min": cases((lambda fn: lambda a: fn(a), (real(2, 3),))),
    "cumsum": cases((lambda fn: lambda a: fn(a, 1), (cplx(2, 3),))),
    "cumprod": cases((lambda fn: lambda a: fn(a, 1), (away(2, 3, lo=0.5, hi=1.5),)),
                     (lambda fn: lambda a: fn(a, 0), (cplx(3, center=1),))),
    "std": cases((lambda fn: lambda a: fn(a, axis=1), (real(2, 3),)),
                 (lambda fn: lambda a: fn(a), (cplx(2, 3),))),
    "var": cases((lambda fn: lambda a: fn(a, axis=1, ddof=1), (real(2, 3),)),
                 (lambda fn: lambda a: fn(a), (cplx(2, 3),))),
    "logsumexp": cases((lambda fn: lambda a: fn(a, None, 1, False), (real(2, 3),)),
                       (lambda fn: lambda a, b: fn(a, b, None, False),
                        (real(2, 3), real(3, lo=0.5, hi=1.5))),
                       (lambda fn: lambda a: fn(a, None, 0, True), (cplx(2, 3),))),
    "softmax": cases((lambda fn: lambda x: fn(x, -1), (real(2, 3),))),
    "log_softmax": cases((lambda fn: lambda x: fn(x, -1), (real(2, 3),))),
    # products
    "matmul": same((real(2, 3), real(3, 2)), (cplx(2, 2, 3), cplx(3, 2)), (real(3), cplx(3, 2)),
                   (cplx(2, 3), real(3))),
    "einsum": cases((lambda fn: lambda a, b: fn("ij,jk->ik", a, b), (real(2, 3), cplx(3, 2))),
                    (lambda fn: lambda a: fn("ii->", a), (real(3, 3),)),
                    (lambda fn: lambda a, b: fn("bij,bji->", a, b), (real(2, 2, 3),
                                                                      real(2, 3, 2)))),
    "tensordot": cases((lambda fn: lambda a, b: fn(a, b, 1), (real(2, 3), cplx(3, 2)))),
    "trace": same((real(3, 3),), (cplx(2, 2),)),
    "vdot": same((real(3), real(3)), (cplx(3), cplx(3))),
    # yaad.sparse: a fixed pattern with values (rows 0: cols 0, 2; 1: col 1; 2: cols 0, 2)
    "sparse.pattern_matmul": cases(
        (lambda fn: lambda v, x: fn(v, x, SPARSE_PATTERN), (real(5), real(3))),
        (lambda fn: lambda v, x: fn(v, x, SPARSE_PATTERN), (cplx(5), cplx(3, 2)))),
    "sparse.pattern_matmul_transposed": cases(
        (lambda fn: lambda v, x: fn(v, x, SPARSE_PATTERN), (real(5), real(3, 2))),
        (lambda fn: lambda v, x: fn(v, x, SPARSE_PATTERN), (cplx(5), real(3)))),
    "sparse.operator_matmul": cases(
        (lambda fn: lambda x: fn(x, SPARSE_FIXED), (real(3),)),
        (lambda fn: lambda x: fn(x, SPARSE_FIXED * (1 + 2j)), (cplx(3, 2),))),
    # linear algebra
    "linalg.cholesky": cases(
        (lambda fn: lambda a: fn(herm(a) + 3 * np.eye(3)), (real(3, 3),)),
        (lambda fn: lambda a: fn(herm(a) + 3 * np.eye(2)), (cplx(2, 2),))),
    "linalg.det": same((well(3),), (well(2, True),)),
    "linalg.inv": same((well(3),), (well(2, True),)),
    "linalg.slogdet": same((well(3),), (well(2, True),)),
    "linalg.solve": same((well(3), real(3, 2)), (well(2, True), cplx(2)[:, None])),
    "linalg.solve_triangular": cases(
        (lambda fn: lambda a, b: fn(a, b, lower=True), (np.tril(well(3)), real(3, 2)))),
    "linalg.lstsq": same((real(4, 3), real(4, 2))),
    "linalg.pinv": same((real(3, 2),), (cplx(2, 3),)),
    "linalg.qr": same((real(3, 3),), (cplx(3, 2),)),
    "linalg.eigh": cases(
        (lambda fn: lambda a: (lambda w, v: (w, abs2(v)))(*fn(herm(a))), (real(3, 3),)),
        (lambda fn: lambda a: (lambda w, v: (w, abs2(v)))(*fn(herm(a))), (cplx(3, 3),))),
    "linalg.eig": cases((lambda fn: lambda a: fn(a)[0], (real(3, 3),)),
                        (lambda fn: lambda a: fn(a)[0], (cplx(2, 2),))),
    "linalg.svd": cases(
        (lambda fn: lambda a: (lambda u, s, vh: (s, abs2(u), abs2(vh)))(*fn(a, False)),
         (real(3, 2),)),
        (lambda fn: lambda a: (lambda u, s, vh: (s, abs2(u), abs2(vh)))(*fn(a, False)),
         (cplx(2, 2),))),
    "linalg.expm": same((0.5 * real(3, 3),), (0.5 * cplx(2, 2),)),
    "linalg.logm": cases((lambda fn: lambda a: fn(np.eye(3) + 0.3 * a), (real(3, 3),))),
    "linalg.sqrtm": cases((lambda fn: lambda a: fn(2 * np.eye(3) + 0.3 * a), (real(3, 3),))),
    "linalg.block_upper": same((real(2, 2), cplx(2, 2))),
    "linalg.resolvent": lambda fn: [
        (resolvent_case(True)(fn), (real(3, 3), np.array([2.5, -3.0]), real(3, 2)), {}),
        (resolvent_case(True)(fn), (cplx(2, 2), np.array([1.5]), cplx(2, 1)), {}),
        (resolvent_case(False)(fn), (real(3, 2), np.array([2.0, -1.5]), real(5, 2)), {}),
        (resolvent_case(False)(fn), (cplx(2, 3), np.array([1.8]), cplx(5, 1)), {})],
    "linalg.cross": same((real(3), real(2, 3)), (cplx(3), real(3))),
    "linalg.vector_norm": same((away(2, 3),), (cplx(3, center=Z),)),
    # convolutions: every mode, complex with real
    "convolve": cases((lambda fn: lambda a, v: fn(a, v, "same"), (real(5), cplx(3))),
                      (lambda fn: lambda a, v: fn(a, v), (real(2), real(4)))),
    "correlate": cases((lambda fn: lambda a, v: fn(a, v, "full"), (cplx(4), cplx(3))),
                       (lambda fn: lambda a, v: fn(a, v, "same"), (real(2), real(5)))),
    "signal.convolve": cases((lambda fn: lambda a, v: fn(a, v, "valid"), (real(3, 4),
                                                                          cplx(2, 2)))),
    "signal.correlate": cases((lambda fn: lambda a, v: fn(a, v, "same"), (cplx(3, 2),
                                                                          real(2, 3)))),
    # scipy.linalg equations
    "linalg.solve_sylvester": same((well(3), well(2), real(3, 2)),
                                   (well(2, True), well(2), cplx(2, 2))),
    "linalg.solve_banded": cases((lambda fn: lambda ab, b: fn((1, 2), ab, b),
                                  (real(4, 5) + np.array([[0], [0], [4], [0]]), real(5, 2))),
                                 (lambda fn: lambda ab, b: fn((1, 0), ab, b),
                                  (cplx(2, 3) + np.array([[4], [0]]), cplx(3)))),
    # numpy.fft: n pads or crops, the Hermitian weighting of irfft
    "fft.fft": cases((lambda fn: lambda a: fn(a, 5, 0, "ortho"), (cplx(3, 2),)),
                     (lambda fn: lambda a: fn(a, 2), (real(2, 3),))),
    "fft.ifft": cases((lambda fn: lambda a: fn(a, None, -1, "forward"), (cplx(2, 3),))),
    "fft.rfft": cases((lambda fn: lambda a: fn(a, 6), (real(2, 5),)),
                      (lambda fn: lambda a: fn(a, 3, 0, "ortho"), (real(4, 2),))),
    "fft.irfft": cases((lambda fn: lambda a: fn(a), (cplx(2, 4),)),
                       (lambda fn: lambda a: fn(a, 5, 0, "ortho"), (cplx(2, 2),)),
                       (lambda fn: lambda a: fn(a, 3), (real(2, 4),))),
}


def _case_ids(name):
    return [f"{name}-{k}" for k in range(len(CASES[name](registry[name].fn)))]


def _all_cases():
    params = []
    for name in BUILTIN:
        if name not in CASES or name not in registry:
            continue
        for k, (f, inputs, opts) in enumerate(CASES[name](registry[name].fn)):
            kind = "complex" if any(np.iscomplexobj(x) for x in inputs) else "real"
            params.append(pytest.param(f, inputs, opts, id=f"{name}-{k}-{kind}"))
    return params


CASE_PARAMS = _all_cases()


@pytest.mark.parametrize("name", BUILTIN)
def test_every_op_has_a_case(name):
    assert name in CASES, (
        f"op '{name}' is in yaad.registry but has no entry in CASES of "
        f"tests/test_registry_second_order.py: add inputs for it (real, and complex "
        f"where it is defined) so its second derivatives and forward mode are checked")


def test_builtin_ops_are_found():
    # The fresh interpreter sees the same library ops as this one.
    assert {"sin", "matmul", "sum", "getitem", "alias"} <= set(BUILTIN)
    assert set(BUILTIN) <= set(registry)


@pytest.mark.parametrize("f, inputs, opts", CASE_PARAMS)
def test_second_order(f, inputs, opts):
    assert gradgradcheck(f, inputs, check_forward_ad=True, **opts)


@pytest.mark.parametrize("f, inputs, opts", CASE_PARAMS)
def test_forward_mode(f, inputs, opts):
    assert gradcheck(f, inputs, check_forward_ad=True, **opts)
