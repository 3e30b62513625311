"""Every differentiable op in ``yaad.registry``: HIPS autograd's protocol, against finite
differences and against JAX.

For each op the table ``CASES`` gives inputs (real, and complex where the op is defined
there). Each case is checked:

- entry by entry, gradient and forward mode against finite differences (``gradcheck``);
- by HIPS autograd's protocol (``yaad.testing.check_grads``, modes fwd and rev, order 2):
  JVP and VJP along random directions against finite differences, then jvp and vjp of
  the JVP (as a function of point and tangent) and of the VJP (as a function of point and
  cotangent, so each VJP is differentiated with respect to its cotangent);
- against JAX: the same six quantities (jvp, vjp, jvp of jvp, vjp of jvp, jvp of vjp,
  vjp of vjp) along the same directions, JAX's VJPs conjugated to yaad's convention
  (``conj(vjp_jax(conj(u)))``, docs/complex.md). ``_jax_twins()`` names JAX's function
  where its name differs; an op JAX lacks is in ``NO_JAX`` with the reason, and
  ``JAX_REAL_ONLY``, ``JAX_SKIP``, ``JAX_ONLY_IN`` say (with reasons) which cases or
  inputs JAX cannot differentiate. JAX's values are stored in ``data/jax_second_order.npz``
  (``JAX_REFERENCES``: `make fuzz` recomputes and checks them; a new or changed case is
  computed by JAX on the spot).

The op names come from a fresh interpreter (``import yaad`` and read the registry), so an
op added anywhere in the library shows up here, and one without a case (or without a JAX
twin or a reason) fails: add its inputs to ``CASES``. An op without a VJP rule must be in
``NOT_DIFFERENTIABLE`` with the reason.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import yaad
from tests.op_cases import ELEMENTWISE, NO_GRADIENT, RULE_TERMS, row_function, row_inputs
from tests.support.reliability import long_only
from yaad import func as F
from yaad.core.op import registry
from yaad.testing import GradcheckError, check_grads, gradcheck


def _builtin_ops() -> dict[str, bool]:
    """The library's ops, each with whether it has a VJP rule."""
    # A fresh process: ops that tests declare for themselves are not the library's.
    code = ("import json, yaad; from yaad.core.op import registry; print(json.dumps({"
            "n: any(v is not None for v in s.vjps) for n, s in registry.items()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


ALL_BUILTIN = _builtin_ops()
BUILTIN = sorted(n for n, differentiable in ALL_BUILTIN.items()
                 if differentiable and n not in RULE_TERMS)


def test_rule_terms_are_ops_of_the_library():
    assert set(RULE_TERMS) <= set(ALL_BUILTIN)

# The library's ops without a VJP rule, and why none is due. Any other op without one
# fails test_every_op_without_a_rule_is_listed: give it rules, or a reason here.
NOT_DIFFERENTIABLE = {
    # elementwise: tests/op_cases/elementwise.py
    **{name: row.why for name, row in NO_GRADIENT.items()},
    **dict.fromkeys(["all", "any"], "boolean output"),
    **dict.fromkeys(["argmax", "argmin", "argsort", "argpartition", "argwhere",
                     "searchsorted", "count_nonzero", "linalg.matrix_rank"],
                    "integer output (indices or counts)"),
    "logsumexp_sign": "the sign of the sum, piecewise constant",
    "unique_indices": "integer output (first occurrences, inverse indices, counts)",
    "isin": "boolean output",
}

# Reseeded for each op (``build``): the yaad case and its JAX twin get the same inputs.
rng = np.random.default_rng(20240611)


def real(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


def away(*shape, lo=0.2, hi=1.0):
    """Real values with |x| in [lo, hi] and random signs (away from a kink at 0)."""
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def cplx(*shape, center=0j, scale=0.4):
    return center + scale * (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape))


# Written with methods, so that the cases run on yaad tensors and on JAX arrays alike.
def herm(a):
    """A Hermitian (symmetric) matrix made from ``a``, inside f: perturbations stay so."""
    return (a + a.conj().swapaxes(-1, -2)) / 2


def well(n, c=False):
    """A well-conditioned n x n matrix."""
    a = np.eye(n) * 2 + 0.3 * real(n, n)
    return a + 0.3j * real(n, n) if c else a


def abs2(v):
    return v * v.conj()


# ---- case builders: a case of CASES takes the op's function and returns [(f, inputs, options)],
# drawing its inputs then (from ``rng``, reseeded for the op by ``build``)


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


def cases(*entries):
    """Explicit cases: (f, inputs) or (f, inputs, options)."""
    return [(e[0], e[1], e[2] if len(e) > 2 else {}) for e in entries]


def same(fn, *inputs_list, **opts):
    """The op called directly on each tuple of inputs."""
    return [(fn, inputs, opts) for inputs in inputs_list]


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
    # elementwise: the rows of tests/op_cases/elementwise.py (from_row), and these
    "sici": unary(0.3, 2, z=1 + 0.5j), "fresnel": unary(z=Z),
    # shape and indexing
    "alias": lambda fn: same(fn, (real(2, 3),), (cplx(2, 3),)),
    "copy": lambda fn: same(fn, (real(2, 3),), (cplx(2, 3),)),
    "reshape": lambda fn: cases((lambda a: fn(a, (3, 2)), (real(2, 3),)),
                     (lambda a: fn(a, (-1,)), (cplx(2, 3),))),
    "transpose": lambda fn: cases((lambda a: fn(a, (1, 0, 2)), (real(2, 3, 2),)),
                       (lambda a: fn(a), (cplx(2, 3),))),
    "swapaxes": lambda fn: cases((lambda a: fn(a, 0, 1), (real(2, 3, 2),)),
                      (lambda a: fn(a, -1, 0), (cplx(2, 3),))),
    "moveaxis": lambda fn: cases((lambda a: fn(a, 0, -1), (cplx(2, 3, 2),))),
    "expand_dims": lambda fn: cases((lambda a: fn(a, 1), (real(2, 3),)),
                         (lambda a: fn(a, 0), (cplx(3),))),
    "squeeze": lambda fn: cases((lambda a: fn(a, 1), (real(2, 1, 3),)),
                     (lambda a: fn(a, 0), (cplx(1, 3),))),
    "broadcast_to": lambda fn: cases((lambda a: fn(a, (2, 3)), (real(3),)),
                          (lambda a: fn(a, (2, 3)), (cplx(1, 3),))),
    "astype": lambda fn: cases((lambda a: fn(a, np.complex128), (real(2, 3),)),
                    (lambda a: fn(a, np.complex128), (cplx(2, 3),))),
    "getitem": lambda fn: cases((lambda a: fn(a, (slice(None), IDX)), (real(2, 3),)),
                     (lambda a: fn(a, (0, slice(1, None))), (cplx(2, 3),))),
    "scatter_add": lambda fn: cases((lambda v: fn(v, (slice(None), IDX), (2, 4)),
                          (real(2, 3),)),
                         (lambda v: fn(v, (slice(None), IDX), (2, 4)),
                          (cplx(2, 3),))),
    "index_put": lambda fn: cases((lambda a, v: fn(a, v, (slice(None), np.array([1, 3]))),
                        (real(2, 4), cplx(2, 2)))),
    "index_put_": lambda fn: cases((lambda a, v: fn(a * 1.0, v, (0, slice(1, 3))),
                         (real(2, 4), real(2))),
                        (lambda a, v: fn(a * 1.0, v, (0, slice(1, 3))),
                         (cplx(2, 4), cplx(2)))),
    "concatenate": lambda fn: cases((lambda a, b: fn(a, b, axis=1), (real(2, 3), cplx(2, 2)))),
    "stack": lambda fn: cases((lambda a, b: fn(a, b, axis=1), (real(2, 3), real(2, 3))),
                   (lambda a, b: fn(a, b, axis=-1), (cplx(2, 3), real(2, 3)))),
    "flip": lambda fn: cases((lambda a: fn(a, 1), (cplx(2, 3),))),
    "roll": lambda fn: cases((lambda a: fn(a, 1, 1), (real(2, 3),)),
                  (lambda a: fn(a, -2, 0), (cplx(3, 2),))),
    "tile": lambda fn: cases((lambda a: fn(a, (2, 1)), (real(2, 3),)),
                  (lambda a: fn(a, (1, 2)), (cplx(2, 3),))),
    "repeat": lambda fn: cases((lambda a: fn(a, 2, 1), (real(2, 3),)),
                    (lambda a: fn(a, 3, 0), (cplx(2, 3),))),
    "repeat_sum": lambda fn: cases((lambda g: fn(g, 2, 1, 3), (real(2, 6),)),
                        (lambda g: fn(g, 3, 0, 2), (cplx(6, 2),))),
    "pad": lambda fn: cases((lambda a: fn(a, ((1, 0), (0, 2))), (cplx(2, 3),))),
    "diagonal": lambda fn: cases((lambda a: fn(a, 0, 1, 2), (real(2, 3, 3),)),
                      (lambda a: fn(a, 1, 0, 1), (cplx(3, 3),))),
    "diag_embed": lambda fn: cases((lambda d: fn(d, (3, 3)), (real(3),)),
                        (lambda d: fn(d, (3, 3)), (cplx(3),))),
    "tril": lambda fn: cases((lambda m: fn(m), (real(3, 3),)),
                  (lambda m: fn(m, -1), (cplx(3, 3),))),
    "triu": lambda fn: cases((lambda m: fn(m, 1), (cplx(3, 3),))),
    # reductions
    "sum": lambda fn: cases((lambda a: fn(a, axis=1), (real(2, 3),)),
                 (lambda a: fn(a), (cplx(2, 3),))),
    "mean": lambda fn: cases((lambda a: fn(a, axis=0, keepdims=True), (cplx(2, 3),))),
    "prod": lambda fn: cases((lambda a: fn(a, axis=1), (away(2, 3, lo=0.5, hi=1.5),)),
                  (lambda a: fn(a), (cplx(2, 2, center=1),))),
    "max": lambda fn: cases((lambda a: fn(a, axis=1), (real(2, 3),))),
    "min": lambda fn: cases((lambda a: fn(a), (real(2, 3),))),
    "cumsum": lambda fn: cases((lambda a: fn(a, 1), (cplx(2, 3),))),
    "cumprod": lambda fn: cases((lambda a: fn(a, 1), (away(2, 3, lo=0.5, hi=1.5),)),
                     (lambda a: fn(a, 0), (cplx(3, center=1),))),
    "std": lambda fn: cases((lambda a: fn(a, axis=1), (real(2, 3),)),
                 (lambda a: fn(a), (cplx(2, 3),))),
    "var": lambda fn: cases((lambda a: fn(a, axis=1, ddof=1), (real(2, 3),)),
                 (lambda a: fn(a), (cplx(2, 3),))),
    "logsumexp": lambda fn: cases((lambda a: fn(a, None, 1, False), (real(2, 3),)),
                       (lambda a, b: fn(a, b, None, False),
                        (real(2, 3), real(3, lo=0.5, hi=1.5))),
                       (lambda a: fn(a, None, 0, True), (cplx(2, 3),))),
    "softmax": lambda fn: cases((lambda x: fn(x, -1), (real(2, 3),))),
    "log_softmax": lambda fn: cases((lambda x: fn(x, -1), (real(2, 3),))),
    # products
    "matmul": lambda fn: same(fn, (real(2, 3), real(3, 2)), (cplx(2, 2, 3), cplx(3, 2)),
                              (real(3), cplx(3, 2)), (cplx(2, 3), real(3))),
    "einsum": lambda fn: cases((lambda a, b: fn("ij,jk->ik", a, b), (real(2, 3), cplx(3, 2))),
                    (lambda a: fn("ii->", a), (real(3, 3),)),
                    (lambda a, b: fn("bij,bji->", a, b), (real(2, 2, 3),
                                                                      real(2, 3, 2)))),
    "tensordot": lambda fn: cases((lambda a, b: fn(a, b, 1), (real(2, 3), cplx(3, 2)))),
    "trace": lambda fn: same(fn, (real(3, 3),), (cplx(2, 2),)),
    "vdot": lambda fn: same(fn, (real(3), real(3)), (cplx(3), cplx(3))),
    # yaad.sparse: a fixed pattern with values (rows 0: cols 0, 2; 1: col 1; 2: cols 0, 2)
    "sparse.pattern_matmul": lambda fn: cases(
        (lambda v, x: fn(v, x, SPARSE_PATTERN), (real(5), real(3))),
        (lambda v, x: fn(v, x, SPARSE_PATTERN), (cplx(5), cplx(3, 2)))),
    "sparse.pattern_matmul_transposed": lambda fn: cases(
        (lambda v, x: fn(v, x, SPARSE_PATTERN), (real(5), real(3, 2))),
        (lambda v, x: fn(v, x, SPARSE_PATTERN), (cplx(5), real(3)))),
    "sparse.operator_matmul": lambda fn: cases(
        (lambda x: fn(x, SPARSE_FIXED), (real(3),)),
        (lambda x: fn(x, SPARSE_FIXED * (1 + 2j)), (cplx(3, 2),))),
    # linear algebra
    "linalg.cholesky": lambda fn: cases(
        (lambda a: fn(herm(a) + 3 * np.eye(3)), (real(3, 3),)),
        (lambda a: fn(herm(a) + 3 * np.eye(2)), (cplx(2, 2),))),
    "linalg.det": lambda fn: same(fn, (well(3),), (well(2, True),)),
    "linalg.inv": lambda fn: same(fn, (well(3),), (well(2, True),)),
    "linalg.slogdet": lambda fn: same(fn, (well(3),), (well(2, True),)),
    "linalg.solve": lambda fn: same(fn, (well(3), real(3, 2)), (well(2, True), cplx(2)[:, None])),
    "linalg.solve_triangular": lambda fn: cases(
        (lambda a, b: fn(a, b, lower=True), (np.tril(well(3)), real(3, 2))),
        (lambda a, b: fn(a, b, lower=False), (np.triu(well(3, True)), cplx(3)))),
    "linalg.lstsq": lambda fn: same(fn, (real(4, 3), real(4, 2)), (cplx(4, 2), cplx(4, 2))),
    "linalg.pinv": lambda fn: same(fn, (real(3, 2),), (cplx(2, 3),)),
    "linalg.qr": lambda fn: same(fn, (real(3, 3),), (cplx(3, 2),)),
    "linalg.eigh": lambda fn: cases(
        (lambda a: (lambda w, v: (w, abs2(v)))(*fn(herm(a))), (real(3, 3),)),
        (lambda a: (lambda w, v: (w, abs2(v)))(*fn(herm(a))), (cplx(3, 3),))),
    "linalg.eig": lambda fn: cases((lambda a: fn(a)[0], (real(3, 3),)),
                        (lambda a: fn(a)[0], (cplx(2, 2),))),
    "linalg.svd": lambda fn: cases(
        (lambda a: (lambda u, s, vh: (s, abs2(u), abs2(vh)))(*fn(a, False)),
         (real(3, 2),)),
        (lambda a: (lambda u, s, vh: (s, abs2(u), abs2(vh)))(*fn(a, False)),
         (cplx(2, 2),))),
    "linalg.expm": lambda fn: same(fn, (0.5 * real(3, 3),), (0.5 * cplx(2, 2),)),
    "linalg.logm": lambda fn: cases((lambda a: fn(np.eye(3) + 0.3 * a), (real(3, 3),)),
                         (lambda a: fn(np.eye(2) + 0.3 * a), (cplx(2, 2),))),
    "linalg.sqrtm": lambda fn: cases((lambda a: fn(2 * np.eye(3) + 0.3 * a), (real(3, 3),)),
                          (lambda a: fn(2 * np.eye(2) + 0.3 * a), (cplx(2, 2),))),
    "linalg.block_upper": lambda fn: same(fn, (real(2, 2), cplx(2, 2))),
    "linalg.resolvent": lambda fn: [
        (resolvent_case(True)(fn), (real(3, 3), np.array([2.5, -3.0]), real(3, 2)), {}),
        (resolvent_case(True)(fn), (cplx(2, 2), np.array([1.5]), cplx(2, 1)), {}),
        (resolvent_case(False)(fn), (real(3, 2), np.array([2.0, -1.5]), real(5, 2)), {}),
        (resolvent_case(False)(fn), (cplx(2, 3), np.array([1.8]), cplx(5, 1)), {})],
    "linalg.cross": lambda fn: same(fn, (real(3), real(2, 3)), (cplx(3), real(3))),
    "linalg.vector_norm": lambda fn: same(fn, (away(2, 3),), (cplx(3, center=Z),)),
    # convolutions: every mode, complex with real
    "convolve": lambda fn: cases((lambda a, v: fn(a, v, "same"), (real(5), cplx(3))),
                      (lambda a, v: fn(a, v), (real(2), real(4)))),
    "correlate": lambda fn: cases((lambda a, v: fn(a, v, "full"), (cplx(4), cplx(3))),
                       (lambda a, v: fn(a, v, "same"), (real(2), real(5)))),
    "signal.convolve": lambda fn: cases((lambda a, v: fn(a, v, "valid"), (real(3, 4),
                                                                          cplx(2, 2)))),
    "signal.correlate": lambda fn: cases((lambda a, v: fn(a, v, "same"), (cplx(3, 2),
                                                                          real(2, 3))),
                              (lambda a, v: fn(a, v, "full"), (cplx(3, 3),
                                                                          real(2, 2)))),
    # scipy.linalg equations
    "linalg.solve_sylvester": lambda fn: same(fn, (well(3), well(2), real(3, 2)),
                                   (well(2, True), well(2), cplx(2, 2))),
    "linalg.solve_banded": lambda fn: cases((lambda ab, b: fn((1, 2), ab, b),
                                  (real(4, 5) + np.array([[0], [0], [4], [0]]), real(5, 2))),
                                 (lambda ab, b: fn((1, 0), ab, b),
                                  (cplx(2, 3) + np.array([[4], [0]]), cplx(3)))),
    # numpy.fft: n pads or crops, the Hermitian weighting of irfft
    "fft.fft": lambda fn: cases((lambda a: fn(a, 5, 0, "ortho"), (cplx(3, 2),)),
                     (lambda a: fn(a, 2), (real(2, 3),))),
    "fft.ifft": lambda fn: cases((lambda a: fn(a, None, -1, "forward"), (cplx(2, 3),))),
    "fft.rfft": lambda fn: cases((lambda a: fn(a, 6), (real(2, 5),)),
                      (lambda a: fn(a, 3, 0, "ortho"), (real(4, 2),))),
    "fft.irfft": lambda fn: cases((lambda a: fn(a), (cplx(2, 4),)),
                       (lambda a: fn(a, 5, 0, "ortho"), (cplx(2, 2),)),
                       (lambda a: fn(a, 3), (real(2, 4),))),
}


