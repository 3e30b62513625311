"""A gradient larger than a worker's memory, on a Dask cluster: the same yaad code, lazily.

Two computations run on a ``dask.distributed`` cluster of worker processes (a
``LocalCluster`` on this machine's loopback, each worker with a memory limit):

1. The W4 loss of ``benchmarks/workloads.py``, ``sum(exp(sin(x)) * x**2 / (1 + x**2))``,
   and its gradient, on ``x`` of 2e8 float64 numbers (1.6 GB: more than the 400 MB of
   one worker, and of both together). ``x`` is drawn on the workers, chunk by chunk;
   yaad records the loss on the Dask array and ``backward()`` builds the gradient as a
   Dask graph; nothing is computed until the loss and the gradient are asked for, in one
   pass that shares the forward (with Dask's progress bar). The check: the gradient's
   first 1e6 entries equal NumPy's hand-written gradient (the W4 floor) on that slice,
   the loss of that slice equals NumPy's, and the whole loss equals Dask's own sum of the
   same expression.
2. A chunked tensor contraction and its gradient: the norm <psi|psi> of a complex matrix
   product state (MPS, L sites of shape (D, 2, D)) with every bond split in chunks,
   contracted by ``yaad.einsum``; ``yaad.compute`` gives the norm and the gradients of
   all sites at once. The check: the same program on NumPy arrays.

Run: ``python examples/dask_big_gradient.py`` (the full size: minutes on 2 cores);
``--n 2e6 --bond 16`` for a quick run. Needs ``pip install "dask[array]" distributed``.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import sys
import time
from typing import Any

import numpy as np

import yaad


def w4_loss(x: Any) -> Any:
    """The W4 loss of benchmarks/workloads.py (an elementwise chain, then a sum)."""
    return yaad.sum(yaad.exp(yaad.sin(x)) * x**2 / (1 + x**2))


def w4_by_hand(x: np.ndarray) -> tuple[float, np.ndarray]:
    """The W4 loss and its gradient written out in NumPy (the benchmarks' floor)."""
    e = np.exp(np.sin(x))
    d = 1 + x * x
    r = x * x / d
    return float(np.sum(e * r)), e * (np.cos(x) * r + 2 * x / (d * d))


def mps_norm(sites: list) -> Any:
    """<psi|psi> of an open-boundary MPS (sites of shape (left, physical, right))."""
    env = yaad.einsum("apb,apc->bc", sites[0], yaad.conj(sites[0]))
    for a in sites[1:]:
        env = yaad.einsum("bc,bpd,cpe->de", env, a, yaad.conj(a))
    return yaad.real(yaad.einsum("dd->", env))


def peak_memory() -> int:
    """The peak resident memory of the calling process in bytes (run on each worker):
    Linux's VmHWM, the process's own since it started (``ru_maxrss`` would count the
    memory of the process that started it, which it keeps across ``exec``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # (not Linux)


def relative(a: Any, b: Any) -> float:
    """The largest difference between ``a`` and ``b``, relative to the largest of ``b``."""
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


def big_w4(client: Any, n: int, chunk: int, check: int, progress: bool) -> dict:
    """The W4 loss and gradient on ``n`` numbers in chunks of ``chunk``, checked against
    NumPy on the first ``check`` of them."""
    import dask.array as da
    from distributed import progress as progress_bar

    x = da.random.default_rng(0).standard_normal(n, chunks=chunk)
    t = yaad.tensor(x, requires_grad=True)
    loss = w4_loss(t)
    loss.backward()  # builds the graph of the gradient: nothing is computed yet
    assert isinstance(t.grad, da.Array)
    head = yaad.tensor(x[:check], requires_grad=True)  # the slice on its own
    head_loss = w4_loss(head)
    head_loss.backward()
    plain = da.sum(da.exp(da.sin(x)) * x**2 / (1 + x**2))  # Dask alone, without yaad
    # One submission: the forward pass that the loss and the gradient share runs once.
    # (yaad.compute(loss, t.grad, ...) does the same; the futures here feed the bar)
    wanted = [loss.data, t.grad[:check], t.grad.sum(), head_loss.data,
              head.grad, x[:check], plain]
    start = time.perf_counter()
    futures = client.compute(wanted)
    if progress:
        with contextlib.redirect_stdout(sys.stderr):  # (the bar on stderr, results on stdout)
            progress_bar(futures)
            print()
    value, grad_head, grad_sum, head_value, head_grad, x_head, plain_value = \
        client.gather(futures)
    seconds = time.perf_counter() - start
    floor_value, floor_grad = w4_by_hand(x_head)
    return {"n": n, "chunk": chunk, "seconds": seconds, "loss": float(value),
            "gradient_sum": float(grad_sum),
            "gradient_vs_numpy": relative(grad_head, floor_grad),
            "slice_gradient_vs_numpy": relative(head_grad, floor_grad),
            "slice_loss_vs_numpy": abs(float(head_value) - floor_value) / abs(floor_value),
            "loss_vs_dask": abs(float(value) - float(plain_value)) / abs(float(plain_value))}


def chunked_mps(sites: int, bond: int) -> dict:
    """The norm of a complex MPS with chunked bonds and its gradient, against NumPy."""
    import dask
    import dask.array as da

    rng = da.random.default_rng(1)  # the sites are drawn on the workers
    half = max(1, bond // 2)
    shapes = [(1, 2, bond)] + [(bond, 2, bond)] * (sites - 2) + [(bond, 2, 1)]
    chunks = [(min(s[0], half), 2, min(s[2], half)) for s in shapes]
    sites_ = [(rng.standard_normal(s, chunks=c) + 1j * rng.standard_normal(s, chunks=c))
              / np.sqrt(2 * s[0]) for s, c in zip(shapes, chunks)]
    lazy = [yaad.tensor(a, requires_grad=True) for a in sites_]
    norm = mps_norm(lazy)
    norm.backward()
    start = time.perf_counter()
    value, *grads = yaad.compute(norm, *(t.grad for t in lazy))
    seconds = time.perf_counter() - start
    arrays = dask.compute(*sites_)  # for NumPy
    ref = [yaad.tensor(a, requires_grad=True) for a in arrays]
    ref_norm = mps_norm(ref)
    ref_norm.backward()
    return {"sites": sites, "bond": bond, "seconds": seconds, "norm": float(value),
            "norm_vs_numpy": abs(float(value) - float(ref_norm)) / abs(float(ref_norm)),
            "gradient_vs_numpy": max(relative(g, t.grad) for g, t in zip(grads, ref))}


def main(argv: list[str] | None = None) -> dict:
    """Start the cluster, run both computations, print and return the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=2e8, help="numbers in x (W4)")
    parser.add_argument("--chunk", type=float, default=1e6, help="numbers per chunk")
    parser.add_argument("--check", type=float, default=1e6, help="numbers checked by NumPy")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="400MiB", help="per worker")
    parser.add_argument("--sites", type=int, default=12, help="MPS sites")
    parser.add_argument("--bond", type=int, default=256, help="MPS bond dimension")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no printing")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    n, chunk = int(args.n), int(args.chunk)
    check = min(int(args.check), n)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", memory_limit=args.memory_limit,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        workers = sorted(client.scheduler_info()["workers"])
        limit = next(iter(client.scheduler_info()["workers"].values()))["memory_limit"]
        w4 = big_w4(client, n, chunk, check, progress=not args.quiet)
        mps = chunked_mps(args.sites, args.bond)
        restarted = sorted(client.scheduler_info()["workers"]) != workers
        peaks = sorted(client.run(peak_memory).values())
    result = {"w4": w4, "mps": mps, "workers": len(workers), "memory_limit": limit,
              "peak_worker_memory": peaks, "worker_restarted": restarted}
    if not args.quiet:
        mb = 2**20
        print(f"W4 on {n:.3g} float64 ({8 * n / mb:,.0f} MiB) in chunks of {chunk:.3g}, "
              f"{len(workers)} workers of {limit / mb:.0f} MiB: {w4['seconds']:.1f} s")
        print(f"  loss {w4['loss']:.12g}; against Dask alone: {w4['loss_vs_dask']:.1e}")
        print(f"  gradient[:{check}] against NumPy's hand-written gradient: "
              f"{w4['gradient_vs_numpy']:.1e}; the slice's own loss: "
              f"{w4['slice_loss_vs_numpy']:.1e}, gradient: {w4['slice_gradient_vs_numpy']:.1e}")
        print(f"MPS norm, {mps['sites']} sites, bond {mps['bond']} in chunks of "
              f"{max(1, mps['bond'] // 2)}: {mps['seconds']:.1f} s; norm {mps['norm']:.12g}, "
              f"against NumPy {mps['norm_vs_numpy']:.1e}, gradients "
              f"{mps['gradient_vs_numpy']:.1e}")
        print(f"peak worker memory: {', '.join(f'{p / mb:.0f} MiB' for p in peaks)} "
              f"(limit {limit / mb:.0f} MiB); a worker restarted: {restarted}")
    return result


if __name__ == "__main__":
    main()
