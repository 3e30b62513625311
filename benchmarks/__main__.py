"""``python -m benchmarks``: run the workloads side by side and write the table and chart.

The thread settings are made here, before NumPy or any peer is imported.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .machine import configure_threads


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="yaad and its peers on the workloads of benchmarks/workloads.py (loss "
                    "+ all gradients per call, one thread; W11: a training step), each "
                    "checked against a hand-written NumPy floor before it is timed.")
    p.add_argument("--workloads", help="comma-separated ids, e.g. W1,W3 (W2 = both "
                   "variants); default: all")
    p.add_argument("--impls", help="comma-separated: numpy, yaad, yaad.compile, torch, "
                   "jax, jax.jit, autograd, mygrad (the numpy floor is always run); "
                   "default: all")
    p.add_argument("--quick", action="store_true", help="a fast pass: ~0.05 s per "
                   "implementation instead of ~0.5 s")
    p.add_argument("--slow", action="store_true", help="also run what takes minutes "
                   "(jax.jit on W8)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (a smoke test; the "
                   "times mean nothing)")
    p.add_argument("--target", type=float, help="seconds of timed calls per "
                   "implementation (overrides --quick)")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="time on the process's CPU time (default: robust on a shared, "
                        "loaded machine) or on elapsed time; both go to bench.json")
    p.add_argument("--no-pin", action="store_true", help="do not pin the process to one CPU")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"),
                   help="directory for bench.json, bench.md and bench.png "
                        "(default: benchmarks/results)")
    return p.parse_args(argv)


def _load() -> float | None:
    """The one-minute load average (other processes share the CPUs), where known."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def main(argv: list[str] | None = None) -> int:
    """Run, print, and write the results."""
    args = parse(argv)
    threads = configure_threads(pin=not args.no_pin)

    from dataclasses import asdict, replace

    from . import libraries, report, runner, workloads
    from .machine import describe

    chosen = workloads.select(args.workloads)
    impls = libraries.select(args.impls)
    opts = runner.QUICK if args.quick else runner.Options()
    opts = replace(opts, slow=args.slow, tiny=args.tiny, clock=args.clock)
    if args.target:
        opts = replace(opts, target_s=args.target)

    def progress(r):
        status = f"{r.median_us:,.1f} us" if r.status == "ok" else r.status
        print(f"  {r.workload:<10} {r.impl:<13} {status}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    load_before = _load()
    results = runner.run(chosen, impls, opts, progress)
    machine = describe(threads)
    machine["load_average"] = {"before": load_before, "after": _load()}
    elapsed = time.perf_counter() - t0

    print()
    print(report.table(results, opts.clock))
    t = machine["threads"]
    print(f"\n{machine['cpu']} ({machine['logical_cpus']} logical CPUs), Python "
          f"{machine['python']}, NumPy {machine['versions']['numpy']} "
          f"({machine['numpy_blas']}); one thread, pinned to CPU {t['pinned_cpu']}; "
          f"{elapsed:.0f} s in all; load average {machine['load_average']['before']} "
          f"before, {machine['load_average']['after']} after")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report.write_json(out / "bench.json", results, machine,
                      {**asdict(opts), "workloads": [w.id for w in chosen],
                       "impls": [i.name for i in impls]})
    (out / "bench.md").write_text(report.markdown(results, machine, opts.clock))
    try:
        report.chart(out / "bench.png", results)
    except ImportError:
        print("matplotlib is not installed: no chart", file=sys.stderr)
    print(f"wrote {out / 'bench.json'}, bench.md and bench.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
