"""The release: the sdist and the wheel build without a warning, the wheel installs into a
fresh virtual environment (not editable, no network), and the examples run against it.

The fresh environment reaches this one's site-packages through a ``.pth`` line for
NumPy, SciPy and the examples' other imports; a path line in a ``.pth`` file does not
run the ``.pth`` files of that directory, so this environment's editable yaad stays out
(the test checks where ``yaad`` comes from).
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import inspect
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
import tomllib

import yaad

ROOT = Path(__file__).resolve().parents[2]

# A quick run of each example (a new script needs its line here).
QUICK = {
    "complex_descent.py": ["--steps", "20"],
    "custom_op.py": [],
    "dask_big_gradient.py": ["--n", "2e5", "--chunk", "1e5", "--check", "1e5", "--sites", "3",
                             "--bond", "4", "--quiet"],
    "demo_seed.py": ["--repeats", "2", "--number", "2"],
    "hessian.py": ["--atoms", "3"],
    "ipeps_heisenberg.py": ["--D", "2", "--chi", "8", "--steps", "5", "--no-check",
                            "--no-progress"],
    "ising_ground_state.py": ["--L", "6", "--steps", "100"],
    "mean_field.py": ["--L", "8"],
    "mlp_digits.py": ["--epochs", "1", "--hidden", "16"],
    "mps.py": ["--L", "6", "--D", "4", "--steps", "30"],
    "quantum_vmc.py": ["--L", "4", "--steps", "20", "--alpha", "1"],
    "quench.py": ["--L", "6", "--K", "2", "--iterations", "2"],
    "quimb_side_by_side.py": ["--L", "6", "--D", "4", "--steps", "10"],
    "tfim_eigsh.py": ["--L", "8"],
    "trg_specific_heat.py": ["--chi", "6", "--steps", "8", "--temps", "2.5", "--check", "3.0"],
}

RUN_EXAMPLES = """
import os, runpy, sys
import yaad
assert yaad.__file__.startswith(sys.prefix), yaad.__file__
for name, args in QUICK.items():
    sys.argv = [name, *args]
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    print("ran", name, flush=True)
"""


def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines()
            if "warning" in line.lower() and "Location 'file:" not in line]  # pip's config


def _build(tmp: Path, log: list | None = None, **env: str) -> Path:
    """The sdist and the wheel, built from a copy of the sources (``env``: the build's
    settings, see setup.py; ``log`` receives the build's output)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__",
                                                                             "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",
                                                            "YAAD_COMPILE")} | env
    run = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                          str(tmp / "dist"), str(src)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert not _warnings(run.stdout + run.stderr), _warnings(run.stdout + run.stderr)
    if log is not None:
        log.append(run.stdout + run.stderr)
    return tmp / "dist"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The pure-Python sdist and wheel (``YAAD_COMPILE=0``; the default compiles)."""
    return _build(tmp_path_factory.mktemp("release"), YAAD_COMPILE="0")


def test_build_makes_a_wheel_and_an_sdist_with_metadata(dist):
    wheels = list(dist.glob("*.whl"))
    sdists = list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    assert wheels[0].name == f"yaad_autodiff-{yaad.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheels[0]) as whl:
        names = whl.namelist()
        info = f"yaad_autodiff-{yaad.__version__}.dist-info"
        metadata = whl.read(f"{info}/METADATA").decode()
    assert "yaad/py.typed" in names and f"{info}/licenses/LICENSE" in names
    assert {"yaad/_tensor_methods.pyi", "yaad/__init__.pyi"} <= set(names)
    assert f"Version: {yaad.__version__}" in metadata
    assert "License-Expression: MIT" in metadata
    for dependency in ("numpy>=2", "scipy", "opt_einsum"):
        assert f"Requires-Dist: {dependency}" in metadata
    assert not any(n.startswith(("tests/", "benchmarks/", "examples/")) for n in names)


def _install(wheel: Path, where: Path) -> Path:
    """A fresh virtual environment with ``wheel`` installed (no network); it reaches this
    one's site-packages for NumPy and the rest. Returns its python."""
    env_dir = where / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                              "--no-deps", "--no-index", "--disable-pip-version-check",
                              "--force-reinstall", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    assert not _warnings(install.stdout + install.stderr), install.stdout + install.stderr
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True)
    (Path(site.stdout.strip()) / "_test_dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n")
    return python


def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_examples(dist, tmp_path):
    assert set(QUICK) == {p.name for p in (ROOT / "examples").glob("*.py")}, (
        "give each example a quick run in QUICK")
    python = _install(next(dist.glob("*.whl")), tmp_path)
    code = f"QUICK = {QUICK!r}\nEXAMPLES = {str(ROOT / 'examples')!r}\n" + RUN_EXAMPLES
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    run = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert [line for line in run.stdout.splitlines() if line.startswith("ran ")] == [
        f"ran {name}" for name in QUICK]
    _check_gradients(python, tmp_path, compiled=False)


