"""Instructions per call of a ``make bench`` step on its workloads, by callgrind.

Times on a shared, loaded machine disagree by more than a few percent; instruction
counts do not depend on the load. For each workload this runs the step (loss and all
gradients, as ``make bench`` times it) under ``valgrind --tool=callgrind`` twice, after
two warm-up calls, with ``N`` and ``2N`` calls: the difference divided by ``N`` is the
count per call (start-up and exit cancel).

    python tools/instructions.py W3 W8 W9
    python tools/instructions.py --impl yaad.compile W2 W11   # or --impl numpy (the floor)

The step is yaad's eager one unless ``--impl`` names another of ``benchmarks.libraries``
(``yaad.compile``, ``numpy``; the peers are measured by time, not here). It measures the
yaad that ``python`` imports (the installed build, or ``PYTHONPATH``).
Needs valgrind (Debian's package); run from the repository (it imports ``benchmarks``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALLS = {"W1": 100, "W2/f64": 10, "W2/f32": 10, "W3": 3, "W8": 1, "W9": 3, "W10": 3,
         "W11": 10}

CHILD = """
import sys
sys.path.insert(0, {root!r})
import numpy as np
from benchmarks.workloads import select
from benchmarks.libraries import IMPLS
(w,) = select({wid!r})
params, consts = w.inputs(np.random.default_rng(0), False)
(impl,) = [i for i in IMPLS if i.name == {impl!r}]
step = impl.prepare(w, params, consts)
for _ in range(3 + {n}):
    step.call()
"""


def _total(wid: str, n: int, impl: str = "yaad") -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        child = CHILD.format(root=str(ROOT), wid=wid, n=n, impl=impl)
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", child],
                       env=env, check=True, capture_output=True)
        found = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.MULTILINE)
    assert found, "callgrind wrote no totals"
    return int(found.group(1))


def per_call(wid: str, n: int, impl: str = "yaad") -> float:
    """Instructions per call of workload ``wid``: (``2n`` calls - ``n`` calls) / ``n``."""
    return (_total(wid, 2 * n, impl) - _total(wid, n, impl)) / n


if __name__ == "__main__":
    args = sys.argv[1:]
    impl = "yaad"
    if "--impl" in args:
        k = args.index("--impl")
        impl = args[k + 1]
        del args[k:k + 2]
    for wid in args or ["W3", "W8", "W9"]:
        n = CALLS.get(wid, 3)
        print(f"{wid} ({impl}): {per_call(wid, n, impl) / 1e6:.3f} M instructions per call "
              f"(N={n})", flush=True)
