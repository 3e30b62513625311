"""The one table of yaad's ops for the tests: one row an op.

A row says how to draw a valid call of a public function (its domains, shapes and
dtypes), what NumPy or SciPy computes for it (the oracle), what the suites need to know
(the gradient is smooth, zero or none; the forward is exact or not; kinks to keep away
from), its op's second-order cases and JAX's twin (``second=``: a :class:`Second`; an
elementwise row draws them from its domains), why an op has no VJP rule (``no_rule=``),
and, for a linalg function, named calls at seeded batched inputs (``variants=``). The rows
live by family, as the source does:

- ``elementwise.py``: one compact :class:`Row` an elementwise op (``ELEMENTWISE``), and
  the ops without a gradient (``NO_GRADIENT``);
- ``shape.py``, ``reductions.py``, ``products.py``, ``linalg.py``, ``fft.py``,
  ``stats.py``, ``composed.py``: one ``case(...)`` a function (:class:`Case`).

``CASES`` holds every row, keyed by the public function's path (``"linalg.det"``), and
every registry-driven suite reads it: ``tests/ops/test_elementwise.py`` (the elementwise
rows at fixed points: forward, gradients and second derivatives, dtypes, broadcasting),
``tests/ops/test_fuzz_ops.py`` (hypothesis draws calls: the forward against the oracle,
gradients against finite differences), ``tests/modes/test_vmap_ops.py``,
``tests/core/test_gradient_semantics.py``, ``tests/ops/test_numpy_coverage.py``,
``tests/core/test_node_paths.py``, ``tests/core/test_argument_gradients.py``,
``tests/compiled/test_fuzz_compile.py``, ``tests/ops/test_registry_second_order.py``
(``second_order_table()``, ``no_rule_table()``) and ``tests/linalg/test_linalg.py``,
``test_linalg_spectral.py`` (``variants()``).

An op of ``yaad.registry`` without a row fails ``test_fuzz_ops.py::
test_every_registered_op_has_a_fuzz_case`` (and the registry checks of the other
suites: ``test_registry_second_order.py::test_every_op_has_a_case`` without ``second=``),
naming it. ``fixed.py`` draws the second-order inputs (reseeded for each op).
"""

from tests.op_cases import table, fixed  # noqa: I001  (first: the families fill its CASES)
from tests.op_cases import elementwise, shape, reductions, products, linalg, fft, stats, composed
from tests.op_cases.elementwise import (
    ELEMENTWISE,
    NO_GRADIENT,
    SHAPES,
    NoGradient,
    Row,
    row_function,
    row_inputs,
)
from tests.op_cases.linalg import RULE_TERMS
from tests.op_cases.table import (
    CASES,
    Case,
    Second,
    Variant,
    available,
    builtin_ops,
    covered_ops,
    no_rule_table,
    resolve,
    second_order_table,
    variants,
)
from tests.support.strategies import Call, Domain, Ints

FAMILIES = (elementwise, shape, reductions, products, linalg, fft, stats, composed)

__all__ = [
    "CASES", "ELEMENTWISE", "FAMILIES", "NO_GRADIENT", "RULE_TERMS", "SHAPES", "Call", "Case",
    "Domain", "Ints", "NoGradient", "Row", "Second", "Variant", "available", "builtin_ops",
    "covered_ops", "fixed", "no_rule_table", "resolve", "row_function", "row_inputs",
    "second_order_table", "table", "variants",
]
