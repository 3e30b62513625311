"""Generate docs/api.md, the API reference, from the docstrings of every public name.

Run ``python tools/gen_api.py`` after adding or changing a public function;
``tests/test_docs.py`` fails while the reference is out of date. ``--check`` only reports.
"""

from __future__ import annotations
import __future__

import argparse
import importlib
import inspect
import pathlib
import re
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "api.md"

# The documented namespaces, in the order of the reference. Optional ones are skipped
# while they do not exist.
NAMESPACES = ["yaad", "yaad.autograd", "yaad.func", "yaad.linalg", "yaad.nn",
              "yaad.nn.functional", "yaad.nn.init", "yaad.optim", "yaad.optimize",
              "yaad.testing"]

# Modules reachable as attributes of ``yaad`` that are implementation, not API.
INTERNAL = {"anomaly", "checkpoint", "compile", "compiled", "creation", "demo", "docs",
            "engine", "grad_mode", "gradients", "methods", "numpy_dispatch", "op", "ops",
            "serialization",
            "tensor"}


def namespaces() -> list[types.ModuleType]:
    """The documented modules that exist."""
    mods = []
    for name in NAMESPACES:
        try:
            mods.append(importlib.import_module(name))
        except ImportError:
            continue
    return mods


def undocumented_modules() -> list[str]:
    """Submodules of ``yaad`` that are neither documented namespaces nor internal."""
    import yaad

    out = []
    for name, value in vars(yaad).items():
        if (isinstance(value, types.ModuleType) and not name.startswith("_")
                and value.__name__.startswith("yaad.") and f"yaad.{name}" not in NAMESPACES
                and name not in INTERNAL):
            out.append(f"yaad.{name}")
    return out


def public_names(module: types.ModuleType) -> list[str]:
    """The public names of a namespace: its ``__all__``; without one, every name that is
    not private and is defined in yaad (imports such as ``np`` or ``Any`` are left out)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and not isinstance(v, __future__._Feature)
                 and (getattr(v, "__module__", None) or "").startswith("yaad")]
    return sorted((n for n in names if not isinstance(getattr(module, n, None),
                                                       types.ModuleType)), key=str.lower)


def signature(obj: object) -> str:
    """``(args)`` without annotations for a function or class, or '' when Python cannot
    tell."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    empty = inspect.Parameter.empty
    return str(sig.replace(parameters=[p.replace(annotation=empty)
                                       for p in sig.parameters.values()],
                           return_annotation=empty))


def body(doc: str) -> str:
    """A docstring as Markdown: its first paragraph as text, the rest (NumPy-style
    sections) verbatim in a text block."""
    first, _, rest = doc.strip().partition("\n\n")
    rest = rest.strip()
    return first + (f"\n\n```text\n{rest}\n```" if rest else "")


def summary(doc: str) -> str:
    """The first paragraph that is not a bare call signature (NumPy's ufunc docstrings
    start with one)."""
    paragraphs = [p for p in doc.strip().split("\n\n") if p.strip()]
    if len(paragraphs) > 1 and re.fullmatch(r"[\w.]+\(.*\)", paragraphs[0].strip(), re.S):
        paragraphs = paragraphs[1:]
    return paragraphs[0].replace("\n", " ").replace("|", "\\|") if paragraphs else ""


def borrowed_from(obj: object) -> str | None:
    """``'numpy.sin'`` when ``obj`` is a yaad op whose docstring is its NumPy or SciPy
    forward's (the reference then links there instead of copying it)."""
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is None or inspect.getdoc(wrapped) != inspect.getdoc(obj):
        return None
    name = getattr(wrapped, "__name__", "")
    import numpy
    import scipy.special

    for home in (numpy, scipy.special):
        if getattr(home, name, None) is wrapped:
            return f"{home.__name__}.{name}"
    module = getattr(wrapped, "__module__", None) or ""
    return None if module.startswith("yaad") else f"{module}.{name}".lstrip(".")


def render() -> str:
    """The whole reference, as Markdown."""
    lines = ["# API reference", "",
             "Generated from the docstrings by `python tools/gen_api.py`; do not edit by hand.",
             "Every public name of every namespace below is listed (a test checks it).", ""]
    mods = namespaces()
    lines += ["Namespaces: " + ", ".join(f"[`{m.__name__}`](#{m.__name__.replace('.', '')})"
                                         for m in mods), ""]
    for module in mods:
        lines += [f"## {module.__name__}", ""]
        doc = inspect.getdoc(module)
        if doc and module.__name__ != "yaad":
            lines += [summary(doc), ""]
        names = public_names(module)
        lines += ["| name | summary |", "|---|---|"]
        first_name: dict[int, str] = {}
        for name in names:
            obj = getattr(module, name)
            doc = inspect.getdoc(obj) or ""
            lines.append(f"| `{name}` | {summary(doc) if doc else ''} |")
        lines.append("")
        for name in names:
            obj = getattr(module, name)
            full = f"{module.__name__}.{name}"
            if not callable(obj):
                lines += [f"### `{full}`", "", f"Value: `{obj!r}`", ""]
                continue
            if id(obj) in first_name:
                lines += [f"### `{full}`", "", f"Alias of `{first_name[id(obj)]}`.", ""]
                continue
            first_name[id(obj)] = full
            kind = "class " if isinstance(obj, type) else ""
            source = borrowed_from(obj)
            text = (f"{summary(inspect.getdoc(obj))}\n\nThe differentiable version of "
                    f"`{source}`: same arguments and semantics (see its documentation)."
                    if source else body(inspect.getdoc(obj) or ""))
            sig = "" if source else signature(obj)  # NumPy's would list out=, where=, ...
            lines += [f"### `{kind}{full}{sig}`", "", text, ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 if docs/api.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run python tools/gen_api.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
