"""The specific heat of the 2D Ising model as a second derivative through a TRG.

The landmark computation of Liao, Liu, Wang and Xiang, "Differentiable Programming Tensor
Networks", Phys. Rev. X 9, 031041 (2019): the partition function of the square-lattice
Ising model (J = k_B = 1) on a torus of 2^steps sites is contracted by Levin and Nave's
tensor renormalization group (TRG) with bond dimension chi, and the internal energy and
the specific heat per site,

    u = -d lnZ / d beta,        c = beta^2 d^2 lnZ / d beta^2,

are its first and second derivatives by automatic differentiation through every
truncated SVD of the coarse-graining. They are compared with Onsager's exact solution
and, for the same TRG, with a finite difference of ln Z.

Each TRG step splits the tensor twice by an SVD truncated to the chi largest singular
values, as (U sqrt(S), sqrt(S) Vh). The spectra are degenerate: the Z2 symmetry of the
model makes pairs of equal singular values in the ordered phase, and most of the
discarded ones are equal to zero. No Lorentzian broadening is used (the paper needed it:
its SVD rule divided by every gap). yaad's rule treats the discarded values as one block,
and the equal kept ones belong to different symmetry sectors, which ln Z does not couple:
the second derivative is exact: it agrees with finite differences of the same TRG to the
precision those reach, 1e-6 or better (docs/tensor-networks.md explains why).

Run: ``python examples/trg_specific_heat.py`` (chi = 24, 2^20 sites, 12 temperatures and
the finite-difference check at 4 of them: about 15 minutes on one core). ``--chi 32`` is
closer to Onsager near T_c and about 4 times slower. The figure goes to
``out/trg_specific_heat.png`` (``--figure``).
"""

from __future__ import annotations

import argparse
import os
import time

if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from scipy import integrate, special

import yaad
from yaad import func

T_CRITICAL = 2 / np.log(1 + np.sqrt(2))


def ising_tensor(beta):
    """The site tensor ``T[u, l, d, r] = sum_s W[s, u] W[s, l] W[s, d] W[s, r]`` of the
    Ising model, from ``exp(beta s s') = sum_k W[s, k] W[s', k]``."""
    c, s = yaad.sqrt(yaad.cosh(beta)), yaad.sqrt(yaad.sinh(beta))
    w = yaad.stack([yaad.stack([c, s]), yaad.stack([c, -s])])
    return yaad.einsum("su,sl,sd,sr->uldr", w, w, w, w)


def _split(m, chi):
    """The two factors ``(U sqrt(S), sqrt(S) Vh)`` of ``m``, truncated to the chi largest
    singular values and to those above rounding (a zero has no square-root derivative)."""
    u, s, vh = yaad.linalg.svd(m, full_matrices=False)
    sd = np.asarray(getattr(s, "data", s))
    k = int(min(chi, np.sum(sd > 1e-14 * sd[0])))
    r = yaad.sqrt(s[:k])
    return u[:, :k] * r, yaad.transpose(vh[:k]) * r


def trg_lnz(beta, chi: int, steps: int):
    """ln Z per site of the Ising model on a torus of ``2**steps`` sites, by Levin-Nave TRG
    with bond dimension ``chi``; differentiable in ``beta``."""
    t = ising_tensor(beta)
    lnz = 0.0
    for n in range(steps):
        norm = yaad.max(abs(t))
        t = t / norm
        lnz = lnz + yaad.log(norm) / 2 ** n
        d = t.shape[0]
        # Two ways to cut the square T[u, l, d, r] along a diagonal: (d l | u r) and (r d | l u).
        s1, s3 = _split(yaad.reshape(yaad.transpose(t, (2, 1, 0, 3)), (d * d, d * d)), chi)
        s2, s4 = _split(yaad.reshape(yaad.transpose(t, (3, 2, 1, 0)), (d * d, d * d)), chi)
        k1, k2 = s1.shape[-1], s2.shape[-1]
        s1, s3 = yaad.reshape(s1, (d, d, k1)), yaad.reshape(s3, (d, d, k1))
        s2, s4 = yaad.reshape(s2, (d, d, k2)), yaad.reshape(s4, (d, d, k2))
        # The four triangles around a plaquette make the tensor of the rotated lattice.
        t = yaad.einsum("war,abu,bgl,gwd->uldr", s1, s2, s3, s4)
    return lnz + yaad.log(yaad.einsum("ijij->", t)) / 2 ** steps


