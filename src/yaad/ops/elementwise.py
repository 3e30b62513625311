"""Elementwise functions: one row a function, derivatives written with yaad functions.

A row names the function, its NumPy/SciPy implementation, and the derivative with respect
to each input as a function of ``(ans, *inputs)``. Parameters that a derivative does not
read start with ``_``; when no row reads the inputs (or the output), they are not saved.
From a derivative ``d`` the VJP is ``g * conj(d)`` (PyTorch's convention for holomorphic
functions, so ``z.grad = dL/dx + i dL/dy``) and the JVP is ``t * d``.

Non-holomorphic and piecewise functions (``abs``, ``real``, ``angle``, ``maximum``,
``where``, ...) have their rules written out after the table.
"""

from __future__ import annotations

import math
import types

import numpy as np
import scipy.special as sp

from ..core.backend import dtype_kind, implements, is_complex, namespace
from ..core.op import IN_PLACE_SIZE, Op, apply, fits_into, op
from ..core.tensor import Tensor
from . import parameter_derivatives as _pd
from .public_names import exported

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SQRT_PI = math.sqrt(math.pi)
_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_TWO_I_OVER_SQRT_PI = 2j / math.sqrt(math.pi)


def _is_complex(v) -> bool:
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return dtype_kind(dt) == "c"
    return isinstance(v, complex)


def _uses(fn, name_index: int) -> bool:
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    return name_index < len(names) and not names[name_index].startswith("_")


def _check_real(name, args):
    for a in args:
        if _is_complex(a):
            raise TypeError(f"{name}: the derivative is not defined for complex inputs (got "
                            f"{a.dtype}); apply it to the real and imaginary parts, or to "
                            f"abs(z)")


def _conj(v, like):
    # .conjugate(): free for real NumPy arrays and Python numbers (returns itself), a
    # recorded conj for complex tensors; the op for arrays without the method (array API).
    if hasattr(v, "conjugate"):
        return v.conjugate()
    v = _numeric(v, like)
    return conjugate(v) if is_complex(v) else v


def _numeric(v, like):
    # A boolean derivative (relu's x > 0) as numbers: the array API multiplies no booleans.
    return namespace(v).astype(v, like.dtype) if dtype_kind(v.dtype) == "b" else v


def _ZERO_DERIVATIVE(_ans, *_args):  # noqa: N802 - a marker, like None
    """The derivative of a piecewise-constant function (floor, round...): exactly zero,
    whatever the incoming gradient, so an infinite or NaN one gives 0 (as in PyTorch and
    JAX), where multiplying by 0 would give NaN."""
    return 0


def _zeros_like(g):
    return namespace(g).zeros_like(g)


def _zero_gradient(g, *_, **__):
    """Zeros like ``g``: a rule's result for a derivative that is exactly 0 (for a
    tensor, under ``create_graph`` or while ``yaad.compile`` records, a private op: its
    replay makes zeros too, and it is differentiable, its derivatives zeros)."""
    return apply(_ZEROS, (g,), {}) if isinstance(g, Tensor) else _zeros_like(g)


# (an op, not in the registry, as ops.strong_zero's)
_ZEROS = Op(forward=_zeros_like, name="zero_gradient", vjps=(_zero_gradient,),
            jvps=(_zero_gradient,), save_args=False, save_ans=False, nout=1, variadic=False,
            elementwise=True, selects=False, linear=True)
_ZEROS.fn = _zero_gradient
_ZEROS.batch = "broadcast"


def _vjp_from(d, name, real_only):
    if d is _ZERO_DERIVATIVE and not real_only:
        return _zero_gradient
    if real_only:
        def vjp(g, ans, *args):
            _check_real(name, args)
            if d is _ZERO_DERIVATIVE:
                return _zero_gradient(g)
            return g * _conj(d(ans, *args), g)
    else:
        def vjp(g, ans, *args):
            return g * _conj(d(ans, *args), g)

    return vjp


def _jvp_from(d, name, real_only):
    if d is _ZERO_DERIVATIVE:
        return _vjp_from(d, name, real_only)  # (zeros like the tangent)

    def jvp(t, ans, *args):
        if real_only:
            _check_real(name, args)
        v = d(ans, *args)
        return t * (v if hasattr(v, "conjugate") else _numeric(v, t))

    return jvp


def elementwise_op(name: str, fn, *derivatives, real_only: bool = False, selects: bool = False):
    """Declare an elementwise function from its derivatives (see the module docstring).

    ``None`` in place of a derivative marks a non-differentiable input (an order, say).
    ``real_only`` marks functions whose derivative does not exist for complex inputs
    (``maximum``: NumPy compares complex numbers lexicographically): the forward stays
    NumPy's, the gradient raises.
    """
    used = [d for d in derivatives if d is not None]
    save_ans = any(_uses(d, 0) for d in used)
    save_args = any(_uses(d, k) for d in used for k in range(1, len(derivatives) + 1))
    n = len(derivatives)
    f = op(fn, name=name,
           vjp=tuple(None if d is None else _vjp_from(d, name, real_only) for d in derivatives),
           jvp=tuple(None if d is None else _jvp_from(d, name, real_only) for d in derivatives),
           save_args=save_args, save_ans=save_ans, elementwise=True, selects=selects,
           reads=[[d is not None and _uses(d, k) for k in range(1, n + 1)] for d in derivatives])
    _rows.append((f.op, derivatives, real_only))
    return f


_rows: list = []


def _bind_to_numpy(namespace: dict) -> None:
    """Give every row its derivatives with yaad's functions replaced by the NumPy
    functions behind them: the same code, without dispatch, for the first-order backward
    (design decision 6: higher derivatives must not slow down first derivatives)."""
    plain = {k: (v.op.forward if hasattr(v, "op") else v) for k, v in namespace.items()}
    for declared, derivatives, real_only in _rows:
        bound = []
        for d in derivatives:
            if d is None:
                bound.append(None)
                continue
            fast = types.FunctionType(d.__code__, plain, d.__name__, d.__defaults__,
                                      d.__closure__)
            bound.append(_checked(fast, declared.name) if real_only else fast)
        # (a zero row keeps its rule: the engine's table multiplies g by the derivative)
        declared.numpy_derivatives = None if _ZERO_DERIVATIVE in derivatives else tuple(bound)


