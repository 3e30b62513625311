"""The scripts in examples/, loaded as modules (their functions called with small sizes)."""

import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