def derivatives(beta: float, chi: int, steps: int) -> tuple[float, float, float]:
    """``(ln Z, d lnZ/d beta, d^2 lnZ/d beta^2)`` per site, in one pass (forward over
    reverse: the tangent of ``(ln Z, its gradient)``)."""
    (value, grad), (_, second) = func.jvp(
        func.value_and_grad(lambda b: trg_lnz(b, chi, steps)), (beta,), (1.0,))
    return float(value), float(grad), float(second)


def finite_differences(beta: float, chi: int, steps: int, h: float | None = None):
    """``(d lnZ/d beta, d^2 lnZ/d beta^2)`` of the same TRG by 7-point central differences.

    With a step ``h``, at that step. Without, the step is chosen: the stencil's error
    (``h^6`` times a high derivative, large where kept singular values nearly cross the
    cut) falls with ``h`` and the rounding noise of ln Z (about 1e-12, from the smallest
    kept singular values, divided by ``h^2``) grows; of the steps 4e-3, 2e-3, 1e-3 and
    5e-4, the finer of the two neighbours that agree best is used."""
    if h is not None:
        f = [float(trg_lnz(beta + k * h, chi, steps)) for k in range(-3, 4)]
        first = (-f[0] + 9 * f[1] - 45 * f[2] + 45 * f[4] - 9 * f[5] + f[6]) / (60 * h)
        second = (2 * f[0] - 27 * f[1] + 270 * f[2] - 490 * f[3] + 270 * f[4] - 27 * f[5]
                  + 2 * f[6]) / (180 * h * h)
        return first, second
    estimates = [finite_differences(beta, chi, steps, h) for h in (4e-3, 2e-3, 1e-3, 5e-4)]
    spread = [abs(b[1] - a[1]) for a, b in zip(estimates, estimates[1:])]
    return estimates[1 + int(np.argmin(spread))]


def onsager(beta: float) -> tuple[float, float, float]:
    """Onsager's exact ``(ln Z per site, u, c)`` of the infinite square lattice."""
    k = 2 * np.sinh(2 * beta) / np.cosh(2 * beta) ** 2
    integrand = lambda t: np.log((1 + np.sqrt(max(1 - (k * np.sin(t)) ** 2, 0.0))) / 2)  # noqa: E731
    lnz = np.log(2 * np.cosh(2 * beta)) + integrate.quad(
        integrand, 0, np.pi, epsabs=1e-14, epsrel=1e-14, limit=400)[0] / (2 * np.pi)
    t2 = np.tanh(2 * beta) ** 2
    big_k, big_e = special.ellipk(k * k), special.ellipe(k * k)
    u = -(1 + 2 / np.pi * (2 * t2 - 1) * big_k) / np.tanh(2 * beta)
    c = 4 / np.pi * (beta / np.tanh(2 * beta)) ** 2 * (
        big_k - big_e - (1 - t2) * (np.pi / 2 + (2 * t2 - 1) * big_k))
    return float(lnz), float(u), float(c)