def _checked(d, name):
    def derivative(ans, *args):
        _check_real(name, args)
        return d(ans, *args)

    return derivative


# ---- the table ---------------------------------------------------------------------

sin = elementwise_op("sin", np.sin, lambda _a, x: cos(x))
cos = elementwise_op("cos", np.cos, lambda _a, x: -sin(x))
tan = elementwise_op("tan", np.tan, lambda ans, _x: 1 + ans * ans)
arcsin = elementwise_op("arcsin", np.arcsin, lambda _a, x: reciprocal(sqrt(1 - x * x)))
arccos = elementwise_op("arccos", np.arccos, lambda _a, x: -reciprocal(sqrt(1 - x * x)))
arctan = elementwise_op("arctan", np.arctan, lambda _a, x: reciprocal(1 + x * x))
sinh = elementwise_op("sinh", np.sinh, lambda _a, x: cosh(x))
cosh = elementwise_op("cosh", np.cosh, lambda _a, x: sinh(x))
tanh = elementwise_op("tanh", np.tanh, lambda ans, _x: 1 - ans * ans)
arcsinh = elementwise_op("arcsinh", np.arcsinh, lambda _a, x: reciprocal(sqrt(x * x + 1)))
arccosh = elementwise_op("arccosh", np.arccosh, lambda _a, x: reciprocal(sqrt(x - 1) * sqrt(x + 1)))
arctanh = elementwise_op("arctanh", np.arctanh, lambda _a, x: reciprocal(1 - x * x))
exp = elementwise_op("exp", np.exp, lambda ans, _x: ans)
exp2 = elementwise_op("exp2", np.exp2, lambda ans, _x: ans * _LN2)
expm1 = elementwise_op("expm1", np.expm1, lambda ans, _x: ans + 1)
log = elementwise_op("log", np.log, lambda _a, x: reciprocal(x))
log2 = elementwise_op("log2", np.log2, lambda _a, x: reciprocal(x * _LN2))
log10 = elementwise_op("log10", np.log10, lambda _a, x: reciprocal(x * _LN10))
log1p = elementwise_op("log1p", np.log1p, lambda _a, x: reciprocal(1 + x))
sqrt = elementwise_op("sqrt", np.sqrt, lambda ans, _x: 0.5 / ans)
cbrt = elementwise_op("cbrt", np.cbrt, lambda ans, _x: reciprocal(3 * ans * ans), real_only=True)
square = elementwise_op("square", np.square, lambda _a, x: 2 * x)
reciprocal = elementwise_op("reciprocal", np.reciprocal, lambda ans, _x: -(ans * ans))
negative = elementwise_op("negative", np.negative, lambda _a, _x: -1)
positive = elementwise_op("positive", np.positive, lambda _a, _x: 1)
deg2rad = elementwise_op("deg2rad", np.deg2rad, lambda _a, _x: math.pi / 180, real_only=True)
rad2deg = elementwise_op("rad2deg", np.rad2deg, lambda _a, _x: 180 / math.pi, real_only=True)
radians = elementwise_op("radians", np.radians, lambda _a, _x: math.pi / 180, real_only=True)
degrees = elementwise_op("degrees", np.degrees, lambda _a, _x: 180 / math.pi, real_only=True)


def _sinc_derivative(_ans, x):
    """(cos(pi x) - sinc(x)) / x, which cancels to nothing as x -> 0: its Maclaurin series
    below |x| = 0.05 (to x^9, exact to rounding there, and a polynomial whose own
    derivatives at 0 are sinc's: -pi^2 / 3 for the second). From the input alone, sinc
    recomputed (PyTorch saves the input): the output may change in place after the call."""
    small = abs(x) < 0.05
    z = where(small, x, 0)
    z2 = (math.pi * math.pi) * z * z
    series = -(math.pi * math.pi) * z * (1 / 3 - z2 * (1 / 30 - z2 * (1 / 840 - z2 * (
        1 / 45360 - z2 / 3991680))))
    return where(small, series, (cos(math.pi * x) - sinc(x)) / where(small, 1, x))


sinc = elementwise_op("sinc", np.sinc, _sinc_derivative)

erf = elementwise_op("erf", sp.erf, lambda _a, x: (2 / _SQRT_PI) * exp(-(x * x)))
erfc = elementwise_op("erfc", sp.erfc, lambda _a, x: (-2 / _SQRT_PI) * exp(-(x * x)))
def _erfinv_derivative(_ans, x):
    """sqrt(pi)/2 exp(erfinv(x)^2), erfinv recomputed from the input (PyTorch saves the
    input only, so the output may change in place after the call)."""
    e = erfinv(x)
    return (_SQRT_PI / 2) * exp(e * e)


erfinv = elementwise_op("erfinv", sp.erfinv, _erfinv_derivative, real_only=True)
erfcinv = elementwise_op("erfcinv", sp.erfcinv, lambda ans, _x: (-_SQRT_PI / 2) * exp(ans * ans),
              real_only=True)
erfcx = elementwise_op("erfcx", sp.erfcx, lambda ans, x: 2 * x * ans - 2 / _SQRT_PI)
gamma = elementwise_op("gamma", sp.gamma, lambda ans, x: ans * digamma(x))
gammaln = elementwise_op("gammaln", sp.gammaln, lambda _a, x: digamma(x), real_only=True)
# SciPy's polygamma (the derivative) is real only, though digamma accepts complex input.
digamma = elementwise_op("digamma", sp.digamma, lambda _a, x: polygamma(1, x), real_only=True)
psi = digamma
polygamma = elementwise_op("polygamma", sp.polygamma, None, lambda _a, n, x: polygamma(n + 1, x),
                real_only=True)
