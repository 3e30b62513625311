"""MkDocs hooks (mkdocs.yml): a page for each script in ``examples/``.

Each page is made at build time from the script itself (its docstring, then its source)
and from the output of a run recorded by ``python tools/record_examples.py`` in
``docs/examples/<name>.txt`` (and a figure ``docs/examples/<name>.png`` where the run
saves one). A new script gets its page without further work; add it to the nav in
mkdocs.yml, and record its output.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RECORDED = ROOT / "docs" / "examples"


def scripts() -> list[Path]:
    """The example scripts, by name."""
    return sorted(EXAMPLES.glob("*.py"))


def title_and_text(path: Path) -> tuple[str, str]:
    """The first line of a script's docstring and the rest of it."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or path.stem
    title, _, text = doc.partition("\n")
    return title.strip().rstrip("."), text.strip()


def recorded_output(name: str) -> tuple[str, str] | None:
    """(the line that says how it was recorded, the output) of a recorded run."""
    path = RECORDED / f"{name}.txt"
    if not path.exists():
        return None
    header, _, output = path.read_text().partition("\n")
    return header.lstrip("# ").strip(), output.rstrip()


def example_page(path: Path) -> str:
    title, text = title_and_text(path)
    lines = [f"# {title}", "", f"`examples/{path.name}`", "", text, ""]
    recorded = recorded_output(path.stem)
    if recorded is not None:
        how, output = recorded
        lines += ["## Output", "", f"{how}:", "", "```text", output, "```", ""]
    if (RECORDED / f"{path.stem}.png").exists():
        lines += [f"![The figure saved by the run]({path.stem}.png)", ""]
    lines += ["## The script", "", "```python", path.read_text().rstrip(), "```", ""]
    return "\n".join(lines)


def index_page() -> str:
    lines = ["# Examples", "",
             "The scripts in `examples/` do real work, print what they find and check it; "
             "the test suite runs each with small sizes, and against the installed wheel. "
             "Run one with `python examples/<name>.py --help` for its options.", "",
             "| script | what it does |", "|---|---|"]
    for path in scripts():
        lines.append(f"| [`{path.name}`]({path.stem}.md) | {title_and_text(path)[0]} |")
    lines += ["", "## The demo", "",
              "`make demo` (or `python -m yaad demo`) runs three of them in a row and saves a "
              "figure of the curves.", ""]
    recorded = recorded_output("demo")
    if recorded is not None:
        lines += [f"{recorded[0]}:", "", "```text", recorded[1], "```", ""]
    if (RECORDED / "yaad-demo.png").exists():
        lines += ["![The demo's figure](yaad-demo.png)", ""]
    return "\n".join(lines) + "\n"


def on_files(files, config):
    """Add the generated example pages to the site's files."""
    files.append(File.generated(config, "examples/index.md", content=index_page()))
    for path in scripts():
        files.append(File.generated(config, f"examples/{path.stem}.md",
                                    content=example_page(path)))
    return files
