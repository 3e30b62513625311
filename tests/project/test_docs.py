"""The documentation: the site builds with ``mkdocs build --strict`` and its reference
pages reach every public name; every code block of README.md and docs/ runs (Python and
``pycon`` blocks are executed and their output compared, shell commands name targets,
extras, files and options that exist); the names on the "coming from" pages exist in
both libraries.

Code blocks, by their fence's language:

- ``python``: run, in order, in one namespace per page (an ``assert`` states a result);
  a block whose first line is ``# illustrative: <why>`` is not run (keep these rare);
- ``pycon``: ``>>>`` examples, run by doctest in the same namespace, output compared;
- ``sh``: commands: ``make`` targets, ``pip install`` extras, the scripts and their
  ``--options`` must exist;
- ``text``: output of a run that the page names, not run.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import yaad

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LANGUAGES = {"python", "pycon", "sh", "text"}
ILLUSTRATIVE = "# illustrative:"
MAX_ILLUSTRATIVE = 3
sys.path.insert(0, str(ROOT / "tools"))
from griffe_yaad import borrowed_from, public_names  # noqa: E402

# Modules reachable from a documented namespace that are implementation, not API; the
# packages of the lower layers (core/, modes/, bindings/) are internal whole.
INTERNAL_PACKAGES = ("yaad.core", "yaad.modes", "yaad.bindings", "yaad.ode")
INTERNAL = {"yaad.compile", "yaad.compiled", "yaad.creation", "yaad.demo", "yaad.implicit",
            "yaad.linalg.helpers", "yaad.linalg.matrix_functions", "yaad.linalg.norms",
            "yaad.linalg.products", "yaad.linalg.rank", "yaad.linalg.spectral",
            "yaad.linalg.systems", "yaad.function", "yaad.ops", "yaad.nn.layers",
            "yaad.nn.module", "yaad.nn.stateless", "yaad.sparse.tensor",
            "yaad.sparse.array_operator",
            "yaad.optim.lr_scheduler", "yaad.optim.optimizer", "yaad.ode",
            *INTERNAL_PACKAGES}


def is_internal(module: str) -> bool:
    """Whether a module is implementation (listed, or inside an internal package)."""
    return module in INTERNAL or module.startswith(tuple(p + "." for p in INTERNAL_PACKAGES))


def code_blocks(path: Path) -> list[tuple[str, int, str]]:
    """(language, line number, code) of each fenced block of a Markdown file."""
    out = []
    for m in re.finditer(r"^```(\S*)[^\n]*\n(.*?)^```", path.read_text(), re.S | re.M):
        out.append((m.group(1), path.read_text()[:m.start()].count("\n") + 1, m.group(2)))
    return out


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---- the site -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stderr[-6000:]}"
    return out


def reference_modules() -> list[str]:
    """The modules with a reference page, docs/reference/<module>.md."""
    return sorted(p.stem for p in (DOCS / "reference").glob("*.md"))


def test_site_builds_strict(site):
    assert (site / "index.html").exists() and (site / "complex" / "index.html").exists()
    assert (site / "examples" / "mps" / "index.html").exists()


def test_reference_pages_reach_every_public_name(site):
    missing = []
    for name in reference_modules():
        html = (site / "reference" / name / "index.html").read_text()
        ids = set(re.findall(r'id="([\w.]+)"', html))
        module = importlib.import_module(name)
        missing += [f"{name}.{n}" for n in public_names(module) if f"{name}.{n}" not in ids]
    assert not missing, f"public names missing from the site's reference pages: {missing}"


def test_reference_page_shows_a_borrowed_op_and_a_class(site):
    html = (site / "reference" / "yaad" / "index.html").read_text()
    assert "The differentiable version of" in html and "numpy.sin.html" in html
    nn = (site / "reference" / "yaad.nn" / "index.html").read_text()
    assert 'id="yaad.nn.Linear"' in nn and "in_features" in nn


def test_every_public_module_has_a_reference_page():
    documented = set(reference_modules())
    assert {"yaad", "yaad.linalg", "yaad.func", "yaad.nn"} <= documented
    for name in documented:
        assert (DOCS / "reference" / f"{name}.md").read_text().count(f"::: {name}\n") == 1
    unclassified = []
    for name in documented:
        for attr, value in vars(importlib.import_module(name)).items():
            if (isinstance(value, types.ModuleType) and not attr.startswith("_")
                    and value.__name__.startswith("yaad.")
                    and value.__name__ not in documented and not is_internal(value.__name__)):
                unclassified.append(value.__name__)
    assert not unclassified, (
        f"public modules without a reference page: {sorted(set(unclassified))}. Add "
        f"docs/reference/<module>.md with '::: <module>' and a line in mkdocs.yml's nav "
        f"(docs/writing-docs.md), or list the module in INTERNAL here")


def test_every_public_name_has_a_docstring():
    missing = []
    for name in reference_modules():
        module = importlib.import_module(name)
        for attr in public_names(module):
            obj = getattr(module, attr)
            if callable(obj) and not (inspect.getdoc(obj) or "").strip():
                missing.append(f"{name}.{attr}")
    assert not missing, f"public names without a docstring: {missing}"


# ---- code blocks ----------------------------------------------------------------------


def test_every_block_says_its_language():
    for page in PAGES:
        for lang, line, _ in code_blocks(page):
            assert lang in LANGUAGES, (f"{_id(page)}:{line}: a code block's fence names "
                                       f"'{lang}'; use one of {sorted(LANGUAGES)}")


def test_illustrative_blocks_are_rare():
    marked = [f"{_id(p)}:{line}" for p in PAGES for lang, line, code in code_blocks(p)
              if lang == "python" and code.startswith(ILLUSTRATIVE)]
    assert len(marked) <= MAX_ILLUSTRATIVE, f"too many blocks that do not run: {marked}"


@pytest.mark.parametrize("page", [p for p in PAGES if any(
    lang in ("python", "pycon") for lang, _, _ in code_blocks(p))], ids=_id)
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for lang, line, code in code_blocks(page):
        where = f"{_id(page)}:{line}"
        if lang == "python" and not code.startswith(ILLUSTRATIVE):
            exec(compile("\n" * line + code, str(page), "exec"), namespace)  # noqa: S102
        elif lang == "pycon":
            test = doctest.DocTestParser().get_doctest(code, namespace, where, str(page), line)
            result = runner.run(test, out=lambda s, w=where: pytest.fail(f"{w}:\n{s}"),
                                clear_globs=False)
            assert result.attempted > 0, f"{where}: a pycon block without '>>>'"
            namespace.update(test.globs)  # doctest ran on a copy


def _make_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))


def _extras() -> set[str]:
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


_HELP: dict[tuple, str] = {}


def _help(program: tuple) -> str:
    if program not in _HELP:
        run = subprocess.run([sys.executable, *program, "--help"], cwd=ROOT,
                             capture_output=True, text=True)
        assert run.returncode == 0, f"{' '.join(program)} --help failed: {run.stderr[-2000:]}"
        _HELP[program] = run.stdout
    return _HELP[program]


def check_command(words: list[str], where: str) -> None:
    """A shell command from the docs names what exists."""
    while re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):  # an environment variable
        words = words[1:]
    if words[0] == "make":
        assert words[1] in _make_targets(), f"{where}: no make target '{words[1]}'"
        args = next((w[5:] for w in words if w.startswith("ARGS=")), "")
        if words[1] == "bench":
            check_command(["python", "-m", "benchmarks", *shlex.split(args)], where)
    elif words[:2] in (["pip", "install"], ["pip", "wheel"], ["pip", "uninstall"]):
        for target in words[2:]:
            if target.startswith(".") or re.match(r"\$\(ls dist/yaad_autodiff-\S*\.whl\)", target):
                extras = re.findall(r"\[(.*)\]", target)
                unknown = set(extras[0].split(",")) - _extras() if extras else set()
                assert not unknown, f"{where}: no extra {sorted(unknown)} in pyproject.toml"
    elif words[0].endswith("python") and words[1] == "-c":  # (a one-liner: it must run)
        run = subprocess.run([sys.executable, "-c", words[2]], cwd=ROOT, capture_output=True,
                             text=True)
        assert run.returncode == 0, f"{where}: {run.stderr[-2000:]}"
    elif words[0].endswith("python"):
        program = tuple(words[1:3]) if words[1] == "-m" else (words[1],)
        if words[1] != "-m":
            assert (ROOT / words[1]).exists(), f"{where}: no file {words[1]}"
        rest = words[1 + len(program):]
        if program == ("-m", "yaad") and rest and not rest[0].startswith("-"):
            program += (rest[0],)  # a command: its options
        text = _help(program)
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert option in text or option == "--help", f"{where}: {option} is not an option"
    else:
        assert words[0] in {"mkdocs", "git", "cd"}, f"{where}: unknown command {words}"


@pytest.mark.parametrize("page", [p for p in PAGES if any(
    lang == "sh" for lang, _, _ in code_blocks(p))], ids=_id)
def test_shell_commands_name_what_exists(page):
    for line, code in ((line, code) for lang, line, code in code_blocks(page) if lang == "sh"):
        for k, command in enumerate(code.splitlines()):
            command = command.split(" # ")[0].strip()
            if command and not command.startswith("#"):
                check_command(shlex.split(command), f"{_id(page)}:{line + 1 + k}")


# ---- links and names ------------------------------------------------------------------


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text()):
        assert (ROOT / target).exists(), f"README.md links to missing {target}"


def _resolves(name: str) -> bool:
    parts = name.split(".")
    obj = importlib.import_module(parts[0])
    for k, part in enumerate(parts[1:], 1):
        if not hasattr(obj, part):
            try:
                obj = importlib.import_module(".".join(parts[:k + 1]))
                continue
            except ImportError:
                return False
        obj = getattr(obj, part)
    return True


@pytest.mark.parametrize("page,peer", [("pytorch-map.md", "torch"), ("from-jax.md", "jax"),
                                       ("from-autograd.md", "autograd")])
def test_coming_from_pages_name_what_exists(page, peer):
    text = (DOCS / page).read_text()
    for library in ("yaad", peer):
        names = set(re.findall(rf"`({library}(?:\.\w+)+)", text))
        assert len(names) > 10, f"{page} names few {library} functions"
        wrong = sorted(n for n in names if not _resolves(n))
        assert not wrong, f"docs/{page} names what {library} does not have: {wrong}"


def test_complex_page_states_the_convention():
    text = (DOCS / "complex.md").read_text()
    assert "z.grad = dL/dx + i dL/dy" in text and "assert z.grad == 6 + 8j" in text


def test_error_messages_name_sections_that_exist():
    sections = re.findall(r"^## .*\{#([\w-]+)\}$", (DOCS / "errors.md").read_text(), re.M)
    named = {m for path in (ROOT / "src").rglob("*.py")
             for m in re.findall(r"docs/errors\.md#([\w-]+)", path.read_text())}
    assert len(sections) >= 15 and len(set(sections)) == len(sections)
    assert not named - set(sections), f"messages name missing sections: {named - set(sections)}"
    assert not set(sections) - named, f"sections no message names: {set(sections) - named}"


def test_each_error_section_shows_its_own_message():
    # The example of each section raises (or warns) with a message that names it.
    text = (DOCS / "errors.md").read_text()
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        anchor = re.match(r".*\{#([\w-]+)\}", part).group(1)
        assert f"(see docs/errors.md#{anchor})" in part, f"errors.md#{anchor}: no example"


def test_version_has_one_home():
    run = subprocess.run([sys.executable, "-m", "yaad", "--version"], capture_output=True,
                         text=True, check=True)
    assert run.stdout.strip() == f"yaad {yaad.__version__}"
    assert f"## [{yaad.__version__}]" in (ROOT / "CHANGELOG.md").read_text()
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()


def test_performance_chart_draws_the_table():
    sys.path.insert(0, str(ROOT / "tools"))
    import performance_chart

    drawn = json.loads(performance_chart.DRAWN.read_text())
    assert drawn == performance_chart.table_ratios((DOCS / "performance.md").read_text()), (
        "docs/performance.md's table changed: run python tools/performance_chart.py")
    assert drawn["W1"]["yaad"] > 1 and performance_chart.FIGURE.exists()


def test_the_script_behind_the_jvp_table_checks_both_ways_agree():
    sys.path.insert(0, str(ROOT))
    from benchmarks import jvp_cost

    for _, f, x, t in jvp_cost.cases():
        if x.size < 1000:
            _, jt = yaad.func.jvp(f, (x,), (t,))
            np.testing.assert_allclose(jvp_cost.double_vjp(f, x, t), jt, rtol=1e-10)
            assert jvp_cost.forward_backward(f, x).shape == x.shape
    assert jvp_cost.best_us(lambda: None, 2) > 0


# ---- parameters in the reference --------------------------------------------------------

_SECTION = re.compile(r"^(Parameters|Other Parameters)\n-{3,}\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)",
                      re.S | re.M)
# "default 1e-8", "default: ``None``", "defaults to True", "None (the default)"
_DEFAULT = re.compile(r"\bdefaults?(?: to|:|=| is)?\s+(``|\"|')?([\w.+\-]+)\1?(?=[\s,;.)]|$)"
                      r"|(``|\"|')?([\w.+\-]+)\3?,? \(?the default\b", re.I)


def documented_parameters(doc: str) -> list[tuple[str, str, str]]:
    """(names, type, description) of each entry of a numpydoc docstring's Parameters and
    Other Parameters sections (``names`` as written: one name, or several)."""
    entries = []
    for section in _SECTION.finditer(doc):
        for m in re.finditer(r"^(\S[^\n]*)\n((?:[ \t]+[^\n]*\n?|\n(?=[ \t]))*)", section.group(2),
                             re.M):
            head, _, typ = m.group(1).partition(" : ")
            entries.append((head.strip(), typ.strip(), " ".join(m.group(2).split())))
    return entries


def _callables_of_the_reference() -> list[tuple[str, object]]:
    """Every public callable of the reference pages, and the public methods of its classes,
    each once (an op borrowed from NumPy or SciPy shows that library's docstring)."""
    out, seen = [], set()
    for name in reference_modules():
        module = importlib.import_module(name)
        for attr in public_names(module):
            obj = getattr(module, attr)
            members = [(f"{name}.{attr}", obj)]
            if isinstance(obj, type):
                members += [(f"{name}.{attr}.{k}", v) for k, v in vars(obj).items()
                            if not k.startswith("_") and callable(v)]
            for label, member in members:
                if callable(member) and id(member) not in seen and not borrowed_from(member):
                    seen.add(id(member))
                    out.append((label, member))
    return out


def test_each_documented_parameter_is_one_parameter_of_the_signature():
    """One parameter per entry (a grouped ``rtol, atol : float`` made the reference show
    rtol's default for atol), named as in the signature; ``optional`` only where the
    signature has a default; a default the entry states equals the signature's."""
    wrong = []
    checked = defaults = 0
    for label, obj in _callables_of_the_reference():
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        params = sig.parameters
        var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for names, typ, desc in documented_parameters(inspect.getdoc(obj) or ""):
            checked += 1
            if "," in names:
                wrong.append(f"{label}: '{names}' documents several parameters in one entry")
                continue
            p = params.get(names.lstrip("*"))
            if p is None:
                if not var_kw:
                    wrong.append(f"{label}: '{names}' is not a parameter")
                continue
            has_default = p.default is not inspect.Parameter.empty
            if "optional" in typ.split(", ") and not has_default and p.kind not in (
                    p.VAR_POSITIONAL, p.VAR_KEYWORD):
                wrong.append(f"{label}: '{names}' is documented optional but has no default")
            for stated in _DEFAULT.finditer(f"{typ}; {desc}") if has_default else ():
                quote, text = stated.group(1) or stated.group(3), stated.group(2) or stated.group(4)
                try:
                    value = ast.literal_eval(f"'{text}'" if quote in ('"', "'") else text)
                except (ValueError, SyntaxError):
                    continue  # a default described in words ("all", "the last one")
                defaults += 1
                if not (value == p.default and (type(value) is type(p.default) or {
                        type(value), type(p.default)} == {int, float})):
                    wrong.append(f"{label}: '{names}' documents the default {text!r}; the "
                                 f"signature's is {p.default!r}")
                break
    assert checked > 900 and defaults > 10, (checked, defaults)
    assert not wrong, "\n".join(wrong)
