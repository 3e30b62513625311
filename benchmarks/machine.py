"""One thread, one CPU, and a description of the machine for the report.

:func:`configure_threads` must run before NumPy (or any peer) is imported, which is why
this module imports only the standard library at the top.
"""

from __future__ import annotations

import os
import platform
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def configure_threads(pin: bool = True) -> dict:
    """Set one thread for the BLAS libraries and XLA, and pin the process to one CPU.

    Returns the settings, for the report.
    """
    for var in THREAD_VARS:
        os.environ[var] = "1"
    flags = os.environ.get("XLA_FLAGS", "")
    if XLA_ONE_THREAD not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + XLA_ONE_THREAD).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    cpu = None
    if pin and hasattr(os, "sched_setaffinity"):
        # the last allowed CPU: CPU 0 usually takes more of the system's interrupts
        cpu = max(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
    return {"env": {var: os.environ[var] for var in (*THREAD_VARS, "XLA_FLAGS")},
            "pinned_cpu": cpu, "malloc": fix_malloc_thresholds()}


# glibc returns freed memory to the system and adapts its thresholds as a process runs,
# so a workload's allocation cost (page faults on every large temporary) would depend on
# which workloads ran before it. Fixed thresholds make every cell see the same allocator.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MALLOC_THRESHOLD = 32 << 20  # glibc's largest mmap threshold on 64-bit


def fix_malloc_thresholds() -> str:
    """Set glibc's mmap and trim thresholds to 32 MiB (as MALLOC_MMAP_THRESHOLD_ and
    MALLOC_TRIM_THRESHOLD_ would); returns what was done, for the report."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        ok = (libc.mallopt(M_MMAP_THRESHOLD, MALLOC_THRESHOLD) == 1
              and libc.mallopt(M_TRIM_THRESHOLD, MALLOC_THRESHOLD) == 1)
    except (OSError, AttributeError):
        ok = False
    return ("glibc mmap/trim thresholds fixed at 32 MiB" if ok else
            "allocator left as it is (not glibc)")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:
        return "unknown"


def describe(threads: dict) -> dict:
    """The machine, the interpreter, the BLAS and the thread settings."""
    from .libraries import versions

    torch = sys.modules.get("torch")
    return {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy_blas": _blas(),
        "versions": versions(),
        "threads": {**threads,
                    "torch_threads": torch.get_num_threads() if torch else None},
    }