def from_row(row, more=None):
    """The cases of an elementwise op (a row of tests/op_cases/elementwise.py): real inputs in its
    domains, and complex ones where it is defined on complex numbers (to order 1 where its
    second derivatives are checked on real input only); then ``more``'s."""
    def make(fn):
        f = row_function(row, fn)
        out = [(f, tuple(row_inputs(row, np.float64, rng)), {})]
        if row.complex == "yes":
            out.append((f, tuple(row_inputs(row, np.complex128, rng)),
                        {"order": 1} if row.second == "real" else {}))
        return out + (more(fn) if more is not None else [])

    return make


# Elementwise cases besides their rows' (after them): where JAX's derivatives fail on part
# of the domain (JAX_SKIP), a Python integer exponent, second order in x only.
MORE_ELEMENTWISE = {
    "power": lambda fn: cases((lambda x: fn(x, 3), (real(2, 3),))),
    "exp1": unary(1.1, 2), "expn": lambda fn: [(lambda x: fn(1, x), (real(2, 3, lo=1.1, hi=2),),
                                                {})],
    "spence": unary(0.3, 0.9),
}
# Elementwise ops whose cases are these instead of their rows'.
OWN_CASES = {
    # second order in the parameters would be third order of gammainc / betainc: x only
    "gammainc_da": lambda fn: cases((lambda x: fn(1, np.array([0.7, 1.5, 2.5]), x),
                          (real(2, 3, lo=0.5, hi=2),))),
    "betainc_dab": lambda fn: cases((lambda x: fn(1, 0, 1.5, np.array([0.7, 1.5, 2.5]), x),
                          (real(2, 3, lo=0.1, hi=0.9),))),
}
for _name, _row in ELEMENTWISE.items():
    CASES[_name] = OWN_CASES.get(_name) or from_row(_row, MORE_ELEMENTWISE.get(_name))


