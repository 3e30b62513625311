"""Instructions per call of yaad's eager step on ``make bench`` workloads, by callgrind.

Times on a shared, loaded machine disagree by more than a few percent; instruction
counts do not depend on the load. For each workload this runs the step (loss and all
gradients, as ``make bench`` times it) under ``valgrind --tool=callgrind`` twice, after
two warm-up calls, with ``N`` and ``2N`` calls: the difference divided by ``N`` is the
count per call (start-up and exit cancel).

    python tools/instructions.py W3 W8 W9

It measures the yaad that ``python`` imports (the installed build, or ``PYTHONPATH``).
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
CALLS = {"W1": 100, "W2/f64": 10, "W3": 3, "W8": 1, "W9": 3, "W10": 3}

CHILD = """
import sys
sys.path.insert(0, {root!r})
import numpy as np
from benchmarks.workloads import select
from benchmarks.libraries import _prepare_yaad
(w,) = select({wid!r})
params, consts = w.inputs(np.random.default_rng(0), False)
step = _prepare_yaad(w, params, consts)
for _ in range(2 + {n}):
    step.call()
"""


def _total(wid: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", CHILD.format(root=str(ROOT), wid=wid, n=n)],
                       env=env, check=True, capture_output=True)
        found = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.MULTILINE)
    assert found, "callgrind wrote no totals"
    return int(found.group(1))


def per_call(wid: str, n: int) -> float:
    """Instructions per call of workload ``wid``: (``2n`` calls - ``n`` calls) / ``n``."""
    return (_total(wid, 2 * n) - _total(wid, n)) / n


if __name__ == "__main__":
    for wid in sys.argv[1:] or ["W3", "W8", "W9"]:
        n = CALLS.get(wid, 3)
        print(f"{wid}: {per_call(wid, n) / 1e6:.3f} M instructions per call (N={n})",
              flush=True)
