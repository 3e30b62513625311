"""The rows of yaad's elementwise ops: one :class:`Row` an op.

Every registry-driven suite reads it:

- ``test_elementwise.py``: forward against the row's NumPy/SciPy oracle, gradients and
  second derivatives against finite differences, dtypes, broadcasting, Python scalars,
  complex input that raises;
- ``CASES`` (each row made a :class:`Case` by ``row_case``; hence ``test_fuzz_ops.py``,
  ``test_vmap_ops.py``, ``test_gradient_semantics.py``, ``test_numpy_coverage.py``):
  hypothesis draws calls in the row's domains and compares with the oracle and finite
  differences;
- ``test_registry_second_order.py``: forward mode, HIPS autograd's order-2 protocol and
  JAX, at inputs drawn from the same domains (``from_row``).

An elementwise op without a row fails ``test_elementwise.py::
test_table_covers_every_elementwise_op`` (and the registry checks of the other suites): a
new elementwise op needs its source row in ``yaad/ops/elementwise.py`` and one row here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import hypothesis.extra.numpy as npst
import numpy as np
import scipy.special as sp
from hypothesis import strategies as st

from tests.op_cases import fixed
from tests.op_cases.fixed import cases, on_interval, real
from tests.op_cases.table import CASES, Case, Second, case, other_dtype
from tests.support.strategies import (
    ALL,
    ANY,
    C128,
    F64,
    GT1,
    HALVES,
    INTS,
    NONINT,
    NONZERO,
    POS,
    PROB,
    REAL,
    RIGHT,
    SMALL,
    UNIT,
    Call,
    Domain,
    Ints,
    broadcastable_shapes,
    elements,
    shapes,
    special_values,
    values,
)
from yaad.ops import parameter_derivatives as pd

# ---- the row --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One differentiable elementwise op.

    ref: the NumPy/SciPy oracle, called as the op is. domains: where each differentiable
    input is drawn (real inputs: the real intervals; complex inputs: ``cdomains`` when
    given, else ``domains``, real and imaginary parts). complex: "yes" (forward and
    gradients checked on complex input), "raises" (a complex gradient raises TypeError, at
    the forward if NumPy refuses complex input) or "no" (not tested on complex). grad:
    "smooth" or "zero" (piecewise constant). second: "yes", "real" (second derivatives on
    real input only) or "no". params: fixed arguments before the inputs (polygamma's n)
    and ``after``: fixed ones after them; ``fuzz_params``: what the fuzzer draws for
    ``params`` instead (a :class:`Domain` for float arrays, :class:`Ints` for integer
    arrays). ok(call): False for inputs too close to a kink for finite differences.
    scalars: the fuzzer also passes a Python scalar operand (two inputs). path: the yaad
    function, when not ``yaad.<name>``. jax: JAX's function when it is not ``jnp.<name>``
    or ``jax.scipy.special.<name>`` (a dotted name, or a function of JAX arrays);
    no_jax / jax_real_only: why JAX has none, or none for complex input; jax_skip: {case
    index: why JAX gets that second-order case wrong}; jax_only_in: (the input positions
    JAX differentiates, why). cases(fn) (tests/op_cases/fixed.py): the second-order cases
    instead of the ones drawn from the domains; more_cases(fn): cases after them.
    zero_on_real: why the derivative is 0 at every real input (when grad is "smooth").
    exact: the forward equals the oracle bit for bit. note: for the reader.
    """

    ref: Callable
    domains: tuple = (ANY,)
    cdomains: tuple | None = None
    complex: str = "yes"
    grad: str = "smooth"
    second: str = "yes"
    params: tuple = ()
    after: tuple = ()
    fuzz_params: tuple | None = None
    ok: Callable | None = None
    scalars: bool = True
    path: str | None = None
    jax: str | Callable | None = None
    no_jax: str = ""
    jax_real_only: str = ""
    jax_skip: dict | None = None
    jax_only_in: tuple | None = None
    cases: Callable | None = None
    more_cases: Callable | None = None
    zero_on_real: str = ""
    exact: bool = True
    note: str = ""

    def domain(self, k: int, dtype: Any) -> Domain:
        """Where input ``k`` of ``dtype`` is drawn."""
        if np.dtype(dtype).kind == "c" and self.cdomains is not None:
            return self.cdomains[k]
        return self.domains[k]


def r(ref: Callable, *domains: Domain, **kw: Any) -> Row:
    return Row(ref, domains or (ANY,), **kw)