def build(name, fn):
    """The cases of op ``name`` with ``fn`` in the op's place (yaad's op or its JAX twin):
    the same inputs for every ``fn``."""
    global rng
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return CASES[name](fn)


def _all_cases(names=None):
    """The cases of the ops ``names`` (default: the library's) as test parameters."""
    params = []
    for name in BUILTIN if names is None else names:
        if name not in CASES or name not in registry:
            continue
        for k, (f, inputs, opts) in enumerate(build(name, registry[name].fn)):
            kind = "complex" if any(np.iscomplexobj(x) for x in inputs) else "real"
            params.append(pytest.param(name, k, f, inputs, opts, id=f"{name}-{k}-{kind}"))
    return params


CASE_PARAMS = _all_cases()


# ---- JAX's twin of each op -----------------------------------------------------------------

# Ops JAX lacks (nothing to compare with): the reason. Finite differences still check them.
NO_JAX = {
    **{name: row.no_jax for name, row in ELEMENTWISE.items() if row.no_jax},
    "linalg.logm": "jax.scipy.linalg has no logm",
    "linalg.sqrtm": "jax.scipy.linalg.sqrtm has no derivative rule",
    "linalg.resolvent": "a helper of the eigh and svd rules; JAX has no such function",
    "linalg.solve_banded": "jax.scipy.linalg has no solve_banded",
}


