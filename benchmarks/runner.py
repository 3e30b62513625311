"""Check each implementation against the floor, then time it; peak memory where asked."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from .libraries import Impl, Step, Unsupported, prepare_floor
from .workloads import Workload


@dataclass
class Result:
    """One (workload, implementation) cell of the table."""

    workload: str
    impl: str
    status: str  # ok | skipped | mismatch | error
    note: str = ""
    median_us: float | None = None  # on the clock of the options (cpu or wall)
    cpu_us: float | None = None
    wall_us: float | None = None
    repeats: int = 0
    number: int = 0  # calls per timed repetition
    first_call_ms: float | None = None
    compile_s: float | None = None
    ratio_floor: float | None = None
    ratio_torch: float | None = None
    peak_mb: float | None = None  # numpy allocations in one call (W4)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Options:
    """How long to time, and what to run."""

    target_s: float = 0.5    # timed seconds per implementation (the repetitions adapt)
    min_repeats: int = 5
    batch_s: float = 1e-4    # calls per repetition: at least this long, for tiny calls
    slow: bool = False       # also run what workloads mark slow
    tiny: bool = False       # small sizes (smoke tests)
    time: bool = True        # False: check only
    rounds: int = 10         # the repetitions of all implementations are interleaved
    # "cpu": the process's CPU time, which other processes on a shared machine inflate
    # far less than elapsed time ("wall"); both are recorded
    clock: str = "cpu"


QUICK = Options(target_s=0.05, min_repeats=3, rounds=3)


# Adam divides by the root of the squared gradients, so a gradient entry near zero turns
# its float32 rounding error into an update error of the update's own size (W11: an entry
# of 5e-7, against a median of 7e-3, moved PyTorch's update away from the floor's by 1.6e-3
# of the largest update). A wrong learning rate, beta, bias correction or sign changes
# every update by a factor: 1e-2 of the largest update still catches those.
UPDATE_RTOL = 1e-2


def reference(workload: Workload, params: dict, consts: dict) -> tuple:
    """What every implementation is compared with: the floor's ``(loss, grads)`` after
    ``workload.checked_calls`` calls (for a training step, ``(loss, params)`` after three
    steps)."""
    step = prepare_floor(workload, params, consts)
    for _ in range(workload.checked_calls):
        out = step.call()
    return out


def compare(step: Step, out: tuple, ref: tuple, impl: Impl, workload: Workload,
            params: dict) -> tuple[bool, str]:
    """Whether the loss and the gradients match the floor's; a note either way. For a
    training step, the params' changes (new - initial) are compared instead."""
    loss, grads = out
    ref_loss, ref_grads = ref
    value = np.asarray(step.to_numpy(loss)).real.item()
    if not np.isclose(value, ref_loss, rtol=workload.rtol, atol=0):
        return False, f"loss {value:.10g} != floor {float(ref_loss):.10g}"
    what, rtol = "gradient of {}", workload.rtol
    if workload.train is not None:
        what, rtol = "update of {}", max(rtol, UPDATE_RTOL)
    notes = []
    for name, g, r, p in zip(params, grads, ref_grads, params.values()):
        if g is None:
            return False, f"no gradient for {name}"
        g = np.asarray(step.to_numpy(g))
        if impl.conj:
            g = np.conj(g)
        if g.shape != r.shape:
            return False, f"{what.format(name)} has shape {g.shape}, floor {r.shape}"
        if g.dtype != p.dtype:
            notes.append(f"{name}.grad is {g.dtype} for a {p.dtype} input"
                         if workload.train is None else
                         f"{name} is {g.dtype} after the update, {p.dtype} before")
        if workload.train is not None:
            g, r = g - p, r - p
        err = np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-300)
        if not err <= rtol:
            return False, (f"{what.format(name)} differs from the floor by {err:.2g} "
                           f"(relative)")
    return True, "; ".join(dict.fromkeys(notes))


def calibrate(call: Callable, opts: Options) -> tuple[int, int]:
    """Warm ``call`` up; return ``(number, repeats)``: how many calls per timed repetition
    (more than one only for calls shorter than ``opts.batch_s``) and how many repetitions
    fill ``opts.target_s`` (at least ``opts.min_repeats``; 3 for calls over a second)."""
    t0 = time.perf_counter()
    call()
    single = time.perf_counter() - t0
    warm_until = time.perf_counter() + 0.1 * opts.target_s
    while time.perf_counter() < warm_until:
        t0 = time.perf_counter()
        call()
        single = min(single, time.perf_counter() - t0)
    number = max(1, int(opts.batch_s / single))
    repeats = max(opts.min_repeats, int(opts.target_s / (single * number)))
    if single > 1.0:
        repeats = min(repeats, 3)
    return number, repeats


