"""The workloads W1-W8 of ``workloads.md``: inputs, the loss, and the hand-written floor.

A workload is a small declaration:

- ``inputs(rng, tiny)`` returns ``(params, consts)``: the arrays to differentiate with
  respect to (a dict, in order) and the constants (arrays or Python values); ``tiny``
  asks for small sizes (the tests);
- ``loss(xp, p, c)`` computes the scalar loss from the params ``p`` (a tuple, in order)
  and the constants ``c`` (a dict) with the functions of the namespace ``xp`` (see
  ``libraries.py``: each library provides the same small vocabulary) and operators;
- ``floor(p, c)`` is the hand-written NumPy version: the same forward and an analytic
  backward, returning ``(loss, grads)``. Complex gradients follow yaad's convention,
  ``dL/dRe + 1j * dL/dIm``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Workload:
    """One benchmark workload (see the module docstring)."""

    id: str
    what: str
    inputs: Callable[[np.random.Generator, bool], tuple[dict, dict]]
    loss: Callable[[Any, tuple, dict], Any]
    floor: Callable[[tuple, dict], tuple[float, tuple]]
    complex: bool = False
    rtol: float = 1e-7
    memory: bool = False  # also measure the peak memory of one call
    # implementation -> why it is skipped unless --slow
    slow: dict = field(default_factory=dict)

    @property
    def group(self) -> str:
        """The id without its variant: ``W2`` for ``W2/f32``."""
        return self.id.split("/")[0]


# ---- W1: the seed's benchmark ----------------------------------------------------------

def _w1_inputs(rng, tiny):
    n = 4 if tiny else 30
    return {"x1": rng.standard_normal((n, n)), "x2": rng.standard_normal((n, n))}, {}


def _w1_loss(xp, p, c):
    x1, x2 = p
    return xp.trace(x1 @ x2)


def _w1_floor(p, c):
    x1, x2 = p
    return np.trace(x1 @ x2), (x2.T, x1.T)


# ---- W2: one MLP training step -----------------------------------------------------------

def _mlp_inputs(dtype):
    def inputs(rng, tiny):
        n, d, h, k = (5, 3, 4, 3) if tiny else (64, 32, 64, 10)
        params = {"W1": rng.standard_normal((d, h)) / np.sqrt(d),
                  "b1": rng.standard_normal(h) * 0.1,
                  "W2": rng.standard_normal((h, k)) / np.sqrt(h),
                  "b2": rng.standard_normal(k) * 0.1}
        params = {name: a.astype(dtype) for name, a in params.items()}
        consts = {"x": rng.standard_normal((n, d)).astype(dtype),
                  "rows": np.arange(n), "labels": rng.integers(0, k, n)}
        return params, consts
    return inputs


def _mlp_loss(xp, p, c):
    W1, b1, W2, b2 = p
    h = xp.tanh(c["x"] @ W1 + b1)
    logp = xp.log_softmax(h @ W2 + b2, axis=-1)
    return -xp.mean(logp[c["rows"], c["labels"]])


def _mlp_floor(p, c):
    W1, b1, W2, b2 = p
    x, rows, labels = c["x"], c["rows"], c["labels"]
    n = len(x)
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    logp = z - np.log(s)
    loss = -logp[rows, labels].mean()
    dz = e / s
    dz[rows, labels] -= 1
    dz /= n
    da = (dz @ W2.T) * (1 - h * h)
    return loss, (x.T @ da, da.sum(axis=0), h.T @ dz, dz.sum(axis=0))


# ---- W3: per-op overhead -----------------------------------------------------------------

def _w3_inputs(rng, tiny):
    steps = 5 if tiny else 200
    params = {"a": rng.standard_normal(4), "b": rng.standard_normal(4)}
    return params, {"y0": rng.standard_normal(4), "steps": steps}


def _w3_loss(xp, p, c):
    a, b = p
    y = c["y0"]
    for _ in range(c["steps"]):
        y = xp.sin(y) * a + xp.cos(y) * b
    return xp.sum(y)


def _w3_floor(p, c):
    a, b = p
    y = c["y0"]
    saved = []
    for _ in range(c["steps"]):
        s, co = np.sin(y), np.cos(y)
        saved.append((s, co))
        y = s * a + co * b
    gy = np.ones_like(y)
    ga = np.zeros_like(a)
    gb = np.zeros_like(b)
    for s, co in reversed(saved):
        ga += gy * s
        gb += gy * co
        gy = gy * (co * a - s * b)
    return y.sum(), (ga, gb)


# ---- W4: memory traffic ------------------------------------------------------------------

def _w4_inputs(rng, tiny):
    return {"x": rng.standard_normal(10 if tiny else 1_000_000)}, {}


def _w4_loss(xp, p, c):
    (x,) = p
    return xp.sum(xp.exp(xp.sin(x)) * x**2 / (1 + x**2))


def _w4_floor(p, c):
    (x,) = p
    e = np.exp(np.sin(x))
    q = x * x
    d = 1 + q
    r = q / d
    loss = (e * r).sum()
    # d/dx [e r] = e cos(x) r + e 2x / d^2
    r *= np.cos(x)
    d *= d
    q = x / d
    q *= 2
    q += r
    q *= e
    return loss, (q,)


# ---- W5: complex quantum expectation -----------------------------------------------------

def _w5_inputs(rng, tiny):
    n = 6 if tiny else 1024
    psi = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    m = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return {"psi": psi}, {"H": (m + m.conj().T) / 2}


def _w5_loss(xp, p, c):
    (psi,) = p
    return xp.real(xp.vdot(psi, c["H"] @ psi)) / xp.real(xp.vdot(psi, psi))


def _w5_floor(p, c):
    (psi,) = p
    hpsi = c["H"] @ psi
    den = np.vdot(psi, psi).real
    loss = np.vdot(psi, hpsi).real / den
    # H is Hermitian: d Re(psi^H H psi) = 2 H psi, d Re(psi^H psi) = 2 psi
    return loss, (2 * (hpsi - loss * psi) / den,)


# ---- W6: batched trace -------------------------------------------------------------------

def _w6_inputs(rng, tiny):
    shape = (3, 2, 2) if tiny else (1000, 8, 8)
    return {"A": rng.standard_normal(shape), "B": rng.standard_normal(shape)}, {}


def _w6_einsum_loss(xp, p, c):
    A, B = p
    return xp.einsum("bij,bji->", A, B)


def _w6_matmul_loss(xp, p, c):
    A, B = p
    return xp.sum(xp.diagonal(A @ B, axis1=1, axis2=2))


def _w6_grads(A, B):
    return B.transpose(0, 2, 1), A.transpose(0, 2, 1)


def _w6_einsum_floor(p, c):
    A, B = p
    return np.einsum("bij,bji->", A, B), _w6_grads(A, B)


def _w6_matmul_floor(p, c):
    A, B = p
    return np.trace(A @ B, axis1=1, axis2=2).sum(), _w6_grads(A, B)


# ---- W7: tensor network (an MPS norm) ----------------------------------------------------

def _w7_inputs(rng, tiny):
    sites, bond = (4, 3) if tiny else (16, 16)
    params = {}
    for k in range(sites):
        dl = 1 if k == 0 else bond
        dr = 1 if k == sites - 1 else bond
        # scaled so that the norm stays near 1 along the chain
        params[f"A{k}"] = rng.standard_normal((dl, 2, dr)) / np.sqrt(2 * dl)
    return params, {"E0": np.ones((1, 1))}


def _w7_loss(xp, p, c):
    E = c["E0"]
    for A in p:
        T = xp.einsum("ab,asc->bsc", E, A)
        E = xp.einsum("bsc,bsd->cd", T, A)
    return xp.sum(E)


def _w7_floor(p, c):
    # The two einsums per site as matrix products: T = E^T A, E' = T^T A (bond-major).
    E = c["E0"]
    saved = []
    for A in p:
        dl, s, dr = A.shape
        T = (E.T @ A.reshape(dl, s * dr)).reshape(-1, dr)  # (b s, c)
        A2 = A.reshape(-1, dr)                              # (b s, d)
        saved.append((E, T, A2))
        E = T.T @ A2
    loss = E.sum()
    G = np.ones_like(E)
    grads = []
    for (E, T, A2), A in zip(reversed(saved), reversed(p)):
        dl, s, dr = A.shape
        dA = T @ G                    # from E' = T^T A
        dT = A2 @ G.T                 # (b s, c)
        dT = dT.reshape(-1, s * dr)   # (b, s c)
        dA += (E @ dT).reshape(-1, dr)
        G = (A.reshape(dl, s * dr) @ dT.T)
        grads.append(dA.reshape(A.shape))
    return loss, tuple(reversed(grads))


# ---- W8: deep graph ----------------------------------------------------------------------

def _w8_inputs(rng, tiny):
    return {"x": rng.standard_normal(1)}, {"steps": 20 if tiny else 10_000}


def _w8_loss(xp, p, c):
    (x,) = p
    for _ in range(c["steps"]):
        x = x * 0.999 + 0.001
    return xp.sum(x)


def _w8_floor(p, c):
    (x,) = p
    for _ in range(c["steps"]):
        x = x * 0.999 + 0.001
    g = np.ones_like(x)
    for _ in range(c["steps"]):
        g = g * 0.999
    return x.sum(), (g,)


_JIT_W8 = ("XLA compile time > 300 s (10,000 unrolled steps; 333 s measured on this "
           "machine class); run with --slow")

WORKLOADS: tuple[Workload, ...] = (
    Workload("W1", "trace(x1 @ x2), 30x30", _w1_inputs, _w1_loss, _w1_floor),
    Workload("W2/f64", "MLP step, float64", _mlp_inputs(np.float64), _mlp_loss, _mlp_floor),
    Workload("W2/f32", "MLP step, float32", _mlp_inputs(np.float32), _mlp_loss, _mlp_floor,
             rtol=2e-4),
    Workload("W3", "200 steps sin/cos on (4,)", _w3_inputs, _w3_loss, _w3_floor),
    Workload("W4", "elementwise chain on 1e6", _w4_inputs, _w4_loss, _w4_floor,
             memory=True),
    Workload("W5", "complex <psi|H|psi>/<psi|psi>, 1024", _w5_inputs, _w5_loss, _w5_floor,
             complex=True),
    Workload("W6/einsum", "batched trace, einsum", _w6_inputs, _w6_einsum_loss,
             _w6_einsum_floor),
    Workload("W6/matmul", "batched trace, matmul+diagonal", _w6_inputs, _w6_matmul_loss,
             _w6_matmul_floor),
    Workload("W7", "MPS norm, 16 sites, bond 16", _w7_inputs, _w7_loss, _w7_floor),
    Workload("W8", "10,000-step scalar chain", _w8_inputs, _w8_loss, _w8_floor,
             slow={"jax.jit": _JIT_W8}),
)


def select(ids: str | None) -> list[Workload]:
    """The workloads named in a comma-separated list (``W2`` selects both variants)."""
    if not ids:
        return list(WORKLOADS)
    wanted = {s.strip().upper() for s in ids.split(",") if s.strip()}
    chosen = [w for w in WORKLOADS if w.id.upper() in wanted or w.group.upper() in wanted]
    known = {w.id.upper() for w in WORKLOADS} | {w.group.upper() for w in WORKLOADS}
    unknown = wanted - known
    if unknown:
        raise SystemExit(f"unknown workloads: {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(w.id for w in WORKLOADS)}")
    return chosen
