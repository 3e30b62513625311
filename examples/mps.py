"""Ground state of the transverse-field Ising chain as a matrix product state (MPS).

    H = -J sum_i Z_i Z_{i+1} - h sum_i X_i      (open chain of L spins)

The state is an MPS: L site tensors A_i of shape (D_left, 2, D_right), bond dimension at
most D. Its norm <psi|psi> and the expectation <psi|H|psi> (with H as a matrix product
operator of bond dimension 3) are contracted left to right with ``yaad.einsum``, and the
energy E = <psi|H|psi> / <psi|psi> is minimised by gradient descent on all site tensors
at once, the gradients coming from yaad's reverse mode through the einsums. The start is
a random MPS brought to left-canonical form with ``yaad.linalg.qr``. The result is
compared with exact diagonalisation (sparse Lanczos on the 2^L states), for L <= 12.

Optimisers: ``"lbfgs"`` (default: SciPy's L-BFGS, a quasi-Newton gradient descent, via
``yaad.optimize.minimize``) or ``"gd"`` (plain gradient descent with momentum, written out
below in a few lines).

Run: ``python examples/mps.py`` (L=10, D=8: about 3 s). The arrays are small: one BLAS
thread is fastest (``OMP_NUM_THREADS=1``, set below when run as a script).
"""

from __future__ import annotations

import argparse
import os
import time

if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from scipy.sparse.linalg import eigsh

import yaad
from yaad.demo import tfim_hamiltonian


def random_mps(L: int, D: int, dtype=np.float64, seed: int = 0) -> list[np.ndarray]:
    """A random MPS in left-canonical form: site ``i`` has shape ``(Dl, 2, Dr)`` with the
    bond dimensions capped by ``D`` and by the Hilbert-space sizes ``2^i``, ``2^(L-i)``."""
    rng = np.random.default_rng(seed)
    dims = [min(D, 2 ** i, 2 ** (L - i)) for i in range(L + 1)]
    tensors = []
    for i in range(L):
        shape = (dims[i], 2, dims[i + 1])
        a = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        tensors.append(a.astype(dtype))
    for i in range(L - 1):  # sweep a QR decomposition through the chain
        dl, d, dr = tensors[i].shape
        q, r = yaad.linalg.qr(tensors[i].reshape(dl * d, dr))
        tensors[i] = q.reshape(dl, d, q.shape[-1])
        tensors[i + 1] = np.einsum("ab,bsc->asc", r, tensors[i + 1])
    tensors[-1] /= np.linalg.norm(tensors[-1])
    return tensors


def tfim_mpo(L: int, h: float, J: float = 1.0) -> list[np.ndarray]:
    """H as a matrix product operator: tensors ``W[w, s, t, v]`` (bond w -> v, physical
    s -> t) with the bond states (done, Z pending, identity so far)."""
    I2 = np.eye(2)
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    Z = np.diag([1.0, -1.0])
    W = np.zeros((3, 2, 2, 3))
    W[0, :, :, 0] = I2  # the terms are complete
    W[1, :, :, 0] = -J * Z  # close a Z Z term
    W[2, :, :, 0] = -h * X  # a field term
    W[2, :, :, 1] = Z  # open a Z Z term
    W[2, :, :, 2] = I2  # nothing yet
    return [W[2:3]] + [W] * (L - 2) + [W[:, :, :, 0:1]] if L > 1 else [W[2:3, :, :, 0:1]]


def to_state(tensors) -> np.ndarray:
    """The 2^L amplitudes of the MPS (site 0 the most significant bit), for checks."""
    psi = np.ones((1, 1))
    for a in tensors:
        a = a.data if isinstance(a, yaad.Tensor) else a
        psi = np.einsum("pa,asb->psb", psi, a).reshape(-1, a.shape[-1])
    return psi[:, 0]


def norm_squared(tensors) -> yaad.Tensor:
    """<psi|psi>, contracted left to right (two pairwise einsums per site)."""
    env = np.ones((1, 1))
    for a in tensors:
        env = yaad.einsum("ab,asc->bsc", env, yaad.conj(a))
        env = yaad.einsum("bsc,bsd->cd", env, a)
    return yaad.real(env[0, 0])


