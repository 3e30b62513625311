"""Write yaad's typing stubs from what the package binds: ``src/yaad/__init__.pyi`` (the
namespace) and ``src/yaad/_tensor_methods.pyi`` (the methods ``Tensor`` gets at import).

    python tools/generate_stubs.py          # rewrite the stubs
    python tools/generate_stubs.py --check  # exit 1, naming the files, where one differs

``yaad/__init__.py`` re-exports most of its names with ``from module import *`` from modules
whose ``__all__`` is computed at import (``exported(globals())``: every op the module
declares), which type checkers cannot follow; the stub re-exports each public name from the
module that binds it in ``__init__.py``. ``yaad.bindings.tensor_methods.install`` binds
operators and methods to ``Tensor`` at import; the second stub declares each: a function
of the namespace with its parameters (typed ``Any``, the tensor as ``self``) returning a
tensor, any other with its own annotations.

Run it after adding an op, a public function, a module or a Tensor method;
tests/project/test_stubs.py fails while a checked-in stub differs from what this writes.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import importlib
import inspect
import re
import sys
import typing
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "yaad"

NAMESPACE_DOC = '''"""The names of the ``yaad`` namespace, for type checkers (written by
tools/generate_stubs.py from __init__.py's imports; do not edit by hand).

``__init__.py`` re-exports most names with ``from module import *`` from modules whose
``__all__`` is computed at import, which type checkers cannot follow.
"""
'''


def _yaad() -> Any:
    """The package: the one imported already (the tests'), else this checkout's."""
    if "yaad" not in sys.modules and str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))  # (before an installed copy, maybe stale)
    return importlib.import_module("yaad")


def _bindings(source: str) -> dict[str, str]:
    """Each name the imports of ``__init__.py`` bind, and the module (relative to ``yaad``:
    ``""`` for the package itself, ``"ops.shape"``...) it is imported from; the last import
    of a name wins, as when the module runs. ``from m import *`` binds ``m.__all__``."""
    bound: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ImportFrom) or node.level != 1:
            continue  # (``from __future__ import annotations``)
        home = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                module = importlib.import_module(f"yaad.{home}")
                for name in module.__all__:
                    bound[name] = home
            else:
                bound[alias.asname or alias.name] = home
    return {name: home for name, home in bound.items() if not name.startswith("_")}


def _source(module: str) -> Path:
    """The file of ``yaad.<module>`` (``""``: the package)."""
    path = PACKAGE.joinpath(*module.split(".")) if module else PACKAGE
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@functools.cache
def _module_statements(module: str) -> tuple[ast.stmt, ...]:
    """The top-level statements of ``yaad.<module>`` (parsed once)."""
    return tuple(_statements(ast.parse(_source(module).read_text()).body))


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A module's top-level statements, with those inside ``if`` and ``try`` blocks."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            out += _statements(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            out += _statements(node.body + node.orelse + node.finalbody)
        else:
            out.append(node)
    return out


def _target_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def defining_module(name: str, module: str) -> str:
    """The module that defines ``name`` (a ``def``, a class or an assignment), found as a
    type checker finds it: from ``module`` along its ``from ... import`` statements. A
    stub that imports a name from a module that only imports it in turn is an implicit
    re-export, which ``mypy --strict`` refuses (``no_implicit_reexport``)."""
    seen = set()
    while module not in seen:
        seen.add(module)
        follow = None
        for node in _module_statements(module):
            if name in _target_names(node):
                return module  # (the last binding of the name wins; a definition ends it)
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = module.split(".") if module else []
                if _source(module).name != "__init__.py":
                    parts = parts[:-1]  # (relative to the module's package)
                base = parts[:len(parts) - node.level + 1] if node.level > 1 else parts
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        follow = target
        if follow is None:
            return module
        module = follow
    return module


def _natural(text: str) -> tuple[Any, ...]:
    """The order of isort and ruff: case-insensitive, numbers by value (int8 < int16)."""
    return tuple(int(part) if part.isdigit() else part
                 for part in re.split(r"(\d+)", text.lower()))


def _member_kind(name: str) -> int:
    """ruff's order of the names imported from one module: constants, classes, the rest."""
    if name.isupper() and len(name) > 1:
        return 0
    return 1 if name[:1].isupper() else 2


def namespace_stub() -> str:
    """The text of ``src/yaad/__init__.pyi``."""
    yaad = _yaad()
    bound = _bindings((PACKAGE / "__init__.py").read_text())
    for name in yaad.__all__:  # (a public module bound as a side effect: yaad.serialization)
        if name not in bound:
            if not inspect.ismodule(getattr(yaad, name)):
                raise RuntimeError(f"yaad.{name}: not bound by an import in __init__.py")
            bound[name] = ""
    for name, home in bound.items():
        if home:
            bound[name] = defining_module(name, home)
    lines = [NAMESPACE_DOC]
    order = sorted(bound.items(), key=lambda item: (item[1] != "", _natural(item[1]),
                                                    _member_kind(item[0]), _natural(item[0])))
    for name, home in order:
        lines.append(f"from .{home} import {name} as {name}")
    lines += ["", "__version__: str", ""]
    return "\n".join(lines)


METHODS_DOC = '''"""The Tensor methods and operators that ``yaad.bindings.tensor_methods.install``
binds at import time (written by tools/generate_stubs.py; do not edit by hand).

Read by type checkers only (``yaad.core.tensor`` names this class as Tensor's base under
``TYPE_CHECKING``; at run time the base is ``object``). A method that is a function of the
``yaad`` namespace takes that function's arguments (see its docstring), the tensor first.
"""
'''

# Methods whose stub differs from their function's: NumPy's comparisons are elementwise.
_COMMENTS = {"__eq__": "  # type: ignore[override]  # elementwise, as NumPy",
             "__ne__": "  # type: ignore[override]  # elementwise, as NumPy"}
LINE = 100  # (ruff's line length)


def _class_names(path: Path, cls: str) -> set[str]:
    """The functions and attributes the class ``cls`` defines in the file ``path``."""
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    names = {n.name for n in ast.walk(node) if isinstance(n, ast.FunctionDef)}
    return names | {t.id for n in ast.walk(node) if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}


def installed_methods(yaad: Any) -> dict[str, Any]:
    """What ``install`` binds on ``Tensor``: the callables and properties of the class that
    core/tensor.py does not define."""
    defined = _class_names(PACKAGE / "core" / "tensor.py", "Tensor")
    return {name: value for name, value in vars(yaad.Tensor).items()
            if name not in defined and (callable(value) or isinstance(value, property))}


class _Imports:
    """The names a stub's annotations use, and where each comes from."""

    def __init__(self) -> None:
        self.typing: set[str] = set()
        self.local: dict[str, set[str]] = {}

    def type_of(self, text: Any, fn: Any) -> str:
        """The annotation ``text`` of a parameter or result of ``fn`` as the stub writes
        it, its names imported; ``Any`` where a name cannot be found at run time (one
        imported only for type checkers)."""
        if text is inspect.Parameter.empty:
            return self.any()
        if not isinstance(text, str):
            text = inspect.formatannotation(text)
        scope = {**vars(builtins), **getattr(fn, "__globals__", {})}
        found: list[tuple[str, Any]] = []
        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.Name):
                if node.id not in scope:
                    return self.any()
                found.append((node.id, scope[node.id]))
        for name, obj in found:
            if getattr(obj, "__module__", None) == "builtins" or obj is None:
                continue
            if obj is getattr(typing, name, None):
                self.typing.add(name)
            elif (getattr(obj, "__module__", "") or "").startswith("yaad."):
                self.local.setdefault(obj.__module__.removeprefix("yaad"), set()).add(name)
            else:
                return self.any()
        return text

    def any(self) -> str:
        self.typing.add("Any")
        return "Any"

    def lines(self) -> list[str]:
        out = []
        if self.typing:
            names = sorted(self.typing, key=lambda n: (_member_kind(n), _natural(n)))
            out += [f"from typing import {', '.join(names)}", ""]
        for module in sorted(self.local, key=_natural):
            names = sorted(self.local[module], key=lambda n: (_member_kind(n), _natural(n)))
            out.append(f"from {module} import {', '.join(names)}")
        return out


def _parameters(fn: Any, imports: _Imports, method: bool, of_namespace: bool) -> list[str]:
    """The parameters of ``fn`` as the stub writes them: ``self`` first for a method, then
    each typed (``Any`` for a function of the namespace: its arguments may be tensors,
    arrays or numbers), a default written ``...``, with the ``/`` and ``*`` markers. An op
    whose forward is a NumPy ufunc takes its inputs only (not ``out=``, ``where=``...)."""
    params = list(inspect.signature(fn).parameters.values())
    forward = getattr(fn, "__wrapped__", None)
    if isinstance(forward, np.ufunc):
        params = params[:forward.nin]
    out = []
    if method:
        out.append("self")
        params = params[1:]
    star = False
    positional = [p.kind is inspect.Parameter.POSITIONAL_ONLY for p in params]
    for k, p in enumerate(params):
        kind = p.kind
        typed = imports.any() if of_namespace else imports.type_of(p.annotation, fn)
        if kind is inspect.Parameter.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out.append(f"*{p.name}: {typed}")
            star = True
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.append(f"**{p.name}: {typed}")
        else:
            default = "" if p.default is inspect.Parameter.empty else " = ..."
            out.append(f"{p.name}: {typed}{default}")
        if positional[k] and not any(positional[k + 1:]):
            out.append("/")
    return out


def _def(name: str, params: list[str], result: str, decorator: str = "") -> list[str]:
    """A stub's ``def``, on one line where it fits, else its parameters on one line or one
    a line (as ruff format writes it)."""
    comment = _COMMENTS.get(name, "")
    head = f"    {decorator}\n" if decorator else ""
    one = f"    def {name}({', '.join(params)}) -> {result}: ...{comment}"
    if len(one) <= LINE:
        return (head + one).split("\n")
    inner = f"        {', '.join(params)}"
    if len(inner) <= LINE:
        lines = [f"    def {name}(", inner, f"    ) -> {result}: ...{comment}"]
    else:
        lines = [f"    def {name}(", *[f"        {p}," for p in params],
                 f"    ) -> {result}: ...{comment}"]
    return ([head.rstrip("\n")] if head else []) + lines


def methods_stub() -> str:
    """The text of ``src/yaad/_tensor_methods.pyi``."""
    yaad = _yaad()
    namespace = {id(v) for v in vars(yaad).values() if callable(v)}
    imports = _Imports()
    imports.local[".core.tensor"] = {"Tensor"}
    body = []
    for name, value in sorted(installed_methods(yaad).items(), key=lambda i: _natural(i[0])):
        decorator = ""
        fn = value
        if isinstance(value, property):
            decorator, fn = "@property", value.fget
        elif isinstance(value, staticmethod):
            decorator, fn = "@staticmethod", value.__func__
        of_namespace = id(fn) in namespace
        sig = inspect.signature(fn)
        params = _parameters(fn, imports, decorator != "@staticmethod", of_namespace)
        if of_namespace:
            spec = getattr(fn, "op", None)
            several = (spec.nout != 1 if spec is not None else
                       "tuple" in str(sig.return_annotation))
            result = "tuple[Tensor, ...]" if several else "Tensor"
        else:
            if sig.return_annotation is inspect.Signature.empty:
                raise RuntimeError(f"Tensor.{name} ({fn.__qualname__}): annotate its result, "
                                   f"which its stub declares")
            result = imports.type_of(sig.return_annotation, fn)
        body += _def(name, params, result, decorator)
    return "\n".join([METHODS_DOC, *imports.lines(), "", "class TensorMethods:", *body, ""])


STUBS = {"__init__.pyi": namespace_stub, "_tensor_methods.pyi": methods_stub}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 where a checked-in stub differs")
    args = parser.parse_args(argv)
    stale = []
    for name, make in STUBS.items():
        path = PACKAGE / name
        text = make()
        if path.read_text() != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(text)
    verb = "differ from what tools/generate_stubs.py writes" if args.check else "rewritten"
    for path in stale:
        print(f"{path}: {verb}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