def _jax_twins() -> dict:
    """JAX's function for each op (not elementwise: their rows name it) whose JAX spelling
    differs from ``jnp.<name>``, ``jax.scipy.special.<name>``, ``jnp.linalg.<name>`` or
    ``jax.scipy.linalg.<name>``."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    import jax.scipy.signal
    import jax.scipy.special as jsp

    def scatter_add(v, idx, shape):
        return jnp.zeros(shape, v.dtype).at[idx].add(v)

    def index_put(a, v, idx):
        return a.at[idx].set(v.astype(jnp.result_type(a, v)) if a.dtype.kind == "c"
                             else v.real.astype(a.dtype))

    def repeat_sum(g, repeats, axis, n):  # the sums of consecutive runs (repeat's VJP)
        return jnp.add.reduceat(g, jnp.arange(0, repeats * n, repeats), axis=axis)

    def diag_embed(d, shape, offset=0, axis1=0, axis2=1):
        out = jnp.zeros(shape, d.dtype)
        i = jnp.arange(d.shape[-1])
        return out.at[i + max(-offset, 0), i + max(offset, 0)].set(d)

    def logsumexp(a, b=None, axis=None, keepdims=False):
        return jsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)

    def solve_sylvester(a, b, q):  # a x + x b = q, as one linear system in vec(x)
        m, n = q.shape
        k = jnp.kron(jnp.eye(n), a) + jnp.kron(b.T, jnp.eye(m))
        return jnp.linalg.solve(k, q.reshape(-1, order="F")).reshape((m, n), order="F")

    def pattern(values, p):  # yaad.sparse's CSR pattern with values, as a dense matrix
        dense = jnp.zeros(p.shape, values.dtype)
        return dense.at[np.asarray(p.rows), np.asarray(p.indices)].set(values)

    return {
        "alias": lambda x: x, "copy": jnp.copy,
        "astype": lambda a, dtype: a.astype(dtype), "getitem": lambda a, idx: a[idx],
        "scatter_add": scatter_add, "index_put": index_put, "index_put_": index_put,
        "repeat_sum": repeat_sum, "diag_embed": diag_embed,
        "concatenate": lambda *xs, axis=0: jnp.concatenate(xs, axis=axis),
        "stack": lambda *xs, axis=0: jnp.stack(xs, axis=axis),
        "softmax": jax.nn.softmax, "log_softmax": jax.nn.log_softmax,
        "logsumexp": logsumexp, "max": jnp.max, "min": jnp.min,
        "linalg.block_upper": lambda a, e: jnp.block([[a, e], [jnp.zeros_like(a), a]]),
        "linalg.slogdet": lambda a: tuple(jnp.linalg.slogdet(a)),
        "linalg.lstsq": lambda a, b: jnp.linalg.lstsq(a, b)[0],
        "linalg.solve_triangular": jsl.solve_triangular,
        "linalg.eigh": jnp.linalg.eigh, "linalg.svd": jnp.linalg.svd,
        # the cases take the eigenvalues; their second derivatives need the eigenvectors'
        # first ones, which JAX computes on request only
        "linalg.eig": lambda a: jax.lax.linalg.eig(a, compute_left_eigenvectors=False,
                                                   enable_eigvec_derivs=True),
        "linalg.expm": jsl.expm, "linalg.solve_sylvester": solve_sylvester,
        "signal.convolve": jax.scipy.signal.convolve,
        "signal.correlate": jax.scipy.signal.correlate,
        "sparse.pattern_matmul": lambda v, x, p: pattern(v, p) @ x,
        "sparse.pattern_matmul_transposed": lambda v, x, p: pattern(v, p).T @ x,
        "sparse.operator_matmul": lambda x, a: jnp.asarray(a.toarray()) @ x,
    }


def jax_twin(name):
    """JAX's function for op ``name``, or None."""
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    import jax.scipy.special as jsp

    twin = ELEMENTWISE[name].jax if name in ELEMENTWISE else _jax_twins().get(name)
    if isinstance(twin, str):  # a dotted name: "jax.nn.relu"
        module, _, attr = twin.rpartition(".")
        return getattr(importlib.import_module(module), attr)
    if twin is not None:
        return twin
    if name.startswith("linalg."):
        short = name.removeprefix("linalg.")
        return getattr(jnp.linalg, short, None) or getattr(jsl, short, None)
    if name.startswith("fft."):
        return getattr(jnp.fft, name.removeprefix("fft."), None)
    return getattr(jnp, name, None) or getattr(jsp, name, None)


