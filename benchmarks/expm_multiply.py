"""``yaad.sparse.linalg.expm_multiply`` beside ``scipy.sparse.linalg.expm_multiply``.

    python -m benchmarks.expm_multiply [--repeats 7]

For sparse and dense, real and complex operators of several sizes and norms (a small norm:
the degree and steps from |A|_1; a large one: from estimates of |A^p|_1^(1/p)), prints the
milliseconds of SciPy's forward pass and yaad's, and of yaad's backward pass for the
gradient of ``sum |exp(theta A) b|^2`` with respect to ``theta`` and ``b`` beside the forward
pass that recorded it (best of the repeats, wall time, one BLAS thread), after checking
yaad's value against SciPy's. docs/sparse.md quotes its output.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sps  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402

import yaad  # noqa: E402
from yaad.sparse import linalg as sl  # noqa: E402

CASES = [  # (n, kind, complex, scale)
    (200, "sparse", False, 1), (200, "sparse", True, 10), (2000, "sparse", True, 1),
    (2000, "sparse", False, 10), (20000, "sparse", False, 1), (20000, "sparse", True, 1),
    (200, "dense", True, 1), (1000, "dense", False, 1), (1000, "dense", True, 10)]


def operator(n: int, kind: str, complex_: bool, rng: np.random.Generator) -> object:
    """An antisymmetric (real) or anti-Hermitian (complex: -i H) operator, so that the
    norm of exp(A) b stays that of b."""
    if kind == "sparse":
        a = sps.random(n, n, density=min(1.0, 5 / n), random_state=1, format="csr")
    else:
        a = rng.standard_normal((n, n)) / np.sqrt(n)
    a = 3 * (a - a.T) if not complex_ else -3j * (a + a.T)
    return sps.csr_array(a) if kind == "sparse" else a


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    rng = np.random.default_rng(0)
    print("| operator | n | SciPy forward | yaad forward | ratio | yaad backward "
          "| backward / forward |")
    print("|---|---|---|---|---|---|---|")
    for n, kind, complex_, scale in CASES:
        a = scale * operator(n, kind, complex_, rng)
        b = rng.standard_normal(n)
        op = yaad.sparse.asarray(a)
        theta = yaad.tensor(1.0, requires_grad=True)
        bt = yaad.tensor(b, requires_grad=True)
        times: dict[str, list[float]] = {"scipy": [], "yaad": [], "recorded": [], "back": []}
        for _ in range(repeats):
            t = time.process_time()
            want = spla.expm_multiply(a, b)
            times["scipy"].append(time.process_time() - t)
            t = time.process_time()
            got = sl.expm_multiply(op, b)
            times["yaad"].append(time.process_time() - t)
            t = time.process_time()
            y = sl.expm_multiply(theta * op, bt)
            times["recorded"].append(time.process_time() - t)
            loss = yaad.sum(abs(y) ** 2)
            t = time.process_time()
            loss.backward()
            times["back"].append(time.process_time() - t)
        error = np.abs(got.data - want).max() / np.abs(want).max()
        assert error < 1e-12, error
        best = {k: min(v) * 1e3 for k, v in times.items()}
        norm = np.abs(a).sum(axis=0).max()
        print(f"| {kind} {'complex' if complex_ else 'real'}, |A|_1 = {norm:.0f} | {n} "
              f"| {best['scipy']:.2f} ms | {best['yaad']:.2f} ms "
              f"| {best['yaad'] / best['scipy']:.2f} | {best['back']:.2f} ms "
              f"| {best['back'] / best['recorded']:.2f} |")


if __name__ == "__main__":
    main()