# ---- the compiled build (setup.py: the default) ---------------------------------------------

def _compiled_modules() -> tuple[str, ...]:
    """setup.py's COMPILED: the modules a compiled build makes extension modules."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["COMPILED"]]
    return ast.literal_eval(value)


def _is_extension(module: object) -> bool:
    return str(getattr(module, "__file__", "")).endswith(tuple(importlib.machinery
                                                               .EXTENSION_SUFFIXES))


# Gradients of a few kinds of graph in the installed copy, against NumPy's formulas; the
# modules setup.py compiles are listed with what they are.
CHECK_GRADIENTS = """
import importlib, importlib.machinery, sys
import numpy as np
import yaad
assert yaad.__file__.startswith(sys.prefix), yaad.__file__
rng = np.random.default_rng(0)
a0, b0 = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
a, b = yaad.tensor(a0, requires_grad=True), yaad.tensor(b0, requires_grad=True)
yaad.trace(a @ b).backward()
np.testing.assert_allclose(a.grad, b0.T, rtol=1e-14)
np.testing.assert_allclose(b.grad, a0.T, rtol=1e-14)
x0 = rng.uniform(0.5, 1.5, 70_000)  # large: the backward's in-place temporaries
x = yaad.tensor(x0, requires_grad=True)
y = x
for _ in range(50):
    y = yaad.sin(y) * 0.5 + y / 3.0
loss = y.sum()
loss.backward(retain_graph=True)
first = x.grad.copy()
loss.backward()
g, v = np.ones_like(x0), [x0]
for _ in range(50):
    v.append(np.sin(v[-1]) * 0.5 + v[-1] / 3.0)
for t in reversed(v[:-1]):
    g = g * (np.cos(t) * 0.5 + 1 / 3.0)
np.testing.assert_allclose(first, g, rtol=1e-12)
np.testing.assert_allclose(x.grad, 2 * g, rtol=1e-12)
z = yaad.tensor(np.array([1.0 + 2.0j, -0.5j]), requires_grad=True)
(yaad.abs(z * z) ** 2).sum().backward()  # |z|^4: gradient 4 |z|^2 z (conjugate convention)
np.testing.assert_allclose(z.grad, 4 * np.abs(z.data) ** 2 * z.data, rtol=1e-14)
ext = tuple(importlib.machinery.EXTENSION_SUFFIXES)
for name in MODULES:
    print(name, importlib.import_module("yaad." + name).__file__.endswith(ext))