beta = elementwise_op("beta", sp.beta,
           lambda ans, a, b: ans * (digamma(a) - digamma(a + b)),
           lambda ans, a, b: ans * (digamma(b) - digamma(a + b)), real_only=True)
betaln = elementwise_op("betaln", sp.betaln,
             lambda _ans, a, b: digamma(a) - digamma(a + b),
             lambda _ans, a, b: digamma(b) - digamma(a + b), real_only=True)
expit = elementwise_op("expit", sp.expit, lambda ans, _x: ans * (1 - ans), real_only=True)
logit = elementwise_op("logit", sp.logit, lambda _a, x: reciprocal(x * (1 - x)), real_only=True)


def _log_defined_or_nonzero(x, y):
    """Where d/dx of x log(y) is log(y): everywhere but at x = 0 with log(y) undefined
    (y <= 0 for real y, y = 0 for complex), where it is 0 as in PyTorch."""
    return logical_or(x != 0, y != 0 if np.iscomplexobj(y) else y > 0)


def _x_over(x, y):
    """``x / y``, d/dy of ``x log(y)``: 0 where x = 0, also at y = 0 (for x = 0 the function
    is 0 for every y; x / y would be 0 / 0, a NaN where the derivative is finite)."""
    return x / where(logical_and(x == 0, y == 0), 1, y)


xlogy = elementwise_op("xlogy", sp.xlogy,
            lambda _a, x, y: xlogy(_log_defined_or_nonzero(x, y), y),
            lambda _a, x, y: _x_over(x, y))
xlog1py = elementwise_op("xlog1py", sp.xlog1py,
              lambda _a, x, y: xlog1py(_log_defined_or_nonzero(x, 1 + y), y),
              lambda _a, x, y: _x_over(x, 1 + y))
# Bessel functions through the recurrences of the general orders.
jv = elementwise_op("jv", sp.jv, None, lambda _a, v, x: 0.5 * (jv(v - 1, x) - jv(v + 1, x)))
yv = elementwise_op("yv", sp.yv, None, lambda _a, v, x: 0.5 * (yv(v - 1, x) - yv(v + 1, x)))
iv = elementwise_op("iv", sp.iv, None, lambda _a, v, x: 0.5 * (iv(v - 1, x) + iv(v + 1, x)))
# ive(v, z) = iv(v, z) * exp(-|Re z|) is not holomorphic: its gradient is real only.
ive = elementwise_op("ive", sp.ive, None,
          lambda ans, v, x: 0.5 * (ive(v - 1, x) + ive(v + 1, x)) - sign(x) * ans,
          real_only=True)
j0 = elementwise_op("j0", sp.j0, lambda _a, x: -j1(x), real_only=True)
j1 = elementwise_op("j1", sp.j1, lambda _a, x: 0.5 * (j0(x) - jv(2, x)), real_only=True)
y0 = elementwise_op("y0", sp.y0, lambda _a, x: -y1(x), real_only=True)
y1 = elementwise_op("y1", sp.y1, lambda _a, x: 0.5 * (y0(x) - yv(2, x)), real_only=True)
i0 = elementwise_op("i0", sp.i0, lambda _a, x: i1(x), real_only=True)
# (1/2 near 0, where SciPy's iv(2, x) is nan around the smallest normal float)
i1 = elementwise_op("i1", sp.i1, lambda _a, x: where(abs(x) < 1e-150, 0.5,
                                                     0.5 * (i0(x) + iv(2, x))), real_only=True)
i0e = elementwise_op("i0e", sp.i0e, lambda ans, x: i1e(x) - sign(x) * ans, real_only=True)


def _i1e_derivative(ans, x):
    """(I0 + I2) / 2 scaled, minus sign(x) i1e(x); beyond |x| = 1000 by I1' = I0 - I1 / x,
    as SciPy's ive(2, x) is NaN beyond |x| ~ 1e9 (the first form keeps second
    derivatives accurate near 0, where I1 / x cancels)."""
    big = abs(x) > 1000
    near = where(big, 1, x)
    return where(big, i0e(x) - ans * (sign(x) + 1 / where(big, x, 1)),
                 0.5 * (i0e(near) + ive(2, near)) - sign(x) * ans)


i1e = elementwise_op("i1e", sp.i1e, _i1e_derivative, real_only=True)

# ---- more of scipy.special: what jax.scipy.special differentiates, and its neighbours ----

ndtr = elementwise_op("ndtr", sp.ndtr, lambda _a, x: exp(-0.5 * x * x) / _SQRT_2PI)
# phi(x) / Phi(x) written with erfcx: no cancellation for large negative x


def _log_ndtr_derivative(ans, x):
    """phi(x) / Phi(x): by erfcx for x <= 0; above, exp(-x^2/2 - log Phi(x)) / sqrt(2 pi),
    as erfcx(-x / sqrt 2) overflows beyond x ~ 38 (the derivative 0 was right, its own
    derivative inf / inf = NaN)."""
    if _is_complex(x):
        return _SQRT_2_OVER_PI / erfcx(-x / _SQRT2)
    pos = x > 0
    return where(pos, exp(-0.5 * x * x - ans) / _SQRT_2PI,
                 _SQRT_2_OVER_PI / erfcx(-where(pos, 0, x) / _SQRT2))


log_ndtr = elementwise_op("log_ndtr", sp.log_ndtr, _log_ndtr_derivative)
ndtri = elementwise_op("ndtri", sp.ndtri, lambda ans, _x: _SQRT_2PI * exp(0.5 * ans * ans),
                       real_only=True)
