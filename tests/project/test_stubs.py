"""The typing stubs (``src/yaad/__init__.pyi``, ``src/yaad/_tensor_methods.pyi``) are what
tools/generate_stubs.py writes from the package, so a new op, public name or Tensor method
cannot be missing from them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import yaad

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("generate_stubs",
                                                  ROOT / "tools" / "generate_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


@pytest.mark.parametrize("name", sorted(TOOL.STUBS))
def test_the_checked_in_stub_is_what_the_tool_writes(name):
    written = TOOL.STUBS[name]()
    checked_in = (ROOT / "src" / "yaad" / name).read_text()
    assert checked_in == written, f"src/yaad/{name} is stale: run python tools/generate_stubs.py"


def test_a_new_op_and_method_reach_the_stubs(monkeypatch):
    # declared as a row of the elementwise table is (exported by the module's __all__,
    # bound by ``from .ops.elementwise import *``), and installed as a Tensor method
    from yaad.ops import elementwise

    probe = yaad.op(lambda x: 2.0 * x, vjp=lambda g, ans, x: 2.0 * g, name="stub_probe")
    try:
        monkeypatch.setattr(elementwise, "__all__", [*elementwise.__all__, "stub_probe"])
        monkeypatch.setattr(elementwise, "stub_probe", probe, raising=False)
        monkeypatch.setattr(yaad, "stub_probe", probe, raising=False)
        monkeypatch.setattr(yaad.Tensor, "stub_probe", probe, raising=False)
        namespace, methods = TOOL.namespace_stub(), TOOL.methods_stub()
    finally:
        monkeypatch.undo()
        del yaad.registry["stub_probe"]
    assert "\nfrom .ops.elementwise import stub_probe as stub_probe\n" in namespace
    assert "\n    def stub_probe(self) -> Tensor: ...\n" in methods
    assert namespace != (ROOT / "src" / "yaad" / "__init__.pyi").read_text()


def test_a_name_is_imported_from_the_module_defining_it():
    # ``yaad.ops.nn`` imports ``exp`` from the elementwise table: a stub importing it from
    # there re-exports it implicitly, which ``mypy --strict`` refuses in a user's project
    assert TOOL.defining_module("exp", "ops.nn") == "ops.elementwise"
    assert TOOL.defining_module("relu", "ops.nn") == "ops.nn"
    assert TOOL.defining_module("Function", "autograd") == "function"
