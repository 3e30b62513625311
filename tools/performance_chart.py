"""Draw the chart of docs/performance.md from the table on that page.

    python tools/performance_chart.py

reads the first table of the page's "Results" section (the output of a `make bench`
run, which the page names), draws it with the benchmarks' own chart
(``benchmarks.report.chart``: log-scale bars of the ratio to the NumPy floor) into
``docs/figures/performance.png``, and writes the ratios it drew to
``docs/figures/performance.json``. ``tests/project/test_docs.py`` fails when the table and the
drawn ratios differ: rerun this script after updating the table.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "performance.md"
FIGURE = ROOT / "docs" / "figures" / "performance.png"
DRAWN = FIGURE.with_suffix(".json")


def table_ratios(text: str) -> dict[str, dict[str, float | None]]:
    """{workload: {implementation: ratio to the floor, or None}} from the first table of
    the Results section (cells such as ``12.5 (3.38x)``)."""
    lines = text[text.index("## Results"):].splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("| workload |"))
    header = [c.strip() for c in lines[start].split("|")[1:-1]]
    ratios = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.split("|")[1:-1]]
        ratios[cells[0]] = {impl: float(m.group(1)) if (m := re.search(r"\(([\d.]+)x\)", c))
                            else None for impl, c in zip(header[2:], cells[2:])}
    return ratios


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from benchmarks.report import chart
    from benchmarks.runner import Result

    ratios = table_ratios(PAGE.read_text())
    results = [Result(workload, impl, "ok", ratio_floor=ratio)
               for workload, row in ratios.items() for impl, ratio in row.items()]
    FIGURE.parent.mkdir(exist_ok=True)
    chart(FIGURE, results)
    DRAWN.write_text(json.dumps(ratios, indent=1) + "\n")
    print(f"wrote {FIGURE.relative_to(ROOT)} and {DRAWN.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
