"""The implementations: the NumPy floor, yaad (eager and compiled) and the peers.

Each library gives the workloads' losses the same small vocabulary (``VOCAB``, NumPy
names and semantics) through a namespace, and one way to compute the loss and all the
gradients: ``.backward()`` on a tape (yaad, PyTorch, MyGrad) or a ``value_and_grad``
transform (JAX, HIPS autograd). ``prepare`` returns a :class:`Step`, the call that is
checked and timed. For a training workload (``workload.train``) the call also updates the
params with Adam: the library's own ``optim.Adam`` (yaad, PyTorch; for yaad.compile
``Adam(fused=True)``, its compiled update), else the hand-written
:class:`~benchmarks.workloads.Adam` (the floor, JAX, HIPS autograd, MyGrad). A library
that is not installed raises ``ImportError``; one that lacks a function a workload needs
raises :class:`Unsupported` (both become notes).
"""

from __future__ import annotations

import functools
import importlib.util
import time
from dataclasses import dataclass
from importlib import metadata
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

VOCAB = ("sin", "cos", "exp", "sqrt", "tanh", "sum", "mean", "trace", "einsum", "diagonal",
         "vdot", "real", "log_softmax", "expm", "stack", "odeint", "tensordot", "moveaxis",
         "astype", "conj")


class Unsupported(Exception):
    """The library cannot run this workload (reported as a note, not an error)."""


@dataclass
class Step:
    """One call = the loss and all the gradients, as the library's own objects (for a
    training workload: the loss and the params after the update)."""

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
               clear_grad=_set_grad_none, optimizer=None) -> Step:
    """Leaves with ``requires_grad``; one call clears their gradients, computes the loss and
    calls ``.backward()``; the gradients are read from ``.grad``. For a training workload,
    ``optimizer(leaves)`` makes the optimizer whose ``step()`` then updates the leaves."""
    ps = [leaf(a.copy()) for a in params.values()]  # an optimizer updates them in place
    opt = None if workload.train is None else optimizer(ps)
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
        if opt is None:
            return out, [p.grad for p in ps]
        opt.step()
        return out, list(ps)

    return Step(call, to_numpy, clear)


class ArraysAdam:
    """The hand-written Adam (``workloads.Adam``) on the NumPy arrays of tape leaves, in
    place, for a library without optimizers (MyGrad).

    Parameters
    ----------
    adam : workloads.Adam
        The settings and the update.
    leaves : list
        Tensors with ``.data`` (updated in place) and ``.grad`` (NumPy arrays).
    """

    def __init__(self, adam: Any, leaves: list) -> None:
        self.adam, self.leaves, self.t = adam, leaves, 0
        self.m = self.v = tuple(np.zeros_like(p.data) for p in leaves)

    def step(self) -> None:
        """One update of every leaf from its ``.grad``."""
        self.t += 1
        new, self.m, self.v = self.adam.update(
            np, tuple(p.data for p in self.leaves), tuple(p.grad for p in self.leaves),
            self.m, self.v, *self.adam.corrections(self.t))
        for p, x in zip(self.leaves, new):
            p.data[...] = x


def _functional_step(xp, workload, params, consts, value_and_grad, convert,
                     finish=lambda r: r, aot=None) -> Step:
    """``value_and_grad`` of the loss as a function of the tuple of params."""
    cs = _arrays(consts, convert)
    loss = workload.loss
    return _calls(value_and_grad(lambda ps: loss(xp, ps, cs)), xp, workload, params,
                  convert, finish, aot)


