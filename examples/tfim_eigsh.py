"""Ground-state energy of the transverse-field Ising chain and its derivative, by Lanczos.

H(h) = -J sum_i Z_i Z_{i+1} - h sum_i X_i on an open chain of L spins (2^L states) is
built from two fixed sparse matrices, H = -J * Hzz - h * Hx with h a tensor: a
``yaad.sparse.SparseTensor`` that keeps the two terms apart (no combined or dense matrix).
``yaad.sparse.linalg.eigsh`` (ARPACK) gives the ground-state energy E0, and
``E0.backward()`` gives dE0/dh by the adjoint method (here Hellmann-Feynman,
<psi|dH/dh|psi>). Both are compared with the exact free-fermion solution: E0 = -sum_k s_k,
with s_k the singular values of the L x L bidiagonal matrix with h on the diagonal and J
above it. The run is timed and its peak memory (tracemalloc) compared with SciPy's eigsh
alone on the same Hamiltonian summed into one sparse matrix.

    python examples/tfim_eigsh.py [--L 20] [--h 1.0] [--J 1.0]
"""

from __future__ import annotations

import os

# ARPACK makes many small BLAS calls: threads cost more than they bring there (and
# oversubscribe a busy machine). Set before NumPy loads; no effect when imported later.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sps  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402

import yaad  # noqa: E402


def tfim_terms(L: int) -> tuple:
    """The diagonal sum_i Z_i Z_{i+1} (open chain) and sum_i X_i, as SciPy sparse arrays."""
    n = 2 ** L
    states = np.arange(n, dtype=np.int32)
    spins = 1 - 2 * ((states[:, None] >> np.arange(L)) & 1).astype(np.int8)  # (n, L): +-1
    zz = np.sum(spins[:, :-1] * spins[:, 1:], axis=1, dtype=np.float64)
    del spins
    hzz = sps.dia_array((zz[None, :], [0]), shape=(n, n))
    # X_i flips bit i: row r has ones at the columns r ^ (1 << i), i = 0..L-1
    cols = (states[:, None] ^ (1 << np.arange(L, dtype=np.int32))).ravel()
    indptr = np.arange(0, n * L + 1, L, dtype=np.int32)
    hx = sps.csr_array((np.ones(n * L), cols, indptr), shape=(n, n))
    return hzz, hx


def exact(L: int, h: float, J: float) -> tuple:
    """Free-fermion ground-state energy of the open chain and its derivative in h."""
    b = np.diag(np.full(L, h)) + np.diag(np.full(L - 1, J), 1)
    u, s, vt = np.linalg.svd(b)
    # ds_k/dh = u_k^T (dB/dh) v_k, dB/dh = identity
    return -np.sum(s), -np.sum(u * vt.T)


def run_yaad(L: int, h: float, J: float, tol: float) -> tuple:
    hzz, hx = tfim_terms(L)
    field = yaad.tensor(h, requires_grad=True)
    H = -J * yaad.sparse.asarray(hzz) - field * yaad.sparse.asarray(hx)
    w, _ = yaad.sparse.linalg.eigsh(H, k=1, which="SA", tol=tol)
    w[0].backward()
    return float(w[0]), float(field.grad)


def run_scipy(L: int, h: float, J: float, tol: float) -> float:
    hzz, hx = tfim_terms(L)
    H = (-J * hzz - h * hx).tocsr()
    del hzz, hx
    w = spla.eigsh(H, k=1, which="SA", tol=tol, return_eigenvectors=False)
    return float(w[0])


def measured(fn, *args):
    """fn(*args), its time in seconds and peak traced memory in bytes."""
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn(*args)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, seconds, peak


def main(argv=None):
    """Run the comparison; returns the energies, derivatives, errors, times and memory."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--L", type=int, default=20)
    p.add_argument("--h", type=float, default=1.0)
    p.add_argument("--J", type=float, default=1.0)
    p.add_argument("--tol", type=float, default=1e-12, help="ARPACK's tolerance")
    p.add_argument("--no-scipy", action="store_true", help="skip SciPy's run")
    args = p.parse_args(argv)
    e_exact, de_exact = exact(args.L, args.h, args.J)
    (e0, de0), t_yaad, mem_yaad = measured(run_yaad, args.L, args.h, args.J, args.tol)
    err_e = abs(e0 - e_exact) / abs(e_exact)
    err_de = abs(de0 - de_exact) / abs(de_exact)
    print(f"transverse-field Ising chain, L = {args.L} ({2 ** args.L} states), h = {args.h}, "
          f"J = {args.J}")
    print(f"  E0      = {e0:.12f}  (exact {e_exact:.12f}, relative error {err_e:.1e})")
    print(f"  dE0/dh  = {de0:.12f}  (exact {de_exact:.12f}, relative error {err_de:.1e})")
    print(f"  yaad eigsh + gradient: {t_yaad:.1f} s, peak memory {mem_yaad / 2**20:.0f} MB")
    result = {"E0": e0, "dE0_dh": de0, "exact": (e_exact, de_exact),
              "relative_error": (err_e, err_de), "time": t_yaad, "memory": mem_yaad}
    if not args.no_scipy:
        e_sp, t_sp, mem_sp = measured(run_scipy, args.L, args.h, args.J, args.tol)
        print(f"  SciPy eigsh alone:     {t_sp:.1f} s, peak memory {mem_sp / 2**20:.0f} MB "
              f"(E0 = {e_sp:.12f}); memory ratio yaad / SciPy = {mem_yaad / mem_sp:.2f}")
        result.update(scipy_time=t_sp, scipy_memory=mem_sp, scipy_E0=e_sp)
    return result


if __name__ == "__main__":
    main()
