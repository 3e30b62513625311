"""The table's machinery: :class:`Case` (one row: how to draw a call of a public
function and its oracle), ``CASES`` (every row, filled by the family modules of this
package) and the helpers the families share."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

import yaad
from tests.support.strategies import ALL, ANY, Call, dtypes, values


@dataclass
class Case:
    """How to call one public function on valid inputs, and its NumPy oracle.

    ``draw(data, dtype)`` returns a :class:`Call`. ``grad``: "smooth" (checked against
    finite differences), "zero" (piecewise constant: the gradient is exactly zero) or
    "none" (the result carries no gradient). ``ok(call)`` rejects calls too close to a
    non-differentiable point for finite differences. ``post`` maps outputs to the
    quantity whose gradient is checked (gauge-invariant parts of eigenvectors, say).
    ``exact=False`` compares forwards to a tolerance (yaad composes it differently).
    ``covers`` names registry ops that the function reaches without being one itself
    (a public wrapper around a helper op). ``call`` replaces ``yaad.<path>`` when the
    arrays are not positional arguments (``concatenate([a, b])``): it takes the arrays
    positionally, as ``ref`` does.
    """

    path: str
    ref: Callable
    draw: Callable
    dtypes: tuple = ALL
    grad: str = "smooth"
    ok: Callable | None = None
    post: Callable | None = None
    nondiff: tuple = ()
    exact: bool = True
    atol: float | None = None  # None: gradcheck's tight default for float64
    rtol: float | None = None
    covers: tuple = ()
    call: Callable | None = None
    note: str = ""

    @property
    def fn(self) -> Callable:
        return self.call or resolve(self.path)

    @property
    def op_name(self) -> str | None:
        spec = getattr(self.fn, "op", None)
        return spec.name if spec is not None else None

    def diff_positions(self, call: Call) -> list[int]:
        """Positional arguments that are differentiated: float/complex arrays."""
        return [i for i, a in enumerate(call.args) if i not in self.nondiff
                and isinstance(a, np.ndarray) and a.dtype.kind in "fc"]


def resolve(path: str) -> Callable:
    """``"linalg.det"`` -> ``yaad.linalg.det``."""
    obj: Any = yaad
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def available(path: str) -> bool:
    try:
        resolve(path)
    except AttributeError:
        return False
    return True


CASES: dict[str, Case] = {}


def case(path: str, ref: Callable, draw: Callable, **kw) -> Case:
    c = Case(path, ref, draw, **kw)
    CASES[path] = c
    return c


def other_dtype(data, dtype, real_only):
    """Usually ``dtype``; sometimes another float dtype (to test NumPy's promotion)."""
    if data.draw(st.integers(0, 3)):
        return dtype
    return data.draw(dtypes(real_only))


def one(dtype_shape_draw, params, dom=ANY, unique=False):
    """A case draw: one array of the drawn dtype and shape, plus ``params(data, shape)``."""

    def draw(data, dtype):
        s = data.draw(dtype_shape_draw)
        x = data.draw(values(dtype, s, dom, unique=unique))
        args, kwargs = params(data, s)
        return Call((x, *args), kwargs)

    return draw


# ---------------------------------------------------------------------------------------
# Which ops are built in


def builtin_ops() -> dict:
    """The ops that yaad itself declares, by name: those held by its modules (users' and
    tests' ops, which also land in ``yaad.registry``, left out)."""
    mods = [yaad]
    for info in pkgutil.walk_packages(yaad.__path__, "yaad."):
        if info.name.split(".")[-1] in ("__main__", "demo"):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError:
            pass
    out = {}
    for mod in mods:
        for value in vars(mod).values():
            spec = getattr(value, "op", None)
            if isinstance(spec, yaad.Op) and yaad.registry.get(spec.name) is spec:
                out[spec.name] = spec
    return out


def covered_ops() -> set:
    """Registry names that some case exercises."""
    names = set()
    for c in CASES.values():
        if available(c.path):
            names.update(c.covers)
            if c.op_name:
                names.add(c.op_name)
    return names
