"""Side-by-side benchmarks of yaad and its peers on the workloads of ``workloads.md``.

Run from the repository root with ``python -m benchmarks`` (``make bench``); see
``python -m benchmarks --help`` and ``docs/performance.md``. This package imports nothing
at import time, so that ``__main__`` can set the thread counts before NumPy loads.
"""