# Ops whose complex cases JAX cannot run: the reason.
JAX_REAL_ONLY = {
    **{name: row.jax_real_only for name, row in ELEMENTWISE.items() if row.jax_real_only},
    "sici": "jax.scipy.special.sici is real only",
    "fresnel": "jax.scipy.special.fresnel is real only",
}

# Single cases JAX gets wrong (finite differences still check them): the reason.
JAX_SKIP = {
    # (cases 0 draw from both sides of 1; the last cases, from one: MORE_ELEMENTWISE)
    ("exp1", 0): "JAX's second derivative of exp1 is NaN for x <= 1 (JAX 0.10)",
    ("expn", 0): "JAX's second derivative of expn(1, x) is NaN for x <= 1 (JAX 0.10)",
    ("spence", 0): "JAX's derivative of spence is NaN for x > 1 and 0 at x = 1 (JAX 0.10)",
    ("signal.correlate", 0): "JAX's correlate needs one input smaller in every dimension",
}

# Ops JAX differentiates in some of their inputs only: the inputs compared, and why.
JAX_ONLY_IN = {
    "gammainc": ((1,), "JAX has no second derivative in a (igamma_grad_a has no rule)"),
    "gammaincc": ((1,), "JAX has no second derivative in a (igamma_grad_a has no rule)"),
    "betainc": ((2,), "JAX's betainc has no derivative in a and b"),
}


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _cotangent(out, leaves):
    """``leaves`` with the structure of ``out`` (a tuple, a namedtuple, a list or one leaf)."""
    if not isinstance(out, (tuple, list)):
        return leaves[0]
    return type(out)._make(leaves) if hasattr(out, "_make") else type(out)(leaves)


