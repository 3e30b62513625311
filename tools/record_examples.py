"""Run the example scripts with their default options and record what they print.

    python tools/record_examples.py [NAME ...]

writes ``docs/examples/<name>.txt`` for each script of ``examples/`` (all of them, or the
named ones): a first line saying how, when and where the run was made, then its output.
The documentation site shows it on the script's page (tools/docs_hooks.py). The demo's
figure (``python -m yaad demo``) is saved as ``docs/examples/yaad-demo.png``.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "examples"


def machine() -> str:
    """A short description of the machine: processor, logical CPUs, Python, NumPy."""
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, "
            f"NumPy {numpy.__version__}")


def record(command: list[str], name: str) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    run = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True)
    shown = " ".join(["python", *command])
    header = (f"# Recorded with `{shown}` on {datetime.date.today().isoformat()} "
              f"(one thread; {machine()})")
    (OUT / f"{name}.txt").write_text(header + "\n" + run.stdout)
    print(f"wrote docs/examples/{name}.txt")


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    names = argv or [p.stem for p in sorted((ROOT / "examples").glob("*.py"))]
    for name in names:
        saves_figure = '"--figure"' in (ROOT / "examples" / f"{name}.py").read_text()
        figure = ["--figure", f"docs/examples/{name}.png"] if saves_figure else []
        record([f"examples/{name}.py", *figure], name)
    if not argv:
        record(["-m", "yaad", "demo", "--no-progress", "--out", "docs/examples"], "demo")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