def _calls(vg, xp, workload, params, convert=lambda a: a, finish=lambda r: r,
           aot=None) -> Step:
    """The step of a function ``vg(params) -> (loss, grads)``; for a training workload,
    a step that also applies the hand-written Adam (with ``xp.sqrt``) and carries the
    params and moments over to the next call. ``aot(f, *args)`` compiles ``f`` ahead of
    time for these arguments."""
    ps = tuple(convert(a) for a in params.values())
    adam = workload.train
    if adam is None:
        f, args = vg, [ps]
    else:
        def f(ps, m, v, step, root):
            value, grads = vg(ps)
            return (value, *adam.update(xp, ps, grads, m, v, step, root))

        zeros = tuple(convert(np.zeros_like(a)) for a in params.values())
        args = [ps, zeros, zeros, *adam.corrections(1)]
    compile_s = None
    if aot is not None:
        t0 = time.perf_counter()
        f = aot(f, *args)
        compile_s = time.perf_counter() - t0

    if adam is None:
        def call():
            value, grads = finish(f(ps))
            return value, list(grads)
    else:
        t = 0

        def call():
            nonlocal t
            t += 1
            args[3:] = adam.corrections(t)
            value, ps, m, v = finish(f(*args))
            args[:3] = ps, m, v
            return value, list(ps)

    return Step(call, np.asarray, compile_s=compile_s)


# ---- the floor ---------------------------------------------------------------------------

def prepare_floor(workload: Any, params: dict, consts: dict) -> Step:
    """The floor's step: ``workload.floor``, and the hand-written Adam for a training
    workload."""
    floor = workload.floor
    if workload.train is None:
        ps = tuple(params.values())
        return Step(lambda: floor(ps, consts), np.asarray)
    return _calls(lambda ps: floor(ps, consts), np, workload, params)


# ---- yaad --------------------------------------------------------------------------------

@functools.cache
def _yaad():
    import yaad

    def odeint(f, y0, ts, p, rtol, atol):
        return yaad.integrate.odeint(f, y0, ts, p, rtol=rtol, atol=atol)

    overrides = {"expm": yaad.linalg.expm, "odeint": odeint}
    if not hasattr(yaad, "log_softmax"):
        overrides["log_softmax"] = composed_log_softmax(yaad)
    return yaad, namespace("yaad", yaad, **overrides)


def _yaad_numpy(x):
    return np.asarray(x.data if hasattr(x, "data") else x)


# A constant array larger than this is given to yaad as a tensor (sharing its memory, as
# torch.from_numpy does for PyTorch): yaad.compile reads a captured tensor by reference,
# but compares a captured NumPy array bit for bit with its recorded copy before every call
# (an array changed in place must not be replayed stale), which docs/compile.md advises
# against for large constants. Smaller constants stay NumPy arrays. (Only W5's H, 16 MiB.)
LARGE_CONSTANT = 1 << 16


def _yaad_const(yaad, a):
    return yaad.as_tensor(a) if a.nbytes > LARGE_CONSTANT else a


def _prepare_yaad(workload, params, consts, compiled=False) -> Step:
    yaad, xp = _yaad()
    wrap = None
    if compiled:
        wrap = getattr(yaad, "compile", None)
        if not callable(wrap):  # absent, or only the submodule
            raise Unsupported("yaad.compile does not exist yet (n/a)")
    # The compiled training step's update is the fused Adam when numba is there (one
    # compiled loop per parameter, the same bits as the default), as an update runs
    # inside jax.jit and torch.compile compiles optimizer.step.
    fused = compiled and importlib.util.find_spec("numba") is not None
    return _tape_step(xp, workload, params, consts,
                      leaf=lambda a: yaad.tensor(a, requires_grad=True),
                      const=functools.partial(_yaad_const, yaad), to_numpy=_yaad_numpy,
                      wrap=wrap,
                      optimizer=lambda ps: yaad.optim.Adam(ps, **workload.train.kwargs(),
                                                           fused=fused))


# ---- PyTorch -----------------------------------------------------------------------------

