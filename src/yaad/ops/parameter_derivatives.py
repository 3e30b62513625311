"""Derivatives of the regularized incomplete gamma and beta functions in their parameters.

``gammainc(a, x)`` and ``betainc(a, b, x)`` have closed-form derivatives in ``x`` only.
Their derivatives in ``a`` (and ``b``) are computed here, to second order, by evaluating
the series and continued fractions that define the functions on second-order Taylor
numbers: each quantity carries its value and its first and second derivatives along one
direction in parameter space. Plain NumPy, vectorised, no yaad import (the ops that use
these live in ``elementwise.py``).
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp

_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 5000


class Taylor:
    """A value with its first and second derivatives along one direction (arrays)."""

    __slots__ = ("v", "d", "dd")
    __array_ufunc__ = None  # ndarray (op) Taylor: NumPy defers to the methods below

    def __init__(self, v, d=0.0, dd=0.0):
        self.v, self.d, self.dd = v, d, dd

    def __add__(self, o):
        if isinstance(o, Taylor):
            return Taylor(self.v + o.v, self.d + o.d, self.dd + o.dd)
        return Taylor(self.v + o, self.d, self.dd)

    __radd__ = __add__

    def __neg__(self):
        return Taylor(-self.v, -self.d, -self.dd)

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if isinstance(o, Taylor):
            return Taylor(self.v * o.v, self.d * o.v + self.v * o.d,
                          self.dd * o.v + 2 * self.d * o.d + self.v * o.dd)
        return Taylor(self.v * o, self.d * o, self.dd * o)

    __rmul__ = __mul__

    def reciprocal(self):
        r = 1.0 / self.v
        return Taylor(r, -self.d * r * r, (2 * self.d * self.d * r - self.dd) * r * r)

    def __truediv__(self, o):
        if isinstance(o, Taylor):
            return self * o.reciprocal()
        return self * (1.0 / o)

    def __rtruediv__(self, o):
        return self.reciprocal() * o

    def where(self, mask, other):
        """This number where ``mask`` holds, ``other`` (a Taylor number) elsewhere."""
        return Taylor(np.where(mask, self.v, other.v), np.where(mask, self.d, other.d),
                      np.where(mask, self.dd, other.dd))


def _exp(t: Taylor) -> Taylor:
    e = np.exp(t.v)
    return Taylor(e, e * t.d, e * (t.dd + t.d * t.d))


def _continued_fraction(coefficient, shape) -> Taylor:
    """``1 / (1 + c1 / (1 + c2 / (1 + ...)))`` by the modified Lentz method,
    ``coefficient(m)`` giving the Taylor number ``c_m``; iterates until every entry (values
    and derivatives) has converged."""
    def guard(t):
        small = np.abs(t.v) < _TINY
        return Taylor(np.where(small, _TINY, t.v), t.d, t.dd)

    f = Taylor(np.ones(shape))
    c = Taylor(np.ones(shape))
    dcur = Taylor(np.zeros(shape))
    for m in range(1, _MAX_TERMS):
        cm = coefficient(m)
        dcur = guard(1.0 + cm * dcur).reciprocal()
        c = guard(1.0 + cm / c)
        delta = c * dcur
        f = f * delta
        err = np.abs(delta.v - 1) + np.abs(delta.d) + np.abs(delta.dd)
        if np.all(~(err > _EPS)):  # NaN entries (outside the domain) do not block
            break
    return f.reciprocal()


def _gammainc_jet(a, x):
    """``P(a, x)`` as a Taylor number in ``a`` (unit direction)."""
    shape = np.broadcast(a, x).shape
    a = np.broadcast_to(np.asarray(a, dtype=float), shape)
    x = np.broadcast_to(np.asarray(x, dtype=float), shape)
    series = x < a + 1
    with np.errstate(all="ignore"):
        logx = np.log(x)
        # Series: P = exp(a log x - x - lgamma(a + 1)) * sum_n x^n / ((a+1)...(a+n)).
        ta = Taylor(a, 1.0, 0.0)
        s = Taylor(np.ones(shape))
        term = Taylor(np.ones(shape))
        xs = np.where(series, x, 0.0)
        for n in range(1, _MAX_TERMS):
            term = term * xs / (ta + n)
            s = s + term
            if np.all(~(np.abs(term.v) + np.abs(term.d) + np.abs(term.dd)
                        > _EPS * np.abs(s.v))):
                break
        pre = _exp(Taylor(a * logx - x - sp.gammaln(a + 1), logx - sp.digamma(a + 1),
                          -sp.polygamma(1, a + 1)))
        p_series = pre * s
        # Continued fraction for Q = 1 - P (Legendre):
        # Q = exp(a log x - x - lgamma(a)) / (x + 1 - a - 1(1-a)/(x + 3 - a - ...)).
        xc = np.where(series, a + 2.0, x)
        cf = _continued_fraction(
            lambda m: (m * (ta - m)) / ((xc + 2 * m - 1 - ta) * (xc + 2 * m + 1 - ta)),
            shape) / (xc + 1 - ta)
        preq = _exp(Taylor(a * logx - x - sp.gammaln(a), logx - sp.digamma(a),
                           -sp.polygamma(1, a)))
        p_cf = 1.0 - preq * cf
    return p_series.where(series, p_cf)


def _betainc_cf(a: Taylor, b: Taylor, x) -> Taylor:
    """``I_x(a, b)`` by its continued fraction, valid (fast) for x < (a+1)/(a+b+2)."""
    shape = np.shape(x)

    def coefficient(k):
        m = k // 2
        if k % 2:  # d_{2m+1}
            return -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        return (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m))

    cf = _continued_fraction(coefficient, shape)
    logx, log1mx = np.log(x), np.log1p(-x)
    ab = a.v + b.v
    psi_ab, tri_ab = sp.digamma(ab), sp.polygamma(1, ab)
    # d/dt of a log x + b log(1-x) - log B(a, b) - log a along the direction (a.d, b.d)
    d = (a.d * (logx - sp.digamma(a.v) + psi_ab - 1 / a.v)
         + b.d * (log1mx - sp.digamma(b.v) + psi_ab))
    dd = (a.d * a.d * (-sp.polygamma(1, a.v) + tri_ab + 1 / (a.v * a.v))
          + b.d * b.d * (-sp.polygamma(1, b.v) + tri_ab) + 2 * a.d * b.d * tri_ab)
    pre = _exp(Taylor(a.v * logx + b.v * log1mx - sp.betaln(a.v, b.v) - np.log(a.v), d, dd))
    return pre * cf


def _betainc_jet(a, b, x, da: float, db: float) -> Taylor:
    """``I_x(a, b)`` as a Taylor number along the direction ``(da, db)`` in ``(a, b)``."""
    shape = np.broadcast(a, b, x).shape
    a, b, x = (np.broadcast_to(np.asarray(v, dtype=float), shape) for v in (a, b, x))
    direct = x < (a + 1) / (a + b + 2)
    with np.errstate(all="ignore"):
        xd = np.where(direct, x, 0.5 * (a + 1) / (a + b + 2))
        xs = np.where(direct, 0.5 * (b + 1) / (a + b + 2), 1 - x)
        one = _betainc_cf(Taylor(a, da), Taylor(b, db), xd)
        # I_x(a, b) = 1 - I_{1-x}(b, a)
        other = 1.0 - _betainc_cf(Taylor(b, db), Taylor(a, da), xs)
    return one.where(direct, other)


def _edges(values, x, lo, hi):
    """Zero at the ends of the support (x == lo, x == hi), NaN outside it."""
    return np.where((x == lo) | (x == hi), 0.0, np.where((x < lo) | (x > hi), np.nan, values))


def _check_real(name: str, *args) -> None:
    if any(np.iscomplexobj(v) for v in args):
        raise TypeError(f"{name}: defined for real inputs only (got a complex one)")


def _check_order(name: str, order: int) -> None:
    if order > 2:
        raise NotImplementedError(
            f"{name}: derivatives of order {order} in the parameters are not implemented "
            f"(first and second are); differentiate in x only, or hold the parameters fixed")


def gammainc_da(k, a, x):
    """The k-th derivative (k = 1 or 2) of ``scipy.special.gammainc(a, x)`` in ``a``."""
    k = int(np.max(k))
    _check_real("gammainc_da", a, x)
    _check_order("gammainc", k)
    jet = _gammainc_jet(a, x)
    out = jet.d if k == 1 else jet.dd
    return _edges(out, np.broadcast_to(x, np.shape(out)), 0.0, np.inf).astype(
        np.result_type(a, x, 1.0))


def betainc_dab(i, j, a, b, x):
    """The derivative ``d^(i+j) / da^i db^j`` (``i + j`` = 1 or 2) of
    ``scipy.special.betainc(a, b, x)``."""
    i, j = int(np.max(i)), int(np.max(j))
    _check_real("betainc_dab", a, b, x)
    _check_order("betainc", i + j)
    if i + j == 1 or i == 0 or j == 0:
        jet = _betainc_jet(a, b, x, float(i > 0), float(j > 0))
        out = jet.d if i + j == 1 else jet.dd
    else:  # the mixed derivative, by polarisation
        both = _betainc_jet(a, b, x, 1.0, 1.0).dd
        out = 0.5 * (both - _betainc_jet(a, b, x, 1.0, 0.0).dd
                     - _betainc_jet(a, b, x, 0.0, 1.0).dd)
    return _edges(out, np.broadcast_to(x, np.shape(out)), 0.0, 1.0).astype(
        np.result_type(a, b, x, 1.0))
