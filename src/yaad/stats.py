"""yaad.stats: probability distributions of ``scipy.stats``, differentiable.

The names, parameters and conventions are SciPy's: ``yaad.stats.norm.logpdf(x, loc=0,
scale=1)``, ``yaad.stats.t.cdf(x, df, loc=0, scale=1)``, ``yaad.stats.poisson.logpmf(k,
mu)``, ``yaad.stats.multivariate_normal.logpdf(x, mean, cov)``; calling a distribution
freezes its parameters (``yaad.stats.gamma(a, scale=s).logpdf(x)``). Every function is
composed of yaad functions, so gradients (and higher derivatives, forward mode) flow to
the value and to every parameter, tensors or not; on plain arrays the results are arrays.

Continuous distributions: ``norm t gamma beta chi2 expon laplace cauchy uniform lognorm``,
each with ``logpdf pdf logcdf cdf logsf sf``. Discrete: ``poisson binom`` with ``logpmf
pmf``. Multivariate: ``dirichlet`` and ``multivariate_normal`` (full covariance, batched)
with ``logpdf pdf``.

As in SciPy, invalid parameters (a scale <= 0, a shape out of range) give NaN, and values
outside the support give ``logpdf = -inf``, ``cdf = 0`` or ``1``. Differences, all
deliberate: float32 inputs give float32 results; the gradient of a discrete
distribution in ``k`` (and of ``binom`` in ``n``) is that of the formula's continuous
extension; ``dirichlet`` returns NaN for invalid ``alpha`` and -inf for ``x`` outside
the simplex's bounds instead of raising, and does not check that ``x`` sums to one (its
gradient in ``x`` is that of the formula off the simplex); ``multivariate_normal`` also
broadcasts ``mean`` and ``cov`` over leading batch axes, reads ``cov`` through its
symmetric part, and does not take ``allow_singular=True``; ``gamma.logpdf`` and
``chi2.logpdf`` at ``x = inf`` are ``-inf`` (the limit; SciPy's is NaN for ``a > 1``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import scipy.special as sp

from . import linalg
from .core.grad_mode import state
from .core.op import Op, apply
from .core.tensor import Tensor
from .ops.elementwise import (
    _t_log_density,
    arctan2,
    betainc,
    betaln,
    digamma,
    exp,
    expm1,
    floor,
    gammainc,
    gammaincc,
    gammaln,
    log,
    log1p,
    log_ndtr,
    ndtr,
    stdtr,
    where,
    xlog1py,
    xlogy,
)
from .ops.elementwise import abs as _abs
from .ops.reductions import any as _any
from .ops.reductions import sum as _sum
from .ops.shape import concatenate, diagonal, expand_dims, matrix_transpose, squeeze

__all__ = ["norm", "t", "gamma", "beta", "chi2", "expon", "laplace", "cauchy", "uniform",
           "lognorm", "poisson", "binom", "dirichlet", "multivariate_normal"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG2 = math.log(2.0)
_INF = math.inf


def _finite_shape(x: Any) -> tuple[int, ...]:
    return tuple(getattr(x, "shape", np.shape(x)))


class _Params:
    """Parsing of SciPy's ``f(x, *shapes, loc=0, scale=1)`` calling convention."""

    def __init__(self, name: str, shapes: tuple[str, ...],
                 extra: tuple[tuple[str, Any], ...]) -> None:
        self.name = name
        self.shapes = shapes
        self.names = shapes + tuple(k for k, _ in extra)
        self.defaults = dict(extra)

    def parse(self, method: str, args: tuple[Any, ...], kwds: dict[str, Any],
              x: Any = None) -> list[Any]:
        """The parameters in order; Python numbers become arrays of ``x``'s precision (as
        NumPy treats Python numbers: float32 stays float32)."""
        what = f"stats.{self.name}.{method}"
        if len(args) > len(self.names):
            raise TypeError(f"{what}: takes at most {len(self.names)} parameters "
                            f"{self.names} after the value, got {len(args)}")
        values = dict(self.defaults)
        values.update(zip(self.names, args))
        for k, v in kwds.items():
            if k not in self.names:
                raise TypeError(f"{what}: unexpected keyword argument {k!r} (parameters: "
                                f"{', '.join(self.names)})")
            if k in dict(zip(self.names, args)):
                raise TypeError(f"{what}: got multiple values for {k!r}")
            values[k] = v
        missing = [k for k in self.shapes if k not in values]
        if missing:
            raise TypeError(f"{what}: missing the shape parameter(s) {missing}")
        dtype = np.result_type(getattr(x, "dtype", np.float64), np.float32)
        return [np.asarray(v, dtype=dtype) if isinstance(v, (int, float)) and not isinstance(
            v, bool) else v for v in (values[k] for k in self.names)]


