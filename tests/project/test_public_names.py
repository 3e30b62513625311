"""Each public module (a page in docs/reference/) lists its API in ``__all__`` and shows
nothing else: ``dir()`` (what completion offers) is ``__all__``, and the reference page is
built from it (tools/griffe_yaad.py). Imports and helpers (``yaad.stats.np``,
``yaad.integrate.data_of``) stay reachable for yaad's own modules, never listed."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.stem for p in (ROOT / "docs" / "reference").glob("*.md"))
sys.path.insert(0, str(ROOT / "tools"))
from griffe_yaad import public_names  # noqa: E402

# What an ``__all__`` lists besides functions, classes and public submodules: constants and
# dtypes (NumPy's), and the op registry.
NOT_OURS = {"bool", "complex64", "complex128", "e", "float32", "float64", "inf", "int8",
            "int16", "int32", "int64", "nan", "pi", "uint8", "uint16", "uint32",
            "uint64", "registry"}
# A submodule listed without a page of its own: PyTorch's place for the schedulers (they
# are on yaad.optim's page).
LISTED_SUBMODULES = {"yaad.optim.lr_scheduler"}


def test_the_reference_pages_are_the_public_modules():
    assert len(PAGES) == 24 and {"yaad", "yaad.stats", "yaad.integrate"} <= set(PAGES)


@pytest.mark.parametrize("name", PAGES)
def test_a_public_module_shows_its_all_and_nothing_else(name):
    module = importlib.import_module(name)
    listed = module.__all__
    assert len(set(listed)) == len(listed), f"{name}.__all__ repeats a name"
    assert sorted(dir(module)) == sorted(listed), f"{name}: dir() differs from __all__"
    for attr in listed:
        value = getattr(module, attr)  # (raises for a listed name that is not bound)
        if isinstance(value, types.ModuleType):
            assert value.__name__ in {*PAGES, *LISTED_SUBMODULES}, (
                f"{name}.{attr}: a module without a reference page")
        elif attr not in NOT_OURS:
            home = getattr(value, "__module__", None) or ""
            assert home.startswith("yaad") or callable(value), f"{name}.{attr}: an import"
            assert home not in ("typing", "collections.abc", "__future__"), f"{name}.{attr}"
    # The reference page documents exactly these names (submodules have their own page).
    shown = set(public_names(module))
    assert shown == {a for a in listed if not isinstance(getattr(module, a), types.ModuleType)}


@pytest.mark.parametrize("name, hidden", [
    ("yaad.stats", ["np", "math", "Any", "exp", "concatenate"]),
    ("yaad.integrate", ["data_of", "make_tensor", "np", "scipy", "Tensor", "annotations"]),
    ("yaad", ["core", "ops", "modes", "bindings", "creation", "annotations"]),
    ("yaad.linalg", ["helpers", "spectral"]),
])
def test_helpers_and_imports_are_not_public(name, hidden):
    module = importlib.import_module(name)
    for attr in hidden:
        assert hasattr(module, attr), f"{name}.{attr} is gone: pick another example"
        assert attr not in dir(module) and attr not in module.__all__, f"{name}.{attr}"
