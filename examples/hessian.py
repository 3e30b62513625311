"""Curvature of an energy landscape: the Hessian of a Lennard-Jones cluster.

Newton's method finds a minimum of the energy of a few atoms in the plane; the Hessian
there gives the normal modes: three zero modes (two translations, one rotation) and
positive curvatures for the vibrations. Hessian-vector products (forward over reverse,
no matrix formed) give the same Newton step through conjugate gradients.

    python examples/hessian.py [--atoms 3]
"""

from __future__ import annotations

import argparse

import numpy as np

import yaad
from yaad import func


def energy(x):
    """Lennard-Jones energy of atoms at positions x (flat: x1, y1, x2, y2, ...)."""
    p = yaad.reshape(x, (-1, 2))
    n = p.shape[0]
    d = p[:, None, :] - p[None, :, :]
    r2 = yaad.sum(d * d, axis=-1) + np.eye(n)  # the diagonal is masked out below
    inv6 = r2 ** -3
    pairs = np.triu(np.ones((n, n)), 1)
    return 4 * yaad.sum(pairs * (inv6 * inv6 - inv6))


def conjugate_gradient(matvec, b, tol=1e-12, maxiter=200):
    """Solve A x = b for a symmetric positive definite A given only x -> A x."""
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = r @ r
    for _ in range(maxiter):
        ap = matvec(p)
        alpha = rr / (p @ ap)
        x += alpha * p
        r -= alpha * ap
        rr, rr_old = r @ r, rr
        if np.sqrt(rr) < tol:
            break
        p = r + (rr / rr_old) * p
    return x


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--atoms", type=int, default=4, choices=(2, 3, 4))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    # Atoms on a triangular lattice near the pair distance 2^(1/6), slightly shaken.
    rng = np.random.default_rng(args.seed)
    lattice = np.array([[0, 0], [1, 0], [0.5, 0.866], [1.5, 0.866]])
    x = (2 ** (1 / 6) * lattice[:args.atoms] + 0.05 * rng.standard_normal((args.atoms, 2)))
    x = x.ravel()

    grad, hessian = func.grad(energy), func.hessian(energy)
    iterations = 0
    g = grad(x)
    while np.linalg.norm(g) > 1e-10 and iterations < 50:
        # Newton, with |curvature| floored: the zero modes and any saddle do not blow up
        w, v = np.linalg.eigh(hessian(x))
        x = x - v @ ((v.T @ g) / np.maximum(np.abs(w), 1e-3))
        g = grad(x)
        iterations += 1
    h = hessian(x)
    modes = np.linalg.eigvalsh(h)

    # The same Hessian by forward over forward, and a Newton step without forming it.
    assert np.allclose(func.jacfwd(func.jacfwd(energy))(x), h, atol=1e-8)
    b = rng.standard_normal(x.size)
    shifted = lambda v: func.hvp(energy, (x,), (v,))[1] + 1.0 * v  # noqa: E731
    step = conjugate_gradient(shifted, b)
    assert np.allclose(step, np.linalg.solve(h + np.eye(x.size), b), atol=1e-8)

    print(f"{args.atoms} atoms, energy {float(energy(x)):.6f} after {iterations} Newton "
          f"iterations, |gradient| = {np.linalg.norm(grad(x)):.1e}")
    print("Hessian eigenvalues (3 zero modes, then vibrations):")
    print(np.array2string(modes, precision=4, suppress_small=True))
    return {"energy": float(energy(x)), "modes": modes, "gradient": grad(x)}


if __name__ == "__main__":
    main()
