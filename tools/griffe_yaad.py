"""A griffe extension for the API reference (mkdocs.yml loads it): yaad's public names as
Python sees them at run time.

Much of yaad's namespace is made at run time, and griffe (which reads it for
mkdocstrings) misreads three kinds of names:

- ops made by ``yaad.op`` carry their forward as ``__wrapped__``, so griffe takes
  ``yaad.sin`` for an alias of ``numpy.sin`` and ``yaad.sum`` for one of the private
  forward ``yaad.ops.reductions._sum`` (with another docstring);
- a few functions share their name with the submodule that defines them
  (``yaad.compile``, ``yaad.checkpoint``, ``yaad.tensor``).

For every public name of every yaad module that griffe does not document as itself, the
extension puts in a function (or class) built from the run-time object: its signature,
and its docstring, or, when that docstring is NumPy's or SciPy's, its first line and a
link to the original. It also removes the other names of each module (imports, helpers
left out of ``__all__``), so that a page shows the API, and turns the Sphinx roles of the docstrings
(:func:`eigh`) into links to the reference entry they name, or into code.
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
from pathlib import Path
from typing import Any

from griffe import (
    Alias,
    AliasResolutionError,
    Class,
    CyclicAliasError,
    Docstring,
    Extension,
    Function,
    Module,
    Parameter,
    ParameterKind,
    Parameters,
)

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj):`~?([\w.]+)(?:\(\))?`")
HOMES = {"numpy": "https://numpy.org/doc/stable/reference/generated/{}.html",
         "scipy": "https://docs.scipy.org/doc/scipy/reference/generated/{}.html"}


def public_names(module: types.ModuleType) -> list[str]:
    """A module's public names: its ``__all__``; without one, the functions and classes
    whose names do not start with ``_`` and that are defined in yaad (imports such as
    ``np`` are left out). Submodules are not names of the API."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and callable(v)
                 and (getattr(v, "__module__", None) or "").startswith("yaad")]
    return sorted(n for n in names if not isinstance(getattr(module, n, None), types.ModuleType))


def borrowed_from(obj: Any) -> str | None:
    """``'numpy.sin'`` when ``obj`` is a yaad op whose docstring is its NumPy or SciPy
    forward's, or an object of another library that yaad re-exports."""
    if not (getattr(obj, "__module__", None) or "yaad").startswith("yaad"):
        wrapped = obj
    else:
        wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is None or inspect.getdoc(wrapped) != inspect.getdoc(obj):
        return None
    name = getattr(wrapped, "__name__", "")
    import numpy
    import scipy.special

    for home in (numpy, numpy.linalg, scipy.special, scipy.linalg):
        if getattr(home, name, None) is wrapped:
            return f"{home.__name__}.{name}"
    module = getattr(wrapped, "__module__", None) or ""
    return None if module.startswith("yaad") else f"{module}.{name}"


def _summary(doc: str) -> str:
    """The first paragraph that is not a bare call signature (NumPy's ufunc docstrings
    start with one)."""
    paragraphs = [p for p in doc.strip().split("\n\n") if p.strip()]
    if len(paragraphs) > 1 and "(" in paragraphs[0] and paragraphs[0].strip().endswith(")"):
        paragraphs = paragraphs[1:]
    return " ".join(paragraphs[0].split()) if paragraphs else ""


def _parameters(obj: Any, source: str | None) -> Parameters:
    if source is not None and hasattr(getattr(obj, "__wrapped__", None), "nin"):  # a ufunc
        nin = obj.__wrapped__.nin
        names = ["x"] if nin == 1 else [f"x{i + 1}" for i in range(nin)]
        return Parameters(*(Parameter(n, kind=ParameterKind.positional_only) for n in names))
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return Parameters(Parameter("args", kind=ParameterKind.var_positional),
                          Parameter("kwargs", kind=ParameterKind.var_keyword))
    params = []
    for p in sig.parameters.values():
        if source is not None and p.name == "out":  # yaad's results are new tensors
            continue
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        params.append(Parameter(p.name, kind=ParameterKind(p.kind.description), default=default))
    return Parameters(*params)


