"""Derivative checks against finite differences, for real and complex inputs.

Two difference formulas serve: central differences with step ``h = 1e-5`` (error about
``h^2 |f^(3)| / 6 + eps |f| / h``, near 1e-10 for well-scaled float64 functions), and the
fourth-order Richardson extrapolation ``(8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) /
12h`` with ``h = 1e-4`` (error ``O(h^4)``), which stays accurate where rounding or large
higher derivatives spoil the first. :func:`gradcheck` takes central differences and
recomputes by Richardson extrapolation every entry that disagrees with the analytical
value; the check directions of :func:`check_grads` always use the extrapolation. So the
default tolerance is tight (``atol = rtol = 1e-7`` for double precision outputs): a
derivative formula off by one part in a million fails.

- :func:`gradcheck` projects the outputs on a random cotangent ``w`` (complex when an
  output is complex), so the real loss ``L = sum(Re(conj(w) * f(x)))`` exercises the
  whole Jacobian, and compares yaad's gradient of ``L`` entry by entry with
  ``dL/dRe(x) + 1j * dL/dIm(x)`` by finite differences.
- :func:`gradgradcheck` does the same for the gradient itself.
- :func:`check_grads` is HIPS autograd's protocol: Jacobian-vector products and
  vector-Jacobian products along random directions, then the same for the JVP and the
  VJP themselves as functions of the point and of the tangent or cotangent, up to a
  given order.

The function under test is called with tensors (that do not require grad) wherever it
gets a floating point input, so ordinary yaad code (``.detach()``, ``.item()``, tensor
methods) can be checked as it is.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from .core.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "check_grads", "numerical_gradient",
           "GradcheckError"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)


STEP = 1e-5  # central differences
RICHARDSON_STEP = 1e-4  # fourth-order differences
# Default (atol, rtol): outputs in double precision, and outputs in single precision
# (float32 / complex64), where rounding limits any finite difference to about 1e-4.
DOUBLE_TOLERANCE = (1e-7, 1e-7)
SINGLE_TOLERANCE = (1e-3, 1e-2)


class GradcheckError(AssertionError):
    """Raised by the checks of this module when a derivative disagrees with the numerical
    one."""


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _wide(a: np.ndarray) -> np.ndarray:
    """Float64 / complex128 C-ordered copy: finite differences need the precision, and
    perturb it through a flat view (which a strided copy would not give)."""
    return np.array(a, dtype=np.complex128 if a.dtype.kind == "c" else np.float64, order="C")


def _differentiable(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x.dtype.kind in "fc" and (x.requires_grad or x.is_leaf)
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _array(x: Any) -> np.ndarray:
    return np.asarray(x.data if isinstance(x, Tensor) else x)


def _values(inputs: Sequence[Any], diff: Sequence[bool]) -> list[Any]:
    """The point: differentiable inputs widened to float64 / complex128, others as given
    (tensors among them as their arrays)."""
    return [_wide(_array(x)) if d else (x.data if isinstance(x, Tensor) else x)
            for x, d in zip(inputs, diff)]


def _evaluate(f: Callable[..., Any], values: Sequence[Any], diff: Sequence[bool]) -> list[Any]:
    """``f`` on tensors (not requiring grad) in place of the differentiable inputs, its
    outputs as arrays."""
    out = f(*[Tensor(v) if d else v for v, d in zip(values, diff)])
    return [_array(o) for o in _as_tuple(out)]


def _tolerance(outputs: Sequence[Any], atol: float | None, rtol: float | None) -> tuple[Any, ...]:
    single = any(np.asarray(o).dtype in (np.float32, np.complex64) for o in outputs)
    default = SINGLE_TOLERANCE if single else DOUBLE_TOLERANCE
    return (default[0] if atol is None else atol, default[1] if rtol is None else rtol)


def _central(phi: Callable[..., Any], h: float) -> list[Any]:
    """``d/de phi(e)`` at ``e = 0`` by central differences; ``phi`` returns a list of
    arrays."""
    return [(a - b) / (2 * h) for a, b in zip(phi(h), phi(-h))]


def _richardson(phi: Callable[..., Any], h: float) -> list[Any]:
    """``d/de phi(e)`` at ``e = 0`` by fourth-order central differences (the Richardson
    extrapolation of the central differences with steps ``h`` and ``2h``)."""
    p1, m1, p2, m2 = phi(h), phi(-h), phi(2 * h), phi(-2 * h)
    return [(8 * (a - b) - (c - d)) / (12 * h) for a, b, c, d in zip(p1, m1, p2, m2)]


def _along(f: Callable[..., Any], values: list[Any], diff: list[bool],
           direction: list[Any]) -> Callable[..., Any]:
    """``e -> f(values + e * direction)`` as a list of arrays (None in ``direction``: that
    input stays)."""
    def phi(e: float) -> list[Any]:
        moved = [v if t is None else v + e * t for v, t in zip(values, direction)]
        return _evaluate(f, moved, diff)

    return phi


def _random_like(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    shape = np.shape(x)
    r = rng.standard_normal(shape)
    if np.asarray(x).dtype.kind == "c":
        r = r + 1j * rng.standard_normal(shape)
    return r


def _project(outputs: Sequence[Any], ws: Sequence[np.ndarray]) -> Any:
    total = 0.0
    for y, w in zip(outputs, ws):
        prod = y * np.conj(w)
        total = total + (prod.real if np.iscomplexobj(w) or _is_complex(y) else prod).sum()
    return total


def _is_complex(y: Any) -> bool:
    return getattr(y, "dtype", np.dtype(float)).kind == "c"


def numerical_gradient(f: Callable[..., Any], inputs: Sequence[Any], ws: Sequence[np.ndarray],
                       eps: float = RICHARDSON_STEP) -> list[Any]:
    """Fourth-order finite differences of ``L = sum Re(conj(w) * f(inputs))``, per input,
    in yaad's convention (``dL/dRe + 1j dL/dIm`` for complex inputs).

    Parameters
    ----------
    f : callable
        Called with tensors (not requiring grad) for the floating point inputs; returns
        a tensor or array, or a tuple of them.
    inputs : sequence
        The point. Floating point and complex arrays are perturbed (in float64 /
        complex128); other arguments are passed through.
    ws : sequence of ndarray
        One cotangent per output of ``f``.
    eps : float
        The step ``h`` of the Richardson extrapolation (module docstring).

    Returns
    -------
    list
        One gradient per input (None for an input that is not perturbed).
    """
    diff = [_differentiable(x) for x in inputs]
    return _numerical(f, _values(inputs, diff), diff, ws, eps, _richardson)


def _numerical(f: Callable[..., Any], values: list[Any], diff: list[bool],
               ws: Sequence[np.ndarray], eps: float, rule: Callable[..., Any],
               entries: Sequence[Any] | None = None) -> list[Any]:
    """The finite-difference gradient of the projected loss by ``rule``, per input; with
    ``entries`` (a boolean mask or None per input) only at those entries (0 elsewhere)."""
    def loss_at(flat: np.ndarray, k: int, step: complex) -> Callable[..., Any]:
        orig = flat[k]

        def phi(e: float) -> list[Any]:
            flat[k] = orig + e * step
            try:
                return [np.real(_project(_evaluate(f, values, diff), ws))]
            finally:
                flat[k] = orig

        return phi

    grads: list[np.ndarray | None] = []
    for i, (v, d) in enumerate(zip(values, diff)):
        if not d:
            grads.append(None)
            continue
        g = np.zeros(v.shape, dtype=v.dtype)
        flat_v, flat_g = v.reshape(-1), g.reshape(-1)
        wanted = None if entries is None or entries[i] is None else entries[i].reshape(-1)
        for k in range(flat_v.size):
            if wanted is not None and not wanted[k]:
                continue
            for step in (1.0, 1j) if v.dtype.kind == "c" else (1.0,):
                flat_g[k] += step * rule(loss_at(flat_v, k, step), eps)[0]
        grads.append(g)
    return grads


def _mismatch(a: np.ndarray, n: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Where ``a`` is not within the tolerance of ``n``."""
    mask: np.ndarray = ~(np.abs(a - n) <= atol + rtol * np.abs(n)) | ~np.isfinite(a)
    return mask


