"""The seed workload: the gradient of tr(x1 @ x2) for two 30x30 float64 matrices.

The analytic answer is d/dx1 = x2.T and d/dx2 = x1.T. This script computes it with yaad
(eager, and compiled when ``yaad.compile`` exists), checks it, and prints the median time
per call next to hand-written NumPy and PyTorch (when installed), as ``make demo`` does.

Run: ``python examples/demo_seed.py --repeats 30``.
"""

from __future__ import annotations

import argparse

import numpy as np

import yaad
from yaad.demo import seed_timings


def gradients(x1: np.ndarray, x2: np.ndarray) -> tuple:
    """Loss and gradients with yaad's PyTorch-like interface."""
    t1 = yaad.tensor(x1, requires_grad=True)
    t2 = yaad.tensor(x2, requires_grad=True)
    loss = yaad.trace(t1 @ t2)
    loss.backward()
    return loss.item(), t1.grad, t2.grad


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=30, help="timing repeats")
    p.add_argument("--number", type=int, default=200, help="calls per repeat")
    args = p.parse_args(argv)

    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal((30, 30)), rng.standard_normal((30, 30))
    loss, g1, g2 = gradients(x1, x2)
    assert np.isclose(loss, np.trace(x1 @ x2))
    assert np.allclose(g1, x2.T) and np.allclose(g2, x1.T)
    print("yaad's gradients of tr(x1 @ x2) equal (x2.T, x1.T)")

    rows = seed_timings(args.repeats, args.number, progress=True)
    print(f"{'implementation':<28}{'median us/call':>16}{'vs NumPy':>10}")
    for name, us in rows:
        print(f"{name:<28}{us:>16.1f}{us / rows[0][1]:>9.1f}x")
    return rows


if __name__ == "__main__":
    main()
