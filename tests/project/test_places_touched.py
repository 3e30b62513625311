"""docs/architecture.md's "places touched" lists are the places a new op is forced to touch.

A throwaway op of each kind the page covers (a row of the elementwise table; a linalg
function) is declared in this process the way the page says: its declaration bound in its
module, in the module's ``__all__`` and in the namespace that re-exports it, as importing the
edited source would. Then every coverage check of the test tree (``CHECKS``: a test that
walks the registry or a public namespace and fails, naming what to edit, for an op missing
from a table) runs against it. A check that fails names a forced place (``Cause.place``: a
file, or a word of the page such as ``batch=``); the place is then filled in this process
(``_Filler``), and the check runs again, until it passes. The places found must be the
page's items that are not marked optional, each backed by a failing check.

``test_the_coverage_checks_are_all_listed`` keeps ``CHECKS`` complete: a test function that
walks the registry or a namespace is in it, or in ``NOT_CHECKS`` with the reason.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import yaad
from tests.core import test_argument_gradients as walked
from tests.modes import test_vmap_ops as vmap_ops
from tests.op_cases import CASES, ELEMENTWISE
from tests.op_cases.elementwise import row_case, row_second
from tests.ops import test_elementwise as elementwise_table
from tests.ops import test_fuzz_ops as fuzz_ops
from tests.ops import test_registry_second_order as second_order
from tests.project import test_packaging as packaging
from tests.project import test_stubs as stubs

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
SECTIONS = {"elementwise": "## Adding an elementwise op", "linalg": "## Adding a linalg function"}


# ---- the coverage checks ----------------------------------------------------------------

@dataclasses.dataclass
class Cause:
    """A failure of a check: the words of its message, and the place it asks for, by the
    kind of op (one place for all kinds: a string)."""

    message: str
    place: str | dict[str, str]

    def of(self, kind: str) -> str:
        return self.place if isinstance(self.place, str) else self.place[kind]


ROWS = "tests/op_cases/elementwise.py"
CASE = {"elementwise": ROWS, "linalg": "tests/op_cases/linalg.py"}
JAX = "jax="
STUB = "tools/generate_stubs.py"
JAX_VALUES = "tests/data/jax_second_order.npz"


def _stored_jax_values(name: str) -> None:
    """``test_stored_jax_values_are_jax_values_fuzz`` (``make fuzz``) for the cases of op
    ``name``: JAX's values of each are stored (the whole test recomputes every case)."""
    for p in second_order._jax_cases(second_order._all_cases([name])):
        second_order.assert_stored(p, second_order._jax_setup(*p.values)[-1])