def expectation(tensors, mpo) -> yaad.Tensor:
    """<psi|H|psi> for H given as an MPO, contracted left to right."""
    env = np.ones((1, 1, 1))
    for a, w in zip(tensors, mpo):
        env = yaad.einsum("awb,asc,wstv,btd->cvd", env, yaad.conj(a), w, a)
    return yaad.real(env[0, 0, 0])


def energy(tensors, mpo) -> yaad.Tensor:
    """The Rayleigh quotient <psi|H|psi> / <psi|psi> (invariant under rescaling psi)."""
    return expectation(tensors, mpo) / norm_squared(tensors)


def exact_energy(L: int, h: float, J: float = 1.0) -> float:
    """The ground-state energy by sparse exact diagonalisation (L <= 12 or so)."""
    H = tfim_hamiltonian(L, h, J)
    if L <= 6:
        return float(np.linalg.eigvalsh(H.toarray())[0])
    return float(eigsh(H, k=1, which="SA", tol=1e-12)[0][0])


def _gradient_descent(tensors, mpo, steps, lr, momentum=0.9):
    """Heavy-ball gradient descent: ``v = momentum v - lr grad; A += v``."""
    params = [yaad.tensor(a, requires_grad=True) for a in tensors]
    velocity = [np.zeros_like(a) for a in tensors]
    for _ in range(steps):
        e = energy(params, mpo)
        e.backward()
        with yaad.no_grad():
            for p, v in zip(params, velocity):
                v *= momentum
                v -= lr * p.grad  # the gradient of a complex tensor descends as is
                p += v
                p.grad = None
    return [p.data for p in params]


def main(L: int = 10, D: int = 8, steps: int = 1000, h: float = 1.0, J: float = 1.0,
         optimizer: str = "lbfgs", lr: float = 0.05, dtype=np.float64, seed: int = 0,
         verbose: bool = False) -> dict:
    """Optimise an MPS for the TFIM chain and compare with exact diagonalisation.

    Parameters
    ----------
    L, D : int
        Sites and maximal bond dimension.
    steps : int
        Iterations of the optimiser.
    h, J : float
        Transverse field and coupling.
    optimizer : {"lbfgs", "gd"}
    lr : float
        Step size of "gd".
    dtype : data-type
        float64, or complex128 for a complex MPS (same energy: the ground state is real).
    seed : int
    verbose : bool

    Returns
    -------
    dict
        ``energy``, ``exact`` (None for L > 12), ``relative_error``, ``seconds`` (of the
        optimisation), ``tensors``.
    """
    mpo = tfim_mpo(L, h, J)
    start = random_mps(L, D, dtype, seed)
    t0 = time.perf_counter()
    if optimizer == "lbfgs":
        result = yaad.optimize.minimize(lambda ts: energy(ts, mpo), start, method="L-BFGS-B",
                                        options={"maxiter": steps, "gtol": 1e-10,
                                                 "ftol": 1e-15})
        tensors = [np.asarray(x) for x in result.x]
    elif optimizer == "gd":
        tensors = _gradient_descent(start, mpo, steps, lr)
    else:
        raise ValueError(f"optimizer must be 'lbfgs' or 'gd', got {optimizer!r}")
    seconds = time.perf_counter() - t0
    e = float(energy(tensors, mpo))
    exact = exact_energy(L, h, J) if L <= 12 else None
    rel = None if exact is None else abs(e - exact) / abs(exact)
    if verbose:
        print(f"L={L} D={D} h={h} {optimizer}: E_MPS = {e:.12f}"
              + ("" if exact is None else f", E_exact = {exact:.12f}, relative error "
                 f"{rel:.2e}") + f", {seconds:.2f} s")
    return {"energy": e, "exact": exact, "relative_error": rel, "seconds": seconds,
            "tensors": tensors}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--L", type=int, default=10)
    parser.add_argument("--D", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--h", type=float, default=1.0)
    parser.add_argument("--optimizer", default="lbfgs", choices=["lbfgs", "gd"])
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--complex", action="store_true", help="a complex MPS")
    args = parser.parse_args()
    main(args.L, args.D, args.steps, args.h, optimizer=args.optimizer, lr=args.lr,
         dtype=np.complex128 if args.complex else np.float64, verbose=True)