log_expit = elementwise_op("log_expit", sp.log_expit, lambda _a, x: expit(-x), real_only=True)
rgamma = elementwise_op("rgamma", sp.rgamma, lambda ans, x: -ans * digamma(x))
loggamma = elementwise_op("loggamma", sp.loggamma, lambda _a, x: digamma(x))
gammasgn = elementwise_op("gammasgn", sp.gammasgn, lambda _a, _x: 0, real_only=True)
multigammaln = elementwise_op(
    "multigammaln", sp.multigammaln,
    lambda _a, a, d: sum(digamma(a - 0.5 * j) for j in range(int(d))), None, real_only=True)
multigammaln.__doc__ = """Log of the multivariate gamma function of dimension ``d``
(scipy.special.multigammaln); differentiable in ``a``."""
factorial = elementwise_op(
    "factorial", lambda n: sp.factorial(n, exact=False),
    lambda ans, n: where(n < 0, 0, ans * digamma(where(n < 0, 1, n + 1))), real_only=True)
factorial.__doc__ = """n! = gamma(n + 1) for real n >= 0, 0 for n < 0
(scipy.special.factorial with exact=False); differentiable."""
poch = elementwise_op("poch", sp.poch,
                      lambda ans, z, m: ans * (digamma(z + m) - digamma(z)),
                      lambda ans, z, m: ans * digamma(z + m), real_only=True)
entr = elementwise_op("entr", sp.entr, lambda _a, x: -(log(x) + 1), real_only=True)
rel_entr = elementwise_op("rel_entr", sp.rel_entr,
                          lambda _a, x, y: log(x / y) + 1, lambda _a, x, y: -x / y,
                          real_only=True)
kl_div = elementwise_op("kl_div", sp.kl_div,
                        lambda _a, x, y: log(x / y), lambda _a, x, y: 1 - x / y, real_only=True)
exp1 = elementwise_op("exp1", sp.exp1, lambda _a, x: -exp(-x) / x)
expi = elementwise_op("expi", sp.expi, lambda _a, x: exp(x) / x)
# E_n' = -E_{n-1}, and E_0(x) = exp(-x) / x
expn = elementwise_op("expn", sp.expn, None, lambda _a, n, x: where(
    n >= 1, -expn(maximum(n - 1, 0), x), -exp(-x) * (1 + x) / (x * x)), real_only=True)
# (at z = 1 the limit -1 and its slope 1/2, so that second derivatives are right there)
spence = elementwise_op("spence", sp.spence, lambda _a, z: where(
    z == 1, (z - 3) / 2, log(where(z == 1, 2, z)) / (1 - where(z == 1, 2, z))))
zeta = elementwise_op("zeta", sp.zeta, None, lambda _a, x, q: -x * zeta(x + 1, q),
                      real_only=True)
zeta.__doc__ = """Hurwitz zeta function zeta(x, q) (scipy.special.zeta); differentiable in
``q`` (no closed form exists in ``x``, as in JAX)."""
dawsn = elementwise_op("dawsn", sp.dawsn, lambda ans, x: 1 - 2 * x * ans)
wofz = elementwise_op("wofz", sp.wofz, lambda ans, z: _TWO_I_OVER_SQRT_PI - 2 * z * ans)
owens_t = elementwise_op(
    "owens_t", sp.owens_t,
    lambda _a, h, a: -exp(-0.5 * h * h) * erf(a * h / _SQRT2) / (2 * _SQRT_2PI),
    lambda _a, h, a: exp(-0.5 * h * h * (1 + a * a)) / (2 * math.pi * (1 + a * a)),
    real_only=True)
hyp1f1 = elementwise_op("hyp1f1", sp.hyp1f1, None, None,
                        lambda _a, a, b, x: (a / b) * hyp1f1(a + 1, b + 1, x))
hyp2f1 = elementwise_op("hyp2f1", sp.hyp2f1, None, None, None,
                        lambda _a, a, b, c, z: (a * b / c) * hyp2f1(a + 1, b + 1, c + 1, z))
yn = elementwise_op("yn", sp.yn, None, lambda _a, n, x: 0.5 * (yn(n - 1, x) - yn(n + 1, x)),
                    real_only=True)
jn = jv
boxcox = elementwise_op(
    "boxcox", sp.boxcox, lambda _a, x, lmbda: exp((lmbda - 1) * log(x)),
    lambda _a, x, lmbda: _boxcox_dlmbda(log(x), lmbda), real_only=True)
boxcox1p = elementwise_op(
    "boxcox1p", sp.boxcox1p, lambda _a, x, lmbda: exp((lmbda - 1) * log1p(x)),
    lambda _a, x, lmbda: _boxcox_dlmbda(log1p(x), lmbda), real_only=True)


def _boxcox_dlmbda(lx, lmbda):
    """d/d lmbda of lx * expm1(u) / u at u = lmbda * lx: lx^2 * (u e^u - expm1(u)) / u^2,
    by its Taylor series sum_m (m+1) u^m / (m+2)! near u = 0 (no cancellation)."""
    u = lmbda * lx
    small = abs(u) < 0.01
    us = where(small, u, 0)
    series = 1 / 2 + us * (1 / 3 + us * (1 / 8 + us * (1 / 30 + us * (1 / 144 + us * (
        1 / 840 + us * (1 / 5760 + us / 45360))))))
    ub = where(small, 1, u)
    return lx * lx * where(small, series, (ub * exp(ub) - expm1(ub)) / (ub * ub))


# Regularized incomplete gamma and beta functions. The derivatives in x are closed forms;
# those in the parameters (no closed form) are ops of parameter_derivatives.py, to second
# order: gammainc_da(k, a, x) = d^k P / da^k, betainc_dab(i, j, a, b, x) = d^(i+j) I / da^i db^j.
def _gammainc_density(k, a, x):
    """d^k/da^k of dP/dx = x^(a-1) exp(-x) / gamma(a)."""
    dens = exp(xlogy(a - 1, x) - x - gammaln(a))
    if k == 0:
        return dens
    u = log(x) - digamma(a)
    return dens * u if k == 1 else dens * (u * u - polygamma(1, a))