def _yaad_jvp(f, xs, ts):
    return _as_list(F.jvp(f, tuple(xs), tuple(ts))[1])


def _yaad_vjp(f, xs, us):
    out, pullback = F.vjp(f, *xs)
    return list(pullback(_cotangent(out, us)))


def _jax_jvp(f, xs, ts):
    import jax

    return _as_list(jax.jvp(f, tuple(xs), tuple(ts))[1])


def _jax_vjp(f, xs, us):
    import jax
    import jax.numpy as jnp

    # yaad's VJP is conj(JAX's VJP of the conjugate cotangent)
    out, pullback = jax.vjp(f, *xs)
    return [jnp.conj(g) for g in pullback(_cotangent(out, [jnp.conj(u) for u in us]))]


PROBES = ("jvp", "vjp", "jvp of jvp", "vjp of jvp", "jvp of vjp", "vjp of vjp")


def probes(jvp, vjp, f, xs, d, what=PROBES):
    """The derivatives HIPS's order-2 check looks at (those named in ``what``), along the
    directions ``d``."""
    n = len(xs)

    def f_jvp(*a):
        return tuple(jvp(f, a[:n], a[n:]))

    def f_vjp(*a):
        return tuple(vjp(f, a[:n], a[n:]))

    rules = {
        "jvp": lambda: jvp(f, xs, d["v"]), "vjp": lambda: vjp(f, xs, d["u"]),
        "jvp of jvp": lambda: jvp(f_jvp, xs + d["v"], d["dx"] + d["dv"]),
        "vjp of jvp": lambda: vjp(f_jvp, xs + d["v"], d["c_jvp"]),
        "jvp of vjp": lambda: jvp(f_vjp, xs + d["u"], d["dx"] + d["du"]),
        "vjp of vjp": lambda: vjp(f_vjp, xs + d["u"], d["c_vjp"]),
    }
    return {w: rules[w]() for w in what}


def _only(f, inputs, keep):
    """``f`` as a function of the inputs at positions ``keep`` (the others held at their
    values in ``inputs``), and those inputs."""
    def g(*xs):
        args = list(inputs)
        for i, x in zip(keep, xs):
            args[i] = x
        return f(*args)

    return g, tuple(inputs[i] for i in keep)


def _random_like(r, x):
    x = np.asarray(x)
    out = r.standard_normal(x.shape)
    return out + 1j * r.standard_normal(x.shape) if x.dtype.kind == "c" else out


def directions(f, xs, seed=0):
    r = np.random.default_rng(seed)
    outs = [np.asarray(o.data if isinstance(o, yaad.Tensor) else o)
            for o in _as_list(f(*[yaad.tensor(x) for x in xs]))]
    return {"v": [_random_like(r, x) for x in xs], "u": [_random_like(r, o) for o in outs],
            "dx": [_random_like(r, x) for x in xs], "dv": [_random_like(r, x) for x in xs],
            "du": [_random_like(r, o) for o in outs],
            "c_jvp": [_random_like(r, o) for o in outs],
            "c_vjp": [_random_like(r, x) for x in xs]}


def _jax_cases(case_params=None):
    """The cases of ``case_params`` (default: every case) that JAX runs."""
    params = []
    for p in CASE_PARAMS if case_params is None else case_params:
        name, k, _, inputs, _ = p.values
        complex_case = any(np.iscomplexobj(x) for x in inputs)
        if (name in NO_JAX or (name, k) in JAX_SKIP
                or (complex_case and name in JAX_REAL_ONLY)):
            continue
        params.append(pytest.param(name, k, id=p.id))
    return params


JAX_PARAMS = _jax_cases()


@pytest.mark.parametrize("name", BUILTIN)
def test_every_op_has_a_case(name):
    assert name in CASES, (
        f"op '{name}' is in yaad.registry but has no entry in CASES of "
        f"tests/ops/test_registry_second_order.py (an elementwise op: a row in "
        f"tests/op_cases/elementwise.py): add inputs for it (real, and complex where it is "
        f"defined) so its second derivatives and forward mode are checked")
    kinds = {any(np.iscomplexobj(x) for x in inputs) for _, inputs, _ in build(
        name, registry[name].fn)}
    assert kinds, f"op '{name}' has an empty entry in CASES"


