"""Variational iPEPS for the square-lattice Heisenberg antiferromagnet, gradients by yaad.

The second landmark of Liao, Liu, Wang and Xiang, "Differentiable Programming Tensor
Networks", Phys. Rev. X 9, 031041 (2019): the ground state of

    H = sum_<ij> S_i . S_j        (spin 1/2, nearest neighbours, infinite square lattice)

as an infinite projected entangled-pair state (iPEPS) of one tensor A[s, u, l, d, r]
(physical spin s, four bonds of dimension D), made symmetric under the rotations and
reflections of the lattice. The Neel order is absorbed by rotating every other spin by pi
about the y axis, so that one tensor describes both sublattices; the bond Hamiltonian
becomes h = -Sx Sx + Sy Sy - Sz Sz, a real matrix.

The infinite lattice is contracted by the corner-transfer-matrix renormalization group
(CTMRG) for a C4v-symmetric state: one corner C (chi x chi) and one edge E, iterated to a
fixed point by eigen-decompositions of the enlarged corner truncated to chi. The energy
per site is twice the energy of a bond, from the two-site density matrix that C and E
give. Its gradient with respect to A goes through the converged environment only:
``yaad.func.fixed_point`` differentiates the CTMRG step at its fixed point by the implicit
function theorem (one linear solve of vector-Jacobian products), however many iterations
the environment took. For that the environment must be a fixed point of the step
itself, not only up to the sign of each eigenvector or a rotation inside a block of equal
eigenvalues: the step fixes both from the new edge (``_canonical_basis``). L-BFGS
(``yaad.optimize.minimize``) does the rest; each evaluation starts CTMRG from the previous
environment.

Published (Liao et al.): -0.6602 at D = 2 and -0.6681 at D = 3; quantum Monte Carlo
(Sandvik 2010): -0.669437. Staggered magnetisation: 0.3074 (QMC).

Run: ``python examples/ipeps_heisenberg.py`` (D = 2 with chi = 16, then D = 3 with
chi = 30 from the D = 2 optimum: about 5 minutes on one core), or ``--D 2 --chi 16``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

import yaad
from yaad import func

QMC_ENERGY = -0.669437       # Sandvik, PRB 56, 11678 (1997)
QMC_MAGNETISATION = 0.30743  # Sandvik and Evertz, PRB 82, 024407 (2010)
PUBLISHED = {2: -0.6602, 3: -0.6681}  # Liao et al. (2019), as quoted in the issue

SX = np.array([[0.0, 1.0], [1.0, 0.0]]) / 2
SZ = np.array([[1.0, 0.0], [0.0, -1.0]]) / 2
SY_SY = -np.kron(np.array([[0.0, 1.0], [-1.0, 0.0]]), np.array([[0.0, 1.0], [-1.0, 0.0]])) / 4
# S.S with the second spin rotated by pi about y (Sx -> -Sx, Sz -> -Sz): a real matrix.
BOND = -np.kron(SX, SX) + SY_SY - np.kron(SZ, SZ)


def symmetrize(a):
    """The C4v-symmetric part of ``a[s, u, l, d, r]`` (rotations and reflections of the four
    bonds), scaled to norm 1."""
    perms = [(0, 1, 2, 3, 4), (0, 2, 3, 4, 1), (0, 3, 4, 1, 2), (0, 4, 1, 2, 3),
             (0, 1, 4, 3, 2), (0, 4, 3, 2, 1), (0, 3, 2, 1, 4), (0, 2, 1, 4, 3)]
    s = sum(yaad.transpose(a, p) for p in perms)
    return s / yaad.linalg.norm(yaad.reshape(s, (-1,)))


def double_layer(a, open_legs: bool = False):
    """``T[uu', ll', dd', rr'] = sum_s a[s, u, l, d, r] a[s, u', l', d', r']`` (with
    ``open_legs`` the physical indices stay: ``T[..., s, s']``)."""
    d = a.shape[1]
    if open_legs:
        t = yaad.einsum("auldr,bvmew->uvlmderwab", a, a)
        return yaad.reshape(t, (d * d,) * 4 + (a.shape[0], a.shape[0]))
    t = yaad.einsum("auldr,avmew->uvlmderw", a, a)
    return yaad.reshape(t, (d * d,) * 4)


def initial_environment(t, chi: int):
    """A start for CTMRG: the corner and edge of the open boundary, grown to ``chi``."""
    c = yaad.sum(t, axis=(0, 1))                 # C[d, r]
    e = yaad.transpose(yaad.sum(t, axis=1), (0, 2, 1))  # E[u, r?, d] -> (chi, D^2, chi)
    with yaad.no_grad():
        for _ in range(4):
            c, e = ctm_step((c, e), t, chi)
    return c, e


def ctm_step(env, t, chi: int):
    """One step of symmetric CTMRG: grow the corner by one row and column, project it back
    to ``chi`` on the eigenvectors of its largest eigenvalues (in absolute value)."""
    c, e = env
    k, dd = e.shape[0], t.shape[0]
    # the enlarged corner M[(a, d), (c, r)] = E[a, l, x] C[x, y] E[y, u, c] T[u, l, d, r]
    m = yaad.einsum("alx,xy,yuc,uldr->adcr", e, c, e, t)
    m = yaad.reshape(m, (k * dd, k * dd))
    m = (m + yaad.transpose(m)) / 2
    w, v = yaad.linalg.eigh(m)
    keep = _largest(np.asarray(getattr(w, "data", w)), chi)
    p = v[:, keep]
    c_new = yaad.transpose(p) @ m @ p
    p3 = yaad.reshape(p, (k, dd, p.shape[-1]))
    e_new = yaad.einsum("aue,alb,uldr,bdf->erf", p3, e, t, p3)
    # The new basis is defined up to a sign per vector, and up to a rotation inside a block
    # of equal eigenvalues (the two-dimensional representations of the lattice's symmetry
    # make pairs). Fix both from the new edge alone, so that the converged environment is a
    # fixed point of this step itself.
    r = _canonical_basis(np.asarray(getattr(w, "data", w))[keep], e_new)
    e_new = yaad.einsum("ab,aic,cd->bid", r, e_new, r)
    c_new = yaad.transpose(r) @ c_new @ r
    c_new = (c_new + yaad.transpose(c_new)) / 2
    e_new = (e_new + yaad.transpose(e_new, (2, 1, 0))) / 2
    return c_new / yaad.linalg.norm(c_new), e_new / yaad.linalg.norm(e_new)


def _largest(w, chi: int):
    """The indices of the (at most) chi eigenvalues largest in absolute value, without
    cutting through values equal in absolute value (as +x and -x): the kept set must not
    depend on rounding."""
    order = np.argsort(-np.abs(w), kind="stable")
    size = np.abs(w[order])
    k = min(chi, len(w))
    while 0 < k < len(w) and size[k - 1] - size[k] <= 1e-9 * size[0]:
        k -= 1
    return np.sort(order[:k])


def _canonical_basis(w, e):
    """An orthogonal matrix ``r`` (differentiable in ``e``) such that the edge in the basis
    ``r`` is the same whatever basis of eigenvectors ``e`` came in: with the symmetric
    matrix ``s = sum_i e[:, i, :] probe_i`` (a fixed generic vector ``probe``), ``r``
    diagonalises ``s`` inside each block of equal ``w``, then turns the sign of each vector
    so that the leading eigenvector of ``r^T s r`` is positive."""
    probe = np.cos(np.arange(e.shape[1]) * 2.399963 + 0.5)
    s = yaad.einsum("aib,i->ab", e, probe)
    s = (s + yaad.transpose(s)) / 2
    r = np.eye(len(w))
    tol = 1e-9 * np.max(np.abs(w))
    start = 0
    for i in range(1, len(w) + 1):
        if i == len(w) or abs(w[i] - w[start]) > tol:
            if i - start > 1:
                block = np.arange(start, i)
                r = yaad.index_put(r, yaad.linalg.eigh(s[block[:, None], block])[1],
                                   (block[:, None], block))
            start = i
    turned = np.asarray(getattr(r, "data", r))
    lead = np.linalg.eigh(turned.T @ np.asarray(getattr(s, "data", s)) @ turned)[1][:, -1]
    return r * np.where(lead < 0, -1.0, 1.0)


def converge(env, t, chi: int, tol: float = 1e-11, maxiter: int = 2000):
    """CTMRG iterated without gradients until the corner and the edge stop changing (the
    criterion of ``yaad.func.fixed_point``)."""
    with yaad.no_grad():
        for n in range(1, maxiter + 1):
            new = ctm_step(env, t, chi)
            if new[1].shape == env[1].shape:
                change = np.sqrt(sum(np.sum((x.data - y.data) ** 2) for x, y in zip(new, env)))
                size = np.sqrt(sum(np.sum(x.data ** 2) for x in new))
                if change <= tol * size:
                    return new, n
            env = new
    return env, maxiter


def bond_density_matrix(a, c, e):
    """The two-site density matrix of a horizontal bond, ``rho[(s1 s2), (t1 t2)]``."""
    t = double_layer(a, open_legs=True)
    # left half L[z, q, r, s, s']: corners and edges around the left site
    half = yaad.einsum("xy,yuz,xlw,wv,vdq,uldrst->zqrst", c, e, e, c, e, t)
    rho = yaad.einsum("zqrac,zqrbd->abcd", half, half)
    d = a.shape[0]
    return yaad.reshape(rho, (d * d, d * d))


def observables(a, c, e):
    """Energy per site (twice the bond energy) and the staggered magnetisation."""
    rho = bond_density_matrix(a, c, e)
    rho = (rho + yaad.transpose(rho)) / 2
    norm = yaad.trace(rho)
    energy = 2 * yaad.trace(rho @ BOND) / norm
    one = np.asarray(getattr(rho, "data", rho)).reshape(2, 2, 2, 2).trace(axis1=1, axis2=3)
    one = one / np.trace(one)
    m = np.hypot(np.trace(one @ SX), np.trace(one @ SZ))
    return energy, float(m)


class Energy:
    """E(A) per site, the CTMRG environment warm-started from the previous call."""

    def __init__(self, chi: int, tol: float = 1e-9):
        self.chi = chi
        self.tol = tol
        self.env = None
        self.iterations = 0
        self.magnetisation = float("nan")

    def __call__(self, a):
        sym = symmetrize(a)
        t = double_layer(sym)
        with yaad.no_grad():
            fixed = yaad.tensor(np.asarray(t.data))
            if self.env is None or self.env[1].shape[1] != fixed.shape[0]:
                self.env = initial_environment(fixed, self.chi)
            self.env, n = converge(self.env, fixed, self.chi, tol=self.tol * 0.1,
                                   maxiter=20000)
            self.iterations += n
        env = self.env
        if t.requires_grad:
            # Only the converged environment is differentiated: implicitly, at the fixed point.
            env = func.fixed_point(lambda x, t: ctm_step(x, t, self.chi),
                                   (env[0].data, env[1].data), t, tol=self.tol, maxiter=100)
        energy, self.magnetisation = observables(sym, *env)
        return energy


def start_tensor(D: int, seed: int, noise: float = 0.05, previous=None) -> np.ndarray:
    """The Neel state (all spins up in the rotated frame) or a smaller optimum, embedded in
    bond dimension D, plus noise."""
    rng = np.random.default_rng(seed)
    a = noise * rng.standard_normal((2, D, D, D, D))
    if previous is None:
        a[0, 0, 0, 0, 0] += 1.0
        return a
    d = previous.shape[1]
    a[:, :d, :d, :d, :d] += previous / np.max(np.abs(previous))
    return a


def optimize(D: int, chi: int, steps: int, seed: int = 1, previous=None, verbose: bool = True):
    """L-BFGS on the tensor A; returns the result and the energies per step."""
    energy = Energy(chi)
    history = []
    last = {}

    def fun(a):
        e = energy(a)
        last["e"], last["m"] = float(e.data), energy.magnetisation
        return e

    bar = None
    if verbose:
        try:
            from tqdm import tqdm
            bar = tqdm(total=steps, desc=f"D={D} chi={chi}", unit="step")
        except ImportError:
            pass

    def callback(x):
        history.append((last["e"], last["m"]))
        if bar is not None:
            bar.set_postfix_str(f"E={last['e']:.7f} m={last['m']:.4f}")
            bar.update()
        elif verbose:
            print(f"step {len(history):4d}  E = {last['e']:.8f}  m = {last['m']:.4f}", flush=True)

    start = time.perf_counter()
    res = yaad.optimize.minimize(fun, start_tensor(D, seed, previous=previous),
                                 method="L-BFGS-B", callback=callback,
                                 options={"maxiter": steps, "maxfun": 2 * steps, "ftol": 0.0,
                                          "gtol": 1e-10, "maxcor": 20})
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - start
    final = Energy(chi, tol=1e-11)
    with yaad.no_grad():
        e = float(final(yaad.tensor(res.x)).data)
    return {"D": D, "chi": chi, "energy": e, "magnetisation": final.magnetisation,
            "seconds": seconds, "history": history, "tensor": res.x,
            "evaluations": res.nfev, "ctm_iterations": energy.iterations,
            "message": str(res.message)}


def gradient_check(D: int, chi: int, seed: int = 1, h: float = 1e-3) -> float:
    """The directional derivative of the CTMRG energy at a random tensor, by yaad (through
    the fixed point) against 5-point central differences of the converged energy; returns
    the relative difference."""
    rng = np.random.default_rng(seed)
    a = start_tensor(D, seed, noise=0.5)
    direction = rng.standard_normal(a.shape)
    grad = func.grad(Energy(chi))(a)

    def energy(x):
        with yaad.no_grad():
            return float(Energy(chi, tol=1e-12)(yaad.tensor(x)).data)

    f = [energy(a + k * h * direction) for k in (-2, -1, 1, 2)]
    fd = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h)
    return abs(float(np.sum(grad * direction)) - fd) / abs(fd)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--D", type=int, nargs="+", default=[2, 3],
                        help="bond dimensions, each started from the previous optimum "
                             "(default: 2 3)")
    parser.add_argument("--chi", type=int, nargs="+", default=[16, 30],
                        help="environment dimension for each D (default: 16 30; a chi much "
                             "larger than needed keeps eigenvalues at rounding level, whose "
                             "vectors make CTMRG unstable)")
    parser.add_argument("--steps", type=int, default=300, help="L-BFGS steps at most")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-check", action="store_true",
                        help="skip the check of the gradient against finite differences")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if not args.no_check:
        print(f"gradient at a random tensor (D=2, chi=16), yaad through the fixed point against "
              f"finite differences of the converged energy: relative difference "
              f"{gradient_check(2, 16):.1e}")
    results, previous = [], None
    chis = args.chi + args.chi[-1:] * (len(args.D) - len(args.chi))
    for D, chi in sorted(zip(args.D, chis)):
        r = optimize(D, chi, args.steps, seed=args.seed, previous=previous,
                     verbose=not args.no_progress)
        previous = r["tensor"]
        results.append(r)
        print(f"D={D}, chi={chi}: E = {r['energy']:.6f}, m = {r['magnetisation']:.4f} after "
              f"{len(r['history'])} L-BFGS steps ({r['evaluations']} gradients, "
              f"{r['ctm_iterations']} CTMRG steps), {r['seconds']:.0f} s", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n{'D':>2} {'chi':>4} {'energy per site':>16} {'Liao et al. 2019':>17} {'QMC':>10} "
          f"{'above QMC':>10} {'magnetisation':>14} {'time':>7}")
    for r in results:
        published = PUBLISHED.get(r["D"], "-")
        print(f"{r['D']:>2} {r['chi']:>4} {r['energy']:16.6f} {published:>17} "
              f"{QMC_ENERGY:10.6f} {(r['energy'] - QMC_ENERGY) / abs(QMC_ENERGY):10.2%} "
              f"{r['magnetisation']:14.4f} {r['seconds']:6.0f}s")
    print(f"QMC staggered magnetisation: {QMC_MAGNETISATION}. Total "
          f"{time.perf_counter() - start:.0f} s, memory peak {peak:.0f} MB.")
    return results


if __name__ == "__main__":
    main()