def _complex_case(name: str) -> None:
    """``test_every_op_defined_on_complex_numbers_has_a_complex_case`` with ``name`` among
    the library's ops (read by a fresh interpreter when the module is imported)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(second_order, "BUILTIN", [*second_order.BUILTIN, name])
        mp.setattr(second_order, "CASE_PARAMS",
                   [*second_order.CASE_PARAMS, *second_order._all_cases([name])])
        second_order.test_every_op_defined_on_complex_numbers_has_a_complex_case()


def _without_a_rule(name: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        spec = yaad.registry[name]
        mp.setitem(second_order.ALL_BUILTIN, name, any(v is not None for v in spec.vjps))
        second_order.test_every_op_without_a_rule_is_listed()


# test id -> (the check, run for the op's registry name; what a failure asks for)
CHECKS: dict[str, tuple[Callable[[str], None], list[Cause]]] = {
    "tests/ops/test_elementwise.py::test_table_covers_every_elementwise_op": (
        lambda name: elementwise_table.test_table_covers_every_elementwise_op(),
        [Cause("without a test row", ROWS)]),
    "tests/ops/test_fuzz_ops.py::test_every_registered_op_has_a_fuzz_case": (
        lambda name: fuzz_ops.test_every_registered_op_has_a_fuzz_case(),
        [Cause("without a fuzz case", CASE)]),
    "tests/modes/test_vmap_ops.py::test_every_registered_op_has_a_batching_rule_and_a_case": (
        lambda name: vmap_ops.test_every_registered_op_has_a_batching_rule_and_a_case(),
        [Cause("without a batching rule", "batch="), Cause("ops without a case", CASE)]),
    "tests/core/test_argument_gradients.py::test_every_public_function_is_walked": (
        lambda name: walked.test_every_public_function_is_walked(),
        [Cause("no walk covers", CASE)]),
    "tests/ops/test_registry_second_order.py::test_every_op_has_a_case": (
        second_order.test_every_op_has_a_case, [Cause("has no second-order cases", CASE)]),
    "tests/ops/test_registry_second_order.py::test_every_op_has_a_jax_twin_or_a_reason": (
        second_order.test_every_op_has_a_jax_twin_or_a_reason, [Cause("has no JAX twin", JAX)]),
    "tests/ops/test_registry_second_order.py::test_every_op_without_a_rule_is_listed": (
        _without_a_rule, [Cause("ops without a VJP rule", "no_rule=")]),
    "tests/ops/test_registry_second_order.py::"
    "test_every_op_defined_on_complex_numbers_has_a_complex_case": (
        _complex_case, [Cause("without a complex case", CASE)]),
    "tests/ops/test_registry_second_order.py::test_stored_jax_values_are_jax_values_fuzz": (
        _stored_jax_values, [Cause("no stored JAX values", JAX_VALUES)]),
    "tests/project/test_stubs.py::test_the_checked_in_stub_is_what_the_tool_writes": (
        lambda name: [stubs.test_the_checked_in_stub_is_what_the_tool_writes(s)
                      for s in sorted(stubs.TOOL.STUBS)],
        [Cause("is stale", STUB)]),
    "tests/project/test_packaging.py::test_the_namespace_stub_names_what_yaad_exports": (
        lambda name: packaging.test_the_namespace_stub_names_what_yaad_exports(),
        [Cause("run python tools/generate_stubs.py", STUB)]),
    "tests/project/test_packaging.py::"
    "test_the_typing_stub_declares_the_methods_installed_on_tensor": (
        lambda name: packaging.test_the_typing_stub_declares_the_methods_installed_on_tensor(),
        [Cause("run python tools/generate_stubs.py", STUB)]),
}

# Tests that walk the registry or a namespace and are no coverage check of a new op: why.
NOT_CHECKS = {
    "tests/ops/test_elementwise.py::test_a_new_op_without_a_row_fails":
        "the guard of the guard: declares its own op",
    "tests/ops/test_fuzz_ops.py::test_case_table_is_not_vacuous": "a guard: counts",
    "tests/ops/test_registry_second_order.py::test_builtin_ops_are_found": "a guard: counts",
    "tests/ops/test_registry_second_order.py::test_counts": "a guard: counts",
    "tests/ops/test_registry_second_order.py::test_rule_terms_are_ops_of_the_library":
        "checks RULE_TERMS, a list of helper ops, against the library",
    "tests/ops/test_registry_second_order.py::test_against_jax":
        "runs each case (a new case's JAX values are computed on the spot)",
    "tests/core/test_node_paths.py::test_specialised_paths_build_the_general_node":
        "runs each op of a fast arity on its cases (a new op without one uses them all)",
    "tests/core/test_node_paths.py::test_variadic_path_builds_the_general_node":
        "runs each variadic op on its cases (a new op without one uses them all)",
    "tests/modes/test_mode_registry.py::test_a_switch_cannot_take_a_core_field":
        "the mode registry, not the op registry",
    "tests/test_custom_ops.py::test_custom_op_example": "a user's op in the registry",
    "tests/project/test_stubs.py::test_a_new_op_and_method_reach_the_stubs":
        "declares its own op",
    "tests/project/test_docs.py::test_every_public_name_has_a_docstring":
        "reads the source (griffe), not this process: the docstring is part of the source",
    "tests/project/test_docs.py::test_reference_pages_reach_every_public_name":
        "builds the site from the source: the reference pages list the module's __all__",
    "tests/project/test_docs.py::test_every_public_module_has_a_reference_page":
        "modules, not ops",
    "tests/project/test_docs.py::test_each_documented_parameter_is_one_parameter_of_the_signature":
        "reads the source (griffe): the docstring is part of the source",
    "tests/project/test_public_names.py::test_a_public_module_shows_its_all_and_nothing_else":
        "reads the source (griffe): a name in __all__ is shown",
    "tests/ops/test_numpy_coverage.py::test_functions_without_an_op_are_listed_with_a_reason":
        "NumPy's functions without an op: an op for one of them leaves WITHOUT_AN_OP (a NumPy "
        "function of the list, not a new name)",
    "tests/ops/test_numpy_coverage.py::test_enumeration_is_complete": "a guard: counts",
    "tests/ops/test_numpy_coverage.py::test_function_without_an_op_raises_naming_it":
        "runs NumPy's functions",
    "tests/ops/test_numpy_coverage.py::test_function_with_an_op_takes_numpys_parameters":
        "runs NumPy's functions",
    "tests/ops/test_numpy_coverage.py::test_every_no_gradient_name_is_a_numpy_function":
        "NumPy's functions without a gradient",
}

# What a test uses when it walks the registry or a namespace (the scan below).
WALKERS = {"registry", "builtin_ops", "covered_ops", "BUILTIN", "ALL_BUILTIN",
           "public_functions", "_elementwise_op_names", "STUBS", "reference_modules",
           "public_names", "DISPATCHED", "RAISES", "installed_methods"}


def _walks(node: ast.AST, functions: dict[str, ast.FunctionDef],
           seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` uses a walker (or ``vars`` of yaad's), itself or through the
    module's helpers ``functions``."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    if names & WALKERS or "vars" in names and "yaad" in names:
        return True
    return any(_walks(functions[h], functions, seen | {h})
               for h in names & set(functions) - seen if not h.startswith("test_"))


def _walking_tests() -> set[str]:
    """The test functions of the tree that walk the registry or a namespace."""
    found = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        relative = path.relative_to(ROOT).as_posix()
        found |= {f"{relative}::{name}" for name, f in functions.items()
                  if name.startswith("test_") and _walks(f, functions)}
    return {t for t in found if not t.startswith("tests/project/test_places_touched.py")}


def test_the_coverage_checks_are_all_listed():
    walking = _walking_tests()
    unlisted = sorted(walking - set(CHECKS) - set(NOT_CHECKS))
    assert not unlisted, (f"tests that walk the registry or a namespace, in neither CHECKS nor "
                          f"NOT_CHECKS of tests/project/test_places_touched.py: {unlisted}")
    gone = sorted((set(CHECKS) | set(NOT_CHECKS)) - walking)
    assert not gone, f"listed, but not tests that walk the registry: {gone}"


# ---- the throwaway ops, and what fills each place -------------------------------------------

class _Filler:
    """Fills a place for the op ``name`` of ``kind`` in this process (as editing the file
    would), undone with ``mp``; the stubs go to ``root``, a copy of the checked-in ones."""

    def __init__(self, mp: pytest.MonkeyPatch, kind: str, name: str, root: Path) -> None:
        self.mp, self.kind, self.name, self.root = mp, kind, name, root

    def fill(self, place: str) -> None:
        getattr(self, "_" + re.sub(r"\W", "_", place))()

    def _tests_op_cases_elementwise_py(self, **fields: str) -> None:  # the row; its tables
        row = dataclasses.replace(ELEMENTWISE["expm1"], **fields)
        self.mp.setitem(ELEMENTWISE, self.name, row)
        self.mp.setitem(CASES, self.name, row_case(self.name, row))
        self.mp.setitem(second_order.SECOND, self.name, row_second(row))

    def _jax_(self) -> None:  # (a field of the row: JAX's function, named otherwise)
        if self.kind == "elementwise":
            self._tests_op_cases_elementwise_py(jax="jax.numpy.expm1")
        else:
            self.mp.setitem(second_order.SECOND, self.name, dataclasses.replace(
                second_order.SECOND[self.name], jax="jax.numpy.linalg.det"))

    def _no_rule_(self) -> None:
        self.mp.setitem(second_order.NOT_DIFFERENTIABLE, self.name, "a probe")

    def _batch_(self) -> None:
        self.mp.setattr(yaad.registry[self.name], "batch", "broadcast")

    def _tests_op_cases_linalg_py(self) -> None:  # the row (det's: its draw and its cases)
        path = self.name  # (linalg.probe_det: also the public path)
        row = dataclasses.replace(CASES["linalg.det"], path=path)
        self.mp.setitem(CASES, path, row)
        self.mp.setitem(second_order.SECOND, self.name, row.seconds()[self.name])

    def _tests_data_jax_second_order_npz(self) -> None:
        stored = second_order._stored_jax_values()
        for p in second_order._jax_cases(second_order._all_cases([self.name])):
            fingerprint = second_order._jax_setup(*p.values)[-1]
            self.mp.setitem(stored, (p.id, fingerprint), {})

    def _tools_generate_stubs_py(self) -> None:
        for name, write in stubs.TOOL.STUBS.items():
            (self.root / "src" / "yaad" / name).write_text(write())


def _declare(mp: pytest.MonkeyPatch, kind: str) -> str:
    """The throwaway op of ``kind``, declared as the page's first items say; its name."""
    if kind == "elementwise":
        from yaad.ops import elementwise as ew

        mp.setattr(ew, "_rows", list(ew._rows))
        probe = ew.elementwise_op("probe_expm1", np.expm1, lambda ans, _x: ans + 1)
        public, module, namespaces = "probe_expm1", ew, [yaad]
    else:
        from yaad.linalg import rank
        from yaad.linalg.helpers import public as public_name

        det = yaad.linalg.det.op
        probe = public_name(yaad.op(det.forward, name="linalg.probe_det", vjp=det.vjps,
                                    jvp=det.jvps))  # (no batch=: the page's item 1 says)
        public, module, namespaces = "probe_det", rank, [yaad.linalg]
    mp.setattr(module, public, probe, raising=False)
    mp.setattr(module, "__all__", [*module.__all__, public])
    for namespace in namespaces:  # (``from .module import *``)
        mp.setattr(namespace, public, probe, raising=False)
        mp.setattr(namespace, "__all__", sorted([*namespace.__all__, public]))
    return probe.op.name