def _betainc_density(i, j, a, b, x):
    """d^(i+j)/da^i db^j of dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b) (i + j <= 2)."""
    dens = exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - betaln(a, b))
    if i + j == 0:
        return dens
    ab = a + b
    u = log(x) - digamma(a) + digamma(ab)
    v = log1p(-x) - digamma(b) + digamma(ab)
    if (i, j) == (1, 0):
        return dens * u
    if (i, j) == (0, 1):
        return dens * v
    t = polygamma(1, ab)
    if (i, j) == (2, 0):
        return dens * (u * u - polygamma(1, a) + t)
    if (i, j) == (1, 1):
        return dens * (u * v + t)
    return dens * (v * v - polygamma(1, b) + t)


_gammainc_da = elementwise_op(
    "gammainc_da", _pd.gammainc_da, None,
    lambda _ans, k, a, x: _gammainc_da(k + 1, a, x),
    lambda _ans, k, a, x: _gammainc_density(k, a, x), real_only=True)
_betainc_dab = elementwise_op(
    "betainc_dab", _pd.betainc_dab, None, None,
    lambda _ans, i, j, a, b, x: _betainc_dab(i + 1, j, a, b, x),
    lambda _ans, i, j, a, b, x: _betainc_dab(i, j + 1, a, b, x),
    lambda _ans, i, j, a, b, x: _betainc_density(i, j, a, b, x), real_only=True)
gammainc = elementwise_op("gammainc", sp.gammainc,
                          lambda _ans, a, x: _gammainc_da(1, a, x),
                          lambda _ans, a, x: _gammainc_density(0, a, x), real_only=True)
gammaincc = elementwise_op("gammaincc", sp.gammaincc,
                           lambda _ans, a, x: -_gammainc_da(1, a, x),
                           lambda _ans, a, x: -_gammainc_density(0, a, x), real_only=True)
betainc = elementwise_op("betainc", sp.betainc,
                         lambda _ans, a, b, x: _betainc_dab(1, 0, a, b, x),
                         lambda _ans, a, b, x: _betainc_dab(0, 1, a, b, x),
                         lambda _ans, a, b, x: _betainc_density(0, 0, a, b, x), real_only=True)


def _t_log_density(df, t):
    """Log of Student's t density; at ``df = inf`` the normal's (its limit, as SciPy).

    Its normalisation ``lgamma(a + 1/2) - lgamma(a) - log(2 a pi) / 2`` (``a = df / 2``)
    cancels for large ``df``: above ``df = 50`` it is the asymptotic series
    ``-log(2 pi) / 2 - 1/(8a) + 1/(192 a^3) - 1/(640 a^5) + 17/(14336 a^7)`` (the next
    term is below 1e-16 there; mpmath gives the coefficients)."""
    normal = isinf(df)
    df = where(normal, 1.0, df)  # (no inf - inf computed in the branch not taken)
    large = df > 50
    r = 2 / where(large, df, 100.0)  # 1 / a (each branch sees only its own df)
    r2 = r * r
    series = r * (-1 / 8 + r2 * (1 / 192 + r2 * (-1 / 640 + r2 * (17 / 14336))))
    small = where(large, 1.0, df)
    head = where(large, series - 0.5 * math.log(2 * math.pi),
                 gammaln(0.5 * (small + 1)) - gammaln(0.5 * small) - 0.5 * log(small * math.pi))
    return where(normal, -0.5 * t * t - 0.5 * math.log(2 * math.pi),
                 head - 0.5 * (df + 1) * log1p(t * t / df))


def _stdtr_ddf(df, t):
    """d/d df of Student's t cdf: the tail 0.5 I_x(df/2, 1/2), x = df / (df + t^2), moves
    with its parameter and with x; 1 - x = t^2 / (df + t^2) is written out (no
    cancellation near t = 0, where the derivative vanishes)."""
    normal = isinf(df)  # the normal limit: there the cdf no longer moves with df
    df = where(normal, 1.0, df)
    s = df + t * t
    x = df / s
    da = 0.25 * _betainc_dab(1, 0, 0.5 * df, 0.5, x)
    dx = 0.5 * t * exp(xlogy(0.5 * df - 1, x) - betaln(0.5 * df, 0.5)) / (s * sqrt(s))
    return where(normal, 0.0, -sign(t) * da - dx)


stdtr = elementwise_op("stdtr", sp.stdtr, lambda _ans, df, t: _stdtr_ddf(df, t),
                       lambda _ans, df, t: exp(_t_log_density(df, t)), real_only=True)

multiply = elementwise_op("multiply", np.multiply, lambda _a, _x, y: y, lambda _a, x, _y: x)
arctan2 = elementwise_op("arctan2", np.arctan2,
              lambda _a, y, x: x / (x * x + y * y),
              lambda _a, y, x: -y / (x * x + y * y), real_only=True)
hypot = elementwise_op("hypot", np.hypot,
            lambda ans, x, _y: where(ans == 0, 0, x / where(ans == 0, 1, ans)),
            lambda ans, _x, y: where(ans == 0, 0, y / where(ans == 0, 1, ans)),
            real_only=True)


def _logaddexp_share(e, f, x, y):
    """d/dx of ``f(x, y)``, logaddexp (or logaddexp2, ``e`` being exp or exp2):
    ``e(x - f(x, y))``; at x = +inf, 1 (1/2 when y = +inf too, as on the diagonal). The
    output is recomputed from the inputs (PyTorch saves the inputs only), so it may change
    in place after the call."""
    ans = f(x, y)
    d = e(where(x == np.inf, 0, x) - where(ans == -np.inf, 0, ans))  # (0 at x = +inf)
    return where(x == np.inf, where(y == np.inf, 0.5, d + 1), d)


logaddexp = elementwise_op("logaddexp", np.logaddexp,
                lambda _ans, x, y: _logaddexp_share(exp, logaddexp, x, y),
                lambda _ans, x, y: _logaddexp_share(exp, logaddexp, y, x), real_only=True)
