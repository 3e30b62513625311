"""yaad's import graph has layers: no import circles, no import of the package ``__init__``.

The graph is read from the source with ``ast`` (imports inside functions included,
relative imports resolved), so an import deferred into a function to dodge a circle at
load time still counts as an edge; an import under ``if TYPE_CHECKING:`` never runs and
does not count. The circles that exist today are listed in
``KNOWN_CIRCLES``, each with its reason; the list only shrinks: a new circle fails, and
a listed circle that is gone fails too until its entry is removed.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

PACKAGE = "yaad"
SOURCE = Path(__file__).resolve().parents[2] / "src" / PACKAGE


def module_name(path: Path, source: Path = SOURCE) -> str:
    """The dotted name of the module in ``path`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(source.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(source: Path) -> dict[str, Path]:
    return {module_name(p, source): p for p in sorted(source.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute name of a relative import ``from <level dots><module> import ...``."""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def import_graph(source: Path = SOURCE) -> tuple[dict[str, set[str]], list[str]]:
    """Edges between the modules of the package in ``source``, and imports of its ``__init__``.

    Returns
    -------
    graph : dict
        ``graph[a]`` is the set of yaad modules that module ``a`` imports (anywhere in
        its source). ``from pkg import name`` counts as an import of ``pkg.name`` when
        that is a module, else of ``pkg``.
    package_imports : list of str
        ``"module:line"`` for each import, from inside yaad, of the package ``yaad``
        itself (``import yaad``, ``from yaad import x`` with ``x`` not a submodule,
        ``from .. import x`` resolving to it).
    """
    package = source.name
    modules = _modules(source)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    package_imports: list[str] = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                       for statement in block.body for n in ast.walk(statement)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = _resolve(name, is_package, node.level, node.module)
                else:
                    base = node.module or ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target != package and not target.startswith(package + "."):
                    continue
                while target not in modules:  # `import yaad.ops.x.y` of a non-module
                    target = target.rpartition(".")[0]
                entry = f"{name}:{node.lineno}"
                if target == package and name != package and entry not in package_imports:
                    package_imports.append(entry)
                if target != name:
                    graph[name].add(target)
    return graph, package_imports


def strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The import circles: strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the graph is small
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def circles_without_package() -> list[frozenset[str]]:
    """The circles among yaad's submodules (edges into the package ``__init__`` dropped:
    those are reported on their own, and the ``__init__`` imports everything)."""
    graph, _ = import_graph()
    graph = {a: {b for b in bs if b != PACKAGE} for a, bs in graph.items() if a != PACKAGE}
    return strongly_connected(graph)


# Imports that close an import circle today, as (importer, imported): reason. Removing
# all of them leaves the graph without circles. The list only shrinks.
KNOWN_CIRCLE_EDGES: dict[tuple[str, str], str] = {}

# Modules that import the package ``yaad`` itself (its ``__init__``) from inside: each
# is a hidden dependency on everything. The list only shrinks.
KNOWN_PACKAGE_IMPORTS: dict[str, str] = {
    "yaad.__main__": "`python -m yaad` runs the demo through the public API",
    "yaad.demo": "the demo is written against the public API",
}


def test_no_new_import_circle():
    graph, _ = import_graph()
    for importer, imported in KNOWN_CIRCLE_EDGES:
        graph[importer].discard(imported)
    graph = {a: {b for b in bs if b != PACKAGE} for a, bs in graph.items() if a != PACKAGE}
    circles = [sorted(c) for c in strongly_connected(graph)]
    assert circles == [], (
        f"import circles in yaad: {circles}; import from a lower layer only (see "
        "docs/architecture.md), or pass what the lower module needs down to it"
    )


def test_allowed_circle_edges_still_exist():
    graph, _ = import_graph()
    gone = [edge for edge in KNOWN_CIRCLE_EDGES if edge[1] not in graph[edge[0]]]
    assert gone == [], f"these imports are gone: remove them from KNOWN_CIRCLE_EDGES: {gone}"


def test_no_new_import_of_the_package():
    _, package_imports = import_graph()
    importers = {entry.partition(":")[0] for entry in package_imports}
    new = sorted(e for e in package_imports if e.partition(":")[0] not in KNOWN_PACKAGE_IMPORTS)
    assert new == [], (
        f"imports of the package `yaad` from inside it: {new}; import the module that "
        "defines the name instead"
    )
    gone = sorted(set(KNOWN_PACKAGE_IMPORTS) - importers)
    assert gone == [], f"remove from KNOWN_PACKAGE_IMPORTS: {gone}"


def test_no_module_imports_its_own_subpackage():
    # A module inside yaad.ops (or linalg, compiled, ...) that imports its package's
    # ``__init__`` depends on whatever that ``__init__`` gathers: define the shared name in
    # a module of its own and import that.
    graph, _ = import_graph()
    packages = {name for name, path in _modules(SOURCE).items()
                if path.name == "__init__.py" and name != PACKAGE}
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if b in packages and a.startswith(b + "."))
    assert upward == [], f"modules importing their own package's __init__: {upward}"


def test_graph_reader_sees_every_form_of_import(tmp_path):
    """The reader itself, on a made-up package: relative levels, imports inside
    functions, ``from .. import x`` of a name and of a submodule, circles."""
    root = tmp_path / "pkg"
    files = {
        "__init__.py": "from .a import f\n",
        "a.py": "def f():\n    from .sub import b\n",
        "sub/__init__.py": "",
        "sub/b.py": "from .. import f\nfrom ..a import f as g\n",
        "sub/c.py": "import pkg.a\nfrom . import b\n",
        "d.py": "from pkg.sub.b import x\n",
        "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    graph, package_imports = import_graph(root)
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.sub.b"},
        "pkg.sub": set(),
        "pkg.sub.b": {"pkg", "pkg.a"},
        "pkg.sub.c": {"pkg.a", "pkg.sub.b"},
        "pkg.d": {"pkg.sub.b"},
        "pkg.e": set(),
    }
    assert package_imports == ["pkg.sub.b:1"]
    assert strongly_connected(graph) == [frozenset({"pkg", "pkg.a", "pkg.sub.b"})]
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# ---- user code imports only public modules ----------------------------------------------

ROOT = SOURCE.parent.parent
# The public modules: those with a reference page, plus yaad.demo (the examples' shared
# data and Hamiltonians).
PUBLIC = {p.stem for p in (ROOT / "docs" / "reference").glob("*.md")} | {"yaad.demo"}
INTERNAL_NAMES = sorted({name.partition(".")[2] for name in _modules(SOURCE)} - {
    name.partition(".")[2] for name in PUBLIC} - {""})


def _user_code() -> list[tuple[str, str]]:
    """(where, source) for each example script and each python block of the docs."""
    examples = sorted((ROOT / "examples").glob("*.py"))
    found = [(str(p.relative_to(ROOT)), p.read_text()) for p in examples]
    block = re.compile(r"^```(python|pycon)\n(.*?)^```", re.MULTILINE | re.DOTALL)
    for page in sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]:
        for k, match in enumerate(block.finditer(page.read_text())):
            code = match.group(2)
            if match.group(1) == "pycon":
                code = "\n".join(line[4:] for line in code.splitlines()
                                 if line.startswith((">>> ", "... ")))
            found.append((f"{page.relative_to(ROOT)} block {k}", code))
    return found


def internal_uses(source: str) -> list[str]:
    """Internal yaad modules that ``source`` imports or reaches as ``yaad.<module>.``."""
    used = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        used += [n for n in names if n.startswith(PACKAGE + ".") and (
            n.partition(".")[2].split(".")[0].startswith("_")
            or (n in {f"yaad.{m}" for m in INTERNAL_NAMES}))]
    for match in re.finditer(r"\byaad\.([\w.]+)\.", source):
        head = match.group(1)
        if head.startswith("_") or head in INTERNAL_NAMES:
            used.append(f"yaad.{head}")
    return sorted(set(used))


def test_examples_and_docs_use_only_public_modules():
    bad = [(where, used) for where, code in _user_code() if (used := internal_uses(code))]
    assert bad == [], (
        f"user code reaching yaad's internal modules: {bad}; use the public API "
        "(to write an operator: yaad.extend)")


def test_internal_use_is_detected():
    assert internal_uses("from yaad.core.op import op") == ["yaad.core", "yaad.core.op"]
    assert internal_uses("import yaad.ops.shape") == ["yaad.ops", "yaad.ops.shape"]
    assert internal_uses("from yaad import _methods") == ["yaad._methods"]
    assert internal_uses("x = yaad.core.engine.run_backward") == ["yaad.core.engine"]
    assert internal_uses("from yaad.extend import op\nyaad.op(f)\nyaad.tensor(1.0)") == []
    assert internal_uses("from yaad import func, nn\nyaad.linalg.inv(a)") == []
    assert "core.tensor" in INTERNAL_NAMES and "extend" not in INTERNAL_NAMES


# ---- the layers (docs/architecture.md draws them) ---------------------------------------

# Bottom first. A module imports only from its own layer or those below it; ``name.*``
# is every module under ``yaad.name``.
LAYERS: list[tuple[str, str]] = [
    ("graph", "core._pure_cython core.backend core.errors core.grad_mode core.graph "
     "core.frames core.versions core.edges"),
    ("tensor", "core.presentation core.tensor core.views core.hooks core.lazy"),
    ("op declaration", "modes.registry core.op core.arguments core.levels "
                       "modes.batched_values"),
    ("ops", "ops ops.* linalg linalg.* creation fft function"),
    ("bookkeeping", "core.higher_order core.gradients core.targets"),
    ("engine", "core.engine"),
    ("modes", "modes.forward modes.batch modes.anomaly modes.checkpoint modes.substitute "
     "compile compiled compiled.*"),
    ("transforms", "autograd func implicit"),
    ("library", "stats signal integrate ode ode.* optimize sparse sparse.* nn nn.* optim optim.* "
     "demo serialization testing extend array_api array_api.* bindings.tensor_methods "
     "bindings.numpy_protocols backend anomaly interop"),
    ("package", "__init__ __main__ core modes bindings"),
]

# Imports from a lower layer to a higher one that close no circle. The list only shrinks.
KNOWN_UPWARD_IMPORTS: dict[tuple[str, str], str] = {}


def layer_of() -> dict[str, int]:
    """The layer index (0 = bottom) of each yaad module, from ``LAYERS``."""
    modules = sorted(_modules(SOURCE))
    found: dict[str, int] = {}
    for index, (_, names) in enumerate(LAYERS):
        for name in names.split():
            if name.endswith(".*"):
                prefix = f"{PACKAGE}.{name[:-2]}."
                matched = [m for m in modules if m.startswith(prefix)]
            else:
                matched = [PACKAGE if name == "__init__" else f"{PACKAGE}.{name}"]
            for module in matched:
                assert module in modules and module not in found, module
                found[module] = index
    return found


def render_layers() -> str:
    """The layers as a text picture, top first (the block in docs/architecture.md)."""
    lines = []
    width = max(len(name) for name, _ in LAYERS)
    for k, (name, modules) in enumerate(reversed(LAYERS)):
        if k:
            lines.append(" " * (width + 2) + "│")
        rows = textwrap.wrap(modules, 60)
        lines.append(f"{name:>{width}}  {rows[0]}")
        lines += [" " * (width + 2) + row for row in rows[1:]]
    return "\n".join(lines)


def test_every_module_has_a_layer():
    missing = sorted(set(_modules(SOURCE)) - set(layer_of()))
    assert missing == [], (
        f"modules without a layer: {missing}; add each to LAYERS in "
        "tests/project/test_architecture.py (the lowest layer whose modules it may import) and "
        "paste the new picture into docs/architecture.md")


def test_imports_go_down_the_layers():
    graph, _ = import_graph()
    layer = layer_of()
    up = sorted((a, b) for a, bs in graph.items() for b in bs
                if b != PACKAGE and a in layer and b in layer and layer[b] > layer[a])
    allowed = set(KNOWN_UPWARD_IMPORTS) | set(KNOWN_CIRCLE_EDGES)
    new = [edge for edge in up if edge not in allowed]
    assert new == [], (f"imports from a lower layer to a higher one: {new}; see "
                       "docs/architecture.md")
    gone = [edge for edge in KNOWN_UPWARD_IMPORTS if edge not in up]
    assert gone == [], f"remove from KNOWN_UPWARD_IMPORTS: {gone}"


def test_architecture_page_draws_these_layers():
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert f"```text\n{render_layers()}\n```" in page, (
        "docs/architecture.md's picture of the layers differs from LAYERS in "
        f"tests/project/test_architecture.py; paste this:\n{render_layers()}")


# The core's functions stay short enough to read: under CORE_MAX_LINES lines each. The
# longer ones today are listed with their length; the list only shrinks (and a listed
# function may not grow).
CORE_MAX_LINES = 100
LONG_CORE_FUNCTIONS: dict[str, int] = {}


def core_function_lengths() -> dict[str, int]:
    """``"core/file.py:function"`` -> its length in lines, for every function in core/."""
    lengths = {}
    for path in sorted((SOURCE / "core").glob("*.py")):
        rel = path.relative_to(SOURCE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths[f"{rel}:{node.name}"] = node.end_lineno - node.lineno + 1
    return lengths


def test_core_functions_stay_short():
    """What a newcomer reads to follow one backward() (docs/architecture.md, "The core in
    numbers"): no function of the core over CORE_MAX_LINES lines but the listed ones."""
    lengths = core_function_lengths()
    long = {f: n for f, n in lengths.items() if n >= CORE_MAX_LINES}
    new = {f: n for f, n in long.items() if n > LONG_CORE_FUNCTIONS.get(f, CORE_MAX_LINES - 1)}
    assert not new, (f"core functions of {CORE_MAX_LINES} lines or more: {new}; split them "
                     f"by phase (see core/engine.py's _execute)")
    gone = {f: n for f, n in LONG_CORE_FUNCTIONS.items() if lengths.get(f, 0) < n}
    assert not gone, f"shorter now: lower or remove their entries in LONG_CORE_FUNCTIONS: {gone}"


# Test folders that mirror no source folder: shared helpers, stored oracle values,
# PyTorch's mechanics run side by side, and the checks of the project as a whole.
TEST_FOLDERS_OF_NO_SOURCE = {"support", "op_cases", "data", "conformance", "project"}


def test_test_tree_mirrors_the_source():
    """Each folder of tests/ is a subpackage of yaad (or one of the few listed above), and
    each test file at the top of tests/ tests a public module of the top of yaad, by name
    or by the subject its docstring names."""
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    packages = {p.name for p in SOURCE.iterdir() if (p / "__init__.py").exists()}
    assert folders - TEST_FOLDERS_OF_NO_SOURCE <= packages, (
        f"tests/ folders that mirror no package of src/yaad: "
        f"{sorted(folders - TEST_FOLDERS_OF_NO_SOURCE - packages)}")
    for folder in folders - {"data"}:
        assert (tests / folder / "__init__.py").exists(), (
            f"tests/{folder}/ needs an __init__.py: the tests are the package `tests`, so a "
            f"folder named like a library (tests/sparse) never shadows it")
    for path in (tests / folder for folder in folders & packages):
        assert list(path.glob("test_*.py")), f"{path} holds no tests"
