"""Table-driven tests of every elementwise op: forward against NumPy/SciPy, gradients and
second derivatives against finite differences, dtypes, broadcasting, subgradients.

The table below must cover every elementwise op in ``yaad.registry``: a new op without a
row fails ``test_table_covers_every_elementwise_op``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
import scipy.special as sp
from support.arrays import assert_like_numpy, random_array

import yaad
from yaad.ops import elementwise as ew
from yaad.ops import parameter_derivatives as pd
from yaad.testing import gradcheck, gradgradcheck

R = (-2.0, 2.0)
POS = (0.3, 3.0)
UNIT = (-0.9, 0.9)
NEAR_ONE = (0.7, 1.3)
SMALL_IMAG = (-0.5, 0.5)
PROB = (0.05, 0.95)


@dataclass
class Case:
    """One differentiable elementwise op.

    ref: the NumPy/SciPy oracle. domains: the interval of the real parts of each
    differentiable input, where the function is smooth. complex: "yes" (forward and
    gradients checked on complex input), "raises" (a complex gradient raises TypeError, at
    the forward if NumPy refuses complex input) or "no" (not tested on complex). order: a
    fixed non-differentiable first argument (polygamma's n, jv's v). second: "yes", "real"
    (second derivatives checked on real input only) or "no". fn: the yaad callable when it
    is not ``yaad.<name>``.
    """

    ref: Callable
    domains: tuple = (R,)
    complex: str = "yes"
    order: Any = None
    second: str = "yes"
    imag: tuple = (-1.0, 1.0)
    fn: Callable | None = None


def _c(ref, domains=(R,), **kw):
    return Case(ref, domains, **kw)


def _where_fn(x, y):
    return yaad.where(yaad.real(x) > 0, x, y)


def _clip_fn(x, lo, hi):
    return yaad.clip(x, lo, hi)


CASES: dict[str, Case] = {
    # trigonometric and hyperbolic
    "sin": _c(np.sin), "cos": _c(np.cos), "tan": _c(np.tan, ((-1.2, 1.2),)),
    "arcsin": _c(np.arcsin, (UNIT,), imag=SMALL_IMAG),
    "arccos": _c(np.arccos, (UNIT,), imag=SMALL_IMAG),
    "arctan": _c(np.arctan, imag=SMALL_IMAG),
    "sinh": _c(np.sinh), "cosh": _c(np.cosh), "tanh": _c(np.tanh),
    "arcsinh": _c(np.arcsinh, imag=SMALL_IMAG),
    "arccosh": _c(np.arccosh, ((1.2, 3.0),)),
    "arctanh": _c(np.arctanh, (UNIT,), imag=SMALL_IMAG),
    # exponentials and logarithms
    "exp": _c(np.exp), "exp2": _c(np.exp2), "expm1": _c(np.expm1),
    "log": _c(np.log, (POS,)), "log2": _c(np.log2, (POS,)), "log10": _c(np.log10, (POS,)),
    "log1p": _c(np.log1p, ((-0.5, 2.0),)),
    # powers and simple maps
    "sqrt": _c(np.sqrt, (POS,)), "cbrt": _c(np.cbrt, (POS,), complex="raises"),
    "square": _c(np.square), "reciprocal": _c(np.reciprocal, (POS,)),
    "negative": _c(np.negative), "positive": _c(np.positive),
    "deg2rad": _c(np.deg2rad, complex="raises"), "rad2deg": _c(np.rad2deg, complex="raises"),
    "radians": _c(np.radians, complex="raises"), "degrees": _c(np.degrees, complex="raises"),
    "sinc": _c(np.sinc),
    "absolute": _c(np.abs), "sign": _c(np.sign), "angle": _c(np.angle),
    "real": _c(np.real), "imag": _c(np.imag), "conjugate": _c(np.conj),
    # special functions
    "erf": _c(sp.erf), "erfc": _c(sp.erfc), "erfcx": _c(sp.erfcx),
    "erfinv": _c(sp.erfinv, (UNIT,), complex="raises"),
    "erfcinv": _c(sp.erfcinv, ((0.1, 1.9),), complex="raises"),
    "gamma": _c(sp.gamma, (POS,), second="real"),
    "gammaln": _c(sp.gammaln, (POS,), complex="raises"),
    "digamma": _c(sp.digamma, (POS,), complex="raises"),
    "polygamma": _c(sp.polygamma, (POS,), order=1, complex="raises"),
    "beta": _c(sp.beta, (POS, POS), complex="raises"),
    "betaln": _c(sp.betaln, (POS, POS), complex="raises"),
    "expit": _c(sp.expit, complex="raises"), "logit": _c(sp.logit, ((0.1, 0.9),),
                                                      complex="raises"),
    "xlogy": _c(sp.xlogy, (R, POS)), "xlog1py": _c(sp.xlog1py, (R, (-0.5, 2.0))),
    "jv": _c(sp.jv, (POS,), order=1.5), "yv": _c(sp.yv, (POS,), order=1.5),
    "iv": _c(sp.iv, (POS,), order=1.5),
    "ive": _c(sp.ive, (POS,), order=1.5, complex="raises"),
    "j0": _c(sp.j0, complex="raises"), "j1": _c(sp.j1, complex="raises"),
    "y0": _c(sp.y0, (POS,), complex="raises"), "y1": _c(sp.y1, (POS,), complex="raises"),
    "i0": _c(sp.i0, complex="raises"), "i1": _c(sp.i1, complex="raises"),
    "i0e": _c(sp.i0e, ((0.2, 2.0),), complex="raises"),
    "i1e": _c(sp.i1e, ((0.2, 2.0),), complex="raises"),
    "ndtr": _c(sp.ndtr), "log_ndtr": _c(sp.log_ndtr, ((-4.0, 4.0),)),
    "ndtri": _c(sp.ndtri, (PROB,), complex="raises"),
    "log_expit": _c(sp.log_expit, complex="raises"),
    "rgamma": _c(sp.rgamma, (POS,), second="real"),
    "loggamma": _c(sp.loggamma, (POS,), second="real"),
    "gammasgn": _c(sp.gammasgn, ((0.1, 0.9),), complex="raises"),
    "multigammaln": _c(lambda a: sp.multigammaln(a, 3), ((1.5, 3.0),), complex="no",
                       fn=lambda a: yaad.multigammaln(a, 3)),
    "factorial": _c(lambda n: sp.factorial(n, exact=False), (POS,), complex="no"),
    "poch": _c(sp.poch, (POS, POS), complex="raises"),
    "entr": _c(sp.entr, (POS,), complex="raises"),
    "rel_entr": _c(sp.rel_entr, (POS, POS), complex="raises"),
    "kl_div": _c(sp.kl_div, (POS, POS), complex="raises"),
    "exp1": _c(sp.exp1, (POS,)), "expi": _c(sp.expi, (POS,)),
    "expn": _c(sp.expn, (POS,), order=1, complex="raises"),
    "spence": _c(sp.spence, (POS,)),
    "zeta": _c(sp.zeta, (POS,), order=2.5, complex="raises"),
    "dawsn": _c(sp.dawsn), "wofz": _c(sp.wofz),
    "owens_t": _c(sp.owens_t, (R, R), complex="raises"),
    "hyp1f1": _c(lambda x: sp.hyp1f1(0.7, 1.3, x), fn=lambda x: yaad.hyp1f1(0.7, 1.3, x)),
    "hyp2f1": _c(lambda z: sp.hyp2f1(0.7, 1.3, 2.1, z), ((-0.6, 0.6),), imag=SMALL_IMAG,
                 fn=lambda z: yaad.hyp2f1(0.7, 1.3, 2.1, z)),
    "yn": _c(sp.yn, (POS,), order=1, complex="raises"),
    "boxcox": _c(sp.boxcox, (POS, R), complex="raises"),
    "boxcox1p": _c(sp.boxcox1p, (POS, R), complex="raises"),
    "gammainc": _c(sp.gammainc, (POS, POS), complex="raises"),
    "gammaincc": _c(sp.gammaincc, (POS, POS), complex="raises"),
    "betainc": _c(sp.betainc, (POS, POS, PROB), complex="raises"),
    "stdtr": _c(sp.stdtr, (POS, R), complex="raises"),
    # derivatives of gammainc, betainc in their parameters (values: see test_special.py);
    # the forward oracle is the op's own, second derivatives would be of third order
    "gammainc_da": _c(pd.gammainc_da, (POS, POS), order=1, complex="raises", second="no",
                      fn=ew._gammainc_da),
    "betainc_dab": _c(lambda a, b, x: pd.betainc_dab(1, 0, a, b, x), (POS, POS, PROB),
                      complex="raises", second="no",
                      fn=lambda a, b, x: ew._betainc_dab(1, 0, a, b, x)),
    # binary arithmetic
    "add": _c(np.add, (R, R)), "subtract": _c(np.subtract, (R, R)),
    "multiply": _c(np.multiply, (R, R)), "divide": _c(np.divide, (R, (0.5, 2.0))),
    "power": _c(np.power, (POS, R)), "float_power": _c(np.float_power, (POS, R)),
    "arctan2": _c(np.arctan2, (R, (0.5, 2.0)), complex="raises"),
    "hypot": _c(np.hypot, (R, R), complex="raises"),
    "logaddexp": _c(np.logaddexp, (R, R), complex="raises"),
    "logaddexp2": _c(np.logaddexp2, (R, R), complex="raises"),
    "mod": _c(np.mod, (POS, NEAR_ONE), complex="raises"),
    "fmod": _c(np.fmod, (POS, NEAR_ONE), complex="raises"),
    "floor_divide": _c(np.floor_divide, (POS, NEAR_ONE), complex="raises"),
    "maximum": _c(np.maximum, (R, R), complex="raises"),
    "minimum": _c(np.minimum, (R, R), complex="raises"),
    "fmax": _c(np.fmax, (R, R), complex="raises"),
    "fmin": _c(np.fmin, (R, R), complex="raises"),
    # piecewise constant (zero gradient) and piecewise linear
    "floor": _c(np.floor, complex="raises"), "ceil": _c(np.ceil, complex="raises"),
    "trunc": _c(np.trunc, complex="raises"), "fix": _c(np.fix, complex="raises"),
    "rint": _c(np.rint), "round": _c(np.round),
    "relu": _c(lambda x: np.maximum(x, 0), complex="raises"),
    "softplus": _c(lambda x: np.logaddexp(0, x), complex="raises"),
    # selection
    "where": _c(lambda x, y: np.where(np.real(x) > 0, x, y), (R, R), fn=_where_fn),
    "clip": _c(np.clip, (R, (-1.0, -0.3), (0.3, 1.0)), complex="no", fn=_clip_fn),
}

# Ops without a gradient: forward only, and the result does not require grad.
_F = np.array([-1.5, 0.0, 2.0, np.nan, np.inf, -np.inf])
_G = np.array([-1.5, 1.0, 2.0, 0.0, np.inf, 3.0])
_I = np.array([12, 7, 0, 3, 255, 40])
_J = np.array([8, 21, 5, 2, 3, 6])
_B = np.array([True, False, True, False, True, True])
_Z = np.array([1 + 2j, 3 + 0j, -1j, 0j, 2.5 + 0j, 1 + 1e-20j])
NONDIFF: dict[str, tuple] = {
    "equal": (np.equal, _F, _G), "not_equal": (np.not_equal, _F, _G),
    "less": (np.less, _F, _G), "less_equal": (np.less_equal, _F, _G),
    "greater": (np.greater, _F, _G), "greater_equal": (np.greater_equal, _F, _G),
    "logical_and": (np.logical_and, _B, _B[::-1]), "logical_or": (np.logical_or, _B, _B[::-1]),
    "logical_xor": (np.logical_xor, _B, _B[::-1]), "logical_not": (np.logical_not, _B),
    "isnan": (np.isnan, _F), "isinf": (np.isinf, _F), "isfinite": (np.isfinite, _F),
    "isneginf": (np.isneginf, _F), "isposinf": (np.isposinf, _F),
    "signbit": (np.signbit, _F), "iscomplex": (np.iscomplex, _Z),
    "isreal": (np.isreal, _Z), "isclose": (np.isclose, _F, _G),
    "bitwise_and": (np.bitwise_and, _I, _J), "bitwise_or": (np.bitwise_or, _I, _J),
    "bitwise_xor": (np.bitwise_xor, _I, _J), "invert": (np.invert, _I),
    "left_shift": (np.left_shift, _I, _J % 4), "right_shift": (np.right_shift, _I, _J % 4),
    "heaviside": (np.heaviside, _F, _G), "gcd": (np.gcd, _I, _J), "lcm": (np.lcm, _I, _J),
}

# Shapes that broadcast, by number of differentiable inputs.
SHAPES = {1: ((2, 3),), 2: ((3, 1), (4,)), 3: ((3, 1), (4,), (1,))}


def _elementwise_op_names() -> set:
    """Every elementwise op of yaad: those of ops/elementwise.py and any other op marked
    ``elementwise`` that yaad exports."""
    names = {v.op.name for v in vars(ew).values() if hasattr(v, "op")}
    for name, spec in yaad.registry.items():
        public = getattr(yaad, name, None)
        if spec.elementwise and getattr(public, "op", None) is spec:
            names.add(name)
    return names


def test_table_covers_every_elementwise_op():
    names = _elementwise_op_names()
    covered = set(CASES) | set(NONDIFF)
    assert not names - covered, f"elementwise ops without a test row: {names - covered}"
    assert not covered - names, f"test rows for ops that do not exist: {covered - names}"


def _fn(name: str) -> Callable:
    case = CASES[name]
    fn = case.fn or getattr(yaad, name)
    if case.order is not None:
        return lambda *xs: fn(case.order, *xs)
    return fn


def _ref(name: str) -> Callable:
    case = CASES[name]
    if case.order is not None:
        return lambda *xs: case.ref(case.order, *xs)
    return case.ref


def _inputs(name: str, dtype: Any, seed: int = 0) -> list:
    case = CASES[name]
    rng = np.random.default_rng(seed)
    shapes = SHAPES[len(case.domains)]
    return [random_array(rng, s, dtype, *dom, imag=case.imag)
            for s, dom in zip(shapes, case.domains)]


def _complex_cases(status: str) -> list:
    return [n for n, c in CASES.items() if c.complex == status]


DTYPES = [np.float64, np.float32, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_equals_numpy(name, dtype):
    if np.dtype(dtype).kind == "c" and CASES[name].complex != "yes":
        pytest.skip("not defined on complex input")
    xs = _inputs(name, dtype)
    with np.errstate(all="ignore"):
        expected = _ref(name)(*xs)
        out = _fn(name)(*[yaad.tensor(x, requires_grad=True) for x in xs])
        plain = _fn(name)(*xs)
    assert isinstance(out, yaad.Tensor)
    assert_like_numpy(out, expected)
    assert_like_numpy(plain, expected)  # arrays in, arrays out
    assert isinstance(plain, np.ndarray)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_real(name):
    gradcheck(_fn(name), _inputs(name, np.float64))


@pytest.mark.parametrize("name", sorted(_complex_cases("yes")))
def test_gradient_complex(name):
    # Every input complex, then complex mixed with real (the real input's gradient is real).
    xs = _inputs(name, np.complex128)
    gradcheck(_fn(name), xs)
    if len(xs) > 1:
        gradcheck(_fn(name), [xs[0], _inputs(name, np.float64, seed=1)[1]])


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.second != "no"))
def test_second_derivatives_real(name):
    gradgradcheck(_fn(name), _inputs(name, np.float64))


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items()
                                        if c.complex == "yes" and c.second == "yes"))
def test_second_derivatives_complex(name):
    gradgradcheck(_fn(name), _inputs(name, np.complex128))


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_gradients_stay_float32(name):
    x64 = _inputs(name, np.float64)
    x32 = [x.astype(np.float32) for x in x64]
    grads = {}
    for key, xs in (("f32", x32), ("f64", x64)):
        ts = [yaad.tensor(x, requires_grad=True) for x in xs]
        yaad.sum(yaad.real(_fn(name)(*ts))).backward()  # real: wofz is complex on reals
        grads[key] = [t.grad for t in ts]
    for g32, g64, x in zip(grads["f32"], grads["f64"], x32):
        assert g32.dtype == np.float32 and g32.shape == x.shape
        np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if len(c.domains) == 2))
def test_python_scalar_operands(name):
    fn, ref = _fn(name), _ref(name)
    x, y = (v.reshape(-1)[:3].astype(np.float32) for v in _inputs(name, np.float64))
    sx, sy = float(np.mean(CASES[name].domains[0])), float(np.mean(CASES[name].domains[1]))
    with np.errstate(all="ignore"):
        assert_like_numpy(fn(yaad.tensor(x), sy), ref(x, sy))  # float32 stays float32
        assert_like_numpy(fn(sx, yaad.tensor(y)), ref(sx, y))
    gradcheck(lambda a: fn(a, sy), x.astype(np.float64))
    gradcheck(lambda b: fn(sx, b), y.astype(np.float64))


@pytest.mark.parametrize("name", sorted(_complex_cases("raises")))
def test_real_only_raises_for_complex(name):
    xs = [yaad.tensor(x, requires_grad=True) for x in _inputs(name, np.complex128)]
    try:
        out = _fn(name)(*xs)
    except TypeError as e:  # NumPy/SciPy have no complex loop
        assert name in str(e)
        return
    with pytest.raises(TypeError, match=f"{name}.*complex"):
        yaad.sum(yaad.real(out) if out.dtype.kind == "c" else out).backward()


@pytest.mark.parametrize("name", sorted(NONDIFF))
def test_nondifferentiable_ops(name):
    ref, *args = NONDIFF[name]
    ts = [yaad.tensor(a, requires_grad=a.dtype.kind in "fc") for a in args]
    with np.errstate(all="ignore"):
        out = getattr(yaad, name)(*ts)
        expected = ref(*args)
    assert_like_numpy(out, expected)
    assert not out.requires_grad


# ---- documented subgradients and strong zeros -----------------------------------------


def _grad(f, *values):
    ts = [yaad.tensor(np.asarray(v, dtype=float), requires_grad=True) for v in values]
    yaad.sum(f(*ts)).backward()
    return [t.grad for t in ts]


def test_abs_at_zero_has_zero_gradient():
    (g,) = _grad(yaad.abs, [0.0, -2.0, 3.0])
    np.testing.assert_array_equal(g, [0.0, -1.0, 1.0])
    z = yaad.tensor(np.array([0j, 3 + 4j]), requires_grad=True)
    yaad.sum(yaad.abs(z)).backward()
    np.testing.assert_allclose(z.grad, [0, 0.6 + 0.8j])


def test_maximum_minimum_ties_split_evenly():
    for f in (yaad.maximum, yaad.minimum, yaad.fmax, yaad.fmin):
        gx, gy = _grad(f, [1.0, 2.0, 3.0], [1.0, 0.0, 5.0])
        big = f is yaad.maximum or f is yaad.fmax
        np.testing.assert_array_equal(gx, [0.5, 1.0 if big else 0.0, 0.0 if big else 1.0])
        np.testing.assert_array_equal(gx + gy, [1.0, 1.0, 1.0])


def test_fmax_fmin_ignore_nan():
    gx, gy = _grad(yaad.fmax, [np.nan, 1.0], [2.0, np.nan])
    np.testing.assert_array_equal(gx, [0.0, 1.0])
    np.testing.assert_array_equal(gy, [1.0, 0.0])


def test_relu_at_zero_has_zero_gradient():
    (g,) = _grad(yaad.relu, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])


@pytest.mark.parametrize("f", [yaad.floor, yaad.ceil, yaad.trunc, yaad.rint, yaad.round,
                               yaad.fix, yaad.sign])
def test_piecewise_constant_functions_have_zero_gradient(f):
    (g,) = _grad(f, [-1.5, -1.0, 0.0, 0.5, 2.0, 2.7])
    np.testing.assert_array_equal(g, np.zeros(6))


def test_round_with_decimals():
    x = yaad.tensor(np.array([1.2345, -2.5678]), requires_grad=True)
    y = yaad.round(x, 2)
    assert_like_numpy(y, np.round(x.data, 2))
    yaad.sum(y).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0])


def test_clip_gradient_goes_to_the_active_bound():
    x = yaad.tensor(np.array([-2.0, 0.0, 2.0]), requires_grad=True)
    lo = yaad.tensor(np.array(-1.0), requires_grad=True)
    hi = yaad.tensor(np.array(1.0), requires_grad=True)
    yaad.sum(yaad.clip(x, lo, hi) * np.array([1.0, 2.0, 3.0])).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 2.0, 0.0])
    assert lo.grad == 1.0 and hi.grad == 3.0


@pytest.mark.parametrize("branch, expected", [
    (lambda x: yaad.log(x), [0.0, 0.0, 0.5]),
    (lambda x: yaad.sqrt(x), [0.0, 0.0, 0.5 / np.sqrt(2.0)]),
    (lambda x: 1 / x, [0.0, 0.0, -0.25]),
    (lambda x: yaad.log(x) * yaad.sqrt(x) + yaad.exp(yaad.log(x)), None),
])
def test_where_ignores_nan_and_inf_in_the_branch_not_taken(branch, expected):
    x = yaad.tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    with np.errstate(all="ignore"):
        y = yaad.where(x > 0, branch(x), 0.0)
        yaad.sum(y).backward()
    assert np.all(np.isfinite(x.grad))
    assert x.grad[0] == 0.0 and x.grad[1] == 0.0
    if expected is not None:
        np.testing.assert_allclose(x.grad, expected)


def test_where_strong_zero_in_second_derivatives():
    x = yaad.tensor(np.array([-1.0, 4.0]), requires_grad=True)
    with np.errstate(all="ignore"):
        y = yaad.sum(yaad.where(x > 0, yaad.sqrt(x) ** 3, 0.0))
        (g,) = yaad.autograd.grad(y, [x], create_graph=True)
        (h,) = yaad.autograd.grad(yaad.sum(g), [x])
    np.testing.assert_allclose(g.data, [0.0, 1.5 * 2.0])
    np.testing.assert_allclose(h, [0.0, 0.75 / 2.0])


def test_where_strong_zero_under_vmap_batches():
    # Hessians per example through where, with a NaN in the branch not taken: the strong
    # zeros of the inner create_graph pass run on the whole batch (a per-example loop would
    # warn), with the values of the test above
    f = lambda x: yaad.sum(yaad.where(x > 0, yaad.sqrt(x) ** 3, 0.0))  # noqa: E731
    xs = yaad.tensor(np.array([[-1.0, 4.0], [4.0, -1.0]]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        h = yaad.func.vmap(yaad.func.hessian(f))(xs)
    np.testing.assert_allclose(h.data, [[[0.0, 0.0], [0.0, 0.375]],
                                        [[0.375, 0.0], [0.0, 0.0]]])


def test_complex_conventions():
    # |z|^2 at 3+4j gives 6+8j; the holomorphic exp gives g * conj(exp(z)).
    z = yaad.tensor(np.array([3 + 4j]), requires_grad=True)
    yaad.sum(yaad.abs(z) ** 2).backward()
    np.testing.assert_allclose(z.grad, [6 + 8j])
    z = yaad.tensor(np.array([0.5 + 0.25j]), requires_grad=True)
    yaad.sum(yaad.real(yaad.exp(z))).backward()
    np.testing.assert_allclose(z.grad, np.conj(np.exp(z.data)))
    # imag: d Im(z) / dy = 1, so the gradient is 1j; angle: i z / |z|^2.
    z = yaad.tensor(np.array([1.0 + 1.0j]), requires_grad=True)
    yaad.sum(yaad.imag(z) + yaad.angle(z)).backward()
    np.testing.assert_allclose(z.grad, [1j + 1j * (1 + 1j) / 2])


def test_xlogy_gradient_in_x_at_zero_matches_torch():
    # d/dx x log(y) = log(y), also at x = 0 (a parameter such as (a - 1) log x at a = 1);
    # 0 only where log(y) is undefined, as in PyTorch.
    import torch

    x0, y0 = np.array([0.0, 0.0, 1.0, 0.0, 0.0]), np.array([2.0, 0.0, 3.0, -1.0, 0.5])
    for name, shift in (("xlogy", 0.0), ("xlog1py", -1.0)):
        x = yaad.tensor(x0, requires_grad=True)
        y = yaad.tensor(y0 + shift, requires_grad=True)
        with np.errstate(all="ignore"):
            getattr(yaad, name)(x, y).sum().backward()
        xt = torch.tensor(x0, requires_grad=True)
        yt = torch.tensor(y0 + shift, requires_grad=True)
        ft = torch.xlogy if name == "xlogy" else torch.special.xlog1py
        ft(xt, yt).sum().backward()
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-15)
        np.testing.assert_allclose(y.grad, yt.grad.numpy(), rtol=1e-15)