# graph.pxd's declarations were read: Node is the C type they declare, not a class
print("typed", not yaad.core.graph.Node.__flags__ & (1 << 9))  # (Py_TPFLAGS_HEAPTYPE)
"""


def _check_gradients(python: Path, where: Path, compiled: bool) -> None:
    modules = _compiled_modules()
    run = subprocess.run([str(python), "-c", f"MODULES = {modules!r}\n" + CHECK_GRADIENTS],
                         cwd=where, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.split() == [w for m in (*modules, "typed") for w in (m, str(compiled))]


def _python_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as whl:
        return {n for n in whl.namelist() if n.startswith("yaad/")}


def test_the_default_build_is_compiled_and_passes_the_refcount_tests(tmp_path_factory):
    dist = _build(tmp_path_factory.mktemp("compiled"))  # (no setting: what pip builds)
    (wheel,) = dist.glob("*.whl")
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert wheel.name.startswith(f"yaad_autodiff-{yaad.__version__}-{tag}-{tag}-"), wheel.name
    names = _python_files(wheel)
    for module in _compiled_modules():  # the extension module, and its source beside it
        path = module.replace(".", "/")
        assert {f"yaad/{path}{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES
                } & names, sorted(names)
        assert f"yaad/{path}.py" in names
    where = tmp_path_factory.mktemp("compiled-venv")
    python = _install(wheel, where)
    _check_gradients(python, where, compiled=True)
    # the decisions taken from reference counts, in the compiled build
    run = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(ROOT / "tests" / "core" / "test_refcounts.py"),
                          str(ROOT / "tests" / "core" / "test_engine.py")],
                         cwd=where, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


def test_without_a_c_compiler_the_build_falls_back_to_pure_python(tmp_path_factory):
    log: list = []
    dist = _build(tmp_path_factory.mktemp("no-compiler"), log, CC="false")
    (wheel,) = dist.glob("*.whl")
    # one message saying so, and a wheel tagged as pure Python
    assert log[0].count("yaad: could not compile the hot modules") == 1, log[0][-3000:]
    assert "installing the pure-Python build" in log[0]
    assert wheel.name == f"yaad_autodiff-{yaad.__version__}-py3-none-any.whl", wheel.name
    assert not [n for n in _python_files(wheel)
                if n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    where = tmp_path_factory.mktemp("no-compiler-venv")
    _check_gradients(_install(wheel, where), where, compiled=False)


def test_an_editable_install_stays_pure_python(tmp_path):
    """``pip install -e .`` compiles nothing: an extension module would shadow later edits
    of its ``.py`` file."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__",
                                                                             "*.egg-info"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True)
    (Path(site.stdout.strip()) / "_test_dependencies.pth").write_text(  # (setuptools, Cython)
        sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if k != "YAAD_COMPILE"}
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                              "--no-deps", "--no-index", "--no-build-isolation", "-v",
                              "--disable-pip-version-check", "-e", str(src)],
                             env=env, capture_output=True, text=True)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    assert "yaad: an editable (in-place) install stays pure Python" in install.stdout + (
        install.stderr)
    assert not [p for p in (src / "src").rglob("*") if p.suffix in (".so", ".pyd", ".c")]
    where = tmp_path / "run"
    where.mkdir()
    run = subprocess.run([str(python), "-c", "import yaad.core.graph as g; print(g.__file__)"],
                         cwd=where, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == str(src / "src" / "yaad" / "core" / "graph.py")


def test_the_build_under_test_is_the_one_asked_for():
    """``make test`` sets YAAD_EXPECT_COMPILED to the build it installed (1: compiled)."""
    kinds = {m: _is_extension(importlib.import_module(f"yaad.{m}")) for m in _compiled_modules()}
    assert len(set(kinds.values())) == 1, f"partly compiled: {kinds}"
    expected = os.environ.get("YAAD_EXPECT_COMPILED")
    if expected is not None:
        assert all(kinds.values()) == (expected == "1"), (expected, kinds)


def test_no_extension_module_sits_in_the_source_tree():
    # An extension built in place would shadow its .py in an editable install (an edit
    # would silently not run); setup.py never builds in place.
    assert not [p for p in (ROOT / "src").rglob("*") if p.suffix in (".so", ".pyd", ".c")]


# ---- complexity (make lint runs ruff's McCabe check, C901, at 25) ----

# The functions allowed to be more complex (pyproject.toml's per-file ignores of C901, one
# file each): the list only shrinks, as each is split.
TOO_COMPLEX = {("src/yaad/compiled/native_kernels.py", "execute"),
               ("src/yaad/compiled/program.py", "generate")}


def test_only_the_listed_functions_are_too_complex():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "C90" in config["select"] and config["mccabe"]["max-complexity"] == 25
    ignored = {f for f, codes in config["per-file-ignores"].items() if "C901" in codes}
    assert ignored == {f for f, _ in TOO_COMPLEX}, "per-file ignores of C901 != TOO_COMPLEX"
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "C901",
                          "--config", "lint.per-file-ignores = {}", "--output-format", "json",
                          "src"], cwd=ROOT, capture_output=True, text=True)
    found = {(str(Path(d["filename"]).relative_to(ROOT)), d["message"].split("`")[1])
             for d in json.loads(run.stdout)}
    assert not found - TOO_COMPLEX, f"too complex (split them): {sorted(found - TOO_COMPLEX)}"
    assert not TOO_COMPLEX - found, (f"simple enough now: remove {sorted(TOO_COMPLEX - found)} "
                                     f"from TOO_COMPLEX and pyproject.toml's per-file ignores")


# ---- type checking (make lint runs mypy; these checks keep its configuration honest) ----

# Public modules not yet strictly typed, each with its submodules (the list only shrinks).
NOT_YET_STRICT: set[str] = set()
# Internal modules checked strictly as well (the rules of the public ones are made of them;
# the core and the modes, each package with all its modules: a pattern ``package.*``).
STRICT_INTERNAL = {"yaad.linalg.helpers", "yaad.sparse.array_operator", "yaad.core.*",
                   "yaad.modes.*"}
# Where the reference pages' functions come from when mypy does not check it: the op
# library (yaad.ops) and the machinery of implicit functions.
UNCHECKED_HOMES = {"yaad.implicit"}
# mypy --strict, flag by flag (strict itself applies to every module or none).
STRICT_FLAGS = {"disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls",
                "disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs",
                "disallow_untyped_decorators", "warn_unused_ignores", "warn_return_any",
                "no_implicit_reexport", "strict_equality", "extra_checks"}


