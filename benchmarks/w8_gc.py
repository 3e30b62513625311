"""W8 (yaad eager) alone and in a process that has imported torch and jax, with the cyclic
garbage collector's own time: the measurement behind issue 16's target "W8 beside torch
and jax within 10% of W8 alone" (docs/performance.md).

Each round runs W8 in two fresh processes, one importing nothing else and one importing
torch and jax first, alternately; no ``gc.freeze()`` (``make bench`` freezes what exists
before timing, which hides this cost). A process reports the median and mean CPU time per call,
the collector's CPU time per call (``gc.callbacks``), the collections of each generation
and the objects the collector tracks. Usage::

    python -m benchmarks.w8_gc [--rounds 3] [--calls 11]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time


def _one(heavy: bool, calls: int) -> dict:
    if heavy:
        import jax  # noqa: F401
        import torch  # noqa: F401
    import numpy as np

    import yaad

    gc_time = [0.0, 0.0]  # (start of the running collection, total)
    counts = [0, 0, 0]

    def timer(phase: str, info: dict) -> None:
        if phase == "start":
            gc_time[0] = time.process_time()
        else:
            gc_time[1] += time.process_time() - gc_time[0]
            counts[info["generation"]] += 1

    x0 = np.random.default_rng(0).standard_normal(1)

    def step() -> None:
        x = yaad.tensor(x0, requires_grad=True)
        y = x
        for _ in range(10_000):
            y = y * 0.999 + 0.001
        yaad.sum(y).backward()

    for _ in range(2):
        step()
    gc.callbacks.append(timer)
    times = []
    for _ in range(calls):
        t = time.process_time()
        step()
        times.append(time.process_time() - t)
    gc.callbacks.remove(timer)
    return {"ms": statistics.median(times) * 1e3, "mean_ms": statistics.mean(times) * 1e3,
            "gc_ms": gc_time[1] / calls * 1e3,
            "collections": counts, "tracked": len(gc.get_objects())}


def main() -> None:
    """Run the rounds and print each process's figures and the ratio of the medians."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=11)
    ap.add_argument("--child", choices=["alone", "heavy"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_one(args.child == "heavy", args.calls)))
        return
    runs: dict[str, list] = {"alone": [], "heavy": []}
    for r in range(args.rounds):
        for kind in runs:
            out = subprocess.run([sys.executable, "-m", "benchmarks.w8_gc", "--child", kind,
                                  "--calls", str(args.calls)], capture_output=True,
                                 text=True, check=True).stdout
            res = json.loads(out.strip().splitlines()[-1])
            runs[kind].append(res)
            print(f"round {r + 1} {kind:5}: {res['ms']:7.1f} ms per call (median; mean "
                  f"{res['mean_ms']:.1f}), collector "
                  f"{res['gc_ms']:6.1f} ms, collections {res['collections']} in "
                  f"{args.calls} calls, {res['tracked']:,} tracked objects", flush=True)
    for stat in ("ms", "mean_ms"):  # (the mean carries the full collections' cost)
        m = {k: statistics.median(x[stat] for x in v) for k, v in runs.items()}
        print(f"{'median' if stat == 'ms' else 'mean'} per call (median of the rounds): "
              f"alone {m['alone']:.1f} ms, beside torch and jax {m['heavy']:.1f} ms "
              f"({m['heavy'] / m['alone']:.2f}x)")


if __name__ == "__main__":
    main()