logaddexp2 = elementwise_op("logaddexp2", np.logaddexp2,
                 lambda _ans, x, y: _logaddexp_share(exp2, logaddexp2, x, y),
                 lambda _ans, x, y: _logaddexp_share(exp2, logaddexp2, y, x), real_only=True)
mod = elementwise_op("mod", np.mod, lambda _a, _x, _y: 1, lambda _a, x, y: -floor(x / y),
          real_only=True)
remainder = mod
fmod = elementwise_op("fmod", np.fmod, lambda _a, _x, _y: 1, lambda _a, x, y: -trunc(x / y),
           real_only=True)
# 1 where the input wins, 1/2 at a tie, 0 where it loses, NaN where a NaN makes the pair
# unordered (written with where, not with booleans as numbers: the array API does no
# arithmetic on booleans; 0 * x only there, as it is NaN at an infinite loser)
maximum = elementwise_op("maximum", np.maximum,
              lambda _a, x, y: where(x == y, 0.5, where(x > y, 1.0, where(x < y, 0.0, 0 * x))),
              lambda _a, x, y: where(x == y, 0.5, where(x < y, 1.0, where(x > y, 0.0, 0 * y))),
              real_only=True, selects=True)
minimum = elementwise_op("minimum", np.minimum,
              lambda _a, x, y: where(x == y, 0.5, where(x < y, 1.0, where(x > y, 0.0, 0 * x))),
              lambda _a, x, y: where(x == y, 0.5, where(x > y, 1.0, where(x < y, 0.0, 0 * y))),
              real_only=True, selects=True)
fmax = elementwise_op("fmax", np.fmax,
           lambda _a, x, y: ((x > y) | isnan(y)) + 0.5 * (x == y),
           lambda _a, x, y: ((x < y) | isnan(x)) + 0.5 * (x == y), real_only=True,
           selects=True)
fmin = elementwise_op("fmin", np.fmin,
           lambda _a, x, y: ((x < y) | isnan(y)) + 0.5 * (x == y),
           lambda _a, x, y: ((x > y) | isnan(x)) + 0.5 * (x == y), real_only=True,
           selects=True)

# Piecewise-constant functions: zero gradient (documented), like PyTorch.
floor = elementwise_op("floor", np.floor, _ZERO_DERIVATIVE, real_only=True)
ceil = elementwise_op("ceil", np.ceil, _ZERO_DERIVATIVE, real_only=True)
trunc = elementwise_op("trunc", np.trunc, _ZERO_DERIVATIVE, real_only=True)
rint = elementwise_op("rint", np.rint, _ZERO_DERIVATIVE)
fix = elementwise_op("fix", np.fix, _ZERO_DERIVATIVE, real_only=True)
floor_divide = elementwise_op("floor_divide", np.floor_divide, _ZERO_DERIVATIVE,
                              _ZERO_DERIVATIVE, real_only=True)
# |x| with the sign of y: d/dx is the ratio of the result to x (0 at x = 0, PyTorch's
# choice where |x| has no derivative); d/dy is 0 (the sign is piecewise constant).
copysign = elementwise_op("copysign", np.copysign,
               lambda ans, x, _y: where(x == 0, 0.0, ans / where(x == 0, 1.0, x)),
               _ZERO_DERIVATIVE, real_only=True)


@op(batch="broadcast", save_args=False, save_ans=False)
def round(x, decimals=0):  # noqa: A001 - NumPy's name
    """Round to the given number of decimals (zero gradient, like PyTorch)."""
    return np.round(x, decimals)


round.defvjp(_zero_gradient)
round.defjvp(_zero_gradient)
around = round

relu = elementwise_op("relu", lambda x: np.maximum(x, 0), lambda _a, x: x > 0, real_only=True,
           selects=True)
relu.__doc__ = "Rectified linear unit, max(x, 0); the gradient at 0 is 0."
sigmoid = expit
softplus = elementwise_op("softplus", lambda x: np.logaddexp(0, x), lambda _a, x: expit(x),
               real_only=True)
softplus.__doc__ = "log(1 + exp(x)), computed without overflow."


# ---- rules written out ---------------------------------------------------------------

add = op(np.add, name="add", save_args=False, save_ans=False, elementwise=True,
         vjp=(lambda g, ans, x, y: g, lambda g, ans, x, y: g),
         jvp=(lambda t, ans, x, y: t, lambda t, ans, x, y: t))
subtract = op(np.subtract, name="subtract", save_args=False, save_ans=False, elementwise=True,
              vjp=(lambda g, ans, x, y: g, lambda g, ans, x, y: -g),
              jvp=(lambda t, ans, x, y: t, lambda t, ans, x, y: -t))




def _scaled_temporary(t, g, sign=1):
    """``sign * t * g``, written into ``t`` when it is a large array and the result has its
    shape and dtype: one large temporary fewer (W4's peak memory). Otherwise, and for
    tensors, out of place. ``t`` must be a temporary the caller made: nothing else may hold
    it (its only caller passes the fresh array ``conj(ans / y)``)."""
    if type(t) is np.ndarray and t.size >= IN_PLACE_SIZE and fits_into(t, g):
        np.multiply(t, g, out=t)
        if sign == -1:
            np.negative(t, out=t)
        return t
    return -(t * g) if sign == -1 else t * g


def _conj_of(v):
    return conj(v) if _is_complex(v) else v


def _over_y_squared(x, y):
    """``(x / y) / y``, PyTorch's form of -d(x/y)/dy: from the inputs, which PyTorch saves
    (not the output, which may change in place after the call), one temporary."""
    t = x / y
    if type(t) is np.ndarray and t.flags.writeable:
        return np.divide(t, y, out=t)  # (t has the dtype and shape of t / y)
    return t / y


