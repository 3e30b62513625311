"""The cost of forward mode: ``yaad.func.jvp`` against the double-VJP construction.

    python -m benchmarks.jvp_cost [--repeats 5]

A Jacobian-vector product ``J t`` can be had from forward mode (``jvp``: one pass with
tangents) or from reverse mode alone: record the VJP ``u -> J^H u`` with
``create_graph=True`` and differentiate it with respect to ``u``. For four functions this
prints the microseconds per call of the forward pass, forward + backward, ``jvp`` and the
double VJP (the best of the repeats, CPU time, one thread), after checking that both
give the same ``J t``. docs/transforms.md quotes its output.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import yaad  # noqa: E402
from yaad import func  # noqa: E402


def chain(x):
    """Ten elementwise operations."""
    for _ in range(5):
        x = yaad.sin(x) * 1.01
    return x


def cases() -> list[tuple[str, callable, np.ndarray, np.ndarray]]:
    """(name, f, x, t): f maps the array x to an array; t is the tangent of x."""
    rng = np.random.default_rng(0)
    x_mlp, w2 = rng.standard_normal((64, 32)), rng.standard_normal((64, 10)) / 8
    a0, b0 = rng.standard_normal(4), rng.standard_normal(4)

    def mlp(w1):
        return yaad.tanh(x_mlp @ w1) @ w2

    def w3(a):
        y = a0
        for _ in range(200):
            y = yaad.sin(y) * a + yaad.cos(y) * b0
        return y

    small, large = rng.standard_normal(4), rng.standard_normal(100_000)
    w1 = rng.standard_normal((32, 64)) / 6
    return [("10 elementwise ops on (4,)", chain, small, np.ones(4)),
            ("10 elementwise ops on (100000,)", chain, large, np.ones(100_000)),
            ("MLP (64x32 @ 32x64, tanh, @ 64x10), tangent in W1", mlp, w1, np.ones_like(w1)),
            ("W3: 200 steps of sin(y)a + cos(y)b, tangent in a", w3, a0, np.ones(4))]


def double_vjp(f, x, t):
    """J t by differentiating the VJP u -> J^H u with respect to u."""
    xt = yaad.tensor(x, requires_grad=True)
    out = f(xt)
    u = yaad.tensor(np.zeros(out.shape), requires_grad=True)
    (g,) = yaad.autograd.grad(out, xt, grad_outputs=u, create_graph=True)
    (jt,) = yaad.autograd.grad(g, u, grad_outputs=t)
    return jt


def forward_backward(f, x):
    xt = yaad.tensor(x, requires_grad=True)
    yaad.sum(f(xt)).backward()
    return xt.grad


def best_us(call, repeats: int) -> float:
    """The best of `repeats` timings of many calls (about 0.2 s each), in microseconds."""
    number = 1
    while True:
        start = time.process_time()
        for _ in range(number):
            call()
        spent = time.process_time() - start
        if spent > 0.2 or number > 100_000:
            break
        number *= 2
    best = spent / number
    for _ in range(repeats - 1):
        start = time.process_time()
        for _ in range(number):
            call()
        best = min(best, (time.process_time() - start) / number)
    return best * 1e6


def measure(f, x, t, repeats: int) -> dict:
    """Microseconds per call of the four ways, after checking that both give J t."""
    _, jt = func.jvp(f, (x,), (t,))
    np.testing.assert_allclose(double_vjp(f, x, t), jt, rtol=1e-10, atol=1e-10)
    with yaad.no_grad():
        forward = best_us(lambda: f(yaad.tensor(x)), repeats)
    return {"forward": forward,
            "forward + backward": best_us(lambda: forward_backward(f, x), repeats),
            "jvp": best_us(lambda: func.jvp(f, (x,), (t,)), repeats),
            "double VJP": best_us(lambda: double_vjp(f, x, t), repeats)}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    rows = []
    print("| function | forward | forward + backward | `jvp` | double VJP | "
          "double VJP / `jvp` |\n|---|---|---|---|---|---|")
    for name, f, x, t in cases():
        row = measure(f, x, t, args.repeats)
        rows.append(row)
        print(f"| {name} | {row['forward']:,.0f} | {row['forward + backward']:,.0f} | "
              f"{row['jvp']:,.0f} | {row['double VJP']:,.0f} | "
              f"{row['double VJP'] / row['jvp']:.1f} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