def forced_places(kind: str, root: Path) -> dict[str, list[str]]:
    """Each place a new op of ``kind`` is forced to touch, with the checks that asked for
    it (each check run, its place filled, run again, until it passes)."""
    found: dict[str, list[str]] = {}
    with pytest.MonkeyPatch.context() as mp:
        for checker in (stubs, packaging):  # (the stubs read from the copy)
            mp.setattr(checker, "ROOT", root)
        name = _declare(mp, kind)
        try:
            filler = _Filler(mp, kind, name, root)
            for test, (check, causes) in CHECKS.items():
                for _ in range(len(causes) + 1):
                    try:
                        check(name)
                        break
                    except AssertionError as e:
                        cause = next((c for c in causes if c.message in str(e)), None)
                        assert cause is not None, f"{test} fails for the {kind} op: {e}"
                        place = cause.of(kind)
                        assert place not in found or test not in found[place], (
                            f"{test}: still fails after its place {place} was filled: {e}")
                        found.setdefault(place, []).append(test)
                        filler.fill(place)
                else:
                    raise AssertionError(f"{test} still fails after its places were filled")
        finally:
            yaad.registry.pop(name, None)
    return found


@pytest.fixture(scope="module")
def forced(tmp_path_factory) -> dict[str, dict[str, list[str]]]:
    """The places found for each kind of op (the stubs written to a copy of the checked-in
    ones, beside the reference pages the stub checks read)."""
    out = {}
    for kind in sorted(SECTIONS):
        root = tmp_path_factory.mktemp(kind)
        (root / "src" / "yaad").mkdir(parents=True)
        for name in stubs.TOOL.STUBS:
            shutil.copy(ROOT / "src" / "yaad" / name, root / "src" / "yaad" / name)
        (root / "src" / "yaad" / "core").symlink_to(ROOT / "src" / "yaad" / "core")
        (root / "docs").mkdir()
        (root / "docs" / "reference").symlink_to(ROOT / "docs" / "reference")
        out[kind] = forced_places(kind, root)
    return out


