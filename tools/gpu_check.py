"""``make gpu-check``: yaad on a GPU (CuPy) -- the CuPy tests, then W1-W8 next to PyTorch CUDA.

1. Runs tests/array_api/test_backend_cupy.py (the op-case table, the op families, the linear algebra
   and contraction table of tests/support/backend_table.py, advanced indexing and
   yaad.compile on CuPy arrays, values and derivatives against NumPy's) and prints its
   counts.
2. Runs the workloads W1-W8 of benchmarks/workloads.py (loss + all gradients per call) with
   yaad on CuPy arrays, with the workload's hand-written floor on CuPy arrays (NumPy's
   functions dispatch to CuPy) and with PyTorch on CUDA; checks each against the NumPy
   floor on the CPU before timing it; prints the table (median wall time per call, the
   device synchronized after each call).

Where CuPy or a CUDA device is missing it says so and exits with status 1. Options:
``--workloads W1,W4``, ``--w4-size 1e8`` (W4's elements; the issue's target: yaad within
1.5x of the CuPy floor there), ``--target`` (seconds of timed calls per implementation).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python tools/gpu_check.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5,W6,W7,W8")
    p.add_argument("--w4-size", type=float, default=1e8)
    p.add_argument("--target", type=float, default=1.0)
    p.add_argument("--no-tests", action="store_true", help="only the benchmarks")
    return p.parse_args(argv)


def _device() -> Any:
    try:
        import cupy
    except ImportError:
        sys.exit("gpu-check: CuPy is not installed (pip install '.[gpu]'); nothing to run")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        sys.exit(f"gpu-check: no CUDA device ({e})")
    if not count:
        sys.exit("gpu-check: no CUDA device")
    return cupy


def _time(call: Callable[[], Any], sync: Callable[[], None], target: float) -> float:
    """Median seconds per call (the device synchronized after each)."""
    call()
    sync()
    times: list[float] = []
    start = time.perf_counter()
    while time.perf_counter() - start < target or len(times) < 5:
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _check(name: str, got: tuple, expected: tuple, rtol: float) -> None:
    loss, grads = got
    np.testing.assert_allclose(loss, expected[0], rtol=rtol, err_msg=f"{name}: loss")
    for k, (g, e) in enumerate(zip(grads, expected[1])):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * np.abs(e).max(),
                                   err_msg=f"{name}: gradient {k}")


def _host(x: Any) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    if type(x).__module__.startswith("yaad"):
        x = x.data
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _yaad_step(cupy: Any, w: Any, params: dict, consts: dict) -> Callable[[], tuple]:
    import yaad
    from benchmarks.libraries import composed_log_softmax, namespace

    xp = namespace("yaad", yaad, expm=yaad.linalg.expm,
                   **({} if hasattr(yaad, "log_softmax") else
                      {"log_softmax": composed_log_softmax(yaad)}))
    ps = [yaad.tensor(cupy.asarray(a), requires_grad=True) for a in params.values()]
    cs = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in consts.items()}
    return _tape_call(w, xp, ps, cs)


def _tape_call(w: Any, xp: Any, ps: list, cs: dict) -> Callable[[], tuple]:
    """One call of a tape library: clear the gradients, the loss, backward."""
    def call() -> tuple:
        for p in ps:
            p.grad = None
        out = w.loss(xp, tuple(ps), cs)
        out.backward()
        return out, [p.grad for p in ps]

    return call


def _cupy_floor_step(cupy: Any, w: Any, params: dict, consts: dict) -> Callable[[], tuple]:
    ps = tuple(cupy.asarray(a) for a in params.values())
    cs = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in consts.items()}
    return lambda: w.floor(ps, cs)


def _torch_step(w: Any, params: dict, consts: dict) -> Callable[[], tuple]:
    import torch

    from benchmarks.libraries import _torch

    _, xp = _torch()
    ps = [torch.tensor(a, device="cuda", requires_grad=True) for a in params.values()]
    cs = {k: torch.from_numpy(v).cuda() if isinstance(v, np.ndarray) else v
          for k, v in consts.items()}
    return _tape_call(w, xp, ps, cs)


def benchmark(cupy: Any, args: argparse.Namespace) -> list[tuple]:
    """Rows (workload, implementation, microseconds or a note)."""
    from benchmarks.workloads import select

    rows = []
    sync_cupy = cupy.cuda.Device().synchronize
    try:
        import torch

        sync_torch: Callable[[], None] | None = (torch.cuda.synchronize
                                                 if torch.cuda.is_available() else None)
    except ImportError:
        sync_torch = None
    for w in select(args.workloads):
        params, consts = w.inputs(np.random.default_rng(0), False)
        if w.group == "W4":
            n = int(args.w4_size)
            params = {"x": np.random.default_rng(0).standard_normal(n)}
        expected = w.floor(tuple(params.values()), consts)
        impls: list[tuple[str, Callable[..., Callable[[], tuple]], Any]] = [
            ("yaad (cupy)", functools.partial(_yaad_step, cupy), sync_cupy),
            ("cupy floor", functools.partial(_cupy_floor_step, cupy), sync_cupy),
            ("torch (cuda)", _torch_step, sync_torch),
        ]
        for name, prepare, sync in impls:
            if sync is None:
                rows.append((w.id, name, "PyTorch CUDA unavailable"))
                continue
            try:
                call = prepare(w, params, consts)
                loss, grads = call()
                _check(f"{w.id} {name}", (_host(loss), [_host(g) for g in grads]), expected,
                       max(w.rtol, 1e-6))
                rows.append((w.id, name, _time(call, sync, args.target) * 1e6))
            except Exception as e:  # noqa: BLE001  (a note in the table, not a crash)
                rows.append((w.id, name, f"{type(e).__name__}: {str(e)[:80]}"))
    return rows


def table(rows: list[tuple], device: str) -> str:
    """The rows as a Markdown table, with yaad's ratio to the CuPy floor and to torch."""
    by = {(w, i): v for w, i, v in rows}
    lines = [f"GPU: {device}", "",
             "| workload | yaad (cupy) us | cupy floor us | torch (cuda) us | yaad/floor | "
             "yaad/torch |", "|---|---|---|---|---|---|"]
    for w in dict.fromkeys(r[0] for r in rows):
        vals = [by.get((w, i)) for i in ("yaad (cupy)", "cupy floor", "torch (cuda)")]
        cells = [f"{v:,.1f}" if isinstance(v, float) else str(v) for v in vals]
        y, f, t = vals
        ratio = lambda a, b: f"{a / b:.2f}x" if isinstance(a, float) and isinstance(  # noqa: E731
            b, float) else "-"
        lines.append(f"| {w} | {' | '.join(cells)} | {ratio(y, f)} | {ratio(y, t)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the CuPy tests and the GPU benchmarks; print the table."""
    args = parse(argv)
    cupy = _device()
    status = 0
    if not args.no_tests:
        run = subprocess.run([sys.executable, "-m", "pytest",
                              "tests/array_api/test_backend_cupy.py", "-q", "-rsx"], cwd=ROOT)
        status = run.returncode
    props = cupy.cuda.runtime.getDeviceProperties(0)
    device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    print(table(benchmark(cupy, args), f"{device}, CuPy {cupy.__version__}"))
    return status


if __name__ == "__main__":
    sys.exit(main())
