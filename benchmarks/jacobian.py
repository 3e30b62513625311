"""Jacobians by vmap: ``yaad.func.jacrev`` against a loop of VJPs and the peers.

    python -m benchmarks.jacobian [--n 200] [--repeats 7]

For f from R^n to R^n (a few elementwise operations and a matrix product), this prints
the milliseconds per Jacobian (the best of the repeats, CPU time, one thread) of:
yaad's ``jacrev`` (all vector-Jacobian products at once, by vmap), a loop of n VJPs (how
``jacrev`` worked before vmap), ``torch.func.jacrev`` (vmap) and ``jax.jacrev`` (no jit);
and of ``jacfwd`` and ``hessian``, yaad's against torch.func's and JAX's. Every result is
checked against yaad's ``jacrev`` first. ``make bench`` runs it; docs/transforms.md
quotes its output.
"""

from __future__ import annotations

import argparse
import functools
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import yaad  # noqa: E402
from yaad import func  # noqa: E402


def problem(n: int) -> tuple:
    """``(W, b, x)`` of f(x) = tanh(W @ sin(x) + b) * x + exp(-x^2)."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n), rng.standard_normal(n)


def yaad_f(w, b):
    def f(x):
        return yaad.tanh(w @ yaad.sin(x) + b) * x + yaad.exp(-x * x)

    return f


def loop_jacrev(f, x):
    """The Jacobian from one VJP per output entry (yaad's jacrev before vmap)."""
    out, f_vjp = func.vjp(f, x)
    eye = np.eye(out.size)
    return np.stack([f_vjp(e)[0] for e in eye])


def peers(w, b) -> dict:
    """The peers' jacrev, jacfwd and hessian of the same f, on NumPy arrays in and out."""
    found = {}
    try:
        import torch

        torch.set_num_threads(1)
        tw, tb = torch.tensor(w), torch.tensor(b)

        def tf(x):
            return torch.tanh(tw @ torch.sin(x) + tb) * x + torch.exp(-x * x)

        def torch_fn(transform):
            return lambda x: transform(tf)(torch.as_tensor(x)).numpy()

        found["torch.func"] = {
            "jacrev": torch_fn(torch.func.jacrev), "jacfwd": torch_fn(torch.func.jacfwd),
            "hessian": lambda x: torch.func.hessian(lambda y: tf(y).sum())(
                torch.as_tensor(x)).numpy()}
    except ImportError:
        pass
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        jw, jb = jnp.asarray(w), jnp.asarray(b)

        def jf(x):
            return jnp.tanh(jw @ jnp.sin(x) + jb) * x + jnp.exp(-x * x)

        def jax_fn(transform):
            return lambda x: np.asarray(transform(jf)(jnp.asarray(x)))

        found["jax (no jit)"] = {
            "jacrev": jax_fn(jax.jacrev), "jacfwd": jax_fn(jax.jacfwd),
            "hessian": lambda x: np.asarray(jax.hessian(lambda y: jf(y).sum())(
                jnp.asarray(x)))}
    except ImportError:
        pass
    return found


def best_ms(fn, repeats: int) -> float:
    """The best CPU time of ``repeats`` runs of ``fn()``, in milliseconds (after a warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times) * 1e3


def rows(n: int, repeats: int) -> list[tuple[str, str, float]]:
    """``(transform, implementation, ms)`` for every implementation, after checking it."""
    w, b, x = problem(n)
    f = yaad_f(w, b)
    ours = {"jacrev": func.jacrev(f), "jacfwd": func.jacfwd(f),
            "hessian": func.hessian(lambda y: yaad.sum(f(y)))}
    reference = {name: t(x) for name, t in ours.items()}
    out = [("jacrev", "yaad (vmap)", best_ms(lambda: ours["jacrev"](x), repeats))]
    np.testing.assert_allclose(loop_jacrev(f, x), reference["jacrev"], rtol=1e-12, atol=1e-12)
    out.append(("jacrev", "yaad, loop of VJPs", best_ms(lambda: loop_jacrev(f, x), repeats)))
    np.testing.assert_allclose(reference["jacfwd"], reference["jacrev"], rtol=1e-12,
                               atol=1e-12)
    found = peers(w, b)
    for name in ("jacrev", "jacfwd", "hessian"):
        if name != "jacrev":
            out.append((name, "yaad (vmap)", best_ms(functools.partial(ours[name], x),
                                                     repeats)))
        for peer, fns in found.items():
            np.testing.assert_allclose(fns[name](x), reference[name], rtol=1e-9, atol=1e-9)
            out.append((name, peer, best_ms(functools.partial(fns[name], x), repeats)))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.jacobian", description=__doc__)
    p.add_argument("--n", type=int, default=200, help="the dimension (default 200)")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per implementation")
    args = p.parse_args(argv)
    results = rows(args.n, args.repeats)
    base = {t: ms for t, impl, ms in results if impl == "yaad (vmap)"}
    print(f"f: R^{args.n} -> R^{args.n}, tanh(W @ sin(x) + b) * x + exp(-x^2); ms per "
          f"call (best of {args.repeats}, CPU time, one thread); ratio: time / yaad's")
    for transform, impl, ms in results:
        print(f"  {transform:<8} {impl:<20} {ms:9.2f} ms   {ms / base[transform]:6.2f}x")


if __name__ == "__main__":
    main()