def _away_from_zero(call: Call) -> bool:
    return bool(np.all(np.abs(call.args[0]) > 0.05))


def _bessel_ok(call: Call) -> bool:
    # scipy's iv(2, x) is nan at x ~ 2.2e-308, so i1's gradient is too (reported)
    x = call.args[-1]
    return bool(np.all((np.abs(x) > 1e-100) | (x == 0)))


def _broadcast(*arrays: Any) -> list:
    return np.broadcast_arrays(*[np.asarray(a) for a in arrays])


def _apart(call: Call) -> bool:
    """The two inputs are equal or at least 0.02 apart (kinks of max/min)."""
    x, y = _broadcast(*call.args[:2])
    d = np.abs(x - y)
    return bool(np.all((d == 0) | (d > 0.02)))


def _ratio_not_integer(call: Call) -> bool:
    x, y = _broadcast(*call.args[:2])
    with np.errstate(all="ignore"):
        q = x / y
    return bool(np.all(np.abs(q - np.round(q)) > 0.02))


def _off_the_cut(call: Call) -> bool:  # arctan2's cut: y = 0, x < 0
    return bool(np.all(np.abs(np.add(*_broadcast(call.args[0], 0 * call.args[1]))) > 0.02))


def _clip_ok(call: Call) -> bool:
    x = np.asarray(call.args[0])
    return all(b is None or bool(np.all(np.abs(np.subtract(*_broadcast(x, b))) > 0.02))
               for b in call.args[1:])


def _jax_sign(x: Any) -> Any:  # complex: z / |z|, differentiable (JAX's sign has a zero derivative)
    import jax.numpy as jnp

    return x / jnp.abs(x) if jnp.iscomplexobj(x) else jnp.sign(x)


def _jax_erfcinv(x: Any) -> Any:
    import jax.scipy.special as jsp

    return jsp.erfinv(1 - x)


def _jax_rgamma(x: Any) -> Any:  # JAX has no rgamma
    import jax.scipy.special as jsp

    return 1 / jsp.gamma(x)


_NO_BESSEL = "jax.scipy.special has no {}"
_JAX_NAN_BELOW_1 = "JAX's second derivative of {} is NaN for x <= 1 (JAX 0.10)"
_JAX_NO_IGAMMA_A = "JAX has no second derivative in a (igamma_grad_a has no rule)"
_REAL_ONLY = "jax.scipy.special.{} is real only"
COND = np.array([[True], [False], [True]])  # where's condition: broadcasts with SHAPES