def gradcheck(f: Callable[..., Any], inputs: Any, eps: float = STEP, atol: float | None = None,
              rtol: float | None = None, seed: int = 0, raise_exception: bool = True,
              check_forward_ad: bool = False) -> bool:
    """Check yaad's gradients of ``f`` against finite differences, entry by entry.

    Parameters
    ----------
    f : callable
        Takes the inputs (as tensors) and returns a tensor or a tuple of tensors, real or
        complex. Any yaad code: it is called with tensors, also for the finite differences.
    inputs : array_like or sequence of array_like
        The point. Floating point and complex arrays (or tensors) are differentiated;
        other arguments are passed through. Checked in float64 / complex128.
    eps : float
        The step of the central differences (entries where they disagree are recomputed
        by fourth-order differences with step ``10 * eps``).
    atol : float, optional
        The absolute tolerance: ``|analytical - numerical| <= atol + rtol * |numerical|``.
        None (the default): 1e-7 when ``f`` computes in double precision, 1e-3 when an
        output is single precision.
    rtol : float, optional
        The relative tolerance. None (the default): 1e-7 in double precision, 1e-2 when an
        output is single precision.
    seed : int
        Seed of the random cotangent that projects the outputs.
    raise_exception : bool
        Raise :class:`GradcheckError` on a mismatch (else return False).
    check_forward_ad : bool
        Also check forward mode: for each input, the Jacobian-vector product along a
        random direction (``yaad.func.jvp``) against finite differences along it.

    Returns
    -------
    bool
        True if every gradient matches.

    Raises
    ------
    GradcheckError
        Naming the input (by position and parameter name), the worst entry, both values
        and the tolerance.

    Examples
    --------
    >>> yaad.testing.gradcheck(lambda x: yaad.sin(x) * x, [np.array([0.1, 0.2])])
    True
    """
    inputs = _as_tuple(inputs)
    diff = [_differentiable(x) for x in inputs]
    values = _values(inputs, diff)
    args = [Tensor(v, requires_grad=True) if d else v for v, d in zip(values, diff)]
    outs = _as_tuple(f(*args))
    atol, rtol = _tolerance([_array(o) for o in outs], atol, rtol)
    rng = np.random.default_rng(seed)
    ws = [_random_like(rng, _array(o)) for o in outs]
    loss = _project(outs, ws)
    if not isinstance(loss, Tensor) or not loss.requires_grad:
        analytical: list[Any] = [np.zeros_like(v) if d else None
                                 for v, d in zip(values, diff)]
    else:
        from .autograd import grad

        wanted = [a for a, d in zip(args, diff) if d]
        got = iter(grad(loss, wanted, allow_unused=True))
        analytical = []
        for v, d in zip(values, diff):
            g = next(got) if d else None
            analytical.append(None if not d else np.zeros_like(v) if g is None else
                              np.asarray(g))
    numerical = _numerical(f, values, diff, ws, eps, _central)
    redo = [None if n is None or a.shape != n.shape else _mismatch(a, n, atol, rtol)
            for a, n in zip(analytical, numerical)]
    if any(r is not None and r.any() for r in redo):
        # where central differences disagree, the fourth-order ones decide
        better = _numerical(f, values, diff, ws, 10 * eps, _richardson, redo)
        numerical = [n if r is None else np.where(r, b, n)
                     for n, b, r in zip(numerical, better, redo)]
    for k, (a, n) in enumerate(zip(analytical, numerical)):
        if n is None:
            continue
        what = _input_name(f, k)
        if a.shape != n.shape:
            return _fail(raise_exception, f"{what}: the gradient has shape {a.shape}, the "
                                          f"input has shape {n.shape}")
        msg = _compare(a, n, atol, rtol, "analytical", "numerical")
        if msg:
            return _fail(raise_exception,
                         f"{what} (shape {n.shape}, dtype {n.dtype}): the gradient differs "
                         f"from finite differences; {msg}")
    if check_forward_ad:
        return _check_forward(f, values, diff, eps, atol, rtol, rng, raise_exception)
    return True


