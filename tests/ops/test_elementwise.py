"""Table-driven tests of every elementwise op: forward against NumPy/SciPy, gradients and
second derivatives against finite differences, dtypes, broadcasting, subgradients.

The table is ``tests/op_cases/elementwise.py`` (read by the fuzz and second-order suites too): it
must
cover every elementwise op in ``yaad.registry``, and a new op without a row fails
``test_table_covers_every_elementwise_op``.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import yaad
from tests.op_cases import ELEMENTWISE, NO_GRADIENT, resolve, row_function, row_inputs
from tests.support.arrays import assert_like_numpy
from yaad.ops import elementwise as ew
from yaad.testing import gradcheck, gradgradcheck

CASES = ELEMENTWISE  # one row an op: tests/op_cases/elementwise.py


def _elementwise_op_names() -> set:
    """Every elementwise op of yaad: those of ops/elementwise.py and any other op marked
    ``elementwise`` that yaad exports."""
    names = {v.op.name for v in vars(ew).values() if hasattr(v, "op")}
    for name, spec in yaad.registry.items():
        public = getattr(yaad, name, None)
        if spec.elementwise and getattr(public, "op", None) is spec:
            names.add(name)
    return names


def test_table_covers_every_elementwise_op():
    names = _elementwise_op_names()
    covered = set(CASES) | set(NO_GRADIENT)
    assert not names - covered, (
        f"elementwise ops without a test row: {names - covered}: add a row to "
        "ELEMENTWISE (or NO_GRADIENT) in tests/op_cases/elementwise.py")
    assert not covered - names, f"test rows for ops that do not exist: {covered - names}"


def test_a_new_op_without_a_row_fails(monkeypatch):
    # Guards the guard: an op declared in ops/elementwise.py (its source row) fails the
    # coverage of this table and of the fuzz table until tests/op_cases/elementwise.py has its row.
    from tests.op_cases import builtin_ops, covered_ops

    monkeypatch.setattr(ew, "_rows", list(ew._rows))
    fake = ew.elementwise_op("fake_sin", np.sin, lambda _a, x: yaad.cos(x))
    monkeypatch.setattr(ew, "fake_sin", fake, raising=False)
    try:
        with pytest.raises(AssertionError, match="without a test row: {'fake_sin'}"):
            test_table_covers_every_elementwise_op()
        assert "fake_sin" in set(builtin_ops()) - covered_ops()
        monkeypatch.setitem(ELEMENTWISE, "fake_sin", ELEMENTWISE["sin"])
        test_table_covers_every_elementwise_op()
    finally:
        yaad.registry.pop("fake_sin")


def _fn(name: str) -> Callable:
    return row_function(CASES[name], resolve(CASES[name].path or name))


def _ref(name: str) -> Callable:
    return row_function(CASES[name], CASES[name].ref)


def _inputs(name: str, dtype: Any, seed: int = 0) -> list:
    return row_inputs(CASES[name], dtype, np.random.default_rng(seed))


def _complex_cases(status: str) -> list:
    return [n for n, c in CASES.items() if c.complex == status]


DTYPES = [np.float64, np.float32, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_equals_numpy(name, dtype):
    if np.dtype(dtype).kind == "c" and CASES[name].complex != "yes":
        pytest.skip("not defined on complex input")
    xs = _inputs(name, dtype)
    with np.errstate(all="ignore"):
        expected = _ref(name)(*xs)
        out = _fn(name)(*[yaad.tensor(x, requires_grad=True) for x in xs])
        plain = _fn(name)(*xs)
    assert isinstance(out, yaad.Tensor)
    assert_like_numpy(out, expected)
    assert_like_numpy(plain, expected)  # arrays in, arrays out
    assert isinstance(plain, np.ndarray)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_real(name):
    gradcheck(_fn(name), _inputs(name, np.float64))


@pytest.mark.parametrize("name", sorted(_complex_cases("yes")))
def test_gradient_complex(name):
    # Every input complex, then complex mixed with real (the real input's gradient is real).
    xs = _inputs(name, np.complex128)
    gradcheck(_fn(name), xs)
    if len(xs) > 1:
        gradcheck(_fn(name), [xs[0], _inputs(name, np.float64, seed=1)[1]])


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.second != "no"))
def test_second_derivatives_real(name):
    gradgradcheck(_fn(name), _inputs(name, np.float64))


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items()
                                        if c.complex == "yes" and c.second == "yes"))
def test_second_derivatives_complex(name):
    gradgradcheck(_fn(name), _inputs(name, np.complex128))


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_gradients_stay_float32(name):
    x64 = _inputs(name, np.float64)
    x32 = [x.astype(np.float32) for x in x64]
    grads = {}
    for key, xs in (("f32", x32), ("f64", x64)):
        ts = [yaad.tensor(x, requires_grad=True) for x in xs]
        yaad.sum(yaad.real(_fn(name)(*ts))).backward()  # real: wofz is complex on reals
        grads[key] = [t.grad for t in ts]
    for g32, g64, x in zip(grads["f32"], grads["f64"], x32):
        assert g32.dtype == np.float32 and g32.shape == x.shape
        np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if len(c.domains) == 2))
def test_python_scalar_operands(name):
    fn, ref = _fn(name), _ref(name)
    x, y = (v.reshape(-1)[:3].astype(np.float32) for v in _inputs(name, np.float64))
    sx, sy = (float(np.mean(d.real[-1])) for d in CASES[name].domains)
    with np.errstate(all="ignore"):
        assert_like_numpy(fn(yaad.tensor(x), sy), ref(x, sy))  # float32 stays float32
        assert_like_numpy(fn(sx, yaad.tensor(y)), ref(sx, y))
    gradcheck(lambda a: fn(a, sy), x.astype(np.float64))
    gradcheck(lambda b: fn(sx, b), y.astype(np.float64))


@pytest.mark.parametrize("name", sorted(_complex_cases("raises")))
def test_real_only_raises_for_complex(name):
    xs = [yaad.tensor(x, requires_grad=True) for x in _inputs(name, np.complex128)]
    try:
        out = _fn(name)(*xs)
    except TypeError as e:  # NumPy/SciPy have no complex loop
        assert name in str(e)
        return
    with pytest.raises(TypeError, match=f"{name}.*complex"):
        yaad.sum(yaad.real(out) if out.dtype.kind == "c" else out).backward()


@pytest.mark.parametrize("name", sorted(NO_GRADIENT))
def test_nondifferentiable_ops(name):
    ref, args = NO_GRADIENT[name].ref, NO_GRADIENT[name].args
    ts = [yaad.tensor(a, requires_grad=a.dtype.kind in "fc") for a in args]
    with np.errstate(all="ignore"):
        out = getattr(yaad, name)(*ts)
        expected = ref(*args)
    assert_like_numpy(out, expected)
    assert not out.requires_grad


# ---- documented subgradients and strong zeros -----------------------------------------


def _grad(f, *values):
    ts = [yaad.tensor(np.asarray(v, dtype=float), requires_grad=True) for v in values]
    yaad.sum(f(*ts)).backward()
    return [t.grad for t in ts]


def test_abs_at_zero_has_zero_gradient():
    (g,) = _grad(yaad.abs, [0.0, -2.0, 3.0])
    np.testing.assert_array_equal(g, [0.0, -1.0, 1.0])
    z = yaad.tensor(np.array([0j, 3 + 4j]), requires_grad=True)
    yaad.sum(yaad.abs(z)).backward()
    np.testing.assert_allclose(z.grad, [0, 0.6 + 0.8j])


def test_maximum_minimum_ties_split_evenly():
    for f in (yaad.maximum, yaad.minimum, yaad.fmax, yaad.fmin):
        gx, gy = _grad(f, [1.0, 2.0, 3.0], [1.0, 0.0, 5.0])
        big = f is yaad.maximum or f is yaad.fmax
        np.testing.assert_array_equal(gx, [0.5, 1.0 if big else 0.0, 0.0 if big else 1.0])
        np.testing.assert_array_equal(gx + gy, [1.0, 1.0, 1.0])


def test_fmax_fmin_ignore_nan():
    gx, gy = _grad(yaad.fmax, [np.nan, 1.0], [2.0, np.nan])
    np.testing.assert_array_equal(gx, [0.0, 1.0])
    np.testing.assert_array_equal(gy, [1.0, 0.0])


def test_relu_at_zero_has_zero_gradient():
    (g,) = _grad(yaad.relu, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])


@pytest.mark.parametrize("f", [yaad.floor, yaad.ceil, yaad.trunc, yaad.rint, yaad.round,
                               yaad.fix, yaad.sign])
def test_piecewise_constant_functions_have_zero_gradient(f):
    (g,) = _grad(f, [-1.5, -1.0, 0.0, 0.5, 2.0, 2.7])
    np.testing.assert_array_equal(g, np.zeros(6))


def test_round_with_decimals():
    x = yaad.tensor(np.array([1.2345, -2.5678]), requires_grad=True)
    y = yaad.round(x, 2)
    assert_like_numpy(y, np.round(x.data, 2))
    yaad.sum(y).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0])


def test_clip_gradient_goes_to_the_active_bound():
    x = yaad.tensor(np.array([-2.0, 0.0, 2.0]), requires_grad=True)
    lo = yaad.tensor(np.array(-1.0), requires_grad=True)
    hi = yaad.tensor(np.array(1.0), requires_grad=True)
    yaad.sum(yaad.clip(x, lo, hi) * np.array([1.0, 2.0, 3.0])).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 2.0, 0.0])
    assert lo.grad == 1.0 and hi.grad == 3.0


@pytest.mark.parametrize("branch, expected", [
    (lambda x: yaad.log(x), [0.0, 0.0, 0.5]),
    (lambda x: yaad.sqrt(x), [0.0, 0.0, 0.5 / np.sqrt(2.0)]),
    (lambda x: 1 / x, [0.0, 0.0, -0.25]),
    (lambda x: yaad.log(x) * yaad.sqrt(x) + yaad.exp(yaad.log(x)), None),
])
def test_where_ignores_nan_and_inf_in_the_branch_not_taken(branch, expected):
    x = yaad.tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    with np.errstate(all="ignore"):
        y = yaad.where(x > 0, branch(x), 0.0)
        yaad.sum(y).backward()
    assert np.all(np.isfinite(x.grad))
    assert x.grad[0] == 0.0 and x.grad[1] == 0.0
    if expected is not None:
        np.testing.assert_allclose(x.grad, expected)


def test_where_strong_zero_in_second_derivatives():
    x = yaad.tensor(np.array([-1.0, 4.0]), requires_grad=True)
    with np.errstate(all="ignore"):
        y = yaad.sum(yaad.where(x > 0, yaad.sqrt(x) ** 3, 0.0))
        (g,) = yaad.autograd.grad(y, [x], create_graph=True)
        (h,) = yaad.autograd.grad(yaad.sum(g), [x])
    np.testing.assert_allclose(g.data, [0.0, 1.5 * 2.0])
    np.testing.assert_allclose(h, [0.0, 0.75 / 2.0])


def test_where_strong_zero_under_vmap_batches():
    # Hessians per example through where, with a NaN in the branch not taken: the strong
    # zeros of the inner create_graph pass run on the whole batch (a per-example loop would
    # warn), with the values of the test above
    f = lambda x: yaad.sum(yaad.where(x > 0, yaad.sqrt(x) ** 3, 0.0))  # noqa: E731
    xs = yaad.tensor(np.array([[-1.0, 4.0], [4.0, -1.0]]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        h = yaad.func.vmap(yaad.func.hessian(f))(xs)
    np.testing.assert_allclose(h.data, [[[0.0, 0.0], [0.0, 0.375]],
                                        [[0.375, 0.0], [0.0, 0.0]]])


def test_complex_conventions():
    # |z|^2 at 3+4j gives 6+8j; the holomorphic exp gives g * conj(exp(z)).
    z = yaad.tensor(np.array([3 + 4j]), requires_grad=True)
    yaad.sum(yaad.abs(z) ** 2).backward()
    np.testing.assert_allclose(z.grad, [6 + 8j])
    z = yaad.tensor(np.array([0.5 + 0.25j]), requires_grad=True)
    yaad.sum(yaad.real(yaad.exp(z))).backward()
    np.testing.assert_allclose(z.grad, np.conj(np.exp(z.data)))
    # imag: d Im(z) / dy = 1, so the gradient is 1j; angle: i z / |z|^2.
    z = yaad.tensor(np.array([1.0 + 1.0j]), requires_grad=True)
    yaad.sum(yaad.imag(z) + yaad.angle(z)).backward()
    np.testing.assert_allclose(z.grad, [1j + 1j * (1 + 1j) / 2])


def test_xlogy_gradient_in_x_at_zero_matches_torch():
    # d/dx x log(y) = log(y), also at x = 0 (a parameter such as (a - 1) log x at a = 1);
    # 0 only where log(y) is undefined, as in PyTorch.
    import torch

    x0, y0 = np.array([0.0, 0.0, 1.0, 0.0, 0.0]), np.array([2.0, 0.0, 3.0, -1.0, 0.5])
    for name, shift in (("xlogy", 0.0), ("xlog1py", -1.0)):
        x = yaad.tensor(x0, requires_grad=True)
        y = yaad.tensor(y0 + shift, requires_grad=True)
        with np.errstate(all="ignore"):
            getattr(yaad, name)(x, y).sum().backward()
        xt = torch.tensor(x0, requires_grad=True)
        yt = torch.tensor(y0 + shift, requires_grad=True)
        ft = torch.xlogy if name == "xlogy" else torch.special.xlog1py
        ft(xt, yt).sum().backward()
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-15)
        # d/dy at x = 0 is 0, also at y = 0 (x log(y) is 0 for every y there): PyTorch's
        # x / y is 0 / 0 = NaN at that one point, everywhere else the same
        want = yt.grad.numpy()
        assert np.isnan(want[1])
        want[1] = 0.0
        np.testing.assert_allclose(y.grad, want, rtol=1e-15)


def test_heaviside_is_its_second_argument_where_the_first_is_zero():
    # heaviside(x1, x2) = x2 at x1 == 0 (either sign of zero): slope 1 in x2 there, 0
    # elsewhere; a step in x1 (0 on both sides of the jump, as for sign). It recorded no
    # gradient for x2 at all: the gradient was dropped without a word.
    x1 = np.array([-0.0, 0.0, -2.0, 3.0, np.nan])
    x2 = yaad.tensor(np.array([0.25, 0.75, 0.5, 0.5, 0.5]), requires_grad=True)
    a = yaad.tensor(x1, requires_grad=True)
    out = yaad.heaviside(a, x2)
    np.testing.assert_array_equal(out.data, np.heaviside(x1, x2.data))
    (out * np.arange(1.0, 6.0)).sum().backward()
    np.testing.assert_array_equal(x2.grad, [1.0, 2.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(a.grad, np.zeros(5))
    assert x2.grad.dtype == np.float64
    # the same slope by central differences in x2
    h = 1e-6
    fd = (np.heaviside(x1, x2.data + h) - np.heaviside(x1, x2.data - h)) / (2 * h)
    np.testing.assert_allclose(np.nan_to_num(fd) * np.arange(1.0, 6.0), x2.grad, atol=1e-9)


@pytest.mark.parametrize("name", ["multiply", "add", "divide", "power", "maximum", "arctan2"])
def test_a_list_operand_is_an_array_for_the_gradient(name):
    # x * [1.0, 3.0] ran forward (NumPy takes the list as an array) and then crashed in
    # backward: the rules read the list as an operand ('list' has no 'conjugate')
    fn = getattr(yaad, name)
    xd = np.array([0.5, 2.0])
    other = [1.5, 3.0]
    x = yaad.tensor(xd, requires_grad=True)
    for args in ((x, other), (other, x)):
        x.grad = None
        out = fn(*args)
        np.testing.assert_allclose(out.data, getattr(np, name)(*[
            xd if a is x else np.asarray(a) for a in args]))
        (out * np.array([1.0, -2.0])).sum().backward()
        h = 1e-6
        fd = [(getattr(np, name)(*[xd + h * e if a is x else np.asarray(a) for a in args])
               - getattr(np, name)(*[xd - h * e if a is x else np.asarray(a) for a in args])
               ) @ np.array([1.0, -2.0]) / (2 * h) for e in np.eye(2)]
        np.testing.assert_allclose(x.grad, fd, rtol=1e-6)
        assert x.grad.dtype == np.float64 and x.grad.shape == (2,)