@pytest.mark.parametrize("name", BUILTIN)
def test_every_op_has_a_jax_twin_or_a_reason(name):
    assert name in NO_JAX or jax_twin(name) is not None, (
        f"op '{name}' has no JAX twin: name JAX's function in _jax_twins() of "
        f"tests/ops/test_registry_second_order.py, or the reason JAX lacks it in NO_JAX (an "
        f"elementwise op: jax= or no_jax= in its row of tests/op_cases/elementwise.py)")


def test_every_op_without_a_rule_is_listed():
    without = {n for n, differentiable in ALL_BUILTIN.items() if not differentiable}
    assert without - set(NOT_DIFFERENTIABLE) == set(), (
        "ops without a VJP rule and without a reason in NOT_DIFFERENTIABLE of "
        "tests/ops/test_registry_second_order.py: give them rules (and a case in CASES), or "
        "say why none is due")
    assert set(NOT_DIFFERENTIABLE) - without == set(), (
        "NOT_DIFFERENTIABLE names ops that are differentiable or gone: remove them")


def test_builtin_ops_are_found():
    # The fresh interpreter sees the same library ops as this one.
    assert {"sin", "matmul", "sum", "getitem", "alias"} <= set(BUILTIN)
    assert set(BUILTIN) <= set(registry)


@pytest.mark.parametrize("name, k, f, inputs, opts", CASE_PARAMS)
def test_forward_mode(name, k, f, inputs, opts):
    opts = {key: v for key, v in opts.items() if key != "order"}
    assert gradcheck(f, inputs, check_forward_ad=True, **opts)


def _off_by(f, off):
    """``f`` with every derivative multiplied by ``1 + off`` (the values unchanged)."""
    def g(*xs):
        out = f(*xs)
        outs = [o + off * (o - o.detach()) if isinstance(o, yaad.Tensor) else o
                for o in _as_list(out)]
        return _cotangent(out, outs)

    return g


# Cases where the derivative is 0 at every input (nothing for a factor to change): why.
ZERO_DERIVATIVE = {
    **{f"{n}-0-real": "piecewise constant" for n in (
        "ceil", "floor", "fix", "rint", "round", "sign", "trunc", "floor_divide", "gammasgn")},
    **{f"{n}-1-complex": "piecewise constant" for n in ("rint", "round")},
    "angle-0-real": "the angle of a real number is piecewise constant",
    "imag-0-real": "the imaginary part of a real number is 0",
    "heaviside-0-real": "a step in x1: its slope is 0 away from x1 == 0",
}


@pytest.mark.parametrize("name, k, f, inputs, opts", CASE_PARAMS)
def test_default_tolerance_catches_a_rule_off_by_2e_4(name, k, f, inputs, opts, request):
    # gradcheck's default tolerance resolves a relative error of 2e-4 at every case (with
    # the right rules the cases pass test_forward_mode)
    if request.node.callspec.id in ZERO_DERIVATIVE:
        out, pullback = F.vjp(f, *inputs)
        grads = pullback(_cotangent(out, [np.ones_like(o) for o in _as_list(out)]))
        assert all(not np.any(g) for g in _as_list(grads))
        return
    with pytest.raises(GradcheckError, match="gradient differs"):
        gradcheck(_off_by(f, 2e-4), inputs)


@pytest.mark.parametrize("name, k, f, inputs, opts", CASE_PARAMS)
def test_hips_protocol(name, k, f, inputs, opts):
    assert check_grads(f, inputs, modes=("fwd", "rev"), **{"order": 2, **opts})


# JAX's values for every JAX case, computed by JAX and stored: JAX evaluated op by op
# compiles each primitive for each shape and dtype, minutes of CPU for all cases, so CI
# reads them from this file. A case that is new or changed (its fingerprint: inputs,
# directions, probes) is computed by JAX on the spot; `make fuzz` recomputes them all and
# checks the file. Rewrite it with `python tests/ops/test_registry_second_order.py`.
JAX_REFERENCES = Path(__file__).parents[1] / "data" / "jax_second_order.npz"


def _jax_setup(name, k):
    """Case ``k`` of op ``name`` for the comparison: yaad's function, JAX's, the inputs,
    the directions, the probes, and the fingerprint of all but the functions."""
    f, inputs, opts = build(name, registry[name].fn)[k]
    f_jax = build(name, jax_twin(name))[k][0]
    if name in JAX_ONLY_IN:
        f, _ = _only(f, inputs, JAX_ONLY_IN[name][0])
        f_jax, inputs = _only(f_jax, inputs, JAX_ONLY_IN[name][0])
    d = directions(f, inputs)
    what = PROBES[:2] if opts.get("order", 2) == 1 else PROBES
    h = hashlib.sha256(repr(what).encode())
    for a in list(inputs) + [a for key in sorted(d) for a in d[key]]:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode() + a.tobytes())
    return f, f_jax, inputs, d, what, h.hexdigest()[:16]