divide = op(np.divide, name="divide", elementwise=True, save_ans=False,
            reads=((False, True), (True, True)),
            vjp=(lambda g, ans, x, y: g / _conj_of(y),
                 lambda g, ans, x, y: _scaled_temporary(_conj_of(_over_y_squared(x, y)), g,
                                                        -1)),
            jvp=(lambda t, ans, x, y: t / y,
                 lambda t, ans, x, y: -t * (ans / y)))
true_divide = divide


def _power_dx(ans, x, y):
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        if y == 0:
            return 0 * x
        if y == 1:
            return 1 + 0 * x
        if y == 2:
            return 2 * x
        return y * x ** (y - 1)
    # y * x**(y-1); where y == 0, y / x (0, with its derivative in y, 1/x), 0 at x == 0
    # too (x**-1 would be inf there)
    at_zero = y * where(x == 0, 0, 1 / where(x == 0, 1, x))
    return where(y == 0, at_zero, y * x ** where(y == 0, 1, y - 1))


def _power_dy(ans, x, y):
    # log(x) * x**y; where x == 0, 0 for Re(y) >= 0 (the limit, PyTorch's choice) and
    # inf * -inf = -inf for Re(y) < 0. A real x under a complex result takes the complex
    # log (log|x| + i pi for x < 0). The output is not kept (x**2 is common, and its
    # exponent needs no gradient): recomputed when needed.
    if ans is None:
        ans = power(x, y)
    if _is_complex(ans) and not _is_complex(x):
        x = x + 0j
    zero = (x == 0) & (real(y) >= 0)
    return where(zero, 0, ans * log(where(zero, 1, x)))


def _float_power_dy(ans, x, y):
    return _power_dy(float_power(x, y) if ans is None else ans, x, y)


def _power_vjp(d):
    def vjp(g, ans, x, y):
        dv = d(ans, x, y)
        return g * _conj_of(dv)

    return vjp


power = op(np.power, name="power", elementwise=True, save_ans=False,
           vjp=(_power_vjp(_power_dx), _power_vjp(_power_dy)),
           jvp=(lambda t, ans, x, y: t * _power_dx(ans, x, y),
                lambda t, ans, x, y: t * _power_dy(ans, x, y)))
pow = power  # noqa: A001
float_power = op(np.float_power, name="float_power", elementwise=True, save_ans=False,
                 vjp=(_power_vjp(_power_dx), _power_vjp(_float_power_dy)),
                 jvp=(lambda t, ans, x, y: t * _power_dx(ans, x, y),
                      lambda t, ans, x, y: t * _float_power_dy(ans, x, y)))


def _abs_vjp(g, ans, x):
    return g * sign(x)


def _abs_jvp(t, ans, x):
    if _is_complex(x):
        return real(conj(sign(x)) * t)
    return t * sign(x)


absolute = op(np.abs, name="absolute", vjp=_abs_vjp, jvp=_abs_jvp, save_ans=False,
              elementwise=True)
abs = absolute  # noqa: A001


def _sign_vjp(g, _ans, x):
    if not _is_complex(x):
        return _zero_gradient(g)
    # sgn(z) = z/|z| depends on the phase only: keep the part of g along i*sgn(z). (sgn
    # recomputed: the output is not kept, so it may change in place after the call.)
    ans = sign(x)
    r = absolute(x)
    return where(r == 0, 0, (g - real(conj(ans) * g) * ans) / where(r == 0, 1, r))


def _sign_jvp(t, ans, x):
    if not _is_complex(x):
        return _zero_gradient(t)
    r = absolute(x)
    return where(r == 0, 0, (t - real(conj(ans) * t) * ans) / where(r == 0, 1, r))


sign = op(np.sign, name="sign", vjp=_sign_vjp, jvp=_sign_jvp, elementwise=True,
          save_ans=False)
sgn = sign


def _real_vjp(g, ans, x):
    return g


def _real(val):
    r = np.real(val)
    # NumPy returns a real array itself; a view keeps the output a distinct array, so an
    # in-place change of it is seen as a change of shared memory.
    return r.view() if r is val and isinstance(val, np.ndarray) else r


real = op(_real, name="real", vjp=_real_vjp, linear=True, save_args=False,
          save_ans=False, elementwise=True)
real.__doc__ = "The real part (differentiable; for a real input, a view of the input)."


def _imag_vjp(g, ans, x):
    # x is None when the input has the output's shape and dtype: then it is real.
    if x is None or not is_complex(x):
        return _zero_gradient(g)
    return g * 1j


imag = op(np.imag, name="imag", vjp=_imag_vjp, linear=True, save_args=False,
          save_ans=False, elementwise=True)
imag.__doc__ = "The imaginary part (differentiable; zero for a real input)."

conj = op(np.conj, name="conjugate", vjp=lambda g, ans, x: conj(g), linear=True,
          save_args=False, save_ans=False, elementwise=True)
conjugate = conj


def _angle_vjp(g, ans, x):
    if not _is_complex(x):
        return _zero_gradient(g)
    # d angle = Im(dz / z): z.grad = g * i z / |z|^2, and 0 at z == 0
    r2 = real(x * conj(x))
    return where(r2 == 0, 0, g * 1j * x / where(r2 == 0, 1, r2))


def _angle_jvp(t, ans, x):
    if not _is_complex(x):
        return _zero_gradient(t)
    r2 = real(x * conj(x))
    return where(r2 == 0, 0, imag(t * conj(x)) / where(r2 == 0, 1, r2))


angle = op(np.angle, name="angle", vjp=_angle_vjp, jvp=_angle_jvp, save_ans=False,
           elementwise=True)


def _clip(x, a_min=None, a_max=None):
    return np.clip(x, a_min, a_max)


def _clip_inside(x, lo, hi):
    m = True
    if lo is not None:
        m = x >= lo
    if hi is not None:
        m = m & (x <= hi) if m is not True else x <= hi
    return m


def _clip_lo_active(x, lo, hi):
    # NumPy gives a_max wherever a_min > a_max: then a_min is never the result.
    return x < lo if hi is None else (x < lo) & (lo <= hi)