def scan(temperatures, chi: int, steps: int, check=(), verbose: bool = True) -> list[dict]:
    """ln Z, u and c by yaad at each temperature, with Onsager's values, and a finite
    difference of the same TRG at the temperatures in ``check``."""
    rows = []
    if verbose:
        print(f"TRG, chi = {chi}, {2 ** steps} sites; u and c by yaad (forward over reverse)")
        print(f"{'T':>6} {'u (yaad)':>13} {'u exact':>13} {'c (yaad)':>13} {'c exact':>13} "
              f"{'rel. err c':>10} {'c (fin.diff.)':>14} {'AD vs FD':>9} {'s':>6}")
    for temp in temperatures:
        beta = 1.0 / temp
        start = time.perf_counter()
        lnz, d1, d2 = derivatives(beta, chi, steps)
        seconds = time.perf_counter() - start
        exact = onsager(beta)
        row = {"T": temp, "lnZ": lnz, "u": -d1, "c": beta * beta * d2, "seconds": seconds,
               "lnZ_exact": exact[0], "u_exact": exact[1], "c_exact": exact[2]}
        row["c_error"] = abs(row["c"] - row["c_exact"]) / row["c_exact"]
        fd_text = ""
        if any(abs(temp - t) < 1e-9 for t in check):
            _, fd2 = finite_differences(beta, chi, steps)
            row["c_fd"] = beta * beta * fd2
            row["ad_vs_fd"] = abs(row["c"] - row["c_fd"]) / abs(row["c_fd"])
            fd_text = f"{row['c_fd']:14.9f} {row['ad_vs_fd']:9.1e}"
        else:
            fd_text = f"{'':14} {'':9}"
        rows.append(row)
        if verbose:
            print(f"{temp:6.3f} {row['u']:13.9f} {row['u_exact']:13.9f} {row['c']:13.9f} "
                  f"{row['c_exact']:13.9f} {row['c_error']:10.1e} {fd_text} {seconds:6.1f}",
                  flush=True)
    return rows


def plot(rows: list[dict], chi: int, path: str) -> None:
    """u and c against T, with Onsager's curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    temps = np.array([r["T"] for r in rows])
    fine = np.linspace(temps.min(), temps.max(), 400)
    exact = np.array([onsager(1 / t) for t in fine])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, col, label in ((axes[0], "u", 1, "internal energy u"),
                                (axes[1], "c", 2, "specific heat c")):
        ax.plot(fine, exact[:, col], "k-", lw=1, label="Onsager (exact)")
        ax.plot(temps, [r[key] for r in rows], "o", ms=5,
                label=f"TRG chi={chi}, derivatives by yaad")
        ax.axvline(T_CRITICAL, color="grey", ls=":", lw=1)
        ax.set_xlabel("temperature T")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    fig.suptitle("2D Ising model: derivatives of ln Z through the truncated SVDs of a TRG")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chi", type=int, default=24, help="bond dimension (default 24)")
    parser.add_argument("--steps", type=int, default=20,
                        help="TRG steps: 2**steps sites (default 20)")
    parser.add_argument("--temps", type=float, nargs="*",
                        default=[1.0, 1.5, 1.8, 2.0, 2.1, 2.2, 2.25, 2.3, 2.4, 2.6, 3.0, 3.5],
                        help="temperatures of the scan")
    parser.add_argument("--check", type=float, nargs="*", default=[1.5, 2.0, 2.6, 3.0],
                        help="temperatures where a finite difference checks the derivative")
    parser.add_argument("--figure", default="out/trg_specific_heat.png",
                        help="where to save the figure ('' for none)")
    args = parser.parse_args(argv)
    temps = sorted(set(args.temps) | set(args.check))
    rows = scan(temps, args.chi, args.steps, check=args.check)
    checked = [r for r in rows if "ad_vs_fd" in r]
    if checked:
        print(f"largest |c(yaad) - c(finite difference)| / c: "
              f"{max(r['ad_vs_fd'] for r in checked):.1e} (the same TRG)")
    print(f"mean time per temperature: {np.mean([r['seconds'] for r in rows]):.1f} s")
    if args.figure:
        plot(rows, args.chi, args.figure)
        print(f"figure saved to {args.figure}")
    return rows


if __name__ == "__main__":
    main()
