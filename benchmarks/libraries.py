"""The implementations: the NumPy floor, yaad (eager and compiled) and the peers.

Each library gives the workloads' losses the same small vocabulary (``VOCAB``, NumPy
names and semantics) through a namespace, and one way to compute the loss and all the
gradients: ``.backward()`` on a tape (yaad, PyTorch, MyGrad) or a ``value_and_grad``
transform (JAX, HIPS autograd). ``prepare`` returns a :class:`Step`, the call that is
checked and timed. A library that is not installed raises ``ImportError``; one that lacks
a function a workload needs raises :class:`Unsupported` (both become notes).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from importlib import metadata
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

VOCAB = ("sin", "cos", "exp", "tanh", "sum", "mean", "trace", "einsum", "diagonal", "vdot",
         "real", "log_softmax")


class Unsupported(Exception):
    """The library cannot run this workload (reported as a note, not an error)."""


@dataclass
class Step:
    """One call = the loss and all the gradients, as the library's own objects."""

    call: Callable[[], tuple[Any, list]]
    to_numpy: Callable[[Any], np.ndarray]
    clear: Callable[[], None] = lambda: None  # drop gradients held between calls
    compile_s: float | None = None  # ahead-of-time compilation, apart from the calls


@dataclass(frozen=True)
class Impl:
    """An implementation: its name, the package it needs, how to prepare a workload."""

    name: str
    package: str
    prepare: Callable  # (workload, params dict, consts dict) -> Step
    complex: bool = True
    conj: bool = False  # complex gradients come as dL/dRe - 1j dL/dIm
    numpy_memory: bool = False  # allocates through NumPy (tracemalloc sees it)


def _missing(lib: str, name: str) -> Callable:
    def missing(*args, **kwargs):
        raise Unsupported(f"{lib} has no {name}")
    return missing


def namespace(lib: str, module: Any, **overrides: Any) -> SimpleNamespace:
    """The vocabulary from ``module`` by NumPy name, with ``overrides`` where it differs."""
    ns = {name: getattr(module, name, None) or _missing(lib, name) for name in VOCAB}
    ns.update(overrides)
    return SimpleNamespace(**ns)


def composed_log_softmax(xp: Any) -> Callable:
    """log_softmax from exp/log/sum (the inputs here are well scaled)."""
    return lambda z, axis: z - xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))


def _arrays(consts: dict, convert: Callable) -> dict:
    return {k: convert(v) if isinstance(v, np.ndarray) else v for k, v in consts.items()}


def _set_grad_none(p):
    p.grad = None


def _tape_step(xp, workload, params, consts, leaf, const, to_numpy, wrap=None,
               clear_grad=_set_grad_none) -> Step:
    """Leaves with ``requires_grad``; one call clears their gradients, computes the loss and
    calls ``.backward()``; the gradients are read from ``.grad``."""
    ps = [leaf(a) for a in params.values()]
    cs = _arrays(consts, const)
    loss = workload.loss
    f = lambda *ps: loss(xp, ps, cs)
    if wrap is not None:
        f = wrap(f)

    def clear():
        for p in ps:
            clear_grad(p)

    def call():
        clear()
        out = f(*ps)
        out.backward()
        return out, [p.grad for p in ps]

    return Step(call, to_numpy, clear)


def _functional_step(xp, workload, params, consts, value_and_grad, convert,
                     finish=lambda r: r, aot=None) -> Step:
    """``value_and_grad`` of the loss as a function of the tuple of params."""
    ps = tuple(convert(a) for a in params.values())
    cs = _arrays(consts, convert)
    loss = workload.loss
    f = value_and_grad(lambda ps: loss(xp, ps, cs))
    compile_s = None
    if aot is not None:
        t0 = time.perf_counter()
        f = aot(f, ps)
        compile_s = time.perf_counter() - t0

    def call():
        value, grads = finish(f(ps))
        return value, list(grads)

    return Step(call, np.asarray, compile_s=compile_s)


# ---- the floor ---------------------------------------------------------------------------

def _prepare_floor(workload, params, consts) -> Step:
    ps = tuple(params.values())
    floor = workload.floor
    return Step(lambda: floor(ps, consts), np.asarray)


# ---- yaad --------------------------------------------------------------------------------

@functools.cache
def _yaad():
    import yaad

    overrides = {}
    if not hasattr(yaad, "log_softmax"):
        overrides["log_softmax"] = composed_log_softmax(yaad)
    return yaad, namespace("yaad", yaad, **overrides)


def _yaad_numpy(x):
    return np.asarray(x.data if hasattr(x, "data") else x)


def _prepare_yaad(workload, params, consts, compiled=False) -> Step:
    yaad, xp = _yaad()
    wrap = None
    if compiled:
        wrap = getattr(yaad, "compile", None)
        if not callable(wrap):  # absent, or only the submodule
            raise Unsupported("yaad.compile does not exist yet (n/a)")
    return _tape_step(xp, workload, params, consts,
                      leaf=lambda a: yaad.tensor(a, requires_grad=True),
                      const=lambda a: a, to_numpy=_yaad_numpy, wrap=wrap)