def _clip_hi_active(x, lo, hi):
    return x > hi if lo is None else (x > hi) | (lo > hi)


# The rules name the bounds as NumPy does, so that clip(x, a_min=..., a_max=...) works.
clip = op(_clip, name="clip", elementwise=True, selects=True, save_ans=False,
          vjp=(lambda g, ans, x, a_min=None, a_max=None:
               where(_clip_inside(x, a_min, a_max), g, 0),
               lambda g, ans, x, a_min=None, a_max=None:
               where(_clip_lo_active(x, a_min, a_max), g, 0),
               lambda g, ans, x, a_min=None, a_max=None:
               where(_clip_hi_active(x, a_min, a_max), g, 0)),
          jvp=(lambda t, ans, x, a_min=None, a_max=None:
               where(_clip_inside(x, a_min, a_max), t, 0),
               lambda t, ans, x, a_min=None, a_max=None:
               where(_clip_lo_active(x, a_min, a_max), t, 0),
               lambda t, ans, x, a_min=None, a_max=None:
               where(_clip_hi_active(x, a_min, a_max), t, 0)))
clip.__doc__ = """Limit values to [a_min, a_max] (either may be None).

The gradient passes where a_min <= x <= a_max, and to a bound where it is active."""


def _where(condition, x, y):
    return np.where(condition, x, y)


where = op(_where, name="where", elementwise=True, selects=True, save_ans=False,
           vjp=(None, lambda g, ans, c, x, y: where(c, g, 0),
                lambda g, ans, c, x, y: where(c, 0, g)),
           jvp=(None, lambda t, ans, c, x, y: where(c, t, 0),
                lambda t, ans, c, x, y: where(c, 0, t)))
where.__doc__ = """Choose elementwise from x where condition holds, else from y.

The gradient of the branch not taken is exactly zero, even where that branch is NaN or
infinite, and it stays zero through the elementwise functions above it."""


# ---- without gradient: comparisons, logic, tests -------------------------------------

def _nondiff(fn, name=None):
    return op(fn, name=name or fn.__name__, batch="broadcast")


equal = _nondiff(np.equal)
not_equal = _nondiff(np.not_equal)
less = _nondiff(np.less)
less_equal = _nondiff(np.less_equal)
greater = _nondiff(np.greater)
greater_equal = _nondiff(np.greater_equal)
logical_and = _nondiff(np.logical_and)
logical_or = _nondiff(np.logical_or)
logical_xor = _nondiff(np.logical_xor)
logical_not = _nondiff(np.logical_not)
isnan = _nondiff(np.isnan)
isinf = _nondiff(np.isinf)
isfinite = _nondiff(np.isfinite)
isneginf = _nondiff(np.isneginf)
isposinf = _nondiff(np.isposinf)
signbit = _nondiff(np.signbit)
iscomplex = _nondiff(np.iscomplex)
isreal = _nondiff(np.isreal)
isclose = _nondiff(np.isclose)
bitwise_and = _nondiff(np.bitwise_and)
bitwise_or = _nondiff(np.bitwise_or)
bitwise_xor = _nondiff(np.bitwise_xor)
invert = _nondiff(np.invert)
left_shift = _nondiff(np.left_shift)
right_shift = _nondiff(np.right_shift)
# heaviside(x1, x2) is x2 where x1 == 0 (its slope in x2 there: 1), a step elsewhere
heaviside = elementwise_op("heaviside", np.heaviside, _ZERO_DERIVATIVE,
                           lambda _a, x, _y: 1.0 * (x == 0), real_only=True)
# nextafter(x1, x2) is x1 moved by one unit in the last place: slope 1 in x1, 0 in x2
nextafter = elementwise_op("nextafter", np.nextafter, lambda _a, _x, _y: 1, _ZERO_DERIVATIVE,
                           real_only=True)

# The array API's spellings of NumPy's names (NumPy 2 has both).
acos, acosh, asin, asinh = arccos, arccosh, arcsin, arcsinh
atan, atan2, atanh = arctan, arctan2, arctanh
bitwise_invert, bitwise_left_shift, bitwise_right_shift = invert, left_shift, right_shift
gcd = _nondiff(np.gcd)
lcm = _nondiff(np.lcm)

_bind_to_numpy(globals())


# ---- the bodies on other libraries' arrays, in their array API namespace xp (yaad.backend):
# a row whose forward is a NumPy ufunc finds its function by name there (np.arcsin ->
# xp.asin); the others are here.

implements("real")(lambda xp, val: xp.real(val) if is_complex(val) else val)
implements("imag")(lambda xp, val: xp.imag(val) if is_complex(val) else xp.zeros_like(val))
implements("where")(lambda xp, condition, x, y: xp.where(  # (a rule may pass True)
    xp.asarray(condition) if isinstance(condition, bool) else condition, x, y))
implements("relu")(lambda xp, x: xp.maximum(x, 0))
implements("clip")(lambda xp, x, a_min=None, a_max=None: xp.clip(x, a_min, a_max))
implements("exp2")(lambda xp, x: xp.pow(2.0, x))
implements("rint")(lambda xp, x: xp.round(x))
implements("fix")(lambda xp, x, out=None: xp.trunc(x))
for _name, _factor in (("deg2rad", math.pi / 180), ("radians", math.pi / 180),
                       ("rad2deg", 180 / math.pi), ("degrees", 180 / math.pi)):
    implements(_name)(lambda xp, x, _f=_factor: x * _f)


@implements("round")
def _round_xp(xp, x, decimals=0):
    if decimals != 0:
        raise NotImplementedError("decimals: the array API rounds to integers only")
    return xp.round(x)


@implements("angle")
def _angle_xp(xp, z, deg=False):
    a = (xp.atan2(xp.imag(z), xp.real(z)) if is_complex(z) else
         xp.where(z < 0, math.pi, 0.0 * z))
    return a * (180 / math.pi) if deg else a


__all__ = exported(globals())