def _strict_override() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [o for o in config["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1 and config["ignore_errors"] and not strict[0]["ignore_errors"]
    return strict[0]


def _public_modules() -> set[str]:
    """The reference pages' modules, yaad.tensor, and the modules defining what the pages
    document."""
    pages = {p.stem for p in (ROOT / "docs" / "reference").glob("*.md")}
    modules = pages | {"yaad.core.tensor"}
    for page in sorted(pages):
        module = importlib.import_module(page)
        names = getattr(module, "__all__", None) or [n for n in vars(module)
                                                     if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            home = getattr(obj, "__module__", None) or ""
            if (not inspect.ismodule(obj) and home.startswith("yaad.")
                    and home not in UNCHECKED_HOMES and not home.startswith("yaad.ops.")):
                modules.add(home)
    return modules


def test_mypy_checks_the_public_modules_strictly():
    override = _strict_override()
    strict = set(override["module"])
    assert STRICT_FLAGS <= {flag for flag, value in override.items() if value is True}
    assert not strict & NOT_YET_STRICT, f"strict now: remove {strict & NOT_YET_STRICT} from "\
                                        "NOT_YET_STRICT"
    modules = _public_modules()
    stale = [n for n in NOT_YET_STRICT if not any(m == n or m.startswith(n + ".")
                                                  for m in modules)]
    assert not stale, f"not public: remove {stale} from NOT_YET_STRICT"
    public = {m for m in modules
              if not any(m == n or m.startswith(n + ".") for n in NOT_YET_STRICT)}
    packages = [p.removesuffix(".*") for p in strict if p.endswith(".*")]  # (mypy's patterns)

    def in_package(m: str) -> bool:
        return any(m == p or m.startswith(p + ".") for p in packages)

    named = {m for m in strict if not m.endswith(".*")}
    assert not {m for m in named if in_package(m)}, (
        f"[tool.mypy]: {sorted(m for m in named if in_package(m))} are in a package "
        f"pattern of the strict list already")
    missing = {m for m in public - named if not in_package(m)}
    assert not missing and named - STRICT_INTERNAL <= public, (
        f"[tool.mypy] in pyproject.toml: the strict list misses {sorted(missing)} "
        f"(public modules: annotate them, or list them in NOT_YET_STRICT here) and names "
        f"{sorted(named - public - STRICT_INTERNAL)}, not public")
    assert STRICT_INTERNAL <= strict


def test_the_typing_stub_declares_the_methods_installed_on_tensor():
    source = ast.parse((ROOT / "src" / "yaad" / "core" / "tensor.py").read_text())
    cls = next(n for n in source.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    defined = {n.name for n in ast.walk(cls) if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in ast.walk(cls) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    installed = {name for name, value in vars(yaad.Tensor).items() if name not in defined
                 and (callable(value) or isinstance(value, property))}
    stub = ast.parse((ROOT / "src" / "yaad" / "_tensor_methods.pyi").read_text())
    declared = {n.name for n in ast.walk(stub) if isinstance(n, ast.FunctionDef)}
    assert installed == declared, (
        f"src/yaad/_tensor_methods.pyi lacks {sorted(installed - declared)} and declares "
        f"{sorted(declared - installed)}: run python tools/generate_stubs.py")


def test_the_namespace_stub_names_what_yaad_exports():
    """``__init__.pyi`` re-exports each public name from the module that binds it (its
    ``from module import *`` lines are opaque to type checkers)."""
    stub = ast.parse((ROOT / "src" / "yaad" / "__init__.pyi").read_text())
    declared = {}
    for node in stub.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: re-export as itself"
                declared[alias.name] = f"yaad.{node.module}" if node.module else "yaad"
    pages = {p.stem for p in (ROOT / "docs" / "reference").glob("*.md")}
    public = {name for name, value in vars(yaad).items() if not name.startswith("_")
              and name != "annotations" and not (inspect.ismodule(value)
                                                 and f"yaad.{name}" not in pages)}
    assert set(declared) == public, (
        f"src/yaad/__init__.pyi lacks {sorted(public - set(declared))} and names "
        f"{sorted(set(declared) - public)}: run python tools/generate_stubs.py")
    for name, home in declared.items():
        assert getattr(importlib.import_module(home), name) is getattr(yaad, name), name


def test_install_hints_name_packages_an_index_has():
    """A hint such as ``pip install 'yaad[fused]'`` installs an unrelated package that is
    also imported as ``yaad`` (yaad's distribution, yaad-autodiff, may not be on the
    index): the hints yaad prints name the packages they need."""
    import re

    hints = []
    for path in (ROOT / "src" / "yaad").rglob("*.py"):
        for line in path.read_text().splitlines():
            hints += [(path.name, m) for m in re.findall(r"pip install ([^)\"]*)", line)]
    assert len(hints) >= 4, hints
    assert not [h for h in hints if "yaad" in h[1]], hints