# ---- PyTorch -----------------------------------------------------------------------------

@functools.cache
def _torch():
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only allowed before the first parallel work
        pass
    xp = namespace("torch", torch,
                   diagonal=lambda x, axis1, axis2: torch.diagonal(x, 0, axis1, axis2),
                   log_softmax=lambda z, axis: torch.log_softmax(z, axis))
    return torch, xp


def _prepare_torch(workload, params, consts) -> Step:
    torch, xp = _torch()
    return _tape_step(xp, workload, params, consts,
                      leaf=lambda a: torch.tensor(a, requires_grad=True),
                      const=torch.from_numpy, to_numpy=lambda t: t.detach().numpy())


# ---- MyGrad ------------------------------------------------------------------------------

@functools.cache
def _mygrad():
    import mygrad as mg

    def diagonal(x, axis1, axis2):
        if (axis1 % x.ndim, axis2 % x.ndim) != (x.ndim - 2, x.ndim - 1):
            raise Unsupported("mygrad has no diagonal (only the last two axes via einsum)")
        return mg.einsum("...ii->...i", x)

    xp = namespace("mygrad", mg, trace=lambda x: mg.einsum("ii", x), diagonal=diagonal,
                   log_softmax=mg.nnet.logsoftmax)
    return mg, xp


def _prepare_mygrad(workload, params, consts) -> Step:
    mg, xp = _mygrad()
    return _tape_step(xp, workload, params, consts, leaf=mg.tensor, const=lambda a: a,
                      to_numpy=lambda t: np.asarray(getattr(t, "data", t)),
                      clear_grad=lambda p: p.null_grad())


# ---- JAX ---------------------------------------------------------------------------------

@functools.cache
def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    return jax, jnp, namespace("jax", jnp, log_softmax=jax.nn.log_softmax)


def _prepare_jax(workload, params, consts, jit=False) -> Step:
    jax, jnp, xp = _jax()
    aot = None
    if jit:
        aot = lambda f, ps: jax.jit(f).lower(ps).compile()
    return _functional_step(xp, workload, params, consts, jax.value_and_grad, jnp.asarray,
                            finish=jax.block_until_ready, aot=aot)


# ---- HIPS autograd -----------------------------------------------------------------------

@functools.cache
def _autograd():
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def diagonal(x, axis1, axis2):
        # the VJP of anp.diagonal handles only axis1=-1, axis2=-2 (the same diagonal)
        if {axis1 % x.ndim, axis2 % x.ndim} != {x.ndim - 2, x.ndim - 1}:
            raise Unsupported("autograd's diagonal VJP handles only the last two axes")
        return anp.diagonal(x, axis1=-1, axis2=-2)

    xp = namespace("autograd", anp, diagonal=diagonal,
                   log_softmax=lambda z, axis: z - logsumexp(z, axis=axis, keepdims=True),
                   vdot=lambda a, b: anp.dot(anp.conj(a), b))  # anp.vdot has no VJP
    return autograd, xp


def _prepare_autograd(workload, params, consts) -> Step:
    autograd, xp = _autograd()
    return _functional_step(xp, workload, params, consts, autograd.value_and_grad,
                            lambda a: a)


IMPLS: tuple[Impl, ...] = (
    Impl("numpy", "numpy", _prepare_floor, numpy_memory=True),
    Impl("yaad", "yaad-autodiff", _prepare_yaad, numpy_memory=True),
    Impl("yaad.compile", "yaad-autodiff", functools.partial(_prepare_yaad, compiled=True),
         numpy_memory=True),
    Impl("torch", "torch", _prepare_torch),
    Impl("jax", "jax", _prepare_jax, conj=True),
    Impl("jax.jit", "jax", functools.partial(_prepare_jax, jit=True), conj=True),
    Impl("autograd", "autograd", _prepare_autograd, conj=True, numpy_memory=True),
    Impl("mygrad", "mygrad", _prepare_mygrad, complex=False, numpy_memory=True),
)


def select(names: str | None) -> list[Impl]:
    """The implementations named in a comma-separated list (all when empty); the floor
    is always included, since every ratio is taken to it."""
    if not names:
        return list(IMPLS)
    wanted = {s.strip() for s in names.split(",") if s.strip()}
    unknown = wanted - {i.name for i in IMPLS}
    if unknown:
        raise SystemExit(f"unknown implementations: {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(i.name for i in IMPLS)}")
    return [i for i in IMPLS if i.name in wanted or i.name == "numpy"]


def versions() -> dict[str, str]:
    """Installed versions of the packages the implementations use."""
    out = {}
    for pkg in ("numpy", "yaad-autodiff", "torch", "jax", "jaxlib", "autograd", "mygrad",
                "scipy", "opt_einsum"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out