def measure(calls: list[Callable], opts: Options) -> list[dict]:
    """Median seconds per call of each of ``calls``, on both clocks.

    Returns one dict per call: ``cpu`` (the process's CPU time, all its threads), ``wall``
    (elapsed time), ``repeats`` and ``number``. The repetitions are interleaved in
    ``opts.rounds`` rounds (each call in turn), so that a change in the machine's load
    while they run affects all of them alike.
    """
    plans = [calibrate(call, opts) for call in calls]
    samples: list[list[tuple[float, float]]] = [[] for _ in calls]
    rounds = opts.rounds
    for j in range(rounds):
        for call, (number, repeats), ts in zip(calls, plans, samples):
            for _ in range(repeats // rounds + (j < repeats % rounds)):
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(number):
                    call()
                ts.append(((time.process_time() - c0) / number,
                           (time.perf_counter() - t0) / number))
    return [{"cpu": statistics.median(c for c, _ in ts),
             "wall": statistics.median(w for _, w in ts),
             "repeats": len(ts), "number": number}
            for ts, (number, _) in zip(samples, plans)]


def peak_numpy_mb(step: Step) -> float:
    """Peak of traced allocations (NumPy reports its buffers to tracemalloc) during one
    call, above what was allocated before it, in MB."""
    step.clear()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = step.call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    step.clear()
    return (peak - base) / 1e6


def check(workload: Workload, impl: Impl, params: dict, consts: dict, ref: tuple,
          opts: Options) -> tuple[Result, Step | None]:
    """Prepare one implementation and check it against the floor: the result so far,
    and the step to time when it is ok."""
    res = Result(workload.id, impl.name, "skipped")
    if impl.name in workload.slow and not opts.slow:
        res.note = f"skipped: {workload.slow[impl.name]}"
        return res, None
    if workload.complex and not impl.complex:
        res.note = f"skipped: {impl.name} has no complex numbers"
        return res, None
    try:
        step = impl.prepare(workload, params, consts)
        res.compile_s = step.compile_s
        t0 = time.perf_counter()
        out = step.call()
        res.first_call_ms = (time.perf_counter() - t0) * 1e3
        for _ in range(workload.checked_calls - 1):
            out = step.call()
        ok, res.note = compare(step, out, ref, impl, workload, params)
        res.status = "ok" if ok else "mismatch"
        return res, step if ok else None
    except ImportError as e:
        res.note = f"skipped: not installed ({e.name or e})"
    except Unsupported as e:
        res.note = f"skipped: {e}"
    except Exception as e:  # a failing peer is a finding, not a crash of the harness
        res.status = "error"
        res.note = f"{type(e).__name__}: {_first_line(e)}"
    return res, None


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""


def run(workloads: list[Workload], impls: list[Impl], opts: Options,
        progress: Callable[[Result], Any] = lambda r: None) -> list[Result]:
    """All (workload, implementation) cells: checked, then timed together (interleaved),
    with ratios to the floor and to PyTorch, and peak memory where the workload asks."""
    results = []
    for w in workloads:
        params, consts = w.inputs(np.random.default_rng(0), opts.tiny)
        ref = reference(w, params, consts)
        row = [check(w, impl, params, consts, ref, opts) for impl in impls]
        timed = [(r, step) for r, step in row if step is not None]
        if opts.time and timed:
            # Hide the objects that exist now (every library's modules, the inputs) from
            # the collector, so that a full collection costs what the workload's own
            # objects cost, whichever other libraries this process imported.
            gc.collect()
            gc.freeze()
            try:
                timings = measure([step.call for _, step in timed], opts)
            finally:
                gc.unfreeze()
            for (r, _), m in zip(timed, timings):
                r.cpu_us, r.wall_us = m["cpu"] * 1e6, m["wall"] * 1e6
                r.median_us = r.cpu_us if opts.clock == "cpu" else r.wall_us
                r.repeats, r.number = m["repeats"], m["number"]
        if w.memory:
            for (r, step), impl in zip(row, impls):
                if step is not None and impl.numpy_memory:
                    r.peak_mb = peak_numpy_mb(step)
        row = [r for r, _ in row]
        _ratios(row)
        for r in row:
            progress(r)
        results.extend(row)
    return results


def _ratios(row: list[Result]) -> None:
    base = {r.impl: r.median_us for r in row if r.median_us}
    for r in row:
        if r.median_us:
            if "numpy" in base:
                r.ratio_floor = r.median_us / base["numpy"]
            if "torch" in base:
                r.ratio_torch = r.median_us / base["torch"]
