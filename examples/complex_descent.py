"""Gradient descent in the complex plane: yaad's gradient descends, its conjugate does not.

The loss L(z) = |z^2 - 1|^2 is real and not holomorphic; its minima are z = 1 and z = -1.
Plain gradient descent, `z -= lr * z.grad`, follows yaad's gradient
`dL/dx + i dL/dy` (PyTorch's convention) straight into a minimum from every start. The
conjugate, `dL/dx - i dL/dy` (what `jax.grad` and HIPS autograd return), has the wrong
sign in the imaginary direction: the same step climbs in y and runs away. The figure
draws both paths over the contours of L, and L along them.

    python examples/complex_descent.py [--steps 40] [--lr 0.05] [--figure PATH]
"""

from __future__ import annotations

import argparse

import numpy as np

import yaad

STARTS = (0.3 + 1.1j, -1.4 + 0.6j, 0.9 - 0.8j)


def loss(z):
    """|z^2 - 1|^2, a real loss of a complex tensor (or number)."""
    w = z * z - 1
    return w.real ** 2 + w.imag ** 2


def descend(z0: complex, steps: int, lr: float, conjugate: bool = False) -> np.ndarray:
    """The points of `steps` gradient-descent steps from z0, with yaad's gradient or its
    conjugate; stops early once |z| > 10 (it diverged)."""
    z = yaad.tensor(complex(z0), requires_grad=True)
    path = [z.item()]
    for _ in range(steps):
        z.grad = None
        loss(z).backward()
        step = np.conj(z.grad) if conjugate else z.grad
        with yaad.no_grad():
            z -= lr * step
        path.append(z.item())
        if abs(path[-1]) > 10:
            break
    return np.array(path)


def draw(paths: dict, lr: float, filename: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (plane, curve) = plt.subplots(1, 2, figsize=(11, 4.6))
    x, y = np.meshgrid(np.linspace(-2, 2, 301), np.linspace(-1.6, 1.6, 241))
    plane.contour(x, y, np.log10(loss(x + 1j * y) + 1e-3), levels=18, cmap="Greys",
                  linewidths=0.7)
    styles = {"yaad": dict(color="tab:blue", label="z -= lr * z.grad (yaad)"),
              "conjugate": dict(color="tab:red", ls="--",
                                label="z -= lr * conj(z.grad) (JAX, HIPS autograd)")}
    for (kind, z0), path in paths.items():
        style = dict(styles[kind]) if z0 == STARTS[0] else {
            k: v for k, v in styles[kind].items() if k != "label"}  # one legend entry each
        shown = path[np.abs(path) < 3]
        plane.plot(shown.real, shown.imag, marker=".", ms=4, lw=1.2, **style)
        curve.semilogy(loss(path), **style)
    plane.plot([z.real for z in STARTS], [z.imag for z in STARTS], "ko", ms=5)
    plane.plot([-1, 1], [0, 0], "k*", ms=12)
    plane.set(xlim=(-2, 2), ylim=(-1.6, 1.6), aspect="equal", xlabel="Re z", ylabel="Im z",
              title="L(z) = |z² − 1|²: paths from three starts (●) to the minima (★)")
    plane.legend(loc="lower left", fontsize=8)
    curve.set(xlabel="step", ylabel="L(z)", title=f"L along the paths (lr = {lr})",
              ylim=(1e-16, 1e4))
    curve.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(filename, dpi=100)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--figure", default=None, help="save the figure to this PNG file")
    args = p.parse_args(argv)

    paths = {}
    for z0 in STARTS:
        for kind in ("yaad", "conjugate"):
            path = descend(z0, args.steps, args.lr, conjugate=kind == "conjugate")
            paths[kind, z0] = path
            end = path[-1]
            what = (f"diverged: |z| = {abs(end):.3g} after {len(path) - 1} steps"
                    if abs(end) > 10 else f"z = {end.real:+.6f}{end.imag:+.6f}j, "
                    f"L = {loss(end):.2e}")
            print(f"from {z0:<10} {kind:>9}: {what}")
    if args.figure:
        draw(paths, args.lr, args.figure)
        print(f"figure saved to {args.figure}")
    return paths


if __name__ == "__main__":
    main()