def _documented(member: Any, obj: Any) -> bool:
    """Whether griffe's member stands for the run-time object ``obj`` as it is."""
    if member is None or hasattr(obj, "__wrapped__") or borrowed_from(obj) is not None:
        return False  # missing, an op (griffe reads its forward), or another library's
    if isinstance(member, Alias):
        try:
            member = member.final_target
        except (AliasResolutionError, CyclicAliasError):
            return False
    if isinstance(member, Module):
        return isinstance(obj, types.ModuleType)
    return True


def _is_module(member: Any) -> bool:
    try:
        return member.is_module
    except (AliasResolutionError, CyclicAliasError):  # an alias to another library
        return False


def _rebuilt(name: str, obj: Any, parent: Module) -> Function | Class:
    source = borrowed_from(obj)
    doc = inspect.getdoc(obj) or ""
    if source is not None:
        root = source.split(".")[0]
        link = f"[`{source}`]({HOMES[root].format(source)})" if root in HOMES else f"`{source}`"
        if hasattr(obj, "__wrapped__"):
            doc = (f"{_summary(doc)}\n\nThe differentiable version of {link}: the same "
                   f"arguments and semantics (see its documentation); results are new tensors "
                   f"(no `out=`).")
        else:
            doc = f"{_summary(doc)}\n\n{link}, re-exported by yaad."
    kind = Class if isinstance(obj, type) else Function
    extra = {} if kind is Class else {"parameters": _parameters(obj, source)}
    new = kind(name, parent=parent, docstring=Docstring(doc, parser="numpy") if doc else None,
               **extra)
    if new.docstring is not None:
        new.docstring.parent = new
    return new


def documented_names() -> set[str]:
    """The full names that have an entry in the reference: the modules with a page in
    docs/reference/ and their public names."""
    names = set()
    for page in REFERENCE.glob("*.md"):
        module = importlib.import_module(page.stem)
        names |= {page.stem} | {f"{page.stem}.{n}" for n in public_names(module)}
    return names


def _with_links(text: str, module: str, documented: set[str]) -> str:
    def link(match: re.Match) -> str:
        name = match.group(1)
        for full in (name, f"{module}.{name}", f"yaad.{name}"):
            if full in documented:
                return f"[`{name}`][{full}]"
        return f"`{name}`"

    return ROLE.sub(link, text)


def _tree(obj: Any):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _tree(member)


class YaadRuntimeNames(Extension):
    """Document each public name of yaad's modules as the object it is at run time."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        if pkg.name != "yaad":
            return
        modules, todo = [], [pkg]
        while todo:
            modules.append(todo.pop())
            todo += [m for m in modules[-1].modules.values() if not m.is_alias]
        for module in modules:  # resolve the aliases before a submodule gives way to a name
            for member in module.members.values():
                if isinstance(member, Alias):
                    try:
                        _ = member.final_target
                    except (AliasResolutionError, CyclicAliasError):
                        pass
        for module in modules:
            try:
                runtime = importlib.import_module(module.path)
            except ImportError:
                continue
            names = public_names(runtime)
            for name in names:
                obj = getattr(runtime, name)
                if not _documented(module.members.get(name), obj) and callable(obj):
                    module.set_member(name, _rebuilt(name, obj, module))
            if (REFERENCE / f"{module.path}.md").exists():  # a page: the API, no more
                for name in [n for n, m in module.members.items() if n not in names
                             and not n.startswith("_") and not _is_module(m)]:
                    module.del_member(name)  # an import, or a helper left out of __all__
        documented = documented_names()
        for module in modules:
            for obj in _tree(module):
                if obj.docstring is not None:
                    obj.docstring.value = _with_links(obj.docstring.value, module.path,
                                                      documented)