# ---- the page -----------------------------------------------------------------------------

@dataclasses.dataclass
class Item:
    number: int
    title: str
    text: str

    @property
    def optional(self) -> bool:
        """Marked optional, or asking nothing (nothing by hand)."""
        head = self.text.lstrip()
        return (head.startswith("(optional") or head.startswith("(if")
                or "nothing by hand" in head[:40])

    @property
    def declaration(self) -> bool:
        """The op's own lines: its source and its public name."""
        return self.title.startswith(("Source", "The public name"))


def page_items(kind: str) -> list[Item]:
    """The numbered list of places in the page's section on ``kind``."""
    text = PAGE.read_text()
    start = text.index(SECTIONS[kind])
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else None]
    starts = list(re.finditer(r"^(\d+)\. \*\*(.+?)\*\*", section, flags=re.M))
    items = []
    for k, m in enumerate(starts):
        stop = starts[k + 1].start() if k + 1 < len(starts) else len(section)
        body = section[m.end():stop].split("\n\n")[0]
        items.append(Item(int(m.group(1)), m.group(2).rstrip(":"), " ".join(body.split())))
    assert [i.number for i in items] == list(range(1, len(items) + 1)), items
    return items


@pytest.mark.parametrize("kind", sorted(SECTIONS))
def test_the_forced_places_are_the_places_the_page_lists(kind, forced):
    found = forced[kind]
    listed = [i for i in page_items(kind) if not i.optional]
    unlisted = {place: tests for place, tests in found.items()
                if not any(place in item.text for item in listed)}
    assert not unlisted, (
        f"docs/architecture.md, {SECTIONS[kind]!r}: a new op is forced to touch places no "
        f"item names (or only an optional one): "
        + "; ".join(f"{place} (without it {', '.join(tests)} fails)"
                    for place, tests in unlisted.items()))
    unforced = [f"{item.number}. {item.title}" for item in listed if not item.declaration
                and not any(place in item.text for place in found)]
    assert not unforced, (
        f"docs/architecture.md, {SECTIONS[kind]!r}: items that name no place a check forces "
        f"(forced: {sorted(found)}): {unforced}; mark them optional or name the place")


def test_the_probes_find_the_places_the_issue_named(forced):
    # Guards the guard: the elementwise op's stub (a place the page missed, issue 29), the
    # linalg function's batching rule, each op's one row (with its second-order cases and
    # JAX's twin: jax=, the probes' names being no JAX function's), JAX's stored values.
    assert set(forced["elementwise"]) == {STUB, ROWS, "jax=", JAX_VALUES}
    assert set(forced["linalg"]) == {"tests/op_cases/linalg.py", "batch=", "jax=", JAX_VALUES}
