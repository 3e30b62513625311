"""The workloads of ``workloads.md``: inputs, the loss, and the hand-written floor.

A workload is a small declaration:

- ``inputs(rng, tiny)`` returns ``(params, consts)``: the arrays to differentiate with
  respect to (a dict, in order) and the constants (arrays or Python values); ``tiny``
  asks for small sizes (the tests);
- ``loss(xp, p, c)`` computes the scalar loss from the params ``p`` (a tuple, in order)
  and the constants ``c`` (a dict) with the functions of the namespace ``xp`` (see
  ``libraries.py``: each library provides the same small vocabulary) and operators;
- ``floor(p, c)`` is the hand-written NumPy version: the same forward and an analytic
  backward, returning ``(loss, grads)``. Complex gradients follow yaad's convention,
  ``dL/dRe + 1j * dL/dIm``;
- ``train`` (W11) makes one call a training step: the loss, the gradients and an
  :class:`Adam` update of the params, whose state carries over to the next call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Adam:
    """Adam's settings, and the hand-written update that the floor, JAX, HIPS autograd and
    MyGrad use (PyTorch's formula; yaad and PyTorch run their own ``optim.Adam``)."""

    lr: float = 1e-3
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def kwargs(self) -> dict:
        """The settings as ``torch.optim.Adam`` and ``yaad.optim.Adam`` take them."""
        return {"lr": self.lr, "betas": (self.b1, self.b2), "eps": self.eps}

    def corrections(self, t: int) -> tuple[float, float]:
        """The step size and the root of the second bias correction at step ``t`` (1, 2,
        ...), as Python floats: they keep float32 params float32."""
        return self.lr / (1 - self.b1 ** t), (1 - self.b2 ** t) ** 0.5

    def update(self, xp: Any, params: tuple, grads: tuple, m: tuple, v: tuple,
               step: float, root: float) -> tuple[tuple, tuple, tuple]:
        """New ``(params, m, v)`` from the gradients; ``xp`` provides ``sqrt``."""
        b1, b2 = self.b1, self.b2
        m = tuple(b1 * mi + (1 - b1) * g for mi, g in zip(m, grads))
        v = tuple(b2 * vi + (1 - b2) * (g * g) for vi, g in zip(v, grads))
        params = tuple(p - step * mi / (xp.sqrt(vi) / root + self.eps)
                       for p, mi, vi in zip(params, m, v))
        return params, m, v


@dataclass(frozen=True)
class Workload:
    """One benchmark workload (see the module docstring)."""

    id: str
    what: str
    inputs: Callable[[np.random.Generator, bool], tuple[dict, dict]]
    loss: Callable[[Any, tuple, dict], Any]
    floor: Callable[[tuple, dict], tuple[float, tuple]]
    complex: bool = False  # needs complex numbers (params or intermediates)
    rtol: float = 1e-7
    memory: bool = False  # also measure the peak memory of one call
    # implementation -> why it is skipped unless --slow
    slow: dict = field(default_factory=dict)
    train: Adam | None = None  # one call is a training step (see the module docstring)

    @property
    def checked_calls(self) -> int:
        """Calls before the check: three Adam steps (the first step of Adam is about
        ``lr * sign(g)`` and would not test the moments), else one."""
        return 1 if self.train is None else 3

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


# ---- W9: a 5-qubit circuit (many tiny complex operations) -------------------------------

_PAULI = {"I": np.eye(2), "X": np.array([[0.0, 1], [1, 0]]),
          "Y": np.array([[0, -1j], [1j, 0]]), "Z": np.diag([1.0, -1])}


def on_qubits(n: int, ops: dict) -> np.ndarray:
    """The dense operator on ``n`` qubits with ``ops[q]`` on qubit ``q`` (qubit 0 is the
    most significant, as in a C-ordered ``(2,) * n`` state) and the identity elsewhere."""
    out = np.ones((1, 1))
    for q in range(n):
        out = np.kron(out, ops.get(q, _PAULI["I"]))
    return out


def ising(n: int, h: float = 1.0) -> np.ndarray:
    """The transverse-field Ising Hamiltonian on a ring of ``n`` qubits,
    ``-sum_q Z_q Z_(q+1) - h sum_q X_q``, dense and complex."""
    Z, X = _PAULI["Z"], _PAULI["X"]
    H = -sum(on_qubits(n, {q: Z, (q + 1) % n: Z}) for q in range(n))
    return (H - h * sum(on_qubits(n, {q: X}) for q in range(n))).astype(complex)


def _cnot_ring_permutation(n):
    """The ring of CNOTs (q -> q+1) as indices: ``new_psi = psi[perm]`` (flat states)."""
    perm = np.arange(2 ** n)
    bit = lambda y, q: (y >> (n - 1 - q)) & 1
    for a in range(n):
        b = (a + 1) % n
        y = np.arange(2 ** n)
        perm = perm[y ^ (bit(y, a) << (n - 1 - b))]
    return perm


def _w9_inputs(rng, tiny):
    n, layers = (3, 2) if tiny else (5, 3)
    s = "abcdefghij"[:n]
    psi0 = np.zeros((2,) * n, complex)
    psi0[(0,) * n] = 1
    perm = _cnot_ring_permutation(n)
    consts = {
        "layers": layers, "psi0": psi0, "H": ising(n),
        # RY(t) = cos(t/2) I + sin(t/2) KY, RZ(t) = cos(t/2) I + sin(t/2) KZ
        "I2": np.eye(2, dtype=complex), "KY": -1j * _PAULI["Y"], "KZ": -1j * _PAULI["Z"],
        "CNOT": np.eye(4, dtype=complex)[[0, 1, 3, 2]].reshape(2, 2, 2, 2),
        "one": [f"Z{s[q]},{s}->{s.replace(s[q], 'Z')}" for q in range(n)],
        "two": [f"YZ{s[q]}{s[(q + 1) % n]},{s}->"
                f"{s.replace(s[q], 'Y').replace(s[(q + 1) % n], 'Z')}" for q in range(n)],
        "ring": perm, "ring_inv": np.argsort(perm)}
    return {"theta": rng.uniform(-np.pi, np.pi, (layers, n, 2))}, consts


def _w9_loss(xp, p, c):
    (theta,) = p
    cos, sin = xp.cos(theta / 2), xp.sin(theta / 2)
    psi = c["psi0"]
    for layer in range(c["layers"]):
        for q, spec in enumerate(c["one"]):
            for k, K in enumerate((c["KY"], c["KZ"])):
                gate = cos[layer, q, k] * c["I2"] + sin[layer, q, k] * K
                psi = xp.einsum(spec, gate, psi)
        for spec in c["two"]:
            psi = xp.einsum(spec, c["CNOT"], psi)
    flat = psi.reshape(-1)
    return xp.real(xp.vdot(flat, c["H"] @ flat))


def _w9_floor(p, c):
    # Flat states; a gate on qubit q is a product with the state as (2**q, 2, rest), the
    # CNOT ring a permutation. Backward: the adjoint state lam = dL/dpsi runs back through
    # the gates' conjugate transposes.
    (theta,) = p
    co, si = np.cos(theta / 2)[..., None, None], np.sin(theta / 2)[..., None, None]
    K = np.stack([c["KY"], c["KZ"]])
    gates = co * c["I2"] + si * K                   # (layers, n, 2, 2, 2)
    dgates = (co * K - si * c["I2"]) / 2            # their derivatives by the angle
    psi = c["psi0"].reshape(-1)
    saved = []
    for layer in gates:
        for q, pair in enumerate(layer):
            for g in pair:
                saved.append(psi)
                psi = (g @ psi.reshape(2 ** q, 2, -1)).reshape(-1)
        psi = psi[c["ring"]]
    hpsi = c["H"] @ psi
    loss = np.vdot(psi, hpsi).real
    lam = 2 * hpsi
    grad = np.empty_like(theta)
    for layer in reversed(range(theta.shape[0])):
        lam = lam[c["ring_inv"]]
        for q in reversed(range(theta.shape[1])):
            for k in (1, 0):
                x = saved.pop().reshape(2 ** q, 2, -1)
                lr = lam.reshape(2 ** q, 2, -1)
                grad[layer, q, k] = np.vdot(lr, dgates[layer, q, k] @ x).real
                lam = (gates[layer, q, k].conj().T @ lr).reshape(-1)
    return loss, (grad,)


# ---- W13: W9's circuit written as a physicist writes it -----------------------------------
#
# The same circuit and loss as W9 (so W9's floor), spelled gate by gate: index the angle,
# build the 2x2 gate with cos/sin/exp and stack, cast it to complex, tensordot it into
# the state and move the new axis back; each CNOT a tensordot on two axes.

def _w13_inputs(rng, tiny):
    params, consts = _w9_inputs(rng, tiny)
    n = consts["psi0"].ndim
    consts["n"] = n
    consts["pairs"] = [(q, (q + 1) % n) for q in range(n)]
    return params, consts


def _w13_loss(xp, p, c):
    (theta,) = p
    psi = c["psi0"]
    n = c["n"]
    for layer in range(c["layers"]):
        for q in range(n):
            half = theta[layer, q, 0] / 2
            co, si = xp.cos(half), xp.sin(half)
            ry = xp.astype(xp.stack([xp.stack([co, -si]), xp.stack([si, co])]), complex)
            psi = xp.moveaxis(xp.tensordot(ry, psi, axes=([1], [q])), 0, q)
            half = theta[layer, q, 1] / 2
            e = xp.exp(-1j * half)
            zero = 0 * e
            rz = xp.stack([xp.stack([e, zero]), xp.stack([zero, xp.conj(e)])])
            psi = xp.moveaxis(xp.tensordot(rz, psi, axes=([1], [q])), 0, q)
        for a, b in c["pairs"]:
            psi = xp.tensordot(c["CNOT"], psi, axes=([2, 3], [a, b]))
            psi = xp.moveaxis(psi, (0, 1), (a, b))
    flat = psi.reshape(-1)
    return xp.real(xp.vdot(flat, c["H"] @ flat))


# ---- W10: quantum optimal control (a two-qubit gate from 50 matrix exponentials) ---------

def _w10_inputs(rng, tiny):
    steps = 3 if tiny else 50
    dt = 0.1
    X, Z = _PAULI["X"], _PAULI["Z"]
    consts = {"steps": steps, "dt": dt, "-idt": -1j * dt,
              "H0": on_qubits(2, {0: Z, 1: Z}).astype(complex) / 2,
              "H1": on_qubits(2, {0: X}).astype(complex),
              "H2": on_qubits(2, {1: X}).astype(complex),
              "U0": np.eye(4, dtype=complex),
              "target_conj": np.eye(4, dtype=complex)[[0, 1, 3, 2]]}  # CNOT, real
    return {"u": rng.standard_normal((steps, 2))}, consts


def _w10_loss(xp, p, c):
    (u,) = p
    U = c["U0"]
    for k in range(c["steps"]):
        H = c["H0"] + u[k, 0] * c["H1"] + u[k, 1] * c["H2"]
        U = xp.expm(c["-idt"] * H) @ U
    return abs(xp.sum(c["target_conj"] * U)) ** 2 / 16


def _w10_floor(p, c):
    # Each H_k is Hermitian: expm(-i dt H_k) = Q exp(-i dt w) Q^H from one batched eigh,
    # and its backward is Daleckii-Krein with the divided differences of exp(-i dt w).
    (u,) = p
    dt, H1, H2 = c["dt"], c["H1"], c["H2"]
    H = c["H0"] + u[:, :1, None] * H1 + u[:, 1:, None] * H2
    w, Q = np.linalg.eigh(H)
    QH = Q.conj().swapaxes(-1, -2)
    V = (Q * np.exp(-1j * dt * w)[:, None, :]) @ QH
    before = [c["U0"]]                             # before[k] = V_(k-1) ... V_0
    for Vk in V:
        before.append(Vk @ before[-1])
    U = before.pop()
    z = np.sum(c["target_conj"] * U)
    loss = abs(z) ** 2 / 16
    lam = z * c["target_conj"].conj() / 8          # dL/dU
    GV = np.empty_like(V)
    for k in reversed(range(len(V))):
        GV[k] = lam @ before[k].conj().T
        lam = V[k].conj().T @ lam
    mean = (w[:, :, None] + w[:, None, :]) / 2
    diff = w[:, :, None] - w[:, None, :]
    F = -1j * dt * np.exp(-1j * dt * mean) * np.sinc(dt * diff / (2 * np.pi))
    GH = Q @ (F.conj() * (QH @ GV @ Q)) @ QH
    grad = np.stack([np.sum(GH.conj() * H1, axis=(1, 2)).real,
                     np.sum(GH.conj() * H2, axis=(1, 2)).real], axis=1)
    return loss, (grad,)


# ---- W12: an ODE gradient with many output times (Lotka-Volterra) -----------------------

def _w12_inputs(times):
    def inputs(rng, tiny):
        n = min(times, 20) if tiny else times
        consts = {"ts": np.linspace(0.0, 10.0, n), "rtol": 1e-6, "atol": 1e-9}
        return {"p": np.array([1.5, 1.0, 3.0, 1.0]), "y0": np.array([1.0, 1.0])}, consts
    return inputs


_FIELDS: dict = {}


def lotka_volterra(xp):
    """The vector field ``f(y, t, p)`` in the namespace ``xp``, made once per namespace (as
    a user defines it once: yaad keeps its compiled programs per function, jax.jit traces
    the loss once)."""
    if id(xp) not in _FIELDS:
        _FIELDS[id(xp)] = (xp, _lotka_volterra(xp))
    return _FIELDS[id(xp)][1]


def _lotka_volterra(xp):
    return lambda y, t, p: xp.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                                     p[3] * y[0] * y[1] - p[2] * y[1]])