def _input_name(f: Callable[..., Any], k: int) -> str:
    """``input k ('name')``, with the parameter's name where ``f`` has one."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    if k < len(params) and params[k].kind in (params[k].POSITIONAL_ONLY,
                                              params[k].POSITIONAL_OR_KEYWORD):
        return f"input {k} ({params[k].name!r})"
    return f"input {k}"


def _compare(a: np.ndarray, n: np.ndarray, atol: float, rtol: float, a_name: str,
             n_name: str) -> str:
    """Empty if ``a`` matches ``n``, else a description of the worst entry."""
    a, n = np.asarray(a), np.asarray(n)
    err = np.abs(a - n) - (atol + rtol * np.abs(n))
    if not err.size or (np.max(err) <= 0 and np.all(np.isfinite(a))):
        return ""
    bad = np.nan_to_num(err, nan=np.inf)
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), err.shape))
    return (f"worst entry {idx}: {a_name} {a[idx].item()!r}, {n_name} {n[idx].item()!r} "
            f"(difference "
            f"{abs(a[idx] - n[idx]):.3g}, allowed {atol + rtol * abs(n[idx]):.3g} with "
            f"atol={atol}, rtol={rtol})")


def _check_forward(f: Callable[..., Any], values: list[Any], diff: list[bool], eps: float,
                   atol: float, rtol: float, rng: np.random.Generator,
                   raise_exception: bool) -> bool:
    """Forward mode: ``jvp`` along a random direction in each input, against finite
    differences along it."""
    from .func import jvp

    for k, (v, d) in enumerate(zip(values, diff)):
        if not d:
            continue
        t = _random_like(rng, v).astype(v.dtype)

        def only_k(x: Any, k: int = k) -> Any:
            args = [Tensor(a) if dd else a for a, dd in zip(values, diff)]
            args[k] = x
            return f(*args)

        _, tangent = jvp(only_k, (v,), (t,))
        phi = _along(f, values, diff, [t if j == k else None for j in range(len(values))])
        num = _central(phi, eps)
        tangents = [_array(ta) for ta in _as_tuple(tangent)]
        if any(ta.shape == nu.shape and _mismatch(ta, nu, atol, rtol).any()
               for ta, nu in zip(tangents, num)):
            num = _richardson(phi, 10 * eps)  # the fourth-order differences decide
        for j, (ta, nu) in enumerate(zip(tangents, num)):
            if ta.shape != nu.shape:
                return _fail(raise_exception, f"{_input_name(f, k)}: the forward-mode "
                             f"tangent of output {j} has shape {ta.shape}, the output has "
                             f"shape {nu.shape}")
            msg = _compare(ta, nu, atol, rtol, "forward mode", "numerical")
            if msg:
                return _fail(raise_exception,
                             f"{_input_name(f, k)} (shape {v.shape}, dtype {v.dtype}): the "
                             f"Jacobian-vector product for output {j} differs from finite "
                             f"differences along a random direction; {msg}")
    return True


def gradgradcheck(f: Callable[..., Any], inputs: Any, eps: float = STEP, atol: float | None = None,
                  rtol: float | None = None, seed: int = 0, raise_exception: bool = True,
                  check_forward_ad: bool = False) -> bool:
    """Check second derivatives: :func:`gradcheck` of the gradient of ``f``.

    The gradient of ``L = sum Re(conj(w) * f(x))`` is computed with
    ``create_graph=True`` and itself checked against finite differences (reverse over
    reverse). With ``check_forward_ad``, its Jacobian-vector products are checked too
    (forward over reverse, the Hessian-vector product path).

    Parameters are those of :func:`gradcheck`.
    """
    inputs = _as_tuple(inputs)
    diff = [_differentiable(x) for x in inputs]
    rng = np.random.default_rng(seed + 1)
    ws = [_random_like(rng, o) for o in _evaluate(f, _values(inputs, diff), diff)]

    def first_gradient(*args: Any) -> tuple[Any, ...]:
        from .autograd import grad

        # Finite differences call this with tensors, forward mode with dual numbers: make
        # them differentiable.
        points = [_requiring_grad(a) if d else a for a, d in zip(args, diff)]
        loss = _project(_as_tuple(f(*points)), ws)
        wanted = [a for a, d in zip(points, diff) if d]
        got = grad(loss, wanted, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else 0 * a for g, a in zip(got, wanted))

    first_gradient.__signature__ = _signature_of(f)  # type: ignore[attr-defined]  # for inspect
    try:
        return gradcheck(first_gradient, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed,
                         raise_exception=raise_exception, check_forward_ad=check_forward_ad)
    except GradcheckError as e:
        raise GradcheckError(f"second derivatives (the gradient of the gradient): {e}") from None


def _requiring_grad(a: Any) -> Tensor:
    """``a`` as a tensor that requires grad, keeping its forward-mode tangents."""
    if isinstance(a, Tensor) and a.requires_grad:
        return a
    from .core.levels import with_tangent

    t = Tensor(a.data if isinstance(a, Tensor) else a, requires_grad=True)
    for level, tangent in (getattr(a, "_tangents", None) or {}).items():
        t = with_tangent(t, level, tangent)
    return t


def _signature_of(f: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None


def _fail(raise_exception: bool, message: str) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


# ---- HIPS autograd's protocol ------------------------------------------------------------


def _inner(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, float]:
    """``sum Re(conj(a) * b)`` over the pairs, and the scale ``sum |a| |b|`` it is
    measured against (immune to cancellation)."""
    value = scale = 0.0
    for x, y in zip(a, b):
        x, y = _array(x), _array(y)
        value += float(np.sum(np.real(np.conj(x) * y)))
        scale += float(np.sum(np.abs(x) * np.abs(y)))
    return value, scale


def _jvp_function(f: Callable[..., Any], n: int) -> Callable[..., Any]:
    """``(x_1..x_n, v_1..v_n) -> J v``: the JVP of ``f`` as a function of point and tangent."""
    from .func import jvp

    def f_jvp(*a: Any) -> Any:
        return jvp(f, a[:n], a[n:])[1]

    return f_jvp


def _vjp_function(f: Callable[..., Any], n: int, single: bool) -> Callable[..., Any]:
    """``(x_1..x_n, u_1..u_m) -> J^H u``: the VJP of ``f`` as a function of point and
    cotangent (HIPS's ``vjp(f)(x)(u)``)."""
    from .func import vjp

    def f_vjp(*a: Any) -> Any:
        _, pullback = vjp(f, *a[:n])
        return pullback(a[n] if single else tuple(a[n:]))

    return f_vjp


def check_grads(f: Callable[..., Any], inputs: Any, modes: Sequence[str] = ("fwd", "rev"),
                order: int = 2, eps: float = RICHARDSON_STEP, atol: float | None = None,
                rtol: float | None = None, seed: int = 0,
                raise_exception: bool = True) -> bool:
    """HIPS autograd's derivative check, along random directions, up to ``order``.

    Order 1: in mode ``"fwd"``, the Jacobian-vector product ``J v`` (``yaad.func.jvp``)
    against finite differences along ``v``; in mode ``"rev"``, the vector-Jacobian product
    (``yaad.func.vjp``) through ``<J^H u, v> = <u, J v>`` with the same differences. Each
    order above applies the whole check to the JVP as a function of the point and the
    tangent, ``(x, v) -> J v``, and to the VJP as a function of the point and the
    cotangent, ``(x, u) -> J^H u``: order 2 checks jvp and vjp of the JVP, and jvp and vjp
    of the VJP (which differentiates each VJP with respect to its cotangent).

    Parameters
    ----------
    f : callable
        A function of floating point or complex arrays (given tensors), returning a
        tensor or a tuple of them. Bind other arguments in a closure.
    inputs : array_like or sequence of array_like
        The point (checked in float64 / complex128).
    modes : sequence of str
        ``"fwd"``, ``"rev"`` or both.
    order : int
        The highest order of derivatives checked.
    eps : float
        The step of the fourth-order differences.
    atol : float or None, optional
        As in :func:`gradcheck`.
    rtol : float or None, optional
        As in :func:`gradcheck`.
    seed : int, optional
        As in :func:`gradcheck`.
    raise_exception : bool, optional
        As in :func:`gradcheck`.

    Returns
    -------
    bool
        True if every check passes.

    Raises
    ------
    GradcheckError
        Naming the check (order, mode, and the chain of transforms), the output or
        input, and both values.

    Examples
    --------
    >>> yaad.testing.check_grads(yaad.sin, [np.array([0.1, 0.7])])
    True
    """
    bad = set(modes) - {"fwd", "rev"}
    if bad or not modes:
        raise ValueError(f"check_grads: modes must be a non-empty subset of ('fwd', 'rev'), "
                         f"got {modes!r}")
    values = []
    for k, x in enumerate(_as_tuple(inputs)):
        if not _differentiable(x):
            raise TypeError(f"check_grads: input {k} is not a floating point or complex "
                            f"array; bind non-differentiable arguments in a closure")
        values.append(_wide(_array(x)))
    rng = np.random.default_rng(seed)
    return _check_grads(f, values, tuple(modes), order, eps, atol, rtol, rng,
                        raise_exception, "f")


def _check_grads(f: Callable[..., Any], values: list[Any], modes: tuple[str, ...], order: int,
                 eps: float, atol: float | None, rtol: float | None, rng: np.random.Generator,
                 raise_exception: bool, name: str) -> bool:
    n = len(values)
    diff = [True] * n
    out = f(*[Tensor(v) for v in values])
    single = not isinstance(out, (tuple, list))
    outs = [_array(o) for o in _as_tuple(out)]
    tol_a, tol_r = _tolerance(outs, atol, rtol)
    v = [_random_like(rng, x) for x in values]
    num = _richardson(_along(f, values, diff, v), eps)
    if "fwd" in modes:
        from .func import jvp

        tangent = [_array(t) for t in _as_tuple(jvp(f, tuple(values), tuple(v))[1])]
        for j, (t, nu) in enumerate(zip(tangent, num)):
            msg = (f"has shape {t.shape}, the output {nu.shape}" if t.shape != nu.shape
                   else _compare(t, nu, tol_a, tol_r, "jvp", "numerical"))
            if msg:
                return _fail(raise_exception, f"order 1, mode fwd, of {name}: output {j} "
                             f"of the Jacobian-vector product along a random direction "
                             f"differs from finite differences: {msg}")
    u = [_random_like(rng, o) for o in outs]
    if "rev" in modes:
        grads = _vjp_function(f, n, single)(*values, *u)
        lhs, _ = _inner(grads, v)
        rhs, scale = _inner(u, num)
        if not abs(lhs - rhs) <= tol_a + tol_r * scale:
            return _fail(raise_exception, f"order 1, mode rev, of {name}: the "
                         f"vector-Jacobian product disagrees with finite differences: "
                         f"<vjp(u), v> = {lhs!r}, <u, J v> = {rhs!r} (difference "
                         f"{abs(lhs - rhs):.3g}, allowed {tol_a + tol_r * scale:.3g})")
    if order > 1:
        if "fwd" in modes:
            if not _check_grads(_jvp_function(f, n), values + v, modes, order - 1, eps,
                                atol, rtol, rng, raise_exception, f"jvp({name})"):
                return False
        if "rev" in modes:
            if not _check_grads(_vjp_function(f, n, single), values + u, modes, order - 1,
                                eps, atol, rtol, rng, raise_exception, f"vjp({name})"):
                return False
    return True