def _jax_values(f_jax, inputs, d, what):
    """JAX's probes, computed now."""
    import jax
    import jax.numpy as jnp

    # Op by op (each primitive compiled once, for all cases) rather than jitted: an XLA
    # compilation per case and transform would cost more.
    with jax.enable_x64(True), jax.disable_jit():
        got = probes(_jax_jvp, _jax_vjp, f_jax, [jnp.asarray(x) for x in inputs],
                     {key: [jnp.asarray(a) for a in v] for key, v in d.items()}, what)
    return {w: [np.asarray(a) for a in v] for w, v in got.items()}


_stored_cache: dict = {}


def _stored_jax_values() -> dict:
    """``{(case id, fingerprint): {probe: [arrays]}}`` from JAX_REFERENCES (one flat
    float64 array of all values, complex ones as pairs, and an index in JSON)."""
    if not _stored_cache and JAX_REFERENCES.exists():
        with np.load(JAX_REFERENCES) as data:
            flat, index = data["values"], json.loads(str(data["index"]))
        for case, fingerprint, what, dtype, shape, start in index["arrays"]:
            dtype = np.dtype(dtype)
            size = int(np.prod(shape)) * (2 if dtype.kind == "c" else 1)
            a = flat[start:start + size].view(dtype).reshape(shape)
            entry = _stored_cache.setdefault((case, fingerprint), {})
            entry.setdefault(what, []).append(a)
    return _stored_cache


def _assert_close(got, expected, message):
    for what in got:
        assert len(got[what]) == len(expected[what]), f"{message}: {what}"
        for j, (a, b) in enumerate(zip(got[what], expected[what])):
            a = np.asarray(a.data if isinstance(a, yaad.Tensor) else a)
            scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10 * scale,
                                       err_msg=f"{message}: {what}, output {j}")


@pytest.mark.parametrize("name, k", JAX_PARAMS)
def test_against_jax(name, k, request):
    f, f_jax, inputs, d, what, fingerprint = _jax_setup(name, k)
    ours = probes(_yaad_jvp, _yaad_vjp, f, list(inputs), d, what)
    case = request.node.callspec.id
    theirs = _stored_jax_values().get((case, fingerprint))
    if theirs is None or set(theirs) != set(what):
        theirs = _jax_values(f_jax, inputs, d, what)
    _assert_close(ours, theirs, f"{name}, against JAX")


def assert_stored(p, fingerprint):
    """Raise unless JAX's values of case ``p`` (with its inputs' ``fingerprint``) are stored."""
    assert (p.id, fingerprint) in _stored_jax_values(), (
        f"{p.id}: no stored JAX values; run python tests/ops/test_registry_second_order.py "
        f"(it writes tests/data/jax_second_order.npz)")


@long_only
def test_stored_jax_values_are_jax_values_fuzz():
    # every stored value recomputed by JAX; none missing, none left over
    stored = _stored_jax_values()
    seen = set()
    for p in JAX_PARAMS:
        _, f_jax, inputs, d, what, fingerprint = _jax_setup(*p.values)
        assert_stored(p, fingerprint)
        _assert_close(_jax_values(f_jax, inputs, d, what), stored[p.id, fingerprint],
                      f"{p.id}, stored against JAX now")
        seen.add((p.id, fingerprint))
    assert set(stored) == seen, f"stored values of no case: {sorted(set(stored) - seen)}"


def write_jax_references() -> None:
    """Compute JAX's values of every JAX case and store them in JAX_REFERENCES."""
    import jax

    index, parts, start = [], [], 0
    for p in JAX_PARAMS:
        _, f_jax, inputs, d, what, fingerprint = _jax_setup(*p.values)
        for w, values in _jax_values(f_jax, inputs, d, what).items():
            for a in values:
                a = np.asarray(a, dtype=np.complex128 if a.dtype.kind == "c" else np.float64)
                index.append((p.id, fingerprint, w, a.dtype.str, a.shape, start))
                parts.append(a.reshape(-1).view(np.float64))
                start += parts[-1].size
    JAX_REFERENCES.parent.mkdir(exist_ok=True)
    np.savez_compressed(JAX_REFERENCES, values=np.concatenate(parts),
                        index=np.array(json.dumps({"jax": jax.__version__, "arrays": index})))


def _complex_case(p):
    return any(np.iscomplexobj(x) for x in p.values[3])


def test_every_op_defined_on_complex_numbers_has_a_complex_case():
    # strategies.CASES says which ops take complex inputs (their NumPy oracle does)
    from tests.op_cases import CASES as DOMAINS

    takes_complex = set()
    for c in DOMAINS.values():
        if c.grad != "none" and any(np.dtype(d).kind == "c" for d in c.dtypes):
            takes_complex |= set(c.covers) | ({c.op_name} if c.op_name else set())
    with_case = {p.values[0] for p in CASE_PARAMS if _complex_case(p)}
    missing = sorted((takes_complex & set(BUILTIN)) - with_case)
    assert not missing, f"ops defined on complex numbers without a complex case: {missing}"


def test_counts():
    # The closing note of issue 11 quotes these (238 ops: 199 differentiable, 39 listed in
    # NOT_DIFFERENTIABLE; 331 cases of which 137 complex; 285 cases of 181 ops compared
    # with JAX); they must not shrink unnoticed.
    complex_cases = sum(_complex_case(p) for p in CASE_PARAMS)
    assert len(BUILTIN) >= 199 and len(CASE_PARAMS) >= 331 and complex_cases >= 137
    assert len(JAX_PARAMS) >= 285 and len({p.values[0] for p in JAX_PARAMS}) >= 181


if __name__ == "__main__":
    write_jax_references()
