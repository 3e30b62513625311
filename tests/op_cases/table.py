"""The table's machinery: :class:`Case` (one row: how to draw a call of a public
function, its oracle, and its op's second-order cases), :class:`Second` (those cases and
JAX's twin), ``CASES`` (every row, filled by the family modules of this package), the
views the suites read (``second_order_table``, ``no_rule_table``) and the helpers the
families share."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
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

    ``second``: the second-order cases of the op the row exercises (a :class:`Second`, or
    just its ``cases`` function), or ``{op name: Second}`` for a row that reaches several
    ops. ``no_rule``: why the op has no VJP rule (``{op name: why}`` likewise).
    ``variants``: named calls at seeded inputs, batched (:class:`Variant`: the linalg
    suites).
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
    second: Second | Callable | dict | None = None
    no_rule: str | dict = ""
    variants: dict[str, Variant] = field(default_factory=dict)

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

    def ops(self) -> set[str]:
        """The registry ops the row exercises (its function's op and ``covers``)."""
        return set(self.covers) | ({self.op_name} if self.op_name else set())

    def _by_op(self, value: Any) -> dict:
        if isinstance(value, dict):
            return value
        if not value:
            return {}
        ops = self.ops()
        assert len(ops) == 1, (
            f"the row {self.path!r} reaches the ops {sorted(ops)}: key its second= and "
            f"no_rule= by op name")
        return {ops.pop(): value}

    def seconds(self) -> dict[str, Second]:
        """``{op name: Second}`` of the row."""
        return {name: s if isinstance(s, Second) else Second(s)
                for name, s in self._by_op(self.second).items()}

    def no_rules(self) -> dict[str, str]:
        """``{op name: why it has no VJP rule}`` of the row."""
        return self._by_op(self.no_rule)


@dataclass(frozen=True)
class Second:
    """An op's cases for ``tests/ops/test_registry_second_order.py``, and JAX's twin.

    ``cases(fn)``: ``[(f, inputs, options)]`` with ``fn`` in the op's place (yaad's op or
    JAX's twin), drawing the inputs when called (tests/op_cases/fixed.py), real and complex
    where the op is defined there. ``jax``: JAX's function where it is not
    ``jax.numpy.<name>``, ``jax.scipy.special.<name>``, ``jax.numpy.linalg.<name>``,
    ``jax.scipy.linalg.<name>`` or ``jax.numpy.fft.<name>`` (a dotted name, or a function
    of JAX arrays); ``no_jax``: why JAX has none; ``jax_real_only``: why JAX cannot run the
    complex cases; ``jax_skip``: ``{case index: why JAX gets that case wrong}`` (finite
    differences still check it); ``jax_only_in``: ``(input positions, why)`` when JAX
    differentiates some inputs only; ``zero``: ``{case index: why}`` for cases whose
    derivative is 0 at every input.
    """

    cases: Callable
    jax: str | Callable | None = None
    no_jax: str = ""
    jax_real_only: str = ""
    jax_skip: Mapping[int, str] = field(default_factory=dict)
    jax_only_in: tuple | None = None
    zero: Mapping[int, str] = field(default_factory=dict)


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


@dataclass(frozen=True)
class Variant:
    """A call of a linalg function at seeded inputs, batched, for ``tests/linalg/
    test_linalg.py`` (``tests/linalg/test_linalg_spectral.py`` when ``spectral``).

    ``f(*inputs)``: the call; ``inputs(rng, batch, complex)``: its inputs (``rng`` seeded by
    the variant's name, complex ones when ``complex``); ``ref``: NumPy's or SciPy's values,
    or None. ``batched``: True for the batches ``()`` and ``(3, 4)``, False for ``()`` only,
    or the list of batches. ``second``: second derivatives checked too; ``float32``:
    float32 inputs checked to keep float32 values and gradients.
    """

    f: Callable
    inputs: Callable
    ref: Callable | None = None
    batched: bool | list = True
    second: bool = False
    float32: bool = False
    spectral: bool = False


def variants(spectral: bool) -> dict[str, Variant]:
    """The variants of every row of ``CASES`` (of the spectral suite, or of the other)."""
    every: dict[str, Variant] = {}
    for c in CASES.values():
        for name, v in c.variants.items():
            assert name not in every, f"two variants named {name!r}"
            every[name] = v
    return {name: v for name, v in every.items() if v.spectral == spectral}


def second_order_table() -> dict[str, Second]:
    """Op name -> its :class:`Second`, from every row of ``CASES`` (whose function exists)."""
    out: dict[str, Second] = {}
    for key, c in CASES.items():
        if not available(c.path):
            continue
        for name, s in c.seconds().items():
            assert name not in out, f"two rows give the second-order cases of {name!r}: {key!r}"
            out[name] = s
    return out


def no_rule_table() -> dict[str, str]:
    """Op name -> why it has no VJP rule, from every row of ``CASES``."""
    return {name: why for c in CASES.values() if available(c.path)
            for name, why in c.no_rules().items()}


def covered_ops() -> set:
    """Registry names that some case exercises."""
    names = set()
    for c in CASES.values():
        if available(c.path):
            names.update(c.covers)
            if c.op_name:
                names.add(c.op_name)
    return names
