"""Gradient checks against central finite differences, for real and complex inputs.

The check projects the outputs on a random cotangent ``w`` (complex when an output is
complex), so the real loss ``L = sum(Re(conj(w) * f(x)))`` exercises the whole Jacobian.
yaad's gradient of ``L`` must equal ``dL/dRe(x) + 1j * dL/dIm(x)`` computed by finite
differences on the real and imaginary parts separately.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from .tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "numerical_gradient", "GradcheckError"]


class GradcheckError(AssertionError):
    """Raised by :func:`gradcheck` when an analytical gradient disagrees with the numerical one."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _wide(a: np.ndarray) -> np.ndarray:
    """Float64 / complex128 C-ordered copy: finite differences need the precision, and
    perturb it through a flat view (which a strided copy would not give)."""
    return np.array(a, dtype=np.complex128 if a.dtype.kind == "c" else np.float64, order="C")


def _differentiable(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x.dtype.kind in "fc" and (x.requires_grad or x.is_leaf)
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _project(outputs: Sequence[Any], ws: Sequence[np.ndarray]) -> Any:
    total = 0.0
    for y, w in zip(outputs, ws):
        prod = y * np.conj(w)
        total = total + (prod.real if np.iscomplexobj(w) or _is_complex(y) else prod).sum()
    return total


def _is_complex(y: Any) -> bool:
    return getattr(y, "dtype", np.dtype(float)).kind == "c"


def _call(f: Callable, values: list, diff: list, wrap: bool) -> tuple:
    args = [Tensor(v, requires_grad=d) if (wrap and d) else v for v, d in zip(values, diff)]
    out = f(*args)
    return args, _as_tuple(out)


def numerical_gradient(f: Callable, inputs: Sequence[Any], ws: Sequence[np.ndarray],
                       eps: float = 1e-6) -> list:
    """Central differences of ``L = sum Re(conj(w) * f(inputs))``, per input, in yaad's
    convention (``dL/dRe + 1j dL/dIm`` for complex inputs).

    Parameters
    ----------
    f : callable
        Called with plain arrays; returns an array or a tuple of arrays (or tensors).
    inputs : sequence
        The point. Floating point and complex arrays are perturbed (in float64 /
        complex128); other arguments are passed through.
    ws : sequence of ndarray
        One cotangent per output of ``f``.
    eps : float
        The step.

    Returns
    -------
    list
        One gradient per input (None for an input that is not perturbed).
    """
    values = [_wide(x.data if isinstance(x, Tensor) else x) if _differentiable(x) else
              (x.data if isinstance(x, Tensor) else x) for x in inputs]
    diff = [_differentiable(x) for x in inputs]

    def loss() -> float:
        _, outs = _call(f, values, diff, wrap=False)
        outs = [o.data if isinstance(o, Tensor) else np.asarray(o) for o in outs]
        return float(np.real(_project(outs, ws)))

    grads = []
    for v, d in zip(values, diff):
        if not d:
            grads.append(None)
            continue
        g = np.zeros(v.shape, dtype=v.dtype)
        flat_v = v.reshape(-1)
        flat_g = g.reshape(-1)
        steps = (1.0, 1j) if v.dtype.kind == "c" else (1.0,)
        for k in range(flat_v.size):
            orig = flat_v[k]
            for step in steps:
                flat_v[k] = orig + eps * step
                up = loss()
                flat_v[k] = orig - eps * step
                down = loss()
                flat_v[k] = orig
                flat_g[k] += step * (up - down) / (2 * eps)
        grads.append(g)
    return grads


def gradcheck(f: Callable, inputs: Any, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, seed: int = 0, raise_exception: bool = True,
              check_forward_ad: bool = False) -> bool:
    """Check yaad's gradients of ``f`` against central finite differences.

    Parameters
    ----------
    f : callable
        Takes the inputs (as tensors) and returns a tensor or a tuple of tensors, real or
        complex.
    inputs : array_like or sequence of array_like
        The point. Floating point and complex arrays (or tensors) are differentiated;
        other arguments are passed through. Checked in float64 / complex128.
    eps : float
        The finite-difference step.
    atol, rtol : float
        Tolerances: ``|analytical - numerical| <= atol + rtol * |numerical|``.
    seed : int
        Seed of the random cotangent that projects the outputs.
    raise_exception : bool
        Raise :class:`GradcheckError` on a mismatch (else return False).
    check_forward_ad : bool
        Also check forward mode: for each input, the Jacobian-vector product along a
        random direction (``yaad.func.jvp``) against central differences along it.

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
    values = [_wide(x.data if isinstance(x, Tensor) else x) if d else
              (x.data if isinstance(x, Tensor) else x) for x, d in zip(inputs, diff)]
    args, outs = _call(f, values, diff, wrap=True)
    rng = np.random.default_rng(seed)
    ws = []
    for o in outs:
        shape = np.shape(o.data if isinstance(o, Tensor) else o)
        w = rng.standard_normal(shape)
        if _is_complex(o):
            w = w + 1j * rng.standard_normal(shape)
        ws.append(w)
    loss = _project(outs, ws)
    if not isinstance(loss, Tensor) or not loss.requires_grad:
        analytical = [np.zeros_like(v) if d else None for v, d in zip(values, diff)]
    else:
        from .autograd import grad

        wanted = [a for a, d in zip(args, diff) if d]
        got = grad(loss, wanted, allow_unused=True)
        it = iter(got)
        analytical = []
        for v, d in zip(values, diff):
            if not d:
                analytical.append(None)
                continue
            g = next(it)
            analytical.append(np.zeros_like(v) if g is None else np.asarray(g))
    numerical = numerical_gradient(f, values, ws, eps)
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


def _input_name(f: Callable, k: int) -> str:
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
    err = np.abs(a - n) - (atol + rtol * np.abs(n))
    if not err.size or (np.max(err) <= 0 and np.all(np.isfinite(a))):
        return ""
    bad = np.nan_to_num(err, nan=np.inf)
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), err.shape))
    return (f"worst entry {idx}: {a_name} {a[idx].item()!r}, {n_name} {n[idx].item()!r} "
            f"(difference "
            f"{abs(a[idx] - n[idx]):.3g}, allowed {atol + rtol * abs(n[idx]):.3g} with "
            f"atol={atol}, rtol={rtol})")


def _check_forward(f: Callable, values: list, diff: list, eps: float, atol: float,
                   rtol: float, rng: np.random.Generator, raise_exception: bool) -> bool:
    """Forward mode: ``jvp`` along a random direction in each input, against central
    differences along it."""
    from .func import jvp

    def plain(out: Any) -> list:
        return [np.asarray(o.data if isinstance(o, Tensor) else o) for o in _as_tuple(out)]

    for k, (v, d) in enumerate(zip(values, diff)):
        if not d:
            continue
        t = rng.standard_normal(v.shape)
        if v.dtype.kind == "c":
            t = t + 1j * rng.standard_normal(v.shape)
        t = t.astype(v.dtype)

        def along(x, k=k):
            args = list(values)
            args[k] = x
            return f(*args)

        _, tangent = jvp(along, (v,), (t,))
        up, down = plain(f(*[v + eps * t if j == k else a for j, a in enumerate(values)])), \
            plain(f(*[v - eps * t if j == k else a for j, a in enumerate(values)]))
        for j, (ta, u, w) in enumerate(zip(plain(tangent), up, down)):
            num = (u - w) / (2 * eps)
            if ta.shape != num.shape:
                return _fail(raise_exception, f"{_input_name(f, k)}: the forward-mode "
                             f"tangent of output {j} has shape {ta.shape}, the output has "
                             f"shape {num.shape}")
            msg = _compare(ta, num, atol, rtol, "forward mode", "numerical")
            if msg:
                return _fail(raise_exception,
                             f"{_input_name(f, k)} (shape {v.shape}, dtype {v.dtype}): the "
                             f"Jacobian-vector product for output {j} differs from finite "
                             f"differences along a random direction; {msg}")
    return True


def gradgradcheck(f: Callable, inputs: Any, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, seed: int = 0, raise_exception: bool = True,
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
    probe = [x.data if isinstance(x, Tensor) else x for x in inputs]
    outs = _as_tuple(f(*probe))
    ws = []
    for o in outs:
        shape = np.shape(o)
        w = rng.standard_normal(shape)
        if _is_complex(o):
            w = w + 1j * rng.standard_normal(shape)
        ws.append(w)

    def first_gradient(*args):
        from .autograd import grad

        # Finite differences call this with plain arrays, forward mode with dual numbers:
        # make them differentiable.
        args = [_requiring_grad(a) if d else a for a, d in zip(args, diff)]
        loss = _project(_as_tuple(f(*args)), ws)
        wanted = [a for a, d in zip(args, diff) if d]
        got = grad(loss, wanted, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else 0 * a for g, a in zip(got, wanted))

    first_gradient.__signature__ = _signature_of(f)
    try:
        return gradcheck(first_gradient, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed,
                         raise_exception=raise_exception, check_forward_ad=check_forward_ad)
    except GradcheckError as e:
        raise GradcheckError(f"second derivatives (the gradient of the gradient): {e}") from None


def _requiring_grad(a: Any) -> Tensor:
    """``a`` as a tensor that requires grad, keeping its forward-mode tangents."""
    if isinstance(a, Tensor) and a.requires_grad:
        return a
    from .op import with_tangent

    t = Tensor(a.data if isinstance(a, Tensor) else a, requires_grad=True)
    for level, tangent in (getattr(a, "_tangents", None) or {}).items():
        t = with_tangent(t, level, tangent)
    return t


def _signature_of(f: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None


def _fail(raise_exception: bool, message: str) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False
