"""Indexing ``x[...]``: basic, advanced (integer arrays, lists, tensors) and boolean
indices give NumPy's values, and gradients scattered back with accumulation for
repeated indices; ``take``, ``take_along_axis``, ``scatter_add``, ``index_put``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import yaad
from tests.support.shape_checks import assert_like, check_jvp, rand
from yaad.ops.shape import _repeats
from yaad.testing import gradcheck, gradgradcheck

C128, F32 = np.complex128, np.float32

INDICES = [
    ("int", 1),
    ("negative_int", -1),
    ("slice", slice(1, None)),
    ("step", (slice(None, None, -2), slice(0, 3))),
    ("ellipsis_none", (Ellipsis, None, 1)),
    ("int_array", np.array([2, 0])),
    ("repeated", np.array([1, 1, 2, 1])),
    ("negative_repeat", np.array([-1, 2])),
    ("list", [0, 2, 0]),
    ("two_arrays", (np.array([0, 2, 2]), np.array([1, 3, 1]))),
    ("two_arrays_repeat", (np.array([0, 2, 0]), np.array([1, 3, 1]))),
    ("array_slice", (np.array([[0], [2]]), slice(1, 3))),
    ("slice_array_repeat", (slice(None), np.array([3, 0, 3]))),
    ("split_advanced", (np.array([0, 1]), slice(None), np.array([1, 1]))),
    ("bool_mask", "mask"),
    ("bool_row", np.array([True, False, True])),
    ("bool_and_int_array", (np.array([True, False, True]), np.array([1, 1]))),
    ("scalar_element", (1, 2, 0)),
    ("zero_d_int", np.array(2)),
    ("empty_list", []),
    ("nothing", ()),
]


def _index(idx, x):
    return x > 0 if isinstance(idx, str) else idx


def _expected_gradient(x, idx, w):
    out = np.zeros_like(x)
    np.add.at(out, idx, w)
    return out


@pytest.mark.parametrize("name,idx", INDICES, ids=[i[0] for i in INDICES])
@pytest.mark.parametrize("dtype", [np.float64, F32, C128], ids=["f64", "f32", "c128"])
def test_getitem_values_and_gradient(name, idx, dtype):
    x = rand((3, 4, 2), dtype)
    idx = _index(idx, x.real)
    t = yaad.tensor(x, requires_grad=True)
    y = t[idx]
    assert_like(y, x[idx])
    w = rand(np.shape(x[idx]), dtype, seed=7)
    (y * w).real.sum().backward()
    assert t.grad.dtype == dtype
    np.testing.assert_allclose(t.grad, _expected_gradient(x, idx, np.conj(w)), rtol=1e-6)


@pytest.mark.parametrize("name,idx", INDICES, ids=[i[0] for i in INDICES])
def test_getitem_finite_differences(name, idx):
    x = rand((3, 4, 2), C128)
    idx = _index(idx, x.real)
    gradcheck(lambda a: a[idx], [x])
    gradgradcheck(lambda a: a[idx] * a[idx], [x.real.copy()])
    check_jvp(lambda a: a[idx], [x.real.copy()])


def test_index_with_tensors_and_lists_of_tensors():
    x = rand((4, 3))
    t = yaad.tensor(x, requires_grad=True)
    i = yaad.tensor([3, 1, 3])
    assert_like(t[i], x[[3, 1, 3]])
    assert_like(t[i, yaad.tensor(0)], x[[3, 1, 3], 0])
    assert_like(t[[yaad.tensor(0), yaad.tensor(2)]], x[[0, 2]])
    mask = yaad.tensor(x > 0)
    assert_like(t[mask], x[x > 0])
    t[i].sum().backward()
    np.testing.assert_array_equal(t.grad, [[0] * 3, [1] * 3, [0] * 3, [2] * 3])


def test_a_recorded_list_index_is_frozen():
    t = yaad.tensor(rand((4,)), requires_grad=True)
    idx = [0, 1]
    y = t[idx]
    idx.append(3)
    y.sum().backward()
    np.testing.assert_array_equal(t.grad, [1, 1, 0, 0])


def test_basic_indexing_returns_a_view():
    x = rand((3, 4))
    t = yaad.tensor(x)
    v = t[1:, ::2]
    assert np.shares_memory(v.data, t.data)
    assert not np.shares_memory(t[[0, 1]].data, t.data)


def test_out_of_range_and_bad_indices_raise():
    t = yaad.tensor(rand((3,)), requires_grad=True)
    with pytest.raises(IndexError, match="getitem"):
        t[3]
    with pytest.raises(IndexError, match="getitem"):
        t[np.array([0.5])]
    with pytest.raises(TypeError, match="integer tensors"):
        t[yaad.tensor([0.0, 1.0]).sum():]


def test_iteration_and_gradient():
    t = yaad.tensor(rand((3, 2)), requires_grad=True)
    rows = list(t)
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)
    (rows[0] * 2 + rows[2]).sum().backward()
    np.testing.assert_array_equal(t.grad, [[2, 2], [0, 0], [1, 1]])


def test_strong_zero_off_the_selection():
    # log of the unselected entries is NaN; indexing selects the others only
    t = yaad.tensor([-1.0, 2.0, 0.0], requires_grad=True)
    with np.errstate(all="ignore"):
        yaad.log(t)[1].backward()
    np.testing.assert_array_equal(t.grad, [0, 0.5, 0])


# ---- scatter_add: the fast path must agree with np.add.at ----------------------------------

def test_repeat_classification():
    shape = (4, 3)
    assert _repeats((slice(None), 1), shape) is False
    assert _repeats(np.array([True, False, True, True]), shape) is False
    assert _repeats(np.array([0, 2]), shape) is False
    assert _repeats(np.array([0, -4]), shape) is True  # -4 is 0
    assert _repeats((np.array([0, 1]), np.array([2, 2])), shape) is None  # every axis
    assert _repeats((slice(None), np.array([1, 1])), shape) is True
    # few indices into a long axis (checked by sorting rather than by marking)
    assert _repeats(np.array([5, -995]), (1000, 3)) is True
    assert _repeats(np.array([5, 6, -1]), (1000, 3)) is False
    assert _repeats((np.array([[1], [-999]]), slice(None), np.array([2, 2])),
                    (1000, 2, 1000)) is True


@st.composite
def _index_expressions(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    parts = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "array", "list", "bool", "skip"]))
        if kind == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            parts.append(slice(draw(st.integers(-n, n)), draw(st.integers(-n, n)),
                               draw(st.sampled_from([1, 2, -1]))))
        elif kind in ("array", "list"):
            values = draw(st.lists(st.integers(-n, n - 1), max_size=5))
            parts.append(values if kind == "list" else np.array(values, dtype=np.intp))
        elif kind == "bool":
            parts.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        else:
            parts.append(slice(None))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    return shape, tuple(parts)


@settings(max_examples=150, deadline=None)
@given(_index_expressions())
def test_scatter_add_matches_add_at(case):
    shape, idx = case
    x = np.arange(np.prod(shape), dtype=float).reshape(shape)
    t = yaad.tensor(x, requires_grad=True)
    try:
        expected = x[idx]
    except IndexError:
        with pytest.raises(IndexError):
            t[idx]
        return
    y = t[idx]
    assert_like(y, expected)
    w = rand(np.shape(expected), seed=1)
    (y * w).sum().backward()
    np.testing.assert_allclose(t.grad, _expected_gradient(x, idx, w))
    reference = np.zeros(shape)
    np.add.at(reference, idx, w)
    np.testing.assert_allclose(yaad.scatter_add(w, idx, shape), reference)


# ---- index_put (the out-of-place setitem) --------------------------------------------------

@pytest.mark.parametrize("idx", [1, slice(0, 2), np.array([2, 0]), (np.array([0, 1]), 1)],
                         ids=["int", "slice", "array", "pair"])
def test_index_put_gradients(idx):
    x, v = rand((3, 2)), rand(np.shape(rand((3, 2))[idx]), seed=1)
    out = yaad.index_put(yaad.tensor(x), v, idx)
    expected = x.copy()
    expected[idx] = v
    assert_like(out, expected)
    gradcheck(lambda a, b: yaad.index_put(a, b, idx), [x, v])
    gradcheck(lambda a, b: yaad.index_put(a, b, idx), [x.astype(C128), v.astype(C128)])
    gradgradcheck(lambda a, b: yaad.index_put(a, b, idx) ** 2, [x, v])
    check_jvp(lambda a, b: yaad.index_put(a, b, idx), [x, v])


def test_index_put_with_repeats_gives_the_gradient_to_the_written_value():
    x = yaad.tensor(np.zeros(3), requires_grad=True)
    v = yaad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    idx = np.array([0, 2, 0])
    out = yaad.index_put(x, v, idx)
    expected = np.zeros(3)
    expected[idx] = v.data
    assert_like(out, expected)
    (out * np.array([10.0, 20.0, 30.0])).sum().backward()
    written = expected[0] == v.data  # which of the repeated writes landed
    np.testing.assert_array_equal(v.grad, [10.0 * written[0], 30.0, 10.0 * written[2]])
    assert v.grad[0] + v.grad[2] == 10.0
    np.testing.assert_array_equal(x.grad, [0, 20, 0])


def test_index_put_broadcast_value():
    x = rand((2, 3))
    gradcheck(lambda a, b: yaad.index_put(a, b, (slice(None), np.array([0, 2]))),
              [x, rand((2, 1), seed=1)])


@pytest.mark.parametrize("idx", [(None, slice(None)), np.array([[0, 1], [2, 3]])],
                         ids=["new-axis", "2-d-index"])
def test_index_put_value_broadcast_over_more_axes_than_the_output(idx):
    # a[idx] has more axes than a (y[None, :] = v): the value's gradient sums over the
    # extra ones inside the rule; first and second order, against finite differences
    x, v = rand((4,)), rand((4,) if isinstance(idx, tuple) else (2,), seed=1)
    expected = x.copy()
    expected[idx] = v
    assert_like(yaad.index_put(yaad.tensor(x), v, idx), expected)
    gradcheck(lambda a, b: yaad.index_put(a, b, idx), [x, v])
    gradcheck(lambda a, b: yaad.index_put(a, b, idx), [x.astype(C128), v.astype(C128)])
    gradgradcheck(lambda a, b: yaad.index_put(a, b, idx) ** 2, [x, v])


# ---- take, take_along_axis --------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": -1, "mode": "wrap"},
                                {"axis": 0, "mode": "clip"}], ids=str)
def test_take(kw):
    x = rand((3, 4), C128)
    indices = np.array([[0, 5], [-1, 1]]) if kw.get("mode") else np.array([[0, 2], [-1, 1]])
    assert_like(yaad.take(yaad.tensor(x), indices, **kw), np.take(x, indices, **kw))
    assert_like(yaad.take(x, indices, **kw), np.take(x, indices, **kw))
    gradcheck(lambda a: yaad.take(a, indices, **kw), [x])
    assert_like(yaad.take(yaad.tensor(x), 1, axis=1), np.take(x, 1, axis=1))


def test_take_errors():
    t = yaad.tensor(rand((3,)))
    with pytest.raises(ValueError, match="mode"):
        yaad.take(t, [0], mode="bad")
    with pytest.raises(TypeError, match="out="):
        yaad.take(t, [0], out=np.zeros(1))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_along_axis(axis):
    x = rand((3, 4), C128)
    if axis is None:
        idx = np.array([5, 0, 5, 11])
    else:
        idx = np.argsort(x.real, axis=axis)[:2] if axis == 0 else np.array([[0, 3, 0]] * 3)
    assert_like(yaad.take_along_axis(yaad.tensor(x), idx, axis), np.take_along_axis(x, idx, axis))
    gradcheck(lambda a: yaad.take_along_axis(a, idx, axis), [x])
    gradgradcheck(lambda a: yaad.take_along_axis(a, idx, axis) ** 2, [x.real.copy()])


def test_take_along_axis_errors():
    t = yaad.tensor(rand((3, 4)))
    with pytest.raises(ValueError, match="same number of dimensions"):
        yaad.take_along_axis(t, np.array([0]), 1)
    with pytest.raises(IndexError, match="integers"):
        yaad.take_along_axis(t, np.zeros((3, 1)), 1)


def test_against_torch():
    import torch
    x = rand((4, 3))
    rows = np.array([3, 0, 3, 3])
    w = rand((4, 3), seed=2)
    t = yaad.tensor(x, requires_grad=True)
    (t[rows] * w).sum().backward()
    (t[t > 0] ** 2).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    (tt[torch.tensor(rows)] * torch.tensor(w)).sum().backward()
    (tt[tt > 0] ** 2).sum().backward()
    np.testing.assert_allclose(t.grad, tt.grad.numpy())


@pytest.mark.parametrize("flag", [True, False])
def test_zero_dim_boolean_mask_write_against_torch(flag):
    # x[mask] = v with a 0-d boolean mask (SciPy's array API code writes so): the backward
    # of the write called np.nonzero on the 0-d mask and raised
    import torch

    x0, v0 = np.array([1.0, -2.0, 3.0]), np.array([[0.5, 0.25, 4.0]])
    x, v = yaad.tensor(x0, requires_grad=True), yaad.tensor(v0, requires_grad=True)
    y = x * 2.0
    y[np.asarray(flag)] = v * 3.0
    yaad.sum(y * np.array([1.0, 2.0, 3.0])).backward()
    xt, vt = torch.tensor(x0, requires_grad=True), torch.tensor(v0, requires_grad=True)
    yt = xt * 2.0
    yt[torch.tensor(flag)] = vt * 3.0
    (yt * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy())
    np.testing.assert_allclose(x.grad, xt.grad.numpy())
    np.testing.assert_allclose(v.grad, vt.grad.numpy())
