"""The results as a terminal table, Markdown, JSON and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path

from .runner import Result


def _num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v:,.0f}{unit}"
    if v >= 100:
        return f"{v:.0f}{unit}"
    if v >= 10:
        return f"{v:.1f}{unit}"
    return f"{v:.2f}{unit}"


def _short(r: Result) -> str:
    """A few words for a cell without a time."""
    if r.status in ("mismatch", "error"):
        return r.status
    note = r.note.removeprefix("skipped: ")
    for key, word in (("not installed", "not installed"), ("n/a", "n/a"),
                      ("complex", "no complex"), ("--slow", "skipped (slow)")):
        if key in note:
            return word
    return note.split(":")[0][:24]


CLOCKS = {"cpu": "CPU time (the process's, all threads)", "wall": "elapsed time"}


def table(results: list[Result], clock: str = "cpu") -> str:
    """The long table for the terminal: one line per (workload, implementation)."""
    head = (f"{'workload':<10} {'implementation':<13} {clock + ' us':>10} {'x floor':>8} "
            f"{'x torch':>8} {'1st call ms':>11}  note")
    lines = [head, "-" * len(head)]
    last = None
    for r in results:
        name = r.workload if r.workload != last else ""
        last = r.workload
        note = r.note
        if r.compile_s is not None:
            note = f"compile {r.compile_s:.2f} s" + (f"; {note}" if note else "")
        if r.peak_mb is not None:
            note = f"peak {_num(r.peak_mb)} MB" + (f"; {note}" if note else "")
        median = _num(r.median_us) if r.status == "ok" else r.status
        lines.append(f"{name:<10} {r.impl:<13} {median:>10} {_num(r.ratio_floor, 'x'):>8} "
                     f"{_num(r.ratio_torch, 'x'):>8} {_num(r.first_call_ms):>11}  {note}")
    return "\n".join(lines)


def _by_cell(results: list[Result]) -> tuple[list[str], list[str], dict]:
    workloads = list(dict.fromkeys(r.workload for r in results))
    impls = list(dict.fromkeys(r.impl for r in results))
    return workloads, impls, {(r.workload, r.impl): r for r in results}


def markdown(results: list[Result], machine: dict, clock: str = "cpu") -> str:
    """Markdown tables: all medians with ratios to the floor, yaad's ratios, compile
    times, peak memory, notes, and the machine."""
    workloads, impls, cell = _by_cell(results)
    out = [f"Median microseconds of {CLOCKS[clock]} per call (loss + all gradients), and "
           f"the ratio to the NumPy floor:", "",
           "| workload | " + " | ".join(impls) + " |",
           "|---|" + "---:|" * len(impls)]
    for w in workloads:
        row = []
        for i in impls:
            r = cell.get((w, i))
            if r is None:
                row.append("")
            elif r.status == "ok":
                row.append(_num(r.median_us) + ("" if i == "numpy"
                                                 else f" ({_num(r.ratio_floor, 'x')})"))
            else:
                row.append(_short(r))
        out.append(f"| {w} | " + " | ".join(row) + " |")

    yaads = [i for i in impls if i.startswith("yaad")]
    if yaads:
        out += ["", "yaad's ratios (lower is faster):", "",
                "| workload | " + " | ".join(f"{i} x floor | {i} x torch" for i in yaads)
                + " |", "|---|" + "---:|" * (2 * len(yaads))]
        for w in workloads:
            row = []
            for i in yaads:
                r = cell.get((w, i))
                ok = r is not None and r.status == "ok"
                row += [_num(r.ratio_floor, "x") if ok else (_short(r) if r else ""),
                        _num(r.ratio_torch, "x") if ok else ""]
            out.append(f"| {w} | " + " | ".join(row) + " |")

    if any(r.compile_s is not None for r in results):
        out += ["", "Compiling, not in the medians: jax.jit's trace, lower and compile, and "
                "yaad.compile's first call (it records the tape):", "",
                "| workload | jax.jit s | yaad.compile first call ms |", "|---|---:|---:|"]
        for w in workloads:
            jit, rec = cell.get((w, "jax.jit")), cell.get((w, "yaad.compile"))
            jit = f"{jit.compile_s:.2f}" if jit and jit.compile_s is not None else "-"
            rec = _num(rec.first_call_ms) if rec and rec.status == "ok" else "-"
            out.append(f"| {w} | {jit} | {rec} |")

    memory = [r for r in results if r.peak_mb is not None]
    if memory:
        floor = {r.workload: r.peak_mb for r in memory if r.impl == "numpy"}
        out += ["", "Peak memory of one call (NumPy allocations above the inputs, "
                "tracemalloc):", "", "| workload | implementation | MB | x floor |",
                "|---|---|---:|---:|"]
        for r in memory:
            base = floor.get(r.workload)
            ratio = _num(r.peak_mb / base, "x") if base else "-"
            out.append(f"| {r.workload} | {r.impl} | {_num(r.peak_mb)} | {ratio} |")

    notes: dict = {}  # the same note on several workloads is listed once
    for r in results:
        if r.note and r.impl != "numpy":
            notes.setdefault((r.impl, r.note), []).append(r.workload)
    if notes:
        out += ["", "Notes:", ""]
        out += [f"- {impl} on {', '.join(ws)}: {note}" for (impl, note), ws in notes.items()]

    t = machine["threads"]
    v = machine["versions"]
    out += ["", f"Machine: {machine['cpu']}, {machine['logical_cpus']} logical CPUs, "
            f"{machine['platform']}; Python {machine['python']}, NumPy {v['numpy']} "
            f"({machine['numpy_blas']}), " + ", ".join(
                f"{k} {v[k]}" for k in ("torch", "jax", "autograd", "mygrad")) + ". "
            f"One thread: {', '.join(f'{k}={x}' for k, x in t['env'].items())}, "
            f"torch.set_num_threads(1), process pinned to CPU {t['pinned_cpu']}; "
            f"{t.get('malloc', 'allocator as it is')}."]
    load = machine.get("load_average")
    if load:
        out[-1] += (f" Load average (other processes) {load['before']} before the run, "
                    f"{load['after']} after.")
    return "\n".join(out) + "\n"


def write_json(path: Path, results: list[Result], machine: dict, options: dict) -> None:
    """The results, the machine and the options, as JSON."""
    data = {"machine": machine, "options": options,
            "results": [r.as_dict() for r in results]}
    path.write_text(json.dumps(data, indent=1) + "\n")


def chart(path: Path, results: list[Result]) -> None:
    """Log-scale bars of the ratio to the floor, grouped by workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads, impls, cell = _by_cell(results)
    # implementations with at least one bar, each in its own colour whatever the selection
    colors = {name: f"C{k}" for k, name in enumerate(
        ("yaad", "yaad.compile", "torch", "jax", "jax.jit", "autograd", "mygrad"))}
    impls = [i for i in impls if i != "numpy" and any(
        cell.get((w, i)) and cell[w, i].ratio_floor for w in workloads)]
    width = 0.8 / max(len(impls), 1)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(workloads)), 5))
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            r = cell.get((w, impl))
            if r is not None and r.ratio_floor:
                xs.append(j + (k - (len(impls) - 1) / 2) * width)
                ys.append(r.ratio_floor)
        ax.bar(xs, ys, width, label=impl, color=colors.get(impl))
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("time / NumPy floor (log scale)")
    ax.set_title("Loss + gradients per call, relative to hand-written NumPy (lower is faster)")
    ax.legend(ncol=len(impls), fontsize="small", loc="upper center",
              bbox_to_anchor=(0.5, -0.08), frameon=False)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
