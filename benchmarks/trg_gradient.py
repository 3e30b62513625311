"""W12: the gradient of ln Z through a TRG, yaad against PyTorch eager, side by side.

    python -m benchmarks.trg_gradient [--chi 16] [--steps 20] [--repeats 3]

The Levin-Nave TRG of the 2D Ising model of ``examples/trg_specific_heat.py`` (the site
tensor, two truncated SVDs per step split as ``(U sqrt(S), sqrt(S) Vh)``, the four
triangles contracted by einsum), and the same written line by line with PyTorch, and the
derivative of ln Z per site with respect to beta (the internal energy) by each library's
reverse mode, at beta = 0.6 (ordered phase: equal singular values) and 0.3. It prints the
seconds per gradient (the best of the repeats, CPU time, one thread) and each library's
value against a finite difference of ln Z. The hand-written floor of the other workloads
does not exist here (the backward of a truncated SVD by hand is the point of the
exercise), so this workload runs as its own script. docs/tensor-networks.md quotes its
output.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import yaad  # noqa: E402


def _example():
    """examples/trg_specific_heat.py: the TRG with yaad, which this script times."""
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), os.pardir, "examples",
                        "trg_specific_heat.py")
    spec = importlib.util.spec_from_file_location("trg_specific_heat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


trg_yaad = _example().trg_lnz


def trg_torch(beta, chi: int, steps: int):
    """The TRG of examples/trg_specific_heat.py (``trg_lnz``), line by line with PyTorch."""
    import torch

    c, s = torch.sqrt(torch.cosh(beta)), torch.sqrt(torch.sinh(beta))
    w = torch.stack([torch.stack([c, s]), torch.stack([c, -s])])
    t = torch.einsum("su,sl,sd,sr->uldr", w, w, w, w)
    lnz = 0.0
    for n in range(steps):
        norm = t.abs().max()
        t = t / norm
        lnz = lnz + torch.log(norm) / 2 ** n
        d = t.shape[0]
        halves = []
        for perm in ((2, 1, 0, 3), (3, 2, 1, 0)):
            u, sv, vh = torch.linalg.svd(t.permute(perm).reshape(d * d, d * d),
                                         full_matrices=False)
            s_ = sv.detach().numpy()
            k = int(min(chi, np.sum(s_ > 1e-14 * s_[0])))
            r = torch.sqrt(sv[:k])
            halves.append(((u[:, :k] * r).reshape(d, d, k), (vh[:k].T * r).reshape(d, d, k)))
        (s1, s3), (s2, s4) = halves
        t = torch.einsum("war,abu,bgl,gwd->uldr", s1, s2, s3, s4)
    return lnz + torch.log(torch.einsum("ijij->", t)) / 2 ** steps


def gradient_yaad(beta: float, chi: int, steps: int) -> float:
    return float(yaad.func.grad(lambda b: trg_yaad(b, chi, steps))(beta))


def gradient_torch(beta: float, chi: int, steps: int) -> float:
    import torch

    b = torch.tensor(beta, dtype=torch.float64, requires_grad=True)
    trg_torch(b, chi, steps).backward()
    return float(b.grad)


def finite_difference(beta: float, chi: int, steps: int, h: float = 1e-4) -> float:
    f = [float(trg_yaad(beta + k * h, chi, steps)) for k in (-2, -1, 1, 2)]
    return (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h)


def best_seconds(call, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chi", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rows = []
    print(f"d lnZ / d beta through a TRG, chi = {args.chi}, {2 ** args.steps} sites (seconds "
          f"per gradient, best of {args.repeats}, CPU time, one thread)")
    print(f"{'beta':>5} {'yaad s':>8} {'torch s':>8} {'torch/yaad':>10}   {'yaad value':>14} "
          f"{'torch value':>14} {'finite diff.':>14}")
    for beta in (0.6, 0.3):
        fd = finite_difference(beta, args.chi, args.steps)
        y = gradient_yaad(beta, args.chi, args.steps)
        t = gradient_torch(beta, args.chi, args.steps)
        ty = best_seconds(lambda b=beta: gradient_yaad(b, args.chi, args.steps), args.repeats)
        tt = best_seconds(lambda b=beta: gradient_torch(b, args.chi, args.steps), args.repeats)
        rows.append({"beta": beta, "yaad": ty, "torch": tt, "yaad_value": y,
                     "torch_value": t, "fd": fd})
        print(f"{beta:5.2f} {ty:8.3f} {tt:8.3f} {tt / ty:10.2f}   {y:14.9f} {t:14.9f} "
              f"{fd:14.9f}")
    return rows


if __name__ == "__main__":
    main()