ELEMENTWISE: dict[str, Row] = {
    # trigonometric and hyperbolic
    "sin": r(np.sin), "cos": r(np.cos),
    "tan": r(np.tan, Domain(real=((-1.2, 1.2),)), cdomains=(SMALL,)),
    "arcsin": r(np.arcsin, UNIT), "arccos": r(np.arccos, UNIT),
    "arctan": r(np.arctan, ANY, cdomains=(UNIT,)),
    "sinh": r(np.sinh), "cosh": r(np.cosh), "tanh": r(np.tanh, ANY, cdomains=(SMALL,)),
    "arcsinh": r(np.arcsinh, ANY, cdomains=(UNIT,)), "arccosh": r(np.arccosh, GT1),
    "arctanh": r(np.arctanh, UNIT),
    # exponentials and logarithms
    "exp": r(np.exp), "exp2": r(np.exp2), "expm1": r(np.expm1),
    "log": r(np.log, POS, cdomains=(RIGHT,)), "log2": r(np.log2, POS, cdomains=(RIGHT,)),
    "log10": r(np.log10, POS, cdomains=(RIGHT,)),
    "log1p": r(np.log1p, Domain(real=((-0.7, 3.0),)), cdomains=(RIGHT,)),
    # powers and simple maps
    "sqrt": r(np.sqrt, POS, cdomains=(RIGHT,)), "cbrt": r(np.cbrt, NONZERO, complex="raises"),
    "square": r(np.square), "reciprocal": r(np.reciprocal, NONZERO),
    "negative": r(np.negative), "positive": r(np.positive),
    "deg2rad": r(np.deg2rad, complex="raises"), "rad2deg": r(np.rad2deg, complex="raises"),
    "radians": r(np.radians, complex="raises"), "degrees": r(np.degrees, complex="raises"),
    "sinc": r(np.sinc, ANY, cdomains=(SMALL,)),
    "absolute": r(np.abs, NONZERO, ok=_away_from_zero),
    "sign": r(np.sign, NONZERO, ok=_away_from_zero, jax=_jax_sign,
              zero_on_real="piecewise constant",
              note="real: zero gradient; complex: sgn(z) = z/|z|, differentiable away from 0"),
    "angle": r(np.angle, NONZERO, cdomains=(RIGHT,),
               zero_on_real="the angle of a real number is piecewise constant",
               note="complex: away from the cut on the negative axis"),
    "real": r(np.real),
    "imag": r(np.imag, zero_on_real="the imaginary part of a real number is 0"),
    "conjugate": r(np.conj, jax="jax.numpy.conj"),
    # special functions
    "erf": r(sp.erf, ANY, cdomains=(SMALL,), jax_real_only=_REAL_ONLY.format("erf")),
    "erfc": r(sp.erfc, ANY, cdomains=(SMALL,), jax_real_only=_REAL_ONLY.format("erfc")),
    "erfcx": r(sp.erfcx, ANY, cdomains=(SMALL,), jax_real_only=_REAL_ONLY.format("erfcx")),
    "erfinv": r(sp.erfinv, UNIT, complex="raises"),
    "erfcinv": r(sp.erfcinv, Domain(real=((0.15, 1.85),)), complex="raises", jax=_jax_erfcinv),
    "gamma": r(sp.gamma, Domain(real=((0.5, 3.0),)), cdomains=(RIGHT,), second="real",
               jax_real_only=_REAL_ONLY.format("gamma")),
    "gammaln": r(sp.gammaln, POS, complex="raises"),
    "digamma": r(sp.digamma, POS, complex="raises",
                 note="complex: the gradient needs polygamma(1, z), which SciPy lacks for "
                      "complex"),
    "polygamma": r(sp.polygamma, POS, complex="raises", params=(1,), fuzz_params=(Ints(0, 2),)),
    "beta": r(sp.beta, POS, POS, complex="raises", scalars=False),
    "betaln": r(sp.betaln, POS, POS, complex="raises", scalars=False),
    "expit": r(sp.expit, complex="raises", jax="jax.scipy.special.expit"),
    "logit": r(sp.logit, Domain(real=((0.1, 0.9),)), complex="raises",
               jax="jax.scipy.special.logit"),
    "xlogy": r(sp.xlogy, NONZERO, POS, cdomains=(NONZERO, RIGHT),
               note="at x == 0 the x-gradient is 0 (PyTorch's choice), not log(y)"),
    "xlog1py": r(sp.xlog1py, NONZERO, POS, cdomains=(NONZERO, RIGHT)),
    "jv": r(sp.jv, POS, cdomains=(RIGHT,), params=(1.5,), fuzz_params=(Ints(0, 3),),
            no_jax=_NO_BESSEL.format("jv")),
    "yv": r(sp.yv, POS, cdomains=(RIGHT,), params=(1.5,), fuzz_params=(Ints(0, 3),),
            no_jax=_NO_BESSEL.format("yv")),
    "iv": r(sp.iv, POS, cdomains=(RIGHT,), params=(1.5,), fuzz_params=(Ints(0, 3),),
            no_jax=_NO_BESSEL.format("iv")),
    "ive": r(sp.ive, POS, complex="raises", params=(1.5,), fuzz_params=(Ints(0, 3),),
             no_jax=_NO_BESSEL.format("ive")),
    "yn": r(sp.yn, POS, complex="raises", params=(1,), fuzz_params=(Ints(0, 3),),
            no_jax=_NO_BESSEL.format("yn")),
    "j0": r(sp.j0, complex="raises", ok=_bessel_ok, no_jax=_NO_BESSEL.format("j0")),
    "j1": r(sp.j1, complex="raises", ok=_bessel_ok, no_jax=_NO_BESSEL.format("j1")),
    "y0": r(sp.y0, POS, complex="raises", no_jax=_NO_BESSEL.format("y0")),
    "y1": r(sp.y1, POS, complex="raises", no_jax=_NO_BESSEL.format("y1")),
    "i0": r(sp.i0, complex="raises", ok=_bessel_ok),
    "i1": r(sp.i1, complex="raises", ok=_bessel_ok),
    "i0e": r(sp.i0e, NONZERO, complex="raises"),  # exp(-|x|) has a kink at 0
    "i1e": r(sp.i1e, NONZERO, complex="raises"),
    "ndtr": r(sp.ndtr, ANY, cdomains=(SMALL,), jax_real_only=_REAL_ONLY.format("ndtr")),
    "log_ndtr": r(sp.log_ndtr, Domain(real=((-4.0, 4.0),)), cdomains=(SMALL,),
                  jax_real_only=_REAL_ONLY.format("log_ndtr")),
    "ndtri": r(sp.ndtri, PROB, complex="raises"),
    "log_expit": r(sp.log_expit, complex="raises", jax="jax.nn.log_sigmoid"),
    "rgamma": r(sp.rgamma, POS, cdomains=(RIGHT,), second="real", jax=_jax_rgamma,
                jax_real_only=_REAL_ONLY.format("gamma")),
    "loggamma": r(sp.loggamma, POS, cdomains=(RIGHT,), second="real"),
    "gammasgn": r(sp.gammasgn, NONINT, complex="raises", grad="zero"),
    "multigammaln": r(sp.multigammaln, Domain(real=((1.5, 3.0),)), complex="no", after=(3,)),
    "factorial": r(lambda n: sp.factorial(n, exact=False), POS, complex="no"),
    "poch": r(sp.poch, POS, POS, complex="raises", scalars=False),
    "entr": r(sp.entr, POS, complex="raises"),
    "rel_entr": r(sp.rel_entr, POS, POS, complex="raises"),
    "kl_div": r(sp.kl_div, POS, POS, complex="raises"),
    # (exp1, expn, spence: their first second-order case draws from both sides of 1, the
    # last, from one side: where JAX's derivatives hold)
    "exp1": r(sp.exp1, POS, cdomains=(RIGHT,), jax_real_only=_REAL_ONLY.format("exp1"),
              more_cases=on_interval(1.1, 2), jax_skip={0: _JAX_NAN_BELOW_1.format("exp1")}),
    "expi": r(sp.expi, POS, cdomains=(RIGHT,), jax_real_only=_REAL_ONLY.format("expi")),
    "expn": r(sp.expn, POS, complex="raises", params=(1,), fuzz_params=(Ints(0, 3),),
              more_cases=lambda fn: cases((lambda x: fn(1, x), (real(2, 3, lo=1.1, hi=2),))),
              jax_skip={0: _JAX_NAN_BELOW_1.format("expn(1, x)")}),
    "spence": r(sp.spence, POS, cdomains=(RIGHT,), jax_real_only=_REAL_ONLY.format("spence"),
                more_cases=on_interval(0.3, 0.9),
                jax_skip={0: "JAX's derivative of spence is NaN for x > 1 and 0 at x = 1 "
                             "(JAX 0.10)"}),
    "zeta": r(sp.zeta, POS, complex="raises", params=(2.5,),
              fuzz_params=(Domain(real=((1.5, 4.0),)),)),
    "dawsn": r(sp.dawsn, ANY, cdomains=(SMALL,), jax_real_only=_REAL_ONLY.format("dawsn")),
    "wofz": r(sp.wofz, ANY, cdomains=(SMALL,)),
    "owens_t": r(sp.owens_t, ANY, ANY, complex="raises"),
    "hyp1f1": r(sp.hyp1f1, ANY, cdomains=(SMALL,), params=(0.7, 1.3), fuzz_params=(POS, POS),
                no_jax="JAX's hyp1f1 has no reverse mode (a while_loop) and is real only"),
    "hyp2f1": r(sp.hyp2f1, Domain(real=((-0.6, 0.6),)),
                cdomains=(Domain(real=((-0.6, 0.6),), imag=((-0.5, 0.5),)),),
                params=(0.7, 1.3, 2.1), fuzz_params=(POS, POS, Domain(real=((0.5, 3.0),))),
                no_jax="JAX's hyp2f1 has no reverse mode (a while_loop) and is real only"),
    "boxcox": r(sp.boxcox, POS, ANY, complex="raises", scalars=False),
    "boxcox1p": r(sp.boxcox1p, POS, ANY, complex="raises", scalars=False),
    "gammainc": r(sp.gammainc, POS, POS, complex="raises", scalars=False,
                  jax_only_in=((1,), _JAX_NO_IGAMMA_A)),
    "gammaincc": r(sp.gammaincc, POS, POS, complex="raises", scalars=False,
                   jax_only_in=((1,), _JAX_NO_IGAMMA_A)),
    "betainc": r(sp.betainc, POS, POS, PROB, complex="raises",
                 jax_only_in=((2,), "JAX's betainc has no derivative in a and b")),
    "stdtr": r(sp.stdtr, POS, ANY, complex="raises",
               no_jax="jax.scipy has no stdtr (jax.scipy.stats.t has no cdf)"),
    # the derivatives of gammainc and betainc in their parameters (values: test_special.py,
    # against mpmath); the forward oracle is the op's own, second derivatives would be of
    # third order (so the second-order cases differentiate in x only)
    "gammainc_da": r(pd.gammainc_da, POS, POS, complex="raises", second="no", params=(1,),
                     path="ops.elementwise._gammainc_da", exact=False,
                     no_jax="a helper of gammainc's rule (its derivatives in a); JAX has "
                            "none public",
                     cases=lambda fn: cases((lambda x: fn(1, np.array([0.7, 1.5, 2.5]), x),
                                             (real(2, 3, lo=0.5, hi=2),)))),
    "betainc_dab": r(pd.betainc_dab, POS, POS, PROB, complex="raises", second="no",
                     params=(1, 0), path="ops.elementwise._betainc_dab", exact=False,
                     no_jax="a helper of betainc's rule (its derivatives in a, b); JAX has "
                            "none public",
                     cases=lambda fn: cases(
                         (lambda x: fn(1, 0, 1.5, np.array([0.7, 1.5, 2.5]), x),
                          (real(2, 3, lo=0.1, hi=0.9),)))),
    # binary arithmetic
    "add": r(np.add, ANY, ANY), "subtract": r(np.subtract, ANY, ANY),
    "multiply": r(np.multiply, ANY, ANY), "divide": r(np.divide, ANY, NONZERO),
    "power": r(np.power, POS, ANY, cdomains=(RIGHT, SMALL),  # (and a Python int exponent)
               more_cases=lambda fn: cases((lambda x: fn(x, 3), (real(2, 3),)))),
    "float_power": r(np.float_power, POS, ANY, cdomains=(RIGHT, SMALL)),
    "arctan2": r(np.arctan2, ANY, NONZERO, complex="raises", ok=_off_the_cut),
    "hypot": r(np.hypot, NONZERO, NONZERO, complex="raises"),
    "logaddexp": r(np.logaddexp, ANY, ANY, complex="raises"),
    "logaddexp2": r(np.logaddexp2, ANY, ANY, complex="raises"),
    "mod": r(np.mod, ANY, NONZERO, complex="raises", ok=_ratio_not_integer),
    "fmod": r(np.fmod, ANY, NONZERO, complex="raises", ok=_ratio_not_integer),
    "floor_divide": r(np.floor_divide, ANY, NONZERO, complex="raises", grad="zero",
                      ok=_ratio_not_integer),
    "maximum": r(np.maximum, ANY, ANY, complex="raises", ok=_apart),
    "minimum": r(np.minimum, ANY, ANY, complex="raises", ok=_apart),
    "copysign": r(np.copysign, NONZERO, NONZERO, complex="raises"),
    # x1 moved by one ulp towards x2: slope 1 in x1, 0 in x2 (PyTorch: not implemented)
    "nextafter": r(np.nextafter, ANY, ANY, complex="raises",
                   no_jax="jax.numpy.nextafter has no differentiation rule"),
    "fmax": r(np.fmax, ANY, ANY, complex="raises", ok=_apart),
    "fmin": r(np.fmin, ANY, ANY, complex="raises", ok=_apart),
    # piecewise constant (zero gradient) and piecewise linear
    "floor": r(np.floor, NONINT, complex="raises", grad="zero"),
    "ceil": r(np.ceil, NONINT, complex="raises", grad="zero"),
    "trunc": r(np.trunc, NONINT, complex="raises", grad="zero"),
    # a step in x1 (slope 0 away from 0); x2 where x1 == 0 (tests/ops/test_elementwise.py
    # checks that slope at x1 == 0)
    "heaviside": r(np.heaviside, NONZERO, ANY, complex="raises",
                   zero_on_real="a step in x1: its slope is 0 away from x1 == 0"),
    "fix": r(np.fix, NONINT, complex="raises", grad="zero", jax="jax.numpy.trunc"),
    "rint": r(np.rint, Domain(real=HALVES, imag=HALVES[1:-1]), grad="zero"),
    "round": r(np.round, Domain(real=((0.11, 0.14),), imag=((0.21, 0.24),)), grad="zero",
               after=(1,)),
    "relu": r(lambda x: np.maximum(x, 0), NONZERO, complex="raises", jax="jax.nn.relu"),
    "softplus": r(lambda x: np.logaddexp(0, x), complex="raises", jax="jax.nn.softplus"),
    # selection
    "where": r(np.where, ANY, ANY, params=(COND,)),
    "clip": r(np.clip, ANY, Domain(real=((-1.0, -0.3),)), Domain(real=((0.3, 1.0),)),
              complex="no", ok=_clip_ok),
}

