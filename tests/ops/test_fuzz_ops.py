"""Every registered op against its oracles, driven by hypothesis (issue 7).

For each entry of ``strategies.CASES`` (one per op of ``yaad.registry``, plus the public
composites): the forward equals NumPy's exactly (values, shape, dtype; NumPy's exception
when NumPy raises), and the gradient equals central finite differences (real and complex
inputs, broadcast and 0-size shapes). ``make fuzz`` runs many more examples.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import yaad
from tests.op_cases import (
    CASES,
    RULE_TERMS,
    Call,
    Case,
    available,
    builtin_ops,
    covered_ops,
)
from tests.support.op_calls import as_inputs, assert_same_forward, draw_call, outputs
from tests.support.reliability import fuzz_settings
from yaad.testing import gradcheck

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::numpy.exceptions.ComplexWarning")


def _params(keys):
    return [pytest.param(k, marks=pytest.mark.skipif(
        not available(CASES[k].path), reason=f"yaad.{CASES[k].path} does not exist yet"))
        for k in sorted(keys)]


def _single(call: Call) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype in (np.float32, np.complex64)
               for a in (*call.args, *call.kwargs.values()))


def check_forward(case: Case, call: Call) -> None:
    """Forward on tensors and on plain arrays equals the oracle (or raises as NumPy does)."""
    try:
        expected = case.ref(*call.args, **call.kwargs)
    except Exception as e:  # NumPy refuses: yaad must refuse the same way, naming the op
        with pytest.raises(type(e)):
            case.fn(*as_inputs(case, call), **call.kwargs)
        return
    out = case.fn(*as_inputs(case, call), **call.kwargs)
    assert_same_forward(case, out, expected, _single(call))
    plain = case.fn(*call.args, **call.kwargs)
    assert not any(isinstance(o, yaad.Tensor) for o in outputs(plain)), \
        f"{case.path}: arrays in must give arrays out"
    assert_same_forward(case, plain, expected, _single(call))
    for o in outputs(out):
        if not isinstance(o, yaad.Tensor):  # a count or an index (matrix_rank): no gradient
            assert case.grad == "none", f"{case.path}: returned a {type(o).__name__}"
        elif case.grad == "none" or o.dtype.kind not in "fc":
            assert not o.requires_grad, f"{case.path}: a {o.dtype} result must carry no grad"
        elif case.diff_positions(call):
            assert o.requires_grad, f"{case.path}: the result lost the link to its inputs"


def widen(call: Call) -> Call:
    """The call with dtype arguments widened: finite differences need float64 outputs."""
    wide = {np.dtype("float32"): np.dtype("float64"),
            np.dtype("complex64"): np.dtype("complex128")}

    def w(v):
        return wide.get(v, v) if isinstance(v, np.dtype) else v

    return Call(tuple(w(a) for a in call.args), {k: w(v) for k, v in call.kwargs.items()})


def function_of_inputs(case: Case, call: Call):
    """``f(*diff_inputs)`` with the other arguments of ``call`` fixed, and those inputs."""
    pos = case.diff_positions(call)

    def f(*xs):
        args = list(call.args)
        for p, x in zip(pos, xs):
            args[p] = x
        out = case.fn(*args, **call.kwargs)
        return case.post(out) if case.post else out

    return f, [call.args[p] for p in pos]


def check_gradient(case: Case, call: Call) -> None:
    """The gradient equals central finite differences (exactly zero for "zero" ops)."""
    try:
        case.ref(*call.args, **call.kwargs)
    except Exception:
        return  # NumPy refuses the call: test_fuzz_forward checks that yaad does too
    call = widen(call)
    f, inputs = function_of_inputs(case, call)
    if not inputs or case.grad == "none":
        return
    gradcheck(f, inputs, atol=case.atol, rtol=case.rtol)
    if case.grad == "zero":
        xs = [yaad.tensor(x, requires_grad=True) for x in inputs]
        out = f(*xs)
        if out.requires_grad:
            yaad.real(out).sum().backward()
            for x in xs:
                assert x.grad is None or not np.any(x.grad), f"{case.path}: nonzero gradient"


@pytest.mark.parametrize("key", _params(CASES))
@fuzz_settings(10, 100)
@given(data=st.data())
def test_fuzz_forward_matches_numpy(key, data):
    case = CASES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_forward(case, draw_call(case, data))


@pytest.mark.parametrize("key", _params(k for k, c in CASES.items() if c.grad != "none"))
@fuzz_settings(6, 50)
@given(data=st.data())
def test_fuzz_gradient_matches_finite_differences(key, data):
    case = CASES[key]
    call = draw_call(case, data)
    assume(case.ok is None or case.ok(call))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_gradient(case, call)


def test_every_registered_op_has_a_fuzz_case():
    missing = sorted(set(builtin_ops()) - covered_ops() - set(RULE_TERMS))
    assert not missing, (
        f"ops in yaad.registry without a fuzz case (an elementwise op: a row in "
        f"tests/op_cases/elementwise.py; another: a case(...) in the module of its family in "
        f"tests/op_cases/ (shape.py, reductions.py, products.py, linalg.py, ...), with "
        f"its input domain and NumPy oracle): {missing}")


def test_case_table_is_not_vacuous():
    # Guards the guard: the registry walk found the built-ins and the table covers them.
    ops = builtin_ops()
    assert {"sin", "add", "matmul", "sum", "getitem", "where"} <= set(ops)
    assert len(covered_ops()) >= 100


# ---- regressions found by the fuzzers ------------------------------------------------------


def test_regression_imag_of_a_real_input_has_zero_gradient():
    # Found by test_fuzz_gradient_matches_finite_differences[imag]: the rule read the
    # dtype of an input the op had not saved (None), so backward raised AttributeError.
    for dt in (np.float32, np.float64):
        x = yaad.tensor(np.array([1.5, -2.0], dtype=dt), requires_grad=True)
        (yaad.imag(x) + x).sum().backward()
        np.testing.assert_array_equal(x.grad, [1.0, 1.0])
        assert x.grad.dtype == dt


def test_regression_gradcheck_perturbs_non_contiguous_inputs():
    # Found by test_fuzz_gradient_matches_finite_differences[tensordot]: for a transposed
    # input, numerical_gradient perturbed a copy (reshape(-1) of a strided array), so the
    # finite differences were all zero and a zero gradient would have passed.
    a = np.arange(6.0).reshape(2, 3).T  # Fortran-ordered view
    num = yaad.testing.numerical_gradient(lambda x: x * x, [a], [np.ones(a.shape)])[0]
    np.testing.assert_allclose(num, 2 * a, rtol=1e-6)
    bad = yaad.op(np.square, name="fuzz_zero_square", vjp=lambda g, ans, x: g * 0.0)
    with pytest.raises(AssertionError):
        gradcheck(bad, [a])


def test_regression_i1_gradient_at_a_tiny_argument_is_finite():
    # Found by make fuzz (test_fuzz_gradient_matches_finite_differences[i1]).
    x = yaad.tensor(np.array(2.2250738585072014e-308), requires_grad=True)
    yaad.i1(x).backward()
    np.testing.assert_allclose(x.grad, 0.5)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_regression_gradient_of_equally_spaced_tensor_coordinates_gives_numpys_numbers(
        edge_order):
    # Found by make fuzz (test_fuzz_forward_matches_numpy[gradient], YAAD_FUZZ_SEED=911548):
    # NumPy takes equally spaced coordinates as one spacing (another formula); a tensor's
    # coordinates kept the general formula, whose numbers differ in the last bits. Now the
    # values are NumPy's and the derivatives still reach every coordinate.
    rng = np.random.default_rng(3)
    mismatches = 0
    for _ in range(200):
        x = np.cumsum(np.full(4, rng.uniform(0.5, 1.5)))
        f = rng.standard_normal(4).astype(np.float32)
        out = yaad.gradient(yaad.tensor(f, requires_grad=True),
                            yaad.tensor(x, requires_grad=True), edge_order=edge_order)
        want = np.gradient(f, x, edge_order=edge_order)
        assert out.dtype == want.dtype == np.float32
        mismatches += not np.array_equal(out.numpy(), want)
    assert mismatches == 0
    x = yaad.tensor(np.cumsum(np.full(4, 0.7)), requires_grad=True)
    f = yaad.tensor(rng.standard_normal(4), requires_grad=True)
    assert gradcheck(lambda a, b: yaad.gradient(a, b, edge_order=edge_order), [f, x])
    (gx,) = yaad.autograd.grad(yaad.sum(yaad.gradient(f, x, edge_order=edge_order) ** 2), [x])
    assert np.count_nonzero(np.asarray(gx)) == 4  # every coordinate, not the first spacing only


def test_regression_solve_sylvester_with_a_real_and_a_complex_matrix():
    # Found by make fuzz (test_fuzz_forward_matches_numpy[linalg.solve_sylvester]): the
    # oracle was wrong, not yaad. SciPy 1.17's solve_sylvester(a, b, q) with a real `a`
    # whose eigenvalues are complex and a complex `b` returns an x with a @ x + x @ b != q
    # (0.16 where 4/26 is right); the fuzz oracle now promotes the inputs first. The
    # residual is the oracle here.
    a = np.array([[3.0, 1.0], [-1.0, 3.0]], np.float32)
    b = 2 * np.eye(3, dtype=np.complex128)
    q = np.ones((2, 3), np.float32)
    x = yaad.linalg.solve_sylvester(yaad.tensor(a), yaad.tensor(b), yaad.tensor(q)).numpy()
    assert x.dtype == np.complex128
    np.testing.assert_allclose(a @ x + x @ b, q, atol=1e-6)
    np.testing.assert_allclose(x, np.repeat([[4 / 26], [6 / 26]], 3, axis=1), rtol=1e-6)