class _Frozen:
    """A distribution with its parameters fixed (``yaad.stats.norm(loc, scale)``)."""

    def __init__(self, dist: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> None:
        self.dist, self.args, self.kwds = dist, args, kwds

    def __getattr__(self, method: str) -> Callable[[Any], Any]:
        f = getattr(self.dist, method)
        return lambda x: f(x, *self.args, **self.kwds)

    def __repr__(self) -> str:
        return f"<frozen yaad.stats.{self.dist.name}{self.args or ''}{self.kwds or ''}>"


def _guard(ok: Any, value: Any, safe: float) -> Any:
    """``value`` where the parameters are valid, ``safe`` elsewhere; a Python number stays
    one when all are valid (a 0-d array would promote float32 inputs to float64)."""
    if ok is True or ok is np.True_:
        return value
    return where(ok, value, safe)


class _Distribution:
    """What every distribution does with its name and parameters: freeze them when
    called, and show its name."""

    name = ""
    params: _Params

    def __call__(self, *args: Any, **kwds: Any) -> _Frozen:
        self.params.parse("__call__", args, kwds)
        return _Frozen(self, args, kwds)

    def __repr__(self) -> str:
        return f"<yaad.stats.{self.name}>"


class _Continuous(_Distribution):
    """A continuous distribution in SciPy's location-scale form: for ``z = (x - loc) /
    scale``, ``logpdf(x) = logpdf_z(z) - log(scale)`` and ``cdf(x) = cdf_z(z)``.

    ``std`` maps "logpdf", "cdf", "sf" and optionally "logcdf", "logsf" to functions
    ``f(z, *shapes)`` of the standard distribution, evaluated only inside the support
    ``[lo, hi]`` (``lo`` excluded when ``open_lo``). ``valid(*shapes)`` says where the
    shape parameters are in range; ``safe`` are in-range values substituted elsewhere
    (so that nothing outside the domain is computed, not even in a branch not taken).

    A density with a term ``c log z`` that is infinite at an edge of the support (gamma,
    chi2, beta) gives "logpdf_u" instead: ``f(u, scale, *shapes)`` with ``u = x - loc``,
    and ``log z`` written ``log(u) - log(scale)``. At the edge the parameters' derivatives
    are then the limits of their derivatives from inside the support: ``-c / scale`` in
    the scale (``(c / z) * dz/dscale`` was ``inf * 0``, NaN), ``log 0 = -inf`` in ``c``.
    """

    def __init__(self, name: str, shapes: tuple[str, ...], std: dict[str, Callable[..., Any]],
                 lo: float = -_INF, hi: float = _INF, open_lo: bool = False,
                 valid: Callable[..., Any] | None = None, safe: tuple[float, ...] = (),
                 doc: str = "") -> None:
        self.name = name
        self.ends = _ENDS[name]
        self.far = _FAR.get(name)
        self.vanish = _VANISH.get(name)
        self.vanish_shapes = _VANISH_SHAPES.get(name, {})
        self.params = _Params(name, shapes, (("loc", 0.0), ("scale", 1.0)))
        self.std = std
        self.lo, self.hi, self.open_lo = lo, hi, open_lo
        self.valid = valid
        self.safe = safe
        sig = ", ".join(("x",) + shapes + ("loc=0", "scale=1"))
        self.__doc__ = (
            f"The {doc} distribution (scipy.stats.{name}), differentiable in x and in every "
            f"parameter.\n\nMethods ``logpdf pdf logcdf cdf logsf sf``, each called as "
            f"``f({sig})`` (SciPy's convention); calling ``{name}({sig[3:]})`` freezes the "
            f"parameters.")

    def _standard(self, method: str, x: Any, args: tuple[Any, ...], kwds: dict[str, Any],
                  closed: bool = False, end: str | None = None
                  ) -> tuple[Any, Any, Any, Any, list[Any], Any, Any, Any]:
        *shapes, loc, scale = self.params.parse(method, args, kwds, x)
        ok = scale > 0
        if self.valid is not None:
            ok = ok & self.valid(*shapes)
        scale = _guard(ok, scale, 1.0)
        shapes = [_guard(ok, s, d) for s, d in zip(shapes, self.safe)]
        u = x - loc
        # At u == 0 (x at loc, the lower edge) z is 0 for every scale: its derivative in the
        # scale is exactly 0, also where the standard function's derivative in z is
        # infinite there (gamma's cdf for a < 1; the chain rule gave inf * 0, NaN).
        z = where(u == 0, u / _constant(scale), u / scale)
        below = (z <= self.lo) if self.open_lo and not closed or end == "lo" else (z < self.lo)
        above = (z >= self.hi) if end == "hi" else (z > self.hi)
        far: Any = False
        if end == "far":  # (logpdf at x = +-inf: the limits of self.far, in place of z)
            if self.far is not None:
                far = _abs(z) == _INF
                below = below | far
        elif end is not None:  # (a cdf at x = +-inf: constant in every argument, its limit)
            below, above = below | (z == -_INF), above | (z == _INF)
        inside = ~(below | above)
        mid = 1.0 if self.lo == -_INF or self.hi == _INF else 0.5 * (self.lo + self.hi)
        zs = where(inside, z, self.lo + 1.0 if self.hi == _INF and self.lo > -_INF else mid)
        us = where(inside, u, zs * scale) if "logpdf_u" in self.std else None
        return ok, below, above, zs, shapes, scale, us, far if end == "far" else z

    def _piecewise(self, method: str, x: Any, args: tuple[Any, ...], kwds: dict[str, Any],
                   f: Callable[..., Any], low: Any, high: Any, end: str = "") -> Any:
        """``f`` inside the support, ``low`` below it and ``high`` above it. ``end`` "lo"
        (logcdf) or "hi" (logsf): the end where the value is ``log 0 = -inf``, with the
        derivatives of ``self.ends`` there, and inside where the cdf (sf) underflows."""
        ok, below, above, zs, shapes, scale, _, z = self._standard(method, x, args, kwds,
                                                                   end=end)
        inside = f(zs, *shapes)
        if end:
            *_, loc, _ = self.params.parse(method, args, kwds, x)
            value = -_INF
            for arg, slope in zip([x, loc, scale, *shapes], self.ends[end](scale, *shapes)):
                value = value + _end_slope(arg, slope)
            edge = z == (self.lo if end == "lo" else self.hi)
            if end == "lo":
                low = where(edge, value, low)
            else:
                high = where(edge, value, high)
            inside = where(inside == -_INF, value, inside)
        return where(ok, where(below, low, where(above, high, inside)), _NAN)

    def logpdf(self, x: Any, *args: Any, **kwds: Any) -> Any:
        """Log of the probability density at ``x``."""
        # (an open edge, lognorm's 0, is computed as the limit from inside: -inf)
        check = self.far is not None
        if check:  # (skipped, with its ops, where no entry of x is infinite: the common case)
            vals = _values(x)
            check = vals is None or bool(np.isinf(vals[0]).any())
        ok, below, above, zs, shapes, scale, us, far = self._standard(
            "logpdf", x, args, kwds, closed="logpdf_u" in self.std,
            end="far" if check else None)
        if "logpdf_u" in self.std:
            inside = self.std["logpdf_u"](us, scale, *shapes) - log(scale)
        else:
            inside = self.std["logpdf"](zs, *shapes) - log(scale)
        out = where(below | above, -_INF, inside)
        if check:
            # x = +-inf at an infinite end: -inf (the density's limit 0; SciPy's gamma and
            # chi2 give inf - inf = NaN for a > 1), with each derivative the limit of the
            # derivative as x goes there (the formula at inf gave NaN or the wrong limit:
            # lognorm in x, t and cauchy in the scale)
            if _anywhere(far):
                *_, loc, _ = self.params.parse("logpdf", args, kwds, x)
                ends = self.far or {}
                for end, at in (("lo", far & (x < loc)), ("hi", far & (x > loc))):
                    if end in ends:
                        value = -_INF
                        for arg, slope in zip([x, loc, scale, *shapes],
                                              ends[end](scale, *shapes)):
                            value = value + _end_slope(arg, slope)
                        out = where(at, value, out)
        return where(ok, out, _NAN)

    def pdf(self, x: Any, *args: Any, **kwds: Any) -> Any:
        """Probability density at ``x``."""
        out = exp(self.logpdf(x, *args, **kwds))
        if self.vanish is None:
            return out
        # A density ~ C z^c at an end (c = a - 1), c > 0: exp(logpdf) had the gradient 0
        # there (exp(-inf) * inf), the limit of the slope from inside is C / scale^2 for
        # c = 1, +-inf for 0 < c < 1, 0 for c > 1 (in the scale 0 at the lower end and
        # minus that at the upper one, in the shapes 0)
        *shapes, loc, scale = self.params.parse("pdf", args, kwds, x)
        vals = _values(x, loc, scale)
        u = None
        for end in self.vanish:
            if vals is not None:  # (no op where no entry is at the end: the common case)
                xv, lv, sv = vals
                with np.errstate(all="ignore"):
                    if not np.any(xv == lv if end == "lo" else (xv - lv) / sv == 1):
                        continue
            u = x - loc if u is None else u
            at = (u == 0) if end == "lo" else (u / scale == 1)  # (as _standard's edges)
            if _anywhere(at):
                ok = scale > 0
                if self.valid is not None:
                    ok = ok & self.valid(*shapes)
                sc = _guard(ok, scale, 1.0)
                sh = [_guard(ok, v, d) for v, d in zip(shapes, self.safe)]
                c, const = self.vanish[end](*sh)
                sign = 1.0 if end == "lo" else -1.0
                zero = at & ok & (c > 0)  # (exp(logpdf) there: 0 * inf in forward mode)
                slope = where(zero, where(
                    c == 1, sign * const / (sc * sc), where(c < 1, sign * _INF, 0.0)), 0.0)
                value = _end_slope(x, slope) + _end_slope(loc, -slope)
                if end == "hi":  # (the scale moves the upper end: -slope there, 0 at loc)
                    value = value + _end_slope(scale, -slope)
                out = where(zero, value, out)
                # c < 0: the density is +inf there, each derivative +-inf (the sign of the
                # log-density's: -inf in the scale, in x toward the inside; exp(logpdf)
                # gave NaN in the shapes and the scale)
                up = at & ok & (c < 0)
                value = (_INF + _end_slope(x, -sign * _INF + 0.0 * sc)
                         + _end_slope(loc, sign * _INF + 0.0 * sc)
                         + _end_slope(scale, -_INF + 0.0 * sc))
                for v, d in zip(shapes, self.vanish_shapes[end]):
                    value = value + _end_slope(v, d * _INF + 0.0 * sc)
                out = where(up, value, out)
        return out

    def cdf(self, x: Any, *args: Any, **kwds: Any) -> Any:
        """Cumulative distribution function, P(X <= x)."""
        return self._piecewise("cdf", x, args, kwds, self.std["cdf"], 0.0, 1.0)

    def sf(self, x: Any, *args: Any, **kwds: Any) -> Any:
        """Survival function, P(X > x) = 1 - cdf(x)."""
        return self._piecewise("sf", x, args, kwds, self.std["sf"], 1.0, 0.0)

    def logcdf(self, x: Any, *args: Any, **kwds: Any) -> Any:
        """Log of the cumulative distribution function."""
        f = self.std.get("logcdf") or (lambda z, *s: _log_of(self.std["cdf"], self.std["sf"],
                                                              z, *s))
        return self._piecewise("logcdf", x, args, kwds, f, -_INF, 0.0, "lo")

    def logsf(self, x: Any, *args: Any, **kwds: Any) -> Any:
        """Log of the survival function."""
        f = self.std.get("logsf") or (lambda z, *s: _log_of(self.std["sf"], self.std["cdf"],
                                                             z, *s))
        return self._piecewise("logsf", x, args, kwds, f, 0.0, -_INF, "hi")


_NAN = math.nan


def _log_of(p: Callable[..., Any], q: Callable[..., Any], z: Any, *shapes: Any) -> Any:
    """``log p(z)`` for a probability ``p = 1 - q``: ``log1p(-q)`` where ``q < 1/2`` (``log p``
    lost every digit of a small ``q``: log(1 - 3.0e-16) came out -3.3e-16)."""
    pz, qz = p(z, *shapes), q(z, *shapes)
    small, under = qz < 0.5, pz == 0  # (under: p underflowed, log 0 without NumPy's warning)
    return where(small, log1p(-where(small, qz, 0.0)),
                 where(under, -_INF, log(where(small | under, 1.0, pz))))


def _end_slope_vjp(g: Any, ans: Any, a: Any, slope: Any) -> Any:
    return g * slope


def _end_slope_vjp_slope(g: Any, ans: Any, a: Any, slope: Any) -> Any:
    return 0 * g


def _end_slope_jvp(t: Any, ans: Any, a: Any, slope: Any) -> Any:
    return where(t == 0, 0.0, t * slope)  # (a tangent 0 moves nothing, also at slope inf)


def _end_slope_forward(a: Any, slope: Any) -> Any:
    shape = np.broadcast_shapes(np.shape(a), np.shape(slope))
    return np.zeros(shape, np.result_type(a, slope))


# 0 with the derivative ``slope`` in ``a`` (+-inf allowed: below a ``where`` the engine makes
# 0 * inf a strong zero), 0 in ``slope``: the derivatives of a log-cdf at an end of the
# support, where its value is -inf. An op of this module, as stats.shape_xlogy.
_END_SLOPE = Op(forward=_end_slope_forward, name="stats.end_slope",
                vjps=(_end_slope_vjp, _end_slope_vjp_slope),
                jvps=(_end_slope_jvp, _end_slope_vjp_slope),
                save_args=True, save_ans=False, nout=1, variadic=False, elementwise=True,
                selects=False, linear=False)
_END_SLOPE.batch = "broadcast"


def _end_slope(a: Any, slope: Any) -> Any:
    if isinstance(a, Tensor) or isinstance(slope, Tensor):
        return apply(_END_SLOPE, (a, slope), {})
    return _end_slope_forward(a, slope)


_END_SLOPE.fn = _end_slope


# ---- the standard forms ------------------------------------------------------------------

def _shape_xlogy_dc(g: Any, ans: Any, c: Any, y: Any) -> Any:
    return g * log(y)


def _shape_xlogy_dy(g: Any, ans: Any, c: Any, y: Any) -> Any:
    return g * (c / where((c == 0) & (y == 0), 1.0, y))  # (0 at c == y == 0, as xlogy's)


# ``c log(y)`` at the edge of a support, y == 0, for a shape parameter ``c`` (``a - 1``):
# its value is xlogy's (0 at c == 0, -inf or +inf otherwise), its derivative in ``c`` is
# log(y) = -inf also at c == 0 (a = 1, where the value jumps from +inf through 0 to -inf:
# both one-sided derivatives are -inf), where the xlogy op gives 0 (PyTorch's choice for
# xlogy, which gave d/da gamma.logpdf(0, a=1) = -digamma(1), a finite number). An op of
# this module (not in the registry: a rule of the distributions, as ops.strong_zero's).
_SHAPE_XLOGY = Op(forward=sp.xlogy, name="stats.shape_xlogy",
                  vjps=(_shape_xlogy_dc, _shape_xlogy_dy),
                  jvps=(lambda t, ans, c, y: _shape_xlogy_dc(t, ans, c, y),
                        lambda t, ans, c, y: _shape_xlogy_dy(t, ans, c, y)),
                  save_args=True, save_ans=False, nout=1, variadic=False, elementwise=True,
                  selects=False, linear=False)
_SHAPE_XLOGY.batch = "broadcast"


def _shape_xlogy(c: Any, y: Any) -> Any:
    if isinstance(c, Tensor) or isinstance(y, Tensor):
        return apply(_SHAPE_XLOGY, (c, y), {})
    return sp.xlogy(c, y)


def _xlogy(c: Any, y: Any) -> Any:
    """``c log(y)`` (0 where c == y == 0) with the gradient ``log(y)`` in ``c`` also at
    ``c == 0``: -inf at ``y == 0`` (the xlogy op gives 0 there, PyTorch's choice, wrong
    for a parameter). ``y`` is never negative here (values outside a support are replaced
    by safe ones)."""
    pos = y > 0
    return where(pos, c * log(where(pos, y, 1.0)), _shape_xlogy(c, y))


_SHAPE_XLOGY.fn = _shape_xlogy


def _xlogy_count(k: Any, y: Any) -> Any:
    """``k log(y)`` for a count ``k`` (poisson, binom): as :func:`_xlogy` for ``y > 0``; at
    ``y == 0`` the xlogy op's (0 in ``k`` at ``k == 0``: the gradient in ``k`` is that of
    the formula's continuous extension, as documented, and the parameter's is unchanged)."""
    pos = y > 0
    return where(pos, k * log(where(pos, y, 1.0)), xlogy(k, y))


def _xlog1py_count(k: Any, y: Any) -> Any:
    """``k log1p(y)``, as :func:`_xlogy_count`."""
    pos = y > -1
    return where(pos, k * log1p(where(pos, y, 0.0)), xlog1py(k, y))


def _constant(x: Any) -> Any:
    """``x`` without its gradient."""
    return x.detach() if isinstance(x, Tensor) else x


def _upper_gap(u: Any, s: Any) -> Any:
    """``s - u`` (the distance to the upper edge ``loc + scale``), exactly 0 where ``u / s``
    rounds to 1 (SciPy's edge), with the derivatives of ``s - u`` there."""
    d = s - u
    return where(u / s >= 1, d - _constant(d), d)


def _laplace_cdf(z: Any) -> Any:
    left = z <= 0
    return where(left, 0.5 * exp(where(left, z, 0)), 1 - 0.5 * exp(-where(left, 0, z)))


def _laplace_logcdf(z: Any) -> Any:
    left = z <= 0
    return where(left, where(left, z, 0) - _LOG2, log1p(-0.5 * exp(-where(left, 0, z))))


# The derivatives of logcdf at the lower end and of logsf at the upper end of the support,
# in (x, loc, scale, *shapes): the limits from inside. Near a finite end, cdf ~ C z^p (p and C
# functions of the shapes): (p / z) dz in x, loc and scale (-p / scale in the scale at z = 0,
# which it does not move, +inf in the scale at z = 1, which it moves away), and p'(shape)
# log z + C'/C in a shape (-inf, or C'/C where p does not depend on it). At an infinite end,
# the limit of the derivative of the log tail's asymptotic form as x goes to it.
_I = _INF


def _t_end(s: Any, df: Any) -> tuple[Any, ...]:
    # t's tails: cdf ~ C(df) |z|^-df, so 0 in x and loc, df / scale in the scale, -inf in df;
    # at df = inf the normal's (+inf in x, the others the same)
    normal, zero = df == _INF, 0.0 * s  # (zero: the precision of the parameters)
    return where(normal, _I + zero, zero), where(normal, zero - _I, zero), df / s, -_I


_ENDS: dict[str, dict[str, Callable[..., tuple[Any, ...]]]] = {
    "norm": {"lo": lambda s: (_I, -_I, _I), "hi": lambda s: (-_I, _I, _I)},
    "t": {"lo": _t_end, "hi": _t_end},
    "cauchy": {"lo": lambda s: (0.0, 0.0, 1 / s), "hi": lambda s: (0.0, 0.0, 1 / s)},
    "laplace": {"lo": lambda s: (1 / s, -1 / s, _I), "hi": lambda s: (-1 / s, 1 / s, _I)},
    "gamma": {"lo": lambda s, a: (_I, -_I, -a / s, -_I),
              "hi": lambda s, a: (-1 / s, 1 / s, _I, _I)},
    "chi2": {"lo": lambda s, df: (_I, -_I, -0.5 * df / s, -_I),
             "hi": lambda s, df: (-0.5 / s, 0.5 / s, _I, _I)},
    "beta": {"lo": lambda s, a, b: (_I, -_I, -a / s, -_I, digamma(a + b) - digamma(b)),
             "hi": lambda s, a, b: (-_I, _I, _I, digamma(a + b) - digamma(a), -_I)},
    "expon": {"lo": lambda s: (_I, -_I, -1 / s), "hi": lambda s: (-1 / s, 1 / s, _I)},
    "uniform": {"lo": lambda s: (_I, -_I, -1 / s), "hi": lambda s: (-_I, _I, _I)},
    # cdf = ndtr(log z / s): the normal's tail in log z (0 in x and loc at z = inf)
    "lognorm": {"lo": lambda scale, s: (_I, -_I, -_I, _I),
                "hi": lambda scale, s: (0.0, 0.0, _I, _I)},
}


def _t_far_end(sign: float) -> Callable[..., tuple[Any, ...]]:
    # logpdf ~ -(df + 1) log|z|: 0 in x and loc, df / scale in the scale, -inf in df; at
    # df = inf the normal's (0 in df, as inside)
    def slopes(s: Any, df: Any) -> tuple[Any, ...]:
        normal, zero = df == _INF, 0.0 * s
        dx = where(normal, -sign * _I + zero, zero)
        return dx, -dx, where(normal, _I + zero, df / s), where(normal, zero, -_I + zero)
    return slopes


# The derivatives of logpdf at x = -inf ("lo") and x = +inf ("hi"), at an infinite end of
# the support, in (x, loc, scale, *shapes): the limits as x goes there.
_FAR: dict[str, dict[str, Callable[..., tuple[Any, ...]]]] = {
    "norm": {"lo": lambda s: (_I, -_I, _I), "hi": lambda s: (-_I, _I, _I)},
    "t": {"lo": _t_far_end(-1.0), "hi": _t_far_end(1.0)},
    "cauchy": {"lo": lambda s: (0.0, 0.0, 1 / s), "hi": lambda s: (0.0, 0.0, 1 / s)},
    "laplace": {"lo": lambda s: (1 / s, -1 / s, _I), "hi": lambda s: (-1 / s, 1 / s, _I)},
    "gamma": {"hi": lambda s, a: (-1 / s, 1 / s, _I, _I)},
    "chi2": {"hi": lambda s, df: (-0.5 / s, 0.5 / s, _I, _I)},
    "expon": {"hi": lambda s: (-1 / s, 1 / s, _I)},
    # -log z - log(z)^2 / (2 s^2): 0 in x and loc, +inf in the scale and in s
    "lognorm": {"hi": lambda scale, s: (0.0, 0.0, _I, _I)},
}


# Densities that vanish (or not) at a finite end as C z^c in the distance z to it: (c, C)
# from the shapes (C only where c = 1 is needed).
_VANISH: dict[str, dict[str, Callable[..., tuple[Any, Any]]]] = {
    "gamma": {"lo": lambda a: (a - 1, 1.0)},
    "chi2": {"lo": lambda df: (0.5 * df - 1, 0.25)},
    "beta": {"lo": lambda a, b: (a - 1, b * (b + 1)), "hi": lambda a, b: (b - 1, a * (a + 1))},
}
# where c < 0 (the density infinite at the end): the signs of its derivatives in the shapes
# there (log z's -inf in the exponent's parameter, digamma(a + b) - digamma(b) > 0 in b)
_VANISH_SHAPES: dict[str, dict[str, tuple[float, ...]]] = {
    "gamma": {"lo": (-1.0,)}, "chi2": {"lo": (-1.0,)},
    "beta": {"lo": (-1.0, 1.0), "hi": (1.0, -1.0)},
}


norm = _Continuous("norm", (), {
    "logpdf": lambda z: -0.5 * z * z - _LOG_SQRT_2PI,
    "cdf": ndtr, "sf": lambda z: ndtr(-z), "logcdf": log_ndtr, "logsf": lambda z: log_ndtr(-z),
}, doc="normal")
t = _Continuous("t", ("df",), {
    "logpdf": lambda z, df: _t_log_density(df, z),
    "cdf": lambda z, df: stdtr(df, z), "sf": lambda z, df: stdtr(df, -z),
    "logcdf": lambda z, df: _t_logcdf(z, df), "logsf": lambda z, df: _t_logcdf(-z, df),
}, valid=lambda df: df > 0, safe=(1.0,), doc="Student's t")
# Log tails where the probability underflows inside the support (log 0 = -inf, with the
# end's derivatives, was wrong in every derivative): continued fractions in log space, a
# fixed number of modified-Lentz steps written with yaad functions, so that their
# derivatives (any order, both modes) are those of the converged fraction. They are used
# only there, far out in the tail, where they converge within these steps to rounding
# (tests/test_stats_near_ends.py, against mpmath).
_TAIL_STEPS = 20
_TAIL_BELOW = 1e-280  # (and in the subnormal numbers, where log q and 1 / q lose digits)


def _underflows(p: Any) -> Any:
    """Where the probability ``p`` is in the tail: below ``1e-280`` in float64, ``1e-30`` in
    float32 (whose 1e-280 is 0: a float32 tail was the end's)."""
    return p < (1e-30 if getattr(p, "dtype", None) == np.float32 else _TAIL_BELOW)


def _anywhere(mask: Any) -> bool:
    """Whether any entry of ``mask`` holds (True where that cannot be read: inside vmap).
    The tails below are computed only then: twenty steps of a continued fraction cost as
    much as the rest of the function, and the common case is well inside."""
    vals = _values(mask)
    if vals is not None:
        return bool(np.any(vals[0]))
    try:
        return bool(_any(mask))
    except TypeError:
        return True


def _values(*vs: Any) -> list[Any] | None:
    """The arrays of ``vs``, read without an op, for a decision in Python that skips work
    (infinite inputs, inputs at an end); None while yaad.compile records (a read is then a
    guarded op: ``_anywhere``), under a mode (vmap, forward mode) or for an array that is
    not NumPy's."""
    if state.tracer is not None or state.modes_on:  # (vmap's arrays hold every example)
        return None
    out = []
    for v in vs:
        d = v.data if isinstance(v, Tensor) else v
        if not isinstance(d, (np.ndarray, np.generic, int, float)):
            return None
        out.append(d)
    return out


def _in_tail(under: Any, tail: Callable[[], Any], usual: Any) -> Any:
    """``tail()`` where ``under``, ``usual`` elsewhere (``tail`` is not called where no
    entry is under)."""
    return where(under, tail(), usual) if _anywhere(under) else usual


def _gamma_logsf_cf(z: Any, a: Any) -> Any:
    """``log Q(a, z)`` from Legendre's continued fraction (for ``z > a + 1``)."""
    b = z + 1 - a
    d = 1 / b
    c = 1e300  # (1 / tiny: the first step's c is b)
    h = d
    for i in range(1, _TAIL_STEPS + 1):
        an = -i * (i - a)
        b = b + 2
        d = 1 / (an * d + b)
        c = b + an / c
        h = h * (d * c)
    return _xlogy(a, z) - z - gammaln(a) + log(h)


def _gamma_logsf(z: Any, a: Any) -> Any:
    """``log Q(a, z)``: from ``gammaincc``, or from the continued fraction where it
    underflows or nearly (``gamma.logsf(800, 2)``: -793.314, not -inf)."""
    q = gammaincc(a, z)
    under = _underflows(q)
    # (a half where unused: no overflow in the derivatives of a branch not taken)
    usual = _log_of(lambda v, s: where(under, 0.5, q),
                    lambda v, s: where(under, 0.5, gammainc(s, v)), z, a)
    return _in_tail(under, lambda: _gamma_logsf_cf(where(under, z, 1000.0),
                                                   where(under, a, 1.0)), usual)


_SERIES_TERMS = 40


def _gamma_logcdf_series(z: Any, a: Any) -> Any:
    """``log P(a, z)`` from the series ``z^a e^-z / Gamma(a + 1) sum_n z^n / ((a + 1) ...
    (a + n))``: its terms shrink by ``z / (a + n)`` (converged to rounding in these terms
    where ``z < (a + 1) / 3``, which holds wherever ``P`` underflows for ``a < 1500``)."""
    term = 1.0 + 0.0 * z
    total = term
    for n in range(1, _SERIES_TERMS + 1):
        term = term * (z / (a + n))
        total = total + term
    return _xlogy(a, z) - z - gammaln(a + 1) + log(total)


def _gamma_logcdf(z: Any, a: Any) -> Any:
    """``log P(a, z)``: from ``gammainc``, or from the series where it underflows or
    nearly (``gamma.logcdf(1e-300, 2.5)``: -748.82, not -inf)."""
    p = gammainc(a, z)
    under = _underflows(p)
    usual = _log_of(lambda v, s: where(under, 0.5, p),
                    lambda v, s: where(under, 0.5, gammaincc(s, v)), z, a)
    return _in_tail(under, lambda: _gamma_logcdf_series(where(under, z, 1.0),
                                                        where(under, a, 1.0)), usual)


def _beta_logcdf_cf(z: Any, a: Any, b: Any, log_z: Any = None, log1m_z: Any = None) -> Any:
    """``log I_z(a, b)`` from its continued fraction (for ``z < (a + 1) / (a + b + 2)``);
    ``log_z`` and ``log1m_z``, where given, are ``log z`` and ``log(1 - z)`` computed
    without rounding ``z`` (t's ``w``, which underflows; beta's ``1 - x``)."""
    qab, qap, qam = a + b, a + 1, a - 1
    c = 1.0
    d = 1 / (1 - qab * z / qap)
    h = d
    for m in range(1, _TAIL_STEPS + 1):
        aa = m * (b - m) * z / ((qam + 2 * m) * (a + 2 * m))
        d = 1 / (1 + aa * d)
        c = 1 + aa / c
        h = h * (d * c)
        aa = -(a + m) * (qab + m) * z / ((a + 2 * m) * (qap + 2 * m))
        d = 1 / (1 + aa * d)
        c = 1 + aa / c
        h = h * (d * c)
    head = _xlogy(a, z) if log_z is None else a * log_z
    head = head + (xlog1py(b, -z) if log1m_z is None else b * log1m_z)
    return head - log(a) - betaln(a, b) + log(h)


def _beta_logcdf(z: Any, a: Any, b: Any) -> Any:
    """``log I_z(a, b)``: from ``betainc``, or from the continued fraction where it
    underflows or nearly (``beta.logcdf(0.01, 200, 2)``: -915.741, not -inf)."""
    p = betainc(a, b, z)
    under = _underflows(p)
    usual = _log_of(lambda v, s, t: where(under, 0.5, p),
                    lambda v, s, t: where(under, 0.5, _beta_sf(v, s, t)), z, a, b)
    return _in_tail(under, lambda: _beta_logcdf_cf(
        where(under, z, 0.5), where(under, a, 1.0), where(under, b, 1.0)), usual)


def _beta_logsf(z: Any, a: Any, b: Any) -> Any:
    """``log(1 - I_z(a, b))``: as :func:`_beta_logcdf`, the upper tail being ``I_(1-z)(b,
    a)`` (``beta.logsf(0.99, 2, 200)``: -903.78, not -inf), with ``log(1 - z)`` as
    ``log1p(-z)``."""
    q = _beta_sf(z, a, b)
    under = _underflows(q)
    usual = _log_of(lambda v, s, t: where(under, 0.5, q),
                    lambda v, s, t: where(under, 0.5, betainc(s, t, v)), z, a, b)

    def tail() -> Any:
        zs = where(under, z, 0.5)
        return _beta_logcdf_cf(1 - zs, where(under, b, 1.0), where(under, a, 1.0),
                               log1p(-zs), log(zs))
    return _in_tail(under, tail, usual)


def _t_logcdf(z: Any, df: Any) -> Any:
    """``log stdtr(df, z)``: where it underflows (``z`` far below 0), ``log(I_w(df / 2,
    1 / 2) / 2)`` for ``w = df / (df + z^2)``, with ``log w`` computed from ``r = sqrt(df) /
    |z|`` (``z^2`` overflows, ``w`` underflows: ``t.logcdf(-1e300, 3)`` is -2072.0, not
    -inf); the normal's ``log_ndtr`` at ``df = inf``."""
    p = stdtr(df, z)
    under = _underflows(p)
    usual = _log_of(lambda v, s: where(under, 0.5, p),
                    lambda v, s: where(under, 0.5, stdtr(s, -v)), z, df)

    def tail() -> Any:
        normal = df == _INF
        zs = where(under, z, -1e10)  # (a safe value, also in float32)
        dfs = where(under & ~normal, df, 3.0)
        r = dfs ** 0.5 / -zs
        r2 = r * r
        w = r2 / (1 + r2)
        log_w = log(dfs) - 2 * log(-zs) - log1p(r2)  # (2 log r lost d/dz: z^2 overflows)
        half = 0.0 * _constant(r2) + 0.5  # (b = 1/2 in the precision of z: float32 stays)
        out = _beta_logcdf_cf(w, 0.5 * dfs, half, log_w, -log1p(r2)) - _LOG2
        return where(normal, log_ndtr(where(normal, zs, -40.0)), out)
    return _in_tail(under, tail, usual)


gamma = _Continuous("gamma", ("a",), {
    "logpdf_u": lambda u, s, a: _xlogy(a - 1, u) - (a - 1) * log(s) - u / s - gammaln(a),
    "cdf": lambda z, a: gammainc(a, z), "sf": lambda z, a: gammaincc(a, z),
    "logsf": _gamma_logsf, "logcdf": _gamma_logcdf,
}, lo=0.0, valid=lambda a: a > 0, safe=(1.0,), doc="gamma")
chi2 = _Continuous("chi2", ("df",), {
    "logpdf_u": lambda u, s, df: (_xlogy(0.5 * df - 1, u) - (0.5 * df - 1) * log(s)
                                  - 0.5 * u / s - gammaln(0.5 * df) - 0.5 * df * _LOG2),
    "cdf": lambda z, df: gammainc(0.5 * df, 0.5 * z),
    "sf": lambda z, df: gammaincc(0.5 * df, 0.5 * z),
    "logsf": lambda z, df: _gamma_logsf(0.5 * z, 0.5 * df),
    "logcdf": lambda z, df: _gamma_logcdf(0.5 * z, 0.5 * df),
}, lo=0.0, valid=lambda df: df > 0, safe=(1.0,), doc="chi-squared")
def _beta_sf(z: Any, a: Any, b: Any) -> Any:
    # 1 - I_z(a, b) where that is at least 1/2 (no cancellation) or where 1 - z rounds to 1;
    # I_(1-z)(b, a) elsewhere (a small upper tail). I_(1-z)(b, a) alone lost z below
    # eps / 2: sf(1e-20, 0.001, 2) was 1 (SciPy, mpmath: 0.044), its derivatives in a, b 0.
    lower = betainc(a, b, z)
    inside = (lower < 0.5) | (1 - z == 1)
    upper = betainc(b, a, where(inside, 0.5, 1 - z))  # (not at 1 where unused: inf * 0)
    return where(inside, 1 - lower, upper)


beta = _Continuous("beta", ("a", "b"), {
    "logpdf_u": lambda u, s, a, b: (_xlogy(a - 1, u) + _xlogy(b - 1, _upper_gap(u, s))
                                    - (a + b - 2) * log(s) - betaln(a, b)),
    "cdf": lambda z, a, b: betainc(a, b, z), "sf": _beta_sf, "logcdf": _beta_logcdf,
    "logsf": _beta_logsf,
}, lo=0.0, hi=1.0, valid=lambda a, b: (a > 0) & (b > 0), safe=(1.0, 1.0), doc="beta")
expon = _Continuous("expon", (), {
    "logpdf": lambda z: -z, "cdf": lambda z: -expm1(-z), "sf": lambda z: exp(-z),
    "logsf": lambda z: -z, "logcdf": lambda z: _log_of(lambda v: -expm1(-v), lambda v: exp(-v), z),
}, lo=0.0, doc="exponential")
laplace = _Continuous("laplace", (), {
    "logpdf": lambda z: -_abs(z) - _LOG2,
    "cdf": _laplace_cdf, "sf": lambda z: _laplace_cdf(-z),
    "logcdf": _laplace_logcdf, "logsf": lambda z: _laplace_logcdf(-z),
}, doc="Laplace (double exponential)")
def _cauchy_logpdf(z: Any) -> Any:
    # -log(pi) - log1p(z^2), written -2 log|z| - log1p(1 / z^2) for |z| > 1: z^2 overflowed
    # beyond 1e154 (-inf, where SciPy's value is finite)
    far = _abs(z) > 1
    zf, zn = where(far, z, 2.0), where(far, 0.0, z)
    return -math.log(math.pi) + where(far, -2 * log(_abs(zf)) - log1p((1 / zf) ** 2),
                                      -log1p(zn * zn))


cauchy = _Continuous("cauchy", (), {
    "logpdf": _cauchy_logpdf,
    "cdf": lambda z: arctan2(1.0, -z) / math.pi, "sf": lambda z: arctan2(1.0, z) / math.pi,
}, doc="Cauchy")
uniform = _Continuous("uniform", (), {
    "logpdf": lambda z: 0.0 * z, "cdf": lambda z: z, "sf": lambda z: 1 - z,
    "logcdf": log, "logsf": lambda z: log1p(-z),
}, lo=0.0, hi=1.0, doc="uniform (on [loc, loc + scale])")
lognorm = _Continuous("lognorm", ("s",), {
    # (log z (1 + log z / (2 s^2)): -inf at the edge z = 0, the limit from inside; log u
    # as xlogy(1, u), which is -inf at 0 without NumPy's warning, as SciPy's lognorm)
    "logpdf_u": lambda u, scale, s: (-log(s) - _LOG_SQRT_2PI - (lambda lz: lz * (
        1 + 0.5 * lz / (s * s)))(_shape_xlogy(np.ones((), u.dtype), u) - log(scale))),
    "cdf": lambda z, s: ndtr(log(z) / s), "sf": lambda z, s: ndtr(-log(z) / s),
    "logcdf": lambda z, s: log_ndtr(log(z) / s), "logsf": lambda z, s: log_ndtr(-log(z) / s),
}, lo=0.0, open_lo=True, valid=lambda s: s > 0, safe=(1.0,), doc="log-normal")


# ---- discrete ----------------------------------------------------------------------------


class _Discrete(_Distribution):
    """A discrete distribution on the integers, shifted by ``loc``: ``logpmf(k, *shapes,
    loc=0)``; ``logpmf_k(k, *shapes)`` is evaluated only on the support."""

    def __init__(self, name: str, shapes: tuple[str, ...], logpmf_k: Callable[..., Any],
                 support: Callable[..., Any], valid: Callable[..., Any],
                 safe: tuple[float, ...], doc: str) -> None:
        self.name = name
        self.params = _Params(name, shapes, (("loc", 0),))
        self.logpmf_k, self.support, self.valid, self.safe = logpmf_k, support, valid, safe
        sig = ", ".join(("k",) + shapes + ("loc=0",))
        self.__doc__ = (
            f"The {doc} distribution (scipy.stats.{name}), differentiable in its "
            f"parameters.\n\nMethods ``logpmf pmf``, called as ``f({sig})``; calling "
            f"``{name}({sig[3:]})`` freezes the parameters. The gradient in ``k`` is that "
            f"of the formula's continuous extension.")

    def logpmf(self, k: Any, *args: Any, **kwds: Any) -> Any:
        """Log of the probability mass at ``k``."""
        *shapes, loc = self.params.parse("logpmf", args, kwds, k)
        ok = self.valid(*shapes)
        shapes = [_guard(ok, s, d) for s, d in zip(shapes, self.safe)]
        k = k - loc
        on = self.support(k, *shapes) & (k == floor(k))
        ks = where(on, k, 0.0)
        return where(ok, where(on, self.logpmf_k(ks, *shapes), -_INF), _NAN)

    def pmf(self, k: Any, *args: Any, **kwds: Any) -> Any:
        """Probability mass at ``k``."""
        return exp(self.logpmf(k, *args, **kwds))


poisson = _Discrete(
    "poisson", ("mu",), lambda k, mu: _xlogy_count(k, mu) - gammaln(k + 1) - mu,
    support=lambda k, mu: k >= 0, valid=lambda mu: mu >= 0, safe=(1.0,), doc="Poisson")
binom = _Discrete(
    "binom", ("n", "p"),
    lambda k, n, p: (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
                     + _xlogy_count(k, p) + _xlog1py_count(n - k, -p)),
    support=lambda k, n, p: (k >= 0) & (k <= n),
    valid=lambda n, p: (n >= 0) & (n == floor(n)) & (p >= 0) & (p <= 1),
    safe=(1.0, 0.5), doc="binomial")


# ---- multivariate ------------------------------------------------------------------------


def _squeezed(out: Any) -> Any:
    """SciPy's multivariate results: every axis of length 1 squeezed out."""
    return squeeze(out) if 1 in _finite_shape(out) else out


class _Dirichlet:
    """The Dirichlet distribution (scipy.stats.dirichlet), differentiable in ``x`` and
    ``alpha``.

    Methods ``logpdf(x, alpha)`` and ``pdf(x, alpha)``: ``alpha`` has shape ``(K,)``,
    ``x`` has shape ``(K, ...)`` (components first, as in SciPy) or ``(K - 1, ...)``
    (the last component is then ``1 - sum``). Calling ``dirichlet(alpha)`` freezes it.
    """

    name = "dirichlet"

    def __call__(self, alpha: Any) -> _Frozen:
        return _Frozen(self, (alpha,), {})

    def __repr__(self) -> str:
        return "<yaad.stats.dirichlet>"

    def logpdf(self, x: Any, alpha: Any) -> Any:
        """Log of the density at ``x`` (components along the first axis)."""
        ka, kx = _finite_shape(alpha), _finite_shape(x)
        if len(ka) != 1 or not kx or kx[0] not in (ka[0], ka[0] - 1):
            raise ValueError(
                f"stats.dirichlet.logpdf: alpha must be 1-D (K,) and x must have K or K - 1 "
                f"entries along its first axis; got alpha.shape = {ka}, x.shape = {kx}")
        if kx[0] == ka[0] - 1:
            x = concatenate([x, 1 - _sum(x, axis=0, keepdims=True)], axis=0)
        a = expand_dims(alpha, tuple(range(1, len(kx)))) if len(kx) > 1 else alpha
        ok = _sum(alpha <= 0) == 0
        a = _guard(ok, a, 1.0)
        inside = _sum((x < 0) | (x > 1), axis=0) == 0
        xs = where(inside, x, 0.5)
        out = _sum(_xlogy(a - 1, xs), axis=0) + gammaln(_sum(a, axis=0)) - _sum(gammaln(a),
                                                                                axis=0)
        return _squeezed(where(ok, where(inside, out, -_INF), _NAN))

    def pdf(self, x: Any, alpha: Any) -> Any:
        """Density at ``x``."""
        return exp(self.logpdf(x, alpha))


class _MultivariateNormal:
    """The multivariate normal distribution (scipy.stats.multivariate_normal),
    differentiable in ``x``, ``mean`` and ``cov``.

    Methods ``logpdf(x, mean=None, cov=1, allow_singular=False)`` and ``pdf``: ``x`` has
    shape ``(..., K)``; ``cov`` is a number (a multiple of the identity), a vector (the
    diagonal) or a full matrix ``(K, K)``; beyond SciPy, ``mean (..., K)`` and ``cov
    (..., K, K)`` may carry batch axes, broadcast with those of ``x``. The result is
    squeezed as SciPy squeezes it. Calling ``multivariate_normal(mean, cov)`` freezes it.
    """

    name = "multivariate_normal"

    def __call__(self, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> _Frozen:
        return _Frozen(self, (mean, cov, allow_singular), {})

    def __repr__(self) -> str:
        return "<yaad.stats.multivariate_normal>"

    def logpdf(self, x: Any, mean: Any = None, cov: Any = 1,
               allow_singular: bool = False) -> Any:
        """Log of the density at ``x`` (the last axis holds the components)."""
        what = "stats.multivariate_normal.logpdf"
        if allow_singular:
            raise NotImplementedError(
                f"{what}: allow_singular=True is not supported (the density of a singular "
                f"covariance lives on a subspace; its gradient in cov is not defined)")
        cshape = _finite_shape(cov)
        mshape = _finite_shape(mean) if mean is not None else None
        # SciPy's dimension: from the mean, else from a matrix cov, else 1
        k = (mshape[-1] if mshape else 1) if mean is not None else (
            cshape[-1] if len(cshape) >= 2 else 1)
        xshape = _finite_shape(x)
        if not xshape or (len(xshape) == 1 and k == 1):
            x = expand_dims(x, -1)  # SciPy: a 1-D x of a 1-D distribution holds samples
        if _finite_shape(x)[-1] != k:
            raise ValueError(f"{what}: x has {_finite_shape(x)[-1]} components along its last "
                             f"axis, the distribution {k} (x.shape = {xshape})")
        if len(cshape) == 1 and cshape[0] != k:
            raise ValueError(f"{what}: a 1-D cov (the diagonal) must have {k} entries, got "
                             f"{cshape[0]}")
        diff = x if mean is None else x - mean
        if len(cshape) < 2:  # a multiple of the identity, or the diagonal
            var = cov * np.ones(k) if len(cshape) == 0 else cov
            maha = _sum(diff * diff / var, axis=-1)
            logdet = _sum(log(var * np.ones(k)), axis=-1)
        else:
            if cshape[-2:] != (k, k):
                raise ValueError(f"{what}: cov has shape {cshape}, expected (..., {k}, {k})")
            chol = linalg.cholesky(0.5 * (cov + matrix_transpose(cov)))
            batch = np.broadcast_shapes(_finite_shape(diff)[:-1], cshape[:-2])
            sol = linalg.solve_triangular(chol, expand_dims(diff, -1) + np.zeros(batch + (k, 1)),
                                          lower=True)
            maha = _sum(squeeze(sol, -1) ** 2, axis=-1)
            logdet = 2 * _sum(log(diagonal(chol, 0, -2, -1)), axis=-1)
        return _squeezed(-0.5 * (k * math.log(2 * math.pi) + logdet + maha))

    def pdf(self, x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
        """Density at ``x``."""
        return exp(self.logpdf(x, mean, cov, allow_singular))


dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()
