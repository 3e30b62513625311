"""No silent wrong answers (issue 7): where a gradient could quietly be wrong, it is right
or it raises.

In-place changes of saved values, non-differentiable points (the documented
subgradients), integer-valued paths, float32 kept float32, complex gradients never
conjugated, compiled tapes that re-record when a branch changes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import yaad
from tests.op_cases import CASES, available
from tests.support.op_calls import as_inputs
from tests.support.reliability import fuzz_settings
from tests.support.strategies import F32


def leaf(values, dtype=np.float64):
    return yaad.tensor(np.array(values, dtype=dtype), requires_grad=True)


def grad_of(f, *xs):
    """Gradients of the real scalar ``f(*xs)`` for every x (zeros where unused)."""
    ts = [leaf(x, np.asarray(x).dtype) for x in xs]
    f(*ts).backward()
    return [t.grad if t.grad is not None else np.zeros_like(t.data) for t in ts]


# ---- in-place change of a saved value --------------------------------------------------


def _modify_output_in_place(x):
    y = yaad.exp(x)  # exp saves its output
    z = y + 0.0  # add saves nothing
    y += 1.0
    return z, "exp"


def _modify_input_in_place(x):
    y = x * 1.0
    z = yaad.sin(y)  # sin saves its input
    y += 1.0
    return z, "sin"


def _setitem_on_saved_input(x):
    y = x * 1.0
    z = y ** 3
    y[0] = 5.0
    return z, "power"


def _no_grad_update_of_saved_input(x):
    y = x * 1.0
    z = y * y
    with yaad.no_grad():
        y.mul_(2.0)
    return z, "multiply"


def _write_through_a_view(x):
    y = x * 1.0
    z = yaad.tanh(y)  # tanh saves its output, y is its input: neither is hit...
    w = yaad.log(y)  # ...but log saves y
    v = y[1:]
    with yaad.no_grad():
        v += 1.0  # memory of y, through a view
    return z + w, "log"


@pytest.mark.parametrize("scenario", [_modify_output_in_place, _modify_input_in_place,
                                      _setitem_on_saved_input, _no_grad_update_of_saved_input,
                                      _write_through_a_view])
def test_in_place_change_of_a_saved_value_raises_at_backward(scenario):
    x = leaf([0.5, 1.0, 2.0])
    z, name = scenario(x)
    with pytest.raises(RuntimeError, match=f"in-place.*'{name}'|'{name}'.*in-place"):
        z.sum().backward()
    assert x.grad is None


def test_in_place_change_of_a_value_nobody_saved_is_fine():
    x = leaf([0.5, 1.0, 2.0])
    y = x * 2.0
    z = y + 1.0  # add saves nothing
    y += 1.0
    (z.sum() + y.sum()).backward()
    np.testing.assert_array_equal(x.grad, [4.0, 4.0, 4.0])


def test_in_place_change_through_a_view_reaches_the_base():
    x, y = leaf([0.5, 1.0, 2.0]), leaf([1.0, 2.0])
    h = x * 1.0
    v = h[0:2]
    v += y  # writes into h's memory, recorded
    np.testing.assert_array_equal(h.data, [1.5, 3.0, 2.0])
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * np.array([1.5, 3.0, 2.0]))
    np.testing.assert_allclose(y.grad, 2 * np.array([1.5, 3.0]))


def test_in_place_change_is_detected_through_retain_graph():
    x = leaf([0.5, 1.0])
    y = x * 1.0
    z = yaad.sin(y).sum()
    z.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad, np.cos([0.5, 1.0]))
    with yaad.no_grad():
        y += 1.0
    with pytest.raises(RuntimeError, match="sin"):
        z.backward()


# ---- non-differentiable points: the documented subgradients ------------------------------


def test_abs_at_zero_has_gradient_zero():
    (g,) = grad_of(lambda x: yaad.abs(x).sum(), [0.0, -0.0, 2.0, -3.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, -1.0])
    (g,) = grad_of(lambda z: yaad.abs(z).sum(), np.array([0j, 3 + 4j]))
    np.testing.assert_allclose(g, [0.0, 0.6 + 0.8j])


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_ties_split_the_gradient_evenly(name):
    f = getattr(yaad, name)
    gx, gy = grad_of(lambda x, y: f(x, y).sum(), [1.0, 2.0, 3.0], [1.0, 0.0, 5.0])
    big, small = (1.0, 0.0) if name in ("maximum", "fmax") else (0.0, 1.0)
    np.testing.assert_array_equal(gx, [0.5, big, small])
    np.testing.assert_array_equal(gy, [0.5, small, big])


def test_relu_at_zero_has_gradient_zero():
    (g,) = grad_of(lambda x: yaad.relu(x).sum(), [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])


def test_clip_at_a_bound_passes_the_gradient_to_the_input():
    # Documented: the gradient passes where a_min <= x <= a_max.
    gx, glo, ghi = grad_of(lambda x, lo, hi: yaad.clip(x, lo, hi).sum(),
                           [-2.0, -1.0, 0.0, 1.0, 2.0], [-1.0] * 5, [1.0] * 5)
    np.testing.assert_array_equal(gx, [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(glo, [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(ghi, [0, 0, 0, 0, 1])


def test_regression_clip_with_lower_bound_above_upper():
    # NumPy (and PyTorch) give a_max everywhere when a_min > a_max, so the whole gradient
    # belongs to a_max. Found by the fuzz table's array bounds; before the fix a_min got
    # the gradient where x < a_min as well.
    gx, glo, ghi = grad_of(lambda x, lo, hi: yaad.clip(x, lo, hi).sum(),
                           [0.5, 1.5, 3.0], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gx, [0, 0, 0])
    np.testing.assert_array_equal(glo, [0, 0, 0])
    np.testing.assert_array_equal(ghi, [1, 1, 1])


def test_hypot_at_the_origin_has_gradient_zero():
    gx, gy = grad_of(lambda x, y: yaad.hypot(x, y).sum(), [0.0, 3.0], [0.0, 4.0])
    np.testing.assert_allclose(gx, [0.0, 0.6])
    np.testing.assert_allclose(gy, [0.0, 0.8])


@pytest.mark.parametrize("branch", ["sqrt", "log", "reciprocal", "arcsin"])
def test_where_keeps_nan_of_the_branch_not_taken_out(branch):
    fn = getattr(yaad, branch)
    x = leaf([-1.0, 0.0, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = yaad.where(x > 0.1, fn(x), x * 0.0)
        yaad.exp(y).sum().backward()  # an elementwise op above the where, too
    assert np.all(np.isfinite(x.grad)), x.grad
    np.testing.assert_array_equal(x.grad[:2], [0.0, 0.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_power_at_zero():
    # d/dx x**2 at 0 is 0; d/dy 0**y is 0 (the limit for y > 0), never nan
    gx, gy = grad_of(lambda x, y: (x ** y).sum(), [0.0, 0.0, 2.0], [2.0, 0.5, 3.0])
    np.testing.assert_array_equal(gx[[0, 2]], [0.0, 12.0])
    np.testing.assert_array_equal(gy[:2], [0.0, 0.0])


def _need(*names):
    missing = [n for n in names if not available(n)]
    if missing:
        pytest.skip(f"yaad.{', yaad.'.join(missing)} not written yet")


def test_argmax_indexed_value_gets_the_whole_gradient():
    x = leaf([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
    idx = np.argmax(x.data, axis=1)  # the first of tied maxima, as NumPy picks
    x[np.arange(2), idx].sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 1, 0], [1, 0, 0]])
    if available("argmax"):
        k = yaad.argmax(x, axis=1)
        assert not getattr(k, "requires_grad", False)
        np.testing.assert_array_equal(getattr(k, "data", k), idx)


def test_sort_sends_each_gradient_to_the_element_it_came_from():
    _need("sort")
    x = leaf([3.0, 1.0, 2.0, 1.0])
    w = np.array([10.0, 20.0, 30.0, 40.0])
    (yaad.sort(x) * w).sum().backward()
    # sorted: 1 (index 1), 1 (index 3), 2 (index 2), 3 (index 0); ties keep their order
    np.testing.assert_array_equal(x.grad, [40.0, 10.0, 30.0, 20.0])


@pytest.mark.parametrize("name", ["amax", "max"])
def test_amax_ties_share_the_gradient(name):
    _need("amax")
    x = leaf([1.0, 3.0, 3.0, 2.0])
    f = yaad.amax if name == "amax" else (lambda t: t.max())
    f(x).backward()
    # PyTorch's amax convention: the gradient is shared evenly by the tied maxima
    np.testing.assert_array_equal(x.grad, [0.0, 0.5, 0.5, 0.0])


# ---- integer-valued paths --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "rint", "fix", "round"])
def test_rounding_carries_an_exact_zero_gradient(name):
    f = getattr(yaad, name)
    (g,) = grad_of(lambda x: (f(x) + 0.0 * x).sum() + f(x * 3.0).sum(), [0.4, 1.5, -2.7])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    y = f(leaf([0.4, 1.5]))
    assert y.dtype == np.float64 and y.requires_grad  # a float result, zero gradient


def test_floor_divide_and_mod():
    gx, gy = grad_of(lambda x, y: (yaad.floor_divide(x, y) + yaad.mod(x, y)).sum(),
                     [7.5, -7.5], [2.0, 2.0])
    # x mod y = x - y * floor(x / y): d/dx = 1, d/dy = -floor(x / y)
    np.testing.assert_array_equal(gx, [1.0, 1.0])
    np.testing.assert_array_equal(gy, [-3.0, 4.0])


@pytest.mark.parametrize("cmp", ["equal", "not_equal", "less", "less_equal", "greater",
                                 "greater_equal", "isclose", "isnan", "isfinite", "signbit"])
def test_comparisons_carry_no_gradient(cmp):
    f = getattr(yaad, cmp)
    x = leaf([0.5, 1.0, 2.0])
    y = f(x, x * 0 + 1.0) if cmp not in ("isnan", "isfinite", "signbit") else f(x)
    assert y.dtype == np.bool_
    assert not y.requires_grad and y.grad_fn is None
    # a mask from a comparison multiplies: the gradient is the mask, nothing else
    ((x > 0.75) * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 1.0])


def test_cast_to_integer_cuts_the_gradient_path():
    x = leaf([0.5, 1.5])
    k = yaad.astype(x, np.int64)
    assert k.dtype == np.int64 and not k.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        yaad.astype(k, np.float64).sum().backward()


# ---- float32 stays float32 ---------------------------------------------------------------


def _float32_keys():
    return sorted(k for k, c in CASES.items() if F32 in c.dtypes and c.grad != "none"
                  and available(c.path))


@pytest.mark.parametrize("key", _float32_keys())
@fuzz_settings(4, 40)
@given(data=st.data())
def test_float32_stays_float32_in_values_and_gradients(key, data):
    case = CASES[key]
    dtype = data.draw(st.sampled_from([d for d in case.dtypes if d.itemsize <= 8]))
    call = case.draw(data, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = case.ref(*call.args, **call.kwargs)
        except Exception:
            return  # NumPy refuses the call (test_fuzz_ops checks that yaad refuses too)
        inputs = as_inputs(case, call)
        out = case.fn(*inputs, **call.kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    exps = expected if isinstance(expected, (tuple, list)) else (expected,)
    for o, e in zip(outs, exps):
        assert o.dtype == np.asarray(e).dtype, f"{key}: {o.dtype} != NumPy's {e.dtype}"
    loss = None
    rng = np.random.default_rng(0)
    for o in outs:
        if o.requires_grad:
            w = rng.standard_normal(o.shape).astype(o.dtype.char.lower() if o.dtype.kind
                                                    == "c" else o.dtype)
            term = yaad.real(o * w).sum()
            loss = term if loss is None else loss + term
    if loss is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss.backward()
    for t in inputs:
        if isinstance(t, yaad.Tensor) and t.requires_grad and t.grad is not None:
            assert t.grad.dtype == t.dtype, f"{key}: a {t.dtype} input got a {t.grad.dtype} grad"
            assert t.grad.shape == t.shape


@pytest.mark.parametrize("expr", [
    lambda x: x * 2.0, lambda x: 2.0 * x, lambda x: x + 1, lambda x: x / 3,
    lambda x: 3.0 / x, lambda x: x ** 2, lambda x: 2.0 ** x, lambda x: x - 0.5,
    lambda x: yaad.mean(x), lambda x: yaad.where(x > 1, x, 0.0), lambda x: yaad.clip(x, 0, 1.5),
    lambda x: x @ np.ones((3, 2), dtype=np.float32), lambda x: yaad.maximum(x, 1.0),
    lambda x: np.sin(x) * np.float32(2), lambda x: abs(x) ** 0.5,
])
def test_python_scalars_never_upcast_float32(expr):
    x = leaf([0.5, 1.0, 2.0], np.float32)
    y = expr(x)
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32


def test_mixed_precision_gradients_keep_each_input_dtype():
    a = leaf([1.0, 2.0], np.float32)
    b = leaf([3.0, 4.0], np.float64)
    z = leaf([1 + 1j, 2 - 1j], np.complex64)
    y = a * b + abs(z * a) ** 2
    assert y.dtype == np.float64
    y.sum().backward()
    assert (a.grad.dtype, b.grad.dtype, z.grad.dtype) == (np.float32, np.float64,
                                                          np.complex64)
    np.testing.assert_allclose(b.grad, [1.0, 2.0])
    np.testing.assert_allclose(z.grad, 2 * np.array([1 + 1j, 2 - 1j]) * np.array([1, 4]),
                               rtol=1e-6)


# ---- complex gradients are never conjugated ---------------------------------------------------


@pytest.mark.parametrize("form", [
    lambda z: abs(z) ** 2, lambda z: yaad.real(z * yaad.conj(z)),
    lambda z: yaad.real(z) ** 2 + yaad.imag(z) ** 2, lambda z: z.real ** 2 + z.imag ** 2,
    lambda z: yaad.square(yaad.absolute(z)), lambda z: np.abs(z) ** 2,
    lambda z: yaad.real(yaad.conj(z) * z), lambda z: yaad.real(z.conj() @ z),
])
def test_abs_squared_at_3_plus_4j_gives_6_plus_8j(form):
    for dtype in (np.complex128, np.complex64):
        z = yaad.tensor(np.array([3 + 4j], dtype=dtype), requires_grad=True)
        form(z).sum().backward()
        assert z.grad.dtype == dtype
        np.testing.assert_allclose(z.grad, [6 + 8j], rtol=1e-6)


def test_non_holomorphic_abs_squared_plus_real_cube():
    # L = |z|^2 + Re(z^3), z = x + iy: dL/dx = 2x + 3x^2 - 3y^2, dL/dy = 2y - 6xy,
    # so z.grad = dL/dx + i dL/dy = 2z + conj(3 z^2).
    z0 = np.array([3 + 4j, -1 + 0.5j, 0.2 - 2j])
    z = yaad.tensor(z0, requires_grad=True)
    (abs(z) ** 2 + yaad.real(z ** 3)).sum().backward()
    x, y = z0.real, z0.imag
    np.testing.assert_allclose(z.grad, (2 * x + 3 * x ** 2 - 3 * y ** 2) + 1j * (2 * y - 6 * x * y))
    np.testing.assert_allclose(z.grad, 2 * z0 + np.conj(3 * z0 ** 2))


def test_complex_gradient_matches_torch():
    import torch
    z0 = np.array([3 + 4j, -1 + 0.5j, 0.2 - 2j])
    w0 = np.array([[1 + 2j, 0.5], [-1j, 2 - 1j], [0.3, 1j]])
    z = yaad.tensor(z0, requires_grad=True)
    w = yaad.tensor(w0, requires_grad=True)
    (abs(z) ** 2 + yaad.real(z ** 3) + yaad.real(yaad.exp(z @ w)).sum()).sum().backward()
    zt = torch.tensor(z0, requires_grad=True)
    wt = torch.tensor(w0, requires_grad=True)
    (zt.abs() ** 2 + (zt ** 3).real + torch.exp(zt @ wt).real.sum()).sum().backward()
    np.testing.assert_allclose(z.grad, zt.grad.numpy())
    np.testing.assert_allclose(w.grad, wt.grad.numpy())


def test_gradient_descent_on_a_complex_parameter_descends():
    # With a conjugated gradient, z -= lr * z.grad would move the imaginary part the
    # wrong way and diverge from the minimum at a.
    a = 1.0 - 2.0j
    z = yaad.tensor(np.array(0j), requires_grad=True)
    for _ in range(50):
        z.grad = None
        (abs(z - a) ** 2).backward()
        with yaad.no_grad():
            z -= 0.25 * z.grad
    assert abs(z.item() - a) < 1e-10


# ---- compiled tapes: a changed branch re-records ----------------------------------------------


def test_compiled_tape_re_records_when_the_branch_changes():
    if not hasattr(yaad, "compile"):
        pytest.skip("yaad.compile not written yet")

    def f(x):
        y = x if x.sum() > 0 else -x
        return (y * y * y).sum()

    step = yaad.compile(f)
    for sign in (1, -1, 1, -1, -1, 1):
        x0 = sign * np.array([0.5, 1.0, 2.0])
        x = yaad.tensor(x0, requires_grad=True)
        loss = step(x)
        np.testing.assert_allclose(float(loss.data), np.sum(np.abs(x0) ** 3))
        loss.backward()
        np.testing.assert_allclose(x.grad, 3 * x0 ** 2 * np.sign(x0))


def test_compiled_tape_re_records_for_a_new_shape():
    if not hasattr(yaad, "compile"):
        pytest.skip("yaad.compile not written yet")
    step = yaad.compile(lambda x: (yaad.sin(x) * x).sum())
    for n in (3, 4, 3):
        x0 = np.linspace(0.1, 1.0, n)
        x = yaad.tensor(x0, requires_grad=True)
        step(x).backward()
        np.testing.assert_allclose(x.grad, np.cos(x0) * x0 + np.sin(x0))


def test_float32_parametrisation_covers_the_table():
    # Guards the guard: the float32 test above runs over most of the op table.
    assert len(_float32_keys()) >= 60


# ---- points where naive rules divide by zero ------------------------------------------------


def test_prod_with_zero_entries_has_the_exact_gradient():
    # d/dx_i prod(x) = prod of the others; a rule dividing by x_i gives nan at zeros
    for x0, expect in (([2.0, 0.0, 3.0], [0.0, 6.0, 0.0]), ([0.0, 0.0, 3.0], [0, 0, 0]),
                       ([2.0, 5.0, 3.0], [15.0, 6.0, 10.0])):
        (g,) = grad_of(lambda x: yaad.prod(x), x0)
        np.testing.assert_array_equal(g, expect)
    (g,) = grad_of(lambda x: yaad.cumprod(x).sum(), [2.0, 0.0, 3.0])
    # cumprod = [x0, x0 x1, x0 x1 x2]: d/dx0 = 1 + x1 + x1 x2, d/dx1 = x0 + x0 x2, d/dx2 = x0 x1
    np.testing.assert_array_equal(g, [1.0, 8.0, 0.0])


def test_norm_at_zero_has_subgradient_zero():
    for norm in (yaad.linalg.norm, yaad.linalg.vector_norm):
        (g,) = grad_of(norm, [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    (g,) = grad_of(lambda z: yaad.linalg.norm(z), np.zeros(2, complex))
    np.testing.assert_array_equal(g, [0, 0])


def test_logsumexp_and_softmax_with_minus_infinity_stay_finite():
    (g,) = grad_of(lambda x: yaad.logsumexp(x), [-np.inf, 0.0, np.log(3.0)])
    np.testing.assert_allclose(g, [0.0, 0.25, 0.75])
    (g,) = grad_of(lambda x: (yaad.softmax(x) * np.array([1.0, 2.0, 3.0])).sum(),
                   [-np.inf, 0.0, 0.0])
    assert np.all(np.isfinite(g)) and g[0] == 0.0


def test_eigenvalues_of_a_degenerate_matrix_have_a_finite_gradient():
    # eigvalsh(A).sum() = trace(A): the gradient is the identity even when every
    # eigenvalue is the same (a rule with 1 / (w_i - w_j) gives nan or inf)
    (g,) = grad_of(lambda a: yaad.linalg.eigh(a)[0].sum(), np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    (g,) = grad_of(lambda a: (yaad.linalg.svd(a, compute_uv=False) ** 2).sum(), 2 * np.eye(3))
    np.testing.assert_allclose(g, 4 * np.eye(3), atol=1e-12)  # sum s^2 = |A|_F^2


def test_matrix_power_zero_is_a_constant():
    a = leaf(np.array([[2.0, 1.0], [0.5, 3.0]]))
    y = yaad.linalg.matrix_power(a, 0)
    np.testing.assert_array_equal(y.data, np.eye(2))
    (y * a).sum().backward()  # only the explicit factor a carries the gradient
    np.testing.assert_array_equal(a.grad, np.eye(2))


# ---- copies of a computed tensor -------------------------------------------------------


def _simulate(w, lib, keep):
    """A few explicit Euler steps keeping a history of the state (a dict of tensors)."""
    state = {"pos": w * 1.0, "vel": w * 0.0}
    history = []
    for _ in range(3):
        state["vel"] = state["vel"] - 0.1 * state["pos"]
        state["pos"] = state["pos"] + 0.1 * state["vel"]
        history.append(keep(state))
    return sum(lib.sum(h["pos"] ** 2) for h in history)


def test_a_deep_copy_of_a_computed_tensor_raises_as_in_pytorch():
    # A deep copy of a computed tensor copied its graph down to copies of the leaves: a
    # backward through it reached none of the user's leaves, silently (x.grad stayed
    # None, func.grad gave zeros for a simulation keeping copy.deepcopy(state)).
    import copy

    import jax
    import torch

    w0 = np.array([1.0, 2.0, 3.0])
    tx = torch.tensor(w0, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaves"):  # the oracle: PyTorch refuses
        _simulate(tx, torch, copy.deepcopy)
    x = leaf(w0)
    with pytest.raises(RuntimeError, match=r"copy\.deepcopy.*computed.*clone\(\)"):
        _simulate(x, yaad, copy.deepcopy)
    with pytest.raises(RuntimeError, match=r"copy\.deepcopy"):
        yaad.func.grad(lambda w: _simulate(w, yaad, copy.deepcopy))(w0)
    with pytest.raises(RuntimeError, match=r"copy\.deepcopy"):
        copy.deepcopy(x[1:])  # a view of a leaf that requires grad is computed too
    # the remedy the message names is differentiable: JAX's gradient of the same program
    with jax.enable_x64(True):
        expected = jax.grad(lambda w: _simulate(w, jax.numpy, dict))(w0)
    got = yaad.func.grad(lambda w: _simulate(w, yaad, lambda s: {k: v.clone()
                                                              for k, v in s.items()}))(w0)
    np.testing.assert_allclose(got, np.asarray(expected), rtol=1e-14)
    # leaves and tensors that need no gradient are deep-copied as before (as in PyTorch)
    x.grad = np.ones(3)
    y = copy.deepcopy(x)
    assert y is not x and y.is_leaf and y.requires_grad and y.data is not x.data
    np.testing.assert_array_equal(y.data, w0)
    np.testing.assert_array_equal(y.grad, np.ones(3))
    with yaad.no_grad():
        z = copy.deepcopy(x * 2)
    assert not z.requires_grad
    np.testing.assert_array_equal(z.data, 2 * w0)