# Elementwise ops without a gradient: forward only, and the result does not require grad.
_F = np.array([-1.5, 0.0, 2.0, np.nan, np.inf, -np.inf])
_G = np.array([-1.5, 1.0, 2.0, 0.0, np.inf, 3.0])
_I = np.array([12, 7, 0, 3, 255, 40])
_J = np.array([8, 21, 5, 2, 3, 6])
_B = np.array([True, False, True, False, True, True])
_Z = np.array([1 + 2j, 3 + 0j, -1j, 0j, 2.5 + 0j, 1 + 1e-20j])


@dataclass(frozen=True)
class NoGradient:
    """An elementwise op whose result carries no gradient: its oracle, fixed arguments
    (``args``), the dtypes the fuzzer draws (``kinds``), and why it has no gradient."""

    ref: Callable
    args: tuple
    kinds: tuple = ALL
    why: str = "boolean output"


def _bits(ref: Callable, *args: np.ndarray) -> NoGradient:
    return NoGradient(ref, args, INTS, "integer inputs")


NO_GRADIENT: dict[str, NoGradient] = {
    **{name: NoGradient(getattr(np, name), (_F, _G)) for name in (
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isclose")},
    **{name: NoGradient(getattr(np, name), (_B, _B[::-1])) for name in (
        "logical_and", "logical_or", "logical_xor")},
    "logical_not": NoGradient(np.logical_not, (_B,)),
    **{name: NoGradient(getattr(np, name), (_F,)) for name in ("isnan", "isinf", "isfinite")},
    **{name: NoGradient(getattr(np, name), (_F,), REAL) for name in (
        "isneginf", "isposinf", "signbit")},
    "iscomplex": NoGradient(np.iscomplex, (_Z,)), "isreal": NoGradient(np.isreal, (_Z,)),
    **{name: _bits(getattr(np, name), _I, _J) for name in (
        "bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm")},
    "left_shift": _bits(np.left_shift, _I, _J % 4),
    "right_shift": _bits(np.right_shift, _I, _J % 4),
    "invert": NoGradient(np.invert, (_I,), INTS + (np.dtype(bool),), "integer inputs"),
}

# ---- inputs at fixed points (the suites that are not hypothesis-driven) --------------------

# Shapes that broadcast, by number of differentiable inputs.
SHAPES = {1: ((2, 3),), 2: ((3, 1), (4,)), 3: ((3, 1), (4,), (1,))}


def _uniform(rng: np.random.Generator, intervals: tuple, shape: tuple) -> np.ndarray:
    """Uniform in a union of intervals: an interval at random for each entry."""
    bounds = np.array(intervals, dtype=float)
    pick = rng.integers(0, len(bounds), shape)
    return rng.uniform(bounds[pick, 0], bounds[pick, 1])


def row_inputs(row: Row, dtype: Any, rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs of ``dtype`` for ``row``'s op, in its domains (redrawn until ``row.ok``)."""
    dtype = np.dtype(dtype)
    shapes = SHAPES[len(row.domains)]
    for _ in range(100):
        xs = []
        for k, shape in enumerate(shapes):
            d = row.domain(k, dtype)
            x = _uniform(rng, d.real, shape)
            if dtype.kind == "c":
                x = x + 1j * _uniform(rng, d.imag, shape)
            xs.append(np.asarray(x, dtype=dtype))
        if row.ok is None or row.ok(Call((*row.params, *xs, *row.after))):
            return xs
    raise AssertionError(f"no inputs in the domain pass ok(): {row}")


def row_function(row: Row, fn: Callable) -> Callable:
    """``fn`` (the op, or an oracle called as the op is) as a function of the inputs."""
    if not row.params and not row.after:
        return fn
    return lambda *xs: fn(*row.params, *xs, *row.after)


# ---- the fuzz table's rows (tests/op_cases/table.py: Case) --------------------------------


def _dom(dtype, dom: Domain, cdom: Domain | None) -> Domain:
    return (cdom or dom) if np.dtype(dtype).kind == "c" else dom


def unary(path, ref, dom=ANY, cdom=None, real_only=False, grad="smooth", ok=None,
          shape=None, **kw):
    """An elementwise function of one array."""
    shape = shape or shapes()

    def draw(data, dtype):
        s = data.draw(shape)
        return Call((data.draw(values(dtype, s, _dom(dtype, dom, cdom))),))

    return case(path, ref, draw, dtypes=REAL if real_only else ALL, grad=grad, ok=ok, **kw)


def nondiff(path, ref, nin=1, kinds=ALL, special=True, why=""):
    """A function whose result carries no gradient (comparisons, tests, bit operations):
    ``why``."""

    def draw(data, dtype):
        s = data.draw(broadcastable_shapes(nin))
        if np.dtype(dtype).kind in "fc" and special:
            return Call(tuple(data.draw(special_values(dtype, sh)) for sh in s))
        dom = Domain(real=((0, 7),)) if np.dtype(dtype).kind in "iu" else ANY
        return Call(tuple(data.draw(values(dtype, sh, dom)) for sh in s))

    return case(path, ref, draw, dtypes=kinds, grad="none", no_rule={path: why})


# ---- elementwise: one row an op --------------------------------------------------------


def _drawn_params(data, row: Row, shapes_: tuple) -> tuple:
    """The arguments before the inputs: drawn (``row.fuzz_params``) or fixed."""
    if row.fuzz_params is None:
        return row.params
    out = []
    for p, s in zip(row.fuzz_params, shapes_):
        if isinstance(p, Ints):
            out.append(data.draw(npst.arrays(np.int64, s, elements=st.integers(p.lo, p.hi))))
        else:
            out.append(data.draw(values(F64, s, p)))
    return tuple(out)


def elementwise_draw(row: Row) -> Callable:
    """Draw a call of ``row``'s op: inputs in its domains, broadcast shapes (0-d and 0-size
    ones included); with two inputs, sometimes of another float dtype (NumPy's promotion)
    or a Python scalar (NumPy 2 never upcasts for it)."""
    n, nparams = len(row.domains), len(row.params)

    def draw(data, dtype):
        if n == 1 and not nparams:
            shs = (data.draw(shapes()),)
        else:
            shs = data.draw(broadcastable_shapes(nparams + n))
        params = _drawn_params(data, row, shs[:nparams])
        dts = [dtype] * n
        if n == 2:
            dts[1] = other_dtype(data, dtype, row.complex != "yes")
        arrs = [data.draw(values(dt, sh, row.domain(k, dt)))
                for k, (dt, sh) in enumerate(zip(dts, shs[nparams:]))]
        k = data.draw(st.integers(0, 5)) if n == 2 and row.scalars else 5
        if k < 2:  # a Python scalar operand
            kind = C128 if np.dtype(dtype).kind == "c" else F64
            arrs[k] = data.draw(elements(kind, row.domain(k, kind)))
        return Call((*params, *arrs, *row.after))

    return draw


def _draw_multigammaln(data, dtype):
    d = data.draw(st.integers(1, 4))
    a = data.draw(values(dtype, data.draw(shapes()), Domain(real=((0.5 * d + 0.2, 4.0),))))
    return Call((a, d))


def _draw_betainc(data, dtype):
    sa, sb, sx = data.draw(broadcastable_shapes(3))
    return Call((data.draw(values(dtype, sa, POS)), data.draw(values(dtype, sb, POS)),
                 data.draw(values(dtype, sx, PROB))))


def _draw_gammainc_da(data, dtype):
    sa, sx = data.draw(broadcastable_shapes(2))
    return Call((1, data.draw(values(dtype, sa, POS)), data.draw(values(dtype, sx, POS))))


def _draw_betainc_dab(data, dtype):
    i = data.draw(st.integers(0, 1))
    return Call((i, 1 - i) + _draw_betainc(data, dtype).args)


def _draw_round(data, dtype):
    x = data.draw(values(dtype, data.draw(shapes()), SMALL))
    return Call((x,), {"decimals": data.draw(st.integers(0, 2))})


def _round_ok(call):
    x, d = call.args[0], call.kwargs.get("decimals", 0)
    t = np.abs(np.concatenate([np.ravel(x.real), np.ravel(x.imag)])) * 10.0 ** d
    return bool(np.all(np.abs(t - np.floor(t) - 0.5) > 0.02))


def _draw_clip(data, dtype):
    sx, slo, shi = data.draw(broadcastable_shapes(3))
    x = data.draw(values(dtype, sx))
    kind = data.draw(st.sampled_from(["arrays", "scalars", "lo", "hi"]))
    if kind == "arrays":
        lo = data.draw(values(dtype, slo, Domain(real=((-2.0, -0.1),))))
        hi = data.draw(values(dtype, shi, Domain(real=((0.1, 2.0),))))
    else:
        lo = None if kind == "hi" else data.draw(st.floats(-2, -0.1))
        hi = None if kind == "lo" else data.draw(st.floats(0.1, 2))
    return Call((x, lo, hi))


def _draw_where(data, dtype):
    sc, sx, sy = data.draw(broadcastable_shapes(3))
    cond = data.draw(npst.arrays(np.bool_, sc))
    x = data.draw(values(dtype, sx))
    y = data.draw(values(other_dtype(data, dtype, False), sy))
    return Call((cond, x, y))


# Ops whose calls are drawn otherwise (a parameter drawn with the inputs, an argument
# that may be None or a keyword): the draw, and what else differs from the row.
_OWN_DRAW = {
    "multigammaln": {"draw": _draw_multigammaln},
    "gammainc_da": {"draw": _draw_gammainc_da}, "betainc_dab": {"draw": _draw_betainc_dab},
    "round": {"draw": _draw_round, "ok": _round_ok},
    "clip": {"draw": _draw_clip}, "where": {"draw": _draw_where},
}


def from_row(row: Row) -> Callable:
    """The second-order cases of an elementwise op (``row.cases`` if given): real inputs in
    its domains, and complex ones where it is defined on complex numbers (to order 1 where
    its second derivatives are checked on real input only); then ``row.more_cases``'s."""
    if row.cases is not None:
        return row.cases

    def make(fn: Callable) -> list:
        f = row_function(row, fn)
        out = [(f, tuple(row_inputs(row, np.float64, fixed.rng)), {})]
        if row.complex == "yes":
            out.append((f, tuple(row_inputs(row, np.complex128, fixed.rng)),
                        {"order": 1} if row.second == "real" else {}))
        return out + (row.more_cases(fn) if row.more_cases is not None else [])

    return make


def row_second(row: Row) -> Second:
    """The second-order entry of an elementwise op: its cases, JAX's twin, and the cases
    whose derivative is 0 at every input (the real one of a piecewise constant op, and
    the complex one too when the op is piecewise constant there)."""
    zero = {}
    if row.grad == "zero":
        zero = {0: "piecewise constant", **({1: "piecewise constant"}
                                            if row.complex == "yes" else {})}
    elif row.zero_on_real:
        zero = {0: row.zero_on_real}
    return Second(from_row(row), jax=row.jax, no_jax=row.no_jax,
                  jax_real_only=row.jax_real_only, jax_skip=row.jax_skip or {},
                  jax_only_in=row.jax_only_in, zero=zero)


def row_case(name: str, row: Row) -> Case:
    """The case of the elementwise op ``name`` from its row."""
    kw = {"draw": elementwise_draw(row), "ok": row.ok, **_OWN_DRAW.get(name, {})}
    return Case(row.path or name, row.ref, kw["draw"],
                dtypes=ALL if row.complex == "yes" else REAL, grad=row.grad, ok=kw["ok"],
                nondiff=tuple(k for k, p in enumerate(row.fuzz_params or ())
                              if isinstance(p, Domain)),
                exact=row.exact, note=row.note, second={name: row_second(row)})


for _name, _row in ELEMENTWISE.items():
    CASES[_row.path or _name] = row_case(_name, _row)

unary("sici", sp.sici, NONZERO, NONZERO,
      second=Second(on_interval(0.3, 2, z=1 + 0.5j),
                    jax_real_only="jax.scipy.special.sici is real only"))
unary("fresnel", sp.fresnel, ANY, SMALL,
      second=Second(on_interval(z=0.5 + 0.5j),
                    jax_real_only="jax.scipy.special.fresnel is real only"))

# ---- no gradient -----------------------------------------------------------------------

for _name, _nogradient in NO_GRADIENT.items():
    nondiff(_name, _nogradient.ref, len(_nogradient.args), kinds=_nogradient.kinds,
            why=_nogradient.why)