@functools.cache
def _torch():
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only allowed before the first parallel work
        pass
    def odeint(f, y0, ts, p, rtol, atol):
        # torchdiffeq's adjoint (the continuous adjoint, backwards in time)
        try:
            import torchdiffeq
        except ImportError:
            raise Unsupported("torchdiffeq is not installed") from None
        return torchdiffeq.odeint_adjoint(lambda t, y: f(y, t, p), y0, torch.as_tensor(ts),
                                          rtol=rtol, atol=atol, method="dopri5",
                                          adjoint_params=(p,))

    xp = namespace("torch", torch,
                   diagonal=lambda x, axis1, axis2: torch.diagonal(x, 0, axis1, axis2),
                   log_softmax=lambda z, axis: torch.log_softmax(z, axis),
                   expm=torch.linalg.matrix_exp, odeint=odeint,
                   tensordot=lambda a, b, axes: torch.tensordot(a, b, dims=axes),
                   astype=lambda x, dtype: x.to(torch.from_numpy(np.empty(0, dtype)).dtype))
    return torch, xp


def _prepare_torch(workload, params, consts) -> Step:
    torch, xp = _torch()
    return _tape_step(xp, workload, params, consts,
                      leaf=lambda a: torch.tensor(a, requires_grad=True),
                      const=torch.from_numpy, to_numpy=lambda t: t.detach().numpy(),
                      optimizer=lambda ps: torch.optim.Adam(ps, **workload.train.kwargs()))


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
                      clear_grad=lambda p: p.null_grad(),
                      optimizer=lambda ps: ArraysAdam(workload.train, ps))


# ---- JAX ---------------------------------------------------------------------------------

@functools.cache
def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.linalg

    def odeint(f, y0, ts, p, rtol, atol):
        # diffrax's Dopri5, its default adjoint (RecursiveCheckpointAdjoint)
        try:
            import diffrax
        except ImportError:
            raise Unsupported("diffrax is not installed") from None
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(lambda t, y, p: f(y, t, p)), diffrax.Dopri5(), ts[0], ts[-1],
            None, y0, args=p, saveat=diffrax.SaveAt(ts=jnp.asarray(ts)),
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
            max_steps=100_000)
        return sol.ys

    return jax, jnp, namespace("jax", jnp, log_softmax=jax.nn.log_softmax,
                               expm=jax.scipy.linalg.expm, odeint=odeint)


def _prepare_jax(workload, params, consts, jit=False) -> Step:
    jax, jnp, xp = _jax()
    aot = None
    if jit:
        aot = lambda f, *args: jax.jit(f).lower(*args).compile()
    return _functional_step(xp, workload, params, consts, jax.value_and_grad, jnp.asarray,
                            finish=jax.block_until_ready, aot=aot)


# ---- HIPS autograd -----------------------------------------------------------------------

@functools.cache
def _autograd():
    import autograd
    import autograd.numpy as anp
    import autograd.scipy.linalg as asla
    from autograd.core import primitive_vjps
    from autograd.scipy.special import logsumexp

    def diagonal(x, axis1, axis2):
        # the VJP of anp.diagonal handles only axis1=-1, axis2=-2 (the same diagonal)
        if {axis1 % x.ndim, axis2 % x.ndim} != {x.ndim - 2, x.ndim - 1}:
            raise Unsupported("autograd's diagonal VJP handles only the last two axes")
        return anp.diagonal(x, axis1=-1, axis2=-2)

    def expm(a):
        # autograd.scipy.linalg wraps scipy.linalg.expm, but with no VJP (HIPS autograd
        # 1.9: "VJP of expm wrt argnums (0,) not defined")
        if asla.expm not in primitive_vjps:
            raise Unsupported("no gradient of expm: HIPS autograd's "
                              "autograd.scipy.linalg.expm has no VJP")
        return asla.expm(a)

    xp = namespace("autograd", anp, diagonal=diagonal, expm=expm,
                   log_softmax=lambda z, axis: z - logsumexp(z, axis=axis, keepdims=True),
                   vdot=lambda a, b: anp.dot(anp.conj(a), b))  # anp.vdot has no VJP
    return autograd, xp


def _prepare_autograd(workload, params, consts) -> Step:
    autograd, xp = _autograd()
    return _functional_step(xp, workload, params, consts, autograd.value_and_grad,
                            lambda a: a)


IMPLS: tuple[Impl, ...] = (
    Impl("numpy", "numpy", prepare_floor, numpy_memory=True),
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