def _w12_loss(xp, p, c):
    params, y0 = p
    ys = xp.odeint(lotka_volterra(xp), y0, c["ts"], params, c["rtol"], c["atol"])
    return xp.sum(ys ** 2)


def _w12_floor(p, c):
    # SciPy's forward solve of the state with its forward sensitivities (to p and y0),
    # at tight tolerances: the gradient of the exact solution
    import scipy.integrate

    params, y0 = p
    a, b, g, d = params

    def rhs(t, v):
        x, z = v[:2]
        S = v[2:].reshape(2, 6)
        J = np.array([[a - b * z, -b * x], [d * z, d * x - g]])
        dfdp = np.zeros((2, 6))
        dfdp[:, :4] = [[x, -x * z, 0, 0], [0, 0, -z, x * z]]
        return np.concatenate([[a * x - b * x * z, d * x * z - g * z],
                               (J @ S + dfdp).ravel()])

    s0 = np.zeros((2, 6))
    s0[:, 4:] = np.eye(2)
    sol = scipy.integrate.solve_ivp(rhs, (c["ts"][0], c["ts"][-1]),
                                    np.concatenate([y0, s0.ravel()]), t_eval=c["ts"],
                                    method="DOP853", rtol=1e-12, atol=1e-12)
    ys = sol.y[:2].T
    S = sol.y[2:].T.reshape(-1, 2, 6)
    grad = np.einsum("ti,tij->j", 2 * ys, S)
    return float(np.sum(ys ** 2)), (grad[:4], grad[4:])


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
    Workload("W9", "5-qubit circuit energy, 30 angles", _w9_inputs, _w9_loss, _w9_floor,
             complex=True),
    Workload("W10", "two-qubit gate from 50 expm, 100 controls", _w10_inputs, _w10_loss,
             _w10_floor, complex=True),
    Workload("W11", "MLP step + Adam update, float32", _mlp_inputs(np.float32), _mlp_loss,
             _mlp_floor, rtol=2e-4, train=Adam()),
    # (rtol: torchdiffeq's continuous adjoint is 1.1e-4 off the exact gradient at 100 times)
    *(Workload(f"W12/{n}", f"ODE gradient, Lotka-Volterra, {n:,} output times",
               _w12_inputs(n), _w12_loss, _w12_floor, rtol=5e-4,
               slow={"jax": "diffrax outside jax.jit traces its solver on every call"})
      for n in (10, 100, 1000)),
    Workload("W13", "W9's circuit as tensordot/moveaxis/stack per gate", _w13_inputs,
             _w13_loss, _w9_floor, complex=True),
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
